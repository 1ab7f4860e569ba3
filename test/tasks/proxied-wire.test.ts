/**
 * Issue #3 on the wire: raw 2026-07-28 requests through the gateway in front of the legacy fixture running
 * 2025-11-25 tasks natively (SDK 1.32.2). Checks the exact shapes and error codes of the tasks extension
 * (translation.md §2, §4.4–4.12) where the ext-tasks client would hide them.
 */
import t from 'tap';
import { startStack, type Stack } from '../helpers/stack.js';
import { post } from '../helpers/modern.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { BOUND_MS, DECLARING, TASKS_EXT, createTask, getTask, pollTask, pollToEnd } from '../helpers/task-helpers.js';

const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const URL_SAFE_ID = /^[A-Za-z0-9_-]{22,}$/;
/** Keys a CreateTaskResult must not carry (CF/lifecycle, CF/request-state, CF/wire-fields). */
const NOT_ON_CREATE = ['ttl', 'pollInterval', 'result', 'error', 'inputRequests', 'requestState', 'task'];

let stack: Stack;
t.before(async () => {
  stack = await startStack({}, {}, { tasks: 'native', taskJobDelayMs: 200, taskPollIntervalMs: 100 });
});
t.teardown(() => stack.close());

const textOf = (result: any): string => (Array.isArray(result?.content) ? result.content.map((c: any) => c.text).join('') : '');
const withoutMeta = (o: Record<string, unknown>) => {
  const { _meta: _m, ...rest } = o;
  return rest;
};
const upstreamIds = () => new Set(stack.fixture.stats().tasks.map((u) => u.taskId));

t.test('server/discover advertises the tasks extension and no legacy tasks slot', async (t) => {
  for (const capabilities of [DECLARING, {}]) {
    const r = await post(stack.url, 'server/discover', {}, { capabilities });
    t.equal(r.status, 200);
    const caps = r.body.result.capabilities;
    t.same(caps.extensions?.[TASKS_EXT], {}, 'extensions["io.modelcontextprotocol/tasks"] = {}');
    t.notOk('tasks' in caps, 'no legacy tasks capability');
  }
});

t.test('CreateTaskResult is flat, with a gateway id; tasks/get resolves at once; the result is inlined', async (t) => {
  const before = upstreamIds();
  const created = await createTask(stack.url, 'slow_compute', { seconds: 0.3, label: 'flat' });
  t.equal(created.resultType, 'task');
  t.match(created.taskId, URL_SAFE_ID, 'an unguessable-looking url-safe id');
  t.equal(created.status, 'working');
  t.ok(!Number.isNaN(Date.parse(created.createdAt)) && !Number.isNaN(Date.parse(created.lastUpdatedAt)), 'ISO timestamps');
  t.ok(created.ttlMs === null || (Number.isInteger(created.ttlMs) && created.ttlMs > 0), `ttlMs ${created.ttlMs}`);
  t.ok(Number.isInteger(created.pollIntervalMs) && created.pollIntervalMs > 0, `pollIntervalMs ${created.pollIntervalMs}`);
  for (const k of NOT_ON_CREATE) t.notOk(k in created, `no ${k}`);

  const fresh = stack.fixture.stats().tasks.filter((u) => !before.has(u.taskId));
  t.equal(fresh.length, 1, 'exactly one upstream task behind it');
  t.equal(fresh[0]?.tool, 'slow_compute');
  t.not(created.taskId, fresh[0]?.taskId, 'the upstream id is not exposed');
  t.notOk(upstreamIds().has(created.taskId));

  // X §Task Creation: strongly consistent.
  const first = await getTask(stack.url, created.taskId);
  t.equal(first.status, 200);
  t.equal(first.body.result.resultType, 'complete');
  t.equal(first.body.result.taskId, created.taskId);
  t.ok(['working', 'completed'].includes(first.body.result.status));

  const polls = await pollToEnd(stack.url, created.taskId);
  const last = polls.at(-1);
  t.equal(last.status, 'completed');
  t.equal(last.resultType, 'complete');
  t.equal(last.result.resultType, 'complete', 'resultType inside the inlined result');
  t.equal(textOf(last.result), 'Computed flat after 0.3s');
  t.notOk(last.result._meta?.[RELATED_TASK], 'no related-task _meta on the inlined result');
  t.notOk('error' in last || 'inputRequests' in last || 'requestState' in last);
  t.same(
    polls.filter((p) => 'requestState' in p),
    [],
    'no requestState on any DetailedTask polled',
  );

  const other = await createTask(stack.url, 'slow_compute', { seconds: 0 });
  t.not(other.taskId, created.taskId, 'a fresh id per task');
  await pollToEnd(stack.url, other.taskId);
});

