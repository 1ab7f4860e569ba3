/**
 * The modern fixture (test/fixtures/modern-server.ts) on its own, with real clients: the v2 SDK client
 * (@modelcontextprotocol/client 2.4.0, version negotiation 'auto'), raw fetch for wire-level MRTR and errors,
 * and the SDK 1.32.2 `Client` for the dual mode's 2025-11-25 side.
 */
import t from 'tap';
import { Client, type Progress } from '@modelcontextprotocol/client';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startModernFixture, type ModernFixture, type ModernFixtureOptions } from './fixtures/modern-server.js';
import { envelope, post } from './helpers/modern.js';
import { SseReader, openListen } from './helpers/sse-reader.js';

const ALL_CAPS = { elicitation: {}, sampling: {}, roots: { listChanged: true } };

async function fixture(t: { teardown(fn: () => unknown): void }, opts: ModernFixtureOptions): Promise<ModernFixture> {
  const fx = await startModernFixture(opts);
  t.teardown(() => fx.close());
  return fx;
}

async function modernClient(t: { teardown(fn: () => unknown): void }, url: string): Promise<Client> {
  const client = new Client({ name: 'fixture-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada', ok: true } }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.teardown(() => client.close());
  return client;
}

for (const mode of ['modern', 'dual'] as const) {
  t.test(`${mode}: the v2 client discovers a 2026-07-28 server`, async (t) => {
    const fx = await fixture(t, { mode });
    const client = await modernClient(t, fx.url);
    t.equal(client.getProtocolEra(), 'modern');
    t.same(client.getServerVersion(), { name: 'modern-fixture-server', version: '1.0.0' });
    // Reference servers list only the modern version even when they also serve 2025 clients.
    t.same(client.getDiscoverResult()?.supportedVersions, ['2026-07-28']);
    const caps = client.getServerCapabilities();
    t.same(caps?.tools, { listChanged: true });
    t.same(caps?.prompts, { listChanged: true });
    t.ok(caps?.logging);
    t.ok(caps?.completions);
  });
}

t.test('lists: tools, resources, templates, prompts, in a stable order', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const client = await modernClient(t, fx.url);
  const tools = await client.listTools(undefined, { cacheMode: 'bypass' });
  const names = tools.tools.map((tool) => tool.name);
  t.equal(names[0], 'test_simple_text');
  for (const n of ['greet', 'test_tool_with_progress', 'test_missing_capability', 'test_input_required_result_multi_round']) t.ok(names.includes(n), n);
  t.notOk(names.includes('slow_compute'), 'no task tools');
  t.same(
    (await client.listTools(undefined, { cacheMode: 'bypass' })).tools.map((tool) => tool.name),
    names,
  );
  t.same(
    (await client.listResources()).resources.map((r) => r.uri),
    ['test://static-text', 'test://static-binary', 'test://watched-resource'],
  );
  t.same(
    (await client.listResourceTemplates()).resourceTemplates.map((r) => r.uriTemplate),
    ['test://template/{id}/data'],
  );
  t.ok((await client.listPrompts()).prompts.some((p) => p.name === 'test_input_required_result_prompt'));
  const done = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'par' } });
  t.same(done.completion.values, ['paris', 'park', 'party']);
});

t.test('a call with progress: the v2 client sees every step, then the result', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const client = await modernClient(t, fx.url);
  const progress: Progress[] = [];
  const result = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, { onprogress: (p) => progress.push(p) });
  t.same(
    progress.map((p) => p.progress),
    [0, 50, 100],
  );
  const first = (result.content as Array<{ type: string; text: string }>)[0];
  t.equal(first?.type, 'text');
  t.not(first?.text, 'no-progress-token', 'the client sent a progressToken and the tool saw it');
  t.equal(fx.stats().toolCalls.test_tool_with_progress, 1);
});

t.test('MRTR by raw fetch: round 1 asks with a sealed state, round 2 completes, a tampered state is refused', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const name = 'test_input_required_result_request_state';
  const r1 = await post(fx.url, 'tools/call', { name, arguments: {} }, { capabilities: ALL_CAPS });
  t.equal(r1.status, 200);
  const first = r1.body.result;
  t.equal(first.resultType, 'input_required');
  t.equal(first.inputRequests.confirm.method, 'elicitation/create');
  t.type(first.requestState, 'string');

  const answer = { confirm: { action: 'accept', content: { ok: true } } };
  const r2 = await post(fx.url, 'tools/call', { name, arguments: {}, inputResponses: answer, requestState: first.requestState }, { capabilities: ALL_CAPS });
  t.equal(r2.body.result.resultType, 'complete');
  t.match(r2.body.result.content[0].text, /state-ok/);

  const tampered = await post(
    fx.url,
    'tools/call',
    { name, arguments: {}, inputResponses: answer, requestState: `${first.requestState}x` },
    { capabilities: ALL_CAPS },
  );
  t.equal(tampered.body.error?.code, -32602, 'tampered requestState is a protocol error');
  t.equal(fx.stats().toolCalls[name], 2, 'the tampered round never reached the tool');
});

