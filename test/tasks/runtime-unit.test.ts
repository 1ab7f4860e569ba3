/**
 * The task runtime against the in-memory FakeUpstream and the memory store: no sockets, no fixture server. Each
 * test scripts what the upstream does and checks what the runtime makes of it: a plain call, MRTR hold and resume,
 * a gateway-owned task (input, update, progress, cancel), a proxied upstream task (input, update, outcome,
 * cancel), the refusal of a task the client cannot take, and an upstream task hidden inside one call.
 */
import t from 'tap';
import type { MrtrBridge, TaskRuntime, CallerContext, ForwardHooks, TaskPolicy, UpstreamRoute } from '../../src/tasks/index.js';
import { MissingCapabilityError } from '../../src/tasks/calls/conversation.js';
import { methodPolicy, type Era, type JsonObject, type JsonRpcNotification, type ModernRequest } from '../../src/translate/index.js';
import { FakeTask, FakeUpstream } from '../helpers/fake-upstream.js';
import { quietRuntime, routeOver } from '../helpers/runtime-harness.js';

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const DECLARING = { extensions: { [TASKS_EXT]: {} }, elicitation: {} };
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const WAIT_MS = 5_000;

/** Upstream capabilities with legacy tool tasks (2025-11-25 `tasks.requests.tools.call`). */
const TASK_CAPS = { tools: {}, tasks: { requests: { tools: { call: {} } }, cancel: {} } };

interface Harness {
  runtime: TaskRuntime;
  bridge: MrtrBridge;
  upstream: FakeUpstream;
  route: UpstreamRoute;
  caller: CallerContext;
  notified: JsonRpcNotification[];
  hooks: ForwardHooks;
  callTool(name: string, extra?: Partial<ModernRequest>): ReturnType<TaskRuntime['callTool']>;
  task(method: 'tasks/get' | 'tasks/update' | 'tasks/cancel', taskId: string, extra?: Partial<ModernRequest>): Promise<JsonObject>;
  /** Resolves with the task once `pred` holds for it (now or after a change). */
  until(taskId: string, pred: (task: any) => boolean): Promise<any>;
}

function request(method: string, params: JsonObject, capabilities: JsonObject, extra: Partial<ModernRequest> = {}): ModernRequest {
  return {
    id: 1,
    method,
    policy: methodPolicy(method),
    params,
    envelope: { protocolVersion: '2026-07-28', clientCapabilities: capabilities },
    ...extra,
  };
}

function harness(
  t: { teardown(fn: () => unknown): void },
  opts: { rules?: Record<string, TaskPolicy>; capabilities?: JsonObject; upstreamCaps?: JsonObject; tools?: JsonObject[]; era?: Era } = {},
): Harness {
  const upstream = new FakeUpstream(
    'fake',
    { protocolVersion: '2025-11-25', capabilities: opts.upstreamCaps ?? { tools: {} }, serverInfo: { name: 'fake', version: '1' } },
    opts.era,
  );
  upstream.handle('tools/list', () => ({ tools: opts.tools ?? [] }));
  const { runtime, bridge } = quietRuntime(t, { maxTasks: 100 });
  const route = routeOver(upstream, opts.rules, { url: 'memory:fake', timeoutMs: 30_000 });
  const capabilities = opts.capabilities ?? DECLARING;
  const caller: CallerContext = { principal: 'alice', capabilities };
  const notified: JsonRpcNotification[] = [];
  const hooks: ForwardHooks = { signal: new AbortController().signal, notify: (n) => notified.push(n) };
  const h: Harness = {
    runtime,
    bridge,
    upstream,
    route,
    caller,
    notified,
    hooks,
    callTool: (name, extra = {}) => runtime.callTool(route, request('tools/call', { name, arguments: {} }, capabilities, extra), caller, hooks),
    task: (method, taskId, extra = {}) => {
      const req = request(method, { taskId }, capabilities, extra);
      return method === 'tasks/get'
        ? runtime.get(route, req, caller)
        : method === 'tasks/update'
          ? runtime.update(route, req, caller)
          : runtime.cancel(route, req, caller);
    },
    async until(taskId, pred) {
      let resolve!: (task: any) => void;
      const changed = new Promise<any>((r) => (resolve = r));
      const sub = await runtime.subscribe(route, caller.principal, [taskId], (task) => {
        if (pred(task)) resolve(task);
      });
      try {
        const now = await h.task('tasks/get', taskId);
        if (pred(now)) return now;
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`task ${taskId} never matched; last ${JSON.stringify(now)}`)), WAIT_MS);
        });
        return await Promise.race([changed, timeout]).finally(() => clearTimeout(timer));
      } finally {
        sub.stop();
      }
    },
  };
  return h;
}

