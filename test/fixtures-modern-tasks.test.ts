/**
 * Tests of the modern fixture's task tools (test/fixtures/modern-task-tools.ts), driven directly with raw fetch, no
 * gateway: `tasks: 'native'` (the io.modelcontextprotocol/tasks extension), `taskFirst`, `tasks: 'sync'` (MRTR),
 * `tasks: 'job'` (a hand-rolled job), the dual fixture's legacy leg (a real SDK 1.32.2 client), and plain JSON
 * responses.
 */
import t, { type Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { startModernFixture, type ModernFixture, type ModernFixtureOptions } from './fixtures/modern-server.js';
import { waitForStats } from './fixtures/legacy-task-tools.js';
import { post, type RawReply } from './helpers/modern.js';
import { openListen } from './helpers/sse-reader.js';

const EXT = 'io.modelcontextprotocol/tasks';
/** Client capabilities declaring the extension (and input kinds). */
const WITH_EXT = { extensions: { [EXT]: {} }, elicitation: {}, sampling: {} };
const NO_EXT = { elicitation: {}, sampling: {} };
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

async function fixture(t: Test, opts: Partial<ModernFixtureOptions> = {}): Promise<ModernFixture> {
  const fx = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 20, taskJobDelayMs: 50, ...opts });
  t.teardown(() => fx.close());
  return fx;
}

const call = (
  fx: ModernFixture,
  name: string,
  args: Record<string, unknown> = {},
  capabilities: Record<string, unknown> = WITH_EXT,
  extra: Record<string, unknown> = {},
) => post(fx.url, 'tools/call', { name, arguments: args, ...extra }, { capabilities });

const tasks = (
  fx: ModernFixture,
  method: string,
  params: Record<string, unknown>,
  capabilities: Record<string, unknown> = WITH_EXT,
  headers?: Record<string, string>,
) => post(fx.url, method, params, { capabilities, ...(headers && { headers }) });

/** Creates a task and returns its id (fails the test if the call did not create one). */
async function create(t: Test, fx: ModernFixture, name: string, args: Record<string, unknown> = {}): Promise<string> {
  const r = await call(fx, name, args);
  t.equal(r.body?.result?.resultType, 'task', `${name} created a task`, { reply: r.body });
  return String(r.body?.result?.taskId);
}

/** Polls tasks/get (as a client does, at the fixture's pollIntervalMs) until `until` holds; bounded. */
async function pollTask(fx: ModernFixture, taskId: string, until: (task: any) => boolean = (x) => TERMINAL.has(x.status)): Promise<any> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await tasks(fx, 'tasks/get', { taskId });
    const task = r.body?.result;
    if (!task) throw new Error(`tasks/get failed: ${JSON.stringify(r.body)}`);
    if (until(task)) return task;
    if (Date.now() > deadline) throw new Error(`task ${taskId} never matched; last ${JSON.stringify(task)}`);
    await new Promise((resolve) => setTimeout(resolve, task.pollIntervalMs ?? 20));
  }
}

const inputKeys = (task: any): string[] => Object.keys(task.inputRequests ?? {}).sort();
const firstText = (result: any): string | undefined => result?.content?.[0]?.text;
const errorOf = (r: RawReply) => r.body?.error;

t.test('native: discover and tools/list', async (t) => {
  const fx = await fixture(t);
  const d = await post(fx.url, 'server/discover', {}, { capabilities: {} });
  t.same(d.body.result.capabilities.extensions, { [EXT]: {} }, 'the extension is advertised as {}');
  t.notOk(d.body.result.capabilities.tasks, 'no legacy tasks slot');
  const l = await post(fx.url, 'tools/list', {}, { capabilities: {} });
  const names = l.body.result.tools.map((x: { name: string }) => x.name);
  for (const n of [
    'greet',
    'slow_compute',
    'failing_job',
    'protocol_error_job',
    'confirm_delete',
    'multi_input',
    'test_tool_with_task',
    'gated_job',
    'sample_once',
    'sample_twice',
    'ask_twice',
    'instant',
  ]) {
    t.ok(names.includes(n), n);
  }
});

