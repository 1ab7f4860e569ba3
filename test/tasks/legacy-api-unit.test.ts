/**
 * The runtime's API for the legacy face (2025-11-25 clients) against the in-memory FakeUpstream and its FakeTask: no
 * sockets. Each test scripts the upstream (a modern one with or without the tasks extension, or a legacy one) and
 * checks what the runtime makes of a task-augmented call (a proxied task, or a gateway-owned one completed, failed or
 * asking at once), of a call without `task` (a hidden upstream task), and of task reads, waits, answers, cancels,
 * lists and watches.
 */
import t from 'tap';
import type { CallerContext, TaskPolicy, TaskRuntime, UpstreamRoute } from '../../src/tasks/index.js';
import type { Era, JsonObject, TaskRecord } from '../../src/translate/index.js';
import type { UpstreamTaskSnapshot } from '../../src/upstream/index.js';
import { FakeTask, FakeUpstream } from '../helpers/fake-upstream.js';
import { quietRuntime, routeOver } from '../helpers/runtime-harness.js';

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const WAIT_MS = 5_000;
const ASK_NAME = { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object', properties: {} } } };

interface Harness {
  runtime: TaskRuntime;
  upstream: FakeUpstream;
  route: UpstreamRoute;
  caller: CallerContext;
  create(name: string, opts?: { ttlMs?: number; caller?: CallerContext }): ReturnType<TaskRuntime['createTask']>;
  /** Resolves with the record once `pred` holds for it (now or after a change). */
  until(taskId: string, pred: (r: TaskRecord) => boolean): Promise<TaskRecord>;
}

function harness(
  t: { teardown(fn: () => unknown): void },
  opts: { era?: Era; upstreamCaps?: JsonObject; rules?: Record<string, TaskPolicy>; tools?: JsonObject[]; maxActive?: number } = {},
): Harness {
  const era = opts.era ?? 'modern';
  const caps = opts.upstreamCaps ?? { tools: {}, extensions: { [TASKS_EXT]: {} } };
  const upstream = new FakeUpstream(
    'fake',
    { protocolVersion: era === 'modern' ? '2026-07-28' : '2025-11-25', capabilities: caps, serverInfo: { name: 'fake', version: '1' } },
    era,
  );
  upstream.handle('tools/list', () => ({ tools: opts.tools ?? [] }));
  const { runtime } = quietRuntime(t, { maxTasks: 500, maxActivePerPrincipal: opts.maxActive ?? 10 });
  const route = routeOver(upstream, opts.rules, { url: 'memory:fake', timeoutMs: 30_000 });
  const caller: CallerContext = { principal: 'anon', session: 's1', capabilities: { elicitation: {} } };
  const h: Harness = {
    runtime,
    upstream,
    route,
    caller,
    create: (name, o = {}) =>
      runtime.createTask(route, { name, arguments: {} }, o.caller ?? caller, o.ttlMs !== undefined ? { ttlMs: o.ttlMs } : {}, new AbortController().signal),
    async until(taskId, pred) {
      const deadline = Date.now() + WAIT_MS;
      let r = await runtime.task(route, taskId, caller);
      while (!pred(r)) {
        if (Date.now() > deadline) throw new Error(`task ${taskId} never matched; last ${JSON.stringify(r)}`);
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), Math.max(1, deadline - Date.now()));
        const next = await runtime.changed(taskId, r.version, ac.signal).finally(() => clearTimeout(timer));
        if (!next) throw new Error(`task ${taskId} expired`);
        r = next;
      }
      return r;
    },
  };
  return h;
}

function snapshot(change: Partial<UpstreamTaskSnapshot> = {}): UpstreamTaskSnapshot {
  return { status: 'working', ttlMs: 30_000, pollIntervalMs: 250, createdAt: '2026-01-01T00:00:00Z', ...change };
}

function recordOf(r: Awaited<ReturnType<TaskRuntime['createTask']>>): TaskRecord {
  if (!('record' in r)) throw new Error(`no task: ${JSON.stringify(r)}`);
  return r.record;
}

