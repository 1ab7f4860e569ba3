/**
 * Issue #4, faults of gateway-owned (wrapped) tasks: timeouts, the upstream dying mid-call, cancellation, late
 * answers after a cancel, progress → statusMessage, and the retention (ttlMs) of a task whose call still runs.
 * Real gateway in front of the real sync-only fixture; `gated_job` holds a call until the test opens its gate.
 * Timeouts and TTLs are inherently timers: they are kept small and the tests poll tasks/get until terminal.
 */
import t, { type Test } from 'tap';
import { startStack, type Stack } from '../helpers/stack.js';
import { envelope, post, type RawReply } from '../helpers/modern.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const DECLARING = { extensions: { [TASKS_EXT]: {} }, elicitation: {} };

type Rules = Record<string, Record<string, unknown>>;
type PostOpts = NonNullable<Parameters<typeof post>[3]>;

interface Teardown {
  teardown(fn: () => unknown): void;
}

async function stackWith(t: Teardown, tools: Rules, upstream: Record<string, unknown> = {}, config: Record<string, unknown> = {}): Promise<Stack> {
  // Some tests here watch a task every 20 ms (a timer is their subject, not polling): the poll limit, tested in
  // test/security/task-limits.test.ts, is set out of their way.
  const tasks = { pollBurst: 1_000_000, ...((config.tasks as object | undefined) ?? {}) };
  const stack = await startStack({ ...config, tasks }, { tools, ...upstream }, { tasks: 'sync', taskJobDelayMs: 0 });
  t.teardown(() => stack.close());
  return stack;
}

function call(stack: Stack, name: string, args: Record<string, unknown> = {}, opts: PostOpts = {}): Promise<RawReply> {
  return post(stack.url, 'tools/call', { name, arguments: args }, { capabilities: DECLARING, ...opts });
}

const getTask = (stack: Stack, taskId: string) => post(stack.url, 'tasks/get', { taskId }, { capabilities: DECLARING });
const cancelTask = (stack: Stack, taskId: string, id?: string) =>
  post(stack.url, 'tasks/cancel', { taskId }, { capabilities: DECLARING, ...(id ? { id } : {}) });
const updateTask = (stack: Stack, taskId: string, inputResponses: Record<string, unknown>) =>
  post(stack.url, 'tasks/update', { taskId, inputResponses }, { capabilities: DECLARING });

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/** Polls tasks/get until `pred` holds (bounded: 5 s) and returns that DetailedTask. */
async function pollTask(stack: Stack, taskId: string, pred: (task: any) => boolean, limitMs = 5_000): Promise<any> {
  const deadline = Date.now() + limitMs;
  for (;;) {
    const r = await getTask(stack, taskId);
    if (r.status !== 200 || !r.body?.result) throw new Error(`tasks/get failed: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    if (pred(r.body.result)) return r.body.result;
    if (Date.now() > deadline) throw new Error(`task ${taskId} never matched; last: ${JSON.stringify(r.body.result)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const untilTerminal = (stack: Stack, taskId: string) => pollTask(stack, taskId, (task) => TERMINAL.has(task.status));

function createdTask(t: Test, r: RawReply): string {
  t.equal(r.status, 200, 'HTTP 200');
  t.equal(r.body?.result?.resultType, 'task', 'a CreateTaskResult', { body: r.body });
  return r.body?.result?.taskId as string;
}

const firstText = (result: any): string | undefined => result?.content?.[0]?.text;
const cancelledUpstream = (tool: string) => (s: ReturnType<Stack['fixture']['stats']>) =>
  s.cancellations.some((c) => c.tool === tool && c.via === 'notifications/cancelled') && !s.running[tool];

// ── timeouts ───────────────────────────────────────────────────────────────────────────────────────────────────

t.test('timeout: a rule timeoutMs ends the task failed with an error and cancels the upstream call', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always', timeoutMs: 150 } });
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'never' }));
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'failed');
  t.type(done.error?.code, 'number');
  t.match(done.error?.message, /timed out/i);
  t.notOk('result' in done);

  const stats = await waitForStats(stack.fixture, cancelledUpstream('gated_job'));
  t.same(
    stats.cancellations.map((c) => [c.tool, c.via]),
    [['gated_job', 'notifications/cancelled']],
    'the fixture saw notifications/cancelled for the call',
  );
  t.equal(stack.fixture.releaseGate('never'), 0, 'nothing waits on the gate any more');
  t.equal((await getTask(stack, taskId)).body.result.status, 'failed', 'still failed');
});

t.test('timeout: the upstream timeoutMs does not cut a wrapped call whose rule allows longer', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always', timeoutMs: 60_000 } }, { timeoutMs: 200 });
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'long' }));
  // Inherently a timer: watch the task for a few upstream timeouts' worth of polls.
  const watchUntil = Date.now() + 800;
  let task: any;
  while (Date.now() < watchUntil) {
    task = (await getTask(stack, taskId)).body.result;
    if (TERMINAL.has(task.status)) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.equal(task.status, 'working', 'the rule (60 s) governs the owned call, not the upstream timeout (200 ms)', { task });
  stack.fixture.releaseGate('long');
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'completed');
  t.equal(firstText(done.result), 'released long');
});

