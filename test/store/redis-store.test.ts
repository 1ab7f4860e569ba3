/**
 * The Redis store against a real redis-server on a loopback port: the TaskStore contract suite (two store objects on
 * one server and prefix are two gateway instances; two prefixes share nothing), then what only Redis has: every key
 * carries a TTL (docs/architecture.md §5 "every Redis key a TTL"), a stopped Redis makes every method fail fast with
 * StoreUnavailableError, and a restarted one is used again by the same store object, subscriptions included. Skipped,
 * with the reason printed, only when there is no redis-server binary (and no REDIS_URL).
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import t from 'tap';
import { RedisTaskStore, StoreUnavailableError } from '../../src/store/index.js';
import type { RedisStoreOptions } from '../../src/store/redis-store.js';
import type { JsonObject } from '../../src/translate/index.js';
import { redisAvailable, redisForTest, serverBinaryMissing, startRedis } from '../helpers/redis-server.js';
import { eventually, everyMethod, rec, rejectsUnavailable, storeContract } from '../helpers/store-contract.js';

const LONG_MS = 600_000;
/** Every key this run writes starts with this, whichever server it runs on. */
const ROOT = `mcpgw-test-${randomUUID().slice(0, 8)}:`;
const DEFAULTS = { maxTtlMs: 86_400_000, commandTimeoutMs: 1_000, connectTimeoutMs: 1_000 };

async function connected(opts: Partial<RedisStoreOptions> & { url: string }): Promise<RedisTaskStore> {
  const store = new RedisTaskStore({ keyPrefix: `${ROOT}${randomUUID().slice(0, 8)}:`, ...DEFAULTS, ...opts });
  await store.connect();
  return store;
}

const missing = redisAvailable();
if (missing) t.comment(`Redis store tests skipped: ${missing}`);

t.test('redis store', { skip: missing ?? false }, async (t) => {
  // A server of its own (no REDIS_URL) holds this suite's keys only: then every key must carry a store's prefix.
  const own = !process.env['REDIS_URL'];
  const url = await redisForTest(t);

  storeContract(t, 'redis', async ({ maxTtlMs }) => {
    const keyPrefix = `${ROOT}${randomUUID().slice(0, 8)}:`;
    const opts = { url, keyPrefix, ...(maxTtlMs !== undefined ? { maxTtlMs } : {}) };
    return {
      store: await connected(opts),
      // Another gateway instance: its own store object (own connections) on the same server and prefix.
      peer: () => connected(opts),
      isolated: () => connected({ ...opts, keyPrefix: `${ROOT}${randomUUID().slice(0, 8)}:` }),
    };
  });

  t.test('every key has a TTL', async (t) => {
    const store = await connected({ url });
    const peer = await connected({ url, keyPrefix: store.opts.keyPrefix });
    t.teardown(async () => {
      await store.close();
      await peer.close();
    });
    // A workload that touches every kind of key; the contract suite above has left its own keys too.
    const [a, b, c, d] = [rec(), rec({ session: 's1' }), rec({ status: 'input_required' }), rec()];
    for (const r of [a, b, c, d]) await store.create(r, LONG_MS);
    await store.replace({ ...a, status: 'completed' }, 0);
    await peer.update(b.taskId, (r) => ({ ...r, statusMessage: 'x' }));
    await store.list({ principal: 'principal-a', upstream: 'up-1', limit: 2 });
    await store.list({ principal: 'principal-a', upstream: 'up-1', session: 's1', limit: 2 });
    await store.activeCount('principal-a');
    await store.acquireLease(b.taskId, 'inst-a', LONG_MS);
    await store.acquireLease(c.taskId, 'inst-a', LONG_MS);
    await store.acquireLease(d.taskId, 'inst-a', LONG_MS);
    await store.releaseLease(c.taskId, 'inst-a', 'handover');
    await store.releaseLease(d.taskId, 'inst-a', 'drop');
    await peer.claimExpiredLeases('inst-b', LONG_MS, 10);
    await store.renewLeases('inst-a', [b.taskId], LONG_MS);
    await store.putValue('sess:1', { a: 1 }, LONG_MS);
    await store.putValue('sess:2', { a: 1 }, LONG_MS, { ifAbsent: true });
    await store.touchValue('sess:1', LONG_MS);
    const off = await store.subscribe('topic', () => {});
    await peer.publish('topic', { n: 1 });
    off();

    const raw = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
    await raw.connect();
    t.teardown(() => raw.quit());
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await raw.scan(cursor, 'MATCH', own ? '*' : `${ROOT}*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...batch);
    } while (cursor !== '0');
    t.ok(
      keys.some((k) => k.startsWith(store.opts.keyPrefix)),
      `the workload's keys are there (${keys.length} keys in all)`,
    );
    const noTtl: string[] = [];
    for (const key of keys) {
      const pttl = await raw.pttl(key);
      // -2: expired between SCAN and PTTL (fine); -1: no TTL (a leak).
      if (pttl === -1) noTtl.push(key);
    }
    t.same(noTtl, [], 'no key without a TTL');
    if (own)
      t.same(
        keys.filter((k) => !k.startsWith(ROOT)),
        [],
        'every key starts with its store’s prefix',
      );
  });
});

