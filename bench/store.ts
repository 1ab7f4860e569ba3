/**
 * The task store's cost, memory vs Redis, side by side in one run: a gateway in front of the legacy fixture with
 * `greet` wrapped into a task (`task: always`), once on the memory store and once on a Redis store (a redis-server
 * this script starts on a free loopback port). Measured per store: task-creation latency (tools/call → the
 * CreateTaskResult, which waits for the durable create), then `tasks/get` throughput over the finished tasks at a
 * fixed concurrency; and underneath, the store alone (`create` latency, `get` throughput). Prints a markdown table.
 * Bounded: fixed counts. Not part of `npm test`.
 *
 *   npx tsx bench/store.ts [--tasks 300] [--gets 5000] [--concurrency 32]
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
  },
});
const TASKS = Math.max(10, Math.min(Number(values.tasks), 10_000));
const GETS = Math.max(100, Math.min(Number(values.gets), 200_000));
const CONCURRENCY = Math.max(1, Math.min(Number(values.concurrency), 256));
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

interface Column {
  gatewayCreate?: Stats;
  gatewayGet?: Stats;
  storeCreate?: Stats;
  storeGet?: Stats;
  error?: string;
}

/** The gateway legs: create TASKS tasks (creation latency), let them finish, then hammer tasks/get. */
async function gatewayLegs(store: { kind: 'memory' } | { kind: 'redis'; url: string; keyPrefix: string }, upstreamUrl: string, col: Column): Promise<void> {
  let gateway: Gateway | undefined;
  try {
    gateway = await buildGateway(
      parseConfig({
        server: { port: 0 },
        store,
        secret: { value: SECRET },
        upstreams: [{ name: 'fixture', url: upstreamUrl, tools: { greet: { task: 'always', pollIntervalMs: 20 } } }],
      }),
    );
    await gateway.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = gateway.app.server.address();
    const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp`;
    for (let i = 0; i < 20; i++) await createTask(url, 'greet', { name: 'warm' }); // warm-up
    const ids: string[] = [];
    // Creation at a modest concurrency: the latency of one create, not of a queue.
    col.gatewayCreate = await measure(TASKS, 4, async () => {
      const created = await createTask(url, 'greet', { name: 'b' });
      ids.push(String(created.task?.taskId ?? created.taskId));
    });
    for (const id of ids) await pollToEnd(url, id);
    col.gatewayGet = await measure(GETS, CONCURRENCY, async (i) => {
      const r = await getTask(url, ids[i % ids.length]!);
      if (r.status !== 200 || r.body?.result?.status !== 'completed') throw new Error(`tasks/get: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    });
  } finally {
    await gateway?.close();
  }
}

/** The store alone: `create` latency and `get` throughput. */
async function storeLegs(store: TaskStore, col: Column): Promise<void> {
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
  col.storeCreate = await measure(TASKS, 4, async () => {
    const r = rec();
    await store.create(r, 600_000);
    ids.push(r.taskId);
  });
  col.storeGet = await measure(GETS, CONCURRENCY, async (i) => {
    if (!(await store.get(ids[i % ids.length]!))) throw new Error('store.get: missing record');
  });
}

async function main(): Promise<void> {
  const redis = await startRedis();
  const fixture = await startLegacyFixture();
  const columns: Record<'memory' | 'redis', Column> = { memory: {}, redis: {} };
  try {
    for (const kind of ['memory', 'redis'] as const) {
      const col = columns[kind];
      const keyPrefix = `mcpgw-bench-${randomUUID().slice(0, 8)}:`;
      try {
        await gatewayLegs(kind === 'memory' ? { kind } : { kind, url: redis.url, keyPrefix }, fixture.url, col);
        const store =
          kind === 'memory'
            ? new MemoryTaskStore({ maxTasks: 100_000 })
            : new RedisTaskStore({ url: redis.url, keyPrefix, maxTtlMs: 86_400_000, commandTimeoutMs: 2_000, connectTimeoutMs: 2_000 });
        if (store instanceof RedisTaskStore) await store.connect();
        try {
          await storeLegs(store, col);
        } finally {
          await store.close();
        }
      } catch (e) {
        col.error = e instanceof Error ? e.message : String(e);
      }
    }
  } finally {
    await fixture.close();
    await redis.stop();
  }

  const ms = (s: Stats | undefined, k: 'p50' | 'p99') => (s ? `${s[k].toFixed(2)} ms` : 'n/a');
  const rate = (s: Stats | undefined) => (s ? `${Math.round(s.perSecond)}/s` : 'n/a');
  const rows: Array<[string, (c: Column) => string]> = [
    [`gateway tasks/get throughput (concurrency ${CONCURRENCY})`, (c) => rate(c.gatewayGet)],
    ['gateway tasks/get p50', (c) => ms(c.gatewayGet, 'p50')],
    ['gateway tasks/get p99', (c) => ms(c.gatewayGet, 'p99')],
    ['gateway task creation p50 (concurrency 4)', (c) => ms(c.gatewayCreate, 'p50')],
    ['gateway task creation p99', (c) => ms(c.gatewayCreate, 'p99')],
    [`store.get throughput (concurrency ${CONCURRENCY})`, (c) => rate(c.storeGet)],
    ['store.create p50', (c) => ms(c.storeCreate, 'p50')],
    ['store.create p99', (c) => ms(c.storeCreate, 'p99')],
  ];
  console.log(`\n${TASKS} tasks created, ${GETS} gets per leg; node ${process.version}\n`);
  console.log('| | memory | redis |');
  console.log('|---|---:|---:|');
  for (const [label, cell] of rows) console.log(`| ${label} | ${cell(columns.memory)} | ${cell(columns.redis)} |`);
  for (const kind of ['memory', 'redis'] as const) if (columns[kind].error) console.log(`\n${kind}: ${columns[kind].error}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