t.test('timeout: when the upstream timeoutMs ends a wrapped call, the task says so and the upstream call is cancelled', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always' } }, { timeoutMs: 200 });
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'orphan' }));
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'failed');
  t.match(done.error?.message, /timed out/i, 'the error names the timeout');
  const stats = await waitForStats(stack.fixture, cancelledUpstream('gated_job'), 1_500).catch(() => stack.fixture.stats());
  t.ok(cancelledUpstream('gated_job')(stats), 'the fixture saw notifications/cancelled and stopped the work', { stats });
});

// ── the upstream dies ──────────────────────────────────────────────────────────────────────────────────────────

t.test('upstream death mid-call: the task fails with an error naming the upstream; other requests get 502', async (t) => {
  // greet is not wrapped: an always rule would give a task at once (its window starts when the call is sent), which
  // then fails; a plain call shows the 502.
  const stack = await stackWith(t, { gated_job: { task: 'always' } });
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'dead' }));
  await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);
  await stack.fixture.close();

  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'failed');
  t.type(done.error?.code, 'number');
  t.match(done.error?.message, /upstream/i);
  t.notOk('result' in done);

  const greet = await call(stack, 'greet', { name: 'x' }, { id: 'after-death' });
  t.equal(greet.status, 502, 'a new call → 502');
  t.type(greet.body.error?.code, 'number');
  t.match(greet.body.error?.message, /upstream/i);
  const list = await post(stack.url, 'tools/list', {}, { capabilities: DECLARING });
  // 502 while the gateway has not yet re-probed the upstream, 503 once it knows it is down.
  t.ok([502, 503].includes(list.status), `tools/list → ${list.status}`);
  t.equal((await getTask(stack, taskId)).body.result.status, 'failed', 'the task record still answers from the gateway');
});

t.test('upstream death while the task waits for input: the task fails', async (t) => {
  const stack = await stackWith(t, { confirm_delete: { task: 'always' } });
  const taskId = createdTask(t, await call(stack, 'confirm_delete', { filename: 'gone.txt' }));
  await pollTask(stack, taskId, (task) => task.status === 'input_required');
  await stack.fixture.close();
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'failed');
  t.match(done.error?.message, /upstream/i);
  t.notOk('inputRequests' in done, 'no input is asked any more');
  const late = await updateTask(stack, taskId, { confirm: { action: 'accept', content: { confirm: true } } });
  t.same(late.body.result, { resultType: 'complete' }, 'a late answer is acked');
  t.equal((await getTask(stack, taskId)).body.result.status, 'failed');
});

// ── cancellation ───────────────────────────────────────────────────────────────────────────────────────────────

t.test('cancel: ack, cancelled, notifications/cancelled upstream; cancelling again acks', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always' } });
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'c' }));
  await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);

  const ack = await cancelTask(stack, taskId, 'cancel-1');
  t.equal(ack.status, 200);
  t.equal(ack.body.id, 'cancel-1');
  t.same(ack.body.result, { resultType: 'complete' }, 'an empty ack without task fields');

  const task = (await getTask(stack, taskId)).body.result;
  t.equal(task.status, 'cancelled');
  for (const k of ['result', 'error', 'inputRequests']) t.notOk(k in task, `no ${k}`);

  const stats = await waitForStats(stack.fixture, cancelledUpstream('gated_job'));
  t.same(
    stats.cancellations.map((c) => [c.tool, c.via]),
    [['gated_job', 'notifications/cancelled']],
  );

  const again = await cancelTask(stack, taskId);
  t.same(again.body.result, { resultType: 'complete' }, 'cancelling a terminal task acks again');
  t.equal((await getTask(stack, taskId)).body.result.status, 'cancelled');
  t.equal(stack.fixture.stats().cancellations.length, 1, 'no second cancellation upstream');

  t.equal(stack.fixture.releaseGate('c'), 0, 'the upstream call is gone');
  t.equal((await getTask(stack, taskId)).body.result.status, 'cancelled');
});

t.test('cancel: a gate opened right after the cancel ack never turns the task completed', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always' } });
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'race' }));
  await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);
  t.same((await cancelTask(stack, taskId)).body.result, { resultType: 'complete' });
  // The notifications/cancelled may not have reached the fixture yet: the upstream may still answer.
  stack.fixture.releaseGate('race');
  await waitForStats(stack.fixture, (s) => !s.running.gated_job);
  const task = (await getTask(stack, taskId)).body.result;
  t.equal(task.status, 'cancelled', 'a late upstream answer is not taken');
  t.notOk('result' in task);
});

