/**
 * Proxied tasks served by any instance sharing the store: two TaskRuntimes (an in-process stand-in for two gateway
 * instances) share ONE MemoryTaskStore, each with its own InstanceBus, sealer (same secret) and upstream client (its own
 * session pool), in front of real fixture upstreams: the legacy fixture with native 2025-11-25 tasks and the modern
 * fixture with the tasks extension. A task created on A is polled (status and result), answered and cancelled
 * through B; once A closes, B's lease reaper takes it over and B follows it to its end. The memory store stands in for
 * a shared backend (one object reaches both runtimes): each runtime sees it through a view that says `scope: shared`.
 *
 * The same suite runs on a real redis-server (each instance its own RedisTaskStore on one key prefix) and on a real
 * PostgreSQL (each instance its own PostgresTaskStore on one schema, a fresh schema per pair), each skipped with the
 * reason printed when its server binary (or REDIS_URL / PG_URL) is not there.
 *
 * B's polls are a client's polls at the task's poll interval (bounded); record changes are awaited with `changed`
 * (every instance hears every change over the store's task topic).
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { MemoryTaskStore, PostgresTaskStore, RedisTaskStore, StoreUnavailableError, type TaskStore } from '../../src/store/index.js';
import { InstanceBus, mintInstanceId, MrtrBridge, Sealer, TaskRuntime, type CallerContext, type UpstreamRoute } from '../../src/tasks/index.js';
import { isTerminal, type TaskId, type TaskRecord } from '../../src/translate/index.js';
import { LegacyUpstreamClient, ModernUpstreamClient, type UpstreamClient } from '../../src/upstream/index.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { filePostgres, schemaFor } from '../helpers/file-postgres.js';
import { postgresAvailable } from '../helpers/postgres-server.js';
import { redisAvailable, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { routeOver } from '../helpers/runtime-harness.js';

const CLIENT_INFO = { name: 'gateway-under-test', version: '0.0.1' };
const caller: CallerContext = {
  principal: 'alice',
  authorization: 'Bearer alice',
  capabilities: { elicitation: {} },
  clientInfo: { name: 'ide', version: '9' },
};
/** How long a bounded poll or wait may take before the test fails. */
const BOUND_MS = 10_000;
/** Lease time: a lapsed follower's task is claimed by a reaper round (every third of it) soon after. */
const LEASE_MS = 3_000;

