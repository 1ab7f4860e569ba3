/**
 * The legacy face with a real SDK 1.32.2 client, in front of the FAKE modern upstream (fake-modern-upstream.ts):
 * what the face sends upstream (per-request capabilities, client info, log level), what a strict legacy client
 * receives, and the cases a conforming server cannot produce (an undeclared input kind). The same face in front
 * of the real modern fixture is face-modern.test.ts.
 */
import t from 'tap';
import { ElicitRequestSchema, CreateMessageRequestSchema, LoggingMessageNotificationSchema, ResourceUpdatedNotificationSchema, ToolListChangedNotificationSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UpstreamUnavailableError } from '../../src/upstream/index.js';
import { SseReader } from '../helpers/sse-reader.js';
import { complete, FakeModernUpstream, type Script } from './fake-modern-upstream.js';
import { legacyClient, startFace } from './face-stack.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

function deferred<T = void>() {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

function scripted(): FakeModernUpstream {
  return new FakeModernUpstream()
    .on('tools/list', async () => complete({ tools: [{ name: 'echo', inputSchema: {} }, { name: 'ask', inputSchema: { type: 'object' }, outputSchema: { type: 'string' } }] }, true))
    .on('tools/call:echo', async (s) => complete({ content: [{ type: 'text', text: String((s.params.arguments as { text?: string })?.text) }] }))
    .on('tools/call:ask', async (s) => {
      const a = await s.ask('elicitation/create', { mode: 'form', message: 'Name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } });
      const name = 'result' in a ? (a.result.content as { name?: string } | undefined)?.name : 'error';
      return complete({ content: [{ type: 'text', text: `Hello, ${name}` }], structuredContent: `Hello, ${name}` });
    })
    .on('tools/call:two_rounds', async (s) => {
      const first = await s.ask('elicitation/create', { mode: 'form', message: 'First?', requestedSchema: { type: 'object', properties: { a: { type: 'string' } } } });
      const second = await s.ask('sampling/createMessage', { messages: [{ role: 'user', content: { type: 'text', text: 'Second?' } }], maxTokens: 10 });
      const a = 'result' in first ? (first.result.content as { a?: string }).a : '?';
      const b = 'result' in second ? (second.result.content as { text?: string }).text : '?';
      return complete({ content: [{ type: 'text', text: `${a}+${b}` }] });
    })
    .on('tools/call:roots', async (s) => {
      await s.ask('roots/list');
      return complete({ content: [{ type: 'text', text: 'got roots' }] });
    });
}

async function setup(t: Teardown, fake: FakeModernUpstream, opts: Parameters<typeof startFace>[1] = {}) {
  const stack = await startFace(fake, opts);
  t.teardown(() => stack.close());
  return stack;
}

async function connect(t: Teardown, url: string, capabilities: Record<string, unknown> = {}, headers: Record<string, string> = {}) {
  const c = await legacyClient(url, capabilities, headers);
  c.client.onerror = () => {};
  t.teardown(() => c.client.close());
  return c;
}

t.test('initialize is answered from the upstream identity; lists lose modern-only fields', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const { client, transport } = await connect(t, url, { elicitation: {}, sampling: {} });
  t.match(transport.sessionId, /^[A-Za-z0-9_-]{22}$/, 'a gateway-minted session id');
  t.same(client.getServerVersion(), { name: 'fake-modern', version: '9.9.9' });
  t.equal(client.getInstructions(), 'fake instructions');
  const caps = client.getServerCapabilities() as Record<string, unknown>;
  t.notOk('extensions' in caps, 'no extensions slot for a legacy client');
  t.notOk('tasks' in caps, 'no tasks: this face serves no tasks/*');
  t.same(caps.tools, { listChanged: true });

  const list = await client.listTools();
  t.same(list.tools.map((x) => x.name), ['echo', 'ask']);
  t.same(list.tools[0]?.inputSchema, { type: 'object' }, 'a typeless input schema becomes an object schema');
  t.notOk('outputSchema' in (list.tools[1] ?? {}), 'a non-object output schema is dropped');
  t.notOk('resultType' in list);
  t.notOk('ttlMs' in list);
  t.notOk('_meta' in list, 'the serverInfo _meta key is dropped');

  const seen = fake.calls.find((c) => c.method === 'tools/list');
  t.same(seen?.caller.capabilities, { elicitation: { form: {} }, sampling: {} }, 'session capabilities sent per request');
  t.same(seen?.caller.clientInfo, { name: 'legacy-test-client', version: '1.0.0' });
  t.notOk(seen?.caller.logLevel, 'no log level before logging/setLevel');

  const r = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
  t.same(r.content, [{ type: 'text', text: 'hi' }]);
  t.notOk('resultType' in r);
  t.same(await client.ping(), {}, 'ping is answered locally');
  t.equal(fake.calls.filter((c) => c.method === 'ping').length, 0);
});

t.test('input requests reach the client handlers on the call stream, over several rounds', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const { client } = await connect(t, url, { elicitation: {}, sampling: {} });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked.push(req.params.message);
    return { action: 'accept', content: req.params.message === 'Name?' ? { name: 'Ada' } : { a: 'one' } };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => {
    asked.push('sampling');
    return { role: 'assistant', content: { type: 'text', text: 'two' }, model: 'm' };
  });

  const r = await client.callTool({ name: 'ask', arguments: {} });
  t.same(r.content, [{ type: 'text', text: 'Hello, Ada' }]);
  t.notOk('structuredContent' in r, 'a non-object structuredContent is dropped for a 2025-11-25 client');
  const two = await client.callTool({ name: 'two_rounds', arguments: {} });
  t.same(two.content, [{ type: 'text', text: 'one+two' }]);
  t.same(asked, ['Name?', 'First?', 'sampling']);
});

