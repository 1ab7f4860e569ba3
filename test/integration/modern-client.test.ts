/**
 * A real v2 SDK client (@modelcontextprotocol/client 2.4.0, version negotiation 'auto') talks to the gateway in
 * front of the legacy fixture (SDK 1.32.2). The client must end up on the modern era and see the upstream's
 * identity; MRTR rounds are fulfilled by the client's own elicitation handler.
 */
import t from 'tap';
import { Client, StreamableHTTPClientTransport, type Progress } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startStack, type Stack } from '../helpers/stack.js';

interface Connected {
  stack: Stack;
  client: Client;
  elicitations: unknown[];
}

/** The part of a tap test these helpers use. */
interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Answers an elicitation by filling every property of its requested schema (strings get `Ada`, then `blue`, …). */
function answerFor(params: Record<string, unknown>): Record<string, string | boolean> {
  const schema = params.requestedSchema as { properties?: Record<string, { type?: string }> } | undefined;
  const content: Record<string, string | boolean> = {};
  for (const [k, v] of Object.entries(schema?.properties ?? {})) {
    content[k] = v.type === 'boolean' ? true : k === 'color' ? 'blue' : k === 'context' ? 'billing' : 'Ada';
  }
  return content;
}

async function connect(t: Teardown): Promise<Connected> {
  const stack = await startStack();
  t.teardown(() => stack.close());
  const elicitations: unknown[] = [];
  const client = new Client({ name: 'v2-test-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
  client.setRequestHandler('elicitation/create', async (request) => {
    elicitations.push(request.params);
    return { action: 'accept', content: answerFor(request.params as Record<string, unknown>) };
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.url)));
  t.teardown(() => client.close());
  return { stack, client, elicitations };
}

t.test('connect negotiates the modern era and reports the upstream identity', async (t) => {
  const { client } = await connect(t);
  t.equal(client.getProtocolEra(), 'modern');
  t.same(client.getServerVersion(), { name: 'legacy-fixture-server', version: '1.0.0' });
  const caps = client.getServerCapabilities();
  t.same(caps?.tools, { listChanged: true });
  t.same(caps?.resources, { subscribe: true, listChanged: true });
  t.same(caps?.prompts, { listChanged: true });
  t.ok(caps?.completions, 'completions capability from the upstream');
  t.notOk(caps && 'tasks' in caps, 'no legacy tasks slot');
  t.same(client.getDiscoverResult()?.supportedVersions, ['2026-07-28']);
});

t.test('listTools: the upstream catalogue, no execution field, same order twice', async (t) => {
  const { client } = await connect(t);
  const first = await client.listTools(undefined, { cacheMode: 'bypass' });
  const second = await client.listTools(undefined, { cacheMode: 'bypass' });
  const names = first.tools.map((tool) => tool.name);
  t.ok(names.length >= 20, `many tools (${names.length})`);
  t.equal(names[0], 'test_simple_text');
  t.ok(names.includes('greet'));
  t.ok(names.includes('test_input_required_result_elicitation'));
  t.same(
    second.tools.map((tool) => tool.name),
    names,
    'deterministic order',
  );
  for (const tool of first.tools) {
    t.notOk('execution' in tool, `${tool.name} has no execution field`);
    t.type(tool.description, 'string');
    t.type(tool.inputSchema, 'object');
  }
});

t.test('in front of a task-capable legacy upstream: no execution field, no legacy tasks capability', async (t) => {
  const fixture = await startLegacyFixture({ tasks: 'native' });
  t.teardown(() => fixture.close());
  // What the upstream itself declares, read with a legacy client straight from the fixture.
  const direct = new LegacyClient({ name: 'direct', version: '1.0.0' });
  await direct.connect(new LegacyTransport(new URL(fixture.url)));
  t.teardown(() => direct.close());
  const declared = (await direct.listTools()).tools.filter((tool) => tool.execution !== undefined).map((tool) => tool.name);
  t.ok(declared.length > 0, `the upstream declares execution on ${declared.join(', ')}`);
  t.ok(direct.getServerCapabilities()?.tasks, 'the upstream declares the legacy tasks capability');

  const stack = await startStack({}, { url: fixture.url });
  t.teardown(() => stack.close());
  const client = new Client({ name: 'v2-test-client', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.url)));
  t.teardown(() => client.close());
  t.equal(client.getProtocolEra(), 'modern');
  t.notOk('tasks' in (client.getServerCapabilities() ?? {}), 'no legacy tasks slot in discover');
  const { tools } = await client.listTools();
  for (const name of declared) {
    const tool = tools.find((x) => x.name === name);
    t.ok(tool, `${name} is listed`);
    t.notOk(tool && 'execution' in tool, `${name} has no execution field`);
  }
});

