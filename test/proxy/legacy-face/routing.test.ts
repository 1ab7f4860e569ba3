/**
 * Which face a request meets, and what the legacy face advertises: the real gateway (`buildGateway`) in front of the
 * real fixtures, real SDK 1.32.2 clients for the legacy era and raw modern requests. Which path served a request is
 * read from the gateway's own operator log line (`era`: `pass-through`, `legacy-face`, `modern`).
 */
import t from 'tap';
import { Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ListTasksResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { startLegacyFixture } from '../../fixtures/legacy-server.js';
import { startModernFixture } from '../../fixtures/modern-server.js';
import { startGateway } from '../../helpers/gateway.js';
import { post } from '../../helpers/modern.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

interface LogLine {
  msg?: string;
  method?: string;
  era?: string;
}

/** A gateway in front of `upstreamUrl` with tool rules; its operator log lines are kept. */
async function gatewayFor(t: Teardown, upstreamUrl: string, tools?: Record<string, unknown>) {
  const logs: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const cfg = { upstreams: [{ name: 'fixture', path: '/mcp', url: upstreamUrl, ...(tools ? { tools } : {}) }] };
  const gateway = await startGateway(cfg, { deps: { logger: { level: 'info', stream } } });
  t.teardown(() => gateway.close());
  /** The era of the operator line logged for `method`'s most recent request. */
  const eraOf = (method: string) => logs.filter((l) => l.msg === 'mcp request' && l.method === method).at(-1)?.era;
  return { url: gateway.url, eraOf };
}

async function legacy(t: Teardown, url: string): Promise<Client> {
  const client = new Client({ name: 'routing-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.onerror = () => {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.teardown(() => client.close());
  return client;
}

const supportOf = async (client: Client) => Object.fromEntries((await client.listTools()).tools.map((x) => [x.name, x.execution?.taskSupport]));

const TASKS_CAPABILITY = { list: {}, cancel: {}, requests: { tools: { call: {} } } };

const RULES = {
  test_simple_text: { task: 'always' },
  test_elicitation: { task: 'required' },
  test_sampling: { task: 'auto', afterMs: 100 },
  test_cancellable_wait: { task: 'off' },
};

t.test('legacy client, modern upstream without the extension and no rules: the face, no tasks', async (t) => {
  const fx = await startModernFixture({ mode: 'modern' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url);
  const client = await legacy(t, gw.url);
  t.notOk(client.getServerCapabilities()?.tasks, 'no tasks advertised');
  const support = await supportOf(client);
  t.ok(
    Object.values(support).every((v) => v === undefined),
    'no tool shows taskSupport',
  );
  t.equal(gw.eraOf('tools/list'), 'legacy-face');
  await t.rejects(client.request({ method: 'tasks/list', params: {} }, ListTasksResultSchema), { code: -32601 });
});

t.test('legacy client, modern upstream with wrapping rules: tasks advertised, taskSupport from the rules', async (t) => {
  const fx = await startModernFixture({ mode: 'modern' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url, RULES);
  const client = await legacy(t, gw.url);
  t.same(client.getServerCapabilities()?.tasks, TASKS_CAPABILITY);
  const support = await supportOf(client);
  t.equal(support.test_simple_text, 'optional', 'always → optional');
  t.equal(support.test_sampling, 'optional', 'auto → optional');
  t.equal(support.test_elicitation, 'required', 'required → required');
  t.equal(support.test_cancellable_wait, undefined, 'off → forbidden');
  t.equal(support.greet, undefined, 'native on an upstream without the extension → forbidden');
});

t.test('legacy client, legacy upstream with tasks and no rules: passes through untouched', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'native' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url);
  const client = await legacy(t, gw.url);
  t.same(client.getServerCapabilities()?.tasks, TASKS_CAPABILITY, "the upstream's own capability");
  const support = await supportOf(client);
  t.equal(support.failing_job, 'required');
  t.equal(gw.eraOf('tools/list'), 'pass-through');
});

t.test('legacy client, legacy upstream with tasks and wrapping rules: the face over the legacy client', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'native' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url, { greet: { task: 'always' }, protocol_error_job: { task: 'off' } });
  const client = await legacy(t, gw.url);
  t.same(client.getServerCapabilities()?.tasks, TASKS_CAPABILITY);
  const support = await supportOf(client);
  t.equal(gw.eraOf('tools/list'), 'legacy-face');
  t.equal(support.greet, 'optional', 'a forbidden tool wrapped by always → optional');
  t.equal(support.protocol_error_job, undefined, 'off hides the upstream support');
  t.equal(support.failing_job, 'required', 'native keeps the upstream value');
  t.equal(support.slow_compute, 'optional');
  t.equal(support.test_simple_text, undefined, 'native forbidden stays forbidden');
});

t.test('legacy client, sync legacy upstream with wrapping rules: tasks advertised', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'sync' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url, { slow_compute: { task: 'always' } });
  const client = await legacy(t, gw.url);
  t.same(client.getServerCapabilities()?.tasks, TASKS_CAPABILITY);
  const support = await supportOf(client);
  t.equal(support.slow_compute, 'optional');
  t.equal(support.failing_job, undefined);
});

