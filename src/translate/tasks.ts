/**
 * Tasks, era-neutral: the task record the gateway stores, and the mappings between 2025-11-25 core tasks (legacy, "v1"
 * in names) and the 2026-07-28 `io.modelcontextprotocol/tasks` extension (modern, "v2") (2025-11-25
 * basic/utilities/tasks §Data Types; tasks extension §Tasks, §Task Polling). Pure: time and ids are arguments.
 */
import { META, TASKS_EXTENSION } from './constants.js';
import { isObject, type JsonObject, type JsonRpcErrorObject } from './jsonrpc.js';
import type { InputRequest } from './input.js';

/**
 * The five task statuses (same names in both eras; `failed` means different things: a legacy tool task with `isError`
 * fails, 2025-11-25 basic/utilities/tasks).
 */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** Terminal statuses. */
export const TERMINAL_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

/** Whether a status is terminal. */
export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** A gateway-minted task id (≥128 bits of randomness, URL-safe). */
export type TaskId = string & { readonly __brand: 'TaskId' };

/** Who owns the work: the upstream (its own task id) or the gateway (a wrapped call). */
export type TaskKind = 'proxied' | 'owned';

/** Everything any gateway instance needs to answer tasks/get|update|cancel. Live objects are kept elsewhere. */
export interface TaskRecord {
  taskId: TaskId;
  principal: string;
  upstream: string;
  kind: TaskKind;
  /** The upstream's own task id (proxied tasks). */
  upstreamTaskId?: string;
  /**
   * The legacy face session that created it, when the caller had no credentials: a 2025-11-25 `tasks/list` then lists
   * that session's tasks only (2025-11-25 basic/utilities/tasks §Security Considerations).
   */
  session?: string;
  /** The client era that created it (decides how its status notifications are sent). */
  origin?: 'legacy' | 'modern';
  tool: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** Retention from creation, ms; `null` = unlimited (never stored as such: the gateway bounds it). */
  ttlMs: number | null;
  pollIntervalMs?: number;
  /** Terminal outcome, modern shape: `result` (with `resultType:"complete"`) or `error`. */
  result?: JsonObject;
  error?: JsonRpcErrorObject;
  /** Outstanding input requests by task-unique key. */
  inputRequests?: Record<string, InputRequest>;
  /** Compare-and-set version, incremented by every change. */
  version: number;
}

/** Whether a request's own capabilities declare the tasks extension (tasks extension §Capability Negotiation). */
export function declaresTasks(capabilities: JsonObject): boolean {
  const ext = capabilities.extensions;
  return isObject(ext) && isObject(ext[TASKS_EXTENSION]);
}

/** The -32021 data naming the tasks extension (2026-07-28 schema `MissingRequiredClientCapabilityError`). */
export const TASKS_REQUIRED_CAPABILITIES: JsonObject = { extensions: { [TASKS_EXTENSION]: {} } };

function baseTask(r: TaskRecord): JsonObject {
  const t: JsonObject = {
    taskId: r.taskId,
    status: r.status,
    createdAt: r.createdAt,
    lastUpdatedAt: r.lastUpdatedAt,
    ttlMs: r.ttlMs,
  };
  if (r.statusMessage !== undefined) t.statusMessage = r.statusMessage;
  if (r.pollIntervalMs !== undefined) t.pollIntervalMs = r.pollIntervalMs;
  return t;
}

/**
 * The flat modern `CreateTaskResult` (tasks extension §Task Creation; no result, error, inputRequests or requestState).
 */
export function createTaskResultV2(r: TaskRecord): JsonObject {
  const t = baseTask(r);
  // A freshly created task is announced as working (input is reported through tasks/get).
  if (t.status === 'input_required') t.status = 'working';
  return { resultType: 'task', ...t };
}

/**
 * The modern `DetailedTask` for `tasks/get` and `notifications/tasks` (tasks extension §Task Polling): `inputRequests`
 * while input is required (reported as `working` until one is known), `result` when completed, `error` when failed.
 */
export function detailedTaskV2(r: TaskRecord): JsonObject {
  const t = baseTask(r);
  switch (r.status) {
    case 'input_required': {
      const requests = r.inputRequests ?? {};
      if (Object.keys(requests).length === 0) t.status = 'working';
      else t.inputRequests = requests;
      break;
    }
    case 'completed':
      if (r.result) t.result = r.result;
      break;
    case 'failed':
      t.error = r.error ?? { code: -32603, message: r.statusMessage ?? 'Task failed' };
      break;
    default:
      break;
  }
  return { resultType: 'complete', ...t };
}