t.test('callTool greet and test_simple_text', async (t) => {
  const { client } = await connect(t);
  const greet = await client.callTool({ name: 'greet', arguments: { name: 'Bob' } });
  t.same(greet.content, [{ type: 'text', text: 'Hello, Bob!' }]);
  t.notOk(greet.isError);
  const simple = await client.callTool({ name: 'test_simple_text', arguments: {} });
  t.same(simple.content, [{ type: 'text', text: 'This is a simple text response for testing.' }]);
});

t.test('elicitation round trip through MRTR: the client handler answers, the result carries the answer', async (t) => {
  const { client, elicitations } = await connect(t);
  const result = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
  t.same(result.content, [{ type: 'text', text: 'Hello, Ada!' }]);
  t.equal(elicitations.length, 1, 'the handler was asked once');
  const asked = elicitations[0] as Record<string, unknown>;
  t.equal(asked.message, 'What is your name?');
  t.notOk('_meta' in asked && (asked._meta as Record<string, unknown>)?.['mcp-tasks-gateway/inputKey'], 'the upstream key hint is not leaked');
});

t.test('multi-round MRTR: the handler is asked once per round', async (t) => {
  const { client, elicitations } = await connect(t);
  const result = await client.callTool({ name: 'test_input_required_result_multi_round', arguments: {} });
  t.same(result.content, [{ type: 'text', text: 'Multi-round complete for Ada who likes blue' }]);
  t.equal(elicitations.length, 2);
  t.match((elicitations[0] as { message: string }).message, /name/);
  t.match((elicitations[1] as { message: string }).message, /favorite color/);
});

t.test('progress notifications reach onprogress', async (t) => {
  const { client } = await connect(t);
  const seen: Progress[] = [];
  const result = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, { onprogress: (p) => seen.push(p) });
  t.same(
    seen.map((p) => p.progress),
    [0, 50, 100],
  );
  t.ok(seen.every((p) => p.total === 100));
  t.notOk(result.isError);
});

t.test('listPrompts and getPrompt', async (t) => {
  const { client } = await connect(t);
  const { prompts } = await client.listPrompts();
  t.same(prompts.map((p) => p.name).slice(0, 4), [
    'test_simple_prompt',
    'test_prompt_with_arguments',
    'test_prompt_with_embedded_resource',
    'test_prompt_with_image',
  ]);
  const got = await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'a', arg2: 'b' } });
  t.same(got.messages, [{ role: 'user', content: { type: 'text', text: "Prompt with arguments: arg1='a', arg2='b'" } }]);
});

t.test('getPrompt with MRTR input', async (t) => {
  const { client, elicitations } = await connect(t);
  const got = await client.getPrompt({ name: 'test_input_required_result_prompt' });
  t.same(got.messages, [{ role: 'user', content: { type: 'text', text: 'Prompt with context: billing' } }]);
  t.equal(elicitations.length, 1);
});

t.test('listResources and readResource', async (t) => {
  const { client } = await connect(t);
  const { resources } = await client.listResources();
  t.same(
    resources.map((r) => r.uri),
    ['test://static-text', 'test://static-binary', 'test://watched-resource'],
  );
  const read = await client.readResource({ uri: 'test://static-text' });
  t.same(read.contents, [{ uri: 'test://static-text', mimeType: 'text/plain', text: 'This is the content of the static text resource.' }]);
  const { resourceTemplates } = await client.listResourceTemplates();
  t.same(
    resourceTemplates.map((r) => r.uriTemplate),
    ['test://template/{id}/data'],
  );
});

t.test('complete', async (t) => {
  const { client } = await connect(t);
  const r = await client.complete({ ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'pa' } });
  t.same(r.completion.values, ['paris', 'park', 'party']);
});
