// The shipped configuration examples stay valid against the schema, and say what the defaults are.
import { readdir, readFile } from 'node:fs/promises';
import t from 'tap';
import { ConfigSchema, DEFAULTS, loadConfigFile } from '../src/config/index.js';

const dir = new URL('../config/', import.meta.url);

t.test('every file in config/ loads', async (t) => {
  const files = (await readdir(dir)).filter((f) => /\.(ya?ml|json)$/.test(f));
  t.ok(files.length >= 2, 'examples exist');
  for (const f of files) {
    const cfg = await loadConfigFile(new URL(f, dir).pathname);
    if (f !== 'gateway.redis.example.yaml') t.equal(cfg.server.host, DEFAULTS.host, `${f}: default host`);
    t.equal(cfg.store.kind, f === 'gateway.redis.example.yaml' ? 'redis' : 'memory', `${f}: its store`);
  }
});

t.test('the full example spells out the defaults', async (t) => {
  const cfg = await loadConfigFile(new URL('gateway.example.yaml', dir).pathname);
  t.equal(cfg.server.port, DEFAULTS.port);
  t.equal(cfg.server.bodyLimitBytes, DEFAULTS.bodyLimitBytes);
  t.equal(cfg.server.headersTimeoutMs, DEFAULTS.headersTimeoutMs);
  t.equal(cfg.server.requestTimeoutMs, DEFAULTS.requestTimeoutMs);
  t.equal(cfg.server.idleTimeoutMs, DEFAULTS.idleTimeoutMs);
  t.equal(cfg.server.maxJsonDepth, DEFAULTS.maxJsonDepth);
  t.equal(cfg.server.shutdownGraceMs, DEFAULTS.shutdownGraceMs);
  t.equal(cfg.input.holdMs, DEFAULTS.inputHoldMs);
  t.equal(cfg.tasks.defaultTtlMs, DEFAULTS.taskTtlMs);
  t.equal(cfg.tasks.maxActivePerPrincipal, DEFAULTS.maxActiveTasksPerPrincipal);
  t.equal(cfg.tasks.pollIntervalMs, DEFAULTS.pollIntervalMs);
  t.equal(cfg.tasks.adaptivePolling, DEFAULTS.adaptivePolling);
  t.equal(cfg.tasks.minPollIntervalMs, DEFAULTS.minPollIntervalMs);
  t.equal(cfg.tasks.maxPollIntervalMs, DEFAULTS.maxPollIntervalMs);
  t.equal(cfg.sessions.maxPerUpstream, DEFAULTS.maxSessionsPerUpstream);
  const [u] = cfg.upstreams;
  t.equal(u?.path, DEFAULTS.path);
  t.equal(u?.timeoutMs, DEFAULTS.upstreamTimeoutMs);
  t.same(u?.cache, { ttlMs: DEFAULTS.cacheTtlMs, scope: DEFAULTS.cacheScope });
  t.same(u?.tools, { '*': { task: 'native' } });
  t.same(u?.sessions, { scope: DEFAULTS.sessionScope, anonymousScope: DEFAULTS.anonymousSessionScope });
  t.same(u?.auth, { mode: DEFAULTS.authMode });
});

t.test('the Redis example spells out the store defaults and the secret variable', async (t) => {
  const cfg = await loadConfigFile(new URL('gateway.redis.example.yaml', dir).pathname);
  t.same(cfg.store, {
    kind: 'redis',
    urlEnv: DEFAULTS.redisUrlEnv,
    keyPrefix: DEFAULTS.redisKeyPrefix,
    commandTimeoutMs: DEFAULTS.redisCommandTimeoutMs,
    connectTimeoutMs: DEFAULTS.redisConnectTimeoutMs,
  });
  t.same(cfg.secret, { env: DEFAULTS.secretEnv });
  t.equal(cfg.tasks.leaseMs, DEFAULTS.leaseMs);
  t.equal(cfg.upstreams[0]?.tools.refresh_index?.retryOnLoss, true);
});

