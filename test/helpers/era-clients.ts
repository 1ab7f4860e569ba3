/**
 * The two client eras of the era matrix behind one small interface (not a test file), so that the matrix runs
 * one scenario script in every cell:
 *  - `legacy`: the real 2025-11-25 task client, `@modelcontextprotocol/sdk` 1.32.2 `Client.experimental.tasks`
 *    (`callToolStream`, `getTask`, `getTaskResult`, `listTasks`, `cancelTask`) with an elicitation handler;
 *  - `modern`: the real 2026-07-28 task client, `@modelcontextprotocol/ext-tasks` over a v2 `Client`, declaring the
 *    tasks extension, with raw `tasks/get` / `tasks/cancel` requests where a test needs the exact reply.
 * Every wait is bounded (`CLIENT_BOUND_MS`): a missing answer fails the test, it never hangs it.
 */
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CallToolResultSchema,
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  TaskStatusNotificationSchema,
  type Task,
} from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, type ApplicationInputRequest, type TaskEnabledSession } from '@modelcontextprotocol/ext-tasks/client';
import { connectLegacy } from './modern-stack.js';
import { fetchDispatch, type DispatchRecord } from './ext-tasks.js';
import { MODERN, post } from './modern.js';
import { openListen } from './sse-reader.js';
import { DECLARING } from './task-helpers.js';

/** Bound on any one client step (a request, or driving a task to its end). */
export const CLIENT_BOUND_MS = 15_000;

/** The client eras of the matrix. */
export type ClientEra = 'legacy' | 'modern';

/** A task as the client got it at creation, with the era's own wire object. */
export interface Created {
  taskId: string;
  status: string;
  /** Retention in ms (legacy `ttl`, modern `ttlMs`). */
  ttlMs: number | null | undefined;
  /** Suggested poll interval in ms (legacy `pollInterval`, modern `pollIntervalMs`). */
  pollIntervalMs: number | undefined;
  /** The task object exactly as the client received it (legacy: the nested `task`; modern: the flat result). */
  wire: Record<string, unknown>;
}

/** How a task ended, as the client sees it. */
export interface Outcome {
  status: string;
  /** The tool result, when the client got one (completed; legacy failed with `isError`). */
  result?: any;
  /** The JSON-RPC error, when the task failed with one. */
  error?: { code: number; message: string };
}

/** A task lookup: the task's status, or the JSON-RPC error code the client got. */
export type Lookup = { status: string; task: Record<string, unknown> } | { code: number; message: string };

/** A question the upstream asked the client during a task. */
export interface Asked {
  message: string;
  /** The task it belongs to, as the client could tell (legacy related-task `_meta`, modern task scope). */
  taskId: string | undefined;
}

/** One connected client of one era, driving tasks the same way whatever the cell. */
export interface EraClient {
  readonly era: ClientEra;
  /** Every question the client was asked (answered by `answerFor`). */
  readonly asked: Asked[];
  /** Calls `tool` as a task; resolves once the task exists. Throws when the call did not become a task. */
  start(tool: string, args: Record<string, unknown>, opts?: { ttlMs?: number }): Promise<Created>;
  /** Drives the task to its end the era's way (polling, answering input) and says how it ended. */
  settle(taskId: string): Promise<Outcome>;
  /** tasks/get. */
  lookup(taskId: string): Promise<Lookup>;
  /** tasks/cancel: the status answered (legacy: the cancelled Task; modern: the ack, `acked`), or the error code. */
  cancel(taskId: string): Promise<{ status: string } | { code: number; message: string }>;
  /** Legacy only: the ids `tasks/list` returns, every page. */
  list?(): Promise<string[]>;
  /** Legacy only: the payload `tasks/result` gives for the task (a result or the error). */
  payload?(taskId: string): Promise<{ result: any } | { code: number; message: string }>;
  /**
   * Starts watching the task's status notifications the era's way (legacy: `notifications/tasks/status` on the GET
   * stream; modern: `notifications/tasks` on a `subscriptions/listen` stream naming the task).
   */
  watch(taskId: string): Promise<Watch>;
  close(): Promise<void>;
}