t.test('a client that does not declare the extension gets plain synchronous results', async (t) => {
  const created = stack.fixture.stats().tasksCreated.slow_compute ?? 0;
  for (const capabilities of [{}, { elicitation: {} }, { tasks: { requests: { tools: { call: {} } } } }]) {
    const r = await post(stack.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.1, label: 'sync' } }, { capabilities });
    t.equal(r.status, 200, JSON.stringify(capabilities));
    t.equal(r.body.result.resultType, 'complete');
    t.equal(textOf(r.body.result), 'Computed sync after 0.1s');
    t.notOk('taskId' in r.body.result);
  }
  t.equal(stack.fixture.stats().tasksCreated.slow_compute ?? 0, created, 'no upstream task was created (legacy tasks capability counts for nothing)');

  const greet = await post(stack.url, 'tools/call', { name: 'greet', arguments: { name: 'Ann' } }, { capabilities: DECLARING });
  t.equal(greet.body.result.resultType, 'complete', 'a declaring client still gets greet at once');
  t.equal(textOf(greet.body.result), 'Hello, Ann!');
});

t.test("a modern client's params.task is ignored (SEP-2663 backward-compatibility table)", async (t) => {
  const r = await post(stack.url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0 }, task: { ttl: 5 } }, { capabilities: DECLARING });
  t.equal(r.body.result.resultType, 'task');
  t.not(r.body.result.ttlMs, 5, 'the stray ttl did not reach the task');
  t.equal(r.body.result.ttlMs, 3_600_000, 'the configured default retention');
  await pollToEnd(stack.url, r.body.result.taskId);
});

t.test('a task-only tool without the extension → HTTP 400 -32021 naming the extension', async (t) => {
  const before = stack.fixture.stats();
  for (const name of ['failing_job', 'test_tool_with_task']) {
    const r = await post(stack.url, 'tools/call', { name, arguments: {} }, { capabilities: { elicitation: {} } });
    t.equal(r.status, 400, name);
    t.equal(r.body.error.code, -32021);
    t.same(r.body.error.data?.requiredCapabilities?.extensions?.[TASKS_EXT], {});
  }
  const after = stack.fixture.stats();
  t.same(after.tasksCreated, before.tasksCreated, 'nothing ran upstream as a task');
});

t.test('tasks/get|update|cancel without the extension → HTTP 400 -32021, before the id is looked up', async (t) => {
  const gate = 'wire-noext';
  const before = upstreamIds();
  const task = await createTask(stack.url, 'gated_job', { gate });
  const running = await waitForStats(stack.fixture, (s) => s.gatesWaiting[gate] === 1);
  const upstream = running.tasks.find((u) => !before.has(u.taskId))?.taskId;
  t.ok(upstream, 'the upstream task');
  for (const taskId of ['no-such-task', task.taskId]) {
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const params = method === 'tasks/update' ? { taskId, inputResponses: {} } : { taskId };
      const r = await post(stack.url, method, params, { capabilities: { elicitation: {} } });
      t.equal(r.status, 400, `${method} ${taskId}`);
      t.equal(r.body.error?.code, -32021);
      t.same(r.body.error?.data?.requiredCapabilities?.extensions?.[TASKS_EXT], {});
    }
  }
  const still = await getTask(stack.url, task.taskId);
  t.equal(still.body.result.status, 'working', 'the refused cancel did nothing');
  t.notOk(
    stack.fixture.stats().cancellations.some((c) => c.taskId === upstream),
    'no cancellation reached the upstream',
  );
  t.equal(stack.fixture.releaseGate(gate), 1);
  const end = await pollToEnd(stack.url, task.taskId);
  t.equal(textOf(end.at(-1).result), `released ${gate}`);
});

t.test('an unknown task id → -32602 on get, update and cancel', async (t) => {
  for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
    for (const taskId of ['no-such-task', 'gwt_AAAAAAAAAAAAAAAAAAAAAAAA']) {
      const params = method === 'tasks/update' ? { taskId, inputResponses: {} } : { taskId };
      const r = await post(stack.url, method, params, { capabilities: DECLARING });
      t.equal(r.body.error?.code, -32602, `${method} ${taskId}`);
      t.notOk(r.body.result);
    }
  }
});

t.test("the upstream's own task id is not a gateway task id", async (t) => {
  const task = await createTask(stack.url, 'slow_compute', { seconds: 0 });
  await pollToEnd(stack.url, task.taskId);
  const upstream = stack.fixture.stats().tasks.at(-1)?.taskId as string;
  t.ok(upstream);
  const r = await getTask(stack.url, upstream);
  t.equal(r.body.error?.code, -32602);
});