t.test('MRTR multi-round: each round carries a new state; the last one completes with both answers', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const name = 'test_input_required_result_multi_round';
  const r1 = (await post(fx.url, 'tools/call', { name, arguments: {} }, { capabilities: ALL_CAPS })).body.result;
  t.same(Object.keys(r1.inputRequests), ['step1']);
  const r2 = (
    await post(
      fx.url,
      'tools/call',
      { name, arguments: {}, inputResponses: { step1: { action: 'accept', content: { name: 'Ada' } } }, requestState: r1.requestState },
      { capabilities: ALL_CAPS },
    )
  ).body.result;
  t.same(Object.keys(r2.inputRequests), ['step2']);
  t.not(r2.requestState, r1.requestState);
  const r3 = (
    await post(
      fx.url,
      'tools/call',
      { name, arguments: {}, inputResponses: { step2: { action: 'accept', content: { color: 'blue' } } }, requestState: r2.requestState },
      { capabilities: ALL_CAPS },
    )
  ).body.result;
  t.equal(r3.resultType, 'complete');
  t.equal(r3.content[0].text, 'Multi-round complete for Ada who likes blue');
});

t.test('the capability-gated tool answers -32021 (HTTP 400) unless the request declares sampling', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const refused = await post(fx.url, 'tools/call', { name: 'test_missing_capability', arguments: {} }, { capabilities: { elicitation: {} } });
  t.equal(refused.status, 400);
  t.equal(refused.body.error.code, -32021);
  t.same(refused.body.error.data, { requiredCapabilities: { sampling: {} } });
  const asked = await post(fx.url, 'tools/call', { name: 'test_missing_capability', arguments: {} }, { capabilities: { sampling: {} } });
  t.equal(asked.body.result.resultType, 'input_required');
  t.equal(asked.body.result.inputRequests.capability_probe.method, 'sampling/createMessage');
  // The capabilities tool asks only for what was declared.
  const onlySampling = await post(fx.url, 'tools/call', { name: 'test_input_required_result_capabilities', arguments: {} }, { capabilities: { sampling: {} } });
  t.same(Object.keys(onlySampling.body.result.inputRequests), ['sample_input']);
});

t.test('logging follows io.modelcontextprotocol/logLevel: nothing without it, filtered with it', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const silent = await post(fx.url, 'tools/call', { name: 'test_tool_with_logging', arguments: {} });
  t.same(silent.messages, [], 'no log without a logLevel');
  const info = await post(fx.url, 'tools/call', {
    name: 'test_tool_with_logging',
    arguments: {},
    _meta: envelope({}, { 'io.modelcontextprotocol/logLevel': 'info' }),
  });
  t.equal(info.messages.filter((m) => m.method === 'notifications/message').length, 3);
  const error = await post(fx.url, 'tools/call', {
    name: 'test_tool_with_logging',
    arguments: {},
    _meta: envelope({}, { 'io.modelcontextprotocol/logLevel': 'error' }),
  });
  t.same(error.messages, [], 'info logs are below error');
  t.equal(fx.stats().recent.at(-1)?.envelope?.['io.modelcontextprotocol/logLevel'], 'error', 'stats record the envelope');
});

t.test('subscriptions/listen: acknowledged, then a list change triggered by a call', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const listen = await openListen(t, fx.url, 'listen-1', { toolsListChanged: true });
  const ack = await listen.stream.next();
  t.equal(ack.method, 'notifications/subscriptions/acknowledged');
  await post(fx.url, 'tools/call', { name: 'test_trigger_tool_change', arguments: {} });
  const changed = await listen.stream.next();
  t.equal(changed.method, 'notifications/tools/list_changed');
  t.equal(changed.params._meta['io.modelcontextprotocol/subscriptionId'], 'listen-1');
});

t.test("responseMode 'json': plain JSON answers, mid-call notifications dropped", async (t) => {
  const fx = await fixture(t, { mode: 'dual', responseMode: 'json' });
  const r = await post(fx.url, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: { ...envelope(), progressToken: 'p1' } });
  t.equal(r.status, 200);
  t.match(r.contentType, /^application\/json/);
  t.equal(r.body.result.content[0].text, 'p1');
  const legacy = await fetch(fx.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  t.match(legacy.headers.get('content-type') ?? '', /^application\/json/, 'the legacy leg answers JSON too');
  t.equal(((await legacy.json()) as { result: { protocolVersion: string } }).result.protocolVersion, '2025-11-25');
});