/** A task's status notifications as they arrive. */
export interface Watch {
  /** Waits (bounded) until a notification reports `status`; every status notified so far, in order. */
  until(status: string): Promise<string[]>;
}

/** Resolves with `p` or rejects after `CLIENT_BOUND_MS` naming `what`. */
export function bounded<T>(p: Promise<T>, what: string, ms = CLIENT_BOUND_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** Resolves once `cond` holds, looking every 10 ms: for a fixture's state, which emits no event (wrap in `bounded`). */
export async function until(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 10));
}

/** Answers an elicitation by filling its schema: booleans true, anything else "Ada". */
export function answerFor(requestedSchema: unknown): { action: 'accept'; content: Record<string, string | boolean> } {
  const properties = (requestedSchema as { properties?: Record<string, { type?: string }> } | undefined)?.properties ?? {};
  const content: Record<string, string | boolean> = {};
  for (const [k, v] of Object.entries(properties)) content[k] = v?.type === 'boolean' ? true : 'Ada';
  return { action: 'accept', content };
}

const asError = (e: unknown): { code: number; message: string } =>
  e instanceof McpError ? { code: e.code, message: e.message } : { code: Number.NaN, message: String((e as Error)?.message ?? e) };

type ToolStream = ReturnType<LegacyClient['experimental']['tasks']['callToolStream']>;

/** The text every sampling request of a test is answered with. */
export const SAMPLED_TEXT = 'Hi from the model';

/** A legacy `EraClient` that also exposes its SDK 1.32.2 `Client`, for requests outside the shared script. */
export interface LegacyEraClient extends EraClient {
  readonly sdk: LegacyClient;
}

