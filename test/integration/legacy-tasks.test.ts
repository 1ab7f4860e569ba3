/**
 * 2025-11-25 tasks through the legacy face, driven by the real legacy task client (SDK 1.32.2 `Client`,
 * `experimental.tasks`): the real gateway in front of
 *  - the modern fixture with the tasks extension (native upstream tasks, no rules),
 *  - the sync-only legacy fixture with wrapping rules (gateway-owned tasks over the legacy client),
 *  - the sync-only modern fixture with wrapping rules (gateway-owned tasks over the modern client).
 * The same script runs against each: create, get, result, list (paginated, invalid cursor), cancel (and cancel of a
 * terminal task), input through tasks/result and through the GET stream, status notifications, and the hidden task of
 * a client that sent no `task`.
 */
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  RELATED_TASK_META_KEY,
  TaskStatusNotificationSchema,
  type ElicitRequest,
  type ElicitResult,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { connectLegacy } from '../helpers/modern-stack.js';

const TASK = { ttl: 60_000 };

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** What a stack's fixture tells the tests. */
interface FixtureView {
  url: string;
  /** Tool names whose running work the fixture saw cancelled, in order. */
  cancelled(): string[];
  /** Handlers and tasks of `tool` still running. */
  running(tool: string): number;
  releaseGate(gate: string): number;
  /** Whether the fixture has the sampling task tools (the modern one). */
  sampling: boolean;
  close(): Promise<void>;
}

interface StackDef {
  name: string;
  start(): Promise<FixtureView>;
  tools?: Record<string, unknown>;
}

/** Every tool wrapped: a legacy client's task-augmented call gets a gateway task, a plain call stays plain. */
const WRAP_ALL = { '*': { task: 'always' } };

const STACKS: StackDef[] = [
  {
    name: 'modern upstream with the tasks extension (native)',
    async start() {
      const fx = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 50, taskJobDelayMs: 100 });
      return {
        url: fx.url,
        cancelled: () => fx.stats().cancelled,
        running: (tool) => fx.stats().running[tool] ?? 0,
        releaseGate: (g) => fx.releaseGate(g),
        sampling: true,
        close: () => fx.close(),
      };
    },
  },
  {
    name: 'sync-only legacy upstream, wrapped',
    tools: WRAP_ALL,
    async start() {
      const fx = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 100 });
      return {
        url: fx.url,
        cancelled: () => fx.stats().cancelled,
        running: (tool) => fx.stats().running[tool] ?? 0,
        releaseGate: (g) => fx.releaseGate(g),
        sampling: false,
        close: () => fx.close(),
      };
    },
  },
  {
    name: 'sync-only modern upstream, wrapped',
    tools: WRAP_ALL,
    async start() {
      const fx = await startModernFixture({ mode: 'modern', tasks: 'sync', taskJobDelayMs: 100 });
      return {
        url: fx.url,
        cancelled: () => fx.stats().cancelled,
        running: (tool) => fx.stats().running[tool] ?? 0,
        releaseGate: (g) => fx.releaseGate(g),
        sampling: true,
        close: () => fx.close(),
      };
    },
  },
];

type ElicitHandler = (req: ElicitRequest) => Promise<ElicitResult> | ElicitResult;

/** A connected legacy task client with its handlers' observations. */
interface Conn {
  client: Client;
  elicitations: ElicitRequest[];
  samplings: unknown[];
  statuses: Task[];
  /** Resolves with the first status notification of `taskId` in `status`. */
  status(taskId: string, status: string): Promise<Task>;
  getStreamOpen: Promise<void>;
}

async function connect(t: Teardown, url: string, onElicit: ElicitHandler = () => ({ action: 'decline' })): Promise<Conn> {
  const client = new Client({ name: 'legacy-tasks-test', version: '1.0.0' }, { capabilities: { elicitation: {}, sampling: {} } });
  client.onerror = () => {};
  const elicitations: ElicitRequest[] = [];
  const samplings: unknown[] = [];
  const statuses: Task[] = [];
  const waiters: Array<{ taskId: string; status: string; resolve: (t: Task) => void }> = [];
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
    const task = n.params as Task;
    statuses.push(task);
    for (const w of waiters.filter((x) => x.taskId === task.taskId && x.status === task.status)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(task);
    }
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    elicitations.push(req);
    return onElicit(req);
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    samplings.push(req);
    return { role: 'assistant', content: { type: 'text', text: 'a sampled answer' }, model: 'test-model' };
  });
  const { getStreamOpen } = await connectLegacy(url, {}, client);
  t.teardown(() => client.close());
  return {
    client,
    elicitations,
    samplings,
    statuses,
    getStreamOpen,
    status(taskId, status) {
      const seen = statuses.find((s) => s.taskId === taskId && s.status === status);
      if (seen) return Promise.resolve(seen);
      return new Promise((resolve) => waiters.push({ taskId, status, resolve }));
    },
  };
}

async function collect<T>(stream: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const m of stream) out.push(m);
  return out;
}