/** A legacy `ttl` → modern `ttlMs`: null kept, missing → null, rounded, ≤0 → 1 (conformance wants >0 or null). */
export function ttlMsFromLegacy(ttl: unknown): number | null {
  if (ttl === null || ttl === undefined) return null;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl)) return null;
  return Math.max(1, Math.round(ttl));
}

/** A legacy `pollInterval` → modern `pollIntervalMs`: a positive integer, or absent. */
export function pollIntervalMsFromLegacy(v: unknown): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  const n = Math.round(v);
  return n > 0 ? n : undefined;
}

const STATUSES = new Set<string>(['working', 'input_required', 'completed', 'failed', 'cancelled']);

/** A legacy (2025-11-25 schema) `Task` read defensively. */
export interface TaskV1 {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt?: string;
  lastUpdatedAt?: string;
  ttl: number | null;
  pollInterval?: number;
}

/** Reads a legacy Task (flat, as in tasks/get) or the nested `{task}` of a legacy CreateTaskResult. */
export function readTaskV1(value: unknown): TaskV1 | undefined {
  const v = isObject(value) && isObject(value.task) ? value.task : value;
  if (!isObject(v) || typeof v.taskId !== 'string' || typeof v.status !== 'string' || !STATUSES.has(v.status)) return undefined;
  const t: TaskV1 = { taskId: v.taskId, status: v.status as TaskStatus, ttl: typeof v.ttl === 'number' ? v.ttl : null };
  if (typeof v.statusMessage === 'string') t.statusMessage = v.statusMessage;
  if (typeof v.createdAt === 'string') t.createdAt = v.createdAt;
  if (typeof v.lastUpdatedAt === 'string') t.lastUpdatedAt = v.lastUpdatedAt;
  if (typeof v.pollInterval === 'number') t.pollInterval = v.pollInterval;
  return t;
}

/** Whether a legacy tools/call result is a CreateTaskResult (`{task:{…}}`, 2025-11-25 schema `CreateTaskResult`). */
export function isCreateTaskResultV1(result: unknown): boolean {
  return isObject(result) && isObject(result.task) && typeof result.task.taskId === 'string';
}

/**
 * An inlined modern result from a legacy payload (`tasks/result` or a wrapped call's result): related-task `_meta`
 * removed (conformance), `resultType:"complete"` inside (the `@modelcontextprotocol/ext-tasks` client rejects an inner
 * result without it).
 */
export function inlineResult(legacy: JsonObject): JsonObject {
  const out: JsonObject = { ...legacy, resultType: 'complete' };
  if (isObject(out._meta)) {
    const meta = { ...out._meta };
    delete meta[META.relatedTask];
    if (Object.keys(meta).length > 0) out._meta = meta;
    else delete out._meta;
  } else if ('_meta' in out) {
    delete out._meta; // a non-object _meta is malformed; modernResult drops it likewise
  }
  return out;
}

/**
 * The terminal outcome of a task from its payload: any tool result (isError included) completes (tasks extension §Task
 * Polling).
 */
export function outcomeFromPayload(payload: { result: JsonObject } | { error: JsonRpcErrorObject }):
  | { status: 'completed'; result: JsonObject }
  | { status: 'failed'; error: JsonRpcErrorObject } {
  if ('error' in payload) return { status: 'failed', error: payload.error };
  return { status: 'completed', result: inlineResult(payload.result) };
}

/**
 * The legacy related-task `_meta` for messages about an upstream task (2025-11-25 basic/utilities/tasks §Related Task
 * Metadata).
 */
export function relatedTaskMeta(upstreamTaskId: string): JsonObject {
  return { [META.relatedTask]: { taskId: upstreamTaskId } };
}

/** The related task a legacy message names, if any. */
export function relatedTaskOf(params: unknown): string | undefined {
  if (!isObject(params) || !isObject(params._meta)) return undefined;
  const rt = params._meta[META.relatedTask];
  return isObject(rt) && typeof rt.taskId === 'string' ? rt.taskId : undefined;
}

/** A legacy tool's declared task support (2025-11-25 schema `Tool.execution.taskSupport`). */
export type TaskSupport = 'forbidden' | 'optional' | 'required';