t.test('a modern upstream with the extension: its task proxied, input answered into it, its outcome the record’s', async (t) => {
  const h = harness(t);
  const pending = h.create('job', { ttlMs: 5_000 });
  const call = await h.upstream.nextCall('tools/call');
  t.same(call.opts, { task: { ttlMs: 5_000 } }, 'sent letting the upstream create a task, with the client’s TTL');
  t.same(call.params, { name: 'job', arguments: {}, _meta: { progressToken: call.params?._meta && (call.params._meta as JsonObject).progressToken } });
  const task = new FakeTask('up-1', snapshot());
  call.createTask(task);
  const record = recordOf(await pending);
  t.match(
    record,
    { kind: 'proxied', upstreamTaskId: 'up-1', origin: 'legacy', session: 's1', status: 'working', ttlMs: 30_000, pollIntervalMs: 250 },
    'the upstream’s TTL reported',
  );
  t.not(record.taskId, 'up-1', 'the gateway mints its own id');

  task.emit({ status: 'input_required' });
  task.emit({ status: 'input_required', inputRequests: { 'in-1': ASK_NAME } });
  const asking = await h.until(record.taskId, (r) => r.status === 'input_required');
  t.same(Object.keys(asking.inputRequests ?? {}), ['in-1'], 'input_required only once a request is known');

  t.same(await h.runtime.answer(h.route, record.taskId, h.caller, { 'in-1': { action: 'accept', content: { name: 'x' } }, other: {} }), ['in-1']);
  t.same(await task.nextAnswer(), { 'in-1': { action: 'accept', content: { name: 'x' } } }, 'only the outstanding key went upstream');
  t.equal((await h.runtime.task(h.route, record.taskId, h.caller)).status, 'working', 'answered before the answer resolves');

  task.emit({ status: 'completed', inputRequests: {}, result: { resultType: 'complete', content: [{ type: 'text', text: 'done' }] } });
  const done = await h.until(record.taskId, (r) => r.status === 'completed');
  t.match(done.result, { content: [{ type: 'text', text: 'done' }] });
  t.ok(task.released, 'the upstream task is released once terminal');
});

t.test('the upstream answers at once: a result completes an owned task, a question makes it input_required, an error is no task', async (t) => {
  const h = harness(t);
  const quick = h.create('quick');
  (await h.upstream.nextCall('tools/call')).reply({ content: [{ type: 'text', text: 'now' }] });
  const completed = recordOf(await quick);
  t.match(completed, { kind: 'owned', origin: 'legacy', session: 's1', status: 'completed', result: { content: [{ type: 'text', text: 'now' }] } });

  const failing = h.create('bad');
  (await h.upstream.nextCall('tools/call')).replyError({ code: -32602, message: 'Unknown tool: bad' });
  t.same(await failing, { error: { code: -32602, message: 'Unknown tool: bad' } });

  const asking = h.create('ask');
  const call = await h.upstream.nextCall('tools/call');
  const id = call.ask('elicitation/create', ASK_NAME.params);
  const record = recordOf(await asking);
  t.equal(record.status, 'input_required');
  const [key] = Object.keys(record.inputRequests ?? {});
  await h.runtime.answer(h.route, record.taskId, h.caller, { [key as string]: { action: 'accept', content: {} } });
  t.same(await call.nextAnswer(), { id, result: { action: 'accept', content: {} } }, 'the question was answered on the creating call');
  call.reply({ content: [] });
  t.equal((await h.until(record.taskId, (r) => r.status === 'completed')).status, 'completed');
});

t.test('a wrapped tool: a gateway-owned task at once, the call sent as it is', async (t) => {
  const h = harness(t, { rules: { '*': { task: 'always' } } });
  const record = recordOf(await h.create('slow'));
  t.match(record, { kind: 'owned', status: 'working' }, 'a task before the upstream answered');
  const call = await h.upstream.nextCall('tools/call');
  t.same(call.opts, { patient: true }, 'the upstream cannot make it a task (no `task`); it may wait for a session as a task does');
  call.reply({ content: [] });
  await h.until(record.taskId, (r) => r.status === 'completed');
});

