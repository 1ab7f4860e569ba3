/**
 * `npm run bench`: the benchmark users can rerun. Starts its own raw upstreams (both eras), a plain
 * `fastify` + `@fastify/http-proxy` hop and gateways, each a process of its own on loopback, and reports side by side,
 * in one run:
 * - `tools/call` on every path (direct to each raw upstream, the plain proxy, the gateway legacy → legacy,
 *   modern → legacy, modern → modern, legacy → modern) at 1, 16 and 64 connections, small (`greet`) and 100 KB
 *   (`big`) results: medians of alternating rounds (leg order rotated per round), ratios computed within a round
 *   (throughput against the plain proxy; p50 added over direct at one connection); the translated paths both for an
 *   anonymous caller (no `Authorization`, the default configuration) and a credentialed one (`Authorization: Bearer`),
 *   also side by side in a table of their own;
 * - the upstream 20 ms away (bench/fixtures/delay-shim.ts in front of the raw legacy upstream, 20 ms each way): p50 at
 *   one connection direct to the shim, through the plain proxy and through the gateway, and the translated p50 minus
 *   the plain proxy's (issue #20's acceptance: at most +1 ms);
 * - how many `initialize` requests reach a raw legacy upstream over 10,000 sequential anonymous calls of a modern client
 *   through a gateway of its own (500 with `--quick`), read from the upstream's counts (`GET /bench/counts`);
 * - a federated endpoint (5 upstreams of 50 tools on one path, each with a namespace) against a single-upstream endpoint,
 *   per era of the members and of the client: `tools/call` p50 ratio at one connection and throughput cost at 16, and
 *   `tools/list` from the federated endpoint's cache (p50 added); skipped when the gateway under test refuses a shared path;
 * - `tasks/get` throughput on completed tasks and task creation rate (a tool wrapped `always`) at 16 connections, and task
 *   creation p50/p99 at one connection (added over memory), per store: memory, Redis and Postgres (each server of its
 *   own; a store whose server cannot start here is "not measured"), against the targets of the Postgres store;
 * - heap per stored terminal task (bench/heap.ts);
 * - polls per task with adaptive intervals, when bench/polling.ts exists.
 * The loader (and this harness) run on core 0, every server on core 1 when the machine has two cores. It writes
 * bench/RESULTS.md (or `--out`). `--gateway-dir DIR` measures another checkout's built gateway (DIR/dist/cli.js) by
 * the same harness; `--quick` is one short round of a few configurations (the smoke test).
 *
 *   npm run bench [-- --quick] [--rounds 5] [--duration 1.5] [--gateway-dir DIR] [--out FILE] [--log-level info] [--source]
 *                 [--only tasks]
 *
 * `--source` runs the gateway from DIR/src through tsx instead of DIR/dist (the smoke test: no stale build).
 * `--only tasks` runs the tasks section alone (a raw legacy upstream, the stores' servers and the task gateways): it
 * writes its tables to `--out`, else to a temp file, never to bench/RESULTS.md, and prints them.
 */
import { accessSync, chmodSync, constants, existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { spawn } from 'node:child_process';
import { commitOf, load, machine } from './lib/machine.js';
import { startLoader, type LoadResult, type LoadSpec, type Loader, type RequestShape } from './lib/loader.js';
import { freePort, pinCores, startServer, track, type Pinning, type ServerProcess } from './lib/processes.js';
import { COUNTS_PATH, type RawCounts } from './fixtures/raw-upstreams.js';
import type { HeapReport } from './heap.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    duration: { type: 'string' },
    'gateway-dir': { type: 'string' },
    out: { type: 'string' },
    'log-level': { type: 'string', default: process.env.LOG_LEVEL ?? 'info' },
    source: { type: 'boolean', default: false },
    only: { type: 'string' },
  },
  strict: true,
});
const QUICK = args.quick;
function numberArg(name: string, given: string | undefined, fallback: number, min: number, max: number): number {
  const n = given === undefined ? fallback : Number(given);
  if (!Number.isFinite(n) || n < min || n > max) {
    process.stderr.write(`bench: --${name} must be a number from ${min} to ${max}, got ${given}\n`);
    process.exit(2);
  }
  return n;
}
const ROUNDS = Math.round(numberArg('rounds', args.rounds, QUICK ? 1 : 5, 1, 20));
const DURATION_MS = numberArg('duration', args.duration, QUICK ? 0.25 : 1.5, 0.1, 30) * 1000;
const WARMUP_MS = QUICK ? 150 : 2000;
const CONNS = QUICK ? [1, 16] : [1, 16, 64];
const SIZES = ['small', 'big'] as const;
type Size = (typeof SIZES)[number];
const TASK_CONNS = 16;
/** Completed tasks `tasks/get` cycles over. */
const TASKS_FOR_GET = QUICK ? 20 : 500;
/** Running tasks the poll legs cycle over: each holds an upstream session for the whole run (raised below to fit). */
const TASKS_RUNNING = QUICK ? 10 : 100;
const GATEWAY_DIR = resolve(args['gateway-dir'] ?? ROOT);
const ONLY = args.only;
if (ONLY !== undefined && ONLY !== 'tasks') {
  process.stderr.write(`bench: --only takes \`tasks\` (the one section that runs alone), got ${ONLY}\n`);
  process.exit(2);
}
const RESULTS = join(ROOT, 'bench/RESULTS.md');
// A partial run never replaces the full results: --out, else a temp file (the markdown is printed either way).
const OUT = resolve(args.out ?? (ONLY ? join(tmpdir(), `mcp-bench-${ONLY}-${process.pid}.md`) : RESULTS));
if (ONLY && OUT === RESULTS) {
  process.stderr.write(`bench: --only ${ONLY} writes part of the results: not to ${relative(process.cwd(), RESULTS)}, give another --out\n`);
  process.exit(2);
}
const LOG_LEVEL = args['log-level'];
const SECRET = 'bench-shared-secret-at-least-32-characters-long';
const NODE = process.execPath;
const TSX = ['--import', 'tsx'];

const gatewayCli = args.source ? join(GATEWAY_DIR, 'src/cli.ts') : join(GATEWAY_DIR, 'dist/cli.js');
if (!existsSync(gatewayCli)) {
  process.stderr.write(
    `bench: ${gatewayCli} not found: ${args.source ? 'is --gateway-dir a checkout of this project?' : `build the gateway first (\`npm run build\` in ${GATEWAY_DIR}; \`npm run bench\` does it for this checkout)`}\n`,
  );
  process.exit(2);
}
const gatewayArgv = args.source ? [NODE, ...TSX, gatewayCli] : [NODE, gatewayCli];

// ---------------------------------------------------------------------------------------------------------------
// Requests

const LEGACY = '2025-11-25';
const MODERN = '2026-07-28';
const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const ACCEPT = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const BIG_EXPECT = 'x'.repeat(1000);
const TOOL_ARGS: Record<Size, { tool: string; args: object; expect: string }> = {
  small: { tool: 'greet', args: { name: 'bench' }, expect: 'Hello, bench!' },
  big: { tool: 'big', args: {}, expect: BIG_EXPECT },
};

/** A 2026-07-28 request: the envelope in `_meta`, the routing headers. */
function modernShape(method: string, params: Record<string, unknown>, name: string | undefined, capabilities: object = {}): RequestShape {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
    'io.modelcontextprotocol/clientCapabilities': capabilities,
  };
  return {
    headers: { ...ACCEPT, 'mcp-protocol-version': MODERN, 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) },
    body: JSON.stringify({ jsonrpc: '2.0', id: '__ID__', method, params: { ...params, _meta: meta } }),
  };
}

/** A 2025-11-25 request in an initialized session. */
function legacyShape(session: string, method: string, params: Record<string, unknown>): RequestShape {
  return {
    headers: { ...ACCEPT, 'mcp-protocol-version': LEGACY, 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id: '__ID__', method, params }),
  };
}

/**
 * Opens a 2025-11-25 session on `url` (initialize, then notifications/initialized) and returns its id; with
 * `authorization`, as a credentialed client (the gateway binds the session to that principal).
 */
async function openSession(url: string, authorization?: string): Promise<string> {
  const auth: Record<string, string> = authorization ? { authorization } : {};
  const init = await fetch(url, {
    method: 'POST',
    headers: { ...ACCEPT, ...auth },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
    }),
  });
  const sid = init.headers.get('mcp-session-id');
  const text = await init.text();
  if (!sid || !text.includes(LEGACY)) throw new Error(`initialize on ${url} failed: HTTP ${init.status} ${text.slice(0, 300)}`);
  const note = await fetch(url, {
    method: 'POST',
    headers: { ...ACCEPT, ...auth, 'mcp-protocol-version': LEGACY, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await note.text();
  if (note.status !== 202 && note.status !== 200) throw new Error(`notifications/initialized on ${url}: HTTP ${note.status}`);
  return sid;
}

// ---------------------------------------------------------------------------------------------------------------
// Statistics

const median = (xs: number[]): number => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};
const spread = (xs: number[], digits: number): string => {
  if (xs.length < 2) return '';
  const s = [...xs].sort((a, b) => a - b);
  return ` (${s[0]!.toFixed(digits)}–${s.at(-1)!.toFixed(digits)})`;
};
const int = (x: number) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–');
const fixed = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : '–');
/** Rotates `xs` left by `r`: each round starts the leg order somewhere else. */
const rotate = <T>(xs: readonly T[], r: number): T[] => xs.map((_, i) => xs[(i + r) % xs.length]!);

// ---------------------------------------------------------------------------------------------------------------
// Processes

let logDir = '';
const servers: ServerProcess[] = [];

async function server(
  name: string,
  argv: string[],
  pinning: Pinning,
  ready: RegExp | { port: number; url: string },
  env?: NodeJS.ProcessEnv,
): Promise<ServerProcess> {
  const s = await startServer(name, argv, { pinning, logFile: join(logDir, `${name}.log`), ready, env });
  servers.push(s);
  return s;
}

const LISTENING = /listening (\S+)/;

/** A raw upstream (bench/fixtures/raw-upstreams.ts); `tools`: how many tools its list shows (greet, big, then fillers). */
function rawUpstream(era: 'legacy' | 'modern', pinning: Pinning, name = `upstream-${era}`, tools?: number): Promise<ServerProcess> {
  const argv = [NODE, ...TSX, join(ROOT, 'bench/fixtures/raw-upstreams.ts'), era, '0', ...(tools === undefined ? [] : [String(tools)])];
  return server(name, argv, pinning, LISTENING);
}

/** A gateway process as a user runs it: `--upstream URL` or a configuration file, LOG_LEVEL as given (default info). */
async function gateway(name: string, pinning: Pinning, how: { upstream: string } | { config: object }, env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  const fullEnv: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL };
  delete fullEnv.MCP_GATEWAY_STATE_SECRET;
  Object.assign(fullEnv, env);
  // The port is learnt from the `serving MCP endpoint` info line; below info it is not logged, so a free port is
  // picked here and the gateway is ready when it accepts connections.
  const logsEndpoint = ['info', 'debug', 'trace'].includes(fullEnv.LOG_LEVEL ?? 'info');
  const port = logsEndpoint ? 0 : await freePort();
  const ready = logsEndpoint ? /"endpoint":"([^"]+)"/ : { port, url: `http://127.0.0.1:${port}/mcp` };
  if ('upstream' in how) {
    return server(name, [...gatewayArgv, '--upstream', how.upstream, '--host', '127.0.0.1', '--port', String(port)], pinning, ready, fullEnv);
  }
  const file = join(logDir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ ...how.config, server: { host: '127.0.0.1', port } }, null, 2));
  return server(name, [...gatewayArgv, '-c', file], pinning, ready, fullEnv);
}