/** Reads each tool's task support from a legacy tools/list result. */
export function toolTaskSupport(listResult: unknown): Map<string, TaskSupport> {
  const out = new Map<string, TaskSupport>();
  if (!isObject(listResult) || !Array.isArray(listResult.tools)) return out;
  for (const tool of listResult.tools) {
    if (!isObject(tool) || typeof tool.name !== 'string') continue;
    const ts = isObject(tool.execution) ? tool.execution.taskSupport : undefined;
    out.set(tool.name, ts === 'optional' || ts === 'required' ? ts : 'forbidden');
  }
  return out;
}

/**
 * A task record as the flat 2025-11-25 `Task` (`tasks/get`, `tasks/cancel`, `notifications/tasks/status`): no payload,
 * `ttl`/`pollInterval` names, and a completed tool result with `isError: true` reported as `failed` (2025-11-25
 * basic/utilities/tasks §Task Status: for tool calls a tool error fails the task).
 */
export function taskV1(r: TaskRecord): JsonObject {
  const status: TaskStatus = r.status === 'completed' && r.result?.isError === true ? 'failed' : r.status;
  const t: JsonObject = { taskId: r.taskId, status, createdAt: r.createdAt, lastUpdatedAt: r.lastUpdatedAt, ttl: r.ttlMs };
  if (r.statusMessage !== undefined) t.statusMessage = r.statusMessage;
  if (r.pollIntervalMs !== undefined) t.pollInterval = r.pollIntervalMs;
  return t;
}

/**
 * The nested 2025-11-25 `CreateTaskResult` (`{ task }`; 2025-11-25 basic/utilities/tasks §Creating Tasks): a task
 * starts `working` whatever happened since (legacy tasks MUST start in working), `_meta` passed through.
 */
export function createTaskResultV1(r: TaskRecord, meta?: JsonObject): JsonObject {
  const task = taskV1(r);
  task.status = 'working';
  return meta && Object.keys(meta).length > 0 ? { task, _meta: meta } : { task };
}

/** `notifications/tasks/status` params for a record (the flat legacy Task, no related-task `_meta`). */
export function taskStatusNotificationV1(r: TaskRecord): { jsonrpc: '2.0'; method: string; params: JsonObject } {
  return { jsonrpc: '2.0', method: 'notifications/tasks/status', params: taskV1(r) };
}

/**
 * What a 2025-11-25 `tasks/result` answers for a terminal record (2025-11-25 basic/utilities/tasks §Result
 * Retrieval): completed → the result (no `resultType`) with the related-task `_meta`; failed → the JSON-RPC error;
 * cancelled → an error saying so (the spec leaves it open).
 */
export function taskPayloadV1(r: TaskRecord): { result: JsonObject } | { error: JsonRpcErrorObject } {
  if (r.status === 'completed') {
    const { resultType: _rt, ...rest } = r.result ?? { content: [] };
    const meta = isObject(rest._meta) ? rest._meta : {};
    return { result: { ...rest, _meta: { ...meta, ...relatedTaskMeta(r.taskId) } } };
  }
  if (r.status === 'failed') return { error: r.error ?? { code: -32603, message: r.statusMessage ?? 'Task failed' } };
  return { error: { code: -32603, message: r.statusMessage ? `Task cancelled: ${r.statusMessage}` : 'Task cancelled' } };
}

/**
 * The 2025-11-25 server `tasks` capability the gateway advertises to a legacy client when it can run tasks
 * (`list` too: it keeps its own inventory per principal).
 */
export function legacyTasksCapability(): JsonObject {
  return { list: {}, cancel: {}, requests: { tools: { call: {} } } };
}

/**
 * A tools/list result with each tool's 2025-11-25 `execution.taskSupport` set from `supportOf(name)` (`undefined`:
 * the field removed, i.e. forbidden).
 */
export function withTaskSupportV1(result: JsonObject, supportOf: (tool: string) => TaskSupport | undefined): JsonObject {
  if (!Array.isArray(result.tools)) return result;
  const tools = result.tools.map((tool) => {
    if (!isObject(tool) || typeof tool.name !== 'string') return tool;
    const support = supportOf(tool.name);
    const { execution: ex, ...rest } = tool;
    const execution = isObject(ex) ? { ...ex } : {};
    delete execution.taskSupport;
    if (support !== undefined && support !== 'forbidden') execution.taskSupport = support;
    return Object.keys(execution).length > 0 ? { ...rest, execution } : rest;
  });
  return { ...result, tools };
}
