/**
 * Issue #3 with the real modern tasks client: `@modelcontextprotocol/ext-tasks` 0.2.2 over a v2
 * `@modelcontextprotocol/client` Client (version negotiation 'auto'), through the gateway, in front of the legacy
 * fixture running 2025-11-25 tasks natively (SDK 1.32.2 task runtime). The package drives creation, polling,
 * `tasks/update` and `tasks/cancel` itself through the fetch `rawDispatch` below (SDK-NOTES §5).
 */
import t from 'tap';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { fetchDispatch, type DispatchRecord } from '../helpers/ext-tasks.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { MODERN } from '../helpers/modern.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { TASKS_EXT } from '../helpers/task-helpers.js';

type Sent = DispatchRecord;

let stack: Stack;
t.before(async () => {
  stack = await startStack({}, {}, { tasks: 'native', taskJobDelayMs: 200, taskPollIntervalMs: 100 });
});
t.teardown(() => stack.close());

interface Harness {
  session: TaskEnabledSession;
  client: Client;
  sent: Sent[];
  asked: Array<{ request: any; inputId: string | undefined; scope: string }>;
}

/** Answers elicitations: `confirm` → true, `name` → "Ada" (whatever the schema asks for). */
function answer(params: any): Record<string, string | boolean> {
  const content: Record<string, string | boolean> = {};
  for (const [k, v] of Object.entries<any>(params?.requestedSchema?.properties ?? {})) content[k] = v?.type === 'boolean' ? true : 'Ada';
  return content;
}

async function connect(t: { teardown(fn: () => unknown): void }): Promise<Harness> {
  const client = new Client({ name: 'ext-tasks-test', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.url)));
  const sent: Sent[] = [];
  const asked: Harness['asked'] = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: 'gateway-under-test',
    rawDispatch: fetchDispatch(stack.url, sent),
    v2RequestFraming: { protocolVersion: MODERN, clientInfo: { name: 'ext-tasks-test', version: '1.0.0' }, clientCapabilities: { elicitation: {} } },
    onInputRequest: (async (request: any, ctx: any) => {
      asked.push({ request, inputId: ctx.inputId, scope: ctx.scope });
      if (request.kind !== 'elicitation') throw new Error(`unexpected input kind ${request.kind}`);
      return { action: 'accept', content: answer(request.params) };
    }) as any,
  });
  t.teardown(async () => {
    await session.close();
    await client.close();
  });
  return { session, client, sent, asked };
}

const textOf = (result: any): string => (Array.isArray(result?.content) ? result.content.map((c: any) => c.text).join('') : '');

t.test('the session negotiates the v2 tasks generation through the gateway', async (t) => {
  const { session, client } = await connect(t);
  t.equal(client.getProtocolEra(), 'modern');
  t.same(client.getServerCapabilities()?.extensions?.[TASKS_EXT], {}, 'the extension is advertised with empty settings');
  t.equal(session.capabilities.execution, true);
  t.equal(session.capabilities.cancellation, true);
  t.equal(session.capabilities.inputResponses, true);
  t.equal(session.capabilities.inventory, 'known-handles', 'v2: no server inventory (no tasks/list)');
});

t.test('slow_compute becomes a task and is polled to its result', async (t) => {
  const { session, sent } = await connect(t);
  const before = stack.fixture.stats().tasksCreated.slow_compute ?? 0;
  const execution = await session.callTool('slow_compute', { seconds: 0.3, label: 'pi' });
  t.equal(execution.kind, 'task');
  if (execution.kind !== 'task') return;
  const taskId = execution.handle.taskId;
  t.match(taskId, /^[A-Za-z0-9_-]{22,}$/);

  const create = sent.find((s) => s.method === 'tools/call');
  t.equal(create?.reply?.result?.resultType, 'task');
  t.equal(create?.reply?.result?.taskId, taskId);
  t.equal(
    create?.params?._meta?.['io.modelcontextprotocol/clientCapabilities']?.extensions?.[TASKS_EXT] !== undefined,
    true,
    'the call declared the extension',
  );
  t.equal(stack.fixture.stats().tasksCreated.slow_compute, before + 1, 'the upstream ran it as its own task');
  t.notOk(
    stack.fixture.stats().tasks.some((u) => u.taskId === taskId),
    'the gateway id is not the upstream id',
  );

  const events: string[] = [];
  const { outcome, lastTask } = await execution.settle({ onEvent: (e) => void events.push(e.type === 'task' ? e.task.status : `outcome:${e.outcome.status}`) });
  t.equal(outcome.status, 'completed', JSON.stringify(outcome));
  if (outcome.status !== 'completed') return;
  t.equal(textOf(outcome.result), 'Computed pi after 0.3s');
  t.notOk((outcome.result as any).isError);
  t.equal(lastTask?.status, 'completed');
  t.equal(lastTask?.taskId, taskId);
  t.ok(typeof lastTask?.retentionMs === 'number' && lastTask.retentionMs > 0, 'ttlMs came through as retention');
  t.equal(lastTask?.suggestedPollIntervalMs, 100, "the upstream's pollInterval is passed on as pollIntervalMs");

  const polls = sent.filter((s) => s.method === 'tasks/get');
  t.ok(polls.length >= 1, 'it polled tasks/get');
  // One check over every poll: how many polls there were follows the timing.
  t.same(
    polls.map((p) => [p.headers['mcp-name'], p.params.taskId, p.status]),
    polls.map(() => [taskId, taskId, 200]),
    'every poll: Mcp-Name carries the task id, once; params.taskId is it; HTTP 200',
  );
});

