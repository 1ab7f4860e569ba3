/**
 * Two task runtimes sharing one task store, as two gateway instances would (docs/architecture.md §4): each with its own
 * instance bus, instance id and upstream client, in front of one real legacy fixture (sync tools: every task is
 * gateway-owned). A task created on A is read, answered and cancelled through B, and A's changes wake B's waits and
 * subscriptions; when A shuts down (leases handed over) or freezes (a killed or paused process: its leases lapse), B
 * takes the task over and fails it clearly, or runs the call exactly once more when its rule says `retryOnLoss`; a
 * run that lost its task writes nothing, and two concurrent finishes end in one outcome.
 *
 * The same suite runs three times: on one memory store object (it does reach both runtimes in one process: a stand-in
 * for a shared backend), on a real Redis (each instance its own RedisTaskStore connections, one key prefix) and on a
 * real PostgreSQL (each instance its own PostgresTaskStore pool, one schema per pair); each real backend is skipped,
 * with the reason printed, when its server binary (or REDIS_URL / PG_URL) is not there. Each runtime
 * sees its store through an `InstanceView` that says `scope: 'shared'` and can freeze that instance's store calls and
 * events (a FAKE pause: a frozen process is a failure a real store cannot produce on demand).
 */
import t, { type Test } from 'tap';
import { MemoryTaskStore, PostgresTaskStore, RedisTaskStore, type TaskStore } from '../../src/store/index.js';
import type { ExpiredLease, ReplaceResult, TaskListQuery } from '../../src/store/task-store.js';
import {
  InstanceBus,
  MrtrBridge,
  Sealer,
  TaskRuntime,
  mintInstanceId,
  type CallerContext,
  type TaskPolicy,
  type UpstreamRoute,
} from '../../src/tasks/index.js';
import { TaskAlreadyTerminalError } from '../../src/tasks/records/task-limits.js';
import { isTerminal, type JsonObject, type TaskId, type TaskRecord } from '../../src/translate/index.js';
import { LegacyUpstreamClient } from '../../src/upstream/index.js';
import { startLegacyFixture, type LegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { filePostgres, schemaFor } from '../helpers/file-postgres.js';
import { postgresAvailable } from '../helpers/postgres-server.js';
import { redisAvailable, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { routeOver } from '../helpers/runtime-harness.js';

/** Short enough that a lapsed lease is taken over within a test, long enough that a busy machine keeps its leases. */
const LEASE_MS = 1_000;
const WAIT_MS = 10_000;
const LOST = /gateway instance running this task was lost/;
const SECRET = new Uint8Array(32).fill(9);
const CALLER: CallerContext = { principal: 'p1', capabilities: { elicitation: {} } };

/**
 * One instance's view of the shared store: scope `shared`, and `freeze()` holds every store call and event delivery
 * of this instance until `thaw()` (the process is paused or killed; nothing it started reaches the store meanwhile).
 */
class InstanceView implements TaskStore {
  readonly scope = 'shared' as const;
  private gate: Promise<void> = Promise.resolve();
  private open: (() => void) | undefined;
  private readonly held = new Map<string, number>();

  constructor(private readonly s: TaskStore) {}

  freeze(): void {
    this.gate = new Promise((resolve) => (this.open = resolve));
  }

  thaw(): void {
    this.open?.();
    this.gate = Promise.resolve();
  }

  /** How many calls of `method` are in progress (held by a freeze, or running). */
  inProgress(method: string): number {
    return this.held.get(method) ?? 0;
  }

  private async via<T>(method: string, f: () => Promise<T>): Promise<T> {
    this.held.set(method, this.inProgress(method) + 1);
    try {
      await this.gate;
      return await f();
    } finally {
      this.held.set(method, this.inProgress(method) - 1);
    }
  }

  create(r: TaskRecord, ms: number, lease?: { owner: string; ttlMs: number }) {
    return this.via('create', () => this.s.create(r, ms, lease));
  }
  get(id: TaskId) {
    return this.via('get', () => this.s.get(id));
  }
  replace(next: TaskRecord, v: number): Promise<ReplaceResult> {
    return this.via('replace', () => this.s.replace(next, v));
  }
  update(id: TaskId, change: (c: TaskRecord) => TaskRecord | undefined) {
    return this.via('update', () => this.s.update(id, change));
  }
  list(q: TaskListQuery) {
    return this.via('list', () => this.s.list(q));
  }
  activeCount(p: string) {
    return this.via('activeCount', () => this.s.activeCount(p));
  }
  ensureRoom() {
    return this.via('ensureRoom', () => this.s.ensureRoom());
  }
  hit(k: string, ms: number) {
    return this.via('hit', () => this.s.hit(k, ms));
  }
  acquireLease(id: TaskId, o: string, ms: number) {
    return this.via('acquireLease', () => this.s.acquireLease(id, o, ms));
  }
  renewLeases(o: string, ids: readonly TaskId[], ms: number) {
    return this.via('renewLeases', () => this.s.renewLeases(o, ids, ms));
  }
  releaseLease(id: TaskId, o: string, mode: 'drop' | 'handover') {
    return this.via('releaseLease', () => this.s.releaseLease(id, o, mode));
  }
  claimExpiredLeases(o: string, ms: number, n: number): Promise<ExpiredLease[]> {
    return this.via('claim', () => this.s.claimExpiredLeases(o, ms, n));
  }
  leaseOwner(id: TaskId) {
    return this.via('leaseOwner', () => this.s.leaseOwner(id));
  }
  putValue(k: string, v: JsonObject, ms: number, o?: { ifAbsent?: boolean }) {
    return this.via('putValue', () => this.s.putValue(k, v, ms, o));
  }
  getValue(k: string) {
    return this.via('getValue', () => this.s.getValue(k));
  }
  touchValue(k: string, ms: number) {
    return this.via('touchValue', () => this.s.touchValue(k, ms));
  }
  deleteValue(k: string) {
    return this.via('deleteValue', () => this.s.deleteValue(k));
  }
  publish(topic: string, m: JsonObject) {
    return this.via('publish', () => this.s.publish(topic, m));
  }
  subscribe(topic: string, listener: (m: JsonObject) => void) {
    // A frozen instance hears nothing until it thaws (then everything, in order).
    return this.s.subscribe(topic, (m) => void this.gate.then(() => listener(m)));
  }
  ping(): Promise<void> {
    return this.s.ping();
  }
  /** The backing store is closed by its owner, once. */
  async close(): Promise<void> {}
}

/** One gateway instance: its runtime, bus, upstream client and route, over its view of the shared store. */
interface Instance {
  id: string;
  view: InstanceView;
  bus: InstanceBus;
  runtime: TaskRuntime;
  route: UpstreamRoute;
  close(): Promise<void>;
}

/** Where the shared state lives: every instance gets a store on the same backend. */
interface Backing {
  name: string;
  storeFor(): Promise<TaskStore>;
  close(): Promise<void>;
}

function memoryBacking(): Backing {
  const store = new MemoryTaskStore({ maxTasks: 1_000 });
  return { name: 'memory', storeFor: async () => store, close: () => store.close() };
}

/** Stores on one real Redis, under a key prefix of their own per pair of instances. */
function redisBacking(server: RedisServer, prefix: string): Backing {
  const stores: RedisTaskStore[] = [];
  return {
    name: 'redis',
    async storeFor() {
      const store = new RedisTaskStore({ url: server.url, keyPrefix: prefix, maxTtlMs: 600_000, commandTimeoutMs: 2_000, connectTimeoutMs: 2_000 });
      await store.connect();
      stores.push(store);
      return store;
    },
    async close() {
      await Promise.all(stores.map((s) => s.close()));
    },
  };
}

/** Stores on one real PostgreSQL, in a schema of their own per pair of instances. */
function postgresBacking(url: string, schema: string): Backing {
  const stores: PostgresTaskStore[] = [];
  return {
    name: 'postgres',
    async storeFor() {
      const store = new PostgresTaskStore({ url, schema, maxTtlMs: 600_000, commandTimeoutMs: 2_000, connectTimeoutMs: 2_000, poolSize: 4, migrate: 'auto' });
      stores.push(store);
      await store.connect();
      return store;
    },
    async close() {
      await Promise.all(stores.map((s) => s.close()));
    },
  };
}

async function startInstance(backing: Backing, fx: LegacyFixture, rules: Record<string, TaskPolicy>): Promise<Instance> {
  const id = mintInstanceId();
  const view = new InstanceView(await backing.storeFor());
  const bus = new InstanceBus({ store: view, instanceId: id, heartbeatMs: LEASE_MS, ackMs: 1_000 });
  await bus.start();
  const client = new LegacyUpstreamClient('up', {
    url: fx.url,
    staticHeaders: {},
    timeoutMs: 30_000,
    max: 10,
    idleMs: 60_000,
    clientInfo: { name: 'multi-runtime-test', version: '1' },
  });
  const route = routeOver(client, rules, { url: fx.url, timeoutMs: 30_000 });
  const bridge = new MrtrBridge({ stateKey: SECRET, holdMs: 60_000, maxHeld: 10, gatherMs: 5 });
  const runtime = new TaskRuntime({
    store: view,
    bus,
    sealer: new Sealer(SECRET),
    leaseMs: LEASE_MS,
    bridge,
    defaultTtlMs: 60_000,
    maxTtlMs: 600_000,
    defaultPollIntervalMs: 600_000,
    maxActivePerPrincipal: 50,
    toolSupportTtlMs: 600_000,
    routes: [route],
  });
  await runtime.start();
  let closed: Promise<void> | undefined;
  return {
    id,
    view,
    bus,
    runtime,
    route,
    close() {
      closed ??= (async () => {
        view.thaw();
        bridge.close();
        await runtime.close();
        await bus.close();
        await client.close();
      })();
      return closed;
    },
  };
}

/** A fixture, two instances A and B on one backing, closed at teardown. */
async function pair(t: Test, backingOf: () => Promise<Backing>, rules: Record<string, TaskPolicy>) {
  const fx = await startLegacyFixture({ tasks: 'sync' });
  const backing = await backingOf();
  const a = await startInstance(backing, fx, rules);
  const b = await startInstance(backing, fx, rules);
  t.teardown(async () => {
    await a.close();
    await b.close();
    await fx.close();
    await backing.close();
  });
  return { fx, a, b };
}

async function createOn(i: Instance, name: string, args: JsonObject): Promise<TaskRecord> {
  const r = await i.runtime.createTask(i.route, { name, arguments: args }, CALLER, {}, new AbortController().signal);
  if (!('record' in r)) throw new Error(`no task: ${JSON.stringify(r)}`);
  return r.record;
}

/** The record as `i` reads it once `pred` holds, waiting on `i`'s own `changed` (so only changes `i` hears wake it). */
async function until(i: Instance, taskId: string, pred: (r: TaskRecord) => boolean): Promise<TaskRecord> {
  const deadline = Date.now() + WAIT_MS;
  let r = await i.runtime.task(i.route, taskId, CALLER);
  while (!pred(r)) {
    if (Date.now() > deadline) throw new Error(`task ${taskId} never matched; last ${JSON.stringify(r)}`);
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(), Math.max(1, deadline - Date.now()));
    const next = await i.runtime.changed(taskId, r.version, ac.signal).finally(() => clearTimeout(timer));
    if (!next) throw new Error(`task ${taskId} expired`);
    r = next;
  }
  return r;
}

/** Resolves once `cond` holds (polled: what it watches sends no event). */
async function eventually(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`never: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const text = (r: TaskRecord | undefined) => ((r?.result?.content as Array<{ text?: string }> | undefined) ?? [])[0]?.text;

function suite(backingOf: () => Promise<Backing>, label: string): void {
  t.test(`${label}: a task created on A is read, answered and finished through B; B hears A's changes`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { confirm_delete: { task: 'always' } });
    const heardOnB: string[] = [];
    const stopWatch = b.runtime.watch(b.route, CALLER.principal, (r) => heardOnB.push(r.status));
    t.teardown(stopWatch);

    const created = await createOn(a, 'confirm_delete', { filename: 'a.txt' });
    t.equal(created.owner, a.id, 'the record names A as the instance running the call');
    t.equal(created.attempt, 1);
    t.type(created.sealed, 'string', 'the call is sealed into the record for another instance');

    const read = await b.runtime.task(b.route, created.taskId, CALLER);
    t.equal(read.taskId, created.taskId, 'B reads the task A created');
    const asking = await until(b, created.taskId, (r) => r.status === 'input_required');
    t.ok(heardOnB.includes('input_required'), "B's watch heard A's change");
    const key = Object.keys(asking.inputRequests ?? {})[0];
    t.ok(key, 'the question is on the record');

    const answered = await b.runtime.answer(b.route, created.taskId, CALLER, { [key!]: { action: 'accept', content: { confirm: true } } });
    t.same(answered, [key], 'B answered it (on A, where the call runs)');
    const after = await b.runtime.task(b.route, created.taskId, CALLER);
    t.not(after.status, 'input_required', 'the record dropped the question before the answer returned (read-your-writes)');

    const done = await until(b, created.taskId, (r) => isTerminal(r.status));
    t.equal(done.status, 'completed');
    t.equal(text(done), 'Deleted a.txt');
    t.equal(fx.stats().calls.confirm_delete, 1, 'the upstream was called once');
  });

  t.test(`${label}: A's completion wakes a blocking wait and a subscription on B`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { gated_job: { task: 'always' } });
    const created = await createOn(a, 'gated_job', { gate: 'wake' });
    await waitForStats(fx, (s) => s.gatesWaiting.wake === 1);
    const pushed: JsonObject[] = [];
    const sub = await b.runtime.subscribe(b.route, CALLER.principal, [created.taskId], (task) => pushed.push(task));
    t.teardown(sub.stop);
    t.same(sub.accepted, [created.taskId], 'B accepts a subscription to a task A runs');
    const current = await b.runtime.task(b.route, created.taskId, CALLER);
    const waiting = b.runtime.changed(created.taskId, current.version, AbortSignal.timeout(WAIT_MS));

    fx.releaseGate('wake');
    const woke = await waiting;
    t.equal(woke?.status, 'completed', "B's tasks/result wait woke on A's change");
    await eventually(() => pushed.some((p) => p.status === 'completed'), 'the subscription hears completed');
    t.pass("B's subscription heard A's change");
  });

  t.test(`${label}: a cancel through B stops the call on A`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { gated_job: { task: 'always' } });
    const created = await createOn(a, 'gated_job', { gate: 'cancel-me' });
    await waitForStats(fx, (s) => s.gatesWaiting['cancel-me'] === 1);
    const cancelled = await b.runtime.cancelTask(b.route, created.taskId, CALLER);
    t.equal(cancelled.status, 'cancelled', 'the record is cancelled when the cancel returns');
    const stats = await waitForStats(fx, (s) => s.cancellations.some((c) => c.tool === 'gated_job') && !s.running.gated_job);
    t.same(
      stats.cancellations.map((c) => c.via),
      ['notifications/cancelled'],
      "A's call was cancelled upstream",
    );
    t.equal((await a.runtime.task(a.route, created.taskId, CALLER)).status, 'cancelled', 'A reads it cancelled');
    await t.rejects(b.runtime.cancelTask(b.route, created.taskId, CALLER), TaskAlreadyTerminalError, 'a second cancel: already terminal');
  });

  t.test(`${label}: A is gone (no heartbeat) before its lease lapses: an answer through B answers nothing, a cancel applies`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { confirm_delete: { task: 'always' } });
    const created = await createOn(a, 'confirm_delete', { filename: 'gone.txt' });
    const asking = await until(b, created.taskId, (r) => r.status === 'input_required');
    const key = Object.keys(asking.inputRequests ?? {})[0]!;
    // A's bus goes (its heartbeat with it) while its runtime still holds the lease: to B, A is gone.
    await a.bus.close();
    t.same(await b.runtime.answer(b.route, created.taskId, CALLER, { [key]: { action: 'accept', content: { confirm: true } } }), [], 'nothing answered');
    t.equal((await b.runtime.task(b.route, created.taskId, CALLER)).status, 'input_required', 'the question stands');
    const cancelled = await b.runtime.cancelTask(b.route, created.taskId, CALLER);
    t.equal(cancelled.status, 'cancelled', 'the cancel is applied to the record by B');
    t.equal(fx.stats().calls.confirm_delete, 1);
  });

  t.test(`${label}: A shuts down: B takes the task over at once and fails it clearly`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { gated_job: { task: 'always' } });
    const created = await createOn(a, 'gated_job', { gate: 'handover' });
    await waitForStats(fx, (s) => s.gatesWaiting.handover === 1);
    await a.close();
    const done = await until(b, created.taskId, (r) => isTerminal(r.status));
    t.equal(done.status, 'failed');
    t.match(done.error?.message, LOST, 'the error says the instance was lost');
    t.equal(done.error?.code, -32603);
    await waitForStats(fx, (s) => !s.running.gated_job);
    t.equal(fx.stats().calls.gated_job, 1, 'the call was not run again (no retryOnLoss)');
  });

  t.test(`${label}: retryOnLoss: A shuts down, B runs the call exactly once more and completes the task`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { gated_job: { task: 'always', retryOnLoss: true } });
    const created = await createOn(a, 'gated_job', { gate: 'retry' });
    await waitForStats(fx, (s) => s.gatesWaiting.retry === 1);
    await a.close();
    const restarted = await until(b, created.taskId, (r) => r.attempt === 2);
    t.equal(restarted.owner, b.id, 'B runs it now');
    t.equal(restarted.status, 'working');
    await waitForStats(fx, (s) => s.calls.gated_job === 2 && s.gatesWaiting.retry === 1);
    fx.releaseGate('retry');
    const done = await until(b, created.taskId, (r) => isTerminal(r.status));
    t.equal(done.status, 'completed');
    t.equal(text(done), 'released retry');
    t.equal(fx.stats().calls.gated_job, 2, 'the upstream saw the call twice: once on A, once more on B');
  });

  t.test(`${label}: A freezes (killed): B takes the task over once the lease lapses; A, thawed, lets go`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { gated_job: { task: 'always' } });
    const created = await createOn(a, 'gated_job', { gate: 'frozen' });
    await waitForStats(fx, (s) => s.gatesWaiting.frozen === 1);
    a.view.freeze();
    const done = await until(b, created.taskId, (r) => isTerminal(r.status));
    t.equal(done.status, 'failed');
    t.match(done.error?.message, LOST);
    a.view.thaw();
    // A's next renewal finds the lease gone: its call stops, the record is left to B.
    await waitForStats(fx, (s) => s.cancellations.some((c) => c.tool === 'gated_job') && !s.running.gated_job);
    const after = await b.runtime.task(b.route, created.taskId, CALLER);
    t.equal(after.version, done.version, 'A changed nothing once it had lost the task');
  });

  t.test(`${label}: retryOnLoss after a freeze: the late outcome of the lost run writes nothing`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { gated_job: { task: 'always', retryOnLoss: true } });
    const created = await createOn(a, 'gated_job', { gate: 'stale' });
    await waitForStats(fx, (s) => s.gatesWaiting.stale === 1);
    a.view.freeze();
    const restarted = await until(b, created.taskId, (r) => r.attempt === 2);
    t.equal(restarted.owner, b.id);
    await waitForStats(fx, (s) => s.calls.gated_job === 2 && s.gatesWaiting.stale === 2);
    // Both runs get their answer; both want to finish the task. B is held too, so that A's write comes first.
    b.view.freeze();
    fx.releaseGate('stale');
    await eventually(() => a.view.inProgress('update') > 0 && b.view.inProgress('update') > 0, 'both runs try to finish');
    a.view.thaw();
    await eventually(() => a.view.inProgress('update') === 0, "A's write is done");
    const meanwhile = await a.runtime.task(a.route, created.taskId, CALLER);
    t.equal(meanwhile.status, 'working', "A's stale finish did not apply: the task is B's attempt");
    t.equal(meanwhile.version, restarted.version);
    b.view.thaw();
    const done = await until(b, created.taskId, (r) => isTerminal(r.status));
    t.equal(done.status, 'completed');
    t.equal(done.owner, b.id);
    t.equal(done.attempt, 2, "the outcome is B's run's");
    t.equal(fx.stats().calls.gated_job, 2, 'exactly once more');
  });

  t.test(`${label}: a completion on A and a cancel through B at once: one outcome, seen alike by both`, async (t) => {
    const { fx, a, b } = await pair(t, backingOf, { gated_job: { task: 'always' } });
    const terminal = { a: [] as TaskRecord[], b: [] as TaskRecord[] };
    const offA = a.runtime.watch(a.route, CALLER.principal, (r) => isTerminal(r.status) && terminal.a.push(r));
    const offB = b.runtime.watch(b.route, CALLER.principal, (r) => isTerminal(r.status) && terminal.b.push(r));
    t.teardown(() => (offA(), offB()));
    const created = await createOn(a, 'gated_job', { gate: 'race' });
    await waitForStats(fx, (s) => s.gatesWaiting.race === 1);
    fx.releaseGate('race');
    const cancel = await b.runtime.cancelTask(b.route, created.taskId, CALLER).catch((e: unknown) => e);
    const done = await until(b, created.taskId, (r) => isTerminal(r.status));
    t.ok(done.status === 'completed' || done.status === 'cancelled', `one outcome: ${done.status}`);
    if (cancel instanceof TaskAlreadyTerminalError) t.equal(done.status, 'completed', 'the cancel lost to the completion and said so');
    else t.equal((cancel as TaskRecord).status, done.status, 'the cancel returned the outcome that stands');
    await eventually(() => terminal.a.length > 0 && terminal.b.length > 0, 'both instances hear the outcome');
    t.equal(terminal.a.length, 1, 'A heard one terminal change');
    t.equal(terminal.b.length, 1, 'B heard one terminal change');
    t.equal(terminal.a[0]?.status, done.status);
    t.equal(terminal.b[0]?.version, done.version, 'the same record version on both');
  });
}

