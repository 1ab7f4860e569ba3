/**
 * Real 2025-11-25 clients (SDK 1.32.2 `Client` + `StreamableHTTPClientTransport`) through the whole gateway built by
 * `buildGateway`, era probe on `auto`, in front of the real modern fixture:
 *  - `modern` (2026-07-28 only): the probe finds no 2025 era, so the gateway's legacy face answers the client and
 *    every question of the upstream is an MRTR round the face turns into server→client requests;
 *  - `dual` (both eras itself): the client's traffic passes through untouched, sessions and server→client requests
 *    are the fixture's own.
 */
import t from 'tap';
import { setTimeout as delay } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startModernFixture, type ModernFixtureMode } from '../fixtures/modern-server.js';
import { connectLegacy, startModernStack, type LegacyConnection, type ModernStack } from '../helpers/modern-stack.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function stack(t: Teardown, mode: ModernFixtureMode, config: Record<string, unknown> = {}): Promise<ModernStack> {
  const s = await startModernStack(mode, config);
  t.teardown(() => s.close());
  return s;
}

async function connect(t: Teardown, url: string, capabilities: Record<string, unknown> = {}): Promise<LegacyConnection> {
  const c = await connectLegacy(url, capabilities);
  // A GET stream the gateway ends (expiry, close) is reported here; the tests assert on requests instead.
  c.client.onerror = () => {};
  t.teardown(() => c.client.close());
  return c;
}

const textOf = (r: object): string => (r as { content?: Array<{ text?: string }> }).content?.[0]?.text ?? '';

/** Polls `check` until it holds, at most `tries` times; whether it held. For conditions nothing can be awaited on. */
async function eventually(check: () => Promise<boolean>, tries = 400, stepMs = 25): Promise<boolean> {
  for (let i = 0; i < tries; i++) {
    if (await check()) return true;
    await delay(stepMs);
  }
  return false;
}

