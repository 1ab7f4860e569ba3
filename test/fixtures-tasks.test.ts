/**
 * Tests of the legacy fixture's task tools (test/fixtures/legacy-task-tools.ts), driven by real
 * SDK 1.32.2 clients, no gateway: `tasks: 'native'` (2025-11-25 tasks), `tasks: 'sync'` and `tasks: 'job'`.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  TaskStatusNotificationSchema,
  type ElicitRequest,
  type ElicitResult,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import { startLegacyFixture, type LegacyFixture } from './fixtures/legacy-server.js';
import { releaseGate, waitForStats } from './fixtures/legacy-task-tools.js';

const TASK = { ttl: 30_000 };
const INPUT_KEY = 'mcp-tasks-gateway/inputKey';

type ElicitHandler = (req: ElicitRequest) => Promise<ElicitResult> | ElicitResult;

interface Conn {
  client: Client;
  /** notifications/tasks/status received (standalone GET stream). */
  statuses: Task[];
  /** elicitation/create requests received. */
  elicitations: ElicitRequest[];
}

async function connect(url: string, onElicit?: ElicitHandler): Promise<Conn> {
  const client = new Client({ name: 'fixture-tasks-test', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  const statuses: Task[] = [];
  const elicitations: ElicitRequest[] = [];
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
    statuses.push(n.params as Task);
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicitations.push(req);
    if (!onElicit) return { action: 'decline' };
    return onElicit(req);
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return { client, statuses, elicitations };
}

async function collect<T>(stream: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const m of stream) out.push(m);
  return out;
}

function textOf(result: unknown): string {
  const c = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return c.map((x) => x.text ?? '').join('');
}

/** Two elicitations must both arrive before either is answered (proves they were sent concurrently). */
function barrier(answer: (req: ElicitRequest) => ElicitResult): ElicitHandler {
  const waiting: Array<() => void> = [];
  return (req) =>
    new Promise<ElicitResult>((resolve) => {
      waiting.push(() => resolve(answer(req)));
      if (waiting.length === 2) for (const w of waiting) w();
    });
}

const metaOf = (req: ElicitRequest) => (req.params._meta ?? {}) as Record<string, unknown>;

// ───────────────────────────── native ─────────────────────────────

t.test('native: 2025-11-25 tasks with the SDK 1.32.2 task runtime', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'native', taskPollIntervalMs: 50, taskJobDelayMs: 100 });
  t.teardown(() => fx.close());

  t.test('capabilities and tools/list', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    t.same(client.getServerCapabilities()?.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await client.listTools();
    const support = Object.fromEntries(tools.map((x) => [x.name, x.execution?.taskSupport]));
    t.equal(support.greet, undefined, 'greet: no execution (forbidden)');
    t.equal(support.test_simple_text, undefined);
    t.equal(support.slow_compute, 'optional');
    t.equal(support.failing_job, 'required');
    t.equal(support.protocol_error_job, 'optional');
    t.equal(support.confirm_delete, 'optional');
    t.equal(support.multi_input, 'optional');
    t.equal(support.test_tool_with_task, 'required');
    t.equal(support.gated_job, 'optional');
  });

  t.test('greet stays synchronous even with a task param', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    const r = await client.request({ method: 'tools/call', params: { name: 'greet', arguments: { name: 'Ada' }, task: TASK } }, CallToolResultSchema);
    t.equal(textOf(r), 'Hello, Ada!');
    t.notOk('task' in r);
  });

  t.test('slow_compute as a task: CreateTaskResult, polling, result, status notifications', async (t) => {
    const { client, statuses } = await connect(fx.url);
    t.teardown(() => client.close());
    const msgs = await collect(
      client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 0.2, label: 'pi' } }, CallToolResultSchema, { task: TASK }),
    );
    const created = msgs[0];
    t.equal(created?.type, 'taskCreated');
    if (created?.type !== 'taskCreated') return;
    t.match(created.task, { status: 'working', ttl: 30_000, pollInterval: 50, createdAt: String, lastUpdatedAt: String });
    const last = msgs.at(-1);
    t.equal(last?.type, 'result');
    if (last?.type === 'result') {
      t.equal(textOf(last.result), 'Computed pi after 0.2s');
      t.same(last.result._meta?.[RELATED_TASK_META_KEY], { taskId: created.task.taskId }, 'tasks/result carries related-task');
    }
    t.ok(msgs.some((m) => m.type === 'taskStatus' && m.task.status === 'working'));
    const task = await client.experimental.tasks.getTask(created.task.taskId);
    t.equal(task.status, 'completed');
    t.ok(
      statuses.some((s) => s.taskId === created.task.taskId && s.status === 'completed'),
      'completed notification',
    );
  });

  t.test('slow_compute seconds:0 as a task, and without a task (sync)', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    const msgs = await collect(
      client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 0 } }, CallToolResultSchema, {
        task: TASK,
      }),
    );
    t.equal(msgs[0]?.type, 'taskCreated');
    const last = msgs.at(-1);
    t.ok(last?.type === 'result' && textOf(last.result) === 'Computed result after 0s');
    const sync = await client.callTool({ name: 'slow_compute', arguments: { seconds: 0.05, label: 's' } });
    t.equal(textOf(sync), 'Computed s after 0.05s');
    t.notOk('task' in sync);
  });

  t.test('slow_compute cancelled with tasks/cancel: work stops, task ends cancelled', async (t) => {
    const { client, statuses } = await connect(fx.url);
    t.teardown(() => client.close());
    const stream = client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 30, label: 'long' } }, CallToolResultSchema, {
      task: TASK,
    });
    const first = await stream.next();
    t.equal(first.value?.type, 'taskCreated');
    if (first.value?.type !== 'taskCreated') return;
    const taskId = first.value.task.taskId;
    const cancelled = await client.experimental.tasks.cancelTask(taskId);
    t.match(cancelled, { taskId, status: 'cancelled', statusMessage: 'Client cancelled task execution.' });
    const s = await waitForStats(fx, (x) => x.cancellations.some((c) => c.taskId === taskId));
    t.match(
      s.cancellations.find((c) => c.taskId === taskId),
      { tool: 'slow_compute', via: 'tasks/cancel' },
    );
    t.match(
      s.tasks.find((x) => x.taskId === taskId),
      { tool: 'slow_compute', status: 'cancelled' },
    );
    const rest: unknown[] = [];
    for await (const m of stream) rest.push(m);
    t.match(rest.at(-1), { type: 'error', error: { message: /was cancelled/ } });
    t.equal((await client.experimental.tasks.getTask(taskId)).status, 'cancelled');
    await t.rejects(client.experimental.tasks.cancelTask(taskId), { code: -32602, message: /terminal status: cancelled/ });
    await t.rejects(client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema), {
      code: -32603,
      message: /has no result stored/,
    });
    t.notOk(
      statuses.some((x) => x.taskId === taskId && x.status === 'cancelled'),
      'no status notification on cancel (SDK)',
    );
  });

  t.test('failing_job: required; fails with an isError result', async (t) => {
    const { client, statuses } = await connect(fx.url);
    t.teardown(() => client.close());
    await t.rejects(
      client.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } }, CallToolResultSchema),
      { code: -32601, message: /requires task augmentation/ },
      'without task: -32601',
    );
    const msgs = await collect(client.experimental.tasks.callToolStream({ name: 'failing_job', arguments: {} }, CallToolResultSchema, { task: TASK }));
    const created = msgs[0];
    if (created?.type !== 'taskCreated') return t.fail('no taskCreated');
    t.match(msgs.at(-2), { type: 'taskStatus', task: { status: 'failed' } });
    t.match(msgs.at(-1), { type: 'error', error: { message: /failed/ } });
    const r = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
    t.equal(r.isError, true);
    t.equal(textOf(r), 'Job failed: simulated tool error');
    t.same(r._meta?.[RELATED_TASK_META_KEY], { taskId: created.task.taskId });
    t.ok(statuses.some((s) => s.taskId === created.task.taskId && s.status === 'failed'));
  });

  t.test('protocol_error_job: failed; tasks/result answers the JSON-RPC error', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    const msgs = await collect(
      client.experimental.tasks.callToolStream({ name: 'protocol_error_job', arguments: {} }, CallToolResultSchema, {
        task: TASK,
      }),
    );
    const created = msgs[0];
    if (created?.type !== 'taskCreated') return t.fail('no taskCreated');
    t.match(msgs.at(-2), { type: 'taskStatus', task: { status: 'failed' } });
    const err = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema).then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof McpError);
    t.match(err, { code: -32603, message: /Job failed/ });
    await t.rejects(
      client.request({ method: 'tools/call', params: { name: 'protocol_error_job', arguments: {} } }, CallToolResultSchema),
      { code: -32603, message: /Job failed/ },
      'without task: the same JSON-RPC error, synchronously',
    );
  });

  t.test('confirm_delete: task-scoped elicitation delivered on tasks/result', async (t) => {
    const { client, statuses, elicitations } = await connect(fx.url, (req) => ({
      action: 'accept',
      content: { confirm: req.params.message === 'Delete a.txt?' },
    }));
    t.teardown(() => client.close());
    const msgs = await collect(
      client.experimental.tasks.callToolStream({ name: 'confirm_delete', arguments: { filename: 'a.txt' } }, CallToolResultSchema, {
        task: TASK,
      }),
    );
    const created = msgs[0];
    if (created?.type !== 'taskCreated') return t.fail('no taskCreated');
    const taskId = created.task.taskId;
    t.ok(msgs.some((m) => m.type === 'taskStatus' && m.task.status === 'input_required'));
    const last = msgs.at(-1);
    t.ok(last?.type === 'result' && textOf(last.result) === 'Deleted a.txt', 'deleted');
    t.equal(elicitations.length, 1);
    const meta = metaOf(elicitations[0]!);
    t.same(meta[RELATED_TASK_META_KEY], { taskId });
    t.equal(meta[INPUT_KEY], 'confirm');
    t.same((elicitations[0]!.params as { requestedSchema?: unknown }).requestedSchema, {
      type: 'object',
      properties: { confirm: { type: 'boolean', description: 'Delete a.txt?' } },
      required: ['confirm'],
    });
    const seen = statuses.filter((s) => s.taskId === taskId).map((s) => s.status);
    t.same(seen, ['input_required', 'working', 'completed'], 'status notifications');

    const kept = await collect(
      client.experimental.tasks.callToolStream({ name: 'confirm_delete', arguments: { filename: 'b.txt' } }, CallToolResultSchema, {
        task: TASK,
      }),
    );
    const k = kept.at(-1);
    t.ok(k?.type === 'result' && textOf(k.result) === 'Kept b.txt', 'kept');
  });

  t.test('confirm_delete without a task: ordinary elicitation on the call stream', async (t) => {
    const { client, elicitations } = await connect(fx.url, () => ({ action: 'decline' }));
    t.teardown(() => client.close());
    const r = await client.callTool({ name: 'confirm_delete', arguments: { filename: 'c.txt' } });
    t.equal(textOf(r), 'Kept c.txt (decline)');
    t.notOk(metaOf(elicitations[0]!)[RELATED_TASK_META_KEY]);
    t.equal(metaOf(elicitations[0]!)[INPUT_KEY], 'confirm');
  });

  t.test('multi_input: two task-scoped elicitations in parallel', async (t) => {
    const { client, elicitations } = await connect(
      fx.url,
      barrier(
        (req): ElicitResult =>
          req.params.message === 'What is your name?' ? { action: 'accept', content: { name: 'Bob' } } : { action: 'accept', content: { confirm: true } },
      ),
    );
    t.teardown(() => client.close());
    const msgs = await collect(client.experimental.tasks.callToolStream({ name: 'multi_input', arguments: {} }, CallToolResultSchema, { task: TASK }));
    const last = msgs.at(-1);
    t.ok(last?.type === 'result' && textOf(last.result) === 'multi_input: name=Bob, confirm=true', 'both answers');
    t.same(elicitations.map((e) => metaOf(e)[INPUT_KEY]).sort(), ['confirm', 'name']);
    t.ok(elicitations.every((e) => metaOf(e)[RELATED_TASK_META_KEY]));
  });

  t.test('test_tool_with_task: asks the name BEFORE the task exists', async (t) => {
    const order: string[] = [];
    const { client, elicitations } = await connect(fx.url, () => {
      order.push('elicit');
      return { action: 'accept', content: { name: 'Alice' } };
    });
    t.teardown(() => client.close());
    await t.rejects(client.request({ method: 'tools/call', params: { name: 'test_tool_with_task', arguments: {} } }, CallToolResultSchema), { code: -32601 });
    const msgs: unknown[] = [];
    for await (const m of client.experimental.tasks.callToolStream({ name: 'test_tool_with_task', arguments: {} }, CallToolResultSchema, { task: TASK })) {
      if (m.type === 'taskCreated') order.push('taskCreated');
      msgs.push(m);
    }
    t.same(order, ['elicit', 'taskCreated']);
    const meta = metaOf(elicitations[0]!);
    t.equal(meta[INPUT_KEY], 'user_name');
    t.notOk(meta[RELATED_TASK_META_KEY], 'ordinary (non-task) elicitation');
    t.match(msgs.at(-1), { type: 'result', result: { content: [{ type: 'text', text: 'Hello, Alice!' }] } });
  });

  t.test('gated_job as a task + tasks/list + HTTP side channel', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    const stream = client.experimental.tasks.callToolStream({ name: 'gated_job', arguments: { gate: 'n1' } }, CallToolResultSchema, {
      task: TASK,
    });
    const first = await stream.next();
    if (first.value?.type !== 'taskCreated') return t.fail('no taskCreated');
    const taskId = first.value.task.taskId;
    await waitForStats(fx, (s) => s.gatesWaiting.n1 === 1);
    const httpStats = (await (await fetch(new URL('/_fixture/stats', fx.url))).json()) as { gatesWaiting: Record<string, number> };
    t.same(httpStats.gatesWaiting, { n1: 1 });
    t.equal((await client.experimental.tasks.getTask(taskId)).status, 'working');
    const list = await client.experimental.tasks.listTasks();
    t.ok(
      list.tasks.some((x) => x.taskId === taskId && x.status === 'working'),
      'tasks/list shows it',
    );
    const rel = await fetch(new URL('/_fixture/gates/n1/release', fx.url), { method: 'POST' });
    t.same(await rel.json(), { gate: 'n1', released: 1 });
    const rest: unknown[] = [];
    for await (const m of stream) rest.push(m);
    t.match(rest.at(-1), { type: 'result', result: { content: [{ text: 'released n1' }] } });
  });

  t.test('tasks are bound to the session that created them', async (t) => {
    const a = await connect(fx.url);
    const b = await connect(fx.url);
    t.teardown(() => Promise.all([a.client.close(), b.client.close()]));
    const r = await a.client.request({ method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0 }, task: TASK } }, CreateTaskResultSchema);
    await t.rejects(b.client.experimental.tasks.getTask(r.task.taskId), { code: -32602 });
    t.notOk((await b.client.experimental.tasks.listTasks()).tasks.some((x) => x.taskId === r.task.taskId));
  });

  t.test('stats count calls', async (t) => {
    const s = fx.stats();
    t.ok((s.calls.slow_compute ?? 0) >= 4);
    t.ok((s.tasksCreated.confirm_delete ?? 0) >= 2);
    t.ok(s.cancelled.includes('slow_compute'));
  });
});