t.test('a tool shown as forbidden (rule off, or an upstream without tasks for it): -32601, nothing sent', async (t) => {
  for (const [label, opts] of [
    ['off', { rules: { '*': { task: 'off' } } }],
    ['no extension', { upstreamCaps: { tools: {} } }],
    [
      'legacy forbidden',
      { era: 'legacy', upstreamCaps: { tools: {}, tasks: { requests: { tools: { call: {} } } } }, tools: [{ name: 'slow', inputSchema: {} }] },
    ],
  ] as Array<[string, Parameters<typeof harness>[1]]>) {
    const h = harness(t, opts);
    t.match(await h.create('slow'), { error: { code: -32601 } }, `${label}: 2025-11-25 §Tool-Level Negotiation`);
    t.equal(h.upstream.calls.filter((c) => c.method === 'tools/call').length, 0, `${label}: the upstream never saw the call`);
  }
});

t.test('a legacy upstream that supports the tool: sent task-augmented', async (t) => {
  const h = harness(t, {
    era: 'legacy',
    upstreamCaps: { tools: {}, tasks: { requests: { tools: { call: {} } } } },
    tools: [{ name: 'job', inputSchema: {}, execution: { taskSupport: 'optional' } }],
  });
  const pending = h.create('job');
  const call = await h.upstream.nextCall('tools/call');
  t.same(call.opts, { task: { ttlMs: 60_000 } });
  call.createTask(new FakeTask('up-9', snapshot({ ttlMs: null })));
  t.match(recordOf(await pending), { kind: 'proxied', upstreamTaskId: 'up-9', ttlMs: 3_600_000 }, 'an unlimited upstream TTL is bounded');
});

t.test('the principal’s task limit: refused before the upstream sees the call', async (t) => {
  const h = harness(t, { maxActive: 1 });
  const first = h.create('job');
  (await h.upstream.nextCall('tools/call')).createTask(new FakeTask('up-1', snapshot()));
  await first;
  await t.rejects(h.create('job'), { name: 'TooManyTasksError' });
  t.equal(h.upstream.calls.filter((c) => c.method === 'tools/call').length, 1);
});

t.test('cancelTask: a proxied task cancelled upstream and for good; a terminal one refused, asked of the upstream first', async (t) => {
  const h = harness(t);
  const pending = h.create('job');
  const task = new FakeTask('up-1', snapshot());
  (await h.upstream.nextCall('tools/call')).createTask(task);
  const record = recordOf(await pending);
  const cancelled = await h.runtime.cancelTask(h.route, record.taskId, h.caller);
  t.equal(cancelled.status, 'cancelled', 'cancelled before the answer');
  t.equal(task.cancels, 1, 'cancelled upstream');
  task.emit({ status: 'completed', result: { content: [] } });
  t.equal((await h.runtime.task(h.route, record.taskId, h.caller)).status, 'cancelled', 'stays cancelled whatever the upstream says later');
  await t.rejects(h.runtime.cancelTask(h.route, record.taskId, h.caller), { name: 'TaskAlreadyTerminalError' });

  const second = h.create('job');
  const ended = new FakeTask('up-2', snapshot());
  (await h.upstream.nextCall('tools/call')).createTask(ended);
  const r2 = recordOf(await second);
  ended.set({ status: 'completed', result: { resultType: 'complete', content: [] } });
  await t.rejects(h.runtime.cancelTask(h.route, r2.taskId, h.caller), { name: 'TaskAlreadyTerminalError' }, 'the upstream had finished it');
  t.equal(ended.cancels, 0, 'and was not asked to cancel');
  t.equal((await h.runtime.task(h.route, r2.taskId, h.caller)).status, 'completed');

  const third = h.create('job');
  const raced = new FakeTask('up-3', snapshot());
  raced.cancelAnswer = 'terminal';
  (await h.upstream.nextCall('tools/call')).createTask(raced);
  const r3 = recordOf(await third);
  raced.set({ status: 'failed', error: { code: -32000, message: 'boom' } });
  raced.get = async () => (raced.cancels > 0 ? raced.state : snapshot());
  await t.rejects(h.runtime.cancelTask(h.route, r3.taskId, h.caller), { name: 'TaskAlreadyTerminalError' }, 'it ended while being cancelled');
  t.match(await h.runtime.task(h.route, r3.taskId, h.caller), { status: 'failed', error: { code: -32000 } });
});

