/**
 * Gateway overhead on loopback: the same tools/call (`greet`, which every fixture has) measured in pairs,
 * each pair a direct leg and a gateway leg:
 *  (a) directly, as a 2025-11-25 client on one initialized session, on the legacy fixture, and
 *  (b) through the gateway in front of that fixture, as a stateless 2026-07-28 request;
 *  (c) directly, as the same 2025-11-25 client, on the dual-era modern fixture (its own legacy leg), and
 *  (d) the same client through the gateway in front of the 2026-07-28-only fixture, where the legacy face
 *      translates every call into a stateless modern request.
 * The legs alternate over `--rounds` rounds (pair order flipped every other round), so that noise on a shared
 * machine hits both sides of a pair alike; the summary gives per-leg medians over the rounds and the median of
 * the per-round ratios gateway/direct (throughput, and p50 latency).
 * Before the rounds, one unreported pass runs every leg (up to 1000 calls each): a cold process otherwise
 * charges JIT warm-up to whichever leg runs first.
 * `--code DIR` loads the gateway and fixtures from another checkout (e.g. an older commit in its own worktree),
 * so that code before and after a change is measured by the same harness; `--pairs` picks the pairs
 * (`modern-legacy` = a/b, `legacy-modern` = c/d; the latter needs test/fixtures/modern-server.ts in DIR).
 * Bounded: a fixed number of calls per leg and round, at a fixed concurrency. Not part of `npm test`.
 *
 *   npx tsx bench/overhead.ts [--calls 2000] [--concurrency 16] [--rounds 3] [--pairs modern-legacy,legacy-modern] [--code DIR]
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Gateway } from '../src/app.js';
import type * as AppModule from '../src/app.js';
import type * as ConfigModule from '../src/config/index.js';
import type * as LegacyFixtureModule from '../test/fixtures/legacy-server.js';
import type * as ModernFixtureModule from '../test/fixtures/modern-server.js';

const { values } = parseArgs({
  options: {
    calls: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '16' },
    rounds: { type: 'string', default: '3' },
    pairs: { type: 'string', default: 'modern-legacy,legacy-modern' },
    code: { type: 'string', default: resolve(fileURLToPath(import.meta.url), '../..') },
  },
});
const CALLS = Math.min(Number(values.calls), 100_000);
const CONCURRENCY = Math.min(Number(values.concurrency), 256);
const ROUNDS = Math.max(1, Math.min(Number(values.rounds), 10));
const WARMUP_CALLS = Math.min(CALLS, 1000);
const PAIRS = new Set(values.pairs.split(','));
const CODE = resolve(values.code);
const load = <T>(rel: string): Promise<T> => import(pathToFileURL(resolve(CODE, rel)).href) as Promise<T>;
const { buildGateway } = await load<typeof AppModule>('src/app.ts');
const { parseConfig } = await load<typeof ConfigModule>('src/config/index.ts');
const { startLegacyFixture } = await load<typeof LegacyFixtureModule>('test/fixtures/legacy-server.ts');

/** What one leg measured in one round. */
interface LegResult {
  callsPerSecond: number;
  p50: number;
  p95: number;
  p99: number;
}

async function run(label: string, one: () => Promise<void>, calls = CALLS, quiet = false): Promise<LegResult> {
  for (let i = 0; i < 50; i++) await one(); // warm-up
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < calls) {
        next++;
        const t0 = performance.now();
        await one();
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  const result = { callsPerSecond: calls / seconds, p50: q(0.5), p95: q(0.95), p99: q(0.99) };
  if (!quiet) console.log(
    `${label.padEnd(44)} ${String(Math.round(result.callsPerSecond)).padStart(6)} calls/s   p50 ${result.p50.toFixed(2)} ms   p95 ${result.p95.toFixed(2)} ms   p99 ${result.p99.toFixed(2)} ms`,
  );
  return result;
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
};

const jsonHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** Opens one 2025-11-25 session on `url` (initialize + initialized) and returns a `greet` caller on it. */
async function legacySession(url: string): Promise<() => Promise<void>> {
  const init = await fetch(url, {
    method: 'POST',
    headers: jsonHeaders,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }),
  });
  const sid = init.headers.get('mcp-session-id');
  const body = await init.text();
  if (!sid || !body.includes('2025-11-25')) throw new Error(`initialize on ${url} failed: ${init.status} ${body}`);
  const headers = { ...jsonHeaders, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  let id = 1;
  return async () => {
    const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'greet', arguments: { name: 'b' } } }) });
    if (!(await r.text()).includes('Hello, b!')) throw new Error('unexpected answer');
  };
}

