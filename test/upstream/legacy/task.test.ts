/**
 * LegacyUpstreamTask against the real legacy fixture with native 2025-11-25 tasks (SDK 1.32.2 task runtime): creation
 * through `CallOptions.task`, input asked inside the task on `tasks/result`, the outcomes in modern vocabulary,
 * cancellation, a task the upstream does not know; and the same tasks seen as calls (taskAsCall, hideTask).
 */
import t, { type Test } from 'tap';
import {
  callNow,
  hideTask,
  LegacyUpstreamClient,
  taskAsCall,
  UpstreamTaskLostError,
  type CallEvent,
  type UpstreamCall,
  type UpstreamCaller,
  type UpstreamTask,
} from '../../../src/upstream/index.js';
import { LegacyUpstreamTask } from '../../../src/upstream/legacy/task.js';
import { startLegacyFixture, type LegacyFixture } from '../../fixtures/legacy-server.js';
import { waitForStats } from '../../fixtures/legacy-task-tools.js';
import { nextWith, startUpstreamTask, toEnd } from '../../helpers/upstream-task.js';

const CLIENT_INFO = { name: 'gateway-under-test', version: '0.0.1' };
const asking: UpstreamCaller = { capabilities: { elicitation: {} }, clientInfo: { name: 'ide', version: '9' } };
const silent: UpstreamCaller = { capabilities: {}, clientInfo: { name: 'cli', version: '1' } };

let fx: LegacyFixture;
let client: LegacyUpstreamClient;

t.before(async () => {
  fx = await startLegacyFixture({ tasks: 'native', taskPollIntervalMs: 100, taskJobDelayMs: 200 });
  client = new LegacyUpstreamClient('up', { url: fx.url, staticHeaders: {}, timeoutMs: 30_000, max: 10, idleMs: 60_000, clientInfo: CLIENT_INFO });
});
t.teardown(async () => {
  await client.close();
  await fx.close();
});

/** Starts a task-augmented tools/call and returns the task it created. */
function startTask(t: Test, tool: string, args: Record<string, unknown>, caller = asking, ttlMs?: number): Promise<UpstreamTask> {
  return startUpstreamTask(client, caller, tool, args, { ...(ttlMs === undefined ? {} : { ttlMs }), t });
}

async function collect(call: UpstreamCall): Promise<CallEvent[]> {
  const events: CallEvent[] = [];
  for (;;) {
    const e = await call.next();
    events.push(e);
    if (e.kind === 'response' || e.kind === 'failure' || e.kind === 'task') return events;
  }
}

t.test('a task that completes: created with the asked ttl, completed with the result in modern shape', async (t) => {
  const task = await startTask(t, 'slow_compute', { seconds: 0.2, label: 'sum' }, asking, 30_000);
  t.match(task.created, { status: 'working', ttlMs: 30_000, pollIntervalMs: 100 });
  t.type(task.id, 'string');
  const seen = await toEnd(task);
  const end = seen.at(-1)!;
  t.equal(end.status, 'completed');
  t.same(end.result, { content: [{ type: 'text', text: 'Computed sum after 0.2s' }], resultType: 'complete' }, 'no related-task _meta on the inlined result');
  t.equal(await task.next(new AbortController().signal), end, 'the terminal state again');
});

t.test('input asked inside the task arrives as inputRequests under the upstream key, answered into the task', async (t) => {
  const task = await startTask(t, 'confirm_delete', { filename: 'a.txt' });
  const asked = await nextWith(task, 'input_required');
  t.same(Object.keys(asked.inputRequests ?? {}), ['confirm']);
  const req = asked.inputRequests!.confirm!;
  t.equal(req.method, 'elicitation/create');
  t.match(req.params, { message: 'Delete a.txt?' });
  t.notOk(req.params && '_meta' in req.params, 'legacy _meta (related-task, key hint) stays behind');
  t.same(
    await task.answer({ nope: { action: 'accept' }, confirm: { action: 'accept', content: { confirm: true } } }),
    ['confirm'],
    'only outstanding keys go upstream',
  );
  t.same(await task.answer({ confirm: { action: 'accept', content: { confirm: true } } }), [], 'an answered key is ignored');
  const end = (await toEnd(task)).at(-1)!;
  t.match(end, { status: 'completed', result: { content: [{ text: 'Deleted a.txt' }] } });
});