// ───────────────────────────── sync ─────────────────────────────

t.test('sync: the same tools without any task support', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 100 });
  t.teardown(() => fx.close());

  t.test('no tasks capability, no execution fields', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    t.equal(client.getServerCapabilities()?.tasks, undefined);
    const { tools } = await client.listTools();
    for (const name of ['greet', 'slow_compute', 'failing_job', 'protocol_error_job', 'confirm_delete', 'multi_input', 'test_tool_with_task', 'gated_job']) {
      const tool = tools.find((x) => x.name === name);
      t.ok(tool, name);
      t.equal(tool?.execution, undefined, `${name}: no execution`);
    }
    await t.rejects(client.experimental.tasks.getTask('nope'), { code: -32601 });
  });

  t.test('slow_compute, failing_job, protocol_error_job', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    t.equal(textOf(await client.callTool({ name: 'slow_compute', arguments: { seconds: 0.05, label: 'q' } })), 'Computed q after 0.05s');
    const f = await client.callTool({ name: 'failing_job', arguments: {} });
    t.equal(f.isError, true);
    await t.rejects(client.callTool({ name: 'protocol_error_job', arguments: {} }), { code: -32603, message: /Job failed/ });
    const ignored = await client.request(
      { method: 'tools/call', params: { name: 'slow_compute', arguments: { seconds: 0 }, task: TASK } },
      CallToolResultSchema,
    );
    t.equal(textOf(ignored), 'Computed result after 0s', 'a stray task param is ignored');
  });

  t.test('slow_compute stops on notifications/cancelled', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    const ac = new AbortController();
    const p = client.callTool({ name: 'slow_compute', arguments: { seconds: 30 } }, CallToolResultSchema, { signal: ac.signal });
    await waitForStats(fx, (s) => s.running.slow_compute === 1);
    ac.abort('test cancels');
    await t.rejects(p);
    const s = await waitForStats(fx, (x) => x.cancelled.includes('slow_compute'));
    t.match(s.cancellations.at(-1), { tool: 'slow_compute', via: 'notifications/cancelled', requestId: Number });
    await waitForStats(fx, (x) => !x.running.slow_compute); // the handler returned: the sleep was aborted
  });

  t.test('confirm_delete and test_tool_with_task elicit on the call stream', async (t) => {
    const { client, elicitations } = await connect(
      fx.url,
      (req): ElicitResult =>
        metaOf(req)[INPUT_KEY] === 'user_name' ? { action: 'accept', content: { name: 'Alice' } } : { action: 'accept', content: { confirm: true } },
    );
    t.teardown(() => client.close());
    t.equal(textOf(await client.callTool({ name: 'confirm_delete', arguments: { filename: 'x.txt' } })), 'Deleted x.txt');
    t.equal(textOf(await client.callTool({ name: 'test_tool_with_task', arguments: {} })), 'Hello, Alice!');
    t.same(
      elicitations.map((e) => metaOf(e)[INPUT_KEY]),
      ['confirm', 'user_name'],
    );
    t.ok(elicitations.every((e) => !metaOf(e)[RELATED_TASK_META_KEY]));
  });

  t.test('multi_input asks twice concurrently', async (t) => {
    const { client } = await connect(
      fx.url,
      barrier((req): ElicitResult => (metaOf(req)[INPUT_KEY] === 'name' ? { action: 'accept', content: { name: 'Eve' } } : { action: 'decline' })),
    );
    t.teardown(() => client.close());
    t.equal(textOf(await client.callTool({ name: 'multi_input', arguments: {} })), 'multi_input: name=Eve, confirm=(decline)');
  });

  t.test('gated_job blocks until releaseGate; a released gate stays open', async (t) => {
    const { client } = await connect(fx.url);
    t.teardown(() => client.close());
    const p = client.callTool({ name: 'gated_job', arguments: { gate: 'g1' } });
    await waitForStats(fx, (s) => s.gatesWaiting.g1 === 1);
    t.equal(releaseGate(fx, 'g1'), 1);
    t.equal(textOf(await p), 'released g1');
    t.equal(textOf(await client.callTool({ name: 'gated_job', arguments: { gate: 'g1' } })), 'released g1');
  });
});

