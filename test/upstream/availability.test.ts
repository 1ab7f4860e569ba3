/**
 * UpstreamAvailability against real servers: an upstream that is down is remembered and re-probed in the
 * background with bounded exponential backoff; callers are refused at once meanwhile; once it answers, its eras
 * are known again. A pinned era is not probed until traffic says something is wrong. Every wait here is on an
 * event (a probe's outcome), never on a timer of the test's own.
 */
import http from 'node:http';
import net from 'node:net';
import t from 'tap';
import { UpstreamAvailability, UpstreamDownError, UpstreamUnavailableError, type AvailabilityChange, type UpstreamEras } from '../../src/upstream/index.js';
import { probeLegacy, probeUpstream } from '../../src/upstream/probe.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startEraServer } from '../helpers/era-servers.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

// The availability's timers are unref()ed (they must not hold a gateway open); while a test awaits a background
// probe with nothing else open, this keeps the process alive. Not a wait: it never ends anything.
const keepAlive = setInterval(() => {}, 60_000);
t.teardown(() => clearInterval(keepAlive));

/** A port nothing listens on (bound then released). */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** Records every probe outcome and lets the test await the next ones. */
function changes(a: UpstreamAvailability): { all: AvailabilityChange[]; next(match?: (c: AvailabilityChange) => boolean): Promise<AvailabilityChange> } {
  const all: AvailabilityChange[] = [];
  const waiters: Array<{ match: (c: AvailabilityChange) => boolean; resolve: (c: AvailabilityChange) => void }> = [];
  a.onChange((c) => {
    all.push(c);
    for (const w of [...waiters]) {
      if (w.match(c)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(c);
      }
    }
  });
  return { all, next: (match = () => true) => new Promise((resolve) => waiters.push({ match, resolve })) };
}

/** A probe that counts its calls. */
function counted(url: string): { probe: (signal: AbortSignal) => Promise<UpstreamEras>; calls: () => number } {
  let n = 0;
  return {
    probe: (signal) => {
      n++;
      return probeUpstream({ url, headers: {}, timeoutMs: 5_000 }, signal);
    },
    calls: () => n,
  };
}

function availability(t: Teardown, opts: ConstructorParameters<typeof UpstreamAvailability>[0]): UpstreamAvailability {
  const a = new UpstreamAvailability(opts);
  t.teardown(() => a.close());
  return a;
}

t.test(
  'a dead upstream: the first caller gets the probe’s error, later ones UpstreamDownError at once; backoff doubles up to its bound; recovery',
  async (t) => {
    const port = await closedPort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const probe = counted(url);
    const a = availability(t, { name: 'dead', probe: probe.probe, initialBackoffMs: 10, maxBackoffMs: 40 });
    const seen = changes(a);

    await t.rejects(a.eras(), UpstreamUnavailableError, 'the first caller: the probe’s own failure');
    t.equal(probe.calls(), 1);
    t.ok(a.isDown);
    const calls = probe.calls();
    const refusal = await a.eras().then(
      () => undefined,
      (e: unknown) => e,
    );
    t.type(refusal, UpstreamDownError, 'the next caller is refused without a probe');
    t.ok((refusal as UpstreamDownError).retryAfterMs <= 10, 'with when the gateway looks again');
    t.equal(probe.calls(), calls, 'no probe for the refused caller');

    // Four failed background probes: the waits double and stop at the bound.
    while (seen.all.length < 5) await seen.next();
    t.same(
      seen.all.map((c) => (c.up ? 'up' : c.retryInMs)),
      [10, 20, 40, 40, 40],
      'bounded exponential backoff',
    );

    const server = await startEraServer('stateless', port);
    t.teardown(() => server.close());
    const up = await seen.next((c) => c.up);
    t.same(up.up && [up.eras.modern, up.eras.legacyUnasked], [true, true], 'modern; its 2025-11-25 side not asked by the probe');
    t.notOk(a.isDown);
    const eras = await a.eras();
    t.same([eras.modern, eras.legacy], [true, false], 'known again');
    t.same(a.current?.discover?.supportedVersions, ['2026-07-28'], 'what the probe learned is kept');
  },
);

