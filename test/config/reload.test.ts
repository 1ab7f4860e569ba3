// Which keys a reload applies is said once, beside each key in the schema; the reload's list is derived from those
// marks, and the running parts' live settings (`LIVE_SETTINGS` in app.ts, read at start and at every reload) read
// exactly the keys marked live: a key marked live that no part takes, or a key a part takes at reload that is not
// marked live, fails here.
import t from 'tap';
import { LIVE_SETTINGS } from '../../src/app.js';
import { parseConfig, planReload, type GatewayConfig } from '../../src/config/index.js';
import { LIVE_KEYS } from '../../src/config/reload.js';
import { configJsonSchema, keyRows } from '../../scripts/config-schema.js';

/**
 * The configuration keys `read` reads of `config`, as patterns (`upstreams.*.tools`): every property read on the way is
 * recorded, absent optional keys included, and only the deepest of a chain is kept (`tasks.pollBurst`, not `tasks`).
 */
function keysRead(config: GatewayConfig, read: (c: GatewayConfig) => unknown): string[] {
  const seen = new Set<string>();
  const track = (value: unknown, path: string): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    return new Proxy(value, {
      get(target, key, receiver) {
        const v = Reflect.get(target, key, receiver);
        if (typeof key !== 'string') return v;
        // An array's items are one pattern; its length and methods are no key.
        if (Array.isArray(target) && !/^\d+$/.test(key)) return v;
        if (!Array.isArray(target) && !Object.hasOwn(target, key) && typeof v === 'function') return v;
        const at = Array.isArray(target) ? `${path}.*` : path ? `${path}.${key}` : key;
        seen.add(at);
        return track(v, at);
      },
    });
  };
  // A copy: the parsed configuration is frozen, and a proxy must hand out a frozen property as it is.
  read(track(structuredClone(config), '') as GatewayConfig);
  return [...seen].filter((k) => ![...seen].some((other) => other.startsWith(`${k}.`))).sort();
}

/** An upstream's name is how a reload finds it in the next configuration (a renamed one is another upstream), no setting. */
const IDENTITY = 'upstreams.*.name';

/** The keys the live settings read that are not marked live, and the keys marked live that none of them reads. */
function mismatch(froms: Array<(c: GatewayConfig) => unknown>, configs: GatewayConfig[], live: readonly string[]) {
  const read = new Set(configs.flatMap((c) => froms.flatMap((from) => keysRead(c, from))));
  read.delete(IDENTITY);
  return { notMarked: [...read].filter((k) => !live.includes(k)).sort(), notApplied: live.filter((k) => !read.has(k)).sort() };
}

/** Configurations that take every branch the live settings have: optional shares absent and set, both kinds of upstream. */
const CONFIGS = [
  parseConfig({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:1/mcp' }] }),
  parseConfig({
    server: { maxListenStreamsPerPrincipal: 3 },
    sessions: { maxPerPrincipal: 2 },
    upstreams: [
      { name: 'a', url: 'http://127.0.0.1:1/mcp', headers: { 'x-key': 'k' }, auth: { mode: 'none' } },
      { name: 'b', path: '/b', command: ['node', 'server.js'] },
    ],
  }),
];

const FROMS = Object.values(LIVE_SETTINGS).map((s) => s.from as (c: GatewayConfig) => unknown);

t.test('the reload list is derived from the schema: the keys marked live, nested, optional and per upstream', async (t) => {
  // What a reload applies (docs/operations.md § Reload says the same): a change here changes what operators get.
  t.same([...LIVE_KEYS].sort(), [
    'input.holdMs',
    'input.maxHeldCalls',
    'input.maxHeldCallsPerPrincipal',
    'input.maxRequestsPerRound',
    'input.maxRoundsPerTask',
    'server.maxListenStreams',
    'server.maxListenStreamsPerPrincipal',
    'server.shutdownGraceMs',
    'sessions.acquireTimeoutMs',
    'sessions.idleMs',
    'sessions.maxPerPrincipal',
    'sessions.maxPerUpstream',
    'sessions.warmIdle',
    'tasks.adaptivePolling',
    'tasks.defaultTtlMs',
    'tasks.maxActivePerPrincipal',
    'tasks.maxPollIntervalMs',
    'tasks.maxResultBytes',
    'tasks.minPollIntervalMs',
    'tasks.pollBurst',
    'tasks.pollIntervalMs',
    'upstreams.*.headers',
    'upstreams.*.tools',
  ]);
});

t.test('the reference says which keys are live, and only those', async (t) => {
  const schema = configJsonSchema() as { properties: Record<string, object> };
  const rows = Object.entries(schema.properties).flatMap(([name, node]) => keyRows(node, name));
  const said = rows.filter((r) => /; live on reload(?:;|$)/.test(r.description)).map((r) => r.key.replace('[]', '.*'));
  t.same(said.sort(), [...LIVE_KEYS].sort());
});

t.test('the live settings read exactly the keys marked live', async (t) => {
  const { notMarked, notApplied } = mismatch(FROMS, CONFIGS, LIVE_KEYS);
  t.same(notMarked, [], 'a key a part takes at start and at reload is marked live in src/config/schema.ts (`.apply(live)`)');
  t.same(notApplied, [], 'a key marked live is taken by a part: LIVE_SETTINGS in src/app.ts');
});

t.test('self-check: the comparison sees a key read but not marked, and a key marked but not read', async (t) => {
  t.same(
    keysRead(CONFIGS[1] as GatewayConfig, (c) => [c.server.keepAliveMs, c.upstreams.map((u) => [u.headers, u.sessions.scope]), c.tasks.maxPollIntervalMs]),
    ['server.keepAliveMs', 'tasks.maxPollIntervalMs', 'upstreams.*.headers', 'upstreams.*.sessions.scope'],
    'each key read once, at its own depth, an upstream as `upstreams.*`',
  );
  t.same(
    keysRead(CONFIGS[0] as GatewayConfig, (c) => c.sessions.maxPerPrincipal),
    ['sessions.maxPerPrincipal'],
    'an absent optional key is read too',
  );
  // Parts that take `server.keepAliveMs` and each upstream's rules (found by name), against marks on the rules and the
  // shutdown grace.
  const froms = [(c: GatewayConfig) => c.server.keepAliveMs, (c: GatewayConfig) => c.upstreams.map((u) => [u.name, u.tools])];
  t.same(mismatch(froms, CONFIGS, ['server.shutdownGraceMs', 'upstreams.*.tools']), {
    notMarked: ['server.keepAliveMs'],
    notApplied: ['server.shutdownGraceMs'],
  });
});

t.test('a live key is one setting however deep its value; any other record is compared key by key', async (t) => {
  const prev = parseConfig({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:1/mcp', headers: { 'x-old': '1', 'x-kept': '2' }, env: {} }] });
  const next = parseConfig({ upstreams: [{ name: 'a', url: 'http://127.0.0.1:1/mcp', headers: { 'x-kept': '2', 'x-new': '3' }, env: { FOO: 'bar' } }] });
  const plan = planReload(prev, next);
  t.same(plan.applied, ['upstreams.a.headers']);
  t.same(plan.needsRestart, ['upstreams.a.env.FOO']);
  t.same(plan.effective.upstreams[0]?.headers, { 'x-kept': '2', 'x-new': '3' }, 'the headers are taken whole: a removed one is gone');
  t.same(plan.effective.upstreams[0]?.env, {}, 'what needs a restart stays as it runs');
});
