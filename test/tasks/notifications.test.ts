/**
 * Issue #3: `notifications/tasks` on a `subscriptions/listen` stream that asked for `taskIds` (X §Task Status
 * Notifications; translation.md §2.8, §4.12(h)), for tasks the legacy fixture runs natively. The stream is read
 * incrementally; every state change is triggered by the test (a gate release, a tasks/update, a tasks/cancel),
 * and every read is bounded by a timeout that fails the test.
 */
import t, { type Test } from 'tap';
import { startStack, type Stack } from '../helpers/stack.js';
import { envelope, post } from '../helpers/modern.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { DECLARING, TASKS_EXT, createTask, getTask, pollTask, pollToEnd } from '../helpers/task-helpers.js';
import { openListen, type SseReader } from '../helpers/sse-reader.js';

const SUB_ID = 'io.modelcontextprotocol/subscriptionId';

let stack: Stack;
t.before(async () => {
  stack = await startStack({}, {}, { tasks: 'native', taskPollIntervalMs: 100 });
});
t.teardown(() => stack.close());

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Opens a listen stream on the stack, declaring the extension unless told otherwise. */
function listen(
  t: Teardown,
  id: string,
  notifications: Record<string, unknown>,
  opts: { capabilities?: Record<string, unknown>; authorization?: string } = {},
) {
  return openListen(t, stack.url, id, notifications, { ...opts, capabilities: opts.capabilities ?? DECLARING });
}

/** Reads the acknowledgement, which must be the first message. */
async function ack(t: Test, stream: SseReader, id: string): Promise<any> {
  const first = await stream.next();
  t.equal(first?.method, 'notifications/subscriptions/acknowledged', 'the acknowledgement comes first');
  t.equal(first?.params?._meta?.[SUB_ID], id, 'acknowledgement carries the subscription id');
  t.notOk('id' in (first ?? {}), 'a notification');
  return first;
}

/** Every message after the ack must be a task notification for `taskId` on this subscription. */
function checkTaskNotes(t: Test, messages: any[], taskId: string, id: string): void {
  for (const m of messages) {
    t.equal(m.method, 'notifications/tasks', `only task notifications (got ${m.method})`);
    t.notOk('id' in m, 'a notification, not a request');
    t.equal(m.params?.taskId, taskId);
    t.equal(m.params?._meta?.[SUB_ID], id, 'tagged with the subscription id');
    t.type(m.params?.createdAt, 'string', 'a full task: createdAt');
    t.type(m.params?.lastUpdatedAt, 'string', 'a full task: lastUpdatedAt');
    t.ok('ttlMs' in (m.params ?? {}), 'a full task: ttlMs');
    if (m.params?.status === 'input_required') t.ok(Object.keys(m.params.inputRequests ?? {}).length > 0, 'input_required carries inputRequests');
    else t.notOk('inputRequests' in (m.params ?? {}), `no inputRequests while ${m.params?.status}`);
  }
}

const textOf = (result: any): string => (Array.isArray(result?.content) ? result.content.map((c: any) => c.text).join('') : '');
const isTaskNote = (taskId: string, status: string) => (m: any) =>
  m.method === 'notifications/tasks' && m.params?.taskId === taskId && m.params?.status === status;

t.test('gated_job: acknowledgement, then the completed DetailedTask with its result; nothing else', async (t) => {
  const gate = 'note-gated';
  const task = await createTask(stack.url, 'gated_job', { gate });
  await waitForStats(stack.fixture, (s) => s.gatesWaiting[gate] === 1);
  const { response, stream } = await listen(t, 'sub-gated', { taskIds: [task.taskId] });
  t.equal(response.status, 200);
  t.match(response.headers.get('content-type') ?? '', /^text\/event-stream/);
  const first = await ack(t, stream, 'sub-gated');
  t.same(first.params.notifications, { taskIds: [task.taskId] });

  // Progress and log traffic elsewhere must not leak onto the task stream (X: not supported on tasks).
  const noisy = { ...envelope(DECLARING), progressToken: 'p-1', 'io.modelcontextprotocol/logLevel': 'debug' };
  await post(stack.url, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: noisy });
  await post(stack.url, 'tools/call', { name: 'test_tool_with_logging', arguments: {}, _meta: noisy });

  t.equal(stack.fixture.releaseGate(gate), 1);
  const { match, skipped: before } = await stream.until(isTaskNote(task.taskId, 'completed'));
  checkTaskNotes(t, [...before, match], task.taskId, 'sub-gated');
  t.equal(match.jsonrpc, '2.0');
  t.equal(match.params.result?.resultType, 'complete');
  t.equal(textOf(match.params.result), `released ${gate}`, 'the notification inlines the result');
  t.notOk(match.params.result?._meta?.['io.modelcontextprotocol/related-task'], 'no legacy related-task meta');
  t.notOk([...before, match].some((m) => m.method === 'notifications/progress' || m.method === 'notifications/message'));

  // The notification agrees with tasks/get.
  const got = (await getTask(stack.url, task.taskId)).body.result;
  t.equal(got.status, 'completed');
  t.same(got.result, match.params.result);
});

