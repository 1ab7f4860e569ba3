/**
 * A legacy (2025-11-25) client, the real SDK 1.32.2 Client over its StreamableHTTPClientTransport, through the
 * gateway to the legacy fixture: everything passes through unchanged (session, SSE streams, server→client requests).
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ToolListChangedNotificationSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startStack, type Stack } from '../helpers/stack.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

interface Connected {
  stack: Stack;
  client: Client;
  transport: StreamableHTTPClientTransport;
}

async function connect(t: Teardown, url?: string, stack?: Stack): Promise<Connected> {
  const s = stack ?? (await startStack());
  if (!stack) t.teardown(() => s.close());
  const client = new Client({ name: 'legacy-test-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const transport = new StreamableHTTPClientTransport(new URL(url ?? s.url));
  await client.connect(transport);
  t.teardown(() => client.close());
  return { stack: s, client, transport };
}

t.test('initialize through the gateway: the upstream’s own answer and a session', async (t) => {
  const { client, transport } = await connect(t);
  t.same(client.getServerVersion(), { name: 'legacy-fixture-server', version: '1.0.0' });
  t.same(client.getServerCapabilities(), {
    tools: { listChanged: true },
    resources: { subscribe: true, listChanged: true },
    prompts: { listChanged: true },
    logging: {},
    completions: {},
  });
  t.equal(transport.protocolVersion, '2025-11-25');
  t.type(transport.sessionId, 'string');
});

/** Raw legacy exchange: initialize, then one request; returns the data line of its response. */
async function rawLegacy(url: string, method: string): Promise<string> {
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  const sid = init.headers.get('mcp-session-id') as string;
  await init.text();
  const session = { ...headers, 'mcp-session-id': sid, 'mcp-protocol-version': '2025-11-25' };
  await (await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })).text();
  const res = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method }) });
  const text = await res.text();
  const data = text.split('\n').find((l) => l.startsWith('data:'));
  if (!data) throw new Error(`no data line in ${text}`);
  return data;
}

t.test('tools/list bytes through the gateway equal the upstream’s own', async (t) => {
  const stack = await startStack();
  t.teardown(() => stack.close());
  const viaGateway = await rawLegacy(stack.url, 'tools/list');
  const direct = await rawLegacy(stack.fixture.url, 'tools/list');
  t.equal(viaGateway, direct);
  t.notMatch(viaGateway, /resultType|ttlMs|io\.modelcontextprotocol\/serverInfo/);
});

t.test('listTools: what the upstream sends (no modern stamping, no field removed)', async (t) => {
  const { client, stack } = await connect(t);
  const direct = await connect(t, stack.fixture.url, stack);
  const viaGateway = await client.listTools();
  const fromFixture = await direct.client.listTools();
  t.same(viaGateway, fromFixture);
  t.notOk('resultType' in viaGateway, 'no modern resultType');
  t.notOk('ttlMs' in viaGateway, 'no modern cache hints');
  // Whatever `execution` the upstream declares (the fixture declares none today) reaches the client as sent.
  t.same(
    viaGateway.tools.map((tool) => tool.execution),
    fromFixture.tools.map((tool) => tool.execution),
  );
});

t.test('task-capable upstream: execution.taskSupport and the tasks capability reach the legacy client as sent', async (t) => {
  const fixture = await startLegacyFixture({ tasks: 'native' });
  t.teardown(() => fixture.close());
  const stack = await startStack({}, { url: fixture.url });
  t.teardown(() => stack.close());
  const { client } = await connect(t, stack.url, stack);
  const direct = await connect(t, fixture.url, stack);
  const viaGateway = await client.listTools();
  const fromFixture = await direct.client.listTools();
  t.same(viaGateway, fromFixture);
  const withExecution = viaGateway.tools.filter((tool) => tool.execution !== undefined);
  t.ok(withExecution.length > 0, 'some tools declare execution');
  t.ok(
    withExecution.some((tool) => tool.execution?.taskSupport === 'required'),
    'taskSupport values kept',
  );
  t.same(client.getServerCapabilities()?.tasks, direct.client.getServerCapabilities()?.tasks);
  t.ok(client.getServerCapabilities()?.tasks, 'the legacy tasks capability is passed through');
});

t.test('callTool', async (t) => {
  const { client } = await connect(t);
  const r = await client.callTool({ name: 'greet', arguments: { name: 'Legacy' } });
  t.same(r.content, [{ type: 'text', text: 'Hello, Legacy!' }]);
  t.notOk('resultType' in r);
  const err = await client.callTool({ name: 'test_error_handling', arguments: {} });
  t.equal(err.isError, true);
});

t.test('elicitation: a server→client request on the call stream, answered by the client handler', async (t) => {
  const { client } = await connect(t);
  const asked: ElicitRequest['params'][] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: 'accept', content: { response: 'through the gateway' } };
  });
  const r = await client.callTool({ name: 'test_elicitation', arguments: { message: 'Say something' } });
  t.equal(asked.length, 1);
  t.equal(asked[0]?.message, 'Say something');
  t.same(r.content, [{ type: 'text', text: 'User response: action=accept, content={"response":"through the gateway"}' }]);
});

t.test('progress on the call stream reaches onprogress', async (t) => {
  const { client } = await connect(t);
  const seen: number[] = [];
  await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, { onprogress: (p) => seen.push(p.progress) });
  t.same(seen, [0, 50, 100]);
});

t.test('list_changed reaches the client’s notification handler', async (t) => {
  const { client } = await connect(t);
  const changed = new Promise<string>((resolve) => {
    client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => resolve(n.method));
  });
  await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  t.equal(await changed, 'notifications/tools/list_changed');
});

t.test('session DELETE (terminateSession) passes through; the session is then gone upstream', async (t) => {
  const { transport, stack } = await connect(t);
  const sid = transport.sessionId as string;
  await transport.terminateSession();
  t.equal(transport.sessionId, undefined);
  const res = await fetch(stack.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2025-11-25',
      'mcp-session-id': sid,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  t.equal(res.status, 404, 'the upstream no longer knows the session');
  t.equal(((await res.json()) as any).error.code, -32001);
});

t.test('legacy and modern clients side by side on one endpoint', async (t) => {
  const { client, stack } = await connect(t);
  const { post } = await import('../helpers/modern.js');
  const modern = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'Modern' } });
  t.same(modern.body.result.content, [{ type: 'text', text: 'Hello, Modern!' }]);
  t.equal(modern.body.result.resultType, 'complete');
  const legacy = await client.callTool({ name: 'greet', arguments: { name: 'Legacy' } });
  t.same(legacy.content, [{ type: 'text', text: 'Hello, Legacy!' }]);
});