t.test('legacy client, dual upstream with wrapping rules: the face works over the modern client', async (t) => {
  const fx = await startModernFixture({ mode: 'dual' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url, RULES);
  const client = await legacy(t, gw.url);
  t.same(client.getServerCapabilities()?.tasks, TASKS_CAPABILITY);
  await client.listTools();
  t.equal(gw.eraOf('tools/list'), 'legacy-face');
  const lists = fx.stats().recent.filter((r) => r.method === 'tools/list');
  t.equal(lists.at(-1)?.era, 'modern', 'the upstream saw a 2026-07-28 tools/list');
});

t.test('legacy client, dual upstream whose tasks are only in its 2026-07-28 leg: the face, with tasks', async (t) => {
  const fx = await startModernFixture({ mode: 'dual', tasks: 'native' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url);
  const client = await legacy(t, gw.url);
  t.same(client.getServerCapabilities()?.tasks, TASKS_CAPABILITY, 'tasks from the extension');
  const support = await supportOf(client);
  t.equal(support.slow_compute, 'optional');
  t.equal(gw.eraOf('tools/list'), 'legacy-face');
});

t.test('legacy client, dual upstream without tasks and no rules: passes through', async (t) => {
  const fx = await startModernFixture({ mode: 'dual' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url);
  const client = await legacy(t, gw.url);
  t.notOk(client.getServerCapabilities()?.tasks);
  await client.listTools();
  t.equal(gw.eraOf('tools/list'), 'pass-through');
});

t.test('modern client, modern upstream with wrapping rules: only what the gateway serves itself meets the modern face', async (t) => {
  const fx = await startModernFixture({ mode: 'modern' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url, RULES);
  const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

  const d = await post(gw.url, 'server/discover', {}, { capabilities: caps });
  t.equal(d.status, 200);
  t.ok(d.body.result.capabilities.extensions?.['io.modelcontextprotocol/tasks'], 'the extension is advertised');
  t.equal(gw.eraOf('server/discover'), 'modern');

  const plain = await post(gw.url, 'tools/call', { name: 'greet', arguments: { name: 'Ada' } }, { capabilities: caps });
  t.equal(plain.body.result.resultType, 'complete');
  t.equal(gw.eraOf('tools/call'), 'pass-through', 'a native tool without afterMs passes through');

  const wrapped = await post(gw.url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { capabilities: caps });
  t.equal(gw.eraOf('tools/call'), 'modern', 'a wrapped tool meets the modern face');
  t.equal(wrapped.body.result.resultType, 'task', 'always → a gateway task');
  const taskId = wrapped.body.result.taskId as string;
  t.match(taskId, /^gwt_/);

  const got = await post(gw.url, 'tasks/get', { taskId }, { capabilities: caps });
  t.equal(gw.eraOf('tasks/get'), 'modern', 'a gateway task id meets the modern face');
  t.equal(got.body.result.taskId, taskId);

  const unknown = await post(gw.url, 'tasks/get', { taskId: 'gwt_unknown' }, { capabilities: caps });
  t.equal(unknown.body.error?.code, -32602);

  const other = await post(gw.url, 'tasks/get', { taskId: 'upstream-task-1' }, { capabilities: caps });
  t.equal(gw.eraOf('tasks/get'), 'modern', 'an upstream without the extension has no tasks: the modern face answers any id');
  t.equal(other.body.error?.code, -32602);
  const undeclared = await post(gw.url, 'tasks/get', { taskId: 'upstream-task-1' }, { capabilities: {} });
  t.equal(undeclared.body.error?.code, -32021, 'a request that does not declare the extension: -32021');
});

t.test("modern client, modern upstream with the extension and wrapping rules: the upstream's own tasks pass through", async (t) => {
  const fx = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 50 });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url, { greet: { task: 'always' } });
  const caps = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
  const created = await post(gw.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.05 } }, { capabilities: caps });
  t.equal(gw.eraOf('tools/call'), 'pass-through', 'a native tool');
  t.equal(created.body.result.resultType, 'task', "the upstream's own task");
  const taskId = created.body.result.taskId as string;
  t.notMatch(taskId, /^gwt_/);
  const got = await post(gw.url, 'tasks/get', { taskId }, { capabilities: caps });
  t.equal(gw.eraOf('tasks/get'), 'pass-through');
  t.equal(got.body.result.taskId, taskId);

  const wrapped = await post(gw.url, 'tools/call', { name: 'greet', arguments: { name: 'Ada' } }, { capabilities: caps });
  t.equal(gw.eraOf('tools/call'), 'modern');
  t.match(wrapped.body.result.taskId, /^gwt_/, 'a wrapped tool: a gateway task');
});

t.test('modern client, modern upstream without rules: everything passes through', async (t) => {
  const fx = await startModernFixture({ mode: 'modern' });
  t.teardown(() => fx.close());
  const gw = await gatewayFor(t, fx.url);
  const d = await post(gw.url, 'server/discover', {}, { capabilities: {} });
  t.equal(d.status, 200);
  t.equal(gw.eraOf('server/discover'), 'pass-through');
  t.notOk(d.body.result.capabilities.extensions?.['io.modelcontextprotocol/tasks']);
});