t.test('cancelTask: an owned task’s call is cancelled; unknown and foreign ids are unknown', async (t) => {
  const h = harness(t, { rules: { '*': { task: 'always' } } });
  const record = recordOf(await h.create('slow'));
  const call = await h.upstream.nextCall('tools/call');
  t.equal((await h.runtime.cancelTask(h.route, record.taskId, h.caller)).status, 'cancelled');
  t.equal(call.cancelled, 'task cancelled by the client');
  await t.rejects(h.runtime.cancelTask(h.route, 'gwt_nope', h.caller), { name: 'UnknownTaskError' });
  const { session: _session, ...sessionless } = h.caller;
  await t.rejects(h.runtime.task(h.route, record.taskId, { ...h.caller, session: 's2' }), { name: 'UnknownTaskError' }, 'another session’s');
  await t.rejects(h.runtime.task(h.route, record.taskId, { ...sessionless, principal: 'bob' }), { name: 'UnknownTaskError' }, 'another principal’s');
});

t.test('a lost upstream task fails the record', async (t) => {
  const h = harness(t);
  const pending = h.create('job');
  const task = new FakeTask('up-1', snapshot());
  (await h.upstream.nextCall('tools/call')).createTask(task);
  const record = recordOf(await pending);
  task.lose();
  const failed = await h.until(record.taskId, (r) => r.status === 'failed');
  t.match(failed.error, { code: -32603, message: /no longer knows/ });
});

t.test('list: the caller’s tasks (its session’s without credentials), pages with an opaque cursor', async (t) => {
  const h = harness(t, { rules: { '*': { task: 'always' } }, maxActive: 200 });
  const ids: string[] = [];
  for (let i = 0; i < 60; i++) ids.push(recordOf(await h.create(`t${i}`)).taskId);
  await h.create('other', { caller: { ...h.caller, session: 's2' } });
  const first = await h.runtime.list(h.route, h.caller, undefined);
  t.equal(first.tasks.length, 50);
  t.type(first.nextCursor, 'string');
  const second = await h.runtime.list(h.route, h.caller, first.nextCursor);
  t.notOk(second.nextCursor, 'the last page');
  t.same([...first.tasks, ...second.tasks].map((r) => r.taskId).sort(), [...ids].sort(), 'every task of this session, once');
  await t.rejects(h.runtime.list(h.route, h.caller, 'not-a-cursor'), { name: 'InvalidCursorError' });
  t.equal((await h.runtime.list(h.route, { ...h.caller, session: 's2' }, undefined)).tasks.length, 1);
});

t.test('watch and changed: every change of the principal’s tasks; changed wakes on a change and on abort', async (t) => {
  const h = harness(t);
  const seen: string[] = [];
  const stop = h.runtime.watch(h.route, 'anon', (r) => seen.push(r.status));
  const stopOther = h.runtime.watch(h.route, 'bob', () => t.fail('another principal’s watch'));
  const pending = h.create('job');
  const task = new FakeTask('up-1', snapshot());
  (await h.upstream.nextCall('tools/call')).createTask(task);
  const record = recordOf(await pending);
  const waiting = h.runtime.changed(record.taskId, record.version, new AbortController().signal);
  task.emit({ status: 'working', statusMessage: 'half way' });
  t.match(await waiting, { statusMessage: 'half way' }, 'woke on the change');
  const ac = new AbortController();
  const idle = h.runtime.changed(record.taskId, (await h.runtime.task(h.route, record.taskId, h.caller)).version, ac.signal);
  ac.abort();
  t.match(await idle, { taskId: record.taskId }, 'abort returns the record as it is');
  t.equal(await h.runtime.changed('gwt_nope', 0, new AbortController().signal), undefined, 'unknown: undefined');
  task.emit({ status: 'completed', result: { content: [] } });
  await h.until(record.taskId, (r) => r.status === 'completed');
  stop();
  stopOther();
  t.same(seen, ['working', 'completed']);
});

