/**
 * The Redis store on a hung Redis (SIGSTOP on a real redis-server): a `subscribe` that timed out rejects with
 * `StoreUnavailableError`, and once Redis answers again it keeps no subscription that no listener owns (the late
 * SUBSCRIBE is taken back). Skipped, with the reason printed, when there is no redis-server binary.
 */
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import t from 'tap';
import { RedisTaskStore, StoreUnavailableError } from '../../src/store/index.js';
import { serverBinaryMissing, startRedis } from '../helpers/redis-server.js';

const missing = serverBinaryMissing();
if (missing) t.comment(`skipped: ${missing}`);

t.test('a subscribe that timed out on a hung Redis leaves no subscription once Redis answers', { skip: missing ?? false }, async (t) => {
  const server = await startRedis();
  t.teardown(() => server.stop());
  const prefix = `late:${randomUUID()}:`;
  const store = new RedisTaskStore({ url: server.url, keyPrefix: prefix, maxTtlMs: 600_000, commandTimeoutMs: 200, connectTimeoutMs: 1_000 });
  await store.connect();
  t.teardown(() => store.close());

  server.pause();
  try {
    await t.rejects(
      store.subscribe('late', () => {}),
      StoreUnavailableError,
      'rejects while Redis is hung',
    );
  } finally {
    server.resume();
  }
  // The subscriber connection is answered in order: once this subscription is acknowledged, Redis has handled the
  // late SUBSCRIBE and whatever the store sent after it.
  const off = await store.subscribe('barrier', () => {});
  t.teardown(off);

  const raw = new Redis(server.url, { lazyConnect: true });
  await raw.connect();
  t.teardown(() => raw.quit());
  t.same(await raw.pubsub('NUMSUB', `${prefix}ev:late`), [`${prefix}ev:late`, 0], 'no subscription to the topic that failed');
  t.same(await raw.pubsub('NUMSUB', `${prefix}ev:barrier`), [`${prefix}ev:barrier`, 1], 'the later one is there');

  // And the topic works when asked again.
  let heard!: (m: unknown) => void;
  const message = new Promise((r) => (heard = r));
  const offLate = await store.subscribe('late', (m) => heard(m));
  t.teardown(offLate);
  await store.publish('late', { n: 1 });
  t.same(await message, { n: 1 });
});