t.test('a plain call: forwarded as it is, the response is the answer, progress for the client’s token relayed', async (t) => {
  const h = harness(t, { capabilities: {} });
  const outcome = h.runtime.callTool(
    h.route,
    request('tools/call', { name: 'greet', arguments: { who: 'Ada' }, task: { ttl: 1 }, _meta: { progressToken: 'p1' } }, {}),
    h.caller,
    h.hooks,
  );
  const call = await h.upstream.nextCall('tools/call');
  t.same(call.params, { name: 'greet', arguments: { who: 'Ada' }, _meta: { progressToken: 'p1' } }, 'a modern client’s task is not forwarded');
  call.notify('notifications/progress', { progressToken: 'p1', progress: 1 });
  call.notify('notifications/progress', { progressToken: 'other', progress: 1 });
  call.reply({ content: [{ type: 'text', text: 'Hello, Ada' }] });
  const r = await outcome;
  t.equal(r.kind, 'result');
  t.match(r, { result: { resultType: 'complete', content: [{ type: 'text', text: 'Hello, Ada' }] } });
  t.same(
    h.notified.map((n) => n.params?.progressToken),
    ['p1'],
    'only the client’s own progress',
  );
});

t.test('MRTR: an input request holds the call; the retry resumes it with the answer', async (t) => {
  const h = harness(t, { capabilities: { elicitation: {} } });
  const first = h.callTool('confirm');
  const call = await h.upstream.nextCall('tools/call');
  const id = call.ask('elicitation/create', { message: 'Sure?', requestedSchema: { type: 'object', properties: {} } });
  const asked = await first;
  t.equal(asked.kind, 'result');
  const result = (asked as { result: any }).result;
  t.equal(result.resultType, 'input_required');
  const [key] = Object.keys(result.inputRequests);
  t.ok(key, 'one input request');
  t.equal(result.inputRequests[key as string].method, 'elicitation/create');
  t.equal(h.bridge.heldCount, 1, 'the call is held');

  const retry = h.callTool('confirm', { requestState: result.requestState, inputResponses: { [key as string]: { action: 'accept', content: {} } } });
  const answer = await call.nextAnswer();
  t.same(answer, { id, result: { action: 'accept', content: {} } }, 'the answer reached the held upstream call');
  call.reply({ content: [{ type: 'text', text: 'done' }] });
  const done = await retry;
  t.match(done, { kind: 'result', result: { resultType: 'complete', content: [{ type: 'text', text: 'done' }] } });
  t.equal(h.bridge.heldCount, 0, 'released');
  t.equal(h.upstream.calls.filter((c) => c.method === 'tools/call').length, 1, 'one upstream call for both rounds');

  await t.rejects(
    h.callTool('confirm', { requestState: result.requestState, inputResponses: {} }),
    { name: 'InvalidRequestStateError' },
    'a used state cannot continue again',
  );
});

t.test('owned task: always wraps at once; progress, input, update and the outcome reach the record', async (t) => {
  const h = harness(t, { rules: { slow: { task: 'always' } } });
  const created = await h.callTool('slow');
  t.match(created, { kind: 'result', result: { resultType: 'task', status: 'working' } });
  const taskId = (created as { result: any }).result.taskId as string;
  const call = await h.upstream.nextCall('tools/call');
  t.match(call.params, { name: 'slow', _meta: { progressToken: /^gw-/ } }, 'a wrapped call asks for progress with a gateway token');

  call.notify('notifications/progress', { progressToken: (call.params as any)._meta.progressToken, progress: 1, total: 4 });
  t.equal((await h.until(taskId, (task) => task.statusMessage === '1/4')).status, 'working', 'progress becomes the statusMessage');

  const id = call.ask('elicitation/create', { message: 'Go on?', requestedSchema: { type: 'object', properties: {} } });
  const asking = await h.until(taskId, (task) => task.status === 'input_required');
  const [key] = Object.keys(asking.inputRequests);
  t.ok(key, 'the question is in the record');
  t.same(await h.task('tasks/update', taskId, { inputResponses: { [key as string]: { action: 'accept', content: {} } } }), { resultType: 'complete' });
  t.same(await call.nextAnswer(), { id, result: { action: 'accept', content: {} } }, 'tasks/update answered the upstream call');
  t.equal((await h.task('tasks/get', taskId)).status, 'working', 'the ack follows the record change');

  call.reply({ content: [{ type: 'text', text: 'finished' }] });
  const done = await h.until(taskId, (task) => task.status === 'completed');
  t.match(done.result, { content: [{ type: 'text', text: 'finished' }] });
});