t.test('tasks are bound to the principal: another Authorization cannot see, answer or cancel them', async (t) => {
  const gate = 'wire-principal';
  const alice = { authorization: 'Bearer alice-token' };
  const task = await createTask(stack.url, 'gated_job', { gate }, { headers: alice });
  await waitForStats(stack.fixture, (s) => s.gatesWaiting[gate] === 1);
  const cancelsBefore = stack.fixture.stats().cancellations.length;

  for (const headers of [{ authorization: 'Bearer mallory-token' }, { authorization: 'Bearer alice-token2' }, {}] as Array<Record<string, string>>) {
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const params = method === 'tasks/update' ? { taskId: task.taskId, inputResponses: { x: { action: 'accept', content: {} } } } : { taskId: task.taskId };
      const r = await post(stack.url, method, params, { capabilities: DECLARING, headers });
      t.equal(r.body.error?.code, -32602, `${method} as ${headers.authorization ?? 'anonymous'}: indistinguishable from unknown`);
    }
  }
  t.equal(stack.fixture.stats().cancellations.length, cancelsBefore, 'no cancellation reached the upstream');
  const owner = await getTask(stack.url, task.taskId, { headers: alice });
  t.equal(owner.body.result?.status, 'working', 'intact for its owner');

  // A foreign principal cannot answer someone else's input request either.
  const asking = await createTask(stack.url, 'confirm_delete', { filename: 'alice.txt' }, { headers: alice });
  await pollTask(stack.url, asking.taskId, (r) => r.status === 'input_required', { headers: alice });
  const forged = await post(
    stack.url,
    'tasks/update',
    { taskId: asking.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    {
      capabilities: DECLARING,
      headers: { authorization: 'Bearer mallory-token' },
    },
  );
  t.equal(forged.body.error?.code, -32602);
  const stillAsking = (await getTask(stack.url, asking.taskId, { headers: alice })).body.result;
  t.equal(stillAsking.status, 'input_required');
  t.same(Object.keys(stillAsking.inputRequests), ['confirm'], 'the forged answer was not delivered');
  await post(
    stack.url,
    'tasks/update',
    { taskId: asking.taskId, inputResponses: { confirm: { action: 'decline' } } },
    { capabilities: DECLARING, headers: alice },
  );
  t.equal(textOf((await pollToEnd(stack.url, asking.taskId, { headers: alice })).at(-1).result), 'Kept alice.txt (decline)');

  const anon = await createTask(stack.url, 'slow_compute', { seconds: 0 });
  const stolen = await getTask(stack.url, anon.taskId, { headers: alice });
  t.equal(stolen.body.error?.code, -32602, 'an anonymous task is not readable with credentials either');
  await pollToEnd(stack.url, anon.taskId);

  t.equal(stack.fixture.releaseGate(gate), 1);
  const end = await pollToEnd(stack.url, task.taskId, { headers: alice });
  t.equal(end.at(-1).status, 'completed');
  t.equal(textOf(end.at(-1).result), `released ${gate}`);
});

t.test('tasks/result and tasks/list are gone: HTTP 404 -32601', async (t) => {
  const task = await createTask(stack.url, 'slow_compute', { seconds: 0 });
  for (const capabilities of [DECLARING, {}]) {
    const result = await post(stack.url, 'tasks/result', { taskId: task.taskId }, { capabilities });
    t.equal(result.status, 404);
    t.equal(result.body.error.code, -32601);
    const list = await post(stack.url, 'tasks/list', {}, { capabilities });
    t.equal(list.status, 404);
    t.equal(list.body.error.code, -32601);
  }
  await pollToEnd(stack.url, task.taskId);
});

t.test('Mcp-Name must match params.taskId: HTTP 400 -32020', async (t) => {
  const task = await createTask(stack.url, 'slow_compute', { seconds: 0 });
  const other = await createTask(stack.url, 'slow_compute', { seconds: 0 });
  for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
    for (const name of [other.taskId, 'something-else', null]) {
      const r = await post(
        stack.url,
        method,
        { taskId: task.taskId, ...(method === 'tasks/update' ? { inputResponses: {} } : {}) },
        {
          capabilities: DECLARING,
          headers: { 'mcp-name': name },
        },
      );
      t.equal(r.status, 400, `${method} with Mcp-Name ${name}`);
      t.equal(r.body.error?.code, -32020);
    }
  }
  await pollToEnd(stack.url, task.taskId);
  await pollToEnd(stack.url, other.taskId);
});

t.test('outcomes: isError → completed with result.isError; JSON-RPC error → failed with error', async (t) => {
  const failing = await createTask(stack.url, 'failing_job', {});
  const protocol = await createTask(stack.url, 'protocol_error_job', {});
  const a = (await pollToEnd(stack.url, failing.taskId)).at(-1);
  t.equal(a.status, 'completed', 'a tool error is not a failed task (X §Task Execution Errors)');
  t.equal(a.result.isError, true);
  t.equal(a.result.resultType, 'complete');
  t.equal(textOf(a.result), 'Job failed: simulated tool error');
  t.notOk(a.result._meta?.[RELATED_TASK]);
  t.notOk('error' in a);
  const b = (await pollToEnd(stack.url, protocol.taskId)).at(-1);
  t.equal(b.status, 'failed');
  t.equal(b.error.code, -32603);
  t.match(b.error.message, /Job failed/);
  t.notOk('result' in b);
});