t.test('an input kind the session did not declare is never sent: the call fails with -32021', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const { client } = await connect(t, url, { elicitation: {} });
  const unexpected: string[] = [];
  client.fallbackRequestHandler = async (req) => {
    unexpected.push(req.method);
    return {};
  };
  const err = await client.callTool({ name: 'roots', arguments: {} }).catch((e: unknown) => e);
  t.type(err, McpError);
  t.equal((err as McpError).code, -32021);
  t.same((err as McpError).data, { requiredCapabilities: { roots: {} } });
  t.same(unexpected, [], 'the client got no roots/list');
  t.equal(fake.calls.at(-1)?.call.cancelledWith !== undefined, true, 'the upstream call was stopped');
});

t.test('notifications/cancelled aborts the upstream call', async (t) => {
  const started = deferred();
  const stopped = deferred<string>();
  const fake = scripted().on('tools/call:slow', async (s: Script) => {
    started.resolve();
    await new Promise<void>((r) => s.signal.addEventListener('abort', () => r(), { once: true }));
    stopped.resolve(String((s.signal.reason as Error).message));
    return complete({ content: [] });
  });
  const { url } = await setup(t, fake);
  const { client } = await connect(t, url);
  const ac = new AbortController();
  const pending = client.callTool({ name: 'slow', arguments: {} }, undefined, { signal: ac.signal }).catch((e: unknown) => e);
  await started.promise;
  ac.abort('user pressed stop');
  t.ok(await pending, 'the client call rejects');
  t.ok(await stopped.promise, 'the upstream call was aborted');
});

t.test('logging/setLevel travels upstream; progress and log messages are relayed, filtered by level', async (t) => {
  const fake = scripted().on('tools/call:chatty', async (s) => {
    const token = (s.params._meta as { progressToken?: unknown } | undefined)?.progressToken;
    s.notify('notifications/progress', { progressToken: token, progress: 1, total: 2 });
    s.notify('notifications/progress', { progressToken: 'someone-else', progress: 1 });
    s.notify('notifications/message', { level: 'info', data: 'quiet' });
    s.notify('notifications/message', { level: 'error', data: 'loud' });
    s.notify('notifications/progress', { progressToken: token, progress: 2, total: 2 });
    return complete({ content: [{ type: 'text', text: 'done' }] });
  });
  const { url } = await setup(t, fake);
  const { client } = await connect(t, url);
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
    logs.push(n.params.data);
  });
  await client.setLoggingLevel('warning');
  const progress: number[] = [];
  const r = await client.callTool({ name: 'chatty', arguments: {} }, undefined, { onprogress: (p) => progress.push(p.progress) });
  t.same(r.content, [{ type: 'text', text: 'done' }]);
  t.same(progress, [1, 2], 'the client\'s own progress only');
  t.same(logs, ['loud'], 'below the level is dropped');
  t.equal(fake.calls.find((c) => c.params?.name === 'chatty')?.caller.logLevel, 'warning', 'the level is the per-request logLevel upstream');
});

