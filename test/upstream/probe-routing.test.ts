/**
 * Routing by what the upstream speaks: a request goes to the upstream in its own era whenever the upstream
 * speaks it (legacy → dual and modern → dual pass through untouched), translation only where the upstream lacks
 * the client's era. Pinned eras skip the probe. An upstream replaced by one of another era is re-learned.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post, readReply } from '../helpers/modern.js';
import { startRelay, type Seen } from '../helpers/relay.js';
import { startEraServer, untilServed, type EraServer, type SeenRequest } from '../helpers/era-servers.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A gateway in front of `url`; `upstream` is merged into its one upstream entry. */
async function gatewayFor(t: Teardown, url: string, upstream: Record<string, unknown> = {}): Promise<string> {
  return (await startGateway({ upstreams: [{ name: 'up', path: '/mcp', url, ...upstream }] }, { t })).url;
}

async function eraServer(t: Teardown, legacy: 'stateless' | 'reject'): Promise<EraServer> {
  const server = await startEraServer(legacy);
  t.teardown(() => server.close());
  return server;
}

/** An SDK 1.32.2 (2025-11-25) client connected to `url`. */
async function legacyClient(t: Teardown, url: string): Promise<Client> {
  const client = new Client({ name: 'legacy-sdk-client', version: '1.32.2' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.teardown(() => client.close());
  return client;
}

/** Requests of the era probe (its ids and clientInfo name it). */
const isProbe = (s: SeenRequest | Seen) => typeof s.body?.id === 'string' && s.body.id.startsWith('gateway-probe-');

t.test('dual-era upstream: a 2025-11-25 SDK client passes through untouched', async (t) => {
  const server = await eraServer(t, 'stateless');
  const url = await gatewayFor(t, server.url);
  const client = await legacyClient(t, url);
  t.same(client.getServerVersion(), { name: 'era-test-server', version: '2.4.0' }, 'the upstream’s own initialize answer');
  const tools = await client.listTools();
  t.same(
    tools.tools.map((tool) => tool.name),
    ['greet'],
  );
  const result = await client.callTool({ name: 'greet', arguments: { name: 'Legacy' } });
  t.same(result.content, [{ type: 'text', text: 'Hello, Legacy!' }]);

  const own = server.seen.filter((s) => !isProbe(s) && s.httpMethod === 'POST');
  const init = own.find((s) => s.rpcMethod === 'initialize');
  t.same(init?.body.params.clientInfo, { name: 'legacy-sdk-client', version: '1.32.2' }, 'the client’s own initialize reached the upstream');
  const call = own.find((s) => s.rpcMethod === 'tools/call');
  t.same(call?.body.params, { name: 'greet', arguments: { name: 'Legacy' } }, 'the client’s tools/call, no envelope added');
  t.notOk(call?.headers['mcp-method'], 'no modern headers added');
  t.notOk(
    own.some((s) => s.body?.params?.clientInfo?.name === 'mcp-tasks-gateway'),
    'no session of the gateway’s own',
  );
});

t.test('dual-era upstream routing by _meta and headers: a 2025-11-25 SDK client gets its 2025-11-25 side, passed through', async (t) => {
  // The fixture routes as the conformance reference everything-server does: an initialize with 2026-07-28 markers
  // would meet its 2026-07-28 side (another serverInfo, resources without subscribe, no session).
  const fixture = await startModernFixture({ mode: 'dual', dualRouting: 'meta' });
  t.teardown(() => fixture.close());
  const url = await gatewayFor(t, fixture.url);
  const client = await legacyClient(t, url);
  t.same(client.getServerVersion(), { name: 'modern-fixture-server', version: '1.0.0' }, 'the serverInfo of its 2025-11-25 side');
  const caps = client.getServerCapabilities();
  t.same(
    [caps?.logging, caps?.completions, caps?.resources?.subscribe],
    [{}, {}, true],
    'the capabilities of its 2025-11-25 side: logging, completions, resource subscriptions',
  );
  await client.setLoggingLevel('info');
  await client.subscribeResource({ uri: 'test://watched-resource' });
  const result = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.same(result.content, [{ type: 'text', text: 'This is a simple text response for testing.' }]);

  const stats = fixture.stats();
  t.same(
    stats.recent.filter((r) => r.method === 'tools/call').map((r) => [r.era, typeof r.sessionId]),
    [['legacy', 'string']],
    'the call reached its 2025-11-25 side, in a session',
  );
  t.equal(stats.methods['resources/subscribe'], 1, 'the subscription reached it too');
});

t.test('a 2026-07-28 request in front of a legacy-pinned dual server routing by _meta: the gateway’s sessions open on its 2025-11-25 side', async (t) => {
  const fixture = await startModernFixture({ mode: 'dual', dualRouting: 'meta' });
  t.teardown(() => fixture.close());
  const url = await gatewayFor(t, fixture.url, { era: 'legacy' });
  const r = await post(url, 'tools/call', { name: 'test_simple_text', arguments: {} });
  t.same(r.body.result?.content, [{ type: 'text', text: 'This is a simple text response for testing.' }]);
  t.same(
    r.body.result?._meta?.['io.modelcontextprotocol/serverInfo'],
    { name: 'modern-fixture-server', version: '1.0.0' },
    'translated from its 2025-11-25 side',
  );
  t.ok(fixture.stats().legacySessionsOpened >= 1, 'the gateway’s own session was opened there');
  t.same(
    fixture
      .stats()
      .recent.filter((x) => x.method === 'tools/call')
      .map((x) => x.era),
    ['legacy'],
  );
});

t.test('dual-era upstream: a 2026-07-28 request passes through untouched', async (t) => {
  const server = await eraServer(t, 'stateless');
  const url = await gatewayFor(t, server.url);
  const r = await post(url, 'tools/call', { name: 'greet', arguments: { name: 'Modern' } }, { id: 'modern-1' });
  t.equal(r.status, 200);
  t.same(r.body.result.content, [{ type: 'text', text: 'Hello, Modern!' }]);
  t.equal(r.body.result.resultType, 'complete', 'the upstream’s own modern result');

  const own = server.seen.filter((s) => !isProbe(s));
  t.equal(own.length, 1, 'one upstream request for one client request');
  t.equal(own[0]?.body.id, 'modern-1', 'the client’s own id');
  t.same(own[0]?.body.params._meta['io.modelcontextprotocol/clientInfo'], { name: 'test-client', version: '1.0.0' }, 'the client’s own envelope');
  t.equal(own[0]?.headers['mcp-name'], 'greet');

  const discover = await post(url, 'server/discover');
  t.same(discover.body.result.supportedVersions, ['2026-07-28']);
  t.same(discover.body.result._meta['io.modelcontextprotocol/serverInfo'], { name: 'era-test-server', version: '2.4.0' }, 'the upstream’s own discover');
});

t.test('modern-only upstream: modern passes through; legacy clients meet the gateway’s legacy face', async (t) => {
  const server = await eraServer(t, 'reject');
  const url = await gatewayFor(t, server.url);
  const r = await post(url, 'tools/call', { name: 'greet', arguments: { name: 'Only' } }, { id: 'only-1' });
  t.same(r.body.result?.content, [{ type: 'text', text: 'Hello, Only!' }]);
  t.equal(server.seen.filter((s) => !isProbe(s))[0]?.body.id, 'only-1');

  const init = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'i',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    }),
  });
  t.equal(init.status, 200);
  const body = (await readReply(init)).body;
  t.same([body.id, body.result?.protocolVersion], ['i', '2025-11-25'], 'the gateway answers initialize itself');
  t.ok(init.headers.get('mcp-session-id'), 'with a session of its own');
  t.notOk(
    server.seen.some((s) => s.rpcMethod === 'initialize' && !isProbe(s)),
    'the upstream never saw the client’s initialize',
  );
  t.equal((await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream' } })).status, 400, 'GET without a session: refused by the face');
});

