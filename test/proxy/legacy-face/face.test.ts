/**
 * A real 2025-11-25 client (SDK 1.32.2 `Client` + `StreamableHTTPClientTransport`) through the legacy face and the
 * modern upstream client, in front of the real modern-only fixture (test/fixtures/modern-server.ts, 2026-07-28
 * only, `initialize` refused): the client sees one ordinary legacy server; every question of the upstream is an
 * MRTR round that the face turns into server→client requests answered by the client's handlers.
 */
import t from 'tap';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ResourceUpdatedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { ModernUpstreamClient } from '../../../src/upstream/index.js';
import { startModernFixture, type ModernFixture } from '../../fixtures/modern-server.js';
import { SseReader } from '../../helpers/sse-reader.js';
import { connectFace, LEGACY_HEADERS, rawInitialize, startFace, type FaceStack } from '../../helpers/legacy-face-stack.js';
import type { LegacyFaceOptions } from '../../../src/proxy/legacy-face/face.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function stack(t: Teardown, opts: LegacyFaceOptions = {}): Promise<{ fx: ModernFixture; face: FaceStack }> {
  const fx = await startModernFixture({ mode: 'modern' });
  const upstream = new ModernUpstreamClient({
    name: 'modern-fixture',
    url: fx.url,
    timeoutMs: 10_000,
    clientInfo: { name: 'mcp-tasks-gateway', version: 'test' },
  });
  const face = await startFace(upstream, opts);
  t.teardown(async () => {
    await face.close();
    await upstream.close();
    await fx.close();
  });
  return { fx, face };
}

const textOf = (r: object): string => (r as { content?: Array<{ text?: string }> }).content?.[0]?.text ?? '';

t.test('initialize, lists and a plain call', async (t) => {
  const { fx, face } = await stack(t);
  const { client, transport } = await connectFace(t, face.url);
  t.ok(transport.sessionId, 'the gateway minted a session');
  t.same(client.getServerVersion(), { name: 'modern-fixture-server', version: '1.0.0' }, 'serverInfo from server/discover');
  const caps = client.getServerCapabilities() as Record<string, unknown>;
  t.notOk('extensions' in caps);
  t.same(caps.tools, { listChanged: true });
  t.equal(fx.stats().methods.initialize ?? 0, 0, 'the upstream never saw initialize');

  const tools = await client.listTools();
  t.ok(tools.tools.some((x) => x.name === 'test_simple_text'));
  t.notOk('resultType' in tools);
  t.notOk('ttlMs' in tools);
  const prompts = await client.listPrompts();
  t.ok(prompts.prompts.length > 0);
  const resources = await client.listResources();
  t.ok(resources.resources.some((r) => r.uri === 'test://static-text'));
  const read = await client.readResource({ uri: 'test://static-text' });
  t.notOk('resultType' in read);
  t.equal((read.contents[0] as { text?: string }).text, 'This is the content of the static text resource.');

  const r = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.equal(textOf(r), 'This is a simple text response for testing.');
  t.notOk('resultType' in r);
  t.same(await client.ping(), {});
  const modern = fx.stats().recent.filter((x) => x.era === 'modern' && x.method === 'tools/call');
  t.same(
    modern.at(-1)?.envelope?.['io.modelcontextprotocol/clientInfo'],
    { name: 'legacy-test-client', version: '1.0.0' },
    "the client's own clientInfo upstream",
  );
});

t.test('elicitation and sampling answered by the client handlers through MRTR rounds; a two-round tool', async (t) => {
  const { fx, face } = await stack(t);
  const { client } = await connectFace(t, face.url, { elicitation: {}, sampling: {} });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(`elicit:${req.params.message}`);
    return { action: 'accept', content: { name: 'Ada', response: 'yes', color: 'blue', favoriteColor: 'blue' } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    asked.push('sample');
    return { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'test-model' };
  });

  const e = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  t.match(textOf(e), /Ada/);
  const s = await client.callTool({ name: 'test_input_required_result_sampling', arguments: {} });
  t.match(textOf(s), /Paris/);
  const before = fx.stats().toolCalls.test_input_required_result_multi_round ?? 0;
  const two = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
  t.notOk(two.isError, textOf(two));
  t.ok((fx.stats().toolCalls.test_input_required_result_multi_round ?? 0) - before >= 3, 'three requests upstream (two MRTR rounds), one call for the client');
  t.ok(asked.filter((a) => a.startsWith('elicit:')).length >= 3, 'the client answered every question');
  t.ok(asked.includes('sample'));
});