/** Connects an SDK 1.32.2 client (declaring elicitation and sampling) to `url`. */
export async function legacyClient(url: string): Promise<LegacyEraClient> {
  const capabilities = { elicitation: {}, sampling: {} };
  const client = new LegacyClient({ name: 'era-matrix-legacy', version: '1.0.0' }, { capabilities });
  const asked: Asked[] = [];
  const statuses: Task[] = [];
  const statusWaiters = new Set<() => void>();
  client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
    statuses.push(n.params as Task);
    for (const w of statusWaiters) w();
  });
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    const related = (req.params._meta as Record<string, { taskId?: string } | undefined> | undefined)?.[RELATED_TASK_META_KEY];
    asked.push({ message: String(req.params.message), taskId: related?.taskId });
    return answerFor((req.params as { requestedSchema?: unknown }).requestedSchema);
  });
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => {
    const related = (req.params._meta as Record<string, { taskId?: string } | undefined> | undefined)?.[RELATED_TASK_META_KEY];
    const prompt = req.params.messages.map((m) => (m.content as { text?: string }).text ?? '').join(' ');
    asked.push({ message: `sampling: ${prompt}`, taskId: related?.taskId });
    return { model: 'era-matrix-model', role: 'assistant' as const, content: { type: 'text' as const, text: SAMPLED_TEXT } };
  });
  const { getStreamOpen } = await bounded(connectLegacy(url, capabilities, client), 'legacy connect');
  const streams = new Map<string, ToolStream>();
  const request = { timeout: CLIENT_BOUND_MS };
  const tasks = client.experimental.tasks;

  return {
    era: 'legacy',
    sdk: client,
    asked,
    async start(tool, args, opts = {}) {
      const stream = tasks.callToolStream({ name: tool, arguments: args }, CallToolResultSchema, {
        ...request,
        task: { ttl: opts.ttlMs ?? 60_000 },
      });
      const first = await bounded(stream.next(), `${tool}: creation`);
      if (first.done || first.value.type !== 'taskCreated') {
        await stream.return(undefined);
        throw new Error(`${tool}: expected a CreateTaskResult, got ${JSON.stringify(first.value, (_k, v) => (v instanceof Error ? v.message : v))}`);
      }
      const task = first.value.task;
      streams.set(task.taskId, stream);
      return { taskId: task.taskId, status: task.status, ttlMs: task.ttl, pollIntervalMs: task.pollInterval, wire: { ...task } };
    },
    async settle(taskId) {
      const stream = streams.get(taskId);
      if (!stream) throw new Error(`no stream for task ${taskId}`);
      const drain = async () => {
        const seen: Array<{ type: string; result?: unknown }> = [];
        for await (const m of stream) seen.push(m);
        return seen;
      };
      const seen = await bounded(drain(), `task ${taskId}: callToolStream to the end`);
      const last = seen.at(-1);
      const task = await tasks.getTask(taskId, request);
      if (last?.type === 'result') return { status: task.status, result: last.result };
      if (task.status !== 'failed') return { status: task.status };
      // callToolStream reports `failed` without fetching the payload (2025-11-25 basic/utilities/tasks §Result
      // Retrieval): the isError result or the JSON-RPC error comes from tasks/result.
      try {
        return { status: task.status, result: await tasks.getTaskResult(taskId, CallToolResultSchema, request) };
      } catch (e) {
        return { status: task.status, error: asError(e) };
      }
    },
    async lookup(taskId) {
      try {
        const task = await tasks.getTask(taskId, request);
        return { status: task.status, task: { ...task } };
      } catch (e) {
        return asError(e);
      }
    },
    async cancel(taskId) {
      try {
        return { status: (await tasks.cancelTask(taskId, request)).status };
      } catch (e) {
        return asError(e);
      }
    },
    async list() {
      const ids: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const r = await tasks.listTasks(cursor, request);
        ids.push(...r.tasks.map((x) => x.taskId));
        cursor = r.nextCursor;
        if (!cursor) return ids;
      }
      throw new Error('tasks/list: more than 100 pages');
    },
    async payload(taskId) {
      try {
        return { result: await tasks.getTaskResult(taskId, CallToolResultSchema, request) };
      } catch (e) {
        return asError(e);
      }
    },
    async watch(taskId) {
      await bounded(getStreamOpen, 'the GET stream');
      const mine = (): string[] => statuses.filter((s) => s.taskId === taskId).map((s) => s.status);
      return {
        async until(status) {
          let wake: (() => void) | undefined;
          const waiter = () => wake?.();
          statusWaiters.add(waiter);
          try {
            const wait = async () => {
              while (!mine().includes(status)) await new Promise<void>((r) => (wake = r));
            };
            await bounded(wait(), `notifications/tasks/status ${status} for ${taskId} (saw ${JSON.stringify(mine())})`);
            return mine();
          } finally {
            statusWaiters.delete(waiter);
          }
        },
      };
    },
    async close() {
      for (const s of streams.values()) await s.return(undefined).catch(() => {});
      await client.close();
    },
  };
}

type Execution = Awaited<ReturnType<TaskEnabledSession['callTool']>>;