t.test('a pinned era: no probe until traffic is suspicious; then only a liveness check, the pin stays', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const probe = counted(fixture.url);
  const pinned = { modern: true, legacy: true };
  const a = availability(t, { name: 'pinned', probe: probe.probe, pinned });
  const seen = changes(a);
  t.same(await a.eras(), pinned);
  t.same(await a.eras(), pinned);
  t.equal(probe.calls(), 0, 'not probed');

  a.suspect();
  const change = await seen.next();
  t.equal(probe.calls(), 1, 'one liveness probe');
  t.same(change.up && change.eras, pinned, 'the legacy-only answer does not override the pin');
  t.same(await a.eras(), pinned);
});

t.test('suspect(): callers keep what is known meanwhile; re-probes are coalesced and spaced', async (t) => {
  const server = await startEraServer('stateless');
  t.teardown(() => server.close());
  const probe = counted(server.url);
  const a = availability(t, { name: 'dual', probe: probe.probe, minReprobeMs: 50 });
  const seen = changes(a);
  const first = await a.eras();
  t.equal(probe.calls(), 1);

  a.suspect();
  a.suspect();
  a.suspect();
  t.equal(await a.eras(), first, 'a caller does not wait for the re-probe');
  await seen.next();
  t.equal(probe.calls(), 2, 'three suspicions, one re-probe');
  t.equal(seen.all.length, 2, 'the first probe and the one re-probe');
});

t.test('suspect() on an upstream that has gone: it becomes down, callers are refused at once', async (t) => {
  const fixture = await startLegacyFixture();
  const probe = counted(fixture.url);
  const a = availability(t, { name: 'gone', probe: probe.probe, minReprobeMs: 1, initialBackoffMs: 60_000 });
  const seen = changes(a);
  t.same((await a.eras()).legacy, true);
  await fixture.close();
  a.suspect();
  const change = await seen.next();
  t.equal(change.up, false);
  await t.rejects(a.eras(), UpstreamDownError);
});

t.test('close() is idempotent; a probe started after it is aborted, not left running', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const a = new UpstreamAvailability({ name: 'closing', probe: counted(fixture.url).probe });
  a.close();
  a.close();
  await t.rejects(a.eras(), { message: 'the gateway is closing' }, 'the live upstream is not asked: the probe’s signal is already aborted');
});

