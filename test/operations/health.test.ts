/**
 * Health: `/healthz` says the process is up, `/readyz` whether it can serve (the store answers, every upstream's era
 * is known and it is not down). Real parts only: the legacy fixture server stopped and started again on the same
 * port, a real redis-server stopped and started again on the same port. Flips are awaited by polling `/readyz` with a
 * bounded wait; bodies are checked for anything sensitive (URLs, credentials).
 */
import { randomBytes } from 'node:crypto';
import t, { type Test } from 'tap';
import type { Gateway, GatewayDeps } from '../../src/app.js';
import { Readiness } from '../../src/proxy/health.js';
import { UpstreamAvailability } from '../../src/upstream/index.js';
import { startLegacyFixture, type LegacyFixture } from '../fixtures/legacy-server.js';
import { startGateway } from '../helpers/gateway.js';
import { LogLines } from '../helpers/log-lines.js';
import { post } from '../helpers/modern.js';
import { serverBinaryMissing, startRedis } from '../helpers/redis-server.js';
import { startRelay, type Seen } from '../helpers/relay.js';
import { startWrongPathServer } from '../helpers/wrong-path-server.js';

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

/** A 2025-11-25 client's request, as its transport POSTs it (raw: what it receives is what is checked). */
async function legacyPost(
  base: string,
  method: string,
  session?: string,
): Promise<{ status: number; contentType: string | null; session: string | null; text: string }> {
  const params = method === 'initialize' ? { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'health-test', version: '1' } } : {};
  const res = await fetch(new URL('/mcp', base), {
    method: 'POST',
    headers: {
      authorization: TOKEN,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method, params }),
  });
  return { status: res.status, contentType: res.headers.get('content-type'), session: res.headers.get('mcp-session-id'), text: await res.text() };
}