t.test('native: slow_compute creates a flat task, polled to an inline result', async (t) => {
  const fx = await fixture(t);
  const r = await call(fx, 'slow_compute', { seconds: 0.1, label: 'pi' });
  t.equal(r.status, 200);
  const created = r.body.result;
  t.match(created, { resultType: 'task', taskId: String, status: 'working', createdAt: String, lastUpdatedAt: String, ttlMs: 60_000, pollIntervalMs: 20 });
  for (const k of ['task', 'result', 'error', 'inputRequests', 'requestState', 'ttl', 'pollInterval']) t.notOk(k in created, `no ${k}`);
  const first = await tasks(fx, 'tasks/get', { taskId: created.taskId });
  t.match(first.body.result, { resultType: 'complete', taskId: created.taskId, status: 'working' }, 'readable at once');
  const done = await pollTask(fx, created.taskId);
  t.equal(done.status, 'completed');
  t.same(done.result, { resultType: 'complete', content: [{ type: 'text', text: 'Computed pi after 0.1s' }] }, 'inline, resultType inside, no related-task');
  const s = fx.stats();
  t.equal(s.tasksCreated.slow_compute, 1);
  t.same(s.tasks, [{ taskId: created.taskId, tool: 'slow_compute', status: 'completed' }]);
  t.equal(s.calls.slow_compute, 1);
});

t.test('native: without the extension on the request', async (t) => {
  const fx = await fixture(t);
  const sync = await call(fx, 'slow_compute', { seconds: 0, label: 'plain' }, NO_EXT);
  t.same(sync.body.result.content, [{ type: 'text', text: 'Computed plain after 0s' }], 'a task-capable tool runs synchronously');
  t.equal(sync.body.result.resultType, 'complete');
  t.notOk('taskId' in sync.body.result);
  for (const name of ['failing_job', 'test_tool_with_task']) {
    const refused = await call(fx, name, {}, NO_EXT);
    t.equal(refused.status, 400, `${name}: HTTP 400`);
    t.match(errorOf(refused), { code: -32021, data: { requiredCapabilities: { extensions: { [EXT]: {} } } } }, `${name}: task only → -32021`);
  }
  const legacyTask = await call(fx, 'greet', { name: 'Ada' }, WITH_EXT, { task: { ttl: 1000 } });
  t.equal(firstText(legacyTask.body.result), 'Hello, Ada!', 'a legacy task param is ignored');
  const instant = await call(fx, 'instant', { label: 'now' });
  t.same(instant.body.result.content, [{ type: 'text', text: 'instant now' }], 'instant answers at once even with the extension');
  t.equal(fx.stats().tasksCreated.slow_compute, undefined, 'no task was created');
});

t.test('native: a tool error completes with isError; a JSON-RPC error fails the task', async (t) => {
  const fx = await fixture(t);
  const failing = await pollTask(fx, await create(t, fx, 'failing_job'));
  t.equal(failing.status, 'completed', 'a tool error is completed, never failed');
  t.match(failing.result, { resultType: 'complete', isError: true, content: [{ type: 'text', text: 'Job failed: simulated tool error' }] });
  const protocol = await pollTask(fx, await create(t, fx, 'protocol_error_job'));
  t.equal(protocol.status, 'failed');
  t.same(protocol.error, { code: -32603, message: 'Job failed' });
  t.equal(protocol.statusMessage, 'Job failed');
  t.notOk('result' in protocol);
});