t.test('legacy-only upstream: a modern request is translated (the gateway’s own session)', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const relay = await startRelay(t);
  relay.setTarget(fixture.url);
  const url = await gatewayFor(t, relay.url);
  const r = await post(url, 'tools/call', { name: 'greet', arguments: { name: 'Old' } });
  t.same(r.body.result?.content, [{ type: 'text', text: 'Hello, Old!' }]);
  const init = relay.seen.find((s) => s.rpcMethod === 'initialize' && !isProbe(s));
  t.equal(init?.body.params.clientInfo.name, 'mcp-tasks-gateway', 'initialized by the gateway');
});

t.test('pinned eras skip the probe', async (t) => {
  t.test('dual: both eras pass through, no probe', async (t) => {
    const server = await eraServer(t, 'stateless');
    const url = await gatewayFor(t, server.url, { era: 'dual' });
    const client = await legacyClient(t, url);
    t.same((await client.callTool({ name: 'greet', arguments: { name: 'L' } })).content, [{ type: 'text', text: 'Hello, L!' }]);
    t.same((await post(url, 'tools/call', { name: 'greet', arguments: { name: 'M' } })).body.result?.content, [{ type: 'text', text: 'Hello, M!' }]);
    t.notOk(server.seen.some(isProbe), 'the upstream never saw a probe');
    t.notOk(
      server.seen.some((s) => s.rpcMethod === 'server/discover'),
      'nor any server/discover',
    );
  });

  t.test('legacy in front of a dual server: modern requests are translated, no probe', async (t) => {
    const server = await eraServer(t, 'stateless');
    const url = await gatewayFor(t, server.url, { era: 'legacy' });
    const r = await post(url, 'tools/call', { name: 'greet', arguments: { name: 'T' } });
    t.same(r.body.result?.content, [{ type: 'text', text: 'Hello, T!' }]);
    t.notOk(server.seen.some(isProbe), 'no probe');
    const call = server.seen.find((s) => s.rpcMethod === 'tools/call');
    t.notOk(call?.body.params._meta?.['io.modelcontextprotocol/protocolVersion'], 'the upstream got a 2025-11-25 call');
    t.ok(
      server.seen.some((s) => s.rpcMethod === 'initialize' && s.body.params.clientInfo.name === 'mcp-tasks-gateway'),
      'from the gateway’s own session',
    );
  });

  t.test('modern in front of a dual server: legacy clients meet the legacy face, not the upstream, no probe', async (t) => {
    const server = await eraServer(t, 'stateless');
    const url = await gatewayFor(t, server.url, { era: 'modern' });
    const init = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
      }),
    });
    t.equal(init.status, 200, 'answered by the gateway');
    await init.text();
    t.equal((await post(url, 'tools/call', { name: 'greet', arguments: { name: 'P' } })).status, 200);
    t.notOk(server.seen.some(isProbe), 'no probe');
    t.notOk(
      server.seen.some((s) => s.rpcMethod === 'initialize'),
      'the upstream never saw initialize',
    );
  });
});