t.test('owned task: auto answers synchronously within afterMs, and becomes a task when the window passes', async (t) => {
  const h = harness(t, { rules: { quick: { task: 'auto', afterMs: 60_000 }, never: { task: 'auto', afterMs: 1 } } });
  const fast = h.callTool('quick');
  (await h.upstream.nextCall('tools/call')).reply({ content: [] });
  t.match(await fast, { kind: 'result', result: { resultType: 'complete' } }, 'ended within the window: a plain answer');

  const slow = await h.callTool('never');
  t.match(slow, { kind: 'result', result: { resultType: 'task' } }, 'still running after the window: a task');
});

t.test('owned task: tasks/cancel cancels the upstream call and ends the record cancelled', async (t) => {
  const h = harness(t, { rules: { '*': { task: 'always' } } });
  const taskId = ((await h.callTool('slow')) as { result: any }).result.taskId as string;
  const call = await h.upstream.nextCall('tools/call');
  t.same(await h.task('tasks/cancel', taskId), { resultType: 'complete' });
  t.equal(call.cancelled, 'task cancelled by the client', 'the upstream call was cancelled');
  t.equal((await h.task('tasks/get', taskId)).status, 'cancelled');
  t.same(await h.task('tasks/cancel', taskId), { resultType: 'complete' }, 'idempotent on a terminal task');
});

t.test('proxied task: the upstream’s task, its input through tasks/update, its outcome the record’s', async (t) => {
  const h = harness(t, { upstreamCaps: TASK_CAPS, tools: [{ name: 'job', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } }] });
  const pending = h.callTool('job');
  const call = await h.upstream.nextCall('tools/call');
  t.same(call.opts, { task: { ttlMs: 60_000 } }, 'sent letting the upstream create a task, with the default TTL');
  t.same(call.params, { name: 'job', arguments: {} }, 'the seam adds the era’s task marker, not the runtime');
  const task = new FakeTask('up-1', { status: 'working', ttlMs: 60_000, createdAt: '2026-01-01T00:00:00Z', pollIntervalMs: 500 });
  call.createTask(task);
  const created = await pending;
  t.match(created, { kind: 'result', result: { resultType: 'task', status: 'working', pollIntervalMs: 500 } });
  const taskId = (created as { result: any }).result.taskId as string;
  t.not(taskId, 'up-1', 'the gateway mints its own id');

  task.emit({
    status: 'input_required',
    inputRequests: { 'elicitation-1': { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object', properties: {} } } } },
  });
  const asking = await h.until(taskId, (task) => task.status === 'input_required');
  t.same(Object.keys(asking.inputRequests), ['elicitation-1'], 'the upstream task’s own keys');
  await h.task('tasks/update', taskId, { inputResponses: { 'elicitation-1': { action: 'accept', content: { name: 'x' } } } });
  t.same(await task.nextAnswer(), { 'elicitation-1': { action: 'accept', content: { name: 'x' } } }, 'answered into the upstream task');
  t.equal((await h.task('tasks/get', taskId)).status, 'working', 'the ack follows the record change');

  task.emit({
    status: 'completed',
    inputRequests: {},
    result: { resultType: 'complete', content: [{ type: 'text', text: 'payload' }], _meta: { [RELATED_TASK]: { taskId: 'up-1' } } },
  });
  const done = await h.until(taskId, (task) => task.status === 'completed');
  t.same(done.result, { resultType: 'complete', content: [{ type: 'text', text: 'payload' }] }, 'the upstream’s related-task _meta removed');
  t.ok(task.released, 'released once terminal');
});

t.test('proxied task: the upstream’s creating _meta reaches the modern client (e.g. model-immediate-response)', async (t) => {
  const h = harness(t, { upstreamCaps: TASK_CAPS, tools: [{ name: 'job', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } }] });
  const pending = h.callTool('job');
  const meta = { 'io.modelcontextprotocol/model-immediate-response': 'Started; I will report back.' };
  (await h.upstream.nextCall('tools/call')).createTask(new FakeTask('up-m', { status: 'working', ttlMs: 60_000, meta }));
  t.match(await pending, { kind: 'result', result: { resultType: 'task', _meta: meta } });
});

