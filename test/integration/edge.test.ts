/**
 * The HTTP edge: Host/Origin checks, body parsing and limits, modern header validation, notifications,
 * legacy pass-through (GET streams, sessions), dead and restarted upstreams, clients that leave mid-call.
 */
import net from 'node:net';
import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startGateway } from '../helpers/gateway.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { MODERN, envelope, post } from '../helpers/modern.js';
import { startRelay, within } from '../helpers/relay.js';
import { startEraServer, untilServed } from '../helpers/era-servers.js';
import { SseReader, rawRequest } from '../helpers/sse-reader.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function stackFor(t: Teardown, config: Record<string, unknown> = {}): Promise<Stack> {
  const stack = await startStack(config);
  t.teardown(() => stack.close());
  return stack;
}

const MODERN_HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': MODERN,
  'mcp-method': 'server/discover',
};
const DISCOVER = JSON.stringify({ jsonrpc: '2.0', id: 'd1', method: 'server/discover', params: { _meta: envelope() } });

/** A port nothing listens on (bound then released). */
async function closedPort(): Promise<number> {
  const srv = net.createServer();
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const port = (srv.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => srv.close(() => resolve()));
  return port;
}

/** Opens a legacy (2025-11-25) session through the gateway with plain fetch; returns its id. */
async function legacySession(url: string): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'raw-legacy', version: '1' } },
    }),
  });
  const sid = res.headers.get('mcp-session-id');
  await res.text();
  if (res.status !== 200 || !sid) throw new Error(`initialize failed: ${res.status}`);
  const ack = await fetch(url, { method: 'POST', headers: legacyHeaders(sid), body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  await ack.text();
  return sid;
}

function legacyHeaders(sid: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    'mcp-session-id': sid,
  };
}

/** One legacy request in a session; returns the streaming response. */
function legacyPost(url: string, sid: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers: legacyHeaders(sid), body: JSON.stringify(body), ...(signal ? { signal } : {}) });
}

t.test('discover through the gateway', async (t) => {
  const stack = await stackFor(t);
  const r = await post(stack.url, 'server/discover');
  t.equal(r.status, 200);
  t.same(r.body.result.supportedVersions, ['2026-07-28']);
  t.same(r.body.result._meta['io.modelcontextprotocol/serverInfo'], { name: 'legacy-fixture-server', version: '1.0.0' });
});

t.test('Host and Origin checks', async (t) => {
  const stack = await stackFor(t);
  const port = new URL(stack.url).port;
  const send = (headers: Record<string, string>) => rawRequest(stack.url, { headers: { ...MODERN_HEADERS, ...headers }, body: DISCOVER });

  const evilHost = await send({ host: 'evil.example.com' });
  t.equal(evilHost.status, 403, 'evil Host');
  t.equal(JSON.parse(evilHost.text).error.code, -32600);
  t.equal((await send({ host: `evil.example.com:${port}` })).status, 403, 'evil Host with port');
  t.equal((await send({ host: 'localhost.evil.example.com' })).status, 403, 'loopback name as a prefix');

  const evilOrigin = await send({ host: `127.0.0.1:${port}`, origin: 'http://evil.example.com' });
  t.equal(evilOrigin.status, 403, 'evil Origin');
  t.equal((await send({ host: `127.0.0.1:${port}`, origin: 'null' })).status, 403, 'opaque Origin');

  const loopback = await send({ host: `127.0.0.1:${port}` });
  t.equal(loopback.status, 200, 'loopback Host with port');
  t.same(JSON.parse(loopback.text).result.supportedVersions, ['2026-07-28']);
  t.equal((await send({ host: `localhost:${port}` })).status, 200, 'localhost with port');
  t.equal((await send({ host: `localhost:${port}`, origin: 'http://localhost:5173' })).status, 200, 'loopback Origin');
  t.equal((await send({ host: `127.0.0.1:${port}` })).status, 200, 'no Origin');
});

t.test('IPv6 loopback Host and Origin are admitted like the IPv4 ones', async (t) => {
  const stack = await stackFor(t);
  const port = new URL(stack.url).port;
  const send = (headers: Record<string, string>) => rawRequest(stack.url, { headers: { ...MODERN_HEADERS, ...headers }, body: DISCOVER });
  t.equal((await send({ host: `[::1]:${port}` })).status, 200, 'Host [::1]:port');
  t.equal((await send({ host: `127.0.0.1:${port}`, origin: `http://[::1]:${port}` })).status, 200, 'Origin http://[::1]:port');
});

