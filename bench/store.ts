/**
 * The task store's cost, memory vs Redis, side by side in one run: a gateway in front of the legacy fixture with
 * `greet` wrapped into a task (`task: always`), once on the memory store and once on a Redis store (a redis-server
 * this script starts on a free loopback port). Measured per store: task-creation latency (tools/call → the
 * CreateTaskResult, which waits for the durable create), then `tasks/get` throughput over the finished tasks at a
 * fixed concurrency; and underneath, the store alone (`create` latency, `get` throughput). The stores alternate
 * over `--rounds` rounds (order flipped every other round) after one unreported warm-up pass, so that JIT warm-up
 * and noise on a shared machine hit both alike; the markdown table gives medians over the rounds.
 * Bounded: fixed counts. Not part of `npm test`.
 *
 *   npx tsx bench/store.ts [--tasks 300] [--gets 5000] [--concurrency 32] [--rounds 3]
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { buildGateway, type Gateway } from '../src/app.js';
import { parseConfig } from '../src/config/index.js';
import { MemoryTaskStore, RedisTaskStore, type TaskStore } from '../src/store/index.js';
import type { TaskId, TaskRecord } from '../src/translate/index.js';
import { startLegacyFixture } from '../test/fixtures/legacy-server.js';
import { startRedis } from '../test/helpers/redis-server.js';
import { createTask, getTask, pollToEnd } from '../test/helpers/task-helpers.js';

const { values } = parseArgs({
  options: {
    tasks: { type: 'string', default: '300' },
    gets: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '32' },
    rounds: { type: 'string', default: '3' },
  },
});
const TASKS = Math.max(10, Math.min(Number(values.tasks), 10_000));
const GETS = Math.max(100, Math.min(Number(values.gets), 200_000));
const CONCURRENCY = Math.max(1, Math.min(Number(values.concurrency), 256));
const ROUNDS = Math.max(1, Math.min(Number(values.rounds), 10));
const SECRET = 'bench-shared-secret-at-least-32-characters';

interface Stats {
  perSecond: number;
  p50: number;
  p99: number;
}

/** Runs `one(i)` for i < n at `concurrency`, timing each call. */
async function measure(n: number, concurrency: number, one: (i: number) => Promise<void>): Promise<Stats> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const t0 = performance.now();
        await one(i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
  return { perSecond: n / seconds, p50: q(0.5), p99: q(0.99) };
}

type Kind = 'memory' | 'redis';
type Leg = 'gatewayCreate' | 'gatewayGet' | 'storeCreate' | 'storeGet';

/** A gateway on one store, listening on loopback, with `greet` wrapped into a task. */
async function startGateway(store: { kind: 'memory' } | { kind: 'redis'; url: string; keyPrefix: string }, upstreamUrl: string): Promise<{ gateway: Gateway; url: string }> {
  const gateway = await buildGateway(
    parseConfig({
      server: { port: 0 },
      store,
      secret: { value: SECRET },
      upstreams: [{ name: 'fixture', url: upstreamUrl, tools: { greet: { task: 'always', pollIntervalMs: 20 } } }],
    }),
  );
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = gateway.app.server.address();
  return { gateway, url: `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp` };
}