t.test('proxied task: tasks/cancel cancels upstream and releases the task', async (t) => {
  const h = harness(t, { upstreamCaps: TASK_CAPS, tools: [{ name: 'job', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } }] });
  const pending = h.callTool('job');
  const task = new FakeTask('up-2', { status: 'working', ttlMs: null });
  (await h.upstream.nextCall('tools/call')).createTask(task);
  const taskId = ((await pending) as { result: any }).result.taskId as string;
  t.same(await h.task('tasks/cancel', taskId), { resultType: 'complete' });
  t.equal(task.cancels, 1, 'cancelled upstream');
  t.equal((await h.task('tasks/get', taskId)).status, 'cancelled');
  t.ok(task.released);

  const second = h.callTool('job');
  const ended = new FakeTask('up-3', { status: 'working', ttlMs: null });
  ended.cancelAnswer = 'terminal';
  (await h.upstream.nextCall('tools/call')).createTask(ended);
  const id2 = ((await second) as { result: any }).result.taskId as string;
  ended.set({ status: 'completed', result: { resultType: 'complete', content: [] } });
  t.same(await h.task('tasks/cancel', id2), { resultType: 'complete' }, 'acknowledged');
  t.equal((await h.task('tasks/get', id2)).status, 'completed', 'a task that had ended keeps its outcome');
});

t.test('a task the client cannot take: refused before the upstream sees the call', async (t) => {
  const h = harness(t, {
    capabilities: {},
    upstreamCaps: TASK_CAPS,
    tools: [{ name: 'job', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } }],
  });
  await t.rejects(h.callTool('job'), MissingCapabilityError);
  t.notOk(
    h.upstream.calls.some((c) => c.method === 'tools/call'),
    'no upstream call',
  );
  const required = harness(t, { capabilities: {}, rules: { '*': { task: 'required' } } });
  await t.rejects(required.callTool('anything'), MissingCapabilityError);
});

t.test('off over an upstream that requires tasks: the task is followed to its end inside the call', async (t) => {
  const h = harness(t, {
    capabilities: { elicitation: {} },
    upstreamCaps: TASK_CAPS,
    rules: { '*': { task: 'off' } },
    tools: [{ name: 'job', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } }],
  });
  const outcome = h.callTool('job');
  const call = await h.upstream.nextCall('tools/call');
  t.same(call.opts, { task: { ttlMs: 60_000 } });
  const task = new FakeTask('up-3', { status: 'working', ttlMs: null });
  call.createTask(task);
  task.emit({
    status: 'input_required',
    inputRequests: { q: { method: 'elicitation/create', params: { message: 'Sure?', requestedSchema: { type: 'object', properties: {} } } } },
  });
  const asked = await outcome;
  t.match(
    asked,
    { kind: 'result', result: { resultType: 'input_required', inputRequests: { q: { method: 'elicitation/create' } } } },
    'the task’s question: an MRTR round of the call',
  );
  const retry = h.callTool('job', { requestState: (asked as { result: any }).result.requestState, inputResponses: { q: { action: 'accept', content: {} } } });
  t.same(await task.nextAnswer(), { q: { action: 'accept', content: {} } }, 'the retry answered into the task');
  task.emit({ status: 'completed', inputRequests: {}, result: { content: [{ type: 'text', text: 'hidden' }] } });
  t.match(await retry, { kind: 'result', result: { resultType: 'complete', content: [{ type: 'text', text: 'hidden' }] } }, 'one synchronous answer');
  t.ok(task.released, 'no task was kept');
});

/** A modern upstream with the tasks extension: the server decides per call whether a tool runs as a task. */
const MODERN_TASKS = { era: 'modern' as const, upstreamCaps: { tools: {}, extensions: { [TASKS_EXT]: {} } } };
const ASK = { method: 'elicitation/create', params: { message: 'Sure?', requestedSchema: { type: 'object', properties: {} } } };