t.test('modern mode refuses initialize with -32022 naming 2026-07-28; GET is 405', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const res = await fetch(fx.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  t.equal(res.status, 400);
  const body = (await res.json()) as { error: { code: number; data: { supported: string[] } } };
  t.equal(body.error.code, -32022);
  t.same(body.error.data.supported, ['2026-07-28']);
  const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
  await t.rejects(client.connect(new LegacyTransport(new URL(fx.url))), 'an SDK 1.32.2 client cannot connect');
  await client.close();
  t.equal((await fetch(fx.url, { headers: { accept: 'text/event-stream' } })).status, 405);
  t.equal(fx.stats().legacySessionsOpened, 0);
});

t.test('dual mode serves an SDK 1.32.2 client itself: MRTR tools become server→client requests', async (t) => {
  const fx = await fixture(t, { mode: 'dual' });
  const client = new LegacyClient({ name: 'legacy', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {}, roots: {} } });
  const asked: string[] = [];
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params.message);
    const props = Object.keys((request.params as { requestedSchema?: { properties?: object } }).requestedSchema?.properties ?? {});
    return { action: 'accept', content: Object.fromEntries(props.map((p) => [p, p === 'color' ? 'blue' : 'Ada'])) };
  });
  client.setRequestHandler(CreateMessageRequestSchema, async () => ({ role: 'assistant', model: 'test', content: { type: 'text', text: 'Paris' } }));
  client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: 'file:///tmp', name: 'tmp' }] }));
  const logs: string[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
    logs.push(String(n.params.data));
  });
  const toolChanges: unknown[] = [];
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => {
    toolChanges.push(n);
  });
  const transport = new LegacyTransport(new URL(fx.url));
  await client.connect(transport);
  t.teardown(() => client.close());
  t.equal(client.getServerVersion()?.name, 'modern-fixture-server');
  t.ok(transport.sessionId, 'a legacy session');
  t.equal(fx.stats().legacySessionsOpen, 1);

  t.ok((await client.listTools()).tools.some((tool) => tool.name === 'greet'));
  const multi = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
  t.same(multi.content, [{ type: 'text', text: 'Multi-round complete for Ada who likes blue' }]);
  t.same(asked, ['Step 1: What is your name?', 'Step 2: What is your favorite color?']);
  const sampled = await client.callTool({ name: 'test_input_required_result_sampling', arguments: {} });
  t.same(sampled.content, [{ type: 'text', text: 'Sampling result: Paris' }]);
  const all = await client.callTool({ name: 'test_input_required_result_multiple_inputs', arguments: {} });
  t.same(all.content, [{ type: 'text', text: 'Name: Ada; Greeting: Paris; Roots: 1' }]);

  await client.setLoggingLevel('warning');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  t.same(logs, [], 'setLevel warning filters info logs');
  await client.setLoggingLevel('info');
  await client.callTool({ name: 'test_tool_with_logging', arguments: {} });
  t.equal(logs.length, 3);

  const progress: number[] = [];
  await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, { onprogress: (p) => progress.push(p.progress) });
  t.same(progress, [0, 50, 100]);
  t.ok(fx.stats().recent.some((r) => r.era === 'legacy' && r.method === 'tools/call' && r.sessionId === transport.sessionId));
});

t.test('dual mode: a legacy client without sampling gets the gated tool refused', async (t) => {
  const fx = await fixture(t, { mode: 'dual' });
  const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(fx.url)));
  t.teardown(() => client.close());
  await t.rejects(client.callTool({ name: 'test_missing_capability', arguments: {} }), { code: -32021 });
});

t.test('cancellation: closing the modern response stream aborts the call', async (t) => {
  const fx = await fixture(t, { mode: 'modern' });
  const cancelled = fx.nextCancellation();
  const controller = new AbortController();
  const res = await fetch(fx.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'test_cancellable_wait',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'test_cancellable_wait', arguments: {}, _meta: { ...envelope(), progressToken: 'w1' } },
    }),
    signal: controller.signal,
  });
  const stream = new SseReader(res);
  const started = await stream.next();
  t.equal(started.method, 'notifications/progress', 'the call is running');
  controller.abort();
  await stream.cancel();
  t.equal(await cancelled, 'test_cancellable_wait');
  t.equal(fx.stats().cancelledCalls.test_cancellable_wait, 1);
});

t.test('cancellation: a legacy client on the dual fixture cancels with notifications/cancelled', async (t) => {
  const fx = await fixture(t, { mode: 'dual' });
  const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
  await client.connect(new LegacyTransport(new URL(fx.url)));
  t.teardown(() => client.close());
  const cancelled = fx.nextCancellation();
  const controller = new AbortController();
  let started!: () => void;
  const running = new Promise<void>((resolve) => (started = resolve));
  const call = client.callTool({ name: 'test_cancellable_wait', arguments: {} }, undefined, { signal: controller.signal, onprogress: () => started() });
  await running;
  controller.abort();
  await t.rejects(call);
  t.equal(await cancelled, 'test_cancellable_wait');
});