/** Connects a v2 client with an ext-tasks session (declaring the tasks extension and elicitation) to `url`. */
export async function modernClient(url: string): Promise<EraClient> {
  const info = { name: 'era-matrix-modern', version: '1.0.0' };
  const client = new ModernClient(info, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
  await bounded(client.connect(new StreamableHTTPClientTransport(new URL(url))), 'modern connect');
  const asked: Asked[] = [];
  const wire: DispatchRecord[] = [];
  const session = createTaskSessionFromClient(client, {
    endpointId: 'era-matrix',
    rawDispatch: fetchDispatch(url, wire),
    v2RequestFraming: { protocolVersion: MODERN, clientInfo: info, clientCapabilities: { elicitation: {} } },
    onInputRequest: (async (req: ApplicationInputRequest, ctx: { taskId?: string }) => {
      if (req.kind !== 'elicitation') throw new Error(`unexpected input kind ${req.kind}`);
      asked.push({ message: String(req.params.message), taskId: ctx.taskId });
      return answerFor(req.params.requestedSchema);
    }) as never,
  });
  const executions = new Map<string, Execution>();
  const cleanups: Array<() => unknown> = [];
  let listens = 0;
  const raw = async (method: string, taskId: string): Promise<{ result: Record<string, unknown> } | { code: number; message: string }> => {
    const r = await bounded(post(url, method, { taskId }, { capabilities: DECLARING }), `${method} ${taskId}`);
    if (r.body?.error) return { code: Number(r.body.error.code), message: String(r.body.error.message) };
    const result = r.body?.result as Record<string, unknown> | undefined;
    if (!result) throw new Error(`${method}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    return { result };
  };

  return {
    era: 'modern',
    asked,
    async start(tool, args) {
      const from = wire.length;
      const execution = await bounded(session.callTool(tool, args as Record<string, never>), `${tool}: creation`);
      if (execution.kind !== 'task')
        throw new Error(`${tool}: expected a task, got ${execution.kind}: ${JSON.stringify(wire.slice(from).map((w) => w.reply))}`);
      const taskId = execution.handle.taskId;
      executions.set(taskId, execution);
      const created = wire.slice(from).find((w) => w.method === 'tools/call' && w.reply?.result?.resultType === 'task')?.reply.result;
      if (!created) throw new Error(`${tool}: no CreateTaskResult on the wire`);
      return { taskId, status: created.status, ttlMs: created.ttlMs, pollIntervalMs: created.pollIntervalMs, wire: created };
    },
    async settle(taskId) {
      const execution = executions.get(taskId);
      if (!execution) throw new Error(`no execution for task ${taskId}`);
      const { outcome } = await bounded(execution.settle(), `task ${taskId}: settle`);
      if (outcome.status === 'completed') return { status: 'completed', result: outcome.result };
      if (outcome.status === 'failed') {
        const error = outcome.error as { code?: number; message: string };
        return { status: 'failed', error: { code: Number(error.code), message: error.message } };
      }
      return { status: outcome.status };
    },
    async lookup(taskId) {
      const r = await raw('tasks/get', taskId);
      return 'result' in r ? { status: String(r.result.status), task: r.result } : { code: r.code, message: r.message };
    },
    async cancel(taskId) {
      const r = await raw('tasks/cancel', taskId);
      // tasks extension §Task Cancellation: the answer is an acknowledgement, not the task.
      return 'result' in r ? { status: r.result.resultType === 'complete' ? 'acked' : JSON.stringify(r.result) } : { code: r.code, message: r.message };
    },
    async watch(taskId) {
      const id = `era-matrix-listen-${++listens}`;
      const { stream } = await bounded(
        openListen({ teardown: (fn) => cleanups.push(fn) }, url, id, { taskIds: [taskId] }, { capabilities: DECLARING }),
        'subscriptions/listen',
      );
      // 2026-07-28 basic/utilities/subscriptions: the stream opens with its acknowledgement.
      const ack = await stream.until((m) => m.method === 'notifications/subscriptions/acknowledged', CLIENT_BOUND_MS);
      if (!(ack.match.params?.notifications?.taskIds ?? []).includes(taskId))
        throw new Error(`listen did not acknowledge ${taskId}: ${JSON.stringify(ack.match)}`);
      const seen: string[] = [];
      return {
        async until(status) {
          const isMine = (m: any) => m?.method === 'notifications/tasks' && m.params?.taskId === taskId;
          const { match, skipped } = await stream.until((m) => isMine(m) && m.params.status === status, CLIENT_BOUND_MS);
          seen.push(...[...skipped, match].filter(isMine).map((m) => String(m.params.status)));
          return [...seen];
        },
      };
    },
    async close() {
      for (const fn of cleanups.splice(0)) await fn();
      await session.close();
      await client.close();
    },
  };
}

/** Connects a client of `era` to `url`. */
export function connectEra(era: ClientEra, url: string): Promise<EraClient> {
  return era === 'legacy' ? legacyClient(url) : modernClient(url);
}