t.test('a question left unanswered is asked again, not taken as a "no"; a 2025-11-25 side is asked when a 2025-11-25 client needs it', async (t) => {
  // A raw server (a real server's wire, written out) that answers initialize, and server/discover only from its
  // second time on: the first probe's discover times out.
  let discovers = 0;
  const initializes: Array<{ headers: http.IncomingHttpHeaders; meta: unknown }> = [];
  const hung: http.ServerResponse[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text || '{}');
      const json = (payload: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      if (body.method === 'server/discover' && ++discovers === 1) return void hung.push(res);
      if (body.method === 'server/discover') {
        return json({
          jsonrpc: '2.0',
          id: body.id,
          result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: {}, ttlMs: 0, cacheScope: 'private' },
        });
      }
      if (body.method === 'initialize') {
        initializes.push({ headers: req.headers, meta: body.params?._meta });
        return json({
          jsonrpc: '2.0',
          id: body.id,
          result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'slow-start', version: '1' } },
        });
      }
      res.writeHead(405).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`;
  const target = { url, headers: {}, timeoutMs: 200 };
  const a = availability(t, {
    name: 'slow',
    probe: (signal) => probeUpstream(target, signal),
    probeLegacy: (signal) => probeLegacy(target, signal),
    minReprobeMs: 1,
  });
  const seen = changes(a);

  const first = await a.eras();
  t.same([first.modern, first.legacy, first.incomplete], [false, true, true], 'legacy known, modern not yet');
  t.equal(initializes.length, 1, 'initialize asked once discover got no answer');
  const second = await seen.next();
  t.same(
    second.up && [second.eras.modern, second.eras.legacyUnasked, second.eras.incomplete],
    [true, true, undefined],
    'asked again: modern, its 2025-11-25 side left for later',
  );
  t.equal(initializes.length, 1, 'no initialize to a server that answered server/discover');
  const [one, two] = await Promise.all([a.legacyEras(), a.legacyEras()]);
  t.same([one.modern, one.legacy, one.legacyUnasked], [true, true, undefined], 'a 2025-11-25 client: both eras');
  t.equal(one, two, 'concurrent callers share the answer');
  t.equal(initializes.length, 2, 'one initialize for them');
  const asked = initializes[1];
  t.same(
    [asked?.headers['mcp-protocol-version'], asked?.headers['mcp-method'], asked?.meta],
    [undefined, undefined, undefined],
    'asked as a 2025-11-25 client asks: no 2026-07-28 headers or _meta',
  );
  t.same((await a.eras()).identity?.serverInfo, { name: 'slow-start', version: '1' }, 'kept for everyone');
  t.equal(await a.legacyEras(), await a.eras(), 'asked once');
});

t.test('an upstream that refuses the probe for want of credentials: reachable, eras unknown, learned with a token', async (t) => {
  const { startOAuthUpstream, MCP_SCOPE } = await import('../fixtures/oauth-upstream.js');
  const up = await startOAuthUpstream({ inner: 'legacy' });
  t.teardown(() => up.close());
  const target = { url: up.url, headers: {}, timeoutMs: 5_000 };
  const probes = (authorization: string | undefined) => up.seen.filter((s) => s.rpc === 'server/discover' && s.authorization === authorization).length;

  // Spaced: after a refused credentialed probe, none for minReprobeMs (here longer than the test).
  const spaced = new UpstreamAvailability({
    name: 'oauth',
    probe: (signal, authorization) => probeUpstream(target, signal, authorization),
    minReprobeMs: 600_000,
  });
  t.teardown(() => spaced.close());
  t.match(await spaced.eras(), { modern: false, legacy: false, refused: true }, 'no credentials: refused');
  t.equal(spaced.state, 'up', 'it answered: up');
  t.equal(spaced.current, undefined, 'no eras are claimed');
  t.equal(spaced.erasRefused, true);
  t.match(await spaced.eras('Bearer bad'), { refused: true }, 'a bad token: still refused');
  await Promise.all(Array.from({ length: 5 }, () => spaced.eras('Bearer bad')));
  t.equal(probes('Bearer bad'), 1, 'one probe for the bad token, however many callers');
  const good = `Bearer ${up.issue(MCP_SCOPE)}`;
  t.match(await spaced.eras(good), { refused: true }, 'within minReprobeMs of a refused one: no probe, even for a good token');
  t.equal(probes(good), 0);

  const a = new UpstreamAvailability({ name: 'oauth', probe: (signal, authorization) => probeUpstream(target, signal, authorization), minReprobeMs: 0 });
  t.teardown(() => a.close());
  const seen = changes(a);
  t.match(await a.eras(), { refused: true });
  const [one, two] = await Promise.all([a.eras(good), a.eras(good)]);
  t.match(one, { modern: false, legacy: true }, 'learned with the token');
  t.equal(one, two, 'both callers share the answer');
  t.equal(probes(good), 1, 'one credentialed probe, joined');
  t.match(await a.eras(), { legacy: true }, 'the answer holds for callers without credentials');
  t.equal(a.erasRefused, false);
  // A re-probe without credentials (traffic, readiness) is refused again: what the token learned stays.
  const next = seen.next();
  a.suspect(true);
  t.match(await next, { up: true, eras: { legacy: true } }, 'up, with what is known');
  t.match(a.current, { modern: false, legacy: true }, 'the eras are kept');
  t.equal(probes(good), 1, 'no token was kept to re-probe with');
});