// ---------------------------------------------------------------------------------------------------------------
// Paths

type PathKey =
  | 'direct-legacy'
  | 'direct-modern'
  | 'proxy'
  | 'gw-ll'
  | 'gw-ml'
  | 'gw-ml-anon'
  | 'gw-mm'
  | 'gw-lm'
  | 'gw-lm-cred'
  | 'gw-ml-quiet'
  // Through the delay shim (the upstream 20 ms away).
  | 'shim-direct'
  | 'shim-proxy'
  | 'shim-gw-ll'
  | 'shim-gw-ml-anon'
  | 'shim-gw-ml-cred';

interface PathDef {
  key: PathKey;
  label: string;
  url: string;
  /** The client's era: a 2025-11-25 client holds one initialized session (opened through this path). */
  client: 'legacy' | 'modern';
  /** The direct path to the same upstream (p50 added is read against it). */
  direct: PathKey;
  session?: string;
  /**
   * The Authorization the client sends (a credentialed caller: a principal of its own, whose requests the gateway may
   * serve from that principal's upstream session); without, an anonymous caller (docs/security.md §Upstream session isolation).
   */
  authorization?: string;
}

/** The credentials of the bench's credentialed client (the gateway only fingerprints them; the raw upstream ignores them). */
const BENCH_AUTHORIZATION = 'Bearer bench';

function shapeFor(p: PathDef, size: Size): RequestShape {
  const t = TOOL_ARGS[size];
  return withAuthorization(
    p.client === 'legacy'
      ? legacyShape(p.session!, 'tools/call', { name: t.tool, arguments: t.args })
      : modernShape('tools/call', { name: t.tool, arguments: t.args }, t.tool),
    p.authorization,
  );
}

function withAuthorization(shape: RequestShape, authorization: string | undefined): RequestShape {
  return authorization ? { ...shape, headers: { ...shape.headers, authorization } } : shape;
}

function specFor(p: PathDef, size: Size, conns: number, durationMs: number): LoadSpec {
  return {
    engine: conns === 1 ? 'hrtime' : 'autocannon',
    url: p.url,
    connections: conns,
    durationMs,
    requests: [shapeFor(p, size)],
    expect: TOOL_ARGS[size].expect,
  };
}

/** One leg's measurement in one round. */
type Cell = LoadResult;
/**
 * results[size][conns][path] = one Cell per round; results[size][TAIL][path]: the same path's 16-connection leg again
 * under the hrtime engine, for a sub-millisecond p99 under load (autocannon's is whole milliseconds).
 */
type PathResults = Record<Size, Record<number, Partial<Record<PathKey, Cell[]>>>>;
/** The key of the 16-connection hrtime legs in `PathResults` (a connection count no leg uses). */
const TAIL = -16;
const TAIL_CONNS = 16;

function checkClean(what: string, r: LoadResult, warmUp = false): void {
  // A warm-up may end before a slow leg's first answer on a loaded machine; a measured leg must have answers.
  if (r.non2xx > 0 || r.errors > 0 || (!warmUp && r.requests === 0)) {
    throw new Error(`${what}: ${r.requests} answers, ${r.non2xx} non-2xx, ${r.errors} errors: the path is broken, not slow`);
  }
}

/**
 * A quick leg lasts 250 ms; an anonymous translated call may cost a whole upstream session (several exchanges), and on a
 * loaded machine 16 of them can take longer than that: a leg without answers fails the run, so it gets longer.
 */
const legDuration = (p: PathDef): number => (QUICK && p.key === 'gw-ml-anon' ? Math.max(DURATION_MS, 750) : DURATION_MS);

async function runPaths(loader: Loader, paths: PathDef[]): Promise<PathResults> {
  const results = Object.fromEntries(SIZES.map((s) => [s, Object.fromEntries([...CONNS, TAIL].map((c) => [c, {}]))])) as PathResults;
  // One unreported pass over every leg: a cold process otherwise charges JIT warm-up to whichever leg runs first.
  for (const size of SIZES) for (const p of paths) checkClean(`warm-up ${p.label}`, await loader.run(specFor(p, size, 16, WARMUP_MS)), true);
  for (let round = 0; round < ROUNDS; round++) {
    for (const size of SIZES) {
      for (const conns of CONNS) {
        for (const p of rotate(paths, round + conns)) {
          const r = await loader.run(specFor(p, size, conns, legDuration(p)));
          checkClean(`${p.label}, ${size}, ${conns} conns`, r);
          ((results[size][conns]![p.key] ??= []) as Cell[]).push(r);
          if (conns !== TAIL_CONNS) continue;
          const tail = await loader.run({ ...specFor(p, size, conns, legDuration(p)), engine: 'hrtime' });
          checkClean(`${p.label}, ${size}, ${conns} conns (hrtime)`, tail);
          ((results[size][TAIL]![p.key] ??= []) as Cell[]).push(tail);
        }
      }
      process.stdout.write(`paths: round ${round + 1}/${ROUNDS}, ${size} done (load ${load()})\n`);
    }
  }
  return results;
}

function pathTables(paths: PathDef[], results: PathResults): string {
  let md = '';
  for (const size of SIZES) {
    const at = (conns: number, key: PathKey) => results[size][conns]?.[key] ?? [];
    const cols = CONNS.filter((c) => c > 1);
    md += `\n### \`tools/call\`, ${size === 'small' ? 'small result (`greet`)' : '100 KB result (`big`)'}\n\n`;
    md += `| path | 1 conn p50 ms | 1 conn p99 ms | p50 added over direct, ms | 1 conn req/s |${cols.map((c) => ` ${c} conns req/s | × plain proxy (${c}) |`).join('')} ${TAIL_CONNS} conns p99 ms | p99 × plain proxy's (${TAIL_CONNS}) |\n`;
    md += `|---|---:|---:|---:|---:|${cols.map(() => '---:|---:|').join('')}---:|---:|\n`;
    for (const p of paths) {
      const one = at(1, p.key);
      const direct = at(1, p.direct);
      const added = p.key.startsWith('direct') ? [] : one.map((r, i) => r.p50 - (direct[i]?.p50 ?? NaN));
      let row = `| ${p.label} | ${fixed(median(one.map((r) => r.p50)), 3)} | ${fixed(median(one.map((r) => r.p99)), 3)} | ${added.length ? `${fixed(median(added), 3)}${spread(added, 2)}` : ''} | ${int(median(one.map((r) => r.rps)))} |`;
      for (const c of cols) {
        const mine = at(c, p.key);
        const proxy = at(c, 'proxy');
        const ratio = p.key === 'proxy' ? [] : mine.map((r, i) => r.rps / (proxy[i]?.rps ?? NaN));
        row += ` ${int(median(mine.map((r) => r.rps)))} | ${ratio.length ? `${fixed(median(ratio), 2)}×${spread(ratio, 2)}` : ''} |`;
      }
      // Lower is better here: a path's p99 over the plain proxy's in the same round.
      const tail = at(TAIL, p.key);
      const proxyTail = at(TAIL, 'proxy');
      const tailRatio = p.key === 'proxy' ? [] : tail.map((r, i) => r.p99 / (proxyTail[i]?.p99 ?? NaN));
      row += ` ${fixed(median(tail.map((r) => r.p99)), 2)} | ${tailRatio.length ? `${fixed(median(tailRatio), 2)}×${spread(tailRatio, 2)}` : ''} |`;
      md += `${row}\n`;
    }
  }
  const longer = paths.filter((p) => legDuration(p) !== DURATION_MS);
  md += `\nMedians over ${ROUNDS} round(s) of ${DURATION_MS / 1000} s per leg${longer.length ? ` (${longer.map((p) => `${p.label}: ${legDuration(p) / 1000} s`).join('; ')})` : ''}; ratios and differences are computed within each round, then the median taken (range over the rounds in parentheses). 1-connection legs: undici Pool + \`process.hrtime.bigint()\` (sub-millisecond p50); more connections: autocannon (throughput; its latencies are whole milliseconds, so not shown); the ${TAIL_CONNS}-connection p99 comes from a leg of its own right after the autocannon one, the same load under the hrtime engine (one request in flight per connection), and its ratio is the path's p99 over the plain proxy's in the same round (lower is better). p50 added: the path's p50 minus the p50 of the direct path to the same upstream, in the same round. The gateways run at LOG_LEVEL=${LOG_LEVEL}, as users run them, logging to a file${paths.some((p) => p.key === 'gw-ml-quiet') ? '; the LOG_LEVEL=warn row is the translated path without the per-request log lines, for their cost' : ''}.\n`;
  return md;
}