t.test('malformed JSON → 400, -32700, id null', async (t) => {
  const stack = await stackFor(t);
  const res = await fetch(stack.url, { method: 'POST', headers: MODERN_HEADERS, body: '{"jsonrpc":"2.0","id":1,' });
  t.equal(res.status, 400);
  const body = (await res.json()) as any;
  t.equal(body.jsonrpc, '2.0');
  t.equal(body.id, null);
  t.equal(body.error.code, -32700);
});

t.test('wrong Content-Type → 415', async (t) => {
  const stack = await stackFor(t);
  const res = await fetch(stack.url, { method: 'POST', headers: { ...MODERN_HEADERS, 'content-type': 'text/plain' }, body: DISCOVER });
  t.equal(res.status, 415);
  const body = (await res.json()) as any;
  t.equal(body.id, null);
  t.type(body.error.code, 'number');
});

t.test('body over server.bodyLimitBytes → 413; a small body still passes', async (t) => {
  const stack = await stackFor(t, { server: { bodyLimitBytes: 1024 } });
  const big = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'server/discover', params: { _meta: envelope(), pad: 'x'.repeat(2000) } });
  const res = await fetch(stack.url, { method: 'POST', headers: MODERN_HEADERS, body: big });
  t.equal(res.status, 413);
  t.equal(((await res.json()) as any).error.code, -32600);
  const ok = await post(stack.url, 'server/discover');
  t.equal(ok.status, 200);
});

t.test('a JSON-RPC batch from a modern-looking client is refused with a JSON-RPC error', async (t) => {
  const stack = await stackFor(t);
  const one = JSON.parse(DISCOVER);
  const res = await fetch(stack.url, { method: 'POST', headers: MODERN_HEADERS, body: JSON.stringify([one, { ...one, id: 'd2' }]) });
  t.equal(res.status, 400);
  const body = (await res.json()) as any;
  t.notOk(Array.isArray(body), 'not answered as a batch');
  t.equal(body.jsonrpc, '2.0');
  t.equal(body.error?.code, -32600, 'Invalid Request, answered by the gateway');
  t.notOk(body.result);
});

t.test('modern header validation errors echo the request id', async (t) => {
  const stack = await stackFor(t);
  const noHeader = await post(stack.url, 'tools/list', {}, { id: 'h1', headers: { 'mcp-protocol-version': null } });
  // Without the header but with _meta the request is still modern (the body marker wins).
  t.equal(noHeader.status, 400);
  t.same([noHeader.body.id, noHeader.body.error.code], ['h1', -32020], 'missing MCP-Protocol-Version');

  const mismatch = await post(stack.url, 'tools/list', { _meta: envelope({}, { 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' }) }, { id: 'h2' });
  t.equal(mismatch.status, 400);
  t.same([mismatch.body.id, mismatch.body.error.code], ['h2', -32020], 'header ≠ _meta version');

  const unsupported = await post(
    stack.url,
    'tools/list',
    { _meta: envelope({}, { 'io.modelcontextprotocol/protocolVersion': 'v999.0.0' }) },
    { id: 42, headers: { 'mcp-protocol-version': 'v999.0.0' } },
  );
  t.equal(unsupported.status, 400);
  t.equal(unsupported.body.id, 42);
  t.equal(unsupported.body.error.code, -32022);
  t.same(unsupported.body.error.data, { supported: ['2026-07-28'], requested: 'v999.0.0' });

  const noCaps = await post(stack.url, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } }, { id: 'h4' });
  t.equal(noCaps.status, 400);
  t.same([noCaps.body.id, noCaps.body.error.code], ['h4', -32602], 'missing clientCapabilities');

  const noMeta = await post(stack.url, 'tools/list', { _meta: {} }, { id: 'h5' });
  t.equal(noMeta.status, 400);
  t.same([noMeta.body.id, noMeta.body.error.code], ['h5', -32602], 'empty _meta with the modern header');

  const noName = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'x' } }, { id: 'h6', headers: { 'mcp-name': null } });
  t.equal(noName.status, 400);
  t.same([noName.body.id, noName.body.error.code], ['h6', -32020], 'missing Mcp-Name');

  const wrongName = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'x' } }, { id: 'h7', headers: { 'mcp-name': 'other' } });
  t.same([wrongName.status, wrongName.body.id, wrongName.body.error.code], [400, 'h7', -32020], 'Mcp-Name ≠ params.name');

  const wrongMethod = await post(stack.url, 'tools/list', {}, { id: 'h8', headers: { 'mcp-method': 'prompts/list' } });
  t.same([wrongMethod.status, wrongMethod.body.id, wrongMethod.body.error.code], [400, 'h8', -32020], 'Mcp-Method ≠ method');

  const clientInfoOptional = await post(stack.url, 'tools/list', {
    _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} },
  });
  t.equal(clientInfoOptional.status, 200, 'clientInfo is optional');
});

