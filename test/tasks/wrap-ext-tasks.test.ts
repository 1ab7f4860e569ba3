/**
 * Issue #4 with a real requester: `@modelcontextprotocol/ext-tasks` 0.2.2 (`createTaskSessionFromClient` over a v2
 * `@modelcontextprotocol/client` Client negotiated with `versionNegotiation: { mode: 'auto' }`) drives gateway-owned
 * tasks of wrapped tools on the sync-only legacy fixture: creation and polling to the result, input through
 * `tasks/update`, MRTR before a task, cancellation, tool errors and JSON-RPC errors. ext-tasks sends every
 * `tools/call` and `tasks/*` through the `rawDispatch` written here (SDK-NOTES §5.2–5.4).
 */
import t, { type Test } from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  TaskFailedError,
  createTaskSessionFromClient,
  type ApplicationInputRequest,
  type ResolvedInputExchangeContext,
  type TaskEnabledSession,
} from '@modelcontextprotocol/ext-tasks/client';
import { startStack, type Stack } from '../helpers/stack.js';
import { fetchDispatch, type DispatchRecord } from '../helpers/ext-tasks.js';
import { MODERN, post } from '../helpers/modern.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const CLIENT_INFO = { name: 'ext-tasks-test', version: '1.0.0' };
/** Fast polling: ext-tasks follows pollIntervalMs. */
const POLL = 20;

type Rules = Record<string, Record<string, unknown>>;

interface Teardown {
  teardown(fn: () => unknown): void;
}

interface InputSeen {
  request: ApplicationInputRequest;
  scope: string;
  delivery: string;
  inputId: string | undefined;
  taskId: string | undefined;
}

interface Harness {
  stack: Stack;
  session: TaskEnabledSession;
  /** Every input request ext-tasks handed to the application. */
  inputs: InputSeen[];
  /** Every request the dispatcher sent: method and HTTP status. */
  wire: DispatchRecord[];
}

/** Answers every elicitation by filling its schema: booleans true, strings "Ada". */
function answerFor(request: ApplicationInputRequest): any {
  if (request.kind !== 'elicitation') throw new Error(`unexpected input kind ${request.kind}`);
  const schema = request.params.requestedSchema as { properties?: Record<string, { type?: string }> } | undefined;
  const content: Record<string, string | boolean> = {};
  for (const [k, v] of Object.entries(schema?.properties ?? {})) content[k] = v.type === 'boolean' ? true : 'Ada';
  return { action: 'accept', content };
}

async function harness(t: Teardown, tools: Rules): Promise<Harness> {
  const stack = await startStack({}, { tools }, { tasks: 'sync', taskJobDelayMs: 0 });
  t.teardown(() => stack.close());
  const client = new Client(CLIENT_INFO, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.url)));
  t.teardown(() => client.close());
  const inputs: InputSeen[] = [];
  const wire: Harness['wire'] = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: 'gateway-under-test',
    rawDispatch: fetchDispatch(stack.url, wire),
    v2RequestFraming: { protocolVersion: MODERN, clientInfo: CLIENT_INFO, clientCapabilities: { elicitation: {} } },
    onInputRequest: async (request: ApplicationInputRequest, ctx: ResolvedInputExchangeContext) => {
      inputs.push({ request, scope: ctx.scope, delivery: ctx.delivery, inputId: ctx.inputId, taskId: ctx.taskId });
      return answerFor(request);
    },
  });
  t.teardown(() => session.close());
  return { stack, session, inputs, wire };
}

const firstText = (result: any): string | undefined => result?.content?.[0]?.text;

function completedResult(t: Test, outcome: any): any {
  t.equal(outcome.status, 'completed', 'completed', { outcome: outcome.status === 'failed' ? String(outcome.error) : outcome });
  return outcome.result;
}

t.test('the session negotiates the v2 tasks generation through the gateway', async (t) => {
  const { session, stack } = await harness(t, { '*': { task: 'always', pollIntervalMs: POLL } });
  t.equal(session.capabilities.execution, true, 'task execution is available');
  t.equal(session.capabilities.inputResponses, true, 'tasks/update is available');
  const discover = await post(stack.url, 'server/discover', {}, { capabilities: {} });
  t.same(discover.body.result.capabilities.extensions?.[TASKS_EXT], {}, 'the gateway advertises the extension exactly as {}');
});