t.test('two concurrent questions get two keys; a partial answer leaves the other outstanding', async (t) => {
  const task = await startTask(t, 'multi_input', {});
  const signal = new AbortController().signal;
  let s = await nextWith(task, 'input_required');
  while (Object.keys(s.inputRequests ?? {}).length < 2) s = (await task.next(signal))!;
  t.same(Object.keys(s.inputRequests!).sort(), ['confirm', 'name']);
  await task.answer({ name: { action: 'accept', content: { name: 'Ada' } } });
  const after = await task.get();
  t.same(Object.keys(after.inputRequests ?? {}), ['confirm']);
  t.equal(after.status, 'input_required');
  await task.answer({ confirm: { action: 'accept', content: { confirm: true } } });
  const end = (await toEnd(task)).at(-1)!;
  t.match(end, { status: 'completed', result: { content: [{ text: /name=.*Ada/ }] } });
});

t.test('a caller that did not declare elicitation is never asked: its session declares none, the server meets such a client', async (t) => {
  const task = await startTask(t, 'confirm_delete', { filename: 'b.txt' }, silent);
  const seen = await toEnd(task);
  t.notOk(
    seen.some((s) => s.status === 'input_required'),
    'never input_required',
  );
  // The SDK server refuses an elicitation its client did not declare, and the tool fails, as it would directly.
  t.match(seen.at(-1), { status: 'failed' });
  t.notOk(
    fx.stats().tasks.some((x) => x.tool === 'confirm_delete' && x.status === 'completed' && x.taskId === task.id),
    'no confirmation reached it',
  );
});

t.test('a tool error stays completed with isError; a JSON-RPC error is failed', async (t) => {
  const toolError = await startTask(t, 'failing_job', {});
  t.match((await toEnd(toolError)).at(-1), { status: 'completed', result: { isError: true, content: [{ text: 'Job failed: simulated tool error' }] } });
  const protocolError = await startTask(t, 'protocol_error_job', {});
  const end = (await toEnd(protocolError)).at(-1)!;
  t.equal(end.status, 'failed');
  t.match(end.error, { code: -32603, message: /Job failed/ });
});

t.test('cancel: accepted, the upstream work stops, and the task ends cancelled; again: terminal', async (t) => {
  const task = await startTask(t, 'gated_job', { gate: 'never-1' });
  await waitForStats(fx, (s) => s.running.gated_job === 1);
  t.equal(await task.cancel(), 'cancelled');
  await waitForStats(fx, (s) => s.cancellations.some((c) => c.tool === 'gated_job' && c.via === 'tasks/cancel' && c.taskId === task.id));
  t.equal((await toEnd(task)).at(-1)!.status, 'cancelled');
  t.equal(await task.cancel(), 'terminal');
});

t.test('a task the upstream does not know: next() and get() reject UpstreamTaskLostError, cancel says unknown', async (t) => {
  const task = new LegacyUpstreamTask(
    client,
    asking,
    { taskId: 'no-such-task', status: 'working', ttl: null, createdAt: new Date(0).toISOString(), lastUpdatedAt: new Date(0).toISOString() },
    undefined,
    { minPollMs: 50 },
  );
  t.teardown(() => task.release());
  await t.rejects(task.next(new AbortController().signal), UpstreamTaskLostError);
  await t.rejects(task.get(), UpstreamTaskLostError);
  t.equal(await task.cancel(), 'unknown');
});

t.test('a task of another session is unknown there (tasks are bound to the session that created them)', async (t) => {
  const task = await startTask(t, 'gated_job', { gate: 'never-2' });
  const elsewhere = new LegacyUpstreamTask(
    client,
    { ...asking, authorization: 'Bearer someone-else' },
    { taskId: task.id, status: 'working', ttl: null, createdAt: new Date(0).toISOString(), lastUpdatedAt: new Date(0).toISOString() },
  );
  t.teardown(() => elsewhere.release());
  await t.rejects(elsewhere.get(), UpstreamTaskLostError);
  t.equal(await task.cancel(), 'cancelled');
});

t.test('next() returns undefined once its signal aborts, and after release', async (t) => {
  const task = await startTask(t, 'gated_job', { gate: 'never-3' });
  const ac = new AbortController();
  const waiting = task.next(ac.signal);
  ac.abort();
  t.equal(await waiting, undefined);
  const again = task.next(new AbortController().signal);
  task.release();
  t.equal(await again, undefined);
  fx.releaseGate('never-3');
});

