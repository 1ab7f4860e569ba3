/**
 * The memory store: the TaskStore contract suite, then its own bounds (docs/architecture.md §5 "bounded by
 * construction"): a most-tasks bound that is always set, where a full store of live tasks refuses a new one
 * (StoreFullError → 503) and a finished task makes room; eviction never drops a live task.
 */
import { createHook } from 'node:async_hooks';
import t from 'tap';
import { MemoryTaskStore, type TaskStore } from '../../src/store/index.js';
import { StoreFullError } from '../../src/store/task-store.js';
import type { TaskRecord } from '../../src/translate/index.js';
import { rec, storeContract } from '../helpers/store-contract.js';

const LONG_MS = 600_000;

storeContract(t, 'memory', async ({ maxTtlMs }) => {
  const store = new MemoryTaskStore({ maxTasks: 1_000, ...(maxTtlMs !== undefined ? { maxTtlMs } : {}) });
  return {
    store,
    // One process: another "instance" is the same object.
    peer: async () => store,
    isolated: async () => new MemoryTaskStore({ maxTasks: 1_000 }),
  };
});

t.test('memory store bounds', async (t) => {
  t.test('maxTasks is required', async (t) => {
    // @ts-expect-error a memory store without a bound does not compile
    const unbounded = (): TaskStore => new MemoryTaskStore({});
    t.type(unbounded, 'function');
  });

  t.test('a store full of live tasks refuses a new one; live tasks are never evicted', async (t) => {
    const store = new MemoryTaskStore({ maxTasks: 3 });
    t.teardown(() => store.close());
    const live = [rec(), rec({ status: 'input_required' }), rec()];
    for (const r of live) await store.create(r, LONG_MS);
    const refused = rec();
    await t.rejects(store.create(refused, LONG_MS), StoreFullError, 'refused with StoreFullError');
    await t.rejects(store.create(rec({ status: 'completed' }), LONG_MS), StoreFullError, 'a finished record is refused too when all are live');
    t.equal(await store.get(refused.taskId), undefined, 'not stored');
    for (const r of live) t.ok(await store.get(r.taskId), `${r.taskId} (${r.status}) kept`);
    t.equal(await store.activeCount('principal-a'), 3);
    await t.rejects(store.ensureRoom(), StoreFullError, 'ensureRoom says so before any create is tried');
    t.ok((await store.replace({ ...live[0]!, status: 'completed' }, 0)).ok);
    await t.resolves(store.ensureRoom(), 'a finished record can make room');
  });

  t.test('a finished task makes room, the least recently used one first', async (t) => {
    const store = new MemoryTaskStore({ maxTasks: 4 });
    t.teardown(() => store.close());
    const oldLive = rec();
    const doneA = rec({ status: 'completed' });
    const doneB = rec({ status: 'failed' });
    const newLive = rec();
    for (const r of [oldLive, doneA, doneB, newLive]) await store.create(r, LONG_MS);
    // doneA is read again: doneB is now the least recently used finished task. oldLive is older than both, but live.
    await store.get(doneA.taskId);
    const first = rec();
    await store.create(first, LONG_MS);
    t.equal(await store.get(doneB.taskId), undefined, 'the least recently used finished task made room');
    t.ok(await store.get(oldLive.taskId), 'the oldest task is live: kept');
    t.ok(await store.get(doneA.taskId), 'the recently read finished task kept');
    const second = rec();
    await store.create(second, LONG_MS);
    t.equal(await store.get(doneA.taskId), undefined, 'then the next finished one');
    for (const r of [oldLive, newLive, first, second]) t.ok(await store.get(r.taskId), 'every live task kept');
    await t.rejects(store.create(rec(), LONG_MS), StoreFullError, 'now full of live tasks');
    // A live task that finishes becomes evictable.
    t.ok((await store.replace({ ...oldLive, status: 'cancelled' }, 0)).ok);
    await store.create(rec(), LONG_MS);
    t.equal(await store.get(oldLive.taskId), undefined, 'the task that finished made room');
  });

  t.test('reading live tasks over and over never pushes one out', async (t) => {
    const store = new MemoryTaskStore({ maxTasks: 3 });
    t.teardown(() => store.close());
    const live = [rec(), rec(), rec()];
    for (const r of live) await store.create(r, LONG_MS);
    for (let i = 0; i < 50; i++) {
      for (const r of live) await store.get(r.taskId);
      await t.rejects(store.create(rec(), LONG_MS), StoreFullError);
    }
    for (const r of live) t.ok(await store.get(r.taskId));
  });

  t.test('a record that expired makes room before a finished one that has not', async (t) => {
    let clock = 1_000_000;
    const store = new MemoryTaskStore({ maxTasks: 3, now: () => clock });
    t.teardown(() => store.close());
    const done = rec({ status: 'completed' });
    const expiring = rec();
    const live = rec();
    await store.create(done, LONG_MS);
    await store.create(expiring, 1_000);
    await store.create(live, LONG_MS);
    clock += 1_001;
    const next = rec();
    await store.create(next, LONG_MS);
    t.ok(await store.get(done.taskId), 'the finished task that has not expired is kept');
    t.equal(await store.get(expiring.taskId), undefined, 'the expired one made room');
    t.equal(await store.activeCount('principal-a'), 2, 'and left the live count');
  });

  t.test('storing many records starts no timer per record', async (t) => {
    const store = new MemoryTaskStore({ maxTasks: 1_000 });
    t.teardown(() => store.close());
    let timers = 0;
    const hook = createHook({
      init: (_id, type) => {
        if (type === 'Timeout') timers++;
      },
    });
    hook.enable();
    try {
      for (let i = 0; i < 200; i++) {
        const r = rec();
        await store.create(r, LONG_MS);
        await store.get(r.taskId);
        t.ok((await store.replace({ ...r, status: 'completed' }, 0)).ok);
      }
    } finally {
      hook.disable();
    }
    t.equal(timers, 0, 'expiry needs no timer per record');
  });

  t.test('the live index follows every way a live task leaves', async (t) => {
    let clock = 1_000_000;
    const store = new MemoryTaskStore({ maxTasks: 2, now: () => clock });
    t.teardown(() => store.close());
    const a = rec();
    const b = rec({ principal: 'principal-b' });
    await store.create(a, 1_000);
    await store.create(b, LONG_MS);
    t.equal(await store.activeCount('principal-a'), 1);
    clock += 1_001;
    t.equal(await store.activeCount('principal-a'), 0, 'expired, unread: not counted');
    // Its slot is free again: a full store takes a new live task of the same principal.
    const c = rec();
    await store.create(c, LONG_MS);
    t.equal(await store.activeCount('principal-a'), 1, 'the new one counts');
    t.ok((await store.replace({ ...c, status: 'failed' }, 0)).ok);
    t.equal(await store.activeCount('principal-a'), 0, 'a terminal one does not');
    t.equal(await store.activeCount('principal-b'), 1, 'another principal is untouched');
    await store.close();
    t.equal(await store.activeCount('principal-b'), 0, 'nothing after close');
  });

  t.test('a record keeps every field through create and a terminal replace, frozen, apart from the caller’s object', async (t) => {
    const store = new MemoryTaskStore({ maxTasks: 10 });
    t.teardown(() => store.close());
    // Strings built at run time (as each request builds its own), equal in value to ones stored before.
    const principal = ['sha256', 'abc'].join(':');
    await store.create(rec({ principal: 'sha256:abc', tool: 'greet' }), LONG_MS);
    const live = rec({
      principal,
      kind: 'proxied',
      upstreamTaskId: 'up-1',
      session: 'sess-1',
      origin: 'modern',
      tool: ['gr', 'eet'].join(''),
      statusMessage: 'running',
      pollIntervalMs: 1_000,
      inputRequests: { k: { method: 'elicitation/create', params: { message: 'ok?' } } },
      owner: 'inst-a',
      upstreamSession: 'up-sess',
      sealed: 'opaque',
      attempt: 2,
    });
    const asCreated = structuredClone(live);
    await store.create(live, LONG_MS);
    live.tool = 'changed after create';
    t.same(await store.get(live.taskId), asCreated, 'every field as created; a later change to the caller’s object is not seen');
    const { inputRequests: _i, ...rest } = asCreated;
    const result = {
      content: [{ type: 'text', text: 'done' }],
      structuredContent: { n: 1 },
      isError: false,
      resultType: 'complete',
      _meta: { 'x/y': { z: [1, null] } },
    };
    const done: TaskRecord = { ...rest, status: 'completed', lastUpdatedAt: '2026-08-01T09:00:01.000Z', result };
    const r = await store.replace(done, 0);
    t.ok(r.ok, 'replaced');
    const stored = await store.get(live.taskId);
    t.same(stored, { ...done, version: 1 }, 'the terminal record, result exactly as given');
    t.ok(stored && Object.isFrozen(stored), 'frozen: a reader never changes what the store holds');
    t.equal(stored?.principal, 'sha256:abc');
    t.equal(stored?.tool, 'greet');
    const failed = rec({ status: 'failed', error: { code: -32603, message: 'boom', data: { why: 'x' } }, statusMessage: 'boom' });
    await store.create(failed, LONG_MS);
    t.same(await store.get(failed.taskId), failed, 'a failed record with its error');
    const sameTime = rec({ createdAt: '2026-08-01T09:00:00.000Z', lastUpdatedAt: ['2026-08-01T09:00:00', '000Z'].join('.') });
    await store.create(sameTime, LONG_MS);
    t.same(await store.get(sameTime.taskId), sameTime, 'equal timestamps stay equal');
  });

  t.test('counters are bounded by maxCounters', async (t) => {
    const store = new MemoryTaskStore({ maxTasks: 3, maxCounters: 2 });
    t.teardown(() => store.close());
    await store.hit('a', LONG_MS);
    await store.hit('b', LONG_MS);
    await store.hit('a', LONG_MS);
    await store.hit('c', LONG_MS);
    t.equal((await store.hit('b', LONG_MS)).count, 1, 'the least recently hit counter made room (its count starts over)');
    t.equal((await store.hit('c', LONG_MS)).count, 2);
  });

  t.test('values are bounded by maxValues', async (t) => {
    const store = new MemoryTaskStore({ maxTasks: 3, maxValues: 2 });
    t.teardown(() => store.close());
    await store.putValue('a', { n: 1 }, LONG_MS);
    await store.putValue('b', { n: 2 }, LONG_MS);
    await store.getValue('a');
    await store.putValue('c', { n: 3 }, LONG_MS);
    t.equal(await store.getValue('b'), undefined, 'the least recently used value made room');
    t.same(await store.getValue('a'), { n: 1 });
    t.same(await store.getValue('c'), { n: 3 });
  });
});