/** p50 minus the p50 of `base`, per round (the rounds' legs ran next to each other). */
const p50Over = (mine: Cell[], base: Cell[]): number[] => mine.map((r, i) => r.p50 - (base[i]?.p50 ?? NaN));
const withSpread = (xs: number[], digits: number, suffix = ''): string => (xs.length ? `${fixed(median(xs), digits)}${suffix}${spread(xs, 2)}` : '');

/** The translated paths, each with its anonymous leg and its credentialed leg. */
const CALLER_PAIRS: { path: string; anonymous: PathKey; credentialed: PathKey }[] = [
  { path: 'modern → legacy', anonymous: 'gw-ml-anon', credentialed: 'gw-ml' },
  { path: 'legacy → modern (legacy face)', anonymous: 'gw-lm', credentialed: 'gw-lm-cred' },
];

/**
 * The translated paths' anonymous and credentialed legs side by side (the same measurements as the path tables): an
 * anonymous caller cannot be told from another, so what the gateway may reuse for it differs (docs/security.md §Upstream session
 * isolation), and that is what this table shows the price of.
 */
function callersTable(paths: PathDef[], results: PathResults): string {
  const cols = CONNS.filter((c) => c > 1);
  let md = `\n### Anonymous and credentialed callers on the translated paths\n\n`;
  md += `| translated path | result | caller | 1 conn p50 ms | p50 added over direct, ms |${cols.map((c) => ` ${c} conns req/s | × plain proxy (${c}) |`).join('')}\n`;
  md += `|---|---|---|---:|---:|${cols.map(() => '---:|---:|').join('')}\n`;
  for (const pair of CALLER_PAIRS) {
    for (const size of SIZES) {
      for (const [caller, key] of [
        ['anonymous (default configuration)', pair.anonymous],
        ['credentialed (`Authorization: Bearer`)', pair.credentialed],
      ] as const) {
        const p = paths.find((x) => x.key === key);
        if (!p) continue;
        const at = (conns: number, k: PathKey) => results[size][conns]?.[k] ?? [];
        let row = `| ${pair.path} | ${size === 'small' ? 'small' : '100 KB'} | ${caller} | ${fixed(median(at(1, key).map((r) => r.p50)), 3)} | ${withSpread(p50Over(at(1, key), at(1, p.direct)), 3)} |`;
        for (const c of cols) {
          const mine = at(c, key);
          const proxy = at(c, 'proxy');
          row += ` ${int(median(mine.map((r) => r.rps)))} | ${withSpread(
            mine.map((r, i) => r.rps / (proxy[i]?.rps ?? NaN)),
            2,
            '×',
          )} |`;
        }
        md += `${row}\n`;
      }
    }
  }
  md +=
    `\nThe rows of the path tables above, paired. Anonymous: no \`Authorization\` header, the gateway in its default configuration (\`--upstream URL\`, no \`auth\`); credentialed: \`Authorization: ${BENCH_AUTHORIZATION.split(' ')[0]} …\`, which the gateway fingerprints into a principal of its own. ` +
    `Modern → legacy is where the caller decides which upstream 2025-11-25 session serves it; on legacy → modern the client holds a session with the gateway either way.\n`;
  return md;
}

// ---------------------------------------------------------------------------------------------------------------
// The upstream 20 ms away (bench/fixtures/delay-shim.ts)

/** The shim's delay each way. */
const SHIM_DELAY_MS = 20;
/**
 * A leg through the shim: at 40 ms or more per call, a short leg holds a handful of answers, and the shim's timers
 * jitter by a millisecond or more on a busy machine, against a budget of 1 ms: 3 s holds some 60 answers per leg.
 */
const SHIM_DURATION_MS = QUICK ? 400 : Math.max(DURATION_MS, 3000);
/** The acceptance of issue #20: the translated path's p50 at most this much above the plain proxy's. */
const SHIM_BUDGET_MS = 1;

async function runShim(loader: Loader, legs: PathDef[]): Promise<Partial<Record<PathKey, Cell[]>>> {
  const results: Partial<Record<PathKey, Cell[]>> = {};
  for (const p of legs) checkClean(`warm-up ${p.label}`, await loader.run(specFor(p, 'small', 16, WARMUP_MS)), true);
  for (let round = 0; round < ROUNDS; round++) {
    for (const p of rotate(legs, round)) {
      const r = await loader.run(specFor(p, 'small', 1, SHIM_DURATION_MS));
      checkClean(`${p.label}, 1 conn`, r);
      (results[p.key] ??= []).push(r);
    }
    process.stdout.write(`upstream 20 ms away: round ${round + 1}/${ROUNDS} done (load ${load()})\n`);
  }
  return results;
}

function shimTable(legs: PathDef[], r: Partial<Record<PathKey, Cell[]>>): string {
  const at = (k: PathKey) => r[k] ?? [];
  let md = `\n### Upstream ${SHIM_DELAY_MS} ms away (\`tools/call\`, small result, 1 connection)\n\n`;
  md += `| path | p50 ms | p50 added over direct, ms | p50 minus the plain proxy's, ms | req/s | answers |\n|---|---:|---:|---:|---:|---:|\n`;
  for (const p of legs) {
    const mine = at(p.key);
    const overDirect = p.key === 'shim-direct' ? '' : withSpread(p50Over(mine, at('shim-direct')), 3);
    const overProxy = p.key.startsWith('shim-gw') ? withSpread(p50Over(mine, at('shim-proxy')), 3) : '';
    md += `| ${p.label} | ${fixed(median(mine.map((x) => x.p50)), 3)} | ${overDirect} | ${overProxy} | ${fixed(median(mine.map((x) => x.rps)), 1)} | ${int(mine.reduce((n, x) => n + x.requests, 0))} |\n`;
  }
  md += `\nIssue #20's acceptance, translated p50 ≤ the plain proxy's p50 + ${SHIM_BUDGET_MS} ms (median of the per-round differences):\n\n`;
  for (const p of legs.filter((x) => x.key.startsWith('shim-gw-ml'))) {
    const d = median(p50Over(at(p.key), at('shim-proxy')));
    md += `- ${p.label}: ${Number.isFinite(d) ? `${d >= 0 ? '+' : ''}${d.toFixed(3)} ms, ${d <= SHIM_BUDGET_MS ? 'met' : 'not met'}` : 'not measured'}\n`;
  }
  md +=
    `\nbench/fixtures/delay-shim.ts in front of the raw legacy upstream holds each request ${SHIM_DELAY_MS} ms before forwarding it and each answer ${SHIM_DELAY_MS} ms before returning it (bodies streamed), so that every exchange with the upstream costs at least ${2 * SHIM_DELAY_MS} ms. ` +
    `Direct: a 2025-11-25 client's session with the shim; the plain proxy and a gateway of their own (default configuration) sit in front of the shim. Medians over ${ROUNDS} round(s) of ${SHIM_DURATION_MS / 1000} s per leg (undici Pool + \`process.hrtime.bigint()\`), leg order rotated per round; differences are computed within each round (range in parentheses).\n`;
  return md;
}

// ---------------------------------------------------------------------------------------------------------------
// Upstream `initialize` count

/** Sequential anonymous calls counted. */
const INIT_CALLS = QUICK ? 500 : 10_000;
/** The count's time bound: past it, the calls made so far are what is reported. */
const INIT_BOUND_MS = QUICK ? 60_000 : 300_000;

interface InitCount {
  /** Calls the client made (the preflight included). */
  calls: number;
  answered: number;
  p50: number;
  /** What reached the upstream from just before the first call to after the last. */
  during: RawCounts;
  /** What reached the upstream since it started (before the gateway did). */
  total: RawCounts;
}

async function readCounts(upstreamUrl: string): Promise<RawCounts> {
  const res = await fetch(new URL(COUNTS_PATH, upstreamUrl));
  if (res.status !== 200) throw new Error(`reading ${COUNTS_PATH} of ${upstreamUrl}: HTTP ${res.status}`);
  return (await res.json()) as RawCounts;
}

/** The counts once they stop moving (a DELETE sent after the last answer), within a bound. */
async function settledCounts(upstreamUrl: string): Promise<RawCounts> {
  const deadline = Date.now() + 3_000;
  let last = await readCounts(upstreamUrl);
  for (;;) {
    await new Promise((r) => setTimeout(r, 200));
    const next = await readCounts(upstreamUrl);
    if (next.requests === last.requests || Date.now() > deadline) return next;
    last = next;
  }
}

async function runInitCount(loader: Loader, gatewayUrl: string, upstreamUrl: string): Promise<InitCount> {
  const anonymous: PathDef = { key: 'gw-ml-anon', label: 'initialize count', url: gatewayUrl, client: 'modern', direct: 'direct-legacy' };
  const before = await readCounts(upstreamUrl);
  // The loader's preflight is the first call: INIT_CALLS in all.
  const r = await loader.run({ ...specFor(anonymous, 'small', 1, INIT_BOUND_MS), count: INIT_CALLS - 1 });
  checkClean('initialize count', r);
  const total = await settledCounts(upstreamUrl);
  const during = Object.fromEntries(Object.entries(total).map(([k, v]) => [k, v - (before[k as keyof RawCounts] ?? 0)])) as unknown as RawCounts;
  return { calls: 1 + r.requests + r.non2xx + r.errors, answered: 1 + r.requests, p50: r.p50, during, total };
}