t.test('confirm_delete: input_required only with inputRequests; stable keys; junk ignored; answered key gone', async (t) => {
  const task = await createTask(stack.url, 'confirm_delete', { filename: 'report.pdf' });
  const upTo = await pollTask(stack.url, task.taskId, (r) => r.status === 'input_required');
  for (const r of upTo) {
    if (r.status === 'input_required') t.ok(Object.keys(r.inputRequests ?? {}).length > 0, 'input_required has a non-empty inputRequests');
    else t.notOk('inputRequests' in r, `no inputRequests while ${r.status}`);
  }
  const asked = upTo.at(-1);
  t.same(Object.keys(asked.inputRequests), ['confirm']);
  const request = asked.inputRequests.confirm;
  t.equal(request.method, 'elicitation/create');
  t.equal(request.params.message, 'Delete report.pdf?');
  t.notOk('id' in request || 'jsonrpc' in request, 'a bare {method, params}');
  t.notOk(request.params._meta?.[RELATED_TASK], 'no legacy related-task meta');

  // The same key and request on later polls, until answered.
  for (let i = 0; i < 3; i++) {
    const again = (await getTask(stack.url, task.taskId)).body.result;
    t.equal(again.status, 'input_required');
    t.same(again.inputRequests, asked.inputRequests, `poll ${i + 1}: same keys, same request`);
    await new Promise((r) => setTimeout(r, again.pollIntervalMs));
  }

  // Unknown keys with junk values are acked and change nothing (X: SHOULD ignore keys not outstanding; conformance).
  const junk = await post(
    stack.url,
    'tasks/update',
    {
      taskId: task.taskId,
      inputResponses: { 'unknown-key': { ignored: true }, other: 42 },
    },
    { capabilities: DECLARING },
  );
  t.equal(junk.status, 200);
  t.same(withoutMeta(junk.body.result), { resultType: 'complete' });
  // A malformed answer under the outstanding key is refused before it reaches the upstream (-32602).
  const bad = await post(
    stack.url,
    'tasks/update',
    {
      taskId: task.taskId,
      inputResponses: { 'unknown-key': { ignored: true }, confirm: 'not-an-elicit-result' },
    },
    { capabilities: DECLARING },
  );
  t.equal(bad.status, 400);
  t.equal(bad.body.error?.code, -32602);
  t.match(bad.body.error?.message, /input request "confirm" is invalid/);
  const wrongContent = await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: 'yes' } } } },
    { capabilities: DECLARING },
  );
  t.equal(wrongContent.body.error?.code, -32602, 'content against the requested schema: a string for a boolean is refused');
  const stillAsked = (await getTask(stack.url, task.taskId)).body.result;
  t.equal(stillAsked.status, 'input_required', 'a malformed answer does not answer the key');
  t.same(Object.keys(stillAsked.inputRequests), ['confirm']);

  const ok = await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    { capabilities: DECLARING },
  );
  t.same(withoutMeta(ok.body.result), { resultType: 'complete' });
  const after = await pollToEnd(stack.url, task.taskId);
  for (const r of after) t.notOk(r.inputRequests && 'confirm' in r.inputRequests, `the answered key never reappears (${r.status})`);
  t.equal(textOf(after.at(-1).result), 'Deleted report.pdf');

  // Answering it again after the end is harmless.
  const late = await post(stack.url, 'tasks/update', { taskId: task.taskId, inputResponses: { confirm: { action: 'decline' } } }, { capabilities: DECLARING });
  t.same(withoutMeta(late.body.result), { resultType: 'complete' });
  t.equal(textOf((await getTask(stack.url, task.taskId)).body.result.result), 'Deleted report.pdf');
});

t.test('two tasks asking at once: each answer reaches its own task', async (t) => {
  const a = await createTask(stack.url, 'confirm_delete', { filename: 'a.txt' });
  const b = await createTask(stack.url, 'confirm_delete', { filename: 'b.txt' });
  const qa = (await pollTask(stack.url, a.taskId, (r) => r.status === 'input_required')).at(-1);
  const qb = (await pollTask(stack.url, b.taskId, (r) => r.status === 'input_required')).at(-1);
  t.equal(qa.inputRequests.confirm.params.message, 'Delete a.txt?');
  t.equal(qb.inputRequests.confirm.params.message, 'Delete b.txt?');
  // Answer the second first, with the opposite answer.
  await post(
    stack.url,
    'tasks/update',
    { taskId: b.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: false } } } },
    { capabilities: DECLARING },
  );
  const stillA = (await getTask(stack.url, a.taskId)).body.result;
  t.equal(stillA.status, 'input_required', 'answering b does not answer a');
  await post(
    stack.url,
    'tasks/update',
    { taskId: a.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    { capabilities: DECLARING },
  );
  t.equal(textOf((await pollToEnd(stack.url, a.taskId)).at(-1).result), 'Deleted a.txt');
  t.equal(textOf((await pollToEnd(stack.url, b.taskId)).at(-1).result), 'Kept b.txt');
});