/** The memory store as a shared backend: scope `shared`, every call on the one object. */
function sharedView(store: MemoryTaskStore): TaskStore {
  return new Proxy(store, {
    get(target, prop) {
      if (prop === 'scope') return 'shared';
      const v: unknown = Reflect.get(target, prop, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as TaskStore;
}

interface Instance {
  id: string;
  runtime: TaskRuntime;
  route: UpstreamRoute;
  bus: InstanceBus;
  /** Closes runtime, bus and upstream client (as a gateway's graceful close does); idempotent. */
  close(): Promise<void>;
}

interface Fixture {
  url: string;
  releaseGate(gate: string): number;
  close(): Promise<void>;
}

type Era = 'legacy' | 'modern';

async function startUpstream(era: Era): Promise<Fixture> {
  return era === 'legacy'
    ? startLegacyFixture({ tasks: 'native', taskPollIntervalMs: 100, taskJobDelayMs: 200 })
    : startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 100, taskJobDelayMs: 200 });
}

async function instance(
  t: { teardown(fn: () => unknown): void },
  era: Era,
  url: string,
  store: TaskStore,
  secret: Uint8Array,
  started = true,
): Promise<Instance> {
  const bus = new InstanceBus({ store, instanceId: mintInstanceId(), heartbeatMs: 5_000 });
  await bus.start();
  const upstream: UpstreamClient =
    era === 'legacy'
      ? new LegacyUpstreamClient('up', { url, staticHeaders: {}, timeoutMs: 30_000, max: 10, idleMs: 60_000, clientInfo: CLIENT_INFO })
      : new ModernUpstreamClient({ name: 'up', url, timeoutMs: 30_000, clientInfo: CLIENT_INFO });
  const bridge = new MrtrBridge({ stateKey: secret, holdMs: 60_000, maxHeld: 10, gatherMs: 5 });
  const runtime = new TaskRuntime({
    store,
    bus,
    sealer: new Sealer(secret),
    leaseMs: LEASE_MS,
    bridge,
    defaultTtlMs: 60_000,
    maxTtlMs: 3_600_000,
    defaultPollIntervalMs: 100,
    maxActivePerPrincipal: 10,
    toolSupportTtlMs: 600_000,
  });
  let closed: Promise<void> | undefined;
  const close = () =>
    (closed ??= (async () => {
      bridge.close();
      await runtime.close();
      await bus.close();
      await upstream.close();
    })());
  t.teardown(close);
  const route = routeOver(upstream, {}, { url, timeoutMs: 30_000 });
  // As app.ts does: every configured route is known for takeovers before any request comes.
  runtime.register(route);
  // Started: it hears other instances' changes, renews its leases and reaps lapsed ones (not started: the test does).
  if (started) await runtime.start();
  return { id: bus.instanceId, runtime, bus, route, close };
}

async function create(a: Instance, tool: string, args: Record<string, unknown>): Promise<TaskRecord> {
  const r = await a.runtime.createTask(a.route, { name: tool, arguments: args }, caller, { ttlMs: 60_000 }, new AbortController().signal);
  if (!('record' in r)) throw new Error(`no task: ${JSON.stringify(r.error)}`);
  return r.record;
}

/** Polls the task through `b` (as a client polls, at the task's interval) until `pred` holds; bounded. */
async function pollUntil(b: Instance, taskId: string, pred: (r: TaskRecord) => boolean): Promise<TaskRecord> {
  const until = Date.now() + BOUND_MS;
  for (;;) {
    const r = await b.runtime.task(b.route, taskId, caller);
    if (pred(r)) return r;
    if (Date.now() > until) throw new Error(`task never got there; last: ${JSON.stringify({ status: r.status, inputRequests: r.inputRequests })}`);
    await new Promise((res) => setTimeout(res, r.pollIntervalMs ?? 100));
  }
}

/** Awaits the changes `x` itself applies to the task until `pred` holds; bounded. */
async function changedUntil(x: Instance, taskId: string, pred: (r: TaskRecord) => boolean): Promise<TaskRecord> {
  const signal = AbortSignal.timeout(BOUND_MS);
  let version = -1;
  for (;;) {
    const r = await x.runtime.changed(taskId, version, signal);
    if (!r) throw new Error('task expired');
    if (pred(r)) return r;
    if (signal.aborted) throw new Error(`task never got there; last: ${r.status}`);
    version = r.version;
    if (isTerminal(r.status)) throw new Error(`task ended ${r.status}`);
  }
}

/**
 * The task's lease owner once it is `want`, or the last one read when it never gets there; bounded. A follower drops
 * its lease after the task's last write without waiting for that (ProxiedTasks.drop): on Postgres, another store
 * object can still read the lease for a few milliseconds after the terminal record.
 */
async function leaseOwnerOnce(store: TaskStore, taskId: string, want: string | undefined): Promise<string | undefined> {
  const until = Date.now() + BOUND_MS;
  for (;;) {
    const owner = await store.leaseOwner(taskId as TaskId);
    if (owner === want || Date.now() > until) return owner;
    await new Promise((res) => setTimeout(res, 10));
  }
}

/** Where the instances' shared state lives: one store object per instance on one backend, and one to inspect it. */
interface Backend {
  name: string;
  skip?: string;
  open(t: { teardown(fn: () => unknown): void }): Promise<{ a: TaskStore; b: TaskStore; store: TaskStore }>;
}

const memoryBackend: Backend = {
  name: 'memory',
  async open(t) {
    const memory = new MemoryTaskStore({ maxTasks: 100 });
    t.teardown(() => memory.close());
    const store = sharedView(memory);
    return { a: store, b: store, store };
  },
};

let redis: Promise<RedisServer | undefined> | undefined;
const redisSkip = redisAvailable();
const redisBackend: Backend = {
  name: 'redis',
  ...(redisSkip ? { skip: redisSkip } : {}),
  async open(t) {
    redis ??= process.env['REDIS_URL'] ? Promise.resolve(undefined) : startRedis();
    const own = await redis;
    const url = process.env['REDIS_URL'] ?? own!.url;
    const keyPrefix = `proxied-across:${randomBytes(6).toString('hex')}:`;
    const connected = async () => {
      const s = new RedisTaskStore({ url, keyPrefix, maxTtlMs: 3_600_000, commandTimeoutMs: 2_000, connectTimeoutMs: 2_000 });
      await s.connect();
      t.teardown(() => s.close());
      return s;
    };
    return { a: await connected(), b: await connected(), store: await connected() };
  },
};
t.teardown(async () => (await redis)?.stop());
if (redisSkip) t.comment(`Redis runs skipped: ${redisSkip}`);

const postgres = filePostgres();
const postgresSkip = postgresAvailable();
const postgresBackend: Backend = {
  name: 'postgres',
  ...(postgresSkip ? { skip: postgresSkip } : {}),
  async open(t) {
    const url = await postgres.url();
    const schema = schemaFor('proxied_across');
    const connected = async () => {
      const s = new PostgresTaskStore({ url, schema, maxTtlMs: 3_600_000, commandTimeoutMs: 2_000, connectTimeoutMs: 2_000, poolSize: 4, migrate: 'auto' });
      t.teardown(() => s.close());
      await s.connect();
      return s;
    };
    return { a: await connected(), b: await connected(), store: await connected() };
  },
};
t.teardown(() => postgres.dispose());
if (postgresSkip) t.comment(`Postgres runs skipped: ${postgresSkip}`);

const CELLS = [memoryBackend, redisBackend, postgresBackend].flatMap((backend) => (['legacy', 'modern'] as const).map((era) => [backend, era] as const));

for (const [backend, era] of CELLS) {
  t.test(`${backend.name} store, ${era} upstream`, { skip: backend.skip ?? false }, async (t) => {
    const fx = await startUpstream(era);
    t.teardown(() => fx.close());

    async function pair(t: { teardown(fn: () => unknown): void }, opts: { startB?: boolean } = {}) {
      const { a, b, store } = await backend.open(t);
      const secret = randomBytes(32);
      return { store, a: await instance(t, era, fx.url, a, secret), b: await instance(t, era, fx.url, b, secret, opts.startB ?? true) };
    }

    t.test('created on A: the record says where the upstream task lives and who follows it; B polls status and result', async (t) => {
      const { store, a, b } = await pair(t);
      const created = await create(a, 'gated_job', { gate: `${era}-poll` });
      t.equal(created.kind, 'proxied');
      t.equal(created.owner, a.id, 'A follows it');
      t.equal(await store.leaseOwner(created.taskId), a.id, 'and holds its lease');
      t.type(created.sealed, 'string', 'the caller is sealed for a takeover');
      t.notOk(created.sealed?.includes('alice'), 'sealed: the credentials are not readable in the store');
      if (era === 'legacy') t.type(created.upstreamSession, 'string', 'a legacy task names its upstream session');
      else t.equal(created.upstreamSession, undefined);
      t.same(a.runtime.proxied.liveIds(), [created.taskId]);
      t.same(b.runtime.proxied.liveIds(), [], 'B does not follow it');

      t.match(await b.runtime.task(b.route, created.taskId, caller), { status: 'working' });
      if (era === 'legacy') t.equal(b.route.upstream.knownIdentity, undefined, 'B joined the session without an initialize of its own');
      fx.releaseGate(`${era}-poll`);
      const done = await pollUntil(b, created.taskId, (r) => isTerminal(r.status));
      t.match(done, { status: 'completed', result: { content: [{ text: `released ${era}-poll` }] } });
    });

    t.test('input asked in the task on A is answered through B', async (t) => {
      const { store, a, b } = await pair(t);
      const created = await create(a, 'confirm_delete', { filename: `${era}.txt` });
      const asked = await pollUntil(b, created.taskId, (r) => r.status === 'input_required');
      t.same(Object.keys(asked.inputRequests ?? {}), ['confirm']);
      const sent = await b.runtime.answer(b.route, created.taskId, caller, { confirm: { action: 'accept', content: { confirm: true } } });
      t.same(sent, ['confirm'], era === 'legacy' ? 'sent by A, on whose tasks/result stream it was asked' : 'sent by B with tasks/update');
      const after = await store.get(created.taskId as TaskId);
      t.notOk(after?.inputRequests?.confirm, 'the record dropped the key before the answer returned');
      const done = await pollUntil(b, created.taskId, (r) => isTerminal(r.status));
      t.match(done, { status: 'completed', result: { content: [{ text: `Deleted ${era}.txt` }] } });
    });

    t.test('cancelled through B: cancelled upstream, the record cancelled for good, A stops following', async (t) => {
      const { a, b } = await pair(t);
      const created = await create(a, 'gated_job', { gate: `${era}-cancel` });
      const after = await b.runtime.cancelTask(b.route, created.taskId, caller);
      t.equal(after.status, 'cancelled');
      if (era === 'legacy') {
        await waitForStats(fx as Awaited<ReturnType<typeof startLegacyFixture>>, (s) =>
          s.cancellations.some((c) => c.tool === 'gated_job' && c.via === 'tasks/cancel'),
        );
      }
      await t.rejects(b.runtime.cancelTask(b.route, created.taskId, caller), { name: 'TaskAlreadyTerminalError' });
      // A's follower sees the end upstream and lets the task go.
      const until = Date.now() + BOUND_MS;
      while (a.runtime.proxied.liveIds().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      t.same(a.runtime.proxied.liveIds(), []);
    });

    t.test('A closes: its lease is handed over, B reaps it, takes the task over and follows it to its end', async (t) => {
      const { store, a, b } = await pair(t);
      const created = await create(a, 'gated_job', { gate: `${era}-takeover` });
      await a.close();
      // B's reaper claims the handed-over lease and takes the task over (its route found by name and era).
      await changedUntil(b, created.taskId, (r) => r.owner === b.id);
      t.same(b.runtime.proxied.liveIds(), [created.taskId], 'B follows it now');
      t.equal(await store.leaseOwner(created.taskId as TaskId), b.id, 'and holds its lease');
      fx.releaseGate(`${era}-takeover`);
      const done = await changedUntil(b, created.taskId, (r) => isTerminal(r.status));
      t.match(done, { status: 'completed', result: { content: [{ text: `released ${era}-takeover` }] } });
      t.same(b.runtime.proxied.liveIds(), [], 'ended: no longer followed');
      t.equal(await leaseOwnerOnce(store, created.taskId, undefined), undefined, 'and its lease dropped');
    });

    t.test('a takeover after A closed with input outstanding', async (t) => {
      // B's reaper is not started: the test claims the lease and calls takeOver as the reaper does.
      const { store, a, b } = await pair(t, { startB: false });
      const created = await create(a, 'confirm_delete', { filename: `${era}-late.txt` });
      await pollUntil(a, created.taskId, (r) => r.status === 'input_required');
      await a.close();
      if (era === 'legacy') {
        // Before the takeover, nobody holds the stream the question came on: a clear, transient refusal.
        await t.rejects(b.runtime.answer(b.route, created.taskId, caller, { confirm: { action: 'accept', content: { confirm: false } } }), {
          name: 'UpstreamBusyError',
          message: /following this task is gone/,
        });
      }
      t.same(await store.claimExpiredLeases(b.id, LEASE_MS, 10), [{ taskId: created.taskId, previousOwner: a.id }]);
      const record = await store.get(created.taskId as TaskId);
      t.ok(record && (await b.runtime.proxied.takeOver(record)));
      if (era === 'modern') {
        // A modern task's questions are in its tasks/get: nothing was lost with A.
        const asked = await pollUntil(b, created.taskId, (r) => r.status === 'input_required');
        t.same(Object.keys(asked.inputRequests ?? {}), ['confirm']);
        t.same(await b.runtime.answer(b.route, created.taskId, caller, { confirm: { action: 'accept', content: { confirm: false } } }), ['confirm']);
        const done = await changedUntil(b, created.taskId, (r) => isTerminal(r.status));
        t.match(done, { status: 'completed', result: { content: [{ text: `Kept ${era}-late.txt` }] } });
        return;
      }
      // The SDK 1.32.2 server sent its question on A's tasks/result only (a queued request is delivered once): the
      // record says the input was lost with A instead of showing a question nobody can answer any more.
      const said = await changedUntil(b, created.taskId, (r) => r.inputRequests === undefined);
      t.match(said.statusMessage, /lost with the instance that followed it/);
      t.equal(said.status, 'working');
      t.equal((await b.runtime.cancelTask(b.route, created.taskId, caller)).status, 'cancelled');
    });

    t.test('a record sealed with another secret cannot be taken over: the task fails with a clear error', async (t) => {
      const { store, a, b } = await pair(t);
      const created = await create(a, 'gated_job', { gate: `${era}-foreign` });
      const foreign = new Sealer(randomBytes(32)).seal('proxied-task', { caller: { capabilities: {} }, era });
      await store.update(created.taskId as TaskId, (r) => ({ ...r, sealed: foreign }));
      await a.close();
      const failed = await changedUntil(b, created.taskId, (r) => isTerminal(r.status));
      t.match(failed, { status: 'failed', error: { message: /cannot reach its upstream task/ } });
      t.same(b.runtime.proxied.liveIds(), []);
      fx.releaseGate(`${era}-foreign`);
    });

    t.test('a follower that stops renewing loses the task to the instance that claimed its lease', async (t) => {
      const { store, a, b } = await pair(t, { startB: false });
      const created = await create(a, 'gated_job', { gate: `${era}-stolen` });
      // B claims the lease as if A had let it lapse (a frozen A); A's next renewal finds it gone and stops following.
      // (A renewal of A's may come between the lapse and the claim: then it lapses again.)
      let claimed: unknown[] = [];
      for (let i = 0; i < 5 && claimed.length === 0; i++) {
        await store.releaseLease(created.taskId as TaskId, a.id, 'handover');
        claimed = await store.claimExpiredLeases(b.id, LEASE_MS, 10);
      }
      t.same(claimed, [{ taskId: created.taskId, previousOwner: a.id }]);
      const record = await store.get(created.taskId as TaskId);
      t.ok(record && (await b.runtime.proxied.takeOver(record)));
      const until = Date.now() + BOUND_MS;
      while (a.runtime.proxied.liveIds().length > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      t.same(a.runtime.proxied.liveIds(), [], 'A let it go');
      t.same(b.runtime.proxied.liveIds(), [created.taskId]);
      fx.releaseGate(`${era}-stolen`);
      t.match(await changedUntil(b, created.taskId, (r) => isTerminal(r.status)), { status: 'completed' });
    });
  });
}

t.test(
  'a store that cannot be written while the follower applies an outcome (FAKE outage: a real Redis outage is covered by the multi-instance test)',
  async (t) => {
    const fx = await startUpstream('legacy');
    t.teardown(() => fx.close());
    const memory = new MemoryTaskStore({ maxTasks: 100 });
    t.teardown(() => memory.close());
    let down = false;
    let refused = 0;
    let onRefused: (() => void) | undefined;
    const shared = sharedView(memory);
    // Record writes fail while `down`, as a store whose backend is unreachable does (StoreUnavailableError).
    const flaky = new Proxy(shared, {
      get(target, prop) {
        const v: unknown = Reflect.get(target, prop);
        if (prop !== 'update' || typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          if (!down) return (v as (...a: unknown[]) => unknown)(...args);
          refused++;
          onRefused?.();
          return Promise.reject(new StoreUnavailableError('FAKE outage'));
        };
      },
    }) as TaskStore;
    const a = await instance(t, 'legacy', fx.url, flaky, randomBytes(32));
    const created = await create(a, 'gated_job', { gate: 'outage' });
    down = true;
    const firstRefusal = new Promise<void>((resolve) => (onRefused = resolve));
    fx.releaseGate('outage');
    await firstRefusal;
    t.ok(refused >= 1, 'the follower tried to write the outcome while the store was down (and the process lives on)');
    t.same(a.runtime.proxied.liveIds(), [created.taskId], 'still followed: the outcome is not lost');
    down = false;
    const done = await changedUntil(a, created.taskId, (r) => isTerminal(r.status));
    t.match(done, { status: 'completed', result: { content: [{ text: 'released outage' }] } });
    t.same(a.runtime.proxied.liveIds(), []);
  },
);