t.test('native: confirm_delete asks inside the task, answered by tasks/update', async (t) => {
  const fx = await fixture(t);
  const id = await create(t, fx, 'confirm_delete', { filename: 'a.txt' });
  const waiting = await pollTask(fx, id, (x) => x.status === 'input_required');
  t.same(inputKeys(waiting), ['confirm']);
  t.match(waiting.inputRequests.confirm, {
    method: 'elicitation/create',
    params: { message: 'Delete a.txt?', requestedSchema: { properties: { confirm: { type: 'boolean' } } } },
  });
  const ignored = await tasks(fx, 'tasks/update', { taskId: id, inputResponses: { 'unknown-key': { ignored: true } } });
  t.same(ignored.body.result, { resultType: 'complete', _meta: ignored.body.result._meta }, 'an unknown key is acked and ignored');
  t.same(inputKeys((await tasks(fx, 'tasks/get', { taskId: id })).body.result), ['confirm'], 'still asking');
  const ack = await tasks(fx, 'tasks/update', { taskId: id, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } });
  for (const k of ['taskId', 'status', 'result', 'error', 'inputRequests']) t.notOk(k in ack.body.result, `ack has no ${k}`);
  const next = (await tasks(fx, 'tasks/get', { taskId: id })).body.result;
  t.not(next.status, 'input_required', 'read-your-writes: the answered question is gone at once');
  const done = await pollTask(fx, id);
  t.equal(firstText(done.result), 'Deleted a.txt');
});

t.test('native: multi_input, answered one key at a time', async (t) => {
  const fx = await fixture(t);
  const id = await create(t, fx, 'multi_input');
  const both = await pollTask(fx, id, (x) => inputKeys(x).length === 2);
  t.same(inputKeys(both), ['confirm', 'name']);
  await tasks(fx, 'tasks/update', { taskId: id, inputResponses: { name: { action: 'accept', content: { name: 'Eve' } } } });
  const partial = (await tasks(fx, 'tasks/get', { taskId: id })).body.result;
  t.equal(partial.status, 'input_required');
  t.same(inputKeys(partial), ['confirm'], 'only the unanswered key remains');
  await tasks(fx, 'tasks/update', { taskId: id, inputResponses: { confirm: { action: 'decline' } } });
  t.equal(firstText((await pollTask(fx, id)).result), 'multi_input: name=Eve, confirm=(decline)');
});

t.test('native: two rounds inside a task, elicitation (ask_twice) and sampling (sample_once, sample_twice)', async (t) => {
  const fx = await fixture(t);
  const ask = await create(t, fx, 'ask_twice');
  let task = await pollTask(fx, ask, (x) => x.status === 'input_required');
  t.same(inputKeys(task), ['step1']);
  await tasks(fx, 'tasks/update', { taskId: ask, inputResponses: { step1: { action: 'accept', content: { name: 'Ada' } } } });
  task = await pollTask(fx, ask, (x) => inputKeys(x).includes('step2'));
  t.same(inputKeys(task), ['step2'], 'a new key for the second round');
  await tasks(fx, 'tasks/update', { taskId: ask, inputResponses: { step2: { action: 'accept', content: { color: 'blue' } } } });
  t.equal(firstText((await pollTask(fx, ask)).result), 'Ada likes blue');

  const answer = (text: string) => ({ role: 'assistant', content: { type: 'text', text }, model: 'test-model' });
  const once = await create(t, fx, 'sample_once');
  task = await pollTask(fx, once, (x) => x.status === 'input_required');
  t.match(task.inputRequests.sample, { method: 'sampling/createMessage', params: { messages: [{ role: 'user' }], maxTokens: Number } });
  await tasks(fx, 'tasks/update', { taskId: once, inputResponses: { sample: answer('hi') } });
  t.equal(firstText((await pollTask(fx, once)).result), 'Sampled: hi');

  const twice = await create(t, fx, 'sample_twice');
  await pollTask(fx, twice, (x) => inputKeys(x).includes('draft'));
  await tasks(fx, 'tasks/update', { taskId: twice, inputResponses: { draft: answer('d1') } });
  task = await pollTask(fx, twice, (x) => inputKeys(x).includes('polish'));
  t.match(task.inputRequests.polish.params.messages[0].content, { text: 'Polish this: d1' });
  await tasks(fx, 'tasks/update', { taskId: twice, inputResponses: { polish: answer('p1') } });
  t.equal(firstText((await pollTask(fx, twice)).result), 'Sampled twice: d1 / p1');
});