t.test('roots: declared → the client answers; undeclared → -32021, never sent', async (t) => {
  const { face } = await stack(t);
  const withRoots = await connectFace(t, face.url, { roots: { listChanged: true } });
  withRoots.client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///work', name: 'work' }] }));
  const r = await withRoots.client.callTool({ name: 'test_input_required_result_list_roots', arguments: {} });
  t.equal(textOf(r), 'Found 1 root(s)');

  const bare = await connectFace(t, face.url, {});
  const unexpected: string[] = [];
  bare.client.fallbackRequestHandler = async (req) => {
    unexpected.push(req.method);
    return {};
  };
  const err = await bare.client.callTool({ name: 'test_input_required_result_list_roots', arguments: {} }).catch((x: unknown) => x);
  t.type(err, McpError);
  t.equal((err as McpError).code, -32021);
  t.same(unexpected, []);

  const missing = await bare.client.callTool({ name: 'test_missing_capability', arguments: {} }).catch((x: unknown) => x);
  t.equal((missing as McpError).code, -32021, "the upstream's own -32021 reaches the legacy client");
});

t.test("a client's cancellation aborts the upstream call", async (t) => {
  const { fx, face } = await stack(t);
  const { client } = await connectFace(t, face.url);
  const ac = new AbortController();
  const cancelled = fx.nextCancellation();
  // The tool reports progress 0 once it runs; the client aborts only then, so the upstream has something to stop.
  let running!: () => void;
  const started = new Promise<void>((r) => (running = r));
  const call = client
    .callTool({ name: 'test_cancellable_wait', arguments: {} }, undefined, { signal: ac.signal, onprogress: () => running() })
    .catch((x: unknown) => x);
  await started;
  ac.abort('stop');
  t.ok(await call, 'the client call rejects');
  t.equal(await cancelled, 'test_cancellable_wait', 'the upstream saw its request cancelled');
});

t.test('setLevel travels upstream; log messages and progress are relayed', async (t) => {
  const { face } = await stack(t);
  const { client } = await connectFace(t, face.url);
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
    logs.push(n.params.data);
  });
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  t.equal(logs.length, 0, 'no level set: the upstream sends no log messages (2026-07-28 per-request logLevel)');
  await client.setLoggingLevel('debug');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  t.ok(logs.length >= 3, `log messages relayed (${logs.length})`);
  await client.setLoggingLevel('error');
  const n = logs.length;
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  t.equal(logs.length, n, 'info messages stay below an error level');

  const progress: number[] = [];
  await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, { onprogress: (p) => progress.push(p.progress) });
  t.same(progress, [0, 50, 100]);
});

t.test('a resource subscription delivers an update on the GET stream', async (t) => {
  const { fx, face } = await stack(t);
  const { client } = await connectFace(t, face.url);
  let resolve!: (uri: string) => void;
  const updated = new Promise<string>((r) => (resolve = r));
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => resolve(n.params.uri));
  await client.subscribeResource({ uri: 'test://watched-resource' });
  fx.notifyResourceUpdated('test://watched-resource');
  t.equal(await updated, 'test://watched-resource');
  await client.unsubscribeResource({ uri: 'test://watched-resource' });
});

t.test('list changes reach an open GET stream (raw legacy session)', async (t) => {
  const { fx, face } = await stack(t);
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  const init = await fetch(face.url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  const sid = init.headers.get('mcp-session-id') as string;
  t.ok(sid);
  await init.body?.cancel();
  const initialized = await fetch(face.url, {
    method: 'POST',
    headers: { ...headers, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  t.equal(initialized.status, 202);
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const get = await fetch(face.url, {
    method: 'GET',
    headers: { accept: 'text/event-stream', 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' },
    signal: ac.signal,
  });
  t.equal(get.status, 200);
  const second = await fetch(face.url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid } });
  t.equal(second.status, 409, 'one GET stream per session');
  // The stream's headers come once the upstream listen is in place, so this change cannot be missed.
  fx.notifyListChanged('tools');
  const reader = new SseReader(get);
  const m = await reader.next();
  t.equal(m.method, 'notifications/tools/list_changed');
  t.notOk(m.params?._meta?.['io.modelcontextprotocol/subscriptionId'], "the listen stream's tag is not shown to a legacy client");
});

t.test('session expiry: the client gets 404 and re-initializes', async (t) => {
  let clock = 0;
  const { face } = await stack(t, { idleMs: 60_000, now: () => clock });
  const first = await connectFace(t, face.url);
  await first.client.listTools();
  clock += 60_001;
  const err = await first.client.listTools().catch((x: unknown) => x);
  t.type(err, StreamableHTTPError);
  t.equal((err as StreamableHTTPError).code, 404);
  const again = await connectFace(t, face.url);
  t.not(again.transport.sessionId, first.transport.sessionId);
  t.ok((await again.client.listTools()).tools.length > 0, 'the new session works');
});

t.test('sessions: bound to the principal, 400 without an id, DELETE ends them', async (t) => {
  const { face } = await stack(t);
  const url = face.url;
  const { transport } = await connectFace(t, url, {}, { authorization: 'Bearer alice' });
  const sid = transport.sessionId as string;
  const post = (headers: Record<string, string>, body: unknown) =>
    fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
    });
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };

  t.equal((await post({ 'mcp-session-id': sid, authorization: 'Bearer alice' }, ping)).status, 200, 'the owner');
  t.equal((await post({ 'mcp-session-id': sid, authorization: 'Bearer mallory' }, ping)).status, 404, 'another principal: as unknown');
  t.equal((await post({ 'mcp-session-id': sid }, ping)).status, 404, 'no credentials: another principal');
  t.equal((await post({ authorization: 'Bearer alice' }, ping)).status, 400, 'no session id');
  t.equal((await post({ 'mcp-session-id': 'made-up', authorization: 'Bearer alice' }, ping)).status, 404);
  const notServed = (await (await post({ 'mcp-session-id': sid, authorization: 'Bearer alice' }, { jsonrpc: '2.0', id: 2, method: 'tasks/list' })).json()) as {
    error: { code: number };
  };
  t.equal(notServed.error.code, -32601, 'tasks/* are not served (no tasks capability advertised)');
  t.equal((await post({ 'mcp-session-id': sid, authorization: 'Bearer alice' }, [ping])).status, 400, 'no batches');

  t.equal((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid, authorization: 'Bearer mallory' } })).status, 404, 'only the owner ends it');
  t.equal((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid, authorization: 'Bearer alice' } })).status, 200);
  t.equal((await post({ 'mcp-session-id': sid, authorization: 'Bearer alice' }, ping)).status, 404, 'ended');
});