/** The gateway legs: create `tasks` tasks (creation latency), let them finish, then hammer tasks/get. */
async function gatewayLegs(url: string, tasks: number, gets: number): Promise<Pick<Record<Leg, Stats>, 'gatewayCreate' | 'gatewayGet'>> {
  const ids: string[] = [];
  // Creation at a modest concurrency: the latency of one create, not of a queue.
  const gatewayCreate = await measure(tasks, 4, async () => {
    const created = await createTask(url, 'greet', { name: 'b' });
    ids.push(String(created.task?.taskId ?? created.taskId));
  });
  for (const id of ids) await pollToEnd(url, id);
  const gatewayGet = await measure(gets, CONCURRENCY, async (i) => {
    const r = await getTask(url, ids[i % ids.length]!);
    if (r.status !== 200 || r.body?.result?.status !== 'completed') throw new Error(`tasks/get: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  });
  return { gatewayCreate, gatewayGet };
}

/** The store alone: `create` latency and `get` throughput. */
async function storeLegs(store: TaskStore, tasks: number, gets: number): Promise<Pick<Record<Leg, Stats>, 'storeCreate' | 'storeGet'>> {
  const rec = (): TaskRecord => ({
    taskId: `gw_${randomUUID()}` as TaskId,
    principal: 'bench',
    upstream: 'fixture',
    kind: 'owned',
    tool: 'greet',
    status: 'completed',
    createdAt: new Date().toISOString(),
    lastUpdatedAt: new Date().toISOString(),
    ttlMs: 600_000,
    version: 0,
    result: { resultType: 'complete', content: [{ type: 'text', text: 'Hello, b!' }] },
  });
  const ids: TaskId[] = [];
  const storeCreate = await measure(tasks, 4, async () => {
    const r = rec();
    await store.create(r, 600_000);
    ids.push(r.taskId);
  });
  const storeGet = await measure(gets, CONCURRENCY, async (i) => {
    if (!(await store.get(ids[i % ids.length]!))) throw new Error('store.get: missing record');
  });
  return { storeCreate, storeGet };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
};

async function main(): Promise<void> {
  const redis = await startRedis();
  const fixture = await startLegacyFixture();
  const keyPrefix = `mcpgw-bench-${randomUUID().slice(0, 8)}:`;
  const closers: Array<() => Promise<void>> = [() => fixture.close(), () => redis.stop()];
  const results: Record<Kind, Partial<Record<Leg, Stats[]>>> = { memory: {}, redis: {} };
  try {
    const gateways = {
      memory: await startGateway({ kind: 'memory' }, fixture.url),
      redis: await startGateway({ kind: 'redis', url: redis.url, keyPrefix }, fixture.url),
    };
    closers.unshift(() => gateways.memory.gateway.close(), () => gateways.redis.gateway.close());
    const stores = {
      memory: new MemoryTaskStore({ maxTasks: 100_000 }),
      redis: new RedisTaskStore({ url: redis.url, keyPrefix: `${keyPrefix}alone:`, maxTtlMs: 86_400_000, commandTimeoutMs: 2_000, connectTimeoutMs: 2_000 }),
    };
    await stores.redis.connect();
    closers.unshift(() => stores.memory.close(), () => stores.redis.close());

    // One unreported pass on each, so that JIT warm-up is not charged to whichever store runs first.
    for (const kind of ['memory', 'redis'] as const) {
      await gatewayLegs(gateways[kind].url, 50, 500);
      await storeLegs(stores[kind], 200, 2_000);
    }
    // Alternating order round by round: noise on a shared machine hits both stores alike; medians reported.
    for (let round = 1; round <= ROUNDS; round++) {
      console.log(`round ${round}/${ROUNDS}`);
      for (const kind of round % 2 ? (['memory', 'redis'] as const) : (['redis', 'memory'] as const)) {
        const got = { ...(await gatewayLegs(gateways[kind].url, TASKS, GETS)), ...(await storeLegs(stores[kind], TASKS, GETS)) };
        for (const [leg, stats] of Object.entries(got) as Array<[Leg, Stats]>) (results[kind][leg] ??= []).push(stats);
      }
    }
  } finally {
    for (const close of closers) await close();
  }

  const pick = (kind: Kind, leg: Leg, k: keyof Stats) => median((results[kind][leg] ?? []).map((s) => s[k]));
  const rate = (leg: Leg) => (kind: Kind) => `${Math.round(pick(kind, leg, 'perSecond'))}/s`;
  const ms = (leg: Leg, k: 'p50' | 'p99') => (kind: Kind) => `${pick(kind, leg, k).toFixed(2)} ms`;
  const rows: Array<[string, (kind: Kind) => string]> = [
    [`gateway tasks/get throughput (concurrency ${CONCURRENCY})`, rate('gatewayGet')],
    ['gateway tasks/get p50', ms('gatewayGet', 'p50')],
    ['gateway tasks/get p99', ms('gatewayGet', 'p99')],
    ['gateway task creation p50 (concurrency 4)', ms('gatewayCreate', 'p50')],
    ['gateway task creation p99', ms('gatewayCreate', 'p99')],
    [`store.get throughput (concurrency ${CONCURRENCY})`, rate('storeGet')],
    ['store.create p50 (concurrency 4)', ms('storeCreate', 'p50')],
    ['store.create p99', ms('storeCreate', 'p99')],
  ];
  console.log(`\nmedians over ${ROUNDS} round(s); ${TASKS} tasks created and ${GETS} gets per leg and round; node ${process.version}\n`);
  console.log('| | memory | redis |');
  console.log('|---|---:|---:|');
  for (const [label, cell] of rows) console.log(`| ${label} | ${cell('memory')} | ${cell('redis')} |`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