t.test('without CallOptions.task the call is an ordinary one', async (t) => {
  const call = await client.call(asking, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.05 } });
  const events = await collect(call);
  t.match(events.at(-1), { kind: 'response', message: { result: { content: [{ text: 'Computed result after 0.05s' }] } } });
});

t.test('taskAsCall: input requests become request events with the key as a hint, the outcome the response', async (t) => {
  const task = await startTask(t, 'confirm_delete', { filename: 'c.txt' });
  const call = taskAsCall(task);
  t.equal(call.task, task);
  const ask = await call.next();
  t.equal(ask.kind, 'request');
  if (ask.kind !== 'request') return;
  t.match(ask.message, {
    id: 'task-input-1',
    method: 'elicitation/create',
    params: { message: 'Delete c.txt?', _meta: { 'mcp-tasks-gateway/inputKey': 'confirm' } },
  });
  await t.rejects(call.respond('task-input-9', { result: {} }), /no open input request/);
  await call.respond(ask.message.id, { result: { action: 'accept', content: { confirm: false } } });
  const end = await call.next();
  t.match(end, { kind: 'response', message: { result: { content: [{ text: 'Kept c.txt' }] } } });
  t.equal(call.finished, true);
});

t.test('taskAsCall: an error answer to an elicitation is a decline', async (t) => {
  const call = taskAsCall(await startTask(t, 'confirm_delete', { filename: 'd.txt' }));
  const ask = await call.next();
  if (ask.kind !== 'request') return t.fail(`expected a request, got ${ask.kind}`);
  await call.respond(ask.message.id, { error: { code: -32603, message: 'client gone' } });
  t.match(await call.next(), { kind: 'response', message: { result: { content: [{ text: 'Kept d.txt (decline)' }] } } });
});

t.test('taskAsCall: a JSON-RPC failure is the error response; nextUnless gives up without losing the outcome', async (t) => {
  const call = taskAsCall(await startTask(t, 'protocol_error_job', {}));
  t.equal(await call.nextUnless(0, undefined), undefined);
  const end = await call.next();
  t.match(end, { kind: 'response', message: { error: { code: -32603, message: /Job failed/ } } });
});

t.test('taskAsCall: cancel() cancels the task upstream', async (t) => {
  const task = await startTask(t, 'gated_job', { gate: 'never-4' });
  await waitForStats(fx, (s) => (s.gatesWaiting['never-4'] ?? 0) === 1);
  const call = taskAsCall(task);
  call.cancel('client went away');
  t.match(await call.next(), { kind: 'failure' });
  await waitForStats(fx, (s) => s.cancellations.some((c) => c.taskId === task.id && c.via === 'tasks/cancel'));
});

t.test('taskAsCall: a cancelled task ends with an error saying so', async (t) => {
  const task = await startTask(t, 'gated_job', { gate: 'never-5' });
  await waitForStats(fx, (s) => (s.gatesWaiting['never-5'] ?? 0) === 1);
  await task.cancel();
  const call = taskAsCall(task);
  t.match(await call.next(), { kind: 'response', message: { error: { message: /cancelled/ } } });
});

t.test('hideTask over callNow: the task a caller never sees asks and answers like a plain call', async (t) => {
  const call = hideTask(callNow(client, asking, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'e.txt' } }, undefined, { task: {} }));
  const ask = await call.next();
  if (ask.kind !== 'request') return t.fail(`expected a request, got ${ask.kind}`);
  t.match(ask.message.params, { _meta: { 'mcp-tasks-gateway/inputKey': 'confirm' } });
  await call.respond(ask.message.id, { result: { action: 'accept', content: { confirm: true } } });
  t.match(await call.next(), { kind: 'response', message: { result: { content: [{ text: 'Deleted e.txt' }] } } });
  t.equal(call.finished, true);
});

t.test('hideTask: cancel() before the task event was taken cancels the task upstream', async (t) => {
  const inner = await client.call(asking, 'tools/call', { name: 'gated_job', arguments: { gate: 'never-6' } }, undefined, { task: {} });
  await waitForStats(fx, (s) => (s.gatesWaiting['never-6'] ?? 0) === 1);
  const call = hideTask(inner);
  call.cancel('client went away');
  await waitForStats(fx, (s) => s.cancellations.some((c) => c.tool === 'gated_job' && c.via === 'tasks/cancel'));
  t.pass('the hidden task was cancelled upstream');
});