t.test('callToolPlain: a task the upstream creates stays hidden; the rules make no task', async (t) => {
  const h = harness(t, { rules: { '*': { task: 'always' } } });
  const call = await h.runtime.callToolPlain(h.route, { name: 'job', arguments: {} }, h.caller, new AbortController().signal);
  const upstreamCall = await h.upstream.nextCall('tools/call');
  t.same(upstreamCall.opts, { task: { ttlMs: 60_000 } }, 'a modern upstream with the extension may answer with a task');
  const task = new FakeTask('up-1', snapshot());
  upstreamCall.createTask(task);
  task.emit({ status: 'input_required', inputRequests: { q: ASK_NAME } });
  const ask = await call.next();
  t.match(ask, { kind: 'request', message: { method: 'elicitation/create' } }, 'the task’s question is the call’s');
  if (ask.kind !== 'request') return;
  await call.respond(ask.message.id, { result: { action: 'accept', content: {} } });
  t.same(await task.nextAnswer(), { q: { action: 'accept', content: {} } });
  task.emit({ status: 'completed', inputRequests: {}, result: { content: [{ type: 'text', text: 'hidden' }] } });
  t.match(await call.next(), { kind: 'response', message: { result: { content: [{ type: 'text', text: 'hidden' }] } } });
  t.same((await h.runtime.list(h.route, h.caller, undefined)).tasks, [], 'no task of the gateway’s');

  const legacy = harness(t, {
    era: 'legacy',
    upstreamCaps: { tools: {}, tasks: { requests: { tools: { call: {} } } } },
    tools: [
      { name: 'opt', inputSchema: {}, execution: { taskSupport: 'optional' } },
      { name: 'req', inputSchema: {}, execution: { taskSupport: 'required' } },
    ],
  });
  await legacy.runtime.callToolPlain(legacy.route, { name: 'opt' }, legacy.caller, new AbortController().signal);
  t.equal((await legacy.upstream.nextCall('tools/call')).opts, undefined, 'legacy optional: a plain call');
  await legacy.runtime.callToolPlain(legacy.route, { name: 'req' }, legacy.caller, new AbortController().signal);
  t.same((await legacy.upstream.nextCall('tools/call')).opts, { task: { ttlMs: 60_000 } }, 'legacy required: task-augmented');
});

t.test('a call without task is never refused, whatever the rule; a task refused whatever the upstream is not asked of it', async (t) => {
  const legacy = (rules: Record<string, TaskPolicy>) =>
    harness(t, {
      era: 'legacy',
      rules,
      upstreamCaps: { tools: {}, tasks: { requests: { tools: { call: {} } } } },
      tools: [{ name: 'req', inputSchema: {}, execution: { taskSupport: 'required' } }],
    });
  const required = legacy({ '*': { task: 'required' } });
  await required.runtime.callToolPlain(required.route, { name: 'req' }, required.caller, new AbortController().signal);
  t.same((await required.upstream.nextCall('tools/call')).opts, { task: { ttlMs: 60_000 } }, 'rule required, no task: sent, its upstream task hidden');
  const off = legacy({ '*': { task: 'off' } });
  t.match(await off.create('req'), { error: { code: -32601 } }, 'rule off, with task: -32601');
  t.same(
    off.upstream.calls.map((c) => c.method),
    [],
    'the upstream was asked nothing: not its tools/list, not the call',
  );
});

t.test('the upstream task’s creating _meta reaches the legacy client (e.g. model-immediate-response)', async (t) => {
  const h = harness(t);
  const pending = h.create('job');
  const meta = { 'io.modelcontextprotocol/model-immediate-response': 'Working on it.' };
  (await h.upstream.nextCall('tools/call')).createTask(new FakeTask('up-m', snapshot({ meta })));
  const created = await pending;
  t.match(created, { record: { kind: 'proxied', upstreamTaskId: 'up-m' }, meta });
});

t.test('an upstream silent past the creation window: a gateway-owned task at once, completed by the late answer', async (t) => {
  const h = harness(t, { rules: { '*': { task: 'native', afterMs: 20 } } });
  const pending = h.create('job');
  const call = await h.upstream.nextCall('tools/call');
  t.same(call.opts, { task: { ttlMs: 60_000 } }, 'asked task-augmented: the upstream could have made it its own task');
  const record = recordOf(await pending);
  t.match(record, { kind: 'owned', status: 'working' }, 'the client got its task before the upstream answered');
  call.reply({ content: [{ type: 'text', text: 'late' }] });
  const done = await h.until(record.taskId, (r) => r.status === 'completed');
  t.match(done.result, { content: [{ type: 'text', text: 'late' }] });
});
