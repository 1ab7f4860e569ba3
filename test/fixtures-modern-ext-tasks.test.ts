/**
 * The modern fixture's native tasks driven by the real requester library: `@modelcontextprotocol/ext-tasks` 0.2.2
 * over a v2 `Client` (`createTaskSessionFromClient`, raw requests through test/helpers/ext-tasks.ts), no gateway.
 * Shows that a client written to the extension completes every kind of task tool against the fixture.
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
import { startModernFixture, type ModernFixture } from './fixtures/modern-server.js';
import { waitForStats } from './fixtures/legacy-task-tools.js';
import { fetchDispatch, type DispatchRecord } from './helpers/ext-tasks.js';
import { MODERN } from './helpers/modern.js';

const CLIENT_INFO = { name: 'ext-tasks-fixture-test', version: '1.0.0' };

interface Seen {
  kind: string;
  scope: string;
  delivery: string;
  inputId: string | undefined;
}

/** Answers elicitations by filling the schema (booleans true, strings "Ada") and sampling with "sampled". */
function answerFor(request: ApplicationInputRequest): any {
  if (request.kind === 'sampling') return { role: 'assistant', content: { type: 'text', text: 'sampled' }, model: 'test-model' };
  if (request.kind !== 'elicitation') throw new Error(`unexpected input kind ${request.kind}`);
  const schema = request.params.requestedSchema as { properties?: Record<string, { type?: string }> } | undefined;
  const content: Record<string, string | boolean> = {};
  for (const [k, v] of Object.entries(schema?.properties ?? {})) content[k] = v.type === 'boolean' ? true : 'Ada';
  return { action: 'accept', content };
}

async function harness(
  t: Test,
  opts: { taskFirst?: boolean } = {},
): Promise<{ fx: ModernFixture; session: TaskEnabledSession; inputs: Seen[]; wire: DispatchRecord[] }> {
  const fx = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 20, taskJobDelayMs: 20, ...opts });
  t.teardown(() => fx.close());
  const client = new Client(CLIENT_INFO, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {}, sampling: {} } });
  await client.connect(new StreamableHTTPClientTransport(new URL(fx.url)));
  t.teardown(() => client.close());
  const inputs: Seen[] = [];
  const wire: DispatchRecord[] = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: 'modern-fixture',
    rawDispatch: fetchDispatch(fx.url, wire),
    v2RequestFraming: { protocolVersion: MODERN, clientInfo: CLIENT_INFO, clientCapabilities: { elicitation: {}, sampling: {} } },
    onInputRequest: async (request: ApplicationInputRequest, ctx: ResolvedInputExchangeContext) => {
      inputs.push({ kind: request.kind, scope: ctx.scope, delivery: ctx.delivery, inputId: ctx.inputId });
      return answerFor(request);
    },
  });
  t.teardown(() => session.close());
  return { fx, session, inputs, wire };
}

const firstText = (result: any): string | undefined => result?.content?.[0]?.text;

async function settled(
  t: Test,
  session: TaskEnabledSession,
  tool: string,
  args: Parameters<TaskEnabledSession['callTool']>[1],
  kind: 'task' | 'immediate' = 'task',
): Promise<any> {
  const execution = await session.callTool(tool, args);
  t.equal(execution.kind, kind, `${tool}: ${kind}`);
  return (await execution.settle()).outcome;
}

t.test('ext-tasks negotiates the extension and completes every kind of task tool', async (t) => {
  const { session, inputs, wire } = await harness(t);
  t.equal(session.capabilities.execution, true, 'task execution');
  t.equal(session.capabilities.inputResponses, true, 'tasks/update');

  t.equal(firstText((await settled(t, session, 'slow_compute', { seconds: 0.05, label: 'x' })).result), 'Computed x after 0.05s');
  t.equal(firstText((await settled(t, session, 'confirm_delete', { filename: 'e.txt' })).result), 'Deleted e.txt');
  t.equal(firstText((await settled(t, session, 'multi_input', {})).result), 'multi_input: name=Ada, confirm=true');
  t.equal(firstText((await settled(t, session, 'ask_twice', {})).result), 'Ada likes Ada');
  t.equal(firstText((await settled(t, session, 'sample_twice', {})).result), 'Sampled twice: sampled / sampled');
  t.equal(firstText((await settled(t, session, 'instant', { label: 'i' }, 'immediate')).result), 'instant i');
  // Sorted: multi_input's two questions may be handed over in either order.
  const key = (x: unknown) => JSON.stringify(x);
  t.same(
    inputs.map((i) => [i.kind, i.scope, i.delivery, i.inputId]).sort((a, c) => key(a).localeCompare(key(c))),
    [
      ['elicitation', 'task', 'task-update', 'confirm'],
      ['elicitation', 'task', 'task-update', 'name'],
      ['elicitation', 'task', 'task-update', 'confirm'],
      ['elicitation', 'task', 'task-update', 'step1'],
      ['elicitation', 'task', 'task-update', 'step2'],
      ['sampling', 'task', 'task-update', 'draft'],
      ['sampling', 'task', 'task-update', 'polish'],
    ].sort((a, c) => key(a).localeCompare(key(c))),
    'every question inside its task, answered by tasks/update',
  );
  t.ok(
    wire.every((w) => w.status < 400),
    'no refusals on the way',
  );
});

t.test('ext-tasks: tool error, protocol error, cancel', async (t) => {
  const { fx, session } = await harness(t);
  const failing = await settled(t, session, 'failing_job', {});
  t.equal(failing.status, 'completed');
  t.equal(failing.result?.isError, true);
  const protocol = await settled(t, session, 'protocol_error_job', {});
  t.equal(protocol.status, 'failed');
  t.ok(protocol.error instanceof TaskFailedError);
  t.equal(protocol.error.code, -32603);

  const execution = await session.callTool('gated_job', { gate: 'never' });
  t.equal(execution.kind, 'task');
  await waitForStats(fx, (s) => s.running.gated_job === 1);
  await execution.cancel();
  t.equal((await execution.settle()).outcome.status, 'cancelled');
  const s = await waitForStats(fx, (x) => !x.running.gated_job);
  t.same(
    s.cancellations.map((c) => [c.tool, c.via]),
    [['gated_job', 'tasks/cancel']],
  );
});

t.test('ext-tasks: test_tool_with_task, both kinds of question before the task', async (t) => {
  const mrtr = await harness(t);
  t.equal(firstText((await settled(t, mrtr.session, 'test_tool_with_task', {})).result), 'Hello, Ada!');
  t.same(
    mrtr.inputs.map((i) => [i.scope, i.delivery, i.inputId]),
    [['request', 'request-retry', 'user_name']],
    'MRTR before the task',
  );

  const inside = await harness(t, { taskFirst: true });
  t.equal(firstText((await settled(t, inside.session, 'test_tool_with_task', {})).result), 'Hello, Ada!');
  t.same(
    inside.inputs.map((i) => [i.scope, i.delivery, i.inputId]),
    [['task', 'task-update', 'user_name']],
    'inside the task',
  );
});