/** A stateless 2026-07-28 `greet` caller on `url`. */
function modernCaller(url: string): () => Promise<void> {
  const headers = { ...jsonHeaders, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'greet' };
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
  let id = 1;
  return async () => {
    const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'tools/call', params: { name: 'greet', arguments: { name: 'b' }, _meta: meta } }) });
    if (!(await r.text()).includes('Hello, b!')) throw new Error('unexpected answer');
  };
}

async function startGateway(upstreamUrl: string): Promise<{ gateway: Gateway; url: string }> {
  const gateway = await buildGateway(parseConfig({ server: { port: 0 }, upstreams: [{ name: 'fixture', url: upstreamUrl }] }));
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = gateway.app.server.address();
  return { gateway, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp` };
}

/** A direct leg and the gateway leg it is compared with. */
interface Pair {
  name: string;
  direct: { label: string; one: () => Promise<void>; results: LegResult[] };
  gateway: { label: string; one: () => Promise<void>; results: LegResult[] };
}

async function main(): Promise<void> {
  console.log(`code: ${CODE}`);
  const pairs: Pair[] = [];
  const closers: Array<() => Promise<void>> = [];
  let modernGreets: (() => number) | undefined;
  if (PAIRS.has('modern-legacy')) {
    const legacyFixture = await startLegacyFixture();
    const overLegacy = await startGateway(legacyFixture.url);
    closers.push(() => overLegacy.gateway.close(), () => legacyFixture.close());
    pairs.push({
      name: 'modern client → legacy upstream',
      direct: { label: '(a) direct, 2025-11-25 session', one: await legacySession(legacyFixture.url), results: [] },
      gateway: { label: '(b) gateway, 2026-07-28 → 2025-11-25', one: modernCaller(overLegacy.url), results: [] },
    });
  }
  if (PAIRS.has('legacy-modern')) {
    if (!existsSync(resolve(CODE, 'test/fixtures/modern-server.ts'))) throw new Error(`${CODE} has no modern fixture: use --pairs modern-legacy`);
    const { startModernFixture } = await load<typeof ModernFixtureModule>('test/fixtures/modern-server.ts');
    const dualFixture = await startModernFixture({ mode: 'dual' });
    const modernFixture = await startModernFixture({ mode: 'modern' });
    const overModern = await startGateway(modernFixture.url);
    closers.push(() => overModern.gateway.close(), () => modernFixture.close(), () => dualFixture.close());
    modernGreets = () => modernFixture.stats().toolCalls['greet'] ?? 0;
    pairs.push({
      name: 'legacy client → modern-only upstream',
      direct: { label: '(c) direct, 2025-11-25 session on dual', one: await legacySession(dualFixture.url), results: [] },
      gateway: { label: '(d) gateway, 2025-11-25 → 2026-07-28 only', one: await legacySession(overModern.url), results: [] },
    });
  }
  if (pairs.length === 0) throw new Error('--pairs names none of modern-legacy, legacy-modern');

  for (const pair of pairs) for (const leg of [pair.direct, pair.gateway]) await run(leg.label, leg.one, WARMUP_CALLS, true);

  for (let round = 1; round <= ROUNDS; round++) {
    console.log(`round ${round}/${ROUNDS}  (${CALLS} calls per leg, concurrency ${CONCURRENCY})`);
    for (const pair of pairs) {
      const legs = round % 2 ? [pair.direct, pair.gateway] : [pair.gateway, pair.direct];
      for (const leg of legs) leg.results.push(await run(leg.label, leg.one));
    }
  }

  // The gateway legs must really have gone where they claim: (d) reaches the modern-only fixture stateless.
  const reachedModern = modernGreets?.() ?? Infinity;
  if (reachedModern < ROUNDS * CALLS) throw new Error(`only ${reachedModern} greet calls reached the modern-only fixture`);

  console.log(`\nmedians over ${ROUNDS} round(s)`);
  for (const pair of pairs) {
    for (const leg of [pair.direct, pair.gateway]) {
      const r = leg.results;
      console.log(
        `${leg.label.padEnd(44)} ${String(Math.round(median(r.map((x) => x.callsPerSecond)))).padStart(6)} calls/s   p50 ${median(r.map((x) => x.p50)).toFixed(2)} ms   p95 ${median(r.map((x) => x.p95)).toFixed(2)} ms`,
      );
    }
    const tput = pair.gateway.results.map((g, i) => g.callsPerSecond / (pair.direct.results[i]?.callsPerSecond ?? NaN));
    const p50 = pair.gateway.results.map((g, i) => g.p50 / (pair.direct.results[i]?.p50 ?? NaN));
    console.log(
      `  ratio gateway/direct, ${pair.name}: throughput ${median(tput).toFixed(2)}, p50 ${median(p50).toFixed(2)}   (per round: ${tput.map((x) => x.toFixed(2)).join(' ')})`,
    );
  }

  for (const close of closers) await close();
}

main().then(() => process.exit(0), (e) => {
  console.error(e);
  process.exit(1);
});