// ───────────────────────────── job ─────────────────────────────

t.test('job: test_tool_with_task asks, then starts a hand-rolled job that its own tools read and stop', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'job', taskJobDelayMs: 100 });
  t.teardown(() => fx.close());
  const { client, elicitations } = await connect(fx.url, () => ({ action: 'accept', content: { name: 'Alice' } }));
  t.teardown(() => client.close());
  t.equal(client.getServerCapabilities()?.tasks, undefined, 'no tasks capability');
  const { tools } = await client.listTools();
  const jobTools = ['test_tool_with_task', 'test_tool_with_task_status', 'test_tool_with_task_result', 'test_tool_with_task_cancel'];
  t.same(
    tools.filter((x) => x.name.startsWith('test_tool_with_task')).map((x) => x.name),
    jobTools,
  );
  t.ok(
    tools.every((x) => x.execution === undefined),
    'no execution fields',
  );
  const tool = (name: string, jobId: unknown) => client.callTool({ name, arguments: { jobId } });
  const stateOf = async (jobId: string) => ((await tool('test_tool_with_task_status', jobId)).structuredContent as { state: string }).state;

  const start = await client.callTool({ name: 'test_tool_with_task', arguments: {} });
  t.same(
    elicitations.map((e) => metaOf(e)[INPUT_KEY]),
    ['user_name'],
    'asked on the call stream before the job starts',
  );
  const jobId = (start.structuredContent as { jobId: string }).jobId;
  t.match(jobId, /^job-\d+$/);
  t.same(JSON.parse(textOf(start)), { jobId }, 'the handle as JSON text too');
  t.equal(await stateOf(jobId), 'running');
  t.equal(fx.stats().running.test_tool_with_task, 1, 'a running job counts as running work');
  t.match(await tool('test_tool_with_task_result', jobId), { isError: true }, 'no result while it runs');
  await waitForStats(fx, (s) => !s.running.test_tool_with_task);
  t.equal(await stateOf(jobId), 'done');
  t.same((await tool('test_tool_with_task_result', jobId)).content, [{ type: 'text', text: 'Hello, Alice!' }]);
  t.same((await tool('test_tool_with_task_cancel', jobId)).structuredContent, { state: 'done' }, 'a done job stays done');

  const second = (await client.callTool({ name: 'test_tool_with_task', arguments: {} })).structuredContent as { jobId: string };
  t.not(second.jobId, jobId, 'a new handle per start');
  t.same((await tool('test_tool_with_task_cancel', second.jobId)).structuredContent, { state: 'cancelled' });
  t.equal(await stateOf(second.jobId), 'cancelled');
  t.match(await tool('test_tool_with_task_result', second.jobId), { isError: true, content: [{ text: /cancelled/ }] });

  for (const name of jobTools.slice(1)) t.match(await tool(name, 'job-404'), { isError: true, content: [{ text: /Unknown job/ }] }, `${name}: unknown job`);
  await t.rejects(tool('test_tool_with_task_status', 7), { code: -32602 }, 'jobId must be a string');
});

