/**
 * The TaskStore contract suite (docs/architecture.md §5 "one contract suite per interface"): every promise of
 * `src/store/task-store.ts`, run unchanged against each implementation (memory, Redis). Expiry is real: records,
 * leases and values are given TTLs of a few hundred milliseconds and the tests poll, bounded, until they are gone.
 * Not a test file: `memory-store.test.ts` and `redis-store.test.ts` run it.
 */
import { randomUUID } from 'node:crypto';
import type { Test } from 'tap';
import { StoreUnavailableError, TaskIdClashError, UPDATE_ATTEMPTS, type TaskStore } from '../../src/store/task-store.js';
import type { JsonObject, TaskId, TaskRecord, TaskStatus } from '../../src/translate/index.js';

/** One store under test plus the other views of the same backend the contract speaks about. */
export interface StoreSubject {
  /** A fresh, empty store. */
  store: TaskStore;
  /**
   * Another handle on the same state, as a second gateway instance has (Redis: another store object on the same
   * server and key prefix; memory: the same object, since it is one process only).
   */
  peer(): Promise<TaskStore>;
  /** A store on the same backend that must not share anything with `store` (Redis: another key prefix). */
  isolated(): Promise<TaskStore>;
}

/** Makes a subject; `maxTtlMs` is the store-wide retention cap (default: a day). */
export type MakeSubject = (opts: { maxTtlMs?: number }) => Promise<StoreSubject>;

/** A short TTL: long enough to act on a record before it goes, short enough to await its expiry. */
const SHORT_MS = 250;
const LONG_MS = 600_000;
/** Bound on every awaited expiry or delivery: a store that takes longer is broken, not slow. */
const WAIT_MS = 5_000;