/** Switches the relay to `next` (the upstream "restarts" as another server) and returns a probe-seen waiter. */
function replaceUpstream(relay: Awaited<ReturnType<typeof startRelay>>, next: string): () => Promise<Seen> {
  const from = relay.seen.length;
  relay.setTarget(next);
  return () => relay.waitFor((s) => relay.seen.indexOf(s) >= from && s.rpcMethod === 'server/discover' && isProbe(s));
}

t.test('a legacy upstream replaced by a modern-only one: the era is re-learned, modern requests pass through', async (t) => {
  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const relay = await startRelay(t);
  relay.setTarget(fixture.url);
  const url = await gatewayFor(t, relay.url);
  t.same(
    (await post(url, 'tools/list')).body.result?.tools.some((tool: any) => tool.name === 'greet'),
    true,
    'translated first',
  );

  const modern = await eraServer(t, 'reject');
  const probed = replaceUpstream(relay, modern.url);
  await fixture.close();
  const refused = await post(url, 'tools/list');
  t.not(refused.status, 200, 'the request that finds the old era gone fails');
  await probed();
  const back = await untilServed(
    () => post(url, 'tools/list', {}, { id: 'after-switch' }),
    (r) => r.status === 200,
  );
  t.equal(back.status, 200);
  t.same(
    back.body.result.tools.map((tool: any) => tool.name),
    ['greet'],
  );
  t.ok(
    modern.seen.some((s) => s.body?.id === 'after-switch' && s.rpcMethod === 'tools/list'),
    'passed through: the client’s own request',
  );
});

t.test('a dual upstream replaced by a legacy-only one: modern requests are translated again', async (t) => {
  const dual = await eraServer(t, 'stateless');
  const relay = await startRelay(t);
  relay.setTarget(dual.url);
  const url = await gatewayFor(t, relay.url);
  t.equal((await post(url, 'tools/list', {}, { id: 'before' })).status, 200);
  t.ok(
    dual.seen.some((s) => s.body?.id === 'before'),
    'passed through first',
  );

  const fixture = await startLegacyFixture();
  t.teardown(() => fixture.close());
  const probed = replaceUpstream(relay, fixture.url);
  const refused = await post(url, 'tools/list');
  t.equal(refused.status, 400, 'the legacy server refuses the passed-through modern request');
  await probed();
  const back = await untilServed(
    () => post(url, 'tools/call', { name: 'greet', arguments: { name: 'Again' } }),
    (r) => r.status === 200 && !r.body.error,
  );
  t.same(back.body.result?.content, [{ type: 'text', text: 'Hello, Again!' }]);
  t.ok(
    relay.seen.some((s) => s.rpcMethod === 'initialize' && s.body.params.clientInfo.name === 'mcp-tasks-gateway'),
    'through the gateway’s own session',
  );
});