t.test('removed and unknown methods → 404, -32601, with the id', async (t) => {
  const stack = await stackFor(t);
  const init = await post(stack.url, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } }, { id: 'i1' });
  t.equal(init.status, 404);
  t.same([init.body.id, init.body.error.code], ['i1', -32601], 'initialize with modern markers');
  for (const method of ['ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'tasks/list', 'tasks/result']) {
    const r = await post(stack.url, method, method.startsWith('resources/') ? { uri: 'test://static-text' } : {}, { id: method });
    t.same([r.status, r.body.id, r.body.error?.code], [404, method, -32601], method);
  }
  const unknown = await post(stack.url, 'acme/unknown', {}, { id: 'u1' });
  t.equal(unknown.status, 404);
  t.same([unknown.body.id, unknown.body.error.code], ['u1', -32601], 'unknown method');
});

t.test('a modern notification → 202 with an empty body', async (t) => {
  const stack = await stackFor(t);
  const res = await fetch(stack.url, {
    method: 'POST',
    headers: { ...MODERN_HEADERS, 'mcp-method': 'notifications/cancelled' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, _meta: envelope() } }),
  });
  t.equal(res.status, 202);
  t.equal(await res.text(), '');
});

t.test('GET/DELETE without a session: the upstream answer is passed through', async (t) => {
  const stack = await stackFor(t);
  for (const method of ['GET', 'DELETE']) {
    const res = await fetch(stack.url, { method, headers: { accept: 'text/event-stream' } });
    t.equal(res.status, 400, method);
    const body = (await res.json()) as any;
    t.equal(body.error.code, -32000);
    t.match(body.error.message, /Mcp-Session-Id header is required/, 'the fixture’s own message');
  }
});

/** The GET stream request of a legacy session (the response promise settles when its headers arrive). */
function legacyGet(url: string, sid: string, signal: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' }, signal });
}

/** Calls test_trigger_tool_change in the session (its own stream is read to the end). */
async function triggerToolChange(url: string, sid: string, id: number): Promise<void> {
  const res = await legacyPost(url, sid, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'test_trigger_tool_change', arguments: {} } });
  if (res.status !== 200) throw new Error(`trigger failed: ${res.status}`);
  await res.text();
}