t.test('cancel while input is required: cancelled, the call is cancelled upstream, a late answer changes nothing', async (t) => {
  const stack = await stackWith(t, { confirm_delete: { task: 'always' } });
  const taskId = createdTask(t, await call(stack, 'confirm_delete', { filename: 'keep.txt' }));
  await pollTask(stack, taskId, (task) => task.status === 'input_required');
  t.same((await cancelTask(stack, taskId)).body.result, { resultType: 'complete' });
  const task = (await getTask(stack, taskId)).body.result;
  t.equal(task.status, 'cancelled');
  t.notOk('inputRequests' in task, 'no outstanding input on a cancelled task');
  await waitForStats(stack.fixture, cancelledUpstream('confirm_delete'));

  const late = await updateTask(stack, taskId, { confirm: { action: 'accept', content: { confirm: true } } });
  t.same(late.body.result, { resultType: 'complete' }, 'a late answer is acked');
  t.equal((await getTask(stack, taskId)).body.result.status, 'cancelled');
});

// ── progress ───────────────────────────────────────────────────────────────────────────────────────────────────

t.test('progress → statusMessage, with the client’s progressToken or the gateway’s own', async (t) => {
  // The gateway forwards the client's _meta.progressToken, and mints one for a wrapped call that has none.
  const stack = await stackWith(t, { '*': { task: 'always' } });

  t.test('test_streaming_elicitation: progress 50/100, then a question', async (t) => {
    const r = await post(stack.url, 'tools/call', { name: 'test_streaming_elicitation', arguments: {}, _meta: envelope(DECLARING, { progressToken: 'pt-1' }) });
    const taskId = createdTask(t, r);
    t.same(r.messages, [], 'no progress on the creating request (it is the task’s)');
    const asking = await pollTask(stack, taskId, (task) => task.status === 'input_required');
    t.equal(asking.statusMessage, '50/100', 'the progress became the statusMessage');
    await updateTask(stack, taskId, { streaming_confirm: { action: 'accept', content: { ok: true } } });
    const done = await untilTerminal(stack, taskId);
    t.equal(done.status, 'completed');
    t.equal(firstText(done.result), 'Streaming complete (accept)');
  });

  t.test('the same without a progressToken: the gateway asked for progress itself', async (t) => {
    const r = await post(stack.url, 'tools/call', { name: 'test_streaming_elicitation', arguments: {} }, { capabilities: DECLARING });
    const taskId = createdTask(t, r);
    t.same(r.messages, [], 'no progress relayed to a client that asked for none');
    const asking = await pollTask(stack, taskId, (task) => task.status === 'input_required');
    t.equal(asking.statusMessage, '50/100', 'the progress became the statusMessage');
    await updateTask(stack, taskId, { streaming_confirm: { action: 'accept', content: { ok: true } } });
    t.equal((await untilTerminal(stack, taskId)).status, 'completed');
  });

  t.test('test_tool_with_progress: the progress message text is used; the token reached the upstream', async (t) => {
    const r = await post(stack.url, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: envelope(DECLARING, { progressToken: 'pt-2' }) });
    const done = await untilTerminal(stack, createdTask(t, r));
    t.equal(done.status, 'completed');
    t.equal(firstText(done.result), 'pt-2', 'the upstream saw the client’s progressToken');
    t.match(done.statusMessage, /^Completed step \d+ of 100$/);
  });
  t.end();
});

// ── retention ──────────────────────────────────────────────────────────────────────────────────────────────────

t.test('ttlMs: a task whose record expires does not leave its upstream call running', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always', ttlMs: 300 } }, {}, { tasks: { maxActivePerPrincipal: 1 } });
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'kept' }));
  // Inherently a timer: poll until the record is gone (bounded).
  const deadline = Date.now() + 3_000;
  let gone: RawReply | undefined;
  while (Date.now() < deadline) {
    const r = await getTask(stack, taskId);
    if (r.body?.error) {
      gone = r;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.equal(gone?.body.error.code, -32602, 'the expired task is unknown');
  const stats = await waitForStats(stack.fixture, cancelledUpstream('gated_job'), 1_000).catch(() => stack.fixture.stats());
  t.ok(cancelledUpstream('gated_job')(stats), 'the upstream call of the expired task was cancelled', { stats });
});

t.test('tasks.maxTasks: a live task is never evicted to make room (a new one is refused instead)', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always' } }, {}, { tasks: { maxTasks: 1 } });
  const first = createdTask(t, await call(stack, 'gated_job', { gate: 'first' }));
  const second = await call(stack, 'gated_job', { gate: 'second' });
  if (second.status === 200 && second.body.result?.resultType === 'task') {
    const got = await getTask(stack, first);
    t.equal(got.body.result?.status, 'working', 'the first (live) task is still known', { body: got.body });
  } else {
    t.ok(second.body.error, 'the store is full of live tasks: the new one is refused with a JSON-RPC error');
    t.equal((await getTask(stack, first)).body.result?.status, 'working');
  }
});
