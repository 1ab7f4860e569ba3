/**
 * RedisTaskStore against a real redis-server on a loopback port: the transitions, exactly-once lease claims across
 * connections, events between store objects, a TTL on every key, and an outage (Redis killed, frozen, restarted on
 * the same port) seen as fast `StoreUnavailableError`s followed by recovery of the same store object.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import t from 'tap';
import { RedisTaskStore, StoreUnavailableError, TaskIdClashError } from '../../src/store/index.js';
import type { JsonObject, TaskId, TaskRecord } from '../../src/translate/index.js';

const missing = spawnSync('redis-server', ['--version']).error;
if (missing) {
  t.plan(0, `no redis-server binary: ${missing.message}`);
  process.exit(0);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

/** Starts redis-server on `port`; resolves once it accepts connections. */
function startRedis(port: number): Promise<ChildProcess> {
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let log = '';
    child.stdout.on('data', (d: Buffer) => {
      log += d.toString();
      if (log.includes('Ready to accept connections')) resolve(child);
    });
    child.stderr.resume();
    child.once('exit', (code) => reject(new Error(`redis-server exited (${code}):\n${log}`)));
  });
}

const ended = (child: ChildProcess, signal: NodeJS.Signals): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill(signal);
  });

const port = await freePort();
let server = await startRedis(port);
const url = `redis://127.0.0.1:${port}`;
t.teardown(() => ended(server, 'SIGKILL'));

const stores: RedisTaskStore[] = [];
async function openStore(keyPrefix: string, over: { commandTimeoutMs?: number } = {}): Promise<RedisTaskStore> {
  const s = new RedisTaskStore({ url, keyPrefix, maxTtlMs: 600_000, commandTimeoutMs: over.commandTimeoutMs ?? 1000, connectTimeoutMs: 1000 });
  await s.connect();
  stores.push(s);
  return s;
}
t.teardown(async () => {
  for (const s of stores) await s.close();
});

const newId = (): TaskId => `gw_${randomUUID()}` as TaskId;
function rec(over: Partial<TaskRecord> = {}): TaskRecord {
  const now = new Date().toISOString();
  return {
    taskId: newId(),
    principal: 'tenant:alice',
    upstream: 'up-1',
    kind: 'owned',
    tool: 'slow',
    status: 'working',
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs: 60_000,
    version: 0,
    ...over,
  };
}