// ---------------------------------------------------------------------------------------------------------------
// README § Configuration is the reference: one row per key of the schema, its default the schema's.
// ---------------------------------------------------------------------------------------------------------------

/** One key of the schema: its path as the README writes it, whether it is a leaf, and its default when it has one. */
interface SchemaKey {
  path: string;
  leaf: boolean;
  /** `undefined` when the key has no default (then it is `required` or optional). */
  default?: unknown;
  required: boolean;
}

/** Zod's internal definition of a schema node (zod 4: `schema._zod.def`). */
type Def = { type: string; [k: string]: any };
const defOf = (s: unknown): Def => (s as { _zod: { def: Def } })._zod.def;

/**
 * Every key of the schema, walked: objects by their shape, discriminated unions (store, upstreams[].auth) by every
 * variant, arrays of objects as `key[]`, records of objects as `key.<name>`. A leaf's default is its own `.default()`,
 * else what the nearest defaulted ancestor's default object gives it (`store.kind` is `memory` through `store`'s).
 */
function schemaKeys(schema: unknown, prefix = '', inherited: unknown = undefined, out = new Map<string, SchemaKey>()): Map<string, SchemaKey> {
  let s = schema;
  let own: { value: unknown } | undefined;
  let optional = false;
  // Wrappers: a default, optional, a transform's input.
  for (;;) {
    const d = defOf(s);
    if (d.type === 'default' || d.type === 'prefault') {
      own ??= { value: typeof d.defaultValue === 'function' ? d.defaultValue() : d.defaultValue };
      s = d.innerType;
    } else if (d.type === 'optional' || d.type === 'nullable' || d.type === 'readonly' || d.type === 'catch') {
      optional = true;
      s = d.innerType;
    } else if (d.type === 'pipe') s = d.in;
    else break;
  }
  const dflt = own ? own.value : inherited;
  const d = defOf(s);
  const isObject = (x: unknown) => defOf(x).type === 'object';
  const unwrap = (x: unknown): unknown => {
    let y = x;
    while (['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch'].includes(defOf(y).type)) y = defOf(y).innerType;
    return y;
  };
  const add = (leaf: boolean) => {
    if (!prefix) return;
    const prev = out.get(prefix);
    out.set(prefix, { path: prefix, leaf, default: prev?.default ?? dflt, required: (prev?.required ?? true) && dflt === undefined && !optional });
  };
  if (d.type === 'object') {
    add(false);
    for (const [k, v] of Object.entries(d.shape as Record<string, unknown>)) {
      schemaKeys(v, prefix ? `${prefix}.${k}` : k, dflt && typeof dflt === 'object' ? (dflt as Record<string, unknown>)[k] : undefined, out);
    }
  } else if (d.type === 'union' && (d.options as unknown[]).every(isObject)) {
    add(false);
    // A variant's own keys are required only in that variant: the walk merges them, each with its own default.
    for (const option of d.options as unknown[]) schemaKeys(option, prefix, dflt, out);
  } else if (d.type === 'array' && isObject(unwrap(d.element))) {
    add(false);
    schemaKeys(unwrap(d.element), `${prefix}[]`, undefined, out);
  } else if (d.type === 'record' && isObject(unwrap(d.valueType))) {
    add(false);
    schemaKeys(unwrap(d.valueType), `${prefix}.<name>`, undefined, out);
  } else add(true);
  return out;
}

/** A default as the README writes it, in backticks. */
function written(v: unknown): string {
  return `\`${typeof v === 'object' ? JSON.stringify(v) : String(v)}\``;
}