/** Resolves once the relay has seen `count` requests matching `pred` in all. */
async function seenTimes(relay: { seen: Seen[]; waitFor(p: (s: Seen) => boolean): Promise<Seen> }, pred: (s: Seen) => boolean, count: number): Promise<void> {
  while (relay.seen.filter(pred).length < count) {
    const before = relay.seen.length;
    await relay.waitFor((s) => pred(s) && relay.seen.indexOf(s) >= before);
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

async function gatewayFor(upstreamUrl: string, extra: Record<string, unknown> = {}, deps: GatewayDeps = {}): Promise<{ gateway: Gateway; base: string }> {
  const cfg = {
    server: { readiness: { upstreamCheckMs: 100, storeCacheMs: 0 } },
    ...extra,
    upstreams: [{ name: 'fixture', path: '/mcp', url: upstreamUrl }],
  };
  const { gateway, origin } = await startGateway(cfg, { deps });
  return { gateway, base: origin };
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
  t.same(down.body.checks.upstreams, [{ name: 'fixture', state: 'down', reason: 'connection refused' }], 'named, with why');
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

t.test('a wrong path (404 HTML to both era questions) is down with the reason, said once at start; back up once it comes right', async (t) => {
  const wrong = await startWrongPathServer(t);
  const relay = await startRelay(t);
  relay.setTarget(wrong);
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const log = new LogLines();
  const { gateway, base } = await gatewayFor(relay.url, {}, { logger: { level: 'info', stream: log.stream } as never });
  t.teardown(() => gateway.close());
  const isDownLine = (l: Record<string, any>) => l.msg === 'upstream is down' && l.upstream === 'fixture';

  // No request at all: the probe at start finds it and says so at warn, naming the upstream and what it answered.
  const warned = await log.waitFor(isDownLine, 'the warn line of the probe at start');
  t.equal(warned.level, 40, 'at warn');
  t.equal(warned.reason, 'HTTP 404 text/html to server/discover and initialize');

  const health = await get(base, '/healthz');
  t.equal(health.status, 200, '/healthz itself stays 200: the process is alive');
  t.match(health.body.upstreams[0], { name: 'fixture', state: 'down', reason: 'HTTP 404 text/html to server/discover and initialize' });
  revealsNothing(t, health, [relay.url, wrong], 'healthz with a reason');
  const ready = await readyzBecomes(base, 503, 'a wrong path');
  t.same(ready.body.failed, ['upstream:fixture'], 'not ready: its one upstream is no MCP server');
  t.same(
    ready.body.checks.upstreams,
    [{ name: 'fixture', state: 'down', reason: 'HTTP 404 text/html to server/discover and initialize' }],
    'named, with what it answered',
  );

  // A 2025-11-25 client gets the catalogued JSON-RPC error with its status, never the upstream's page.
  const legacy = await legacyPost(base, 'initialize');
  t.equal(legacy.status, 503);
  t.match(legacy.contentType, /^application\/json/);
  t.match(JSON.parse(legacy.text), { jsonrpc: '2.0', id: 7, error: { code: -31003, message: /^Upstream unavailable: fixture is down/ } });
  t.notMatch(legacy.text, /<html/i, 'no HTML');

  // Requests and background re-probes (two more) find the same: nothing more is said.
  const modern = await post(new URL('/mcp', base).href, 'tools/list', {}, { headers: { authorization: TOKEN } });
  t.equal(modern.status, 503, 'a 2026-07-28 client is refused at once too');
  await seenTimes(relay, (s) => s.rpcMethod === 'initialize', 3);
  t.equal(log.lines.filter(isDownLine).length, 1, 'one warn line, not one per re-probe or request');

  // The path comes right (the relay now reaches the MCP server): the next re-probe finds it up, and that is said once.
  relay.setTarget(fixture.url);
  const back = await log.waitFor((l) => l.msg === 'upstream is back' && l.upstream === 'fixture', 'the upstream back');
  t.equal(back.level, 30, 'at info');
  t.match(back, { modern: false, legacy: true });
  await readyzBecomes(base, 200, 'the path came right');
  const up = await get(base, '/healthz');
  t.match(up.body.upstreams[0], { state: 'up', modern: false, legacy: true });
  t.notOk('reason' in up.body.upstreams[0], 'no reason once up');
  t.equal(log.lines.filter(isDownLine).length, 1, 'still the one warn line');
});

t.test('a passed-through 2025-11-25 client whose upstream starts answering HTML gets a JSON-RPC error, not the page', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const wrong = await startWrongPathServer(t);
  const relay = await startRelay(t);
  relay.setTarget(fixture.url);
  const { gateway, base } = await gatewayFor(relay.url);
  t.teardown(() => gateway.close());
  const opened = await legacyPost(base, 'initialize');
  t.equal(opened.status, 200, 'passed through to the 2025-11-25 upstream');
  t.type(opened.session, 'string');

  // The upstream's path now serves a web page: the next answers are not MCP.
  relay.setTarget(wrong);
  const init = await legacyPost(base, 'initialize');
  t.equal(init.status, 502, "the upstream's failure, as the catalog says (GW_UPSTREAM_HTTP)");
  t.match(init.contentType, /^application\/json/);
  t.same(JSON.parse(init.text), { jsonrpc: '2.0', id: 7, error: { code: -32603, message: 'Upstream unavailable: upstream answered HTTP 404' } });
  // In its session (unless the re-probe that answer asked for has already found the upstream down: 503 then).
  const inSession = await legacyPost(base, 'tools/list', opened.session as string);
  t.ok(inSession.status === 404 || inSession.status === 503, `404 (session gone) or 503 (upstream down): ${inSession.status}`);
  t.match(inSession.contentType, /^application\/json/);
  t.match(JSON.parse(inSession.text), { jsonrpc: '2.0', id: 7, error: { code: Number } });
  for (const answer of [init, inSession]) t.notMatch(answer.text, /<html/i, 'no HTML');
});

t.test('every upstream is probed at start without a request, its outcome said once at info', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const relay = await startRelay(t);
  relay.setTarget(fixture.url);
  const log = new LogLines();
  const { gateway, base } = await gatewayFor(relay.url, {}, { logger: { level: 'info', stream: log.stream } as never });
  t.teardown(() => gateway.close());
  const isUpLine = (l: Record<string, any>) => l.msg === 'upstream is up' && l.upstream === 'fixture';
  const line = await log.waitFor(isUpLine, 'the outcome of the probe at start');
  t.match(line, { level: 30, modern: false, legacy: true });
  t.ok(
    relay.seen.some((s) => s.rpcMethod === 'initialize'),
    'the probe reached the upstream with no request made',
  );
  // Re-probes that find the same say nothing. Each is asked by readiness (an upstream it finds up is re-probed in the
  // background) and awaited by the DELETE of its session: by then its outcome is in effect (probe.ts sends it before
  // the probe returns, and the relay sees it only after).
  for (let n = 2; n <= 3; n++) {
    await get(base, '/readyz');
    await seenTimes(relay, (s) => s.method === 'DELETE', n);
  }
  t.equal(log.lines.filter(isUpLine).length, 1, 'said once');
  t.equal(log.lines.filter((l) => l.upstream === 'fixture' && l.level >= 40).length, 0, 'nothing at warn');
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