/** Polls `check` until it holds (bounded); rejects naming `what` otherwise. */
export async function eventually(what: string, check: () => Promise<boolean> | boolean, boundMs = WAIT_MS): Promise<void> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`not within ${boundMs} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The first message on `topic` at `store`, once subscribed; rejects after the bound. */
export async function nextMessage(
  store: TaskStore,
  topic: string,
  boundMs = WAIT_MS,
): Promise<{ message: Promise<JsonObject>; got: JsonObject[]; off: () => void }> {
  const got: JsonObject[] = [];
  let resolve!: (m: JsonObject) => void;
  let reject!: (e: Error) => void;
  const message = new Promise<JsonObject>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  const timer = setTimeout(() => reject(new Error(`no message on ${topic} within ${boundMs} ms`)), boundMs);
  const off = await store.subscribe(topic, (m) => {
    got.push(m);
    clearTimeout(timer);
    resolve(m);
  });
  message.catch(() => {});
  return {
    message,
    got,
    off: () => {
      clearTimeout(timer);
      off();
    },
  };
}

let seq = 0;
/** A fresh task id (unique across runs, so that a shared Redis never clashes). */
export const newId = (): TaskId => `gw_${randomUUID().replaceAll('-', '')}_${++seq}` as TaskId;

/** A live record with these fields replaced. */
export function rec(over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: newId(),
    principal: 'principal-a',
    upstream: 'up-1',
    kind: 'owned',
    tool: 'slow',
    status: 'working',
    createdAt: '2026-08-01T09:00:00.000Z',
    lastUpdatedAt: '2026-08-01T09:00:00.000Z',
    ttlMs: LONG_MS,
    version: 0,
    ...over,
  };
}

const TERMINAL: TaskStatus[] = ['completed', 'failed', 'cancelled'];

/** Runs the whole contract as subtests of `t`, named `name`. */
export function storeContract(t: Test, name: string, make: MakeSubject): void {
  t.test(`TaskStore contract: ${name}`, async (t) => {
    /** A subject whose stores are all closed when the subtest ends. */
    async function subject(tt: Test, opts: { maxTtlMs?: number } = {}): Promise<StoreSubject> {
      const s = await make(opts);
      const opened: TaskStore[] = [s.store];
      tt.teardown(async () => {
        for (const st of opened) await st.close();
      });
      return {
        store: s.store,
        peer: async () => {
          const p = await s.peer();
          opened.push(p);
          return p;
        },
        isolated: async () => {
          const p = await s.isolated();
          opened.push(p);
          return p;
        },
      };
    }

    t.test('create then get, from this instance and another', async (t) => {
      const { store, peer } = await subject(t);
      const other = await peer();
      const r = rec({
        kind: 'proxied',
        upstreamTaskId: 'up-task-1',
        session: 'sess-1',
        origin: 'legacy',
        statusMessage: 'starting',
        pollIntervalMs: 500,
        inputRequests: { k1: { method: 'elicitation/create', params: { mode: 'form', message: 'ok?', requestedSchema: { type: 'object' } } } },
        owner: 'inst-a',
        upstreamSession: 'up-sess',
        sealed: 'opaque.sealed.blob',
        attempt: 1,
      });
      await store.create(r, LONG_MS);
      t.same(await store.get(r.taskId), r, 'the same record back, every field');
      // Durable creation (2026-07-28 tasks extension §Task Creation): once create resolves, any instance sees it.
      t.same(await other.get(r.taskId), r, 'another instance sees it as soon as create resolved');
      t.equal(await store.get(newId()), undefined, 'an unknown id is undefined');
    });

    t.test('create with an id that exists rejects with TaskIdClashError and keeps the first record', async (t) => {
      const { store, peer } = await subject(t);
      const other = await peer();
      const first = rec({ tool: 'first' });
      await store.create(first, LONG_MS);
      await t.rejects(other.create({ ...first, tool: 'second' }, LONG_MS), TaskIdClashError, 'from another instance');
      await t.rejects(store.create({ ...first, tool: 'third' }, LONG_MS), TaskIdClashError, 'from the same instance');
      t.equal((await store.get(first.taskId))?.tool, 'first', 'never overwritten');
      // Two instances racing on the same new id: exactly one wins.
      const raced = rec();
      const outcomes = await Promise.allSettled([store.create({ ...raced, tool: 'a' }, LONG_MS), other.create({ ...raced, tool: 'b' }, LONG_MS)]);
      t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, 'one racing create succeeds');
      const lost = outcomes.find((o) => o.status === 'rejected');
      t.ok(lost && lost.status === 'rejected' && lost.reason instanceof TaskIdClashError, 'the other is told of the clash');
    });

    t.test('a record expires after its retention', async (t) => {
      const { store } = await subject(t);
      const short = rec();
      const kept = rec();
      await store.create(short, SHORT_MS);
      await store.create(kept, LONG_MS);
      t.ok(await store.get(short.taskId), 'there at first');
      await eventually('the short record expires', async () => (await store.get(short.taskId)) === undefined);
      t.ok(await store.get(kept.taskId), 'a record with a long retention stays');
      t.same(await store.replace({ ...short, status: 'completed' }, 0), { ok: false, reason: 'not-found' }, 'replace of an expired record: not-found');
      t.equal(await store.update(short.taskId, (r) => ({ ...r, status: 'failed' })), undefined, 'update of an expired record: undefined');
    });

    t.test('retention is capped by maxTtlMs', async (t) => {
      const { store } = await subject(t, { maxTtlMs: SHORT_MS });
      const r = rec();
      await store.create(r, LONG_MS);
      t.ok(await store.get(r.taskId), 'stored');
      await eventually('the record is gone after maxTtlMs, though its retention was longer', async () => (await store.get(r.taskId)) === undefined);
    });

    t.test('retention stays counted from creation when the record is replaced', async (t) => {
      const { store } = await subject(t);
      const r = rec();
      await store.create(r, SHORT_MS * 2);
      // Keep replacing it: were the TTL restarted by each write, it would never expire.
      let version = 0;
      let replaced = 0;
      await eventually('the record expires though it keeps being replaced', async () => {
        const res = await store.replace({ ...r, statusMessage: `step ${replaced}` }, version);
        if (res.ok) {
          version = res.record.version;
          replaced++;
          return false;
        }
        return res.reason === 'not-found';
      });
      t.ok(replaced > 1, `replaced ${replaced} times before it expired`);
    });

    t.test('replace: compare-and-set with a version bump', async (t) => {
      const { store, peer } = await subject(t);
      const other = await peer();
      const r = rec();
      await store.create(r, LONG_MS);
      const one = await store.replace({ ...r, status: 'input_required', statusMessage: 'asks' }, 0);
      t.ok(one.ok, 'applies on the expected version');
      if (one.ok) t.same(one.record, { ...r, status: 'input_required', statusMessage: 'asks', version: 1 }, 'the stored record, version + 1');
      t.same(await other.get(r.taskId), { ...r, status: 'input_required', statusMessage: 'asks', version: 1 }, 'another instance reads the new version');
      // The next record's own version field is ignored: the store sets expectedVersion + 1.
      const two = await other.replace({ ...r, status: 'working', version: 77 }, 1);
      t.ok(two.ok && two.record.version === 2, 'version is expectedVersion + 1 whatever next.version says');

      const stale = await store.replace({ ...r, statusMessage: 'stale writer' }, 1);
      t.equal(stale.ok, false, 'a stale expectedVersion loses');
      if (!stale.ok) {
        t.equal(stale.reason, 'conflict');
        t.equal(stale.current?.version, 2, 'and is told the current record');
        t.equal(stale.current?.status, 'working');
      }
      t.equal((await store.get(r.taskId))?.statusMessage, undefined, 'the stale write did not apply');
      const ahead = await store.replace({ ...r }, 5);
      t.ok(!ahead.ok && ahead.reason === 'conflict', 'a version from the future loses too');

      t.same(await store.replace(rec(), 0), { ok: false, reason: 'not-found' }, 'an unknown record: not-found');
    });

    t.test('replace: of several writers on the same version exactly one wins', async (t) => {
      const { store, peer } = await subject(t);
      const writers = [store, ...(await Promise.all([peer(), peer(), peer(), peer()]))];
      const r = rec();
      await store.create(r, LONG_MS);
      const results = await Promise.all(writers.map((w, i) => w.replace({ ...r, statusMessage: `writer ${i}` }, 0)));
      const won = results.filter((x) => x.ok);
      t.equal(won.length, 1, 'one writer wins');
      t.ok(
        results.filter((x) => !x.ok).every((x) => !x.ok && x.reason === 'conflict' && x.current?.version === 1),
        'the others conflict and see version 1',
      );
      const stored = await store.get(r.taskId);
      t.equal(stored?.version, 1);
      t.equal(stored?.statusMessage, won[0]?.ok ? won[0].record.statusMessage : 'none', "the winner's write is stored");
    });

    for (const status of TERMINAL) {
      t.test(`replace: a ${status} record never changes`, async (t) => {
        const { store } = await subject(t);
        const r = rec();
        await store.create(r, LONG_MS);
        const done = await store.replace({ ...r, status, result: { resultType: 'complete', content: [] } }, 0);
        t.ok(done.ok, `working → ${status} applies`);
        for (const next of ['working', 'input_required', 'completed', 'cancelled'] as TaskStatus[]) {
          const res = await store.replace({ ...r, status: next, statusMessage: 'late' }, 1);
          t.equal(res.ok, false, `${status} → ${next} refused`);
          if (!res.ok) {
            t.equal(res.reason, 'terminal');
            t.equal(res.current?.status, status, 'and told the terminal record');
          }
        }
        const stored = await store.get(r.taskId);
        t.equal(stored?.status, status);
        t.equal(stored?.version, 1, 'version unchanged');
        t.equal(stored?.statusMessage, undefined);
      });
    }

    t.test('update: read, change, replace', async (t) => {
      const { store } = await subject(t);
      const r = rec();
      await store.create(r, LONG_MS);
      const next = await store.update(r.taskId, (cur) => ({ ...cur, status: 'input_required' }));
      t.equal(next?.status, 'input_required');
      t.equal(next?.version, 1);
      const declined = await store.update(r.taskId, () => undefined);
      t.equal(declined?.version, 1, 'a declined change leaves the record as it is');
      t.equal((await store.get(r.taskId))?.version, 1);
      t.equal(await store.update(newId(), (cur) => cur), undefined, 'unknown: undefined');
      await store.update(r.taskId, (cur) => ({ ...cur, status: 'completed' }));
      let called = 0;
      const terminal = await store.update(r.taskId, (cur) => {
        called++;
        return { ...cur, status: 'working' };
      });
      t.equal(terminal?.status, 'completed', 'a terminal record is returned unchanged');
      t.equal(terminal?.version, 2);
      t.ok(called <= 1, 'and not retried');
    });

    t.test('update: concurrent writers on several instances all apply, versions sequential', async (t) => {
      const { store, peer } = await subject(t);
      const writers = [store, ...(await Promise.all([peer(), peer(), peer()]))];
      const r = rec({ attempt: 0, inputRequests: {} });
      await store.create(r, LONG_MS);
      // Fewer writers than UPDATE_ATTEMPTS, so that the slowest one still has attempts left.
      const n = Math.min(8, UPDATE_ATTEMPTS - 1);
      const seen = await Promise.all(
        Array.from({ length: n }, (_, i) =>
          writers[i % writers.length]!.update(r.taskId, (cur) => ({
            ...cur,
            attempt: (cur.attempt ?? 0) + 1,
            inputRequests: { ...cur.inputRequests, [`k${i}`]: { method: 'roots/list' } },
          })),
        ),
      );
      const stored = await store.get(r.taskId);
      t.equal(stored?.attempt, n, 'every increment applied once');
      t.equal(stored?.version, n, 'one version per write');
      t.same(Object.keys(stored?.inputRequests ?? {}).sort(), Array.from({ length: n }, (_, i) => `k${i}`).sort(), 'every writer’s key is there');
      t.same(
        seen.map((x) => x?.version).sort((a, b) => (a ?? 0) - (b ?? 0)),
        Array.from({ length: n }, (_, i) => i + 1),
        'each writer got its own version, 1…n',
      );
    });

    t.test('list: pages in (createdAt, taskId) order, narrowed by principal, upstream and session', async (t) => {
      const { store, peer } = await subject(t);
      const other = await peer();
      const at = (s: number) => `2026-08-01T09:00:0${s}.000Z`;
      const mine = [
        rec({ taskId: 'gw_b' as TaskId, createdAt: at(1) }),
        rec({ taskId: 'gw_a' as TaskId, createdAt: at(1), session: 's1' }),
        rec({ taskId: 'gw_z' as TaskId, createdAt: at(0), session: 's1' }),
        rec({ taskId: 'gw_c' as TaskId, createdAt: at(2), status: 'completed' }),
        rec({ taskId: 'gw_d' as TaskId, createdAt: at(3), session: 's2' }),
      ];
      const notMine = [
        rec({ taskId: 'gw_p' as TaskId, principal: 'principal-b', createdAt: at(1) }),
        rec({ taskId: 'gw_u' as TaskId, upstream: 'up-2', createdAt: at(1), session: 's1' }),
      ];
      for (const r of [...notMine, ...mine]) await store.create(r, LONG_MS);
      const order = ['gw_z', 'gw_a', 'gw_b', 'gw_c', 'gw_d'];

      const pages: string[][] = [];
      const mores: boolean[] = [];
      let after: { createdAt: string; taskId: string } | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await (i % 2 ? other : store).list({ principal: 'principal-a', upstream: 'up-1', limit: 2, ...(after ? { after } : {}) });
        pages.push(page.tasks.map((x) => x.taskId));
        mores.push(page.more);
        const last = page.tasks.at(-1);
        if (!page.more || !last) break;
        after = { createdAt: last.createdAt, taskId: last.taskId };
      }
      t.same(pages, [['gw_z', 'gw_a'], ['gw_b', 'gw_c'], ['gw_d']], 'oldest first, ties by id, pages of 2 (either instance serves a page)');
      t.same(mores, [true, true, false], 'more until the last page');
      const all = await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 100 });
      t.same(
        all.tasks.map((x) => x.taskId),
        order,
      );
      t.equal(all.more, false);
      t.same(all.tasks[0], mine[2], 'whole records');
      const exact = await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 5 });
      t.equal(exact.more, false, 'a page that holds exactly the rest says no more');

      const s1 = await store.list({ principal: 'principal-a', upstream: 'up-1', session: 's1', limit: 100 });
      t.same(
        s1.tasks.map((x) => x.taskId),
        ['gw_z', 'gw_a'],
        'a session sees its own tasks only',
      );
      const s1p = await store.list({ principal: 'principal-a', upstream: 'up-1', session: 's1', limit: 1 });
      t.same([s1p.tasks.map((x) => x.taskId), s1p.more], [['gw_z'], true], 'and pages them');
      t.same((await store.list({ principal: 'principal-a', upstream: 'up-1', session: 'none', limit: 10 })).tasks, [], 'an unknown session: nothing');
      t.same(
        (await store.list({ principal: 'principal-b', upstream: 'up-1', limit: 10 })).tasks.map((x) => x.taskId),
        ['gw_p'],
        'another principal sees only its own',
      );
      t.same(
        (await store.list({ principal: 'principal-a', upstream: 'up-2', limit: 10 })).tasks.map((x) => x.taskId),
        ['gw_u'],
        'another upstream, only its own',
      );
      t.same(await store.list({ principal: 'principal-c', upstream: 'up-1', limit: 10 }), { tasks: [], more: false }, 'an unknown principal: an empty page');
      const replaced = await store.replace({ ...mine[0]!, statusMessage: 'changed' }, 0);
      t.ok(replaced.ok);
      const again = await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 100 });
      t.same(
        again.tasks.map((x) => x.taskId),
        order,
        'a replace keeps the order',
      );
      t.equal(again.tasks.find((x) => x.taskId === 'gw_b')?.statusMessage, 'changed', 'and the list shows the current record');
    });

    t.test('list: a cursor naming an expired task stays valid; expired tasks are not listed', async (t) => {
      const { store } = await subject(t);
      const at = (s: number) => `2026-08-01T10:00:0${s}.000Z`;
      const a = rec({ createdAt: at(0) });
      const b = rec({ createdAt: at(1) });
      const c = rec({ createdAt: at(2) });
      await store.create(a, LONG_MS);
      await store.create(b, SHORT_MS);
      await store.create(c, LONG_MS);
      const first = await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 2 });
      t.same(
        first.tasks.map((x) => x.taskId),
        [a.taskId, b.taskId],
      );
      t.equal(first.more, true);
      await eventually('b expires', async () => (await store.get(b.taskId)) === undefined);
      const next = await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 2, after: { createdAt: b.createdAt, taskId: b.taskId } });
      t.same(
        next.tasks.map((x) => x.taskId),
        [c.taskId],
        'the page after the expired task',
      );
      t.equal(next.more, false);
      const all = await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 10 });
      t.same(
        all.tasks.map((x) => x.taskId),
        [a.taskId, c.taskId],
        'the expired task is not listed',
      );
    });

    t.test('list: long inventories page correctly when few tasks match or many have expired', async (t) => {
      const { store } = await subject(t);
      const at = (i: number) => `2026-08-01T11:${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}.000Z`;
      const n = 230;
      const rare = new Set([0, 60, 120, 180, 229]);
      const all = Array.from({ length: n }, (_, i) => rec({ createdAt: at(i), ...(rare.has(i) ? { session: 'rare' } : { session: 'common' }) }));
      await Promise.all(all.map((r) => store.create(r, LONG_MS)));
      const pages: string[][] = [];
      let after: { createdAt: string; taskId: string } | undefined;
      for (let i = 0; i < 10; i++) {
        const page = await store.list({ principal: 'principal-a', upstream: 'up-1', session: 'rare', limit: 2, ...(after ? { after } : {}) });
        pages.push(page.tasks.map((x) => x.taskId));
        const last = page.tasks.at(-1);
        if (!page.more || !last) break;
        after = { createdAt: last.createdAt, taskId: last.taskId };
      }
      const rareIds = all.filter((_, i) => rare.has(i)).map((r) => r.taskId);
      t.same(pages, [rareIds.slice(0, 2), rareIds.slice(2, 4), rareIds.slice(4)], 'sparse matches found across a long inventory, more exact');
      const whole = await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 1_000 });
      t.same(
        whole.tasks.map((x) => x.taskId),
        all.map((r) => r.taskId),
        `all ${n} in order`,
      );
      t.equal(whole.more, false);
      const cut = await store.list({ principal: 'principal-a', upstream: 'up-1', limit: n - 1 });
      t.equal(cut.tasks.length, n - 1);
      t.equal(cut.more, true, 'one left: more');

      // Many expired entries before the live ones.
      const early = (i: number) => `2026-08-01T08:${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}.000Z`;
      const expiring = Array.from({ length: 150 }, (_, i) => rec({ upstream: 'up-x', createdAt: early(i) }));
      const survivors = [rec({ upstream: 'up-x', createdAt: at(0) }), rec({ upstream: 'up-x', createdAt: at(1) })];
      await Promise.all(expiring.map((r) => store.create(r, SHORT_MS)));
      for (const r of survivors) await store.create(r, LONG_MS);
      await eventually(
        'the early tasks expire',
        async () => (await store.get(expiring.at(-1)!.taskId)) === undefined && (await store.get(expiring[0]!.taskId)) === undefined,
      );
      const first = await store.list({ principal: 'principal-a', upstream: 'up-x', limit: 1 });
      t.same([first.tasks.map((x) => x.taskId), first.more], [[survivors[0]!.taskId], true], 'the first live task after 150 expired ones, and more');
      const rest = await store.list({ principal: 'principal-a', upstream: 'up-x', limit: 5 });
      t.same([rest.tasks.map((x) => x.taskId), rest.more], [survivors.map((r) => r.taskId), false], 'expired entries never count toward more');
    });

    t.test('principals, upstreams, sessions, topics and keys may hold any character', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const odd = ['a:b', 'a', 'b:c', 'ü*?[x]', 'with space', 'a\nb', '{tag}'];
      const recs = [
        rec({ principal: 'a:b', upstream: 'c' }),
        rec({ principal: 'a', upstream: 'b:c' }),
        rec({ principal: 'ü*?[x]', upstream: '{tag}', session: 'with space' }),
        rec({ principal: 'a\nb', upstream: '*' }),
      ];
      for (const r of recs) await store.create(r, LONG_MS);
      t.same(
        (await store.list({ principal: 'a:b', upstream: 'c', limit: 10 })).tasks.map((x) => x.taskId),
        [recs[0]!.taskId],
        '"a:b"/"c" is not "a"/"b:c"',
      );
      t.same(
        (await store.list({ principal: 'a', upstream: 'b:c', limit: 10 })).tasks.map((x) => x.taskId),
        [recs[1]!.taskId],
      );
      t.same(
        (await store.list({ principal: 'ü*?[x]', upstream: '{tag}', session: 'with space', limit: 10 })).tasks.map((x) => x.taskId),
        [recs[2]!.taskId],
      );
      t.same((await store.list({ principal: 'a\nb', upstream: 'b', limit: 10 })).tasks, [], 'a glob-like upstream is a name, not a pattern');
      t.equal(await store.activeCount('a'), 1);
      t.equal(await store.activeCount('a:b'), 1);
      for (const [i, k] of odd.entries()) await store.putValue(k, { i }, LONG_MS);
      for (const [i, k] of odd.entries()) t.same(await b.getValue(k), { i }, `value under ${JSON.stringify(k)}`);
      const star = await nextMessage(b, 'task:*');
      const one = await nextMessage(b, 'task:1');
      await store.publish('task:1', { n: 1 });
      await store.publish('task:*', { n: 2 });
      t.same(await one.message, { n: 1 });
      t.same(await star.message, { n: 2 });
      t.same(star.got, [{ n: 2 }], 'a topic with glob characters is a name, not a pattern');
      star.off();
      one.off();
    });

    t.test('create keeps the version it is given', async (t) => {
      const { store } = await subject(t);
      const r = rec({ version: 5 });
      await store.create(r, LONG_MS);
      t.equal((await store.get(r.taskId))?.version, 5);
      t.ok(!(await store.replace(r, 0)).ok, 'version 0 is stale');
      const next = await store.replace({ ...r, statusMessage: 'x' }, 5);
      t.ok(next.ok && next.record.version === 6);
    });

    t.test('activeCount: live tasks of a principal; drops on terminal and on expiry', async (t) => {
      const { store, peer } = await subject(t);
      const other = await peer();
      const live = rec();
      const asking = rec({ status: 'input_required' });
      const short = rec();
      const toFail = rec();
      const toCancel = rec();
      await store.create(live, LONG_MS);
      await store.create(asking, LONG_MS);
      await store.create(short, SHORT_MS);
      await store.create(toFail, LONG_MS);
      await store.create(toCancel, LONG_MS);
      await store.create(rec({ status: 'completed' }), LONG_MS);
      await store.create(rec({ principal: 'principal-b' }), LONG_MS);
      await store.create(rec({ upstream: 'up-2' }), LONG_MS);
      t.equal(await store.activeCount('principal-a'), 6, 'working and input_required count, on every upstream; terminal ones do not');
      t.equal(await other.activeCount('principal-a'), 6, 'the same from another instance');
      t.equal(await store.activeCount('principal-b'), 1);
      t.equal(await store.activeCount('nobody'), 0);
      t.ok((await store.replace({ ...live, status: 'completed' }, 0)).ok);
      t.equal(await store.activeCount('principal-a'), 5, 'completed leaves the count');
      t.ok((await other.update(toFail.taskId, (r) => ({ ...r, status: 'failed' })))?.status === 'failed');
      t.equal(await store.activeCount('principal-a'), 4, 'failed (through update, on another instance) leaves it');
      t.ok((await store.replace({ ...toCancel, status: 'cancelled' }, 0)).ok);
      t.equal(await store.activeCount('principal-a'), 3, 'cancelled leaves it');
      t.ok((await store.replace({ ...asking, status: 'working' }, 0)).ok);
      t.equal(await store.activeCount('principal-a'), 3, 'a live → live change does not');
      await eventually('the short task expires', async () => (await store.get(short.taskId)) === undefined);
      t.equal(await store.activeCount('principal-a'), 2, 'an expired task leaves the count');
      t.equal(await store.activeCount('principal-b'), 1, 'another principal is untouched');
    });

    t.test('leases: acquire, contention, renew by the owner, leaseOwner', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const r = rec();
      await store.create(r, LONG_MS);
      t.equal(await store.leaseOwner(r.taskId), undefined, 'no lease at first');
      t.equal(await store.acquireLease(r.taskId, 'inst-a', LONG_MS), true, 'a free lease is taken');
      t.equal(await b.leaseOwner(r.taskId), 'inst-a', 'every instance sees the holder');
      t.equal(await b.acquireLease(r.taskId, 'inst-b', LONG_MS), false, 'a held lease is refused to another owner');
      t.equal(await store.leaseOwner(r.taskId), 'inst-a', 'and stays with its holder');
      t.equal(await store.acquireLease(r.taskId, 'inst-a', LONG_MS), true, 'the holder acquiring again renews it');
      const free = rec();
      await store.create(free, LONG_MS);
      const raced = await Promise.all([store, b, ...(await Promise.all([peer(), peer()]))].map((s, i) => s.acquireLease(free.taskId, `inst-${i}`, LONG_MS)));
      t.equal(raced.filter(Boolean).length, 1, 'of several instances racing for a free lease, exactly one gets it');
      t.equal(await store.leaseOwner(free.taskId), `inst-${raced.indexOf(true)}`, 'and holds it');
      const unknown = newId();
      t.equal(await store.acquireLease(unknown, 'inst-a', LONG_MS), false, 'no lease on an unknown (or expired) task');
      t.equal(await store.leaseOwner(unknown), undefined);
    });

    t.test('leases: renewLeases keeps the held ones and reports the lost', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const [held1, held2, lapsing, others, never] = [rec(), rec(), rec(), rec(), rec()];
      for (const r of [held1, held2, lapsing, others, never]) await store.create(r, LONG_MS);
      await store.acquireLease(held1.taskId, 'inst-a', LONG_MS);
      await store.acquireLease(held2.taskId, 'inst-a', LONG_MS);
      await store.acquireLease(lapsing.taskId, 'inst-a', SHORT_MS);
      await b.acquireLease(others.taskId, 'inst-b', LONG_MS);
      await eventually('the short lease lapses', async () => (await b.leaseOwner(lapsing.taskId)) === undefined);
      const claimed = await b.claimExpiredLeases('inst-b', LONG_MS, 10);
      t.same(claimed, [{ taskId: lapsing.taskId, previousOwner: 'inst-a' }], 'the lapsed lease is claimed by another instance');
      const kept = await store.renewLeases('inst-a', [held1.taskId, held2.taskId, lapsing.taskId, others.taskId, never.taskId, newId()], LONG_MS);
      t.same([...kept].sort(), [held1.taskId, held2.taskId].sort(), 'the ones it still holds; the claimed, foreign, never held and unknown are lost');
      t.equal(await store.leaseOwner(lapsing.taskId), 'inst-b', 'a renewal never takes a lease back');
      t.equal(await store.leaseOwner(others.taskId), 'inst-b');
      t.same(await store.renewLeases('inst-a', [], LONG_MS), [], 'nothing to renew: nothing held');
    });

    t.test('leases: a renewal keeps a lease from lapsing', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const renewed = rec();
      const control = rec();
      await store.create(renewed, LONG_MS);
      await store.create(control, LONG_MS);
      await store.acquireLease(renewed.taskId, 'inst-a', SHORT_MS);
      await store.acquireLease(control.taskId, 'inst-a', SHORT_MS);
      t.same(await store.renewLeases('inst-a', [renewed.taskId], LONG_MS), [renewed.taskId]);
      await eventually('the control lease lapses', async () => (await b.leaseOwner(control.taskId)) === undefined);
      t.equal(await b.leaseOwner(renewed.taskId), 'inst-a', 'the renewed one is still held');
      const claimed = await b.claimExpiredLeases('inst-b', LONG_MS, 10);
      t.same(
        claimed.map((c) => c.taskId),
        [control.taskId],
        'only the lapsed one can be claimed',
      );
    });

    t.test('leases: a lapsed lease nobody claimed is still its owner’s to renew', async (t) => {
      const { store } = await subject(t);
      const r = rec();
      await store.create(r, LONG_MS);
      await store.acquireLease(r.taskId, 'inst-a', SHORT_MS);
      await eventually('the lease lapses', async () => (await store.leaseOwner(r.taskId)) === undefined);
      t.same(await store.renewLeases('inst-a', [r.taskId], LONG_MS), [r.taskId], 'renewed (a slow owner is not a lost one)');
      t.equal(await store.leaseOwner(r.taskId), 'inst-a');
    });

    t.test('leases: a lapsed lease may be acquired by another owner', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const r = rec();
      await store.create(r, LONG_MS);
      await store.acquireLease(r.taskId, 'inst-a', SHORT_MS);
      await eventually('the lease lapses', async () => (await b.leaseOwner(r.taskId)) === undefined);
      t.equal(await b.acquireLease(r.taskId, 'inst-b', LONG_MS), true);
      t.equal(await store.leaseOwner(r.taskId), 'inst-b');
      t.same(await store.renewLeases('inst-a', [r.taskId], LONG_MS), [], 'the old owner has lost it');
    });

    t.test('leases: release drop forgets, handover lapses at once, someone else’s release is ignored', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const dropped = rec();
      const handed = rec();
      const foreign = rec();
      for (const r of [dropped, handed, foreign]) await store.create(r, LONG_MS);
      await store.acquireLease(dropped.taskId, 'inst-a', LONG_MS);
      await store.acquireLease(handed.taskId, 'inst-a', LONG_MS);
      await store.acquireLease(foreign.taskId, 'inst-a', LONG_MS);

      await b.releaseLease(foreign.taskId, 'inst-b', 'drop');
      await b.releaseLease(foreign.taskId, 'inst-b', 'handover');
      t.equal(await store.leaseOwner(foreign.taskId), 'inst-a', 'a release by another owner leaves the lease alone');

      await store.releaseLease(dropped.taskId, 'inst-a', 'drop');
      t.equal(await b.leaseOwner(dropped.taskId), undefined, 'drop: no holder');
      await store.releaseLease(handed.taskId, 'inst-a', 'handover');
      t.equal(await b.leaseOwner(handed.taskId), undefined, 'handover: no holder, at once');

      const claimed = await b.claimExpiredLeases('inst-b', LONG_MS, 10);
      t.same(claimed, [{ taskId: handed.taskId, previousOwner: 'inst-a' }], 'the handed-over lease is claimable at once; the dropped one is not');
      t.equal(await store.leaseOwner(handed.taskId), 'inst-b', 'the claimer holds it');
      t.same(await b.claimExpiredLeases('inst-c', LONG_MS, 10), [], 'a claimed lease is not claimed again');
      t.equal(await b.acquireLease(dropped.taskId, 'inst-b', LONG_MS), true, 'a dropped lease is free');
      await store.releaseLease(newId(), 'inst-a', 'drop');
      await store.releaseLease(newId(), 'inst-a', 'handover');
      t.pass('releasing an unknown lease is a no-op');
    });

    t.test('leases: concurrent claimers each claim a lapsed lease exactly once', async (t) => {
      const { store, peer } = await subject(t);
      const claimers = [store, ...(await Promise.all([peer(), peer(), peer(), peer()]))];
      const tasks = Array.from({ length: 7 }, () => rec());
      for (const r of tasks) {
        await store.create(r, LONG_MS);
        await store.acquireLease(r.taskId, 'inst-gone', LONG_MS);
        await store.releaseLease(r.taskId, 'inst-gone', 'handover');
      }
      const live = rec();
      await store.create(live, LONG_MS);
      await store.acquireLease(live.taskId, 'inst-live', LONG_MS);
      const results = await Promise.all(claimers.map((c, i) => c.claimExpiredLeases(`claimer-${i}`, LONG_MS, 10)));
      const ids = results.flat().map((x) => x.taskId);
      t.same([...ids].sort(), tasks.map((r) => r.taskId).sort(), 'every lapsed lease is claimed, none twice, the live one not at all');
      t.ok(
        results.flat().every((x) => x.previousOwner === 'inst-gone'),
        'each names the owner that let it lapse',
      );
      for (const [i, got] of results.entries()) {
        for (const c of got) t.equal(await store.leaseOwner(c.taskId), `claimer-${i}`, `${c.taskId} is held by its claimer`);
      }
      t.equal(await store.leaseOwner(live.taskId), 'inst-live');
    });

    t.test('leases: claimExpiredLeases honours its limit', async (t) => {
      const { store } = await subject(t);
      const tasks = [rec(), rec(), rec()];
      for (const r of tasks) {
        await store.create(r, LONG_MS);
        await store.acquireLease(r.taskId, 'inst-a', LONG_MS);
        await store.releaseLease(r.taskId, 'inst-a', 'handover');
      }
      const one = await store.claimExpiredLeases('inst-b', LONG_MS, 2);
      t.equal(one.length, 2, 'at most limit');
      const two = await store.claimExpiredLeases('inst-c', LONG_MS, 2);
      t.equal(two.length, 1, 'the rest later');
      t.same([...one, ...two].map((x) => x.taskId).sort(), tasks.map((r) => r.taskId).sort());
      t.same(await store.claimExpiredLeases('inst-d', LONG_MS, 2), []);
      // Which lapsed lease a claim takes first is not part of the contract: hand back one that inst-b claimed.
      const handed = one[0]!.taskId;
      await store.releaseLease(handed, 'inst-b', 'handover');
      t.same(await store.claimExpiredLeases('inst-d', LONG_MS, 0), [], 'limit 0 claims nothing');
      t.equal(await store.leaseOwner(handed), undefined, 'and leaves the lapsed lease');
    });

    t.test('leases: a record created with a lease is leased from its first moment, and lapses like any other', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const r = rec();
      await store.create(r, LONG_MS, { owner: 'inst-a', ttlMs: LONG_MS });
      t.equal(await b.leaseOwner(r.taskId), 'inst-a', 'every instance sees the creator holding it');
      t.equal(await b.acquireLease(r.taskId, 'inst-b', LONG_MS), false, 'another owner cannot take it');
      t.same(await store.renewLeases('inst-a', [r.taskId], LONG_MS), [r.taskId], 'the creator renews it');
      const lapsing = rec();
      await store.create(lapsing, LONG_MS, { owner: 'inst-a', ttlMs: SHORT_MS });
      await eventually('the unrenewed lease lapses', async () => (await store.leaseOwner(lapsing.taskId)) === undefined);
      t.same(await b.claimExpiredLeases('inst-b', LONG_MS, 10), [{ taskId: lapsing.taskId, previousOwner: 'inst-a' }], 'and another instance claims it');
      const plain = rec();
      await store.create(plain, LONG_MS);
      t.equal(await store.leaseOwner(plain.taskId), undefined, 'without a lease argument, no lease');
    });

    t.test('leases: the lease of an expired record is dropped, not claimed', async (t) => {
      const { store } = await subject(t);
      const expiring = rec();
      const kept = rec();
      await store.create(expiring, SHORT_MS);
      await store.create(kept, LONG_MS);
      for (const r of [expiring, kept]) {
        await store.acquireLease(r.taskId, 'inst-a', LONG_MS);
        await store.releaseLease(r.taskId, 'inst-a', 'handover');
      }
      await eventually('the record expires', async () => (await store.get(expiring.taskId)) === undefined);
      const claimed = await store.claimExpiredLeases('inst-b', LONG_MS, 10);
      t.same(claimed, [{ taskId: kept.taskId, previousOwner: 'inst-a' }], 'only the live record’s lease');
      t.equal(await store.leaseOwner(expiring.taskId), undefined);
      t.same(await store.claimExpiredLeases('inst-c', LONG_MS, 10), [], 'and it does not come back');
    });

    t.test('leases: a held lease of an expired record has no owner and is not renewed', async (t) => {
      const { store } = await subject(t);
      const r = rec();
      await store.create(r, SHORT_MS);
      await store.acquireLease(r.taskId, 'inst-a', LONG_MS);
      await eventually('the record expires', async () => (await store.get(r.taskId)) === undefined);
      t.same(await store.renewLeases('inst-a', [r.taskId], LONG_MS), [], 'not renewed: the work has nothing to run for');
    });

    t.test('values: put, ifAbsent, get, touch, delete', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const v = { sessionId: 's-1', caps: { roots: {} }, n: 3, list: [1, 'two', null], flag: true };
      t.equal(await store.putValue('sess:1', v, LONG_MS), true);
      t.same(await b.getValue('sess:1'), v, 'another instance reads it, every JSON type intact');
      t.equal(await b.putValue('sess:1', { other: 1 }, LONG_MS, { ifAbsent: true }), false, 'ifAbsent on an existing key fails');
      t.same(await store.getValue('sess:1'), v, 'and leaves it');
      t.equal(await b.putValue('sess:2', { n: 2 }, LONG_MS, { ifAbsent: true }), true, 'ifAbsent on a new key puts it');
      const racers = await Promise.all([store, b, await peer()].map((s, i) => s.putValue('sess:race', { i }, LONG_MS, { ifAbsent: true })));
      t.equal(racers.filter(Boolean).length, 1, 'of racing ifAbsent puts, exactly one wins');
      t.same(await store.getValue('sess:race'), { i: racers.indexOf(true) });
      t.equal(await store.putValue('sess:1', { replaced: true }, LONG_MS), true, 'a plain put overwrites');
      t.same(await b.getValue('sess:1'), { replaced: true });
      t.equal(await store.touchValue('sess:1', LONG_MS), true, 'touch of an existing value');
      t.equal(await store.touchValue('nope', LONG_MS), false, 'touch of a missing value');
      t.equal(await b.deleteValue('sess:1'), true, 'delete of an existing value');
      t.equal(await store.getValue('sess:1'), undefined, 'gone');
      t.equal(await store.deleteValue('sess:1'), false, 'delete again: false');
      t.equal(await store.getValue('never'), undefined);
      const got = await store.getValue('sess:2');
      if (got) got['n'] = 99;
      t.same(await store.getValue('sess:2'), { n: 2 }, 'a read value is a copy');
    });

    t.test('values: expire after their TTL; touch restarts it', async (t) => {
      const { store } = await subject(t);
      await store.putValue('short', { a: 1 }, SHORT_MS);
      await store.putValue('touched', { a: 2 }, SHORT_MS);
      t.equal(await store.touchValue('touched', LONG_MS), true);
      t.same(await store.getValue('short'), { a: 1 }, 'there at first');
      await eventually('the short value expires', async () => (await store.getValue('short')) === undefined);
      t.same(await store.getValue('touched'), { a: 2 }, 'the touched one outlives its first TTL');
      t.equal(await store.touchValue('short', LONG_MS), false, 'an expired value cannot be touched back');
      t.equal(await store.putValue('short', { a: 3 }, LONG_MS, { ifAbsent: true }), true, 'ifAbsent succeeds on an expired key');
      await store.putValue('shortened', { a: 4 }, LONG_MS);
      t.equal(await store.touchValue('shortened', SHORT_MS), true);
      await eventually('a value touched with a shorter TTL expires', async () => (await store.getValue('shortened')) === undefined);
    });

    t.test('counters: hits in a window are counted across instances, exactly under concurrency, and reset after it', async (t) => {
      const { store, peer } = await subject(t);
      const other = await peer();
      const first = await store.hit('poll:a', SHORT_MS);
      t.equal(first.count, 1, 'the first hit starts a window');
      t.ok(first.resetInMs >= 1 && first.resetInMs <= SHORT_MS, 'the window runs for at most its length');
      t.equal((await other.hit('poll:a', SHORT_MS)).count, 2, 'another instance adds to the same counter');
      const counts = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? store : other).hit('poll:a', SHORT_MS)));
      t.same(
        counts.map((c) => c.count).sort((a, b) => a - b),
        Array.from({ length: 20 }, (_, i) => i + 3),
        'concurrent hits each count once',
      );
      t.equal((await store.hit('poll:b', SHORT_MS)).count, 1, 'keys count apart');
      await eventually('the window ended and a new one starts at 1', async () => (await store.hit('poll:a', SHORT_MS)).count === 1);
      const long = await store.hit('poll:long', LONG_MS);
      t.ok(long.resetInMs > SHORT_MS, 'the window is the one the first hit set');
    });

    t.test('counters: a hit after waiting the resetInMs a hit named starts a new window', async (t) => {
      const { store } = await subject(t);
      // A few rounds: a wait one millisecond short of the window's end shows as a count of 2 in some of them.
      for (let round = 0; round < 5; round++) {
        await store.hit(`wait:${round}`, SHORT_MS);
        const second = await store.hit(`wait:${round}`, SHORT_MS);
        await new Promise((resolve) => setTimeout(resolve, second.resetInMs));
        t.equal((await store.hit(`wait:${round}`, SHORT_MS)).count, 1, `round ${round}: after ${second.resetInMs} ms the window has ended`);
      }
    });

    t.test('counters: a window is set by its first hit, not extended by later ones', async (t) => {
      const { store } = await subject(t);
      await store.hit('w', SHORT_MS);
      const later = await store.hit('w', LONG_MS);
      t.equal(later.count, 2);
      t.ok(later.resetInMs <= SHORT_MS, 'a later hit with a longer window does not extend it');
    });

    t.test('ensureRoom: an empty store has room', async (t) => {
      const { store } = await subject(t);
      await t.resolves(store.ensureRoom());
    });

    t.test('events: publish reaches subscribers on every instance, this one included', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const atB = await nextMessage(b, 'task:1');
      const atA = await nextMessage(store, 'task:1');
      const msg = { kind: 'status', taskId: 'gw_1', nested: { n: 1, list: [true, null] } };
      await store.publish('task:1', msg);
      t.same(await atB.message, msg, 'delivered to another instance');
      t.same(await atA.message, msg, 'and to the publisher’s own');
      atA.off();
      atB.off();
    });

    t.test('events: topics are separate; an unsubscribed listener hears nothing more', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const heardX: JsonObject[] = [];
      const offX = await b.subscribe('x', (m) => heardX.push(m));
      const y = await nextMessage(b, 'y');
      // Published in order on one channel: the second is delivered after the first would have been.
      await store.publish('x', { n: 1 });
      await store.publish('y', { n: 2 });
      await y.message;
      await eventually('x heard its own message', () => heardX.length === 1);
      t.same(heardX, [{ n: 1 }], 'x heard only x');
      t.same(y.got, [{ n: 2 }], 'y heard only y');

      offX();
      const stillX = await nextMessage(b, 'x');
      await store.publish('x', { n: 3 });
      t.same(await stillX.message, { n: 3 }, 'a listener still subscribed hears it');
      t.same(heardX, [{ n: 1 }], 'the removed one did not');
      stillX.off();
      y.off();
      offX();
      t.pass('removing twice is harmless');
      // A topic nobody listens to any more can be published on.
      await store.publish('x', { n: 4 });
    });

    t.test('events: one publisher’s messages on a topic arrive in order', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const heard = await nextMessage(b, 'ordered');
      for (let n = 1; n <= 20; n++) await store.publish('ordered', { n });
      await eventually('all 20 arrived', () => heard.got.length === 20);
      t.same(
        heard.got.map((m) => m['n']),
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      heard.off();
    });

    t.test('events: two listeners on one topic each get the message once', async (t) => {
      const { store, peer } = await subject(t);
      const b = await peer();
      const one = await nextMessage(b, 'both');
      const two = await nextMessage(b, 'both');
      await store.publish('both', { n: 1 });
      await Promise.all([one.message, two.message]);
      await store.publish('both', { n: 2 });
      await eventually('the second message reached both', () => one.got.length === 2 && two.got.length === 2);
      t.same(one.got, [{ n: 1 }, { n: 2 }]);
      t.same(two.got, [{ n: 1 }, { n: 2 }]);
      one.off();
      await store.publish('both', { n: 3 });
      await eventually('the third message reached the remaining listener', () => two.got.length === 3);
      t.equal(one.got.length, 2, 'the removed listener did not get it; the other still did');
      two.off();
    });

    t.test('namespaces: another store on the same backend shares nothing', async (t) => {
      const { store, isolated } = await subject(t);
      const other = await isolated();
      const r = rec({ tool: 'here' });
      await store.create(r, LONG_MS);
      t.equal(await other.get(r.taskId), undefined, 'a record is not seen across');
      await other.create({ ...r, tool: 'there' }, LONG_MS);
      t.equal((await store.get(r.taskId))?.tool, 'here', 'the same id is a different record');
      t.equal((await other.get(r.taskId))?.tool, 'there');
      t.ok((await other.replace({ ...r, tool: 'there', status: 'completed' }, 0)).ok);
      t.equal((await store.get(r.taskId))?.status, 'working', 'a replace does not cross');
      t.equal(await store.activeCount('principal-a'), 1, 'nor the count');
      t.equal(await other.activeCount('principal-a'), 0);
      t.same(
        (await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 10 })).tasks.map((x) => x.tool),
        ['here'],
        'nor the list',
      );

      t.equal(await store.acquireLease(r.taskId, 'inst-a', LONG_MS), true);
      t.equal(await other.leaseOwner(r.taskId), undefined, 'nor a lease');
      t.equal(await other.acquireLease(r.taskId, 'inst-b', LONG_MS), true, 'its own lease on its own record');
      await store.releaseLease(r.taskId, 'inst-a', 'handover');
      t.same(await other.claimExpiredLeases('inst-c', LONG_MS, 10), [], 'a handed-over lease is not claimable across');

      await store.putValue('k', { here: true }, LONG_MS);
      t.equal(await other.getValue('k'), undefined, 'nor a value');
      await store.hit('n', LONG_MS);
      t.equal((await other.hit('n', LONG_MS)).count, 1, 'nor a counter');
      t.equal(await other.putValue('k', { there: true }, LONG_MS, { ifAbsent: true }), true);
      t.same(await store.getValue('k'), { here: true });

      const heardThere = await nextMessage(other, 'topic');
      const heardHere = await nextMessage(store, 'topic');
      await store.publish('topic', { from: 'here' });
      await other.publish('topic', { from: 'there' });
      t.same(await heardHere.message, { from: 'here' });
      t.same(await heardThere.message, { from: 'there' }, 'an event is not heard across (it came first, had it leaked)');
      await eventually('both sides heard only their own', () => heardHere.got.length === 1 && heardThere.got.length === 1);
      heardHere.off();
      heardThere.off();
    });

    t.test('ping: resolves while the backend answers', async (t) => {
      const s = await make({});
      const peer = await s.peer();
      t.teardown(async () => {
        await s.store.close();
        await peer.close();
      });
      await s.store.ping();
      await peer.ping();
      t.pass('pinged');
    });

    t.test('close is idempotent', async (t) => {
      const s = await make({});
      const extra = await s.peer();
      await s.store.close();
      await s.store.close();
      await extra.close();
      await extra.close();
      t.pass('closed twice without error');
    });
  });
}

/** Asserts that `p` rejects with `StoreUnavailableError` and settles before `boundMs`; resolves to how it settled. */
export async function rejectsUnavailable(t: Test, what: string, p: Promise<unknown>, boundMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'bound'>((r) => {
    timer = setTimeout(() => r('bound'), boundMs);
  });
  const outcome = await Promise.race([
    p.then(
      () => ({ settled: 'resolved' as const }),
      (err: unknown) => ({ settled: 'rejected' as const, err }),
    ),
    bound.then(() => ({ settled: 'hung' as const })),
  ]);
  clearTimeout(timer);
  if (outcome.settled === 'rejected') {
    t.ok(outcome.err instanceof StoreUnavailableError, `${what}: rejects with StoreUnavailableError`, { found: String(outcome.err) });
  } else {
    t.fail(`${what}: ${outcome.settled === 'hung' ? `still pending after ${boundMs} ms` : 'resolved'} instead of rejecting with StoreUnavailableError`);
  }
}

/** One call of every store method (but close), about `r`, named: what an outage test expects to fail fast. */
export function everyMethod(store: TaskStore, r: TaskRecord): Array<[string, () => Promise<unknown>]> {
  return [
    ['create', () => store.create(rec(), LONG_MS)],
    ['get', () => store.get(r.taskId)],
    ['replace', () => store.replace({ ...r, status: 'completed' }, 0)],
    ['update', () => store.update(r.taskId, (x) => ({ ...x, statusMessage: 'x' }))],
    ['list', () => store.list({ principal: 'principal-a', upstream: 'up-1', limit: 10 })],
    ['activeCount', () => store.activeCount('principal-a')],
    ['acquireLease', () => store.acquireLease(r.taskId, 'inst-a', LONG_MS)],
    ['renewLeases', () => store.renewLeases('inst-a', [r.taskId], LONG_MS)],
    ['releaseLease', () => store.releaseLease(r.taskId, 'inst-a', 'handover')],
    ['claimExpiredLeases', () => store.claimExpiredLeases('inst-a', LONG_MS, 10)],
    ['leaseOwner', () => store.leaseOwner(r.taskId)],
    ['putValue', () => store.putValue('v', { a: 2 }, LONG_MS)],
    ['getValue', () => store.getValue('v')],
    ['touchValue', () => store.touchValue('v', LONG_MS)],
    ['deleteValue', () => store.deleteValue('v')],
    ['hit', () => store.hit('c', LONG_MS)],
    ['publish', () => store.publish('events', { n: 0 })],
    ['subscribe', () => store.subscribe('other', () => {})],
    ['ping', () => store.ping()],
  ];
}