t.test('native: test_tool_with_task asks by MRTR before its task exists (default)', async (t) => {
  const fx = await fixture(t);
  const round1 = await call(fx, 'test_tool_with_task');
  t.match(round1.body.result, { resultType: 'input_required', inputRequests: { user_name: { method: 'elicitation/create' } }, requestState: String });
  t.notOk('taskId' in round1.body.result);
  t.same(fx.stats().tasksCreated, {}, 'no task yet');
  const round2 = await call(fx, 'test_tool_with_task', {}, WITH_EXT, {
    inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } },
    requestState: round1.body.result.requestState,
  });
  t.equal(round2.body.result.resultType, 'task');
  t.notOk('requestState' in round2.body.result);
  t.notOk('inputRequests' in round2.body.result);
  const done = await pollTask(fx, round2.body.result.taskId);
  t.equal(firstText(done.result), 'Hello, Alice!');
});

t.test('native, taskFirst: test_tool_with_task creates its task at once and asks inside it', async (t) => {
  const fx = await fixture(t, { taskFirst: true });
  const id = await create(t, fx, 'test_tool_with_task');
  const waiting = await pollTask(fx, id, (x) => x.status === 'input_required');
  t.same(inputKeys(waiting), ['user_name']);
  await tasks(fx, 'tasks/update', { taskId: id, inputResponses: { user_name: { action: 'accept', content: { name: 'Bob' } } } });
  t.equal(firstText((await pollTask(fx, id)).result), 'Hello, Bob!');
});

t.test('native: gated_job runs until cancelled; cancel is an ack, idempotent', async (t) => {
  const fx = await fixture(t);
  const id = await create(t, fx, 'gated_job', { gate: 'g' });
  await waitForStats(fx, (s) => s.gatesWaiting.g === 1 && s.running.gated_job === 1);
  const ack = await tasks(fx, 'tasks/cancel', { taskId: id });
  t.equal(ack.body.result.resultType, 'complete');
  for (const k of ['taskId', 'status', 'result', 'error', 'inputRequests']) t.notOk(k in ack.body.result, `ack has no ${k}`);
  t.equal((await tasks(fx, 'tasks/get', { taskId: id })).body.result.status, 'cancelled');
  const again = await tasks(fx, 'tasks/cancel', { taskId: id });
  t.equal(again.body.result.resultType, 'complete', 'cancelling a terminal task is acked too');
  const s = await waitForStats(fx, (x) => !x.running.gated_job && !x.gatesWaiting.g);
  t.same(s.cancellations, [{ tool: 'gated_job', via: 'tasks/cancel', taskId: id }], 'recorded once');
  t.equal(fx.releaseGate('g'), 0, 'nobody waits on the gate any more');
  const after = await create(t, fx, 'gated_job', { gate: 'g' });
  t.equal(firstText((await pollTask(fx, after)).result), 'released g', 'a released gate stays open');
});

t.test('native: refusals', async (t) => {
  const fx = await fixture(t);
  const id = await create(t, fx, 'gated_job', { gate: 'r' });
  t.teardown(() => fx.releaseGate('r'));
  for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
    const params = method === 'tasks/update' ? { taskId: 'nope', inputResponses: {} } : { taskId: 'nope' };
    const noExt = await tasks(fx, method, params, NO_EXT);
    t.equal(noExt.status, 400, `${method} without the extension: HTTP 400`);
    t.match(errorOf(noExt), { code: -32021 }, `${method}: -32021 before the id is looked up`);
    t.match(errorOf(await tasks(fx, method, params)), { code: -32602 }, `${method}: unknown id → -32602`);
  }
  const mismatch = await tasks(fx, 'tasks/get', { taskId: id }, WITH_EXT, { 'mcp-name': 'someone-else' });
  t.equal(mismatch.status, 400);
  t.match(errorOf(mismatch), { code: -32020 }, 'Mcp-Name must equal params.taskId');
  for (const method of ['tasks/result', 'tasks/list']) {
    const gone = await tasks(fx, method, method === 'tasks/list' ? {} : { taskId: id });
    t.equal(gone.status, 404, `${method}: HTTP 404`);
    t.match(errorOf(gone), { code: -32601 });
  }
});