const textOf = (r: unknown): string => ((r as { content?: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? '').join('');

/** Creates a task with a raw task-augmented tools/call; its id. */
async function createTask(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const r = await client.request({ method: 'tools/call', params: { name, arguments: args, task: TASK } }, CreateTaskResultSchema);
  return r.task.taskId;
}

/** Waits (bounded) until `check` holds, for fixture counters nothing announces. */
async function until(check: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

for (const def of STACKS) {
  t.test(def.name, async (t) => {
    const fx = await def.start();
    const { gateway, url } = await startGateway({
      tasks: { pollIntervalMs: 50 },
      upstreams: [{ name: 'fixture', path: '/mcp', url: fx.url, ...(def.tools ? { tools: def.tools } : {}) }],
    });
    t.teardown(async () => {
      await gateway.close();
      await fx.close();
    });

    t.test('advertised, and a task created, polled and its result fetched', async (t) => {
      const c = await connect(t, url);
      t.same(c.client.getServerCapabilities()?.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
      const msgs = await collect(
        c.client.experimental.tasks.callToolStream({ name: 'slow_compute', arguments: { seconds: 0.2, label: 'pi' } }, CallToolResultSchema, { task: TASK }),
      );
      const created = msgs[0];
      if (created?.type !== 'taskCreated') return t.fail('no taskCreated');
      t.match(created.task, { status: 'working', createdAt: String, lastUpdatedAt: String });
      t.match(created.task.taskId, /^gwt_/, 'a gateway-minted id');
      const last = msgs.at(-1);
      if (last?.type !== 'result') return t.fail(`ended with ${JSON.stringify(last)}`);
      t.equal(textOf(last.result), 'Computed pi after 0.2s');
      t.same(last.result._meta?.[RELATED_TASK_META_KEY], { taskId: created.task.taskId }, 'tasks/result carries related-task');
      t.notOk('resultType' in last.result);
      const task = await c.client.experimental.tasks.getTask(created.task.taskId);
      t.equal(task.status, 'completed');
      t.notOk('result' in task, 'tasks/get carries no payload');
      const again = await c.client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema);
      t.equal(textOf(again), 'Computed pi after 0.2s', 'the payload again, at once');
      await c.status(created.task.taskId, 'completed');
      t.pass('notifications/tasks/status for completed on the GET stream');
    });

    t.test('a tool error fails the task; a JSON-RPC error is the payload of a failed task', async (t) => {
      const c = await connect(t, url);
      const failing = await createTask(c.client, 'failing_job', {});
      await c.status(failing, 'failed');
      t.equal((await c.client.experimental.tasks.getTask(failing)).status, 'failed', 'isError → failed (2025-11-25)');
      const r = await c.client.experimental.tasks.getTaskResult(failing, CallToolResultSchema);
      t.equal(r.isError, true);
      t.equal(textOf(r), 'Job failed: simulated tool error');

      const broken = await createTask(c.client, 'protocol_error_job', {});
      await t.rejects(c.client.experimental.tasks.getTaskResult(broken, CallToolResultSchema), { code: -32603, message: /Job failed/ });
      t.equal((await c.client.experimental.tasks.getTask(broken)).status, 'failed');
    });

    t.test('tasks/list: every task of the session, in pages; an invalid cursor is -32602', async (t) => {
      const c = await connect(t, url);
      // More than one page of the runtime's (50 tasks a page).
      const ids: string[] = [];
      for (let batch = 0; batch < 6; batch++) {
        ids.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => createTask(c.client, 'slow_compute', { seconds: 0, label: `n${batch}-${i}` })))));
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await c.client.experimental.tasks.listTasks(cursor);
        for (const task of page.tasks) {
          seen.push(task.taskId);
          t.notOk('result' in task);
        }
        cursor = page.nextCursor;
        pages++;
      } while (cursor && pages < 20);
      t.same([...seen].sort(), [...ids].sort(), 'exactly the tasks of this session');
      t.ok(pages > 1, 'more than one page');
      await t.rejects(c.client.experimental.tasks.listTasks('not-a-cursor'), { code: -32602 });

      const other = await connect(t, url);
      const theirs = await other.client.experimental.tasks.listTasks();
      t.notOk(
        theirs.tasks.some((x) => ids.includes(x.taskId)),
        'another session without credentials sees none of them',
      );
      await t.rejects(other.client.experimental.tasks.getTask(ids[0] as string), { code: -32602 }, 'nor gets one');
    });

    t.test('tasks/cancel: the cancelled task; cancelled for good; a terminal task cannot be cancelled', async (t) => {
      const c = await connect(t, url);
      const taskId = await createTask(c.client, 'gated_job', { gate: `cancel-${def.name}` });
      const cancelled = await c.client.experimental.tasks.cancelTask(taskId);
      t.match(cancelled, { taskId, status: 'cancelled' });
      t.equal((await c.client.experimental.tasks.getTask(taskId)).status, 'cancelled');
      await until(() => fx.cancelled().includes('gated_job'), 'the upstream work to stop');
      t.pass('the upstream work was stopped');
      await t.rejects(c.client.experimental.tasks.cancelTask(taskId), { code: -32602, message: /terminal/ });
      await t.rejects(c.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema), { code: -32603, message: /cancelled/i });

      const done = await createTask(c.client, 'slow_compute', { seconds: 0 });
      await c.client.experimental.tasks.getTaskResult(done, CallToolResultSchema);
      await t.rejects(c.client.experimental.tasks.cancelTask(done), { code: -32602, message: /terminal status 'completed'/ });
      await t.rejects(c.client.experimental.tasks.cancelTask('gwt_unknown'), { code: -32602 });
      await t.rejects(c.client.experimental.tasks.getTask('gwt_unknown'), { code: -32602 });
    });

    t.test('input through tasks/result: task-scoped elicitation answered by the handler', async (t) => {
      const c = await connect(t, url, () => ({ action: 'accept', content: { confirm: true } }));
      const msgs = await collect(
        c.client.experimental.tasks.callToolStream({ name: 'confirm_delete', arguments: { filename: 'a.txt' } }, CallToolResultSchema, { task: TASK }),
      );
      const created = msgs[0];
      if (created?.type !== 'taskCreated') return t.fail('no taskCreated');
      const last = msgs.at(-1);
      t.equal(last?.type === 'result' ? textOf(last.result) : JSON.stringify(last), 'Deleted a.txt');
      t.equal(c.elicitations.length, 1, 'asked once');
      const meta = (c.elicitations[0]?.params._meta ?? {}) as Record<string, unknown>;
      t.same(meta[RELATED_TASK_META_KEY], { taskId: created.task.taskId }, 'the request names the task');
    });

    t.test('two questions at once, each asked once', async (t) => {
      const c = await connect(t, url, (req): ElicitResult => {
        const content: Record<string, string | boolean> = req.params.message.includes('name') ? { name: 'Ada' } : { confirm: true };
        return { action: 'accept', content };
      });
      const taskId = await createTask(c.client, 'multi_input', {});
      const r = await c.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      t.match(textOf(r), /name=Ada/);
      t.equal(c.elicitations.length, 2);
    });

    t.test('input through the GET stream when no tasks/result is open', async (t) => {
      let asked!: (r: ElicitRequest) => void;
      const question = new Promise<ElicitRequest>((resolve) => (asked = resolve));
      const c = await connect(t, url, (req) => {
        asked(req);
        return { action: 'accept', content: { confirm: false } };
      });
      await c.getStreamOpen;
      const taskId = await createTask(c.client, 'confirm_delete', { filename: 'b.txt' });
      const req = await question;
      t.same((req.params._meta as Record<string, unknown>)[RELATED_TASK_META_KEY], { taskId });
      await c.status(taskId, 'completed');
      const r = await c.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      t.equal(textOf(r), 'Kept b.txt');
      t.equal(c.elicitations.length, 1, 'not asked again on the tasks/result stream');
      t.ok(
        c.statuses.some((s) => s.taskId === taskId && s.status === 'input_required'),
        'input_required was announced',
      );
    });

    t.test('sampling inside a task', { skip: fx.sampling ? false : 'the legacy fixture has no sampling tool' }, async (t) => {
      const c = await connect(t, url);
      const taskId = await createTask(c.client, 'sample_once', {});
      const r = await c.client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema);
      t.equal(textOf(r), 'Sampled: a sampled answer');
      t.equal(c.samplings.length, 1);
    });

    t.test('a client that sends no task gets an ordinary call, input as ordinary requests', async (t) => {
      const c = await connect(t, url, () => ({ action: 'accept', content: { confirm: true } }));
      const r = await c.client.callTool({ name: 'confirm_delete', arguments: { filename: 'c.txt' } });
      t.equal(textOf(r), 'Deleted c.txt');
      t.notOk('task' in r);
      const meta = (c.elicitations[0]?.params._meta ?? {}) as Record<string, unknown>;
      t.notOk(RELATED_TASK_META_KEY in meta, 'no task named: the client sees none');
      t.same((await c.client.experimental.tasks.listTasks()).tasks, [], 'no task is listed for it');

      const failed = await c.client.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } }, CallToolResultSchema);
      t.equal(failed.isError, true, "a task-only upstream tool's task is hidden: the final result");
    });

    t.test("a plain call's notifications/cancelled stops the upstream work", async (t) => {
      const c = await connect(t, url);
      const before = fx.cancelled().filter((x) => x === 'gated_job').length;
      const aborter = new AbortController();
      const call = c.client.callTool({ name: 'gated_job', arguments: { gate: `plain-${def.name}` } }, undefined, { signal: aborter.signal });
      const rejected = t.rejects(call);
      await until(() => fx.running('gated_job') > 0, 'the call to reach the upstream');
      aborter.abort('changed my mind');
      await rejected;
      await until(() => fx.cancelled().filter((x) => x === 'gated_job').length > before, 'the upstream work to stop');
      t.pass('stopped upstream');
    });
  });
}
