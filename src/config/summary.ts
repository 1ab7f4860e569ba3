/**
 * What a validated configuration would serve, as `--check` prints it: the listener, the store, each upstream, the
 * paths, the federated endpoints and their members, and each upstream's tool rules in the order they match. Reads the configuration only: nothing listens,
 * nothing is contacted (an stdio command is looked for, never run). Header values, environment values and passwords
 * are never printed (they may be credentials).
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, resolve } from 'node:path';
import { OAUTH_WELL_KNOWN } from '../translate/index.js';
import { federationLines } from './summary-federation.js';
import { DEFAULTS, federatedPaths, oauthCapable, wellKnownRootOwner, type GatewayConfig, type ToolRule } from './schema.js';

/** The summary's lines, for a configuration that passed validation; `env` is read for what only the start checks. */
export function describeConfig(config: Readonly<GatewayConfig>, env: Readonly<Record<string, string | undefined>> = {}): string[] {
  const { server, upstreams } = config;
  const host = server.host.includes(':') ? `[${server.host}]` : server.host;
  const lines = [`listen: http://${host}:${server.port}`, `store: ${storeLine(config)}`];
  lines.push(...notes(config, env).map((n) => `note: ${n}`));

  lines.push('upstreams:');
  if (upstreams.length === 0) lines.push(`  (none: the bundled demo upstream would be started and mounted at ${DEFAULTS.path})`);
  for (const u of upstreams)
    lines.push(`  - ${u.name}: ${u.url !== undefined ? `url ${u.url}` : `command ${JSON.stringify(u.command)}`}, path ${u.path}, era ${u.era}`);

  lines.push('paths:');
  const federated = federatedPaths(config);
  const paths: Array<[string, string]> = [];
  for (const u of upstreams) {
    const members = federated.get(u.path);
    if (!members) paths.push([u.path, `MCP endpoint of ${u.name}`]);
    else if (members[0] === u) paths.push([u.path, `federated MCP endpoint of ${members.map((m) => m.name).join(', ')}`]);
  }
  if (upstreams.length === 0) paths.push([DEFAULTS.path, 'MCP endpoint of the bundled demo upstream']);
  paths.push(['/healthz', 'health'], ['/readyz', 'readiness']);
  if (server.metrics.enabled) paths.push([server.metrics.path, 'metrics']);
  const root = wellKnownRootOwner(upstreams);
  // A path several upstreams share has no OAuth documents passed through (one endpoint, no single authorization server).
  for (const [u, i] of oauthCapable(upstreams)) {
    paths.push([`/.well-known/…${u.path === '/' ? '' : u.path}`, `OAuth discovery documents of ${u.path}, passed through to ${u.name}`]);
    if (root === i) for (const w of OAUTH_WELL_KNOWN) paths.push([w, `root OAuth discovery document, passed through to ${u.name}`]);
    for (const p of u.passthrough.paths) paths.push([p, `passed through to ${u.name}`]);
  }
  const width = Math.max(...paths.map(([p]) => p.length));
  for (const [path, what] of paths) lines.push(`  ${path.padEnd(width)}  ${what}`);

  if (federated.size > 0) lines.push('federated endpoints:', ...federationLines(config, federated));

  lines.push('tool rules (per upstream, first match wins):');
  if (upstreams.length === 0) lines.push("  (none: the bundled demo upstream's own)");
  for (const u of upstreams) {
    lines.push(`  ${u.name}:`);
    Object.entries(u.tools).forEach(([pattern, rule], i) => lines.push(`    ${i + 1}. ${pattern}: ${ruleLine(rule)}`));
  }
  return lines;
}

function storeLine({ store }: Readonly<GatewayConfig>): string {
  if (store.kind === 'memory') return 'memory (this instance only)';
  const at = store.url !== undefined ? withoutPassword(store.url) : `$${store.urlEnv}`;
  if (store.kind === 'redis') return `redis at ${at}, key prefix ${store.keyPrefix}`;
  return `postgres at ${at}, schema ${store.schema} (migrate: ${store.migrate}, pool ${store.poolSize}${store.tls ? `, tls ${store.tls.mode}` : ''})`;
}

/** What the start would refuse for want of the environment, said (not failed) here: `--check` may run elsewhere. */
function notes(config: Readonly<GatewayConfig>, env: Readonly<Record<string, string | undefined>>): string[] {
  const out: string[] = [];
  if (config.store.kind !== 'memory') {
    const what = config.store.kind === 'redis' ? 'Redis' : 'Postgres';
    if (config.store.url === undefined && !env[config.store.urlEnv])
      out.push(`${config.store.urlEnv} is not set here: the ${what} store needs its URL at start`);
    if (config.secret.value === undefined && !env[config.secret.env])
      out.push(`${config.secret.env} is not set here: the ${what} store needs the shared secret at start`);
  }
  const federated = federatedPaths(config);
  config.endpoints.forEach((e, i) => {
    if (!federated.has(e.path))
      out.push(`endpoints.${i} (${e.path}): one upstream, passed through as it is: clients see its own serverInfo and instructions, not these`);
  });
  for (const u of config.upstreams) {
    if (u.auth.mode === 'jwt' && u.auth.secretEnv !== undefined && !env[u.auth.secretEnv])
      out.push(`${u.auth.secretEnv} is not set here: upstream ${u.name} needs it at start`);
    const program = u.command?.[0];
    if (program !== undefined && !runnable(program, u.cwd ?? process.cwd(), u.env.PATH ?? env.PATH ?? '', env.PATHEXT)) {
      const where = /[\\/]/.test(program) ? `from ${u.cwd ?? 'this directory'}` : 'on PATH';
      out.push(`upstream ${u.name}: its command ${JSON.stringify(program)} is not found ${where} here: the start would fail (ENOENT) and retry`);
    }
  }
  return out;
}

/**
 * Whether the process would find `program` as spawn looks it up (no shell): a name with a path separator from `cwd`,
 * a bare name on `path` (with the extensions PATHEXT lists, on Windows); an executable file either way.
 */
function runnable(program: string, cwd: string, path: string, pathext: string | undefined): boolean {
  const windows = process.platform === 'win32';
  const exts = windows ? ['', ...(pathext ?? '.EXE;.CMD;.BAT;.COM').split(';')] : [''];
  const dirs = /[\\/]/.test(program) ? [cwd] : path.split(delimiter).filter((d) => d !== '');
  return dirs.some((dir) =>
    exts.some((ext) => {
      const file = resolve(cwd, dir, program + ext);
      try {
        if (!statSync(file).isFile()) return false;
        accessSync(file, windows ? constants.F_OK : constants.X_OK);
        return true;
      } catch {
        return false;
      }
    }),
  );
}

function ruleLine(rule: ToolRule): string {
  const parts: string[] = [`task ${rule.task}`];
  for (const key of ['afterMs', 'ttlMs', 'maxTtlMs', 'pollIntervalMs', 'timeoutMs', 'retryOnLoss'] as const) {
    if (rule[key] !== undefined) parts.push(`${key} ${String(rule[key])}`);
  }
  if (rule.job) {
    const j = rule.job;
    const result = j.result ? `, result ${j.result.tool}` : '';
    const cancel = j.cancel ? `, cancel ${j.cancel.tool}` : '';
    const hides = j.hide.length > 0 ? `, hides ${j.hide.join(' ')}` : '';
    parts.push(`handle at ${j.id}, status ${j.status.tool}${result}${cancel}${hides}`);
  }
  return parts.join(', ');
}

/** A URL with its password masked. */
function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(a URL)';
  }
}