t.test('GET stream of a legacy session passes through and carries the session’s notifications', async (t) => {
  const stack = await stackFor(t);
  const sid = await legacySession(stack.url);
  const controller = new AbortController();
  t.teardown(() => controller.abort());
  const pending = legacyGet(stack.url, sid, controller.signal);
  // Trigger until the GET response is there: each trigger is a real exchange, so this never waits on a timer,
  // and it does not depend on when the gateway flushes the proxied stream's headers (tested on its own below).
  let get: Response | undefined;
  for (let i = 1; get === undefined && i <= 50; i++) {
    await triggerToolChange(stack.url, sid, i);
    get = await Promise.race([pending, Promise.resolve(undefined)]);
  }
  if (!get) throw new Error('the GET stream never answered');
  t.equal(get.status, 200);
  t.match(get.headers.get('content-type') ?? '', /text\/event-stream/);
  t.equal(get.headers.get('mcp-session-id'), sid, 'upstream headers passed through');
  const stream = new SseReader(get);
  const { match } = await stream.until((m) => m.method === 'notifications/tools/list_changed');
  t.equal(match.jsonrpc, '2.0');
  await stream.cancel();

  // DELETE ends the session upstream; the session id is then unknown there (404 passed through).
  const del = await fetch(stack.url, { method: 'DELETE', headers: { 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' } });
  t.equal(del.status, 200);
  await del.text();
  const after = await legacyPost(stack.url, sid, { jsonrpc: '2.0', id: 99, method: 'tools/list' });
  t.equal(after.status, 404);
  t.equal(((await after.json()) as any).error.code, -32001);
});

t.test('the proxied GET stream answers with its headers before the upstream’s first event', async (t) => {
  const stack = await stackFor(t);
  const sid = await legacySession(stack.url);
  const controller = new AbortController();
  t.teardown(() => controller.abort());
  // Guard only, so a broken build fails in 5 s instead of waiting for the upstream's 15 s keep-alive comment.
  const get = await legacyGet(stack.url, sid, AbortSignal.any([controller.signal, AbortSignal.timeout(5_000)]));
  t.equal(get.status, 200);
  const stream = new SseReader(get);
  await triggerToolChange(stack.url, sid, 1);
  await stream.until((m) => m.method === 'notifications/tools/list_changed');
  t.same(stream.comments, [], 'no keep-alive had to arrive first');
});

t.test('DELETE of a legacy session that carries Content-Type: application/json and no body is passed through', async (t) => {
  const stack = await stackFor(t);
  const sid = await legacySession(stack.url);
  const del = await fetch(stack.url, { method: 'DELETE', headers: legacyHeaders(sid) });
  t.equal(del.status, 200, 'the fixture accepts this DELETE when called directly');
  await del.text();
});

/** Resolves once /healthz reports `name` down (the start-up probe's outcome), with its reason; bounded. */
async function downAtStart(base: string, name: string): Promise<string> {
  const r = await untilServed(
    async () => {
      const body = (await (await fetch(`${base}/healthz`)).json()) as { upstreams: Array<{ name: string; state: string; reason?: string }> };
      const u = body.upstreams.find((x) => x.name === name);
      return { status: u?.state === 'down' ? 200 : 503, reason: u?.reason ?? '' };
    },
    (x) => x.status === 200,
  );
  if (r.status !== 200) throw new Error(`${name} not reported down by /healthz`);
  return r.reason;
}

t.test('dead upstream: found down at start, 503 JSON-RPC error; the other upstream keeps serving; the dead one recovers', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const deadPort = await closedPort();
  const upstreams = [
    { name: 'dead', path: '/dead', url: `http://127.0.0.1:${deadPort}/mcp`, timeoutMs: 5_000 },
    { name: 'live', path: '/live', url: fixture.url },
  ];
  const base = (await startGateway({ upstreams }, { t })).origin;

  // Probed at start, without a request: down, and why.
  t.equal(await downAtStart(base, 'dead'), 'connection refused', 'the reason, with no address in it');
  const dead = await post(`${base}/dead`, 'tools/list', {}, { id: 'dead-1' });
  t.equal(dead.status, 503, 'known down: answered at once');
  t.equal(dead.body.jsonrpc, '2.0');
  t.equal(dead.body.id, 'dead-1', 'the request id echoed');
  t.equal(dead.body.error.code, -31003, 'unavailable, to retry');

  const live = await post(`${base}/live`, 'tools/call', { name: 'greet', arguments: { name: 'Live' } });
  t.equal(live.status, 200);
  t.same(live.body.result.content, [{ type: 'text', text: 'Hello, Live!' }]);

  // Now known to be down: answered at once with a retry hint, while the gateway re-probes in the background.
  const legacyGet = await fetch(`${base}/dead`, { method: 'GET' });
  t.equal(legacyGet.status, 503, 'GET on the dead upstream');
  t.ok(Number(legacyGet.headers.get('retry-after')) >= 1, 'Retry-After');
  t.equal(((await legacyGet.json()) as any).error.code, -31003);

  // The failed probe is not cached: once something listens there (here a dual-era server), the path works again.
  const revived = await startEraServer('stateless', deadPort);
  t.teardown(() => revived.close());
  await revived.waitFor((s) => s.rpcMethod === 'server/discover');
  const back = await untilServed(() => post(`${base}/dead`, 'tools/call', { name: 'greet', arguments: { name: 'Back' } }));
  t.equal(back.status, 200);
  t.same(back.body.result.content, [{ type: 'text', text: 'Hello, Back!' }]);
});

t.test('a 502 for a dead upstream not probed yet (its era pinned) echoes the request id', async (t) => {
  const deadPort = await closedPort();
  const { url } = await startGateway({ upstreams: [{ name: 'dead', path: '/mcp', url: `http://127.0.0.1:${deadPort}/mcp`, era: 'legacy' }] }, { t });
  const r = await post(url, 'tools/list', {}, { id: 'dead-id' });
  t.equal(r.status, 502);
  t.equal(r.body.id, 'dead-id');
});

t.test('upstream session loss: the fixture restarts on the same port, the gateway re-initializes', async (t) => {
  const stack = await stackFor(t);
  const first = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'One' } });
  t.same(first.body.result?.content, [{ type: 'text', text: 'Hello, One!' }]);

  const port = Number(new URL(stack.fixture.url).port);
  await stack.fixture.close();
  const restarted = await startLegacyFixture({ port });
  t.teardown(() => restarted.close());

  const second = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'Two' } });
  t.equal(second.status, 200);
  t.same(second.body.result?.content, [{ type: 'text', text: 'Hello, Two!' }]);
  const list = await post(stack.url, 'tools/list');
  t.equal(list.status, 200);
  t.ok(list.body.result.tools.length > 0);
});