t.test('modern-only upstream', async (t) => {
  t.test("initialize is the gateway's own; lists and a plain call reach the upstream; /healthz shows the session and the eras", async (t) => {
    const s = await stack(t, 'modern');
    const { client, transport } = await connect(t, s.url);
    t.type(transport.sessionId, 'string', 'the gateway minted a session');
    t.equal(transport.protocolVersion, '2025-11-25');
    t.same(client.getServerVersion(), { name: 'modern-fixture-server', version: '1.0.0' }, 'serverInfo from server/discover');
    t.ok(client.getServerCapabilities()?.tools, 'capabilities translated from server/discover');
    const stats = s.fixture.stats();
    t.equal(stats.methods.initialize ?? 0, 0, 'the upstream never saw initialize');
    t.equal(stats.legacySessionsOpened, 0);

    const tools = await client.listTools();
    t.ok(tools.tools.some((x) => x.name === 'test_input_required_result_multi_round'));
    t.notOk('resultType' in tools, 'no modern resultType for a strict legacy client');
    const r = await client.callTool({ name: 'test_simple_text', arguments: {} });
    t.equal(textOf(r), 'This is a simple text response for testing.');
    t.notOk('resultType' in r);
    const calls = s.fixture.stats().recent.filter((x) => x.method === 'tools/call');
    t.same(
      calls.map((x) => x.era),
      ['modern'],
      'the call went upstream in 2026-07-28',
    );
    t.same(calls[0]?.envelope?.['io.modelcontextprotocol/clientInfo'], { name: 'legacy-test-client', version: '1.0.0' }, "with the client's own clientInfo");

    t.same(await client.ping(), {});

    const health = await s.health();
    t.equal(health.status, 'ok');
    t.match(health.upstreams[0], { name: 'fixture', clientSessions: 1, state: 'up', modern: true, legacy: false });
    await transport.terminateSession();
    t.equal((await s.health()).upstreams[0]?.clientSessions, 0, 'DELETE ended the session');
  });

  t.test("elicitation and sampling answered by the client's handlers through MRTR rounds; a two-round tool", async (t) => {
    const s = await stack(t, 'modern');
    const { client } = await connect(t, s.url, { elicitation: {}, sampling: {} });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      const message = (req.params as { message: string }).message;
      asked.push(`elicit:${message}`);
      if (message.startsWith('Step 2')) return { action: 'accept', content: { color: 'blue' } };
      return { action: 'accept', content: { name: 'Ada' } };
    });
    client.setRequestHandler(CreateMessageRequestSchema, async () => {
      asked.push('sample');
      return { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'test-model' };
    });

    const e = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
    t.equal(textOf(e), 'Hello, Ada!');
    t.same(asked, ['elicit:What is your name?'], 'one elicitation/create reached the client');
    t.equal(s.fixture.stats().toolCalls.test_input_required_result_elicitation, 2, 'two requests upstream: the ask and the retry');

    const sampled = await client.callTool({ name: 'test_input_required_result_sampling', arguments: {} });
    t.match(textOf(sampled), /Paris/);
    t.equal(asked.at(-1), 'sample', 'sampling/createMessage reached the client');

    asked.length = 0;
    const two = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
    t.equal(textOf(two), 'Multi-round complete for Ada who likes blue');
    t.same(asked, ['elicit:Step 1: What is your name?', 'elicit:Step 2: What is your favorite color?'], 'both rounds asked, in order');
    t.equal(s.fixture.stats().toolCalls.test_input_required_result_multi_round, 3, 'three requests upstream, one call for the client');
  });

  t.test('an input kind the session did not declare is never sent: -32021', async (t) => {
    const s = await stack(t, 'modern');
    const { client } = await connect(t, s.url, {});
    const sent: string[] = [];
    client.fallbackRequestHandler = async (req) => {
      sent.push(req.method);
      return {};
    };
    const roots = await client.callTool({ name: 'test_input_required_result_list_roots', arguments: {} }).catch((e: unknown) => e);
    t.type(roots, McpError);
    t.equal((roots as McpError).code, -32021, 'roots asked of a session without roots');
    const gated = await client.callTool({ name: 'test_missing_capability', arguments: {} }).catch((e: unknown) => e);
    t.type(gated, McpError);
    t.equal((gated as McpError).code, -32021, "the upstream's own gate");
    t.same(sent, [], 'no server→client request reached the client');
  });

  t.test('a resource subscription delivers notifications/resources/updated to the client', async (t) => {
    const s = await stack(t, 'modern');
    const { client } = await connect(t, s.url);
    let updated!: (uri: string) => void;
    const seen = new Promise<string>((resolve) => (updated = resolve));
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => updated(n.params.uri));
    await client.subscribeResource({ uri: 'test://watched-resource' });
    // The subscription answers once the upstream listen is in place; the update reaches the GET stream or waits
    // in the session's backlog until it opens.
    const r = await client.callTool({ name: 'test_trigger_resource_update', arguments: {} });
    t.equal(textOf(r), 'Resource update triggered');
    t.equal(await seen, 'test://watched-resource');
    await client.unsubscribeResource({ uri: 'test://watched-resource' });
  });

  t.test("a list change reaches the client's GET stream", async (t) => {
    const s = await stack(t, 'modern');
    const { client, getStreamOpen } = await connect(t, s.url);
    let changed!: () => void;
    const seen = new Promise<void>((resolve) => (changed = resolve));
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => changed());
    // The face answers the GET only once the upstream listen is in place, so nothing after this is missed.
    await getStreamOpen;
    s.fixture.notifyListChanged('tools');
    await seen;
    t.pass('notifications/tools/list_changed arrived');
  });

  t.test("the client's AbortSignal cancels the upstream call", async (t) => {
    const s = await stack(t, 'modern');
    const { client } = await connect(t, s.url);
    const cancelled = s.fixture.nextCancellation();
    const ac = new AbortController();
    // The tool reports progress once it runs upstream; the client aborts only then, so there is a call to stop.
    let running!: () => void;
    const started = new Promise<void>((resolve) => (running = resolve));
    const call = client
      .callTool({ name: 'test_cancellable_wait', arguments: {} }, undefined, { signal: ac.signal, onprogress: () => running() })
      .catch((e: unknown) => e);
    await started;
    ac.abort('the user changed their mind');
    t.ok(await call, "the client's call rejects");
    t.equal(await cancelled, 'test_cancellable_wait', 'the upstream saw its request cancelled');
    t.equal(s.fixture.stats().cancelledCalls.test_cancellable_wait, 1);
    t.equal(
      textOf(await client.callTool({ name: 'test_simple_text', arguments: {} })),
      'This is a simple text response for testing.',
      'the session still works',
    );
  });

  t.test('logging/setLevel: only messages at or above the level reach the client', async (t) => {
    const s = await stack(t, 'modern');
    const { client } = await connect(t, s.url);
    const logs: string[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
      logs.push(n.params.level);
    });
    // Notifications of a call come on its response stream before its result, so they are in once the call is.
    await client.setLoggingLevel('warning');
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    t.same(logs, [], 'info messages stay below a warning level');
    await client.setLoggingLevel('info');
    await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
    t.same(logs, ['info', 'info', 'info'], 'at the level: all three relayed');
    const levels = s.fixture
      .stats()
      .recent.filter((x) => x.method === 'tools/call')
      .map((x) => x.envelope?.['io.modelcontextprotocol/logLevel']);
    t.same(levels, ['warning', 'info'], "the session's level travels on each upstream request");
  });

  t.test('session expiry: 404, then the client initializes again and goes on', async (t) => {
    const idleMs = 2_000;
    const s = await stack(t, 'modern', { clientSessions: { idleMs } });
    const client = new Client({ name: 'legacy-test-client', version: '1.0.0' }, { capabilities: {} });
    client.onerror = () => {};
    t.teardown(() => client.close());
    const first = await connectLegacy(s.url, {}, client);
    const firstId = first.transport.sessionId;
    t.equal((await s.health()).upstreams[0]?.clientSessions, 1);
    // Expiry is observable on /healthz once the face's sweep ends the idle session (the sweep runs every idleMs).
    t.ok(await eventually(async () => (await s.health()).upstreams[0]?.clientSessions === 0), 'the idle session ended');
    const err = await client.listTools().catch((e: unknown) => e);
    t.type(err, StreamableHTTPError);
    t.equal((err as StreamableHTTPError).code, 404, 'an expired session is unknown: the client must initialize again');

    await client.close();
    const again = await connectLegacy(s.url, {}, client);
    t.type(again.transport.sessionId, 'string');
    t.not(again.transport.sessionId, firstId, 'a new session');
    const tools = await client.listTools();
    t.ok(tools.tools.length > 0, 'the new session works');
    t.equal(s.fixture.stats().methods.initialize ?? 0, 0, 'still no initialize upstream');
  });
});