t.test('the bound on sessions: the least recently used idle session makes room', async (t) => {
  let clock = 0;
  const { face } = await stack(t, { maxSessions: 1, now: () => clock });
  const a = await connectFace(t, face.url);
  clock += 1;
  const b = await connectFace(t, face.url);
  t.ok((await b.client.listTools()).tools.length > 0);
  const err = await a.client.listTools().catch((e: unknown) => e);
  t.equal((err as StreamableHTTPError).code, 404, 'the evicted client gets 404');
  t.equal(face.face.sessionCount, 1);
});

t.test('wire refusals: bad initialize, GET without a session, Accept or a live session; bad versions and levels', async (t) => {
  const { face } = await stack(t);
  const url = face.url;
  const bad = await fetch(url, { method: 'POST', headers: LEGACY_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }) });
  t.equal(bad.status, 400);
  t.equal(((await bad.json()) as { error: { code: number } }).error.code, -32602);
  const sid = await rawInitialize(url);
  t.equal((await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream' } })).status, 400, 'no session id');
  t.equal((await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'nope' } })).status, 404);
  t.equal((await fetch(url, { method: 'GET', headers: { accept: 'application/json', 'mcp-session-id': sid } })).status, 406);
  const note = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  t.equal(note.status, 202);
  const wrongVersion = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2026-07-28' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }),
  });
  t.equal(wrongVersion.status, 400, 'a modern version on a legacy session');
  const badLevel = (await (
    await fetch(url, {
      method: 'POST',
      headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
      body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'logging/setLevel', params: { level: 'loud' } }),
    })
  ).json()) as { error: { code: number } };
  t.equal(badLevel.error.code, -32602);
});

t.test('an upstream that is down: initialize fails with 502 and no session', async (t) => {
  // Port 1 on loopback refuses connections: the upstream client cannot learn the identity.
  const upstream = new ModernUpstreamClient({ name: 'down', url: 'http://127.0.0.1:1/mcp', timeoutMs: 5_000, clientInfo: { name: 'gw', version: 'test' } });
  const face = await startFace(upstream);
  t.teardown(async () => {
    await face.close();
    await upstream.close();
  });
  const res = await fetch(face.url, {
    method: 'POST',
    headers: LEGACY_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } },
    }),
  });
  t.equal(res.status, 502);
  t.notOk(res.headers.get('mcp-session-id'));
  t.equal(face.face.sessionCount, 0);
});

t.test('a resource update before the GET stream opens is not lost', async (t) => {
  const { fx, face } = await stack(t);
  const url = face.url;
  const sid = await rawInitialize(url);
  const sub = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'test://watched-resource' } }),
  });
  t.same(((await sub.json()) as { result: unknown }).result, {});
  fx.notifyResourceUpdated('test://watched-resource');
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const get = await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid }, signal: ac.signal });
  t.equal(get.status, 200);
  const m = await new SseReader(get).next();
  t.same(
    m,
    { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'test://watched-resource' } },
    'from the backlog (or live), without the listen tag',
  );
});

t.test('a client that accepts no SSE cannot be asked: the call fails instead of hanging', async (t) => {
  const { face } = await stack(t);
  const sid = await rawInitialize(face.url, { elicitation: {} });
  const res = await fetch(face.url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, accept: 'application/json', 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'test_elicitation', arguments: { message: 'hi' } } }),
  });
  const body = (await res.json()) as { error: { code: number; message: string } };
  t.equal(body.error.code, -32603);
  t.match(body.error.message, /text\/event-stream/);
});