t.test('redis outage', { skip: serverBinaryMissing() ?? false }, async (t) => {
  const COMMAND_MS = 300;
  // Generous: the outcome asserted is "rejects, and does not hang", not a duration.
  const BOUND_MS = 5 * (COMMAND_MS + 200);

  for (const how of ['stop', 'kill'] as const) {
    t.test(`Redis ${how === 'stop' ? 'stopped' : 'killed'}: every method fails fast; restarted: the same store works again`, async (t) => {
      const server = await startRedis();
      t.teardown(() => server.stop());
      const opts = { url: server.url, commandTimeoutMs: COMMAND_MS, connectTimeoutMs: COMMAND_MS };
      const store = await connected(opts);
      t.teardown(() => store.close());
      const heard: JsonObject[] = [];
      await store.subscribe('events', (m) => heard.push(m));
      const r = rec();
      await store.create(r, LONG_MS);
      await store.putValue('v', { a: 1 }, LONG_MS);

      await server[how]();
      const calls = everyMethod(store, r);
      // Twice: as the connection drops, and again while the client is trying to reconnect.
      for (const round of ['at once', 'while reconnecting']) {
        await Promise.all(calls.map(([name, call]) => rejectsUnavailable(t, `${name} (${round})`, call(), BOUND_MS)));
      }
      const fresh = new RedisTaskStore({ keyPrefix: store.opts.keyPrefix, ...DEFAULTS, ...opts });
      await rejectsUnavailable(t, 'connect() of a new store', fresh.connect(), BOUND_MS);
      await fresh.close();

      await server.restart();
      await eventually(
        'the same store object answers again',
        async () => {
          try {
            await store.get(r.taskId);
            return true;
          } catch (err) {
            if (!(err instanceof StoreUnavailableError)) throw err;
            return false;
          }
        },
        15_000,
      );
      t.equal(await store.get(r.taskId), undefined, 'the restarted Redis is empty (nothing persisted)');
      const after = rec();
      await store.create(after, LONG_MS);
      t.same(await store.get(after.taskId), after, 'create and get work again');
      const other = await connected({ ...opts, keyPrefix: store.opts.keyPrefix });
      t.teardown(() => other.close());
      // At most once: a message published while the subscription is being restored may be lost, so publish until one
      // arrives (bounded).
      let n = 0;
      await eventually(
        'the subscription made before the outage hears events again',
        async () => {
          await other.publish('events', { n: ++n });
          return heard.length > 0;
        },
        15_000,
      );
      t.ok(
        heard.every((m) => typeof m['n'] === 'number' && m['n'] > 0),
        'only messages published after the restart',
      );
    });
  }

  t.test('Redis hangs (SIGSTOP): every method fails fast; thawed: the same store works again, data intact', async (t) => {
    const server = await startRedis();
    t.teardown(() => server.stop());
    const opts = { url: server.url, commandTimeoutMs: COMMAND_MS, connectTimeoutMs: COMMAND_MS };
    const store = await connected(opts);
    t.teardown(() => store.close());
    const heard: JsonObject[] = [];
    await store.subscribe('events', (m) => heard.push(m));
    const r = rec({ principal: 'kept', upstream: 'kept' });
    await store.create(r, LONG_MS);
    // The calls made while Redis hangs are about another record: a timed-out write may still apply once it thaws.
    const victim = rec();
    await store.create(victim, LONG_MS);

    server.pause();
    // Connections stay open and nothing answers: only the command bound ends each call.
    await Promise.all(everyMethod(store, victim).map(([name, call]) => rejectsUnavailable(t, `${name} (hung)`, call(), BOUND_MS)));
    const err = await store.getValue('k').catch((e: unknown) => e);
    t.ok(err instanceof StoreUnavailableError && err.cause instanceof Error, 'the low-level cause is kept', { found: String(err) });
    server.resume();

    await eventually(
      'the same store object answers again',
      async () => {
        try {
          return (await store.get(r.taskId)) !== undefined;
        } catch (err) {
          if (!(err instanceof StoreUnavailableError)) throw err;
          return false;
        }
      },
      15_000,
    );
    t.same(await store.get(r.taskId), r, 'the record is intact and is the right reply (no reply of a timed-out command taken for it)');
    t.equal(await store.activeCount('kept'), 1);
    t.same(await store.list({ principal: 'kept', upstream: 'kept', limit: 10 }), { tasks: [r], more: false });
    let n = 0;
    await eventually(
      'the subscription made before the hang hears events again',
      async () => {
        await store.publish('events', { n: ++n });
        return heard.length > 0;
      },
      15_000,
    );
    t.pass('events flow again');
  });

  t.test('connect() twice leaves a working store; a closed store is unavailable', async (t) => {
    const server = await startRedis();
    t.teardown(() => server.stop());
    const store = await connected({ url: server.url });
    await store.connect();
    await Promise.all([store.connect(), store.connect()]);
    await store.putValue('k', { v: 1 }, LONG_MS);
    t.same(await store.getValue('k'), { v: 1 }, 'still connected');
    await store.close();
    await store.close();
    await t.rejects(store.get(rec().taskId), StoreUnavailableError, 'get after close');
    await t.rejects(store.connect(), StoreUnavailableError, 'connect after close');
  });

  t.test('connect() to a Redis that is not there fails fast', async (t) => {
    const server = await startRedis();
    await server.stop();
    const store = new RedisTaskStore({ keyPrefix: `${ROOT}x:`, ...DEFAULTS, url: server.url, commandTimeoutMs: COMMAND_MS, connectTimeoutMs: COMMAND_MS });
    await rejectsUnavailable(t, 'connect()', store.connect(), BOUND_MS);
    await store.close();
    await store.close();
  });
});