/** The rows of the README's configuration table: key (one per row, in backticks) → default cell. */
async function readmeRows(): Promise<{ rows: Map<string, string>; malformed: string[] }> {
  const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8');
  const section = /^## Configuration\n([^]*?)(?=^## )/m.exec(readme)?.[1] ?? '';
  const rows = new Map<string, string>();
  const malformed: string[] = [];
  for (const line of section.split('\n')) {
    if (!line.startsWith('|') || /^\|\s*(key|-+)\s*\|/.test(line)) continue;
    const cells = line.split(/(?<!\\)\|/).slice(1, -1).map((c) => c.trim());
    const key = /^`([^`\s]+)`$/.exec(cells[0] ?? '')?.[1];
    if (!key || cells.length !== 3) malformed.push(line);
    else rows.set(key, cells[1] ?? '');
  }
  return { rows, malformed };
}

t.test('README § Configuration has a row for every key of the schema, with its default, and no other', async (t) => {
  const keys = schemaKeys(ConfigSchema);
  const { rows, malformed } = await readmeRows();
  t.same(malformed, [], 'every table row names one key in backticks and has three cells (key | default | meaning)');
  t.ok(rows.size > 0, 'the table is there');

  const missing = [...keys.values()].filter((k) => k.leaf && !rows.has(k.path));
  t.same(
    missing.map((k) => k.path),
    [],
    `README § Configuration lacks a row for these schema keys (add one each, "| \`key\` | default | meaning |"):\n${missing
      .map((k) => `  | \`${k.path}\` | ${k.default !== undefined ? written(k.default) : k.required ? 'required' : '(optional)'} | … |`)
      .join('\n')}`,
  );
  const unknown = [...rows.keys()].filter((k) => !keys.has(k));
  t.same(unknown, [], `no row names a key the schema lacks${unknown.length ? ` (misspelt, or gone from src/config/schema.ts): ${unknown.join(', ')}` : ''}`);

  const wrong: string[] = [];
  for (const k of keys.values()) {
    const cell = rows.get(k.path);
    if (cell === undefined || !k.leaf) continue;
    if (k.default !== undefined) {
      if (!cell.includes(written(k.default))) wrong.push(`${k.path}: the schema's default is ${written(k.default)}, the README says "${cell}"`);
    } else if (k.required) {
      if (!/required/.test(cell)) wrong.push(`${k.path}: required by the schema, the README says "${cell}"`);
    } else if (cell === '' || /^`[^`]*`$/.test(cell) || cell === 'required') {
      wrong.push(`${k.path}: optional with no fixed default, the README says "${cell}" (say what applies when it is absent)`);
    }
  }
  t.same(wrong, [], 'README defaults match the schema');
});

t.test('self-check: the schema walk finds nested, variant, array and record keys with their defaults', async (t) => {
  const keys = schemaKeys(ConfigSchema);
  t.same(keys.get('server.port'), { path: 'server.port', leaf: true, default: DEFAULTS.port, required: false });
  t.same(keys.get('store.kind'), { path: 'store.kind', leaf: true, default: 'memory', required: false }, 'a discriminator, defaulted through its parent');
  t.equal(keys.get('store.keyPrefix')?.default, DEFAULTS.redisKeyPrefix, 'a key of the redis variant');
  t.same(keys.get('upstreams[].url'), { path: 'upstreams[].url', leaf: true, default: undefined, required: false });
  t.equal(keys.get('upstreams[].auth.mode')?.default, DEFAULTS.authMode);
  t.equal(keys.get('upstreams[].auth.maxTtlMs')?.default, DEFAULTS.noAuthMaxTtlMs, 'a key of the none variant');
  t.equal(keys.get('upstreams[].auth.header')?.required, true, 'a key of the header variant');
  t.equal(keys.get('upstreams[].tools.<name>.task')?.default, 'native', 'a record of tool rules');
  t.same(keys.get('upstreams[].headers'), { path: 'upstreams[].headers', leaf: true, default: {}, required: false }, 'a record of strings is a leaf');
  t.equal(keys.get('server.allowedHosts')?.required, false);
  t.equal(keys.get('upstreams[].tools')?.leaf, false);
});