t.test('confirm_delete: the input request reaches onInputRequest, the answer goes back by tasks/update, it completes', async (t) => {
  const { session, sent, asked } = await connect(t);
  const execution = await session.callTool('confirm_delete', { filename: 'notes.txt' });
  t.equal(execution.kind, 'task');
  const { outcome } = await execution.settle();
  t.equal(outcome.status, 'completed', JSON.stringify(outcome));
  if (outcome.status === 'completed') t.equal(textOf(outcome.result), 'Deleted notes.txt');

  t.equal(asked.length, 1, 'asked once');
  t.equal(asked[0]?.scope, 'task');
  t.equal(asked[0]?.inputId, 'confirm', "the upstream's key hint became the input key");
  t.equal(asked[0]?.request.params.message, 'Delete notes.txt?');
  t.notOk(asked[0]?.request.params._meta?.['io.modelcontextprotocol/related-task'], 'no legacy related-task meta leaks');

  const updates = sent.filter((s) => s.method === 'tasks/update');
  t.equal(updates.length, 1);
  t.same(updates[0]?.params.inputResponses, { confirm: { action: 'accept', content: { confirm: true } } });
  t.same(updates[0]?.reply?.result, { resultType: 'complete' });
});

t.test('multi_input: both concurrent questions are answered and the task completes', async (t) => {
  const { session, asked } = await connect(t);
  const execution = await session.callTool('multi_input', {});
  t.equal(execution.kind, 'task');
  const { outcome } = await execution.settle();
  t.equal(outcome.status, 'completed', JSON.stringify(outcome));
  if (outcome.status === 'completed') t.equal(textOf(outcome.result), 'multi_input: name=Ada, confirm=true');
  t.same(asked.map((a) => a.inputId).sort(), ['confirm', 'name'], 'each key asked exactly once');
});

t.test('test_tool_with_task: the pre-task question is an MRTR round, then a task that completes', async (t) => {
  const { session, sent, asked } = await connect(t);
  const execution = await session.callTool('test_tool_with_task', {});
  t.equal(execution.kind, 'task');
  const { outcome } = await execution.settle();
  t.equal(outcome.status, 'completed', JSON.stringify(outcome));
  if (outcome.status === 'completed') t.equal(textOf(outcome.result), 'Hello, Ada!');
  t.equal(asked.length, 1);
  t.equal(asked[0]?.scope, 'request', 'asked on the request (MRTR), before the task existed');
  const calls = sent.filter((s) => s.method === 'tools/call');
  t.equal(calls.length, 2, 'one MRTR retry');
  t.equal(calls[0]?.reply?.result?.resultType, 'input_required');
  t.equal(calls[1]?.reply?.result?.resultType, 'task');
});

