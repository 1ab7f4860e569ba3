/**
 * Rules over an upstream that runs tasks itself (native fixture): `off` and the wrapping modes decide what a
 * client gets when the upstream requires a task (translation.md §4.12(g)).
 */
import t from 'tap';
import { startStack, type Stack } from '../helpers/stack.js';
import { post } from '../helpers/modern.js';
import { DECLARING, pollTask } from '../helpers/task-helpers.js';

let stack: Stack;
t.before(async () => {
  stack = await startStack(
    {},
    {
      tools: {
        failing_job: { task: 'off' },
        test_tool_with_task: { task: 'off' },
        confirm_delete: { task: 'off' },
        slow_compute: { task: 'off' },
        protocol_error_job: { task: 'always' },
        '*': { task: 'native' },
      },
    },
    { tasks: 'native', taskJobDelayMs: 50 },
  );
});
t.teardown(() => stack.close());

const created = (fx: Stack) => fx.fixture.stats().tasksCreated;

t.test('off: a tool the upstream requires as a task is driven to its end inside the call', async (t) => {
  const before = created(stack).failing_job ?? 0;
  const r = await post(stack.url, 'tools/call', { name: 'failing_job', arguments: {} }, { capabilities: DECLARING });
  t.equal(r.status, 200);
  t.equal(r.body.result.resultType, 'complete', 'a plain result, even for a client that declares tasks');
  t.notOk('taskId' in r.body.result);
  t.equal(r.body.result.isError, true, 'the tool error of the upstream task');
  t.match(r.body.result.content[0].text, /Job failed/);
  t.equal(created(stack).failing_job, before + 1, 'the upstream ran it as a task');
});

t.test('off: an optional tool is called without a task', async (t) => {
  const before = created(stack).slow_compute ?? 0;
  const r = await post(stack.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'x' } }, { capabilities: DECLARING });
  t.equal(r.body.result.resultType, 'complete');
  t.match(r.body.result.content[0].text, /Computed x/);
  t.equal(created(stack).slow_compute ?? 0, before, 'no upstream task');
});

t.test('native: a required tool and a client without the extension → -32021', async (t) => {
  const plain = await startStack({}, {}, { tasks: 'native' }); // no rules: every tool is native
  t.teardown(() => plain.close());
  const r = await post(plain.url, 'tools/call', { name: 'test_tool_with_task', arguments: {} }, { capabilities: { elicitation: {} } });
  t.equal(r.status, 400);
  t.equal(r.body.error.code, -32021);
  t.same(r.body.error.data.requiredCapabilities.extensions, { 'io.modelcontextprotocol/tasks': {} });
});

t.test('a wrapping rule on an optional upstream tool makes a gateway-owned task of a plain upstream call', async (t) => {
  const before = created(stack).protocol_error_job ?? 0;
  const r = await post(stack.url, 'tools/call', { name: 'protocol_error_job', arguments: {} }, { capabilities: DECLARING });
  t.equal(r.body.result.resultType, 'task');
  const taskId = r.body.result.taskId as string;
  const task = (await pollTask(stack.url, taskId, (r) => r.status !== 'working')).at(-1);
  t.equal(task.status, 'failed');
  t.equal(task.error.code, -32603);
  t.equal(created(stack).protocol_error_job ?? 0, before, 'the upstream was called without a task');
});

t.test('off: questions before and inside the hidden upstream task become MRTR rounds of the one call', async (t) => {
  const caps = { elicitation: {} };
  const first = await post(stack.url, 'tools/call', { name: 'test_tool_with_task', arguments: {} }, { capabilities: caps });
  t.equal(first.body.result.resultType, 'input_required', 'asked before the upstream task exists');
  t.notOk('taskId' in first.body.result);
  t.ok(first.body.result.inputRequests.user_name, 'the upstream’s key');
  const done = await post(
    stack.url,
    'tools/call',
    {
      name: 'test_tool_with_task',
      arguments: {},
      inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } },
      requestState: first.body.result.requestState,
    },
    { capabilities: caps },
  );
  t.equal(done.body.result.resultType, 'complete', 'the task ran upstream and its payload is the answer');
  t.match(done.body.result.content[0].text, /Alice/);
  t.notOk(done.body.result._meta?.['io.modelcontextprotocol/related-task'], 'no legacy related-task meta');
});

t.test('off: an optional tool that asks for input runs as a plain call with an MRTR round', async (t) => {
  const caps = { elicitation: {} };
  const first = await post(stack.url, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } }, { capabilities: caps });
  t.equal(first.body.result.resultType, 'input_required');
  const [key] = Object.keys(first.body.result.inputRequests);
  const done = await post(
    stack.url,
    'tools/call',
    {
      name: 'confirm_delete',
      arguments: { filename: 'a.txt' },
      inputResponses: { [key as string]: { action: 'accept', content: { confirm: true } } },
      requestState: first.body.result.requestState,
    },
    { capabilities: caps },
  );
  t.equal(done.body.result.resultType, 'complete');
  t.match(done.body.result.content[0].text, /Deleted a\.txt/);
});