t.test('native: notifications/tasks on subscriptions/listen with taskIds', async (t) => {
  const fx = await fixture(t);
  const id = await create(t, fx, 'ask_twice');
  const refused = await post(fx.url, 'subscriptions/listen', { notifications: { taskIds: [id] } }, { capabilities: NO_EXT });
  t.equal(refused.status, 400);
  t.match(errorOf(refused), { code: -32021 }, 'asking for task notifications needs the extension');

  const listen = await openListen(t, fx.url, 'sub-1', { taskIds: [id, 'unknown'], toolsListChanged: true }, { capabilities: WITH_EXT });
  const ack = await listen.stream.next();
  t.match(ack, {
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { taskIds: [id], toolsListChanged: true }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } },
  });
  // The first question may predate the subscription; the second round happens while it listens.
  await pollTask(fx, id, (x) => x.status === 'input_required');
  await tasks(fx, 'tasks/update', { taskId: id, inputResponses: { step1: { action: 'accept', content: { name: 'Lu' } } } });
  const seen: any[] = [];
  const next = async () => {
    const n = await listen.stream.next();
    t.equal(n.method, 'notifications/tasks');
    seen.push(n);
    return n;
  };
  while ((await next()).params.status !== 'input_required');
  t.match(
    seen.at(-1).params,
    { taskId: id, inputRequests: { step2: { method: 'elicitation/create' } }, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } },
    'the full DetailedTask',
  );
  await tasks(fx, 'tasks/update', { taskId: id, inputResponses: { step2: { action: 'accept', content: { color: 'teal' } } } });
  while ((await next()).params.status !== 'completed');
  t.match(seen.at(-1).params, { taskId: id, status: 'completed', result: { content: [{ text: 'Lu likes teal' }] } });
  t.ok(
    seen.some((n) => n.params.status === 'working'),
    'back to working between the rounds',
  );
  fx.notifyListChanged('tools');
  t.match(
    await listen.stream.next(),
    { method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } } },
    'list filters still work',
  );
});

t.test('native: a closed stream cancels a synchronous call', async (t) => {
  const fx = await fixture(t);
  const controller = new AbortController();
  const pending = fetch(fx.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'slow_compute',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'slow_compute',
        arguments: { seconds: 30 },
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
      },
    }),
    signal: controller.signal,
  }).catch(() => undefined);
  await waitForStats(fx, (s) => s.running.slow_compute === 1);
  controller.abort();
  await pending;
  const s = await waitForStats(fx, (x) => x.cancellations.length === 1 && !x.running.slow_compute);
  t.same(s.cancellations, [{ tool: 'slow_compute', via: 'closed-stream' }]);
  t.same(s.cancelled, ['slow_compute']);
});