/** Retries `op` until it resolves (each try fails fast while Redis is away); bounded. */
async function untilWorks<T>(op: () => Promise<T>, boundMs = 10_000): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    try {
      return await op();
    } catch (err) {
      if (!(err instanceof StoreUnavailableError) || Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

t.test('create, get, replace with conflict and terminal, update', async (t) => {
  const store = await openStore(`b1:${randomUUID()}:`);
  const r = rec();
  await store.create(r, 60_000);
  t.same(await store.get(r.taskId), r);
  await t.rejects(store.create({ ...r, tool: 'other' }, 60_000), TaskIdClashError);
  t.equal((await store.get(r.taskId))?.tool, 'slow', 'a clash keeps the first record');
  t.equal(await store.get(newId()), undefined);

  const ok = await store.replace({ ...r, statusMessage: 'half' }, 0);
  t.same(ok, { ok: true, record: { ...r, statusMessage: 'half', version: 1 } });
  const stale = await store.replace({ ...r, statusMessage: 'stale' }, 0);
  t.same(stale, { ok: false, reason: 'conflict', current: { ...r, statusMessage: 'half', version: 1 } });
  t.same(await store.replace(rec(), 0), { ok: false, reason: 'not-found' });

  t.equal(await store.activeCount('tenant:alice'), 1);
  const done = await store.update(r.taskId, (c) => ({ ...c, status: 'completed', result: { resultType: 'complete', content: [] } }));
  t.equal(done?.status, 'completed');
  t.equal(done?.version, 2);
  t.equal(await store.activeCount('tenant:alice'), 0, 'a terminal record leaves the active count');
  const again = await store.replace({ ...r, status: 'failed' }, 2);
  t.equal(again.ok, false);
  t.equal(!again.ok && again.reason, 'terminal');
  t.equal(!again.ok && again.current?.status, 'completed');
  t.equal(await store.update(r.taskId, (c) => ({ ...c, status: 'working' })).then((x) => x?.status), 'completed', 'update leaves a terminal record');
});

t.test('list pages in (createdAt, taskId) order and narrows by session', async (t) => {
  const store = await openStore(`b2:${randomUUID()}:`);
  const made: TaskRecord[] = [];
  for (let i = 0; i < 7; i++) {
    const r = rec({ createdAt: `2026-01-01T00:00:0${i % 3}.000Z`, session: i % 2 === 0 ? 's-even' : 's-odd' });
    made.push(r);
    await store.create(r, 60_000);
  }
  await store.create(rec({ upstream: 'up-2' }), 60_000);
  const order = [...made].sort((a, b) => (a.createdAt + a.taskId < b.createdAt + b.taskId ? -1 : 1));
  const seen: string[] = [];
  let after: { createdAt: string; taskId: string } | undefined;
  for (;;) {
    const page = await store.list({ principal: 'tenant:alice', upstream: 'up-1', limit: 3, ...(after ? { after } : {}) });
    seen.push(...page.tasks.map((x) => x.taskId));
    const last = page.tasks[page.tasks.length - 1];
    if (!page.more || !last) break;
    after = { createdAt: last.createdAt, taskId: last.taskId };
  }
  t.same(seen, order.map((r) => r.taskId));
  const even = await store.list({ principal: 'tenant:alice', upstream: 'up-1', session: 's-even', limit: 10 });
  t.same(even.tasks.map((x) => x.taskId), order.filter((r) => r.session === 's-even').map((r) => r.taskId));
  t.equal(even.more, false);
});

t.test('claimExpiredLeases: each lapsed lease claimed exactly once by concurrent claimers on two connections', async (t) => {
  const prefix = `b3:${randomUUID()}:`;
  const a = await openStore(prefix);
  const b = await openStore(prefix);
  const ids: TaskId[] = [];
  for (let i = 0; i < 20; i++) {
    const r = rec();
    await a.create(r, 60_000);
    t.equal(await a.acquireLease(r.taskId, 'gone', 60_000), true);
    ids.push(r.taskId);
  }
  t.equal(await b.acquireLease(ids[0]!, 'other', 60_000), false, 'a held lease is refused to another owner');
  t.equal(await b.leaseOwner(ids[0]!), 'gone');
  for (const id of ids) await a.releaseLease(id, 'gone', 'handover');
  t.equal(await b.leaseOwner(ids[0]!), undefined, 'a handed-over lease has no owner');
  const claims = await Promise.all([
    ...Array.from({ length: 4 }, () => a.claimExpiredLeases('inst-a', 60_000, 3)),
    ...Array.from({ length: 4 }, () => b.claimExpiredLeases('inst-b', 60_000, 3)),
    a.claimExpiredLeases('inst-a', 60_000, 100),
    b.claimExpiredLeases('inst-b', 60_000, 100),
  ]);
  const all = claims.flat();
  t.same(all.map((c) => c.taskId).sort(), [...ids].sort(), 'every lapsed lease claimed once');
  t.ok(all.every((c) => c.previousOwner === 'gone'));
  t.ok(claims.every((c, i) => c.length <= (i < 8 ? 3 : 100)), 'limits honoured');
  t.same(await a.claimExpiredLeases('inst-a', 60_000, 100), [], 'nothing lapsed is left');
  const first = all[0]!;
  const holder = (await a.leaseOwner(first.taskId))!;
  t.ok(holder === 'inst-a' || holder === 'inst-b');
  const notHeld = all.find((c) => c.taskId !== first.taskId && c.previousOwner === 'gone' && c.taskId !== undefined);
  const other = notHeld && (await a.leaseOwner(notHeld.taskId)) !== holder ? [notHeld.taskId] : [];
  t.same(await b.renewLeases(holder, [first.taskId, ...other, newId()], 60_000), [first.taskId], 'renew keeps the held, reports the others lost');
  await a.releaseLease(first.taskId, 'not-the-holder', 'drop');
  t.equal(await a.leaseOwner(first.taskId), holder, "someone else's release is ignored");
  await a.releaseLease(first.taskId, holder, 'drop');
  t.equal(await a.leaseOwner(first.taskId), undefined);
});

t.test('values with a TTL', async (t) => {
  const store = await openStore(`b4:${randomUUID()}:`);
  t.equal(await store.putValue('sess:1', { a: 1 }, 60_000, { ifAbsent: true }), true);
  t.equal(await store.putValue('sess:1', { a: 2 }, 60_000, { ifAbsent: true }), false);
  t.same(await store.getValue('sess:1'), { a: 1 });
  t.equal(await store.touchValue('sess:1', 60_000), true);
  t.equal(await store.deleteValue('sess:1'), true);
  t.equal(await store.touchValue('sess:1', 60_000), false);
  t.equal(await store.getValue('sess:1'), undefined);
});

t.test('publish from one store object is heard by another; prefixes never see each other', async (t) => {
  const prefix = `b5:${randomUUID()}:`;
  const a = await openStore(prefix);
  const b = await openStore(prefix);
  const other = await openStore(`b5:${randomUUID()}:`);
  const heard: JsonObject[] = [];
  const heardToo: JsonObject[] = [];
  const strangers: JsonObject[] = [];
  let got!: () => void;
  const arrived = new Promise<void>((r) => (got = r));
  const off1 = await b.subscribe('status', (m) => {
    heard.push(m);
    got();
  });
  const off2 = await b.subscribe('status', (m) => heardToo.push(m));
  const off3 = await other.subscribe('status', (m) => strangers.push(m));
  await a.publish('status', { taskId: 'x', n: 1 });
  await arrived;
  // A message published after it on the same topic from the same connection proves the stranger had its chance.
  let gotOwn!: () => void;
  const own = new Promise<void>((r) => (gotOwn = r));
  const off4 = await other.subscribe('status', () => gotOwn());
  await other.publish('status', { own: true });
  await own;
  t.same(heard, [{ taskId: 'x', n: 1 }]);
  t.same(heardToo, [{ taskId: 'x', n: 1 }], 'two listeners share one subscription, each hears it once');
  t.same(strangers, [{ own: true }], 'another prefix never hears it');
  off1();
  off2();
  off3();
  off4();
});

t.test('every key has a TTL', async (t) => {
  const prefix = `b6:${randomUUID()}:`;
  const store = await openStore(prefix);
  const r = rec({ principal: 'p:with:colons\u00e9' });
  await store.create(r, 60_000);
  await store.create(rec({ status: 'completed' }), 60_000);
  await store.acquireLease(r.taskId, 'me', 10_000);
  await store.putValue('inst:me', { at: 1 }, 10_000);
  await store.activeCount(r.principal);
  await store.list({ principal: r.principal, upstream: r.upstream, limit: 10 });
  const raw = new Redis(url, { lazyConnect: true });
  await raw.connect();
  t.teardown(() => raw.quit());
  const keys = await raw.keys(`${prefix}*`);
  t.ok(keys.length >= 6, `keys of every kind: ${keys.join(', ')}`);
  for (const k of keys) t.ok((await raw.pttl(k)) > 0, `${k} has a TTL`);
});

t.test('Redis frozen: a command fails with StoreUnavailableError after commandTimeoutMs', async (t) => {
  const store = await openStore(`b7:${randomUUID()}:`, { commandTimeoutMs: 200 });
  await store.putValue('k', { v: 1 }, 60_000);
  server.kill('SIGSTOP');
  try {
    const err = await store.getValue('k').catch((e: unknown) => e);
    t.ok(err instanceof StoreUnavailableError, String(err));
    t.ok((err as Error).cause instanceof Error, 'the cause is kept');
  } finally {
    server.kill('SIGCONT');
  }
  t.same(await untilWorks(() => store.getValue('k')), { v: 1 });
});

t.test('Redis killed then restarted on the same port: fast errors, then the same store object works again', async (t) => {
  const prefix = `b8:${randomUUID()}:`;
  const a = await openStore(prefix);
  const b = await openStore(prefix);
  const heard: JsonObject[] = [];
  await b.subscribe('after', (m) => heard.push(m));
  await ended(server, 'SIGKILL');
  await t.rejects(a.get(newId()), StoreUnavailableError, 'get while Redis is down');
  await t.rejects(a.create(rec(), 60_000), StoreUnavailableError, 'create while Redis is down');
  await t.rejects(a.publish('after', { n: 0 }), StoreUnavailableError, 'publish while Redis is down');
  await t.rejects(b.subscribe('other', () => {}), StoreUnavailableError, 'subscribe while Redis is down');
  server = await startRedis(port);
  const r = rec();
  await untilWorks(() => a.create(r, 60_000));
  t.same(await untilWorks(() => b.get(r.taskId)), r);
  // The subscription from before the outage is restored (autoResubscribe): a publish is heard again.
  await untilWorks(async () => {
    await a.publish('after', { n: 1 });
    await b.getValue('barrier'); // a round trip on b's side before checking
    if (heard.length === 0) throw new StoreUnavailableError('not resubscribed yet');
  });
  t.same(heard[0], { n: 1 });
});

t.test('connect rejects with StoreUnavailableError when Redis cannot be reached; connect and close are idempotent', async (t) => {
  const s = new RedisTaskStore({ url: `redis://127.0.0.1:${await freePort()}`, keyPrefix: 'x:', maxTtlMs: 1000, commandTimeoutMs: 200, connectTimeoutMs: 300 });
  await t.rejects(s.connect(), StoreUnavailableError);
  await s.close();
  await s.close();
  const ok = await openStore(`b9:${randomUUID()}:`);
  await ok.connect();
  await ok.putValue('k', { v: 1 }, 60_000);
  t.same(await ok.getValue('k'), { v: 1 }, 'a second connect() leaves a connected store working');
  await ok.close();
  await ok.close();
  await t.rejects(ok.get(newId()), StoreUnavailableError, 'a closed store is unavailable');
});