t.test('a modern client that disconnects mid-call: the upstream call is cancelled, later requests work', async (t) => {
  const relay = await startRelay(t);
  const stack = await startStack({}, { url: relay.url });
  t.teardown(() => stack.close());
  relay.setTarget(stack.fixture.url);
  const controller = new AbortController();
  const res = await fetch(stack.url, {
    method: 'POST',
    headers: { ...MODERN_HEADERS, 'mcp-method': 'tools/call', 'mcp-name': 'test_tool_with_progress' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'leaving',
      method: 'tools/call',
      params: { name: 'test_tool_with_progress', arguments: {}, _meta: envelope({}, { progressToken: 'p' }) },
    }),
    signal: controller.signal,
  });
  t.equal(res.status, 200);
  const stream = new SseReader(res);
  const firstProgress = await stream.next();
  t.equal(firstProgress.method, 'notifications/progress', 'the call is running');
  const upstreamCall = relay.seen.find((s) => s.rpcMethod === 'tools/call');
  controller.abort();
  const cancelled = await within(
    relay.waitFor((s) => s.rpcMethod === 'notifications/cancelled' && s.body?.params?.requestId === upstreamCall?.body?.id),
    5_000,
  );
  t.ok(cancelled, 'notifications/cancelled for the upstream call');

  const again = await post(stack.url, 'tools/call', {
    name: 'test_tool_with_progress',
    arguments: {},
    _meta: envelope({}, { progressToken: 'q' }),
  });
  t.equal(again.status, 200);
  t.equal(again.messages.length, 3);
  t.same(again.body.result.content, [{ type: 'text', text: 'q' }]);
  const greet = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'After' } });
  t.same(greet.body.result.content, [{ type: 'text', text: 'Hello, After!' }]);
});

t.test('a legacy client that disconnects while the upstream waits for its answer does not break the session', async (t) => {
  const stack = await stackFor(t);
  const sid = await legacySession(stack.url);
  const controller = new AbortController();
  const res = await legacyPost(
    stack.url,
    sid,
    { jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'test_elicitation', arguments: { message: 'Wait for me' } } },
    controller.signal,
  );
  t.equal(res.status, 200);
  const stream = new SseReader(res);
  const { match: ask } = await stream.until((m) => m.method === 'elicitation/create');
  t.equal(ask.params.message, 'Wait for me', 'the upstream is blocked on the client');
  controller.abort();

  const greet = await legacyPost(stack.url, sid, { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'greet', arguments: { name: 'Still' } } });
  t.equal(greet.status, 200);
  const done = await new SseReader(greet).until((m) => m.id === 11);
  t.same(done.match.result.content, [{ type: 'text', text: 'Hello, Still!' }]);

  const modern = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'Modern' } });
  t.same(modern.body.result.content, [{ type: 'text', text: 'Hello, Modern!' }]);
});
