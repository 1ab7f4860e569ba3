/**
 * The era probe against real servers: the legacy fixture (SDK 1.32.2), the bundled demo upstream, a dual-era and
 * a modern-only `@modelcontextprotocol/server` 2.4.0 server, and the modern fixture routing by `_meta` and headers. Both questions are asked; what was learned (the
 * discover result, the initialize identity) comes back with the verdict; the probe's own session is ended.
 */
import http from 'node:http';
import net from 'node:net';
import t from 'tap';
import { startDemoUpstream } from '../../src/demo/demo-server.js';
import { downReason, UpstreamTimeoutError, UpstreamUnavailableError } from '../../src/upstream/index.js';
import { probeLegacy, probeUpstream } from '../../src/upstream/probe.js';
import { UpstreamNotMcpError } from '../../src/upstream/errors.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startRelay } from '../helpers/relay.js';
import { startWrongPathServer } from '../helpers/wrong-path-server.js';
import { startEraServer } from '../helpers/era-servers.js';

const target = (url: string) => ({ url, headers: {}, timeoutMs: 10_000 });

t.test('the legacy fixture: legacy only, with its identity; the probe’s session is ended with DELETE', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const relay = await startRelay(t);
  relay.setTarget(fixture.url);

  const eras = await probeUpstream(target(relay.url));
  t.same([eras.modern, eras.legacy], [false, true]);
  t.notOk(eras.discover, 'no DiscoverResult');
  t.equal(eras.identity?.protocolVersion, '2025-11-25');
  t.same(eras.identity?.serverInfo, { name: 'legacy-fixture-server', version: '1.0.0' });

  const del = await relay.waitFor((s) => s.method === 'DELETE');
  t.type(del.sessionId, 'string', 'DELETE names the probe’s session');
  t.same(
    relay.seen.map((s) => `${s.method} ${s.rpcMethod ?? ''}`.trim()).sort(),
    ['DELETE', 'POST initialize', 'POST server/discover'],
    'two questions and the DELETE, nothing else',
  );
});

t.test('the demo upstream (400 to server/discover): legacy only', async (t) => {
  const demo = await startDemoUpstream();
  t.teardown(() => demo.close());
  const eras = await probeUpstream(target(demo.url));
  t.same([eras.modern, eras.legacy], [false, true]);
  t.same(eras.identity?.serverInfo, { name: 'demo-legacy-server', version: '1.0.0' });
});

t.test('a dual-era server whose discover lists 2026-07-28 only: modern at once, 2025-11-25 when asked for it', async (t) => {
  const server = await startEraServer('stateless');
  t.teardown(() => server.close());
  const eras = await probeUpstream(target(server.url));
  t.same([eras.modern, eras.legacyUnasked], [true, true], 'modern; its 2025-11-25 side not asked yet');
  t.same(eras.discover?.supportedVersions, ['2026-07-28'], 'its own list names the modern version only');
  t.same((eras.discover?._meta as any)?.['io.modelcontextprotocol/serverInfo'], { name: 'era-test-server', version: '2.4.0' });
  const discover = server.seen.find((s) => s.rpcMethod === 'server/discover');
  t.equal(discover?.headers['mcp-protocol-version'], '2026-07-28', 'discover carries the modern headers');
  t.equal(discover?.headers['mcp-method'], 'server/discover');
  t.notOk(
    server.seen.some((s) => s.rpcMethod === 'initialize'),
    'no bare initialize to a server that answered server/discover',
  );

  const legacy = await probeLegacy(target(server.url));
  t.equal(legacy.legacy, true, 'asked, it speaks 2025-11-25 too');
  t.equal(legacy.identity?.protocolVersion, '2025-11-25');
  const init = server.seen.find((s) => s.rpcMethod === 'initialize');
  t.same(
    [init?.headers['mcp-protocol-version'], init?.headers['mcp-method'], init?.body.params._meta],
    [undefined, undefined, undefined],
    'the initialize a 2025-11-25 client sends: no version header, no Mcp-Method, no _meta',
  );
  t.same(init?.body.params, { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'mcp-tasks-gateway', version: 'probe' } });
});

t.test('a dual-era server routing by _meta and headers (as the reference everything-server): its 2025-11-25 side found', async (t) => {
  // It sends any POST with 2026-07-28 markers to its 2026-07-28 side, which refuses initialize with -32022: an
  // initialize carrying them would find no 2025-11-25 side.
  const fixture = await startModernFixture({ mode: 'dual', dualRouting: 'meta' });
  t.teardown(() => fixture.close());
  const eras = await probeUpstream(target(fixture.url));
  t.same([eras.modern, eras.legacyUnasked], [true, true], 'modern; its 2025-11-25 side not asked yet');
  t.same((eras.discover?._meta as any)?.['io.modelcontextprotocol/serverInfo'], { name: 'modern-fixture-stateless-server', version: '1.0.0' });
  const legacy = await probeLegacy(target(fixture.url));
  t.equal(legacy.legacy, true, 'asked, it speaks 2025-11-25 too');
  t.same(legacy.identity?.serverInfo, { name: 'modern-fixture-server', version: '1.0.0' }, 'the identity of its 2025-11-25 side');
  t.equal(fixture.stats().legacySessionsOpened, 1, 'the initialize opened a session on its 2025-11-25 side');
});