t.test('handoff and resume: a second client session picks the task up (tasks are bound to the principal, not the connection)', async (t) => {
  const first = await connect(t);
  const gate = 'ext-handoff';
  const execution = await first.session.callTool('gated_job', { gate });
  t.equal(execution.kind, 'task');
  if (execution.kind !== 'task') return;
  let reference: any;
  await execution.handoff((ref) => {
    reference = ref;
  });
  t.equal(reference?.generation, 'v2');
  t.equal(reference?.taskId, execution.handle.taskId);

  const second = await connect(t);
  const resumed = await second.session.resumeTask(reference);
  t.equal(resumed.kind, 'task');
  await waitForStats(stack.fixture, (s) => s.gatesWaiting[gate] === 1);
  t.equal(stack.fixture.releaseGate(gate), 1);
  const { outcome } = await resumed.settle();
  t.equal(outcome.status, 'completed', JSON.stringify(outcome));
  if (outcome.status === 'completed') t.equal(textOf(outcome.result), `released ${gate}`);
  t.ok(
    second.sent.some((s) => s.method === 'tasks/get' && s.headers['mcp-name'] === execution.handle.taskId),
    'the second session polled it',
  );
});

t.test('cancel: gated_job is cancelled through tasks/cancel and ends cancelled upstream too', async (t) => {
  const { session, sent } = await connect(t);
  const gate = 'ext-cancel';
  const before = stack.fixture.stats();
  const execution = await session.callTool('gated_job', { gate });
  t.equal(execution.kind, 'task');
  if (execution.kind !== 'task') return;
  const taskId = execution.handle.taskId;
  const running = await waitForStats(stack.fixture, (s) => s.gatesWaiting[gate] === 1);
  const upstream = running.tasks.filter((u) => u.tool === 'gated_job' && !before.tasks.some((b) => b.taskId === u.taskId));
  t.equal(upstream.length, 1, 'one upstream task');

  await execution.cancel();
  const { outcome } = await execution.settle();
  t.equal(outcome.status, 'cancelled');
  const cancels = sent.filter((s) => s.method === 'tasks/cancel');
  t.equal(cancels.length, 1);
  t.equal(cancels[0]?.headers['mcp-name'], taskId);
  t.same(cancels[0]?.reply?.result, { resultType: 'complete' });

  const snapshot = await session.task(taskId).snapshot();
  t.equal(snapshot.status, 'cancelled', 'the gateway reports it cancelled');
  const after = await waitForStats(stack.fixture, (s) => s.cancellations.some((c) => c.taskId === upstream[0]?.taskId));
  t.same(
    after.cancellations.filter((c) => c.taskId === upstream[0]?.taskId).map((c) => ({ tool: c.tool, via: c.via })),
    [{ tool: 'gated_job', via: 'tasks/cancel' }],
    'the upstream saw exactly one tasks/cancel for its task',
  );
  t.equal(after.tasks.find((u) => u.taskId === upstream[0]?.taskId)?.status, 'cancelled');
  t.equal(stack.fixture.releaseGate(gate), 0, 'nothing was left waiting on the gate');
});

t.test('failing_job: a tool error completes the task with isError (not failed)', async (t) => {
  const { session } = await connect(t);
  const execution = await session.callTool('failing_job', {});
  t.equal(execution.kind, 'task');
  const { outcome, lastTask } = await execution.settle();
  t.equal(outcome.status, 'completed', JSON.stringify(outcome));
  if (outcome.status !== 'completed') return;
  t.equal((outcome.result as any).isError, true);
  t.equal(textOf(outcome.result), 'Job failed: simulated tool error');
  t.equal(lastTask?.status, 'completed');
});

t.test('protocol_error_job: a JSON-RPC error fails the task with that error', async (t) => {
  const { session } = await connect(t);
  const execution = await session.callTool('protocol_error_job', {});
  t.equal(execution.kind, 'task');
  const { outcome, lastTask } = await execution.settle();
  t.equal(outcome.status, 'failed');
  if (outcome.status !== 'failed') return;
  t.equal(outcome.error.code, -32603);
  t.match(outcome.error.message, /Job failed/);
  t.equal(lastTask?.status, 'failed');
  t.same((lastTask?.raw as any)?.error?.code, -32603, 'the DetailedTask carries error');
});

t.test('greet stays immediate: no task, the plain result', async (t) => {
  const { session, sent } = await connect(t);
  const execution = await session.callTool('greet', { name: 'Bob' });
  t.equal(execution.kind, 'immediate');
  const { outcome } = await execution.settle();
  t.equal(outcome.status, 'completed');
  if (outcome.status === 'completed') t.equal(textOf(outcome.result), 'Hello, Bob!');
  t.same(
    sent.map((s) => s.method),
    ['tools/call'],
    'no task traffic at all',
  );
  t.equal(sent[0]?.reply?.result?.resultType, 'complete');
});