t.test('hideTask: a call that answers without a task is passed through', async (t) => {
  const call = hideTask(callNow(client, asking, 'tools/call', { name: 'greet', arguments: { name: 'Ada' } }, undefined, { task: {} }));
  t.match(await collect(call), [{ kind: 'response', message: { result: { content: [{ text: 'Hello, Ada!' }] } } }]);
});

t.test('cancelling a task-augmented call before its answer: no notifications/cancelled, the task it made is cancelled', async (t) => {
  const call = callNow(client, asking, 'tools/call', { name: 'gated_job', arguments: { gate: 'never-7' } }, undefined, { task: {} });
  await waitForStats(fx, (s) => (s.gatesWaiting['never-7'] ?? 0) === 1);
  call.cancel('client went away');
  t.match(await call.next(), { kind: 'failure' });
  const stats = await waitForStats(fx, (s) =>
    s.cancellations.some((c) => c.tool === 'gated_job' && c.via === 'tasks/cancel' && (s.gatesWaiting['never-7'] ?? 0) === 0),
  );
  t.notOk(
    stats.cancellations.some((c) => c.via === 'notifications/cancelled'),
    'a task-augmented request is cancelled with tasks/cancel only',
  );
});

t.test('a question asked before the task exists, on a cancelled call, is refused and the request is not cancelled', async (t) => {
  const call = await client.call(asking, 'tools/call', { name: 'test_tool_with_task', arguments: {} }, undefined, { task: {} });
  const ask = await call.next();
  t.match(ask, { kind: 'request', message: { method: 'elicitation/create' } });
  call.cancel('client went away');
  t.match(await call.next(), { kind: 'failure' });
  // The refused question lets the tool go on to create its task, which is then cancelled or has already ended.
  const stats = await waitForStats(fx, (s) => (s.tasksCreated.test_tool_with_task ?? 0) === 1 && !s.running.test_tool_with_task);
  t.notOk(stats.cancellations.some((c) => c.tool === 'test_tool_with_task' && c.via === 'notifications/cancelled'));
});

t.test('a legacy upstream in plain-JSON response mode (tasks/result answers only when the task has ended)', async (t) => {
  const jfx = await startLegacyFixture({ tasks: 'native', responseMode: 'json', taskPollIntervalMs: 100, taskJobDelayMs: 200 });
  const jclient = new LegacyUpstreamClient('up', { url: jfx.url, staticHeaders: {}, timeoutMs: 30_000, max: 10, idleMs: 60_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await jclient.close();
    await jfx.close();
  });
  const start = (tool: string, args: Record<string, unknown>): Promise<UpstreamTask> => startUpstreamTask(jclient, asking, tool, args, { t });

  await t.test('completed, and failed with the JSON-RPC error', async (t) => {
    t.match((await toEnd(await start('slow_compute', { seconds: 0.2 }))).at(-1), {
      status: 'completed',
      result: { content: [{ text: 'Computed result after 0.2s' }] },
    });
    t.match((await toEnd(await start('protocol_error_job', {}))).at(-1), { status: 'failed', error: { code: -32603 } });
  });

  await t.test('cancelled', async (t) => {
    const task = await start('gated_job', { gate: 'json-1' });
    await waitForStats(jfx, (s) => (s.gatesWaiting['json-1'] ?? 0) === 1);
    t.equal(await task.cancel(), 'cancelled');
    t.equal((await toEnd(task)).at(-1)!.status, 'cancelled');
  });

  await t.test('callNow: the call exists before the headers, which come only with the result', async (t) => {
    const call = callNow(jclient, asking, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.3 } });
    t.equal(await call.nextUnless(0, undefined), undefined);
    t.match(await call.next(), { kind: 'response', message: { result: { content: [{ text: 'Computed result after 0.3s' }] } } });
  });

  await t.test('hideTask over callNow: the hidden task runs to its result', async (t) => {
    const call = hideTask(callNow(jclient, asking, 'tools/call', { name: 'failing_job', arguments: {} }, undefined, { task: {} }));
    t.match(await call.next(), { kind: 'response', message: { result: { isError: true } } });
  });
});
