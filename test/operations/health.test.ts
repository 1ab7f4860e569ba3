/**
 * Health: `/healthz` says the process is up, `/readyz` whether it can serve (the store answers, every upstream's era
 * is known and it is not down). Real parts only: the legacy fixture server stopped and started again on the same
 * port, a real redis-server stopped and started again on the same port. Flips are awaited by polling `/readyz` with a
 * bounded wait; bodies are checked for anything sensitive (URLs, credentials).
 */
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import { buildGateway, type Gateway } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { Readiness } from '../../src/proxy/index.js';
import { UpstreamAvailability } from '../../src/upstream/index.js';
import { startLegacyFixture, type LegacyFixture } from '../fixtures/legacy-server.js';
import { serverBinaryMissing, startRedis } from '../helpers/redis-server.js';

/** Bound on each awaited flip: the availability backoff after a short outage is a few seconds at most. */
const FLIP_BOUND_MS = 20_000;
const TOKEN = 'Bearer health-secret-token';

interface Probe {
  status: number;
  body: any;
  text: string;
}

async function get(base: string, path: string): Promise<Probe> {
  const res = await fetch(new URL(path, base), { headers: { authorization: TOKEN } });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text), text };
}

/** Polls `/readyz` until its status is `status` (bounded); returns that answer. */
async function readyzBecomes(base: string, status: number, what: string): Promise<Probe> {
  const deadline = Date.now() + FLIP_BOUND_MS;
  let last: Probe | undefined;
  for (;;) {
    last = await get(base, '/readyz');
    if (last.status === status) return last;
    if (Date.now() > deadline) throw new Error(`${what}: /readyz not ${status} within ${FLIP_BOUND_MS} ms; last: ${last.status} ${last.text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Nothing of a URL, an address or a credential in a health body. */
function revealsNothing(t: Test, p: Probe, secrets: string[], what: string): void {
  for (const s of [...secrets, 'http://', 'redis://', '127.0.0.1', 'authorization', TOKEN, 'health-secret-token']) {
    t.notOk(p.text.toLowerCase().includes(s.toLowerCase()), `${what}: the body does not contain ${JSON.stringify(s)}`);
  }
}

/** A gateway on a Redis store with short command timeouts (a stopped or frozen Redis shows within a second). */
function redisGatewayFor(upstreamUrl: string, redisUrl: string): Promise<{ gateway: Gateway; base: string }> {
  return gatewayFor(
    upstreamUrl,
    { store: { kind: 'redis', url: redisUrl, keyPrefix: `health-${randomBytes(4).toString('hex')}:`, commandTimeoutMs: 300, connectTimeoutMs: 5_000 } },
    { stateKey: randomBytes(32) },
  );
}

async function gatewayFor(upstreamUrl: string, extra: Record<string, unknown> = {}, deps: Parameters<typeof buildGateway>[1] = {}): Promise<{ gateway: Gateway; base: string }> {
  const cfg = parseConfig({
    server: { port: 0, readiness: { upstreamCheckMs: 100, storeCacheMs: 0 } },
    ...extra,
    upstreams: [{ name: 'fixture', path: '/mcp', url: upstreamUrl }],
  });
  const gateway = await buildGateway(cfg, { logger: false, ...deps });
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = gateway.app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : 0;
  return { gateway, base: `http://127.0.0.1:${port}` };
}

t.test('/readyz flips to 503 when the upstream goes away and back to 200 when it returns; /healthz stays 200', async (t) => {
  let fixture: LegacyFixture = await startLegacyFixture();
  const port = Number(new URL(fixture.url).port);
  const { gateway, base } = await gatewayFor(fixture.url);
  t.teardown(async () => {
    await gateway.close();
    await fixture.close();
  });

  const up = await readyzBecomes(base, 200, 'at start');
  t.same(up.body, { status: 'ready', failed: [], checks: { store: 'ok', upstreams: [{ name: 'fixture', state: 'up' }] } });
  revealsNothing(t, up, [fixture.url, String(port)], 'ready');

  await fixture.close();
  const down = await readyzBecomes(base, 503, 'upstream stopped');
  t.equal(down.body.status, 'not ready');
  t.same(down.body.failed, ['upstream:fixture'], 'the failed check is named');
  t.same(down.body.checks.upstreams, [{ name: 'fixture', state: 'down' }]);
  t.equal(down.body.checks.store, 'ok', 'the store is fine meanwhile');
  revealsNothing(t, down, [fixture.url, String(port)], 'not ready');

  const alive = await get(base, '/healthz');
  t.equal(alive.status, 200, '/healthz stays 200 while the upstream is away');
  t.equal(alive.body.status, 'ok');
  revealsNothing(t, alive, [fixture.url, String(port)], 'healthz');

  fixture = await startLegacyFixture({ port });
  const back = await readyzBecomes(base, 200, 'upstream restarted');
  t.same(back.body.failed, []);
  t.same(back.body.checks.upstreams, [{ name: 'fixture', state: 'up' }]);
  t.equal((await get(base, '/healthz')).status, 200);
});

t.test('readiness re-probes an upstream at most once per interval, never on every call', async (t) => {
  // A FAKE probe that counts: how often the upstream is asked is what no real server reports. The availability around
  // it is the real one, with its own spacing of re-probes off (minReprobeMs 0), so that only readiness spaces them.
  let probes = 0;
  const availability = new UpstreamAvailability({
    name: 'counted',
    minReprobeMs: 0,
    probe: async () => {
      probes++;
      return { modern: false, legacy: true };
    },
  });
  t.teardown(() => availability.close());
  const spaced = new Readiness({ upstreams: [{ name: 'counted', availability }], cacheMs: 0, upstreamCheckMs: 600_000 });
  t.equal((await spaced.check()).checks.upstreams[0]?.state, 'unknown', 'not asked yet: not ready, and a probe is started');
  await availability.eras();
  for (let i = 0; i < 50; i++) t.equal((await spaced.check()).status, 'ready');
  t.equal(probes, 1, 'fifty checks within the interval: the one first probe, no more');

  // The same with no interval: every check asks again (what the bound above prevents).
  const eager = new Readiness({ upstreams: [{ name: 'counted', availability }], cacheMs: 0, upstreamCheckMs: 0 });
  for (let i = 0; i < 5; i++) {
    await eager.check();
    await availability.eras();
  }
  t.ok(probes > 1, `with no interval the upstream is asked again (${probes} probes)`);
});

t.test('/readyz flips to 503 when Redis goes away and back to 200 when it returns', { skip: serverBinaryMissing() ?? false }, async (t) => {
  const redis = await startRedis();
  t.teardown(() => redis.stop());
  const fixture = await startLegacyFixture();
  const { gateway, base } = await redisGatewayFor(fixture.url, redis.url);
  t.teardown(async () => {
    await gateway.close();
    await fixture.close();
  });

  const up = await readyzBecomes(base, 200, 'at start');
  t.equal(up.body.checks.store, 'ok');
  revealsNothing(t, up, [redis.url, String(redis.port)], 'ready');

  await redis.stop();
  const down = await readyzBecomes(base, 503, 'redis stopped');
  t.same(down.body.failed, ['store'], 'the store check failed, and only it');
  t.equal(down.body.checks.store, 'unreachable');
  revealsNothing(t, down, [redis.url, String(redis.port)], 'not ready');
  const alive = await get(base, '/healthz');
  t.equal(alive.status, 200, '/healthz stays 200 while Redis is away');
  revealsNothing(t, alive, [redis.url, String(redis.port)], 'healthz');

  await redis.restart();
  const back = await readyzBecomes(base, 200, 'redis restarted');
  t.equal(back.body.checks.store, 'ok');
  t.equal((await get(base, '/healthz')).status, 200);
});

t.test('/readyz with Redis frozen answers within a bound (the ping is bounded by the command timeout)', { skip: serverBinaryMissing() ?? false }, async (t) => {
  const redis = await startRedis();
  t.teardown(() => redis.stop());
  const fixture = await startLegacyFixture();
  const { gateway, base } = await redisGatewayFor(fixture.url, redis.url);
  t.teardown(async () => {
    redis.resume();
    await gateway.close();
    await fixture.close();
  });
  await readyzBecomes(base, 200, 'at start');
  redis.pause();
  // Connections stay open and nothing answers: the answer must still come (503), not hang.
  const answer = await Promise.race([
    get(base, '/readyz'),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('/readyz hung on a frozen Redis')), 10_000)),
  ]);
  t.equal(answer.status, 503);
  t.same(answer.body.failed, ['store']);
  redis.resume();
  await readyzBecomes(base, 200, 'redis thawed');
});