t.test('confirm_delete: after tasks/update the stream reports the task through to completed', async (t) => {
  const task = await createTask(stack.url, 'confirm_delete', { filename: 'listen.txt' });
  await pollTask(stack.url, task.taskId, (r) => r.status === 'input_required');
  const { stream } = await listen(t, 'sub-confirm', { taskIds: [task.taskId] });
  const first = await ack(t, stream, 'sub-confirm');
  t.same(first.params.notifications, { taskIds: [task.taskId] });

  const upd = await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    { capabilities: DECLARING },
  );
  t.same(upd.body.result, { resultType: 'complete' });
  const { match, skipped: before } = await stream.until(isTaskNote(task.taskId, 'completed'));
  checkTaskNotes(t, [...before, match], task.taskId, 'sub-confirm');
  t.notOk(
    before.some((m) => m.params?.inputRequests?.confirm),
    'the answered request is not announced again',
  );
  t.equal(textOf(match.params.result), 'Deleted listen.txt');
});

t.test('multi_input: a partial answer is announced as input_required with the remaining inputRequests', async (t) => {
  const task = await createTask(stack.url, 'multi_input', {});
  const seen = await pollTask(stack.url, task.taskId, (r) => r.status === 'input_required' && Object.keys(r.inputRequests).length === 2);
  const confirmRequest = seen.at(-1).inputRequests.confirm;
  const { stream } = await listen(t, 'sub-multi', { taskIds: [task.taskId] });
  await ack(t, stream, 'sub-multi');

  await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { name: { action: 'accept', content: { name: 'Lin' } } } },
    { capabilities: DECLARING },
  );
  const partial = await stream.until(isTaskNote(task.taskId, 'input_required'));
  checkTaskNotes(t, [...partial.skipped, partial.match], task.taskId, 'sub-multi');
  t.same(partial.match.params.inputRequests, { confirm: confirmRequest }, 'the full DetailedTask: the one outstanding request');

  await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    { capabilities: DECLARING },
  );
  const done = await stream.until(isTaskNote(task.taskId, 'completed'));
  checkTaskNotes(t, [...done.skipped, done.match], task.taskId, 'sub-multi');
  t.equal(textOf(done.match.params.result), 'multi_input: name=Lin, confirm=true');
});

t.test('tasks/cancel is announced as cancelled', async (t) => {
  const gate = 'note-cancel';
  const task = await createTask(stack.url, 'gated_job', { gate });
  await waitForStats(stack.fixture, (s) => s.gatesWaiting[gate] === 1);
  const { stream } = await listen(t, 'sub-cancel', { taskIds: [task.taskId] });
  await ack(t, stream, 'sub-cancel');
  await post(stack.url, 'tasks/cancel', { taskId: task.taskId }, { capabilities: DECLARING });
  const { match, skipped: before } = await stream.until(isTaskNote(task.taskId, 'cancelled'));
  checkTaskNotes(t, [...before, match], task.taskId, 'sub-cancel');
  t.notOk('result' in match.params || 'error' in match.params);
});

t.test("another principal's task and an unknown id are not acknowledged, and nothing about them is sent", async (t) => {
  const alice = 'Bearer alice-listen';
  const foreignGate = 'note-foreign';
  const ownGate = 'note-own';
  const foreign = await createTask(stack.url, 'gated_job', { gate: foreignGate }, { headers: { authorization: alice } });
  const own = await createTask(stack.url, 'gated_job', { gate: ownGate });
  await waitForStats(stack.fixture, (s) => s.gatesWaiting[foreignGate] === 1 && s.gatesWaiting[ownGate] === 1);

  const { stream } = await listen(t, 'sub-mixed', { taskIds: [foreign.taskId, own.taskId, 'gwt_unknownunknownunknown0'] });
  const first = await ack(t, stream, 'sub-mixed');
  t.same(first.params.notifications, { taskIds: [own.taskId] }, 'only the caller’s own, existing task');

  const { stream: only } = await listen(t, 'sub-foreign', { taskIds: [foreign.taskId, 'gwt_unknownunknownunknown0'] });
  const onlyAck = await ack(t, only, 'sub-foreign');
  t.notOk(onlyAck.params.notifications?.taskIds, 'nothing acknowledged');

  // The foreign task ends first (its owner sees that); only then does ours, so anything about the foreign task
  // would have reached the stream before ours.
  t.equal(stack.fixture.releaseGate(foreignGate), 1);
  const foreignEnd = await pollToEnd(stack.url, foreign.taskId, { headers: { authorization: alice } });
  t.equal(foreignEnd.at(-1).status, 'completed');
  t.equal(stack.fixture.releaseGate(ownGate), 1);
  const { match, skipped: before } = await stream.until(isTaskNote(own.taskId, 'completed'));
  checkTaskNotes(t, [...before, match], own.taskId, 'sub-mixed');
});

t.test('taskIds without the tasks extension → HTTP 400 -32021, no stream', async (t) => {
  const task = await createTask(stack.url, 'slow_compute', { seconds: 0 });
  const r = await post(
    stack.url,
    'subscriptions/listen',
    { notifications: { taskIds: [task.taskId] } },
    { id: 'sub-noext', capabilities: { elicitation: {} } },
  );
  t.equal(r.status, 400);
  t.match(r.contentType, /^application\/json/, 'refused before any stream starts');
  t.same(r.messages, [], 'no acknowledgement');
  t.equal(r.body?.id, 'sub-noext');
  t.equal(r.body?.error?.code, -32021);
  t.same(r.body?.error?.data?.requiredCapabilities?.extensions?.[TASKS_EXT], {});
  await pollToEnd(stack.url, task.taskId);
});