t.test('native: a task is forgotten after its ttlMs', async (t) => {
  const fx = await fixture(t, { taskTtlMs: 300 });
  const created = await call(fx, 'slow_compute', { seconds: 0 });
  t.equal(created.body.result.ttlMs, 300);
  const id = created.body.result.taskId;
  // Only the end state is asserted: how long a loaded machine takes to get there is not.
  const deadline = Date.now() + 5000;
  let gone: RawReply | undefined;
  while (Date.now() < deadline) {
    const r = await tasks(fx, 'tasks/get', { taskId: id });
    if (r.body.error) {
      gone = r;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.match(gone && errorOf(gone), { code: -32602 }, 'unknown once expired');
});

t.test('native with plain JSON responses: the same task flow', async (t) => {
  const fx = await fixture(t, { responseMode: 'json' });
  const r = await call(fx, 'confirm_delete', { filename: 'j.txt' });
  t.match(r.contentType, /^application\/json/);
  const id = r.body.result.taskId;
  await pollTask(fx, id, (x) => x.status === 'input_required');
  await tasks(fx, 'tasks/update', { taskId: id, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } });
  t.equal(firstText((await pollTask(fx, id)).result), 'Deleted j.txt');
});

t.test('sync: no extension, the same tools run in the call with MRTR rounds', async (t) => {
  const fx = await fixture(t, { tasks: 'sync' });
  const d = await post(fx.url, 'server/discover', {}, { capabilities: {} });
  t.notOk(d.body.result.capabilities.extensions?.[EXT], 'not advertised');
  const slow = await call(fx, 'slow_compute', { seconds: 0.05, label: 's' });
  t.same(slow.body.result.content, [{ type: 'text', text: 'Computed s after 0.05s' }], 'the extension on the request is ignored');
  t.match((await call(fx, 'failing_job')).body.result, { isError: true }, 'failing_job runs without a task');
  t.match(errorOf(await call(fx, 'protocol_error_job')), { code: -32603, message: 'Job failed' });

  const ask = await call(fx, 'confirm_delete', { filename: 'm.txt' });
  t.match(ask.body.result, { resultType: 'input_required', inputRequests: { confirm: { method: 'elicitation/create' } } });
  const done = await call(fx, 'confirm_delete', { filename: 'm.txt' }, WITH_EXT, {
    inputResponses: { confirm: { action: 'accept', content: { confirm: true } } },
    requestState: ask.body.result.requestState,
  });
  t.equal(firstText(done.body.result), 'Deleted m.txt');

  const multi = await call(fx, 'multi_input');
  t.same(Object.keys(multi.body.result.inputRequests).sort(), ['confirm', 'name'], 'both questions in one round');

  const r1 = await call(fx, 'ask_twice');
  t.same(Object.keys(r1.body.result.inputRequests), ['step1']);
  const r2 = await call(fx, 'ask_twice', {}, WITH_EXT, {
    inputResponses: { step1: { action: 'accept', content: { name: 'Ada' } } },
    requestState: r1.body.result.requestState,
  });
  t.same(Object.keys(r2.body.result.inputRequests), ['step2'], 'the first answer travels in requestState');
  const r3 = await call(fx, 'ask_twice', {}, WITH_EXT, {
    inputResponses: { step2: { action: 'accept', content: { color: 'red' } } },
    requestState: r2.body.result.requestState,
  });
  t.equal(firstText(r3.body.result), 'Ada likes red');

  const name1 = await call(fx, 'test_tool_with_task');
  const name2 = await call(fx, 'test_tool_with_task', {}, WITH_EXT, {
    inputResponses: { user_name: { action: 'accept', content: { name: 'Zed' } } },
    requestState: name1.body.result.requestState,
  });
  t.equal(firstText(name2.body.result), 'Hello, Zed!');

  const gated = call(fx, 'gated_job', { gate: 'sg' });
  await waitForStats(fx, (s) => s.gatesWaiting.sg === 1);
  const base = fx.url.replace(/\/mcp$/, '');
  const viaHttp = (await (await fetch(`${base}/_fixture/stats`)).json()) as { gatesWaiting: Record<string, number> };
  t.same(viaHttp.gatesWaiting, { sg: 1 }, 'GET /_fixture/stats');
  const released = await fetch(`${base}/_fixture/gates/sg/release`, { method: 'POST' });
  t.same(await released.json(), { gate: 'sg', released: 1 }, 'POST /_fixture/gates/{gate}/release');
  t.equal(firstText((await gated).body.result), 'released sg');

  const get = await tasks(fx, 'tasks/get', { taskId: 'x' });
  t.equal(get.status, 404, 'no tasks/get');
  t.same(fx.stats().tasksCreated, {});
});

t.test('job: test_tool_with_task asks by MRTR, then starts a hand-rolled job that its own tools read and stop', async (t) => {
  const fx = await fixture(t, { tasks: 'job', taskJobDelayMs: 100 });
  const d = await post(fx.url, 'server/discover', {}, { capabilities: {} });
  t.notOk(d.body.result.capabilities.extensions?.[EXT], 'the extension is not advertised');
  const l = await post(fx.url, 'tools/list', {}, { capabilities: {} });
  const jobTools = ['test_tool_with_task', 'test_tool_with_task_status', 'test_tool_with_task_result', 'test_tool_with_task_cancel'];
  t.same(
    l.body.result.tools.map((x: { name: string }) => x.name).filter((n: string) => n.startsWith('test_tool_with_task')),
    jobTools,
  );
  const tool = async (name: string, jobId: unknown) => (await call(fx, name, { jobId }, NO_EXT)).body;
  const stateOf = async (jobId: string) => (await tool('test_tool_with_task_status', jobId)).result.structuredContent.state;

  const ask = await call(fx, 'test_tool_with_task');
  t.match(ask.body.result, { resultType: 'input_required', inputRequests: { user_name: { method: 'elicitation/create' } } }, 'asked before the job starts');
  t.same(fx.stats().running, {}, 'nothing started yet');
  const start = await call(fx, 'test_tool_with_task', {}, WITH_EXT, {
    inputResponses: { user_name: { action: 'accept', content: { name: 'Zed' } } },
    requestState: ask.body.result.requestState,
  });
  const jobId = start.body.result.structuredContent?.jobId;
  t.match(jobId, /^job-\d+$/, 'a handle, not a task, even with the extension on the request');
  t.notOk('taskId' in start.body.result);
  t.same(JSON.parse(firstText(start.body.result) ?? ''), { jobId }, 'the handle as JSON text too');
  t.equal(await stateOf(jobId), 'running');
  t.equal(fx.stats().running.test_tool_with_task, 1, 'a running job counts as running work');
  t.match((await tool('test_tool_with_task_result', jobId)).result, { isError: true }, 'no result while it runs');
  await waitForStats(fx, (s) => !s.running.test_tool_with_task);
  t.equal(await stateOf(jobId), 'done');
  t.same((await tool('test_tool_with_task_result', jobId)).result.content, [{ type: 'text', text: 'Hello, Zed!' }]);
  t.same((await tool('test_tool_with_task_cancel', jobId)).result.structuredContent, { state: 'done' }, 'a done job stays done');

  const ask2 = await call(fx, 'test_tool_with_task');
  const second = await call(fx, 'test_tool_with_task', {}, NO_EXT, {
    inputResponses: { user_name: { action: 'accept', content: { name: 'Ann' } } },
    requestState: ask2.body.result.requestState,
  });
  const id2 = second.body.result.structuredContent.jobId;
  t.not(id2, jobId, 'a new handle per start');
  t.same((await tool('test_tool_with_task_cancel', id2)).result.structuredContent, { state: 'cancelled' });
  t.equal(await stateOf(id2), 'cancelled');
  t.match((await tool('test_tool_with_task_result', id2)).result, { isError: true, content: [{ text: /cancelled/ }] });

  for (const name of jobTools.slice(1))
    t.match((await tool(name, 'job-404')).result, { isError: true, content: [{ text: /Unknown job/ }] }, `${name}: unknown job`);
  t.match((await tool('test_tool_with_task_status', 7)).error, { code: -32602 }, 'jobId must be a string');
  t.same(fx.stats().tasksCreated, {}, 'no task of the fixture');
});

t.test('dual + native: the legacy leg runs the task tools synchronously', async (t) => {
  const fx = await fixture(t, { mode: 'dual' });
  const client = new Client({ name: 'legacy', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { confirm: true } }));
  await client.connect(new StreamableHTTPClientTransport(new URL(fx.url)));
  t.teardown(() => client.close());
  const r = await client.callTool({ name: 'confirm_delete', arguments: { filename: 'd.txt' } });
  t.equal(firstText(r), 'Deleted d.txt', 'asked as an ordinary elicitation on the call stream');
  t.equal(firstText(await client.callTool({ name: 'failing_job', arguments: {} })), 'Job failed: simulated tool error');
  t.notOk(client.getServerCapabilities()?.tasks, 'no 2025 tasks on the legacy leg');
  const id = await create(t, fx, 'slow_compute', { seconds: 0 });
  t.equal((await pollTask(fx, id)).status, 'completed', 'the modern leg has tasks');
});

t.test('without tasks: no task tools, empty task stats', async (t) => {
  const fx = await startModernFixture({ mode: 'modern' });
  t.teardown(() => fx.close());
  const l = await post(fx.url, 'tools/list', {}, { capabilities: {} });
  t.notOk(l.body.result.tools.some((x: { name: string }) => x.name === 'slow_compute'));
  t.same(fx.stats().tasksCreated, {});
  t.throws(() => fx.releaseGate('g'), /tasks/);
});