function initCountTable(c: InitCount): string {
  const stopped = c.calls < INIT_CALLS ? ` (stopped at the ${INIT_BOUND_MS / 1000} s bound)` : '';
  return (
    `\n### Upstream \`initialize\` count (anonymous caller, ${int(INIT_CALLS)} sequential calls)\n\n` +
    `| calls | \`initialize\` reaching the upstream | per call | \`notifications/initialized\` | GET | DELETE | \`tools/call\` reaching the upstream | p50 ms | \`initialize\` since the gateway started |\n` +
    `|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n` +
    `| ${int(c.calls)}${stopped} | ${int(c.during.initialize)} | ${fixed(c.during.initialize / c.calls, 3)} | ${int(c.during.notifications)} | ${int(c.during.get)} | ${int(c.during.delete)} | ${int(c.during['tools/call'])} | ${fixed(c.p50, 3)} | ${int(c.total.initialize)} |\n` +
    `\nA 2026-07-28 client without \`Authorization\` calling \`greet\` one call after another (one connection) through a gateway of its own in the default configuration (\`--upstream URL\`), in front of a raw legacy upstream of its own that counts what reaches it (\`GET ${COUNTS_PATH}\`). ` +
    `Counted from just before the first call to when the counts settle after the last; the last column adds what the gateway sent from its start (sessions opened ahead of demand included).\n`
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Federation: one endpoint over several upstreams on one path (docs/federation.md)

/** Members of each federated endpoint. */
const FED_MEMBERS = 5;
/** Tools each member shows, and the single upstream compared with it: greet, big, then fillers (raw-upstreams.ts). */
const FED_TOOLS = 50;
/** One connection for p50; 16 for throughput. */
const FED_CONNS = [1, 16];
/** Member i's namespace (the called tool is the first member's: `m1_greet` on a federated endpoint, `greet` on a single one). */
const fedNamespace = (i: number): string => `m${i + 1}`;
/** The last tool of a member's list (its name shows that the whole list came back). */
const FED_LAST_TOOL = `tool_${String(FED_TOOLS).padStart(2, '0')}`;

type Era = 'legacy' | 'modern';
interface FedLeg {
  method: 'call' | 'list';
  /** A single-upstream endpoint (as a user runs it: `--upstream URL`), or the federated endpoint of FED_MEMBERS. */
  endpoint: 'single' | 'federated';
  /** The era of the upstream(s) behind it. */
  members: Era;
  client: Era;
  url: string;
  session?: string;
}
const fedKey = (l: Pick<FedLeg, 'method' | 'endpoint' | 'members' | 'client'>): string => `${l.method}-${l.endpoint}-${l.members}-${l.client}`;

/** How a leg's client reaches the upstream(s). */
function fedLabel(l: FedLeg): string {
  if (l.endpoint === 'federated') return `federated, ${FED_MEMBERS} ${l.members} members (${l.client === 'legacy' ? 'legacy face' : 'modern face'})`;
  if (l.client === l.members) return `single ${l.members} upstream (pass-through)`;
  return `single ${l.members} upstream (translated${l.client === 'legacy' ? ', legacy face' : ''})`;
}

function fedRequest(l: FedLeg): { shape: RequestShape; expect: string } {
  const federated = l.endpoint === 'federated';
  if (l.method === 'call') {
    const tool = federated ? `${fedNamespace(0)}_greet` : 'greet';
    const params = { name: tool, arguments: { name: 'bench' } };
    return { shape: l.client === 'legacy' ? legacyShape(l.session!, 'tools/call', params) : modernShape('tools/call', params, tool), expect: 'Hello, bench!' };
  }
  return {
    shape: l.client === 'legacy' ? legacyShape(l.session!, 'tools/list', {}) : modernShape('tools/list', {}, undefined),
    expect: `"${federated ? `${fedNamespace(FED_MEMBERS - 1)}_${FED_LAST_TOOL}` : FED_LAST_TOOL}"`,
  };
}

function fedSpec(l: FedLeg, conns: number, durationMs: number): LoadSpec {
  const r = fedRequest(l);
  return { engine: conns === 1 ? 'hrtime' : 'autocannon', url: l.url, connections: conns, durationMs, requests: [r.shape], expect: r.expect };
}

/** results[leg key][conns] = one Cell per round. */
type FedResults = Record<string, Record<number, Cell[]>>;

/**
 * Starts FED_MEMBERS raw upstreams of FED_TOOLS tools per era, a gateway in front of the first alone and a gateway
 * federating all (each member with a namespace); undefined and why when the gateway under test refuses a shared path
 * (a gateway from before federation) or does not merge the members' lists.
 */
async function startFederation(pinning: Pinning): Promise<{ legs: FedLeg[] } | { skipped: string }> {
  const eras: Era[] = ['legacy', 'modern'];
  const members = await Promise.all(
    eras.map((era) => Promise.all(Array.from({ length: FED_MEMBERS }, (_, i) => rawUpstream(era, pinning, `fed-${era}-member-${i + 1}`, FED_TOOLS)))),
  );
  const gateways = await Promise.all(
    eras.map(async (era, e) => {
      const ups = members[e]!;
      const single = await gateway(`gw-single-${era}-50`, pinning, { upstream: ups[0]!.url });
      const config = {
        upstreams: ups.map((u, i) => ({ name: `${era}-${i + 1}`, url: u.url, path: '/mcp', expose: { namespace: fedNamespace(i) } })),
      };
      let federated: ServerProcess;
      try {
        federated = await gateway(`gw-federated-${era}`, pinning, { config });
      } catch (e) {
        // Its first line names the command; then its output, where a configuration error lists its issues (`- …`).
        const lines = (e as Error).message
          .split('\n')
          .slice(1)
          .map((x) => x.trim())
          .filter(Boolean);
        const issues = lines.filter((x) => x.startsWith('- ')).map((x) => x.slice(2));
        const why =
          issues.find((x) => /path .*already used/i.test(x)) ?? (issues.slice(0, 2).join('; ') || lines.find((x) => /fatal|error/i.test(x)) || lines[0]) ?? '';
        return { skipped: `the gateway under test refused ${FED_MEMBERS} upstreams on one path${why ? ` (${why.slice(0, 300)})` : ''}` };
      }
      return { era, single, federated };
    }),
  );
  const refused = gateways.find((g): g is { skipped: string } => 'skipped' in g);
  if (refused) return refused;
  const legs: FedLeg[] = [];
  for (const g of gateways as { era: Era; single: ServerProcess; federated: ServerProcess }[]) {
    // A gateway that starts but serves one member (or none) on the shared path is not federating: its list shows it.
    const probe = modernShape('tools/list', {}, undefined);
    const res = await fetch(g.federated.url, { method: 'POST', headers: probe.headers, body: probe.body.replace('__ID__', 'probe') });
    const text = await res.text();
    const want = `"${fedNamespace(FED_MEMBERS - 1)}_${FED_LAST_TOOL}"`;
    if (!text.includes(want))
      return {
        skipped: `the gateway under test does not federate ${FED_MEMBERS} upstreams on one path (its tools/list lacks ${want}: HTTP ${res.status} ${text.slice(0, 200)})`,
      };
    for (const method of ['call', 'list'] as const)
      for (const client of eras) {
        legs.push({ method, endpoint: 'single', members: g.era, client, url: g.single.url });
        legs.push({ method, endpoint: 'federated', members: g.era, client, url: g.federated.url });
      }
  }
  for (const l of legs) if (l.client === 'legacy') l.session = await openSession(l.url);
  return { legs };
}

async function runFederation(loader: Loader, legs: FedLeg[]): Promise<FedResults> {
  const results: FedResults = Object.fromEntries(legs.map((l) => [fedKey(l), Object.fromEntries(FED_CONNS.map((c) => [c, []]))]));
  // The warm-up also fills the federated endpoints' list caches: the measured lists are served from them.
  for (const l of legs) checkClean(`warm-up ${l.method} ${fedLabel(l)}`, await loader.run(fedSpec(l, 16, WARMUP_MS)), true);
  // Each federated leg runs right beside its single-upstream twin, which of the two first alternating by round: the
  // 5 % bound is read from ratios within a round, and the machine drifting between two legs far apart in a round
  // would read as federation's cost.
  const twins = legs
    .filter((l) => l.endpoint === 'federated')
    .map((f) => [legs.find((x) => x.endpoint === 'single' && x.method === f.method && x.members === f.members && x.client === f.client) as FedLeg, f] as const);
  for (let round = 0; round < ROUNDS; round++) {
    for (const conns of FED_CONNS) {
      for (const l of rotate(twins, round + conns).flatMap(([single, federated]) => ((round + conns) % 2 ? [federated, single] : [single, federated]))) {
        const r = await loader.run(fedSpec(l, conns, DURATION_MS));
        checkClean(`${l.method} ${fedLabel(l)}, ${l.client} client, ${conns} conns`, r);
        results[fedKey(l)]![conns]!.push(r);
      }
    }
    process.stdout.write(`federation: round ${round + 1}/${ROUNDS} done (load ${load()})\n`);
  }
  return results;
}

/** The acceptance bounds: a federated call costs at most 5 % more; a cached federated list adds at most 1 ms of p50. */
const FED_CALL_BUDGET = 1.05;
const FED_LIST_BUDGET_MS = 1;

function federationTables(legs: FedLeg[], r: FedResults): string {
  const at = (l: Pick<FedLeg, 'method' | 'endpoint' | 'members' | 'client'>, conns: number): Cell[] => r[fedKey(l)]?.[conns] ?? [];
  const many = FED_CONNS.filter((c) => c > 1);
  const pairs = legs.filter((l) => l.endpoint === 'federated').map((f) => ({ f, s: { ...f, endpoint: 'single' as const } }));
  let md = `\n## Federated endpoint (${FED_MEMBERS} members × ${FED_TOOLS} tools)\n`;

  md += `\n### \`tools/call\`, small result: federated against single-upstream\n\n`;
  md += `| client | members' era | federated against | how both serve it | 1 conn p50 ms, single → federated | p50 ratio | p50 added, ms |${many.map((c) => ` ${c} conns req/s, single → federated | cost (single ÷ federated req/s) |`).join('')}\n`;
  md += `|---|---|---|---|---:|---:|---:|${many.map(() => '---:|---:|').join('')}\n`;
  for (const { f, s } of pairs.filter((p) => p.f.method === 'call')) {
    const one = at(f, 1);
    const base = at(s, 1);
    const ratio = one.map((x, i) => x.p50 / (base[i]?.p50 ?? NaN));
    let row = `| ${f.client} | ${f.members} | ${fedLabel(s as FedLeg)} | ${f.client === f.members ? 'pass-through on both' : 'the same face on both'} | ${fixed(median(base.map((x) => x.p50)), 3)} → ${fixed(median(one.map((x) => x.p50)), 3)} | ${withSpread(ratio, 3, '×')} | ${withSpread(p50Over(one, base), 3)} |`;
    for (const c of many) {
      const mine = at(f, c);
      const theirs = at(s, c);
      row += ` ${int(median(theirs.map((x) => x.rps)))} → ${int(median(mine.map((x) => x.rps)))} | ${withSpread(
        mine.map((x, i) => (theirs[i]?.rps ?? NaN) / x.rps),
        3,
        '×',
      )} |`;
    }
    md += `${row}\n`;
  }
  md += `\nAcceptance, a call through the federated endpoint costs at most ${Math.round((FED_CALL_BUDGET - 1) * 100)} % more than through a single-upstream endpoint (median of the per-round p50 ratios at one connection; the throughput cost at ${many.join(', ')} connections beside it):\n\n`;
  for (const { f, s } of pairs.filter((p) => p.f.method === 'call')) {
    const p50 = median(at(f, 1).map((x, i) => x.p50 / (at(s, 1)[i]?.p50 ?? NaN)));
    const rps = many.map((c) => median(at(f, c).map((x, i) => (at(s, c)[i]?.rps ?? NaN) / x.rps)));
    const verdict = (x: number) => (Number.isFinite(x) ? `${x.toFixed(3)}× (${x <= FED_CALL_BUDGET ? 'met' : 'not met'})` : 'not measured');
    md += `- ${f.client} client, ${f.members} members, against the ${fedLabel(s as FedLeg)}: p50 ${verdict(p50)}; throughput ${rps.map(verdict).join(', ')}\n`;
  }

  md += `\n### \`tools/list\` (${FED_MEMBERS} × ${FED_TOOLS} tools from the federated endpoint's cache, against ${FED_TOOLS} tools from a single-upstream endpoint)\n\n`;
  md += `| client | members' era | federated against | 1 conn p50 ms, single → federated | p50 added, ms |${many.map((c) => ` ${c} conns req/s, single → federated |`).join('')} within ${FED_LIST_BUDGET_MS} ms |\n`;
  md += `|---|---|---|---:|---:|${many.map(() => '---:|').join('')}---|\n`;
  for (const { f, s } of pairs.filter((p) => p.f.method === 'list')) {
    const added = p50Over(at(f, 1), at(s, 1));
    const d = median(added);
    let row = `| ${f.client} | ${f.members} | ${fedLabel(s as FedLeg)} | ${fixed(median(at(s, 1).map((x) => x.p50)), 3)} → ${fixed(median(at(f, 1).map((x) => x.p50)), 3)} | ${withSpread(added, 3)} |`;
    for (const c of many) row += ` ${int(median(at(s, c).map((x) => x.rps)))} → ${int(median(at(f, c).map((x) => x.rps)))} |`;
    md += `${row} ${Number.isFinite(d) ? (d <= FED_LIST_BUDGET_MS ? 'met' : 'not met') : 'not measured'} |\n`;
  }
  md +=
    `\nPer era of the members, ${FED_MEMBERS} raw upstreams (bench/fixtures/raw-upstreams.ts) of ${FED_TOOLS} tools each (\`greet\`, \`big\` and fillers with a description and an input schema); a gateway in front of the first alone (\`--upstream URL\`, the default configuration) and a gateway with all ${FED_MEMBERS} on \`/mcp\`, namespaces ${Array.from({ length: FED_MEMBERS }, (_, i) => `\`${fedNamespace(i)}\``).join(', ')} (the call is \`${fedNamespace(0)}_greet\` there, \`greet\` on the single endpoint). ` +
    `Anonymous callers (no \`Authorization\`); a legacy client holds one 2025-11-25 session per endpoint. ` +
    `A single-upstream endpoint in front of an upstream of the client's era is a plain pass-through, and so is a federated endpoint's call to a member of the client's era (docs/federation.md §Eras and tasks: the name rewritten, a 2025-11-25 call on the caller's pooled member session); the rows whose single endpoint is translated compare the same face with and without federation. Either way the difference is federation's own cost. ` +
    `The federated lists are served from the endpoint's cache, filled by the warm-up (a cached member list is trusted 30 s unless its member says otherwise; a leg lasts ${DURATION_MS / 1000} s); the single endpoints' lists come from the upstream (or the face's own cache). ` +
    `Medians over ${ROUNDS} round(s) of ${DURATION_MS / 1000} s per leg; each federated leg runs right beside its single-upstream twin (which first alternates by round), the pairs' order rotated per round; ratios and differences are computed within each round (range in parentheses). 1 connection: undici Pool + \`process.hrtime.bigint()\`; ${many.join(', ')} connections: autocannon.\n`;
  return md;
}

// ---------------------------------------------------------------------------------------------------------------
// Tasks

const STORES = ['memory', 'redis', 'postgres'] as const;
type Store = (typeof STORES)[number];
/**
 * `get`: `tasks/get` on completed tasks, `poll`: on running ones (a store read and a poll count each: no store may answer
 * them from a copy of finished records), and `create`: the task creation rate, both at TASK_CONNS connections
 * (autocannon: throughput, whole-ms latencies); `latency`: task creation at one connection (hrtime: p50 and p99 to the
 * microsecond), for what each store adds to it.
 */
type TaskMeasure = 'get' | 'poll' | 'create' | 'latency';
const TASK_MEASURES: readonly TaskMeasure[] = ['get', 'poll', 'create', 'latency'];
type TaskLeg = `${TaskMeasure}-${Store}`;
/** The task gateways' endpoints: memory always, a shared store's when its server runs. */
type TaskUrls = { memory: string } & Partial<Record<Exclude<Store, 'memory'>, string>>;
type TaskResults = Partial<Record<TaskLeg, Cell[]>>;
/** Why a store's legs did not run (its server cannot start on this machine, or the gateway under test refuses the store). */
type TaskMissing = Partial<Record<Store, string>>;
/** The issue's targets: `tasks/get` on Postgres at least this many per second per instance… */
const PG_GET_TARGET_RPS = 5_000;
/** … and Postgres's task creation p99 at most this much above Redis's. */
const PG_CREATE_P99_OVER_REDIS_MS = 5;
/** The task legs' servers, for the results' header. */
const TASK_SERVERS =
  'for the tasks, a gateway per store (memory, Redis, Postgres) in front of the raw legacy upstream, and a redis-server and a postgres of their own';
/** Task creation answers in tens of ms under load: a short leg would count few answers or none. */
const TASK_DURATION_MS = Math.max(DURATION_MS, 1000);

/** The shared stores' servers (each a process of its own on the server core) and why one is missing. */
interface TaskStores {
  redis?: { url: string };
  postgres?: { url: string };
  missing: TaskMissing;
  /** Stops Redis and disposes of Postgres (data dir included). */
  stop(): Promise<void>;
}

async function startTaskStores(pinning: Pinning): Promise<TaskStores> {
  const helpers = await storeModules(pinning);
  const missing: TaskMissing = {};
  const noRedis = helpers.redis.serverBinaryMissing();
  if (noRedis) missing.redis = noRedis;
  const noPostgres = helpers.postgres.postgresBinaryMissing();
  if (noPostgres) missing.postgres = noPostgres;
  const [redis, postgres] = await Promise.allSettled([
    noRedis ? undefined : helpers.redis.startRedis(),
    noPostgres ? undefined : helpers.postgres.startPostgres(),
  ]);
  // Once, however many callers ask (the run's end, and its `finally` if it fails).
  let stopped: Promise<unknown> | undefined;
  const stop = async (): Promise<void> => {
    stopped ??= Promise.all([redis.status === 'fulfilled' && redis.value?.stop(), postgres.status === 'fulfilled' && postgres.value?.dispose()]);
    await stopped;
  };
  for (const r of [redis, postgres]) {
    if (r.status === 'rejected') {
      await stop();
      throw r.reason;
    }
  }
  const running = (r: typeof redis | typeof postgres) => (r.status === 'fulfilled' ? r.value : undefined);
  const r = running(redis);
  const p = running(postgres);
  return { ...(r ? { redis: r } : {}), ...(p ? { postgres: p } : {}), missing, stop };
}

/** A gateway per store in front of the raw legacy upstream at `upstreamUrl`, wrapping greet into a task. */
async function startTaskGateways(pinning: Pinning, upstreamUrl: string, stores: TaskStores): Promise<TaskUrls> {
  const config = (store: object) => ({
    store,
    // Rounds create tens of thousands of tasks: the memory store must not evict the ones tasks/get cycles over.
    tasks: { maxActivePerPrincipal: 10_000, maxTasks: 1_000_000, pollBurst: 1_000_000_000 },
    // Each running (held) task holds an upstream session: room for them beside the creations.
    sessions: { maxPerUpstream: 1_024, maxPerPrincipal: 1_024 },
    // Anonymous task creators share one upstream session (as before scopes): the legs measure task records, and a
    // session per wrapped call would meet the anonymous principal's share of sessions at this creation rate.
    upstreams: [{ name: 'raw', url: upstreamUrl, tools: { greet: { task: 'always' }, hold: { task: 'always' } }, sessions: { anonymousScope: 'shared' } }],
  });
  // A shared store needs the deployment's secret (the same on every instance).
  const shared = { MCP_GATEWAY_STATE_SECRET: SECRET };
  const [memory, redis, postgres] = await Promise.all([
    gateway('gw-tasks-memory', pinning, { config: config({ kind: 'memory' }) }),
    stores.redis && gateway('gw-tasks-redis', pinning, { config: config({ kind: 'redis', url: stores.redis.url, keyPrefix: 'mcpgw-bench:' }) }, shared),
    // A gateway from before the Postgres store (--gateway-dir) refuses the configuration: its row says so.
    stores.postgres &&
      gateway('gw-tasks-postgres', pinning, { config: config({ kind: 'postgres', url: stores.postgres.url }) }, shared).catch((e: Error) => {
        const lines = e.message
          .split('\n')
          .slice(1)
          .map((x) => x.trim())
          .filter(Boolean);
        const why = lines.filter((x) => x.startsWith('- ')).map((x) => x.slice(2))[0] ?? lines.find((x) => /fatal|error/i.test(x)) ?? lines[0] ?? '';
        stores.missing.postgres = `the gateway under test did not start with \`store: { kind: postgres }\`${why ? ` (${why.slice(0, 300)})` : ''}`;
        process.stderr.write(`bench: gw-tasks-postgres did not start, its legs are skipped: ${e.message.slice(0, 3000)}\n`);
        return undefined;
      }),
  ]);
  return { memory: memory.url, ...(redis ? { redis: redis.url } : {}), ...(postgres ? { postgres: postgres.url } : {}) };
}

async function createTasks(url: string, n: number, tool: 'greet' | 'hold' = 'greet'): Promise<string[]> {
  const ids: string[] = [];
  const shape = createShape(tool);
  for (let i = 0; i < n; i++) {
    const res = await fetch(url, { method: 'POST', headers: shape.headers, body: shape.body.replace('__ID__', `c${i}`) });
    const body = (await res.json()) as { result?: { resultType?: string; taskId?: string; task?: { taskId?: string } } };
    const id = body.result?.taskId ?? body.result?.task?.taskId;
    if (res.status !== 200 || body.result?.resultType !== 'task' || !id)
      throw new Error(`creating a task on ${url}: HTTP ${res.status} ${JSON.stringify(body).slice(0, 300)}`);
    ids.push(id);
  }
  // `hold` answers after the run: its tasks stay running.
  if (tool === 'hold') return ids;
  // Every one completed before tasks/get is measured (the raw greet answers at once; bounded anyway).
  const deadline = Date.now() + 30_000;
  for (const id of ids) {
    for (;;) {
      const get = getShape(id);
      const res = await fetch(url, { method: 'POST', headers: get.headers, body: get.body.replace('__ID__', 'w') });
      const text = await res.text();
      if (text.includes('"status":"completed"')) break;
      if (/"status":"(failed|cancelled)"/.test(text) || Date.now() > deadline) throw new Error(`task ${id} did not complete: ${text.slice(0, 300)}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  }
  return ids;
}

/** `tools/call` of greet (or hold), which the task gateways wrap into a task (`always`): a task creation. */
function createShape(tool: 'greet' | 'hold' = 'greet'): RequestShape {
  return modernShape('tools/call', { name: tool, arguments: { name: 'bench' } }, tool, { extensions: { [TASKS_EXT]: {} } });
}

function getShape(taskId: string): RequestShape {
  return modernShape('tasks/get', { taskId }, taskId, { extensions: { [TASKS_EXT]: {} } });
}

/** Every leg of every store that runs, in the same rounds (leg order rotated per round). */
async function runTasks(loader: Loader, urls: TaskUrls): Promise<TaskResults> {
  const stores = STORES.filter((s) => urls[s] !== undefined);
  const ids: Partial<Record<Store, string[]>> = {};
  const running: Partial<Record<Store, string[]>> = {};
  for (const s of stores) ids[s] = await createTasks(urls[s]!, TASKS_FOR_GET);
  for (const s of stores) running[s] = await createTasks(urls[s]!, TASKS_RUNNING, 'hold');
  const create = createShape();
  const spec = (leg: TaskLeg, durationMs: number): LoadSpec => {
    const [measure, store] = leg.split('-') as [TaskMeasure, Store];
    const url = urls[store]!;
    if (measure === 'get')
      return { engine: 'autocannon', url, connections: TASK_CONNS, durationMs, requests: ids[store]!.map(getShape), expect: '"status":"completed"' };
    if (measure === 'poll')
      return { engine: 'autocannon', url, connections: TASK_CONNS, durationMs, requests: running[store]!.map(getShape), expect: '"status":"working"' };
    const one = measure === 'latency';
    return { engine: one ? 'hrtime' : 'autocannon', url, connections: one ? 1 : TASK_CONNS, durationMs, requests: [create], expect: '"resultType":"task"' };
  };
  const legs = TASK_MEASURES.flatMap((m) => stores.map((s): TaskLeg => `${m}-${s}`));
  const results: TaskResults = {};
  for (const leg of legs) checkClean(`warm-up ${leg}`, await loader.run(spec(leg, WARMUP_MS)), true);
  for (let round = 0; round < ROUNDS; round++) {
    for (const leg of rotate(legs, round)) {
      const r = await loader.run(spec(leg, TASK_DURATION_MS));
      checkClean(leg, r);
      (results[leg] ??= []).push(r);
    }
    process.stdout.write(`tasks: round ${round + 1}/${ROUNDS} done (load ${load()})\n`);
  }
  return results;
}

/** `mine[i][key] - base[i][key]` per round (the rounds' legs ran near each other). */
const overRound = (mine: Cell[], base: Cell[], key: 'p50' | 'p99'): number[] => mine.map((r, i) => r[key] - (base[i]?.[key] ?? NaN));
const signed = (x: number, digits: number): string => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(digits)}` : '–');
const verdict = (met: boolean, measured: boolean): string => (measured ? (met ? 'met' : 'not met') : 'not measured');

/** How the task legs were set up, for both task tables. */
function tasksSetup(): string {
  return (
    `A gateway in front of the raw legacy upstream with \`tools: { greet: { task: always } }\` (\`tasks.maxActivePerPrincipal\` raised to 10,000 so that creation is never refused, \`tasks.maxTasks\` to 1,000,000 so that the memory store never evicts the tasks polled, \`sessions\` limits to 1,024 so that the running tasks' upstream sessions leave room), one per store, each a process of its own on the server core: ` +
    `memory; Redis (a redis-server of its own on the server core, no persistence); Postgres (\`store: { kind: postgres }\`, the default pool, on a postgres of its own on the server core started as test/helpers/postgres-server.ts does: \`fsync=off\`, \`synchronous_commit=on\`, so a commit waits for its WAL write to reach the kernel, not the disk). ` +
    `Anonymous modern clients declaring the tasks extension. Medians over ${ROUNDS} round(s) of ${TASK_DURATION_MS / 1000} s per leg, every leg of every store in the same rounds, leg order rotated per round (range over the rounds in parentheses).`
  );
}

function taskTable(r: TaskResults, missing: TaskMissing): string {
  const at = (leg: TaskLeg) => r[leg] ?? [];
  const rate = (leg: TaskLeg) =>
    `${int(median(at(leg).map((x) => x.rps)))}${spread(
      at(leg).map((x) => x.rps),
      0,
    )}`;
  const p99 = (leg: TaskLeg) => fixed(median(at(leg).map((x) => x.p99)), 0);
  let md =
    `\n### Tasks (${TASK_CONNS} connections, modern client declaring the tasks extension)\n\n` +
    `| store | \`tasks/get\` req/s (completed tasks) | p99 ms | \`tasks/get\` req/s (running tasks) | p99 ms | task creation /s (\`tools/call\` of a tool wrapped \`always\`) | p99 ms |\n|---|---:|---:|---:|---:|---:|---:|\n`;
  for (const s of STORES) {
    md += missing[s]
      ? `| ${s} | not measured: ${missing[s]} | | | | | |\n`
      : `| ${s} | ${rate(`get-${s}`)} | ${p99(`get-${s}`)} | ${rate(`poll-${s}`)} | ${p99(`poll-${s}`)} | ${rate(`create-${s}`)} | ${p99(`create-${s}`)} |\n`;
  }
  const pg = (leg: TaskLeg) => median(at(leg).map((x) => x.rps));
  const target = (what: string, rps: number) => `${what}: ${int(rps)}/s, ${verdict(rps >= PG_GET_TARGET_RPS, Number.isFinite(rps))}`;
  md += `\nTarget, \`tasks/get\` on Postgres ≥ ${int(PG_GET_TARGET_RPS)}/s per instance: ${missing.postgres ? `not measured (${missing.postgres})` : `${target('completed tasks', pg('get-postgres'))}; ${target('running tasks', pg('poll-postgres'))}`}.\n`;
  md += `\n${tasksSetup()} \`tasks/get\` cycles over ${int(TASKS_FOR_GET)} completed tasks per store (the Postgres store answers a finished record it has read once from its in-process copy: a terminal record never changes), and over ${int(TASKS_RUNNING)} running ones (a wrapped \`hold\`, which the upstream answers after 10 minutes; \`tasks.pollBurst\` raised so that no poll is refused): each of those is a store read and a poll count. p99 in whole ms (autocannon).\n`;
  return md;
}

/** Task creation at one connection: p50 and p99 per store, and what each adds over memory (within a round). */
function taskLatencyTable(r: TaskResults, missing: TaskMissing): string {
  const at = (s: Store) => r[`latency-${s}`] ?? [];
  let md =
    `\n### Task creation latency (1 connection)\n\n` +
    `| store | creation p50 ms | p99 ms | p50 added over memory, ms | p99 added over memory, ms | creations measured |\n|---|---:|---:|---:|---:|---:|\n`;
  for (const s of STORES) {
    if (missing[s]) {
      md += `| ${s} | not measured: ${missing[s]} | | | | |\n`;
      continue;
    }
    const mine = at(s);
    const added = (key: 'p50' | 'p99') => (s === 'memory' ? '' : withSpread(overRound(mine, at('memory'), key), 2));
    md += `| ${s} | ${withSpread(
      mine.map((x) => x.p50),
      2,
    )} | ${withSpread(
      mine.map((x) => x.p99),
      2,
    )} | ${added('p50')} | ${added('p99')} | ${int(mine.reduce((n, x) => n + x.requests, 0))} |\n`;
  }
  const shared = !missing.redis && !missing.postgres;
  const p99 = median(overRound(at('postgres'), at('redis'), 'p99'));
  const p50 = median(overRound(at('postgres'), at('redis'), 'p50'));
  md +=
    `\nTarget, Postgres creation p99 at most ${PG_CREATE_P99_OVER_REDIS_MS} ms above Redis's (median of the per-round differences): ` +
    (shared
      ? `${signed(p99, 2)} ms${spread(overRound(at('postgres'), at('redis'), 'p99'), 2)}, ${verdict(p99 <= PG_CREATE_P99_OVER_REDIS_MS, Number.isFinite(p99))} (p50: ${signed(p50, 2)} ms).\n`
      : `not measured (${missing.postgres ?? missing.redis}).\n`);
  md +=
    `\nOne creation after another (\`tools/call\` of greet, answered with the task: what the caller waits for), on one connection: undici Pool + \`process.hrtime.bigint()\`. ` +
    `Added over memory: the store's p50 (p99) minus the memory gateway's in the same round. ${tasksSetup()}\n`;
  return md;
}

/** The task section's tables. */
async function tasksSection(loader: Loader, urls: TaskUrls, missing: TaskMissing): Promise<string> {
  const r = await phase('tasks', () => runTasks(loader, urls));
  return taskTable(r, missing) + taskLatencyTable(r, missing);
}

// ---------------------------------------------------------------------------------------------------------------
// Heap

async function runHeap(pinning: Pinning): Promise<HeapReport> {
  // Enough tasks even in a quick run that the heap's own noise (a few hundred KB, and JIT code compiled after the
  // baseline) cannot turn a figure negative: 400 through the gateway once measured no growth on a loaded CI machine.
  const counts = QUICK ? '2000' : '10000,100000';
  const viaGateway = '1000';
  const argv = [
    ...pinning.server,
    NODE,
    '--expose-gc',
    ...TSX,
    join(ROOT, 'bench/heap.ts'),
    '--gateway',
    viaGateway,
    '--counts',
    counts,
    '--gateway-dir',
    GATEWAY_DIR,
    ...(args.source ? ['--source'] : []),
  ];
  const child = spawn(argv[0]!, argv.slice(1), { stdio: ['ignore', 'pipe', 'pipe'] });
  track(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const code = await new Promise<number | null>((r) => child.once('close', (c) => r(c)));
  if (code !== 0) throw new Error(`bench/heap.ts failed (exit ${code}):\n${err.slice(-3000)}`);
  return JSON.parse(out.trim().split('\n').at(-1)!) as HeapReport;
}

function heapTable(h: HeapReport): string {
  let md = `\n### Heap per stored terminal task (memory store)\n\n| tasks stored | made | heap MB | bytes per task | beyond its result |\n|---:|---|---:|---:|---:|\n`;
  for (const p of h.points) {
    const how = p.how === 'zero' ? 'baseline (after warm-up)' : p.how === 'gateway' ? 'through the gateway' : 'store calls of a real task replayed';
    md += `| ${int(p.tasks)} | ${how} | ${fixed(p.heapBytes / 2 ** 20, 1)} | ${p.bytesPerTask === undefined ? '' : int(p.bytesPerTask)} | ${p.beyondResult === undefined ? '' : `**${int(p.beyondResult)}**`} |\n`;
  }
  md += `\nThe result (\`greet\`'s, ${h.resultJsonBytes} bytes of JSON) costs ${int(h.resultHeapBytes)} bytes of heap held alone; "beyond its result" subtracts that. In-process gateway (bench/heap.ts, \`--expose-gc\`, heap after full collections). Beyond the tasks made through the gateway, the store is filled by replaying the store calls the runtime made for one real task (${h.trace.join(' → ')}), with fresh ids and timestamps. The through-the-gateway figure also carries some JIT code compiled after the baseline.\n`;
  return md;
}

// ---------------------------------------------------------------------------------------------------------------
// Polling (bench/polling.ts, when it exists: its own section)

async function runPolling(): Promise<string | undefined> {
  const file = join(ROOT, 'bench/polling.ts');
  if (!existsSync(file)) return undefined;
  // Its tasks run for seconds (up to ~5 s each, after a warm-up): longer than the whole of a quick run.
  if (QUICK) return `\n### Polling (bench/polling.ts)\n\nNot run with --quick.\n`;
  const { runPollingBench } = (await import(pathToFileURL(file).href)) as typeof import('./polling.js');
  const r = await runPollingBench({});
  return `\n### Polling (bench/polling.ts)\n\n${r.markdown.trim()}\n`;
}

/** Runs one phase, saying how long it took. */
async function phase<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const r = await fn();
  process.stdout.write(`bench: ${name} took ${((performance.now() - t0) / 1000).toFixed(1)} s (load ${load()})\n`);
  return r;
}

// ---------------------------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = new Date();
  const loadBefore = load();
  const pinning = pinCores();
  logDir = mkdtempSync(join(tmpdir(), 'mcp-bench-'));
  process.stdout.write(`bench: gateway ${gatewayCli}; ${pinning.describe}; logs in ${logDir}\n`);
  const loader = startLoader();
  let md = '';
  let stores: TaskStores | undefined;
  try {
    if (ONLY === 'tasks') {
      // The tasks section alone: the raw legacy upstream, the stores' servers and the task gateways.
      const legacyUp = await phase('starting the upstream', () => rawUpstream('legacy', pinning));
      stores = await phase('starting the task stores', () => startTaskStores(pinning));
      const taskStores = stores;
      const taskUrls = await phase('starting the task gateways', () => startTaskGateways(pinning, legacyUp.url, taskStores));
      md += await tasksSection(loader, taskUrls, taskStores.missing);
    } else {
      // A legacy upstream of its own for the initialize count: nothing else reaches it, so its counts are the count leg's.
      const [legacyUp, modernUp, countUp] = await phase('starting the upstreams', () =>
        Promise.all([rawUpstream('legacy', pinning), rawUpstream('modern', pinning), rawUpstream('legacy', pinning, 'upstream-legacy-count')]),
      );
      // One gateway per upstream, as a user runs it: clients of both eras use it (one pass-through, one translated).
      // At info the gateway logs a line per request (to a file here); one more gateway without those lines shows their cost.
      const quiet = ['info', 'debug', 'trace'].includes(LOG_LEVEL) && !QUICK;
      // The task legs: a gateway per store wrapping greet into a task; Redis and Postgres servers of their own.
      stores = await phase('starting the task stores', () => startTaskStores(pinning));
      const taskStores = stores;
      // Started together (idle gateways cost the others nothing): a cold start is most of a short run.
      const [proxy, gwLegacy, gwModern, gwQuiet, taskUrls, shimmed, gwCount] = await phase('starting the proxy and gateways', () =>
        Promise.all([
          server('plain-proxy', [NODE, ...TSX, join(ROOT, 'bench/plain-proxy.ts'), legacyUp.url, '0'], pinning, LISTENING),
          gateway('gw-legacy-upstream', pinning, { upstream: legacyUp.url }),
          gateway('gw-modern-upstream', pinning, { upstream: modernUp.url }),
          quiet ? gateway('gw-legacy-upstream-warn', pinning, { upstream: legacyUp.url }, { LOG_LEVEL: 'warn' }) : undefined,
          startTaskGateways(pinning, legacyUp.url, taskStores),
          // The upstream 20 ms away: the shim in front of the raw legacy upstream, a plain proxy and a gateway in front of it.
          (async () => {
            const shim = await server(
              'delay-shim',
              [NODE, ...TSX, join(ROOT, 'bench/fixtures/delay-shim.ts'), legacyUp.url, String(SHIM_DELAY_MS), '0'],
              pinning,
              LISTENING,
            );
            const [shimProxy, shimGw] = await Promise.all([
              server('plain-proxy-shim', [NODE, ...TSX, join(ROOT, 'bench/plain-proxy.ts'), shim.url, '0'], pinning, LISTENING),
              gateway('gw-shim', pinning, { upstream: shim.url }),
            ]);
            return { shim, proxy: shimProxy, gateway: shimGw };
          })(),
          gateway('gw-count', pinning, { upstream: countUp.url }),
        ]),
      );
      const paths: PathDef[] = [
        { key: 'direct-legacy', label: 'direct to the raw legacy upstream (2025-11-25 session)', url: legacyUp.url, client: 'legacy', direct: 'direct-legacy' },
        { key: 'direct-modern', label: 'direct to the raw modern upstream (2026-07-28)', url: modernUp.url, client: 'modern', direct: 'direct-modern' },
        { key: 'proxy', label: 'plain `fastify` + `@fastify/http-proxy` → legacy', url: proxy.url, client: 'legacy', direct: 'direct-legacy' },
        { key: 'gw-ll', label: 'gateway legacy → legacy (pass-through)', url: gwLegacy.url, client: 'legacy', direct: 'direct-legacy' },
        // The translated paths for both kinds of caller (docs/security.md §Upstream session isolation): a credentialed caller is a
        // principal of its own; anonymous callers (the default configuration's) cannot be told apart.
        { key: 'gw-ml-anon', label: 'gateway modern → legacy (translated), anonymous', url: gwLegacy.url, client: 'modern', direct: 'direct-legacy' },
        {
          key: 'gw-ml',
          label: 'gateway modern → legacy (translated), credentialed',
          url: gwLegacy.url,
          client: 'modern',
          direct: 'direct-legacy',
          authorization: BENCH_AUTHORIZATION,
        },
        { key: 'gw-mm', label: 'gateway modern → modern (pass-through)', url: gwModern.url, client: 'modern', direct: 'direct-modern' },
        { key: 'gw-lm', label: 'gateway legacy → modern (translated, legacy face), anonymous', url: gwModern.url, client: 'legacy', direct: 'direct-modern' },
        {
          key: 'gw-lm-cred',
          label: 'gateway legacy → modern (translated, legacy face), credentialed',
          url: gwModern.url,
          client: 'legacy',
          direct: 'direct-modern',
          authorization: BENCH_AUTHORIZATION,
        },
      ];
      if (gwQuiet)
        paths.push({
          key: 'gw-ml-quiet',
          label: 'gateway modern → legacy (translated), credentialed, LOG_LEVEL=warn',
          url: gwQuiet.url,
          client: 'modern',
          direct: 'direct-legacy',
          authorization: BENCH_AUTHORIZATION,
        });
      const shimLegs: PathDef[] = [
        { key: 'shim-direct', label: 'direct to the shim (2025-11-25 session)', url: shimmed.shim.url, client: 'legacy', direct: 'shim-direct' },
        { key: 'shim-proxy', label: 'plain `fastify` + `@fastify/http-proxy` → shim', url: shimmed.proxy.url, client: 'legacy', direct: 'shim-direct' },
        { key: 'shim-gw-ll', label: 'gateway legacy → legacy (pass-through) → shim', url: shimmed.gateway.url, client: 'legacy', direct: 'shim-direct' },
        {
          key: 'shim-gw-ml-anon',
          label: 'gateway modern → legacy (translated), anonymous → shim',
          url: shimmed.gateway.url,
          client: 'modern',
          direct: 'shim-direct',
        },
        {
          key: 'shim-gw-ml-cred',
          label: 'gateway modern → legacy (translated), credentialed → shim',
          url: shimmed.gateway.url,
          client: 'modern',
          direct: 'shim-direct',
          authorization: BENCH_AUTHORIZATION,
        },
      ];
      for (const p of [...paths, ...shimLegs]) if (p.client === 'legacy') p.session = await openSession(p.url, p.authorization);
      const pathResults = await phase('paths', () => runPaths(loader, paths));
      md += `\n## Paths\n${pathTables(paths, pathResults)}`;
      md += callersTable(paths, pathResults);
      md += shimTable(shimLegs, await phase('upstream 20 ms away', () => runShim(loader, shimLegs)));
      md += initCountTable(await phase('initialize count', () => runInitCount(loader, gwCount.url, countUp.url)));
      // Started last (its servers idle until then would cost the others nothing, but a refusal is clearer here).
      const fed = await phase('starting the federation', () => startFederation(pinning));
      md +=
        'skipped' in fed
          ? `\n## Federated endpoint (${FED_MEMBERS} members × ${FED_TOOLS} tools)\n\nNot measured: ${fed.skipped}.\n`
          : federationTables(fed.legs, await phase('federation', () => runFederation(loader, fed.legs)));
      md += await tasksSection(loader, taskUrls, taskStores.missing);
      // Every server gone before the heap is measured (the gateways before their stores: a store going away under a
      // gateway would only fill its log).
      await Promise.all(servers.splice(0).map((s) => s.stop()));
      await stores.stop();

      md += heapTable(await phase('heap', () => runHeap(pinning)));
      const polling = await phase('polling', runPolling);
      if (polling) md += polling;
    }
  } finally {
    loader.close();
    await Promise.all(servers.splice(0).map((s) => s.stop()));
    await stores?.stop();
  }
  const loadAfter = load();
  const m = machine();
  const command =
    process.env.npm_lifecycle_event === 'bench'
      ? `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`
      : `node --import tsx ${relative(process.cwd(), fileURLToPath(import.meta.url))} ${process.argv.slice(2).join(' ')}`.trim();
  const head =
    `# Benchmark results\n\n` +
    `Written by \`npm run bench\` (bench/run.ts); rerun it to measure your machine. Only ratios measured within one run mean much; absolute figures move with the machine and its load.${ONLY ? ` A partial run: the ${ONLY} section alone (\`--only ${ONLY}\`).` : ''}\n\n` +
    `- command: \`${command}\`\n` +
    `- date: ${started.toISOString()} (took ${Math.round((Date.now() - started.getTime()) / 1000)} s)\n` +
    `- gateway: ${relative(ROOT, gatewayCli) || gatewayCli} — ${commitOf(GATEWAY_DIR)}; LOG_LEVEL=${LOG_LEVEL}\n` +
    `- machine: ${m.nproc} cores (${m.cpuModel}), ${fixed(m.memoryGiB, 1)} GiB, ${m.platform}, node ${m.node}\n` +
    `- load average (1/5/15 min): before ${loadBefore}, after ${loadAfter}\n` +
    `- pinning: ${pinning.describe}\n` +
    (ONLY
      ? `- every server is a process of its own on loopback: a raw legacy upstream (bench/fixtures/raw-upstreams.ts); ${TASK_SERVERS}\n`
      : `- every server is a process of its own on loopback: raw upstreams (bench/fixtures/raw-upstreams.ts), the plain proxy (bench/plain-proxy.ts), one gateway per upstream (serving clients of both eras); for the upstream ${SHIM_DELAY_MS} ms away, the delay shim (bench/fixtures/delay-shim.ts) with a plain proxy and a gateway of their own in front; for the initialize count, a raw legacy upstream and a gateway of their own; for the federated endpoint, ${FED_MEMBERS} raw upstreams of ${FED_TOOLS} tools per era, a gateway federating them and a gateway in front of the first alone; ${TASK_SERVERS}\n`);
  writeFileSync(OUT, `${head}${md}`);
  process.stdout.write(`${head}${md}\nwritten to ${OUT}\n`);
  rmSync(logDir, { recursive: true, force: true });
}

/**
 * test/helpers/redis-server.ts and test/helpers/postgres-server.ts, their servers pinned to the server core through
 * wrappers that exec them under taskset. Redis: a `redis-server` first on PATH, which execs the one PATH held before
 * (REDIS_SERVER_BIN cannot be it: the helper reads it once, when it loads, and bench/lib/processes.ts, which takes
 * freePort from it, has loaded it before the harness runs; a REDIS_SERVER_BIN given by the caller is used as is,
 * unpinned). Postgres: PG_BIN_DIR, a directory whose `postgres` execs the real one (found as the helper finds it:
 * PG_BIN_DIR when given, else on PATH, else the newest /usr/lib/postgresql/<v>/bin) and whose `initdb` links to the
 * real one (the helper reads PG_BIN_DIR when it first starts a server).
 */
async function storeModules(pinning: Pinning): Promise<{
  redis: typeof import('../test/helpers/redis-server.js');
  postgres: typeof import('../test/helpers/postgres-server.js');
}> {
  const quote = (x: string) => `'${x.replaceAll("'", `'\\''`)}'`;
  const wrapper = (dir: string, name: string, real: string) => {
    mkdirSync(dir, { mode: 0o755 });
    writeFileSync(join(dir, name), `#!/bin/sh\nexec ${[...pinning.server, real].map(quote).join(' ')} "$@"\n`, { mode: 0o755 });
  };
  // Not a resolved link: Debian's redis-server links to redis-check-rdb, which tells what to be from its argv[0].
  const redisReal = pinning.pinned && !process.env.REDIS_SERVER_BIN ? onPath('redis-server') : undefined;
  if (redisReal) {
    const dir = join(logDir, 'redis-bin');
    wrapper(dir, 'redis-server', redisReal);
    process.env.PATH = `${dir}:${process.env.PATH ?? ''}`;
  }
  const pgReal = pinning.pinned ? postgresBinaries() : undefined;
  if (pgReal) {
    const dir = join(logDir, 'pg-bin');
    wrapper(dir, 'postgres', pgReal.postgres);
    symlinkSync(pgReal.initdb, join(dir, 'initdb'));
    // As root the helper runs them as the postgres OS user, who must reach them: the log dir becomes traversable (not listable).
    if (process.getuid?.() === 0) chmodSync(logDir, 0o711);
    process.env.PG_BIN_DIR = dir;
  }
  return { redis: await import('../test/helpers/redis-server.js'), postgres: await import('../test/helpers/postgres-server.js') };
}

/** The first executable `name` in a PATH directory (absolute ones only), as PATH spells it. */
function onPath(name: string): string | undefined {
  const executable = (f: string) => {
    try {
      accessSync(f, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  return (process.env.PATH ?? '')
    .split(':')
    .filter((d) => d.startsWith('/'))
    .map((d) => join(d, name))
    .find(executable);
}

/** The real `initdb` and `postgres` (links resolved), where test/helpers/postgres-server.ts looks; none: it says why. */
function postgresBinaries(): { initdb: string; postgres: string } | undefined {
  const both = (d: string) => ['initdb', 'postgres'].every((b) => existsSync(join(d, b)));
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian) ? readdirSync(debian).filter((v) => /^\d+(\.\d+)?$/.test(v)) : [];
  const dir = process.env.PG_BIN_DIR
    ? [process.env.PG_BIN_DIR].find(both)
    : ((process.env.PATH ?? '').split(':').find((d) => d.startsWith('/') && both(d)) ??
      versions
        .sort((a, b) => Number(b) - Number(a))
        .map((v) => join(debian, v, 'bin'))
        .find(both));
  return dir ? { initdb: realpathSync(join(dir, 'initdb')), postgres: realpathSync(join(dir, 'postgres')) } : undefined;
}

main().then(
  () => process.exit(0),
  (e: Error) => {
    process.stderr.write(`bench failed: ${e.stack ?? e.message}\n${logDir ? `(server logs kept in ${logDir})\n` : ''}`);
    process.exit(1);
  },
);