suite(async () => memoryBacking(), 'memory');

const noRedis = redisAvailable();
if (noRedis) {
  t.comment(`redis variant skipped: ${noRedis}`);
  t.test('redis: two runtimes sharing one Redis', { skip: noRedis }, () => {});
} else {
  let server: RedisServer | undefined;
  let pairs = 0;
  t.before(async () => {
    server = await startRedis();
  });
  t.teardown(() => server?.stop());
  suite(async () => redisBacking(server!, `mrt${++pairs}:`), 'redis');
}

const noPostgres = postgresAvailable();
if (noPostgres) {
  t.comment(`postgres variant skipped: ${noPostgres}`);
  t.test('postgres: two runtimes sharing one PostgreSQL', { skip: noPostgres }, () => {});
} else {
  // Started by the first pair that needs it, disposed of (data dir included) when the file ends.
  const postgres = filePostgres();
  t.teardown(() => postgres.dispose());
  suite(async () => postgresBacking(await postgres.url(), schemaFor('mrt')), 'postgres');
}

t.test('one instance on the memory store: a task still running at shutdown ends failed, saying so', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'sync' });
  const store = new MemoryTaskStore({ maxTasks: 100 });
  const client = new LegacyUpstreamClient('up', {
    url: fx.url,
    staticHeaders: {},
    timeoutMs: 30_000,
    max: 10,
    idleMs: 60_000,
    clientInfo: { name: 'multi-runtime-test', version: '1' },
  });
  const bridge = new MrtrBridge({ stateKey: SECRET, holdMs: 60_000, maxHeld: 10, gatherMs: 5 });
  const route = routeOver(client, { gated_job: { task: 'always' } }, { url: fx.url, timeoutMs: 30_000 });
  const runtime = new TaskRuntime({
    store,
    bridge,
    defaultTtlMs: 60_000,
    maxTtlMs: 600_000,
    defaultPollIntervalMs: 600_000,
    maxActivePerPrincipal: 5,
    toolSupportTtlMs: 600_000,
  });
  await runtime.start();
  t.teardown(async () => {
    bridge.close();
    await client.close();
    await fx.close();
    await store.close();
  });
  const r = await runtime.createTask(route, { name: 'gated_job', arguments: { gate: 'shutdown' } }, CALLER, {}, new AbortController().signal);
  if (!('record' in r)) throw new Error('no task');
  t.notOk(r.record.sealed, 'nothing is sealed for another instance with a one-instance store');
  await waitForStats(fx, (s) => s.gatesWaiting.shutdown === 1);
  await runtime.close();
  await runtime.close();
  const after = await store.get(r.record.taskId);
  t.equal(after?.status, 'failed');
  t.match(after?.error?.message, /shut down before the task finished/);
  await waitForStats(fx, (s) => s.cancellations.some((c) => c.tool === 'gated_job') && !s.running.gated_job);
  t.pass('the call was cancelled upstream');
});