t.test("the upstream restarts as dual-era: the gateway learns it from the face's failures, and the client ends up passing through", async (t) => {
  const s = await stack(t, 'modern');
  const { client, transport } = await connect(t, s.url);
  const faceSession = transport.sessionId;
  t.ok((await client.listTools()).tools.length > 0);
  const port = Number(new URL(s.fixture.url).port);
  await s.fixture.close();
  const down = await client.listTools().catch((e: unknown) => e);
  t.type(down, StreamableHTTPError, 'the upstream is gone: the face cannot answer');
  t.equal((down as StreamableHTTPError).code, 502);

  // The same address now serves both eras (a new release of the server).
  const dual = await startModernFixture({ mode: 'dual', port });
  t.teardown(() => dual.close());
  t.ok(
    await eventually(async () => {
      const u = (await s.health()).upstreams[0];
      return u?.state === 'up' && u.legacy === true;
    }),
    'the gateway probed again and found the 2025-11-25 era',
  );
  const stale = await client.listTools().catch((e: unknown) => e);
  t.equal((stale as StreamableHTTPError).code, 404, "the face's session means nothing to the upstream: the client must initialize again");
  await client.close();
  const again = await connectLegacy(s.url, {}, client);
  t.not(again.transport.sessionId, faceSession);
  t.ok((await client.listTools()).tools.length > 0);
  t.ok((dual.stats().methods.initialize ?? 0) >= 1, 'this time the upstream answered initialize itself');
  t.ok(
    dual.stats().recent.some((x) => x.era === 'legacy' && x.method === 'tools/list' && x.sessionId === again.transport.sessionId),
    'on its own session',
  );
});

t.test('dual-era upstream: the legacy client passes through untouched', async (t) => {
  const s = await stack(t, 'dual');
  const { client, transport } = await connect(t, s.url, { elicitation: {} });
  const sid = transport.sessionId;
  t.type(sid, 'string');
  t.same(client.getServerVersion(), { name: 'modern-fixture-server', version: '1.0.0' });
  // The fixture counts every initialize (the probe's question included) and records later requests with the
  // session id it minted: the client's id is the fixture's own.
  t.ok((s.fixture.stats().methods.initialize ?? 0) >= 1, 'the fixture saw initialize');
  t.ok(s.fixture.stats().legacySessionsOpen >= 1, 'and holds a legacy session');
  const onSession = () => s.fixture.stats().recent.filter((x) => x.era === 'legacy' && x.sessionId === sid);
  await client.listTools();
  t.same(
    onSession().map((x) => x.method),
    ['tools/list'],
    "the client's requests arrive on the fixture's session, as 2025-11-25",
  );

  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push((req.params as { message: string }).message);
    return { action: 'accept', content: { response: 'yes' } };
  });
  const r = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Are you sure?' } });
  t.equal(textOf(r), 'User response: action=accept, content={"response":"yes"}');
  t.same(asked, ['Are you sure?'], "the fixture's own elicitation/create reached the client");
  t.ok(
    onSession().some((x) => x.method === 'tools/call' && x.name === 'test_elicitation'),
    "the call ran on the client's legacy session",
  );
  t.equal(s.fixture.stats().recent.filter((x) => x.era === 'modern' && x.method === 'tools/call').length, 0, 'nothing translated to 2026-07-28');

  const gated = await client.callTool({ name: 'test_missing_capability', arguments: {} }).catch((e: unknown) => e);
  t.equal((gated as McpError).code, -32021, "the fixture's own -32021 for a session without sampling");

  const health = await s.health();
  t.match(health.upstreams[0], { clientSessions: 0, state: 'up', modern: true, legacy: true }, 'no gateway session; both eras known');
});