t.test('the GET stream and resources/subscribe are served from an upstream listen', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const { client } = await connect(t, url);
  const updated: string[] = [];
  const gotUpdate = deferred();
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, async (n) => {
    updated.push(n.params.uri);
    gotUpdate.resolve();
  });
  const listChanged = deferred();
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => listChanged.resolve());

  await client.subscribeResource({ uri: 'test://a' });
  const l = fake.listens.at(-1);
  t.same(l?.filter.resourceSubscriptions, ['test://a'], 'the listen carries the subscription once subscribe is answered');
  t.equal(fake.emit('notifications/resources/updated', { uri: 'test://b' }), 0, 'not subscribed: the upstream is not asked for it');
  t.ok(fake.emit('notifications/resources/updated', { uri: 'test://a' }) >= 1);
  await gotUpdate.promise;
  t.same(updated, ['test://a']);

  await client.unsubscribeResource({ uri: 'test://a' });
  t.notOk(fake.listens.some((x) => !x.signal.aborted && x.filter.resourceSubscriptions?.includes('test://a')), 'unsubscribe drops it from the filter');

  // List changes need the GET stream; the SDK client opens it after notifications/initialized.
  await fake.listenOpened((f) => f.toolsListChanged === true);
  fake.emit('notifications/tools/list_changed');
  await listChanged.promise;
  t.pass('tools/list_changed arrived on the GET stream');
});

t.test('sessions: bound to the principal, 400 without an id, DELETE ends them', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const { transport } = await connect(t, url, {}, { authorization: 'Bearer alice' });
  const sid = transport.sessionId as string;
  const post = (headers: Record<string, string>, body: unknown) =>
    fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body: JSON.stringify(body) });
  const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };

  t.equal((await post({ 'mcp-session-id': sid, authorization: 'Bearer alice' }, ping)).status, 200, 'the owner');
  t.equal((await post({ 'mcp-session-id': sid, authorization: 'Bearer mallory' }, ping)).status, 404, 'another principal: as unknown');
  t.equal((await post({ 'mcp-session-id': sid }, ping)).status, 404, 'no credentials: another principal');
  t.equal((await post({ authorization: 'Bearer alice' }, ping)).status, 400, 'no session id');
  t.equal((await post({ 'mcp-session-id': 'made-up', authorization: 'Bearer alice' }, ping)).status, 404);
  const notServed = (await (await post({ 'mcp-session-id': sid, authorization: 'Bearer alice' }, { jsonrpc: '2.0', id: 2, method: 'tasks/list' })).json()) as { error: { code: number } };
  t.equal(notServed.error.code, -32601, 'tasks/* are not served (no tasks capability advertised)');
  t.equal((await post({ 'mcp-session-id': sid, authorization: 'Bearer alice' }, [ping])).status, 400, 'no batches');

  t.equal((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid, authorization: 'Bearer mallory' } })).status, 404, 'only the owner ends it');
  t.equal((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': sid, authorization: 'Bearer alice' } })).status, 200);
  t.equal((await post({ 'mcp-session-id': sid, authorization: 'Bearer alice' }, ping)).status, 404, 'ended');
});

t.test('an idle session expires: the client gets 404 and re-initializes', async (t) => {
  const fake = scripted();
  let clock = 0;
  const { url, face } = await setup(t, fake, { idleMs: 60_000, now: () => clock });
  const first = await connect(t, url);
  await first.client.listTools();
  clock += 60_001;
  const err = await first.client.listTools().catch((e: unknown) => e);
  t.type(err, StreamableHTTPError);
  t.equal((err as StreamableHTTPError).code, 404, 'expired → 404');
  t.equal(face.sessionCount, 0);

  const again = await connect(t, url);
  t.not(again.transport.sessionId, first.transport.sessionId, 'a new session');
  const list = await again.client.listTools();
  t.equal(list.tools.length, 2);
});

t.test('the bound on sessions: the least recently used idle session makes room', async (t) => {
  const fake = scripted();
  let clock = 0;
  const { url } = await setup(t, fake, { maxSessions: 1, now: () => clock });
  const a = await connect(t, url);
  clock += 1;
  const b = await connect(t, url);
  t.equal((await b.client.listTools()).tools.length, 2);
  const err = await a.client.listTools().catch((e: unknown) => e);
  t.equal((err as StreamableHTTPError).code, 404, 'the evicted client gets 404');
});