t.test('creation and polling to the result: gated_job under always', async (t) => {
  const { session, stack, wire } = await harness(t, { gated_job: { task: 'always', pollIntervalMs: POLL } });
  const execution = await session.callTool('gated_job', { gate: 'ext' });
  t.equal(execution.kind, 'task', 'the call became a task');
  if (execution.kind !== 'task') return;
  const taskId = execution.handle.taskId;
  t.match(taskId, /^[A-Za-z0-9_-]{22,}$/);
  const settling = execution.settle();
  // The task is being polled while the upstream call is held.
  await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);
  const snapshot = await session.task(taskId).snapshot();
  t.equal(snapshot.status, 'working');
  t.equal(snapshot.suggestedPollIntervalMs, POLL);
  t.equal(stack.fixture.releaseGate('ext'), 1);
  const { outcome } = await settling;
  t.equal(firstText(completedResult(t, outcome)), 'released ext');
  t.ok(
    wire.some((w) => w.method === 'tasks/get' && w.status === 200),
    'ext-tasks polled tasks/get',
  );
  t.equal(stack.fixture.stats().calls.gated_job, 1);
});

t.test('an instant call under always is still a task; under auto below afterMs it is immediate', async (t) => {
  const { session } = await harness(t, {
    greet: { task: 'always', pollIntervalMs: POLL },
    slow_compute: { task: 'auto', afterMs: 30_000 },
  });
  const asTask = await session.callTool('greet', { name: 'Ada' });
  t.equal(asTask.kind, 'task');
  t.equal(firstText(completedResult(t, (await asTask.settle()).outcome)), 'Hello, Ada!');

  const immediate = await session.callTool('slow_compute', { seconds: 0.01, label: 'fast' });
  t.equal(immediate.kind, 'immediate');
  t.equal(firstText(completedResult(t, (await immediate.settle()).outcome)), 'Computed fast after 0.01s');
});

t.test('input: confirm_delete under always is answered through tasks/update', async (t) => {
  const { session, inputs, wire } = await harness(t, { confirm_delete: { task: 'always', pollIntervalMs: POLL } });
  const execution = await session.callTool('confirm_delete', { filename: 'ext.txt' });
  t.equal(execution.kind, 'task');
  const { outcome } = await execution.settle();
  t.equal(firstText(completedResult(t, outcome)), 'Deleted ext.txt');
  t.equal(inputs.length, 1, 'asked once');
  const seen = inputs[0];
  t.equal(seen?.request.kind, 'elicitation');
  t.equal(seen?.request.params?.message, 'Delete ext.txt?');
  t.equal(seen?.scope, 'task');
  t.equal(seen?.delivery, 'task-update');
  t.equal(seen?.inputId, 'confirm', 'the task-unique key');
  t.equal(seen?.taskId, execution.kind === 'task' ? execution.handle.taskId : undefined);
  t.ok(
    wire.some((w) => w.method === 'tasks/update' && w.status === 200),
    'answered with tasks/update',
  );
});

t.test('input: multi_input (two concurrent questions) is answered and completes', async (t) => {
  const { session, inputs } = await harness(t, { multi_input: { task: 'always', pollIntervalMs: POLL } });
  const execution = await session.callTool('multi_input', {});
  t.equal(execution.kind, 'task');
  const { outcome } = await execution.settle();
  t.equal(firstText(completedResult(t, outcome)), 'multi_input: name=Ada, confirm=true');
  t.same(inputs.map((i) => i.inputId).sort(), ['confirm', 'name'], 'each key asked once');
});

