/**
 * The legacy face with a real SDK 1.32.2 client in front of the FAKE modern upstream (test/helpers/fake-modern-upstream.ts),
 * for what the real modern fixture cannot show: result shapes it never sends (a typeless input schema, non-object
 * output schemas and structured content), an input kind the session did not declare asked anyway, progress for
 * another token, and a record of what the face passes upstream (per-request capabilities, client info, log
 * level, listen filters, a client's error answer). Everything else runs against the real fixture in
 * face.test.ts.
 */
import t from 'tap';
import {
  LoggingMessageNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
  McpError,
} from '@modelcontextprotocol/sdk/types.js';
import { SseReader } from '../../helpers/sse-reader.js';
import { complete, FakeModernUpstream } from '../../helpers/fake-modern-upstream.js';
import { connectFace, LEGACY_HEADERS, rawInitialize, startFace } from '../../helpers/legacy-face-stack.js';

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
    .on('tools/list', async () =>
      complete(
        {
          tools: [
            { name: 'echo', inputSchema: {} },
            { name: 'ask', inputSchema: { type: 'object' }, outputSchema: { type: 'string' } },
          ],
        },
        true,
      ),
    )
    .on('tools/call:listy', async () => complete({ content: [{ type: 'text', text: '[1,2]' }], structuredContent: [1, 2] }))
    .on('tools/call:echo', async (s) => complete({ content: [{ type: 'text', text: String((s.params.arguments as { text?: string })?.text) }] }))
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

t.test('initialize is answered from the upstream identity; lists lose modern-only fields', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const { client, transport } = await connectFace(t, url, { elicitation: {}, sampling: {} });
  t.match(transport.sessionId, /^[A-Za-z0-9_-]{22}$/, 'a gateway-minted session id');
  t.same(client.getServerVersion(), { name: 'fake-modern', version: '9.9.9' });
  t.equal(client.getInstructions(), 'fake instructions');
  const caps = client.getServerCapabilities() as Record<string, unknown>;
  t.notOk('extensions' in caps, 'no extensions slot for a legacy client');
  t.same(caps.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } }, 'the upstream declares the tasks extension: 2025-11-25 tasks advertised');
  t.same(caps.tools, { listChanged: true });

  const list = await client.listTools();
  t.same(
    list.tools.map((x) => x.name),
    ['echo', 'ask'],
  );
  t.same(list.tools[0]?.inputSchema, { type: 'object' }, 'a typeless input schema becomes an object schema');
  t.notOk('outputSchema' in (list.tools[1] ?? {}), 'a non-object output schema is dropped');
  t.same(
    list.tools.map((x) => x.execution?.taskSupport),
    ['optional', 'optional'],
    'a modern upstream with the extension may answer any tool with a task',
  );
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
  const listy = await client.callTool({ name: 'listy', arguments: {} });
  t.same(listy.content, [{ type: 'text', text: '[1,2]' }]);
  t.notOk('structuredContent' in listy, 'a non-object structuredContent is dropped for a 2025-11-25 client');
  t.same(await client.ping(), {}, 'ping is answered locally');
  t.equal(fake.calls.filter((c) => c.method === 'ping').length, 0);
});

t.test('an input kind the session did not declare is never sent: the call fails with -32021', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const { client } = await connectFace(t, url, { elicitation: {} });
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
  const { client } = await connectFace(t, url);
  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
    logs.push(n.params.data);
  });
  await client.setLoggingLevel('warning');
  const progress: number[] = [];
  const r = await client.callTool({ name: 'chatty', arguments: {} }, undefined, { onprogress: (p) => progress.push(p.progress) });
  t.same(r.content, [{ type: 'text', text: 'done' }]);
  t.same(progress, [1, 2], "the client's own progress only");
  t.same(logs, ['loud'], 'below the level is dropped');
  t.equal(fake.calls.find((c) => c.params?.name === 'chatty')?.caller.logLevel, 'warning', 'the level is the per-request logLevel upstream');
});

t.test('the GET stream and resources/subscribe are served from an upstream listen', async (t) => {
  const fake = scripted();
  const { url } = await setup(t, fake);
  const { client } = await connectFace(t, url);
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
  t.notOk(
    fake.listens.some((x) => !x.signal.aborted && x.filter.resourceSubscriptions?.includes('test://a')),
    'unsubscribe drops it from the filter',
  );

  // List changes need the GET stream; the SDK client opens it after notifications/initialized.
  await fake.listenOpened((f) => f.toolsListChanged === true);
  fake.emit('notifications/tools/list_changed');
  await listChanged.promise;
  t.pass('tools/list_changed arrived on the GET stream');
});

t.test("a client's error answer to an input request reaches the upstream call", async (t) => {
  let answer: unknown;
  const fake = scripted().on('tools/call:ask_once', async (s) => {
    answer = await s.ask('elicitation/create', { mode: 'form', message: 'ok?', requestedSchema: { type: 'object', properties: {} } });
    return complete({ content: [{ type: 'text', text: 'asked' }] });
  });
  const { url } = await setup(t, fake);
  const sid = await rawInitialize(url, { elicitation: {} });
  const call = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'ask_once', arguments: {} } }),
  });
  t.match(call.headers.get('content-type') ?? '', /^text\/event-stream/, "the call's stream carries the request");
  const reader = new SseReader(call);
  const req = await reader.next();
  t.equal(req.method, 'elicitation/create');
  t.match(req.id, /^gw-\d+$/, 'a gateway-minted id');
  const unknown = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'gw-999', result: {} }),
  });
  t.equal(unknown.status, 202, 'a response to nothing is accepted and dropped');
  const posted = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id: req.id, error: { code: -1, message: 'user closed the dialog' } }),
  });
  t.equal(posted.status, 202);
  const final = await reader.next();
  t.same(final, { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'asked' }] } });
  t.same(answer, { error: { code: -1, message: 'user closed the dialog' } });
});