t.test('multi_input: a partial tasks/update is reflected by the next tasks/get; the second answer completes it', async (t) => {
  const task = await createTask(stack.url, 'multi_input', {});
  const seen = await pollTask(stack.url, task.taskId, (r) => r.status === 'input_required' && Object.keys(r.inputRequests).length === 2);
  for (const r of seen) if (r.status === 'input_required') t.ok(Object.keys(r.inputRequests ?? {}).length > 0);
  const both = seen.at(-1).inputRequests;
  t.same(Object.keys(both).sort(), ['confirm', 'name']);

  const first = await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } } },
    { capabilities: DECLARING },
  );
  t.same(withoutMeta(first.body.result), { resultType: 'complete' });
  const partial = (await getTask(stack.url, task.taskId)).body.result;
  t.equal(partial.status, 'input_required', 'still waiting for the other answer');
  t.same(Object.keys(partial.inputRequests), ['confirm'], 'read-your-writes: the answered key is gone at once');
  t.same(partial.inputRequests.confirm, both.confirm, 'the other request is unchanged');

  // Re-answering the answered key is ignored.
  const replay = await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { name: { action: 'accept', content: { name: 'Eve' } } } },
    { capabilities: DECLARING },
  );
  t.same(withoutMeta(replay.body.result), { resultType: 'complete' });

  const second = await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: false } } } },
    { capabilities: DECLARING },
  );
  t.same(withoutMeta(second.body.result), { resultType: 'complete' });
  const end = await pollToEnd(stack.url, task.taskId);
  for (const r of end) t.notOk(r.inputRequests && 'name' in r.inputRequests, 'name never reappears');
  t.equal(end.at(-1).status, 'completed');
  t.equal(textOf(end.at(-1).result), 'multi_input: name=Ada, confirm=false');
});

t.test('tasks/cancel: an empty ack; the task ends and stays cancelled; idempotent when terminal', async (t) => {
  const gate = 'wire-cancel';
  const before = upstreamIds();
  const task = await createTask(stack.url, 'gated_job', { gate });
  const running = await waitForStats(stack.fixture, (s) => s.gatesWaiting[gate] === 1);
  const upstream = running.tasks.find((u) => !before.has(u.taskId))?.taskId;
  t.ok(upstream, 'the upstream task');

  const ack = await post(stack.url, 'tasks/cancel', { taskId: task.taskId }, { capabilities: DECLARING });
  t.equal(ack.status, 200);
  t.same(withoutMeta(ack.body.result), { resultType: 'complete' }, 'no task fields on the ack');

  const end = await pollToEnd(stack.url, task.taskId);
  const last = end.at(-1);
  t.equal(last.status, 'cancelled');
  t.notOk('result' in last || 'error' in last || 'inputRequests' in last);
  const stats = await waitForStats(stack.fixture, (s) => s.cancellations.some((c) => c.taskId === upstream));
  t.same(
    stats.cancellations.filter((c) => c.taskId === upstream).map((c) => c.via),
    ['tasks/cancel'],
    'the upstream saw one tasks/cancel',
  );
  t.equal(stats.tasks.find((u) => u.taskId === upstream)?.status, 'cancelled');
  t.equal(stack.fixture.releaseGate(gate), 0, 'the upstream work was stopped');

  const again = await post(stack.url, 'tasks/cancel', { taskId: task.taskId }, { capabilities: DECLARING });
  t.equal(again.status, 200);
  t.same(withoutMeta(again.body.result), { resultType: 'complete' }, 'idempotent on a terminal task');
  const update = await post(stack.url, 'tasks/update', { taskId: task.taskId, inputResponses: { k: { action: 'cancel' } } }, { capabilities: DECLARING });
  t.same(withoutMeta(update.body.result), { resultType: 'complete' });
  for (let i = 0; i < 3; i++) {
    const r = (await getTask(stack.url, task.taskId)).body.result;
    t.equal(r.status, 'cancelled', `still cancelled (${i + 1})`);
    await new Promise((res) => setTimeout(res, r.pollIntervalMs));
  }
});