t.test('a modern-only server (initialize refused): modern only', async (t) => {
  const server = await startEraServer('reject');
  t.teardown(() => server.close());
  const eras = await probeUpstream(target(server.url));
  t.same([eras.modern, eras.legacy], [true, false]);
  t.ok(eras.discover);
  t.notOk(eras.identity);
  t.same(await probeLegacy(target(server.url)), { legacy: false }, 'asked, it refuses 2025-11-25');
});

t.test('server/discover refused with -32022 listing 2026-07-28: asked again once, its DiscoverResult learned', async (t) => {
  const seen: Array<{ method: string; version: unknown }> = [];
  let refused = false;
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text || '{}');
      seen.push({ method: body.method, version: req.headers['mcp-protocol-version'] });
      if (!refused) {
        refused = true;
        const error = { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'], requested: 'x' } };
        return res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error }));
      }
      const result = { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} }, serverInfo: { name: 'picky', version: '1' } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const eras = await probeUpstream(target(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`));
  t.equal(eras.modern, true);
  t.match(eras.discover, { capabilities: { tools: {} } }, 'the retry got the DiscoverResult');
  t.same(
    seen,
    [
      { method: 'server/discover', version: '2026-07-28' },
      { method: 'server/discover', version: '2026-07-28' },
    ],
    'one retry, with the version its list names; no initialize',
  );
});

/** A raw server answering `server/discover` with `error` (HTTP 400) and `initialize` with 400 too. */
async function refusingServer(t: { teardown(fn: () => unknown): void }, error: Record<string, unknown>): Promise<string> {
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text);
      const payload = body.method === 'server/discover' ? error : { code: -32600, message: 'initialize is not served here' };
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id, error: payload }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`;
}

t.test('a recognised modern error to discover means modern; a legacy one does not', async (t) => {
  const cases: Array<[string, Record<string, unknown>, boolean]> = [
    ['-32020 header mismatch', { code: -32020, message: 'Mcp-Method does not match' }, true],
    ['-32021 missing capability', { code: -32021, message: 'needs elicitation', data: { requiredCapabilities: { elicitation: {} } } }, true],
    ['-32022 listing our version', { code: -32022, message: 'unsupported', data: { supported: ['2026-07-28', '2027-01-01'], requested: 'x' } }, true],
    ['-32022 not listing it', { code: -32022, message: 'unsupported', data: { supported: ['2027-01-01'], requested: '2026-07-28' } }, false],
    ['-32000 no valid session', { code: -32000, message: 'Bad Request: no valid session ID provided' }, false],
    ['-32601 method not found', { code: -32601, message: 'Method not found' }, false],
  ];
  for (const [name, error, modern] of cases) {
    const eras = await probeUpstream(target(await refusingServer(t, error)));
    t.same([eras.modern, eras.legacy], [modern, false], name);
  }
});

t.test('a wrong path (404 and an HTML page to both questions): UpstreamNotMcpError naming what it answered', async (t) => {
  const error = await probeUpstream(target(await startWrongPathServer(t))).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(error instanceof UpstreamNotMcpError, 'no MCP server there: the probe fails, it does not read "up, no era"');
  t.equal(downReason(error), 'HTTP 404 text/html to server/discover and initialize', 'the reason says what it answered');
  t.equal((error as Error).message, 'Upstream unavailable: no MCP answer: HTTP 404 text/html to server/discover and initialize');
});

t.test('401 without JSON-RPC to both questions is a refusal for want of credentials, not "no MCP server"', async (t) => {
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(401, { 'content-type': 'text/html', 'www-authenticate': 'Bearer' }).end('<html>login</html>'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const eras = await probeUpstream(target(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`));
  t.equal(eras.refused, true);
});

t.test('nobody listening: UpstreamUnavailableError', async (t) => {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  await t.rejects(probeUpstream(target(`http://127.0.0.1:${port}/mcp`)), UpstreamUnavailableError);
});

t.test('a server that accepts and never answers: UpstreamTimeoutError after the probe’s bound', async (t) => {
  const sockets = new Set<net.Socket>();
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => srv.close(() => resolve()));
  });
  const port = (srv.address() as net.AddressInfo).port;
  await t.rejects(probeUpstream({ url: `http://127.0.0.1:${port}/mcp`, headers: {}, timeoutMs: 200 }), UpstreamTimeoutError);
});

t.test('the caller’s signal ends the probe with the caller’s reason', async (t) => {
  const srv = net.createServer((s) => s.on('error', () => {}));
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())));
  const port = (srv.address() as net.AddressInfo).port;
  const controller = new AbortController();
  const probing = probeUpstream({ url: `http://127.0.0.1:${port}/mcp`, headers: {}, timeoutMs: 60_000 }, controller.signal);
  const reason = new Error('gateway closing');
  controller.abort(reason);
  await t.rejects(probing, reason);
});