t.test('default fixture: no task tools, no stats', async (t) => {
  const fx: LegacyFixture = await startLegacyFixture();
  t.teardown(() => fx.close());
  const { client } = await connect(fx.url);
  t.teardown(() => client.close());
  const { tools } = await client.listTools();
  t.notOk(tools.some((x) => x.name === 'slow_compute'));
  t.equal(client.getServerCapabilities()?.tasks, undefined);
  t.throws(() => fx.stats(), /tasks/);
});

// ───────────────────────────── the two kinds of "question before the task" ─────────────────────────────

t.test('native, taskFirst: test_tool_with_task creates its task at once and asks inside it', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'native', taskFirst: true, taskPollIntervalMs: 50, taskJobDelayMs: 50 });
  t.teardown(() => fx.close());
  const order: string[] = [];
  const { client, elicitations } = await connect(fx.url, () => {
    order.push('elicit');
    return { action: 'accept', content: { name: 'Alice' } };
  });
  t.teardown(() => client.close());
  const msgs: unknown[] = [];
  let taskId = '';
  for await (const m of client.experimental.tasks.callToolStream({ name: 'test_tool_with_task', arguments: {} }, CallToolResultSchema, { task: TASK })) {
    if (m.type === 'taskCreated') {
      order.push('taskCreated');
      taskId = m.task.taskId;
    }
    msgs.push(m);
  }
  t.same(order, ['taskCreated', 'elicit'], 'the task exists before the question');
  t.ok(msgs.some((m) => (m as { type: string; task?: Task }).type === 'taskStatus' && (m as { task: Task }).task.status === 'input_required'));
  const meta = metaOf(elicitations[0]!);
  t.equal(meta[INPUT_KEY], 'user_name');
  t.same(meta[RELATED_TASK_META_KEY], { taskId }, 'task-scoped elicitation (on the tasks/result stream)');
  t.match(msgs.at(-1), { type: 'result', result: { content: [{ type: 'text', text: 'Hello, Alice!' }] } });
  t.equal(fx.stats().tasksCreated.test_tool_with_task, 1);
});