/** Raw legacy wire helpers for what the SDK client does not let a test do. */
const LEGACY_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
async function rawInitialize(url: string, capabilities: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: LEGACY_HEADERS,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'raw', version: '1' } } }),
  });
  await res.body?.cancel();
  return res.headers.get('mcp-session-id') as string;
}

t.test('wire refusals: bad initialize, GET without a session, Accept or a live session', async (t) => {
  const { url } = await setup(t, scripted());
  const bad = await fetch(url, { method: 'POST', headers: LEGACY_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }) });
  t.equal(bad.status, 400);
  t.equal(((await bad.json()) as { error: { code: number } }).error.code, -32602);
  const sid = await rawInitialize(url);
  t.equal((await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream' } })).status, 400, 'no session id');
  t.equal((await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': 'nope' } })).status, 404);
  t.equal((await fetch(url, { method: 'GET', headers: { accept: 'application/json', 'mcp-session-id': sid } })).status, 406);
  const note = await fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  t.equal(note.status, 202);
  const wrongVersion = await fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid, 'mcp-protocol-version': '2026-07-28' }, body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'ping' }) });
  t.equal(wrongVersion.status, 400, 'a modern version on a legacy session');
  const badLevel = (await (await fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'logging/setLevel', params: { level: 'loud' } }) })).json()) as { error: { code: number } };
  t.equal(badLevel.error.code, -32602);
});

t.test('an upstream that cannot say who it is: initialize fails with the edge status, no session', async (t) => {
  const fake = scripted();
  fake.identity = async () => {
    throw new UpstreamUnavailableError('connection refused');
  };
  const { url, face } = await setup(t, fake);
  const res = await fetch(url, { method: 'POST', headers: LEGACY_HEADERS, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } }) });
  t.equal(res.status, 502);
  t.notOk(res.headers.get('mcp-session-id'));
  t.equal(face.sessionCount, 0);
});

t.test('a resource update without a GET stream waits in the backlog and arrives when the stream opens', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const sid = await rawInitialize(url);
  const sub = await fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'test://a' } }) });
  t.same(((await sub.json()) as { result: unknown }).result, {});
  t.equal(fake.emit('notifications/resources/updated', { uri: 'test://a' }), 1);
  const ac = new AbortController();
  t.teardown(() => ac.abort());
  const get = await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream', 'mcp-session-id': sid }, signal: ac.signal });
  t.equal(get.status, 200);
  const m = await new SseReader(get).next();
  t.same(m, { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'test://a' } }, 'no subscriptionId tag');
});

t.test('a client\'s error answer to an input request reaches the upstream call', async (t) => {
  let answer: unknown;
  const fake = scripted().on('tools/call:ask_once', async (s) => {
    answer = await s.ask('elicitation/create', { mode: 'form', message: 'ok?', requestedSchema: { type: 'object', properties: {} } });
    return complete({ content: [{ type: 'text', text: 'asked' }] });
  });
  const { url } = await setup(t, fake);
  const sid = await rawInitialize(url, { elicitation: {} });
  const call = await fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'ask_once', arguments: {} } }) });
  t.match(call.headers.get('content-type') ?? '', /^text\/event-stream/, 'the call\'s stream carries the request');
  const reader = new SseReader(call);
  const req = await reader.next();
  t.equal(req.method, 'elicitation/create');
  t.match(req.id, /^gw-\d+$/, 'a gateway-minted id');
  const unknown = await fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 'gw-999', result: {} }) });
  t.equal(unknown.status, 202, 'a response to nothing is accepted and dropped');
  const posted = await fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: req.id, error: { code: -1, message: 'user closed the dialog' } }) });
  t.equal(posted.status, 202);
  const final = await reader.next();
  t.same(final, { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'asked' }] } });
  t.same(answer, { error: { code: -1, message: 'user closed the dialog' } });
});

t.test('a client that accepts no SSE cannot be asked: the call fails instead of hanging', async (t) => {
  const { url } = await setup(t, scripted());
  const sid = await rawInitialize(url, { elicitation: {} });
  const res = await fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, accept: 'application/json', 'mcp-session-id': sid }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: {} } }) });
  const body = (await res.json()) as { error: { code: number } };
  t.equal(body.error.code, -32603);
});