t.test('MRTR then task: test_tool_with_task under required with a large afterMs', async (t) => {
  const { session, inputs } = await harness(t, { test_tool_with_task: { task: 'required', afterMs: 30_000, pollIntervalMs: POLL } });
  const execution = await session.callTool('test_tool_with_task', {});
  t.equal(execution.kind, 'task', 'after the input round the call became a task');
  const { outcome } = await execution.settle();
  t.equal(firstText(completedResult(t, outcome)), 'Hello, Ada!');
  t.equal(inputs.length, 1);
  t.equal(inputs[0]?.scope, 'request', 'the question came before the task (MRTR)');
  t.equal(inputs[0]?.delivery, 'request-retry');
  t.equal(inputs[0]?.inputId, 'user_name');
});

t.test('cancel: the execution ends cancelled and the upstream call is cancelled', async (t) => {
  const { session, stack } = await harness(t, { gated_job: { task: 'always', pollIntervalMs: POLL } });
  const execution = await session.callTool('gated_job', { gate: 'never' });
  t.equal(execution.kind, 'task');
  const taskId = execution.kind === 'task' ? execution.handle.taskId : '';
  await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);
  await execution.cancel();
  const { outcome } = await execution.settle();
  t.equal(outcome.status, 'cancelled');
  const stats = await waitForStats(stack.fixture, (s) => s.cancellations.length > 0 && !s.running.gated_job);
  t.same(
    stats.cancellations.map((c) => [c.tool, c.via]),
    [['gated_job', 'notifications/cancelled']],
  );
  const raw = await post(stack.url, 'tasks/get', { taskId }, { capabilities: { extensions: { [TASKS_EXT]: {} } } });
  t.equal(raw.body.result?.status, 'cancelled', 'the gateway reports the task cancelled');
});

t.test('tool error: failing_job completes with isError', async (t) => {
  const { session } = await harness(t, { failing_job: { task: 'always', pollIntervalMs: POLL } });
  const execution = await session.callTool('failing_job', {});
  t.equal(execution.kind, 'task');
  const result = completedResult(t, (await execution.settle()).outcome);
  t.equal(result?.isError, true);
  t.equal(firstText(result), 'Job failed: simulated tool error');
});

t.test('protocol error: protocol_error_job fails with the JSON-RPC error', async (t) => {
  const { session } = await harness(t, { protocol_error_job: { task: 'always', pollIntervalMs: POLL } });
  const execution = await session.callTool('protocol_error_job', {});
  t.equal(execution.kind, 'task');
  const { outcome } = await execution.settle();
  t.equal(outcome.status, 'failed');
  if (outcome.status !== 'failed') return;
  t.ok(outcome.error instanceof TaskFailedError);
  t.equal(outcome.error.code, -32603);
  t.match(outcome.error.message, /Job failed/);
});

t.test('a JSON-RPC error on a non-200 status reaches ext-tasks: the 429 of tasks.maxActivePerPrincipal', async (t) => {
  const stack = await startStack(
    { tasks: { maxActivePerPrincipal: 1 } },
    { tools: { gated_job: { task: 'always', pollIntervalMs: POLL } } },
    { tasks: 'sync' },
  );
  t.teardown(() => stack.close());
  const client = new Client(CLIENT_INFO, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.url)));
  t.teardown(() => client.close());
  const wire: Harness['wire'] = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: 'gateway-under-test',
    rawDispatch: fetchDispatch(stack.url, wire),
    v2RequestFraming: { protocolVersion: MODERN, clientInfo: CLIENT_INFO, clientCapabilities: {} },
  });
  t.teardown(() => session.close());

  const first = await session.callTool('gated_job', { gate: 'one' });
  t.equal(first.kind, 'task');
  const refused = await session.callTool('gated_job', { gate: 'two' }).then(
    () => undefined,
    (e: unknown) => e as { code?: number; message?: string },
  );
  t.ok(refused, 'the second call is refused');
  t.equal(refused?.code, -31001, 'with the gateway’s code for a limit of the caller’s own (not -32603, a server bug)');
  t.match(refused?.message, /Too many active tasks/);
  t.same(
    wire.filter((w) => w.method === 'tools/call').map((w) => w.status),
    [200, 429],
  );

  stack.fixture.releaseGate('one');
  t.equal(firstText(completedResult(t, (await first.settle()).outcome)), 'released one', 'the first task is unharmed');
});