t.test('native with afterMs: a task that asks at once is an MRTR round of the creating call, then the client’s task', async (t) => {
  const h = harness(t, { ...MODERN_TASKS, rules: { '*': { task: 'native', afterMs: 60_000 } } });
  const first = h.callTool('job');
  const call = await h.upstream.nextCall('tools/call');
  t.same(call.opts, { task: { ttlMs: 60_000 } }, 'a modern upstream with the extension may answer with a task');
  const task = new FakeTask('up-1', { status: 'working', ttlMs: 60_000 });
  call.createTask(task);
  task.emit({ status: 'input_required', inputRequests: { q: ASK } });
  const asked = await first;
  t.match(asked, { kind: 'result', result: { resultType: 'input_required', inputRequests: { q: ASK } } }, 'the question within the window: an MRTR round');
  const retry = h.callTool('job', { requestState: (asked as { result: any }).result.requestState, inputResponses: { q: { action: 'accept', content: {} } } });
  t.same(await task.nextAnswer(), { q: { action: 'accept', content: {} } }, 'the retry answered into the upstream task');
  task.set({ status: 'working', inputRequests: {} });
  const created = await retry;
  t.match(created, { kind: 'result', result: { resultType: 'task', status: 'working' } }, 'then the client gets the task');
  const taskId = (created as { result: any }).result.taskId as string;
  t.notOk(task.released, 'the same upstream task, adopted');
  task.emit({ status: 'completed', result: { resultType: 'complete', content: [{ type: 'text', text: 'done' }] } });
  t.match((await h.until(taskId, (x) => x.status === 'completed')).result, { content: [{ type: 'text', text: 'done' }] });
  t.equal(h.upstream.calls.filter((c) => c.method === 'tools/call').length, 1, 'one upstream call');
});

t.test('native with afterMs: a task that ends within the window is answered directly', async (t) => {
  const h = harness(t, { ...MODERN_TASKS, rules: { '*': { task: 'native', afterMs: 60_000 } } });
  const outcome = h.callTool('job');
  const task = new FakeTask('up-1', { status: 'working', ttlMs: 60_000 });
  (await h.upstream.nextCall('tools/call')).createTask(task);
  task.emit({ status: 'completed', result: { resultType: 'complete', content: [{ type: 'text', text: 'quick' }] } });
  t.match(await outcome, { kind: 'result', result: { resultType: 'complete', content: [{ type: 'text', text: 'quick' }] } });
});

t.test('native with afterMs: when the window passes, the client gets the upstream task (the same one)', async (t) => {
  const h = harness(t, { ...MODERN_TASKS, rules: { '*': { task: 'native', afterMs: 1 } } });
  const outcome = h.callTool('job');
  const task = new FakeTask('up-1', { status: 'working', ttlMs: 60_000 });
  (await h.upstream.nextCall('tools/call')).createTask(task);
  const created = await outcome;
  t.match(created, { kind: 'result', result: { resultType: 'task' } });
  t.equal(task.cancels, 0, 'not cancelled');
  t.notOk(task.released, 'adopted, not dropped');
  const taskId = (created as { result: any }).result.taskId as string;
  task.emit({ status: 'input_required', inputRequests: { q: ASK } });
  t.same(Object.keys((await h.until(taskId, (x) => x.status === 'input_required')).inputRequests), ['q'], 'its later questions are the task’s');
});

t.test('native with afterMs: an upstream that has not answered when the window passes is waited for, then proxied', async (t) => {
  let answer!: () => void;
  const h = harness(t, { ...MODERN_TASKS, rules: { '*': { task: 'native', afterMs: 1 } } });
  h.upstream.headers = new Promise<void>((r) => (answer = r));
  const outcome = h.callTool('job');
  const call = await h.upstream.nextCall('tools/call');
  // The window (1 ms) passes while the upstream is silent; it answers later.
  await new Promise<void>((r) => setImmediate(r));
  answer();
  call.createTask(new FakeTask('up-1', { status: 'working', ttlMs: 60_000 }));
  t.match(await outcome, { kind: 'result', result: { resultType: 'task' } }, 'no timeout: the task the upstream made');
});

t.test('the wrapping window counts from the send: an upstream that hangs before its headers still gives a task', async (t) => {
  const h = harness(t, { rules: { now: { task: 'always' }, soon: { task: 'auto', afterMs: 1 } } });
  h.upstream.headers = new Promise<void>(() => {});
  t.match(await h.callTool('now'), { kind: 'result', result: { resultType: 'task' } }, 'always: a task at once');
  t.match(await h.callTool('soon'), { kind: 'result', result: { resultType: 'task' } }, 'auto: a task when afterMs passes');
});