t.test('tasks/cancel while input_required: cancelled, the input request withdrawn, a late answer acked and ignored', async (t) => {
  const task = await createTask(stack.url, 'confirm_delete', { filename: 'keep.txt' });
  await pollTask(stack.url, task.taskId, (r) => r.status === 'input_required');
  const ack = await post(stack.url, 'tasks/cancel', { taskId: task.taskId }, { capabilities: DECLARING });
  t.same(withoutMeta(ack.body.result), { resultType: 'complete' });
  const end = (await pollToEnd(stack.url, task.taskId)).at(-1);
  t.equal(end.status, 'cancelled');
  t.notOk('inputRequests' in end, 'no input is asked for on a cancelled task');
  const late = await post(
    stack.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    { capabilities: DECLARING },
  );
  t.same(withoutMeta(late.body.result), { resultType: 'complete' });
  t.equal((await getTask(stack.url, task.taskId)).body.result.status, 'cancelled', 'still cancelled');
});

t.test('tasks/cancel that loses the race to the upstream: the task reports its real outcome, not cancelled', async (t) => {
  // A long upstream pollInterval keeps the payload on the blocked upstream tasks/result for a while after the
  // work ended: the window in which the gateway still says working although the upstream task has completed.
  const slow = await startStack({}, {}, { tasks: 'native', taskPollIntervalMs: 2_000 });
  t.teardown(() => slow.close());
  const before = new Set(slow.fixture.stats().tasks.map((u) => u.taskId));
  const task = await createTask(slow.url, 'confirm_delete', { filename: 'gone.txt' });
  await pollTask(slow.url, task.taskId, (r) => r.status === 'input_required');
  const upstream = slow.fixture.stats().tasks.find((u) => !before.has(u.taskId))?.taskId;
  t.ok(upstream);
  await post(
    slow.url,
    'tasks/update',
    { taskId: task.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    { capabilities: DECLARING },
  );
  await waitForStats(slow.fixture, (s) => s.tasks.find((u) => u.taskId === upstream)?.status === 'completed');

  const ack = await post(slow.url, 'tasks/cancel', { taskId: task.taskId }, { capabilities: DECLARING });
  t.same(withoutMeta(ack.body.result), { resultType: 'complete' }, 'acked (cancellation is cooperative)');
  t.same(
    slow.fixture.stats().cancellations.filter((c) => c.taskId === upstream),
    [],
    'the upstream work had already ended',
  );
  const end = (await pollToEnd(slow.url, task.taskId)).at(-1);
  t.equal(end.status, 'completed', 'the file was deleted: the client must not be told the task was cancelled');
  t.equal(textOf(end.result), 'Deleted gone.txt');
});

t.test('tasks/cancel of a completed task: acked, and it stays completed with its result', async (t) => {
  const task = await createTask(stack.url, 'slow_compute', { seconds: 0, label: 'done' });
  await pollToEnd(stack.url, task.taskId);
  const ack = await post(stack.url, 'tasks/cancel', { taskId: task.taskId }, { capabilities: DECLARING });
  t.same(withoutMeta(ack.body.result), { resultType: 'complete' });
  const r = (await getTask(stack.url, task.taskId)).body.result;
  t.equal(r.status, 'completed');
  t.equal(textOf(r.result), 'Computed done after 0s');
});

t.test('test_tool_with_task: an MRTR round first, then a CreateTaskResult, then the answer in the result', async (t) => {
  const before = upstreamIds();
  const round1 = await post(stack.url, 'tools/call', { name: 'test_tool_with_task', arguments: {} }, { capabilities: DECLARING });
  t.equal(round1.status, 200);
  const r1 = round1.body.result;
  t.equal(r1.resultType, 'input_required');
  t.notOk('taskId' in r1 || 'status' in r1, 'no task exists yet');
  t.same(Object.keys(r1.inputRequests), ['user_name']);
  t.equal(r1.inputRequests.user_name.method, 'elicitation/create');
  t.type(r1.requestState, 'string');
  t.equal(stack.fixture.stats().tasks.filter((u) => !before.has(u.taskId)).length, 0, 'the upstream has no task yet');

  const round2 = await post(
    stack.url,
    'tools/call',
    {
      name: 'test_tool_with_task',
      arguments: {},
      inputResponses: { user_name: { action: 'accept', content: { name: 'Grace' } } },
      requestState: r1.requestState,
    },
    { capabilities: DECLARING },
  );
  t.equal(round2.status, 200);
  const r2 = round2.body.result;
  t.equal(r2.resultType, 'task');
  t.match(r2.taskId, URL_SAFE_ID);
  for (const k of NOT_ON_CREATE) t.notOk(k in r2, `no ${k}`);
  t.notOk(upstreamIds().has(r2.taskId));

  const end = (await pollToEnd(stack.url, r2.taskId)).at(-1);
  t.equal(end.status, 'completed');
  t.match(textOf(end.result), /Grace/);
  t.equal(textOf(end.result), 'Hello, Grace!');
});

t.test('test_tool_with_task: the MRTR state is bound to its principal and to its round', async (t) => {
  const alice = { authorization: 'Bearer alice-mrtr' };
  const round1 = (await post(stack.url, 'tools/call', { name: 'test_tool_with_task', arguments: {} }, { capabilities: DECLARING, headers: alice })).body.result;
  t.equal(round1.resultType, 'input_required');
  const created = stack.fixture.stats().tasksCreated.test_tool_with_task ?? 0;
  const retry = (headers: Record<string, string>, name: string) =>
    post(
      stack.url,
      'tools/call',
      {
        name: 'test_tool_with_task',
        arguments: {},
        inputResponses: { user_name: { action: 'accept', content: { name } } },
        requestState: round1.requestState,
      },
      { capabilities: DECLARING, headers },
    );

  const stolen = await retry({ authorization: 'Bearer mallory-mrtr' }, 'Mallory');
  t.equal(stolen.body.error?.code, -32602, "another principal cannot continue alice's round");
  t.notOk(stolen.body.result);

  const mine = await retry(alice, 'Alice');
  t.equal(mine.body.result?.resultType, 'task');
  const replay = await retry(alice, 'Alice again');
  t.equal(replay.body.error?.code, -32602, 'a finished round cannot be continued twice');
  t.equal(stack.fixture.stats().tasksCreated.test_tool_with_task, created + 1, 'exactly one upstream task');
  const end = (await pollToEnd(stack.url, mine.body.result.taskId, { headers: alice })).at(-1);
  t.equal(textOf(end.result), 'Hello, Alice!');
});

t.test('a creating request without the elicitation capability is never asked: the server meets a client without it', async (t) => {
  const onlyTasks = { extensions: { [TASKS_EXT]: {} } };
  const task = await createTask(stack.url, 'confirm_delete', { filename: 'quiet.txt' }, { capabilities: onlyTasks });
  const polls = await pollToEnd(stack.url, task.taskId, { capabilities: onlyTasks });
  t.same(
    polls.filter((r) => r.status === 'input_required'),
    [],
    'no undeclared elicitation is surfaced on any poll',
  );
  // Its upstream session declared no elicitation: the SDK server refuses to ask, and the task fails as it would directly.
  t.equal(polls.at(-1).status, 'failed');
  t.notMatch(JSON.stringify(polls.at(-1)), /Deleted quiet\.txt/, 'nothing was confirmed');
});

t.test('Mcp-Name may carry the task id in the base64 sentinel form', async (t) => {
  const task = await createTask(stack.url, 'slow_compute', { seconds: 0 });
  const sentinel = `=?base64?${Buffer.from(task.taskId, 'utf8').toString('base64')}?=`;
  const r = await getTask(stack.url, task.taskId, { headers: { 'mcp-name': sentinel } });
  t.equal(r.status, 200);
  t.equal(r.body.result?.taskId, task.taskId);
  await pollToEnd(stack.url, task.taskId);
});

t.test('maxActivePerPrincipal: the extra task is refused (429) before the upstream sees it, so nothing is orphaned', async (t) => {
  const small = await startStack({ tasks: { maxActivePerPrincipal: 1 } }, {}, { tasks: 'native', taskPollIntervalMs: 100 });
  t.teardown(() => small.close());
  const first = await createTask(small.url, 'gated_job', { gate: 'cap-1' });
  const over = await post(small.url, 'tools/call', { name: 'gated_job', arguments: { gate: 'cap-2' } }, { capabilities: DECLARING });
  t.equal(over.status, 429);
  t.equal(over.body.error?.code, -31001, "the caller's own limit (GatewayErrorCode.CallerLimit)");
  t.notOk(over.body.result);
  const stats = small.fixture.stats();
  t.equal(stats.calls.gated_job, 1, 'the refused call never reached the upstream');
  t.same(stats.cancellations, [], 'nothing had to be cancelled');
  t.equal(small.fixture.releaseGate('cap-2'), 0, 'nothing keeps running for it');

  const other = await createTask(small.url, 'gated_job', { gate: 'cap-3' }, { headers: { authorization: 'Bearer someone-else' } });
  t.ok(other.taskId, 'another principal has its own allowance');
  small.fixture.releaseGate('cap-1');
  small.fixture.releaseGate('cap-3');
  t.equal((await pollToEnd(small.url, first.taskId)).at(-1).status, 'completed');
  const next = await createTask(small.url, 'slow_compute', { seconds: 0 });
  t.ok(next.taskId, 'once the first ended, a new task is allowed');
  await pollToEnd(small.url, next.taskId);
});

t.test('a full task store never drops a live task to make room (terminal records go first)', async (t) => {
  const tiny = await startStack({ tasks: { maxTasks: 2 } }, {}, { tasks: 'native', taskPollIntervalMs: 100 });
  t.teardown(() => tiny.close());
  const done = await createTask(tiny.url, 'slow_compute', { seconds: 0 });
  await pollToEnd(tiny.url, done.taskId);
  const alice = { authorization: 'Bearer alice-store' };
  const live = await createTask(tiny.url, 'gated_job', { gate: 'store-a' }, { headers: alice });
  await getTask(tiny.url, done.taskId); // the terminal record is now the most recently used one
  const bob = await createTask(tiny.url, 'gated_job', { gate: 'store-b' }, { headers: { authorization: 'Bearer bob-store' } });
  t.ok(bob.taskId);
  const r = await getTask(tiny.url, live.taskId, { headers: alice });
  t.equal(r.body.result?.status, 'working', 'the live task is still known to its owner');
  tiny.fixture.releaseGate('store-a');
  tiny.fixture.releaseGate('store-b');
  if (r.body.result) t.equal((await pollToEnd(tiny.url, live.taskId, { headers: alice })).at(-1).status, 'completed');
  const evicted = await getTask(tiny.url, done.taskId);
  t.equal(evicted.body.error?.code, -32602, 'the terminal record made room');
});

t.test('a store full of live tasks refuses the next one (503) and cancels the upstream task it already started', async (t) => {
  const full = await startStack({ tasks: { maxTasks: 1 } }, {}, { tasks: 'native', taskPollIntervalMs: 100 });
  t.teardown(() => full.close());
  const first = await createTask(full.url, 'gated_job', { gate: 'full-a' });
  const before = new Set(full.fixture.stats().tasks.map((u) => u.taskId));
  const refused = await post(
    full.url,
    'tools/call',
    { name: 'gated_job', arguments: { gate: 'full-b' } },
    { capabilities: DECLARING, headers: { authorization: 'Bearer other-full' } },
  );
  t.equal(refused.status, 503);
  t.equal(refused.body.error?.code, -31002, 'the store is full (GatewayErrorCode.AtCapacity)');
  const orphan = full.fixture.stats().tasks.find((u) => !before.has(u.taskId))?.taskId;
  if (orphan) {
    // The gateway may have created it upstream before it found the store full; then it must cancel it.
    const stats = await waitForStats(full.fixture, (s) => s.tasks.find((u) => u.taskId === orphan)?.status === 'cancelled');
    t.same(
      stats.cancellations.filter((c) => c.taskId === orphan).map((c) => c.via),
      ['tasks/cancel'],
    );
  }
  t.equal(full.fixture.releaseGate('full-b'), 0, 'no upstream work keeps running for the refused call');
  full.fixture.releaseGate('full-a');
  t.equal((await pollToEnd(full.url, first.taskId)).at(-1).status, 'completed');
});

t.test('retention: rule ttlMs is reported, maxTtlMs caps it, and a task is readable until its ttlMs passes', async (t) => {
  const ttlStack = await startStack(
    { tasks: { maxTtlMs: 45_000 } },
    { tools: { slow_compute: { task: 'native', ttlMs: 1_500 }, multi_input: { task: 'native', ttlMs: 100_000 }, '*': { task: 'native' } } },
    { tasks: 'native', taskPollIntervalMs: 100 },
  );
  t.teardown(() => ttlStack.close());

  const capped = await createTask(ttlStack.url, 'gated_job', { gate: 'ttl' });
  t.equal(capped.ttlMs, 45_000, 'the 1 h default is capped by tasks.maxTtlMs');
  const ruleCapped = await createTask(ttlStack.url, 'multi_input', {});
  t.equal(ruleCapped.ttlMs, 45_000, 'a rule ttlMs above tasks.maxTtlMs is capped too');
  await post(ttlStack.url, 'tasks/cancel', { taskId: capped.taskId }, { capabilities: DECLARING });
  await post(ttlStack.url, 'tasks/cancel', { taskId: ruleCapped.taskId }, { capabilities: DECLARING });

  const short = await createTask(ttlStack.url, 'slow_compute', { seconds: 0 });
  t.equal(short.ttlMs, 1_500, 'the rule ttlMs');
  const done = await pollToEnd(ttlStack.url, short.taskId);
  t.equal(done.at(-1).status, 'completed', 'readable within its ttlMs');
  const expiresAt = Date.parse(short.createdAt) + short.ttlMs;
  const deadline = Date.now() + BOUND_MS;
  // Every read until it is gone, checked at once: the number of reads follows the timing, the number of checks not.
  const read: unknown[] = [];
  for (;;) {
    const r = await getTask(ttlStack.url, short.taskId);
    if (r.body.error) {
      t.equal(r.body.error.code, -32602, 'gone after its ttlMs: unknown');
      t.ok(Date.now() >= expiresAt - 25, 'not before createdAt + ttlMs (CF tasks-no-early-ttl-expiry)');
      break;
    }
    read.push(r.body.result.status);
    if (Date.now() > deadline) throw new Error('the task outlived its ttlMs by far');
    await new Promise((res) => setTimeout(res, r.body.result.pollIntervalMs));
  }
  t.same(
    read.filter((s) => s !== 'completed'),
    [],
    'completed on every read until it is gone',
  );
});