// ───────────────────────────── plain JSON responses ─────────────────────────────

t.test("responseMode 'json': answers are application/json, tasks still work", async (t) => {
  const fx = await startLegacyFixture({ tasks: 'native', responseMode: 'json', taskPollIntervalMs: 50, taskJobDelayMs: 50 });
  t.teardown(() => fx.close());
  const init = await fetch(fx.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  t.match(init.headers.get('content-type'), /^application\/json/);
  t.match(await init.json(), { id: 1, result: { protocolVersion: '2025-11-25', capabilities: { tasks: {} } } });

  const { client } = await connect(fx.url);
  t.teardown(() => client.close());
  t.equal(textOf(await client.callTool({ name: 'slow_compute', arguments: { seconds: 0.05, label: 'j' } })), 'Computed j after 0.05s');
  const msgs = await collect(
    client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 0.1, label: 'jt' } }, CallToolResultSchema, { task: TASK }),
  );
  t.equal(msgs[0]?.type, 'taskCreated');
  t.match(msgs.at(-1), { type: 'result', result: { content: [{ type: 'text', text: 'Computed jt after 0.1s' }] } });
});

t.test("responseMode 'json': a question during a call has no stream and is dropped (the call waits for inputTimeoutMs)", async (t) => {
  const fx = await startLegacyFixture({ tasks: 'sync', responseMode: 'json', inputTimeoutMs: 200 });
  t.teardown(() => fx.close());
  const { client, elicitations } = await connect(fx.url, () => ({ action: 'accept', content: { confirm: true } }));
  t.teardown(() => client.close());
  // The SDK's request timeout inside the tool surfaces as its JSON-RPC error.
  await t.rejects(client.callTool({ name: 'confirm_delete', arguments: { filename: 'j.txt' } }), { code: -32001 });
  t.equal(elicitations.length, 0, 'the client never saw the question');
});
