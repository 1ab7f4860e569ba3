/**
 * The `federated endpoints:` part of `--check` (config/summary.ts): per federated path, how it introduces itself, and
 * per member its prefix, filters, renames, routing and readiness, list cache and access rules, with the names the
 * configuration alone can tell (the renamed ones: the others come from the running servers). No header or
 * environment value is read here.
 */
import type { AccessRule, GatewayConfig, UpstreamConfig } from './schema.js';

/** The lines under `federated endpoints:`, two spaces in. */
export function federationLines(config: Readonly<GatewayConfig>, federated: ReadonlyMap<string, readonly UpstreamConfig[]>): string[] {
  const lines: string[] = [];
  for (const [path, members] of federated) {
    const endpoint = config.endpoints.find((e) => e.path === path);
    const intro = [`serverInfo name ${endpoint?.name ?? 'mcp-tasks-gateway'}`];
    if (endpoint?.version !== undefined) intro.push(`version ${endpoint.version}`);
    if (endpoint?.instructions !== undefined) intro.push(`instructions of ${endpoint.instructions.length} characters before the members' own`);
    lines.push(`  ${path}: ${members.length} member${members.length === 1 ? '' : 's'}, ${intro.join(', ')}`);
    for (const u of members) lines.push(...memberLines(u));
  }
  return lines;
}

function memberLines(u: UpstreamConfig): string[] {
  const e = u.expose;
  const prefix = e.namespace === undefined ? '' : `${e.namespace}_`;
  const lines = [`    - ${u.name}: ${e.namespace === undefined ? 'no prefix' : `namespace ${e.namespace} (names shown as ${prefix}<name>)`}`];
  for (const kind of ['tools', 'prompts'] as const) {
    const f = e[kind];
    const renames = Object.entries(f.rename).map(([from, to]) => `${from} → ${to}`);
    lines.push(
      `        ${kind}: include ${f.include.join(' ')}; exclude ${f.exclude.length > 0 ? f.exclude.join(' ') : 'none'}; ` +
        `rename ${renames.length > 0 ? renames.join(', ') : 'none'}`,
    );
  }
  lines.push(`        resourcePrefix: ${e.resourcePrefix ?? 'none'}`);
  lines.push(`        required: ${e.required ? 'yes (/readyz of the path needs it)' : 'no (the path is ready without it)'}`);
  lines.push(`        listCache: ${e.listCache}`);
  const known = (['tools', 'prompts'] as const).flatMap((kind) =>
    Object.entries(e[kind].rename).map(([from, to]) => `${prefix}${to} (${kind === 'tools' ? 'tool' : 'prompt'}, renamed from ${from})`),
  );
  lines.push(
    `        names it can know: ${known.length > 0 ? known.join(', ') : 'none renamed'}` +
      `; the others come from the running server${prefix ? `, prefixed ${prefix}` : ''}`,
  );
  if (u.access.length === 0) lines.push('        access: no rules (every caller may list and call all it shows)');
  else {
    lines.push('        access (first rule whose when matches decides; none matching: all):');
    u.access.forEach((rule, i) => lines.push(`          ${i + 1}. ${accessLine(rule)}`));
  }
  return lines;
}

function accessLine(rule: AccessRule): string {
  const when: string[] = [];
  if (rule.when.subjects) when.push(`subjects ${rule.when.subjects.join(' ')}`);
  if (rule.when.scopes) when.push(`scopes ${rule.when.scopes.join(' ')}`);
  if (rule.when.claims)
    when.push(
      `claims ${Object.entries(rule.when.claims)
        .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join('|') : v}`)
        .join(' ')}`,
    );
  const allow = rule.allow === undefined ? 'all' : rule.allow.length > 0 ? rule.allow.join(' ') : 'nothing';
  const deny = rule.deny === undefined || rule.deny.length === 0 ? 'none' : rule.deny.join(' ');
  return `when ${when.length > 0 ? when.join('; ') : 'anyone'}: allow ${allow}; deny ${deny}`;
}
