/**
 * The 2025-11-25 core tasks' wire shapes (legacy): the server `tasks` capability, a tool's `execution.taskSupport`, the
 * flat `Task`, the nested `CreateTaskResult`, the `tasks/result` payload with its related-task `_meta`, and
 * `notifications/tasks/status`; built from a `TaskRecord` and read with the zod schemas of
 * `@modelcontextprotocol/ext-tasks/core/v1` (2025-11-25 basic/utilities/tasks; the package's `…V1…` names are imported
 * as `Legacy…`). Wire schemas are loose: unknown keys pass through.
 */
import { z } from 'zod';
import {
  CreateTaskResultV1Schema as LegacyCreateTaskResultSchema,
  hasTaskToolCallCapabilityV1 as hasLegacyTaskToolCallCapability,
  ServerCapabilitiesV1Schema as LegacyServerCapabilitiesSchema,
  TaskMetadataV1Schema as LegacyTaskMetadataSchema,
  type TaskSupportV1Schema as LegacyTaskSupportSchema,
  TaskV1Schema as LegacyTaskSchema,
  ToolExecutionV1Schema as LegacyToolExecutionSchema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import { META } from './constants.js';
import type { InputRequest } from './input.js';
import { isObject, type JsonObject, type JsonRpcErrorObject } from './jsonrpc.js';
import { legacyError, legacyInputParams, legacyResult } from './results-to-legacy.js';
import { legacyStatus, pollIntervalMsFromWire, ttlMsFromWire, type TaskRecord, type TaskSnapshot } from './tasks.js';
import { catalogError, taskFailure } from './gateway-error.js';

/**
 * The flat `Task`, relaxed where servers and hand-built tasks differ from the published schema:
 * - `ttl` and `pollInterval` are integers there (`ttl` nullable: unlimited retention, 2025-11-25 basic/utilities/tasks
 *   §TTL and Resource Management); servers on the TypeScript SDK 1.x type both as any number, so any finite number is
 *   read and normalised later (`ttlMsFromWire`, `pollIntervalMsFromWire`);
 * - `ttl`, `createdAt` and `lastUpdatedAt` are required there (the spec's MUST); a Task without them still names its
 *   id and status, which is all the gateway takes from it: a missing `ttl` reads as unlimited (the gateway bounds it),
 *   and the gateway keeps its own timestamps for the tasks it serves.
 */
const LegacyTaskLoose = LegacyTaskSchema.extend({
  ttl: z.number().nullable().optional(),
  pollInterval: z.number().optional(),
  createdAt: z.string().optional(),
  lastUpdatedAt: z.string().optional(),
}).loose();

/** The nested `CreateTaskResult` (`{ task, _meta? }`), unknown keys kept at both levels. */
const LegacyCreateTaskResultLoose = LegacyCreateTaskResultSchema.extend({ task: LegacyTaskLoose }).loose();

/**
 * One tool of a `tools/list` result, for its task support only: a tool needs a name; an `execution` that does not
 * parse counts as absent, i.e. `forbidden` (2025-11-25 server/tools: absent means forbidden).
 */
const LegacyToolTaskSupport = z.looseObject({
  name: z.string(),
  execution: LegacyToolExecutionSchema.loose().optional().catch(undefined),
});

/**
 * The `task` of a task-augmented request (`{ ttl? }`, 2025-11-25 basic/utilities/tasks §Creating Tasks). Published,
 * `ttl` is an integer; a requestor's `ttl` that is no finite number only loses the request its TTL, not its task.
 */
const LegacyTaskMetadataLoose = LegacyTaskMetadataSchema.extend({ ttl: z.number().optional().catch(undefined) }).loose();

/** A legacy `Task` as read (flat, unknown keys kept; `ttl` and `pollInterval` raw). */
export type LegacyTask = z.output<typeof LegacyTaskLoose>;

/** A legacy `CreateTaskResult` as read (`{ task, _meta? }`, unknown keys kept). */
export type LegacyCreateTaskResult = z.output<typeof LegacyCreateTaskResultLoose>;

/** A legacy tool's declared task support (2025-11-25 schema `Tool.execution.taskSupport`). */
export type TaskSupport = z.output<typeof LegacyTaskSupportSchema>;

/** Reads a legacy nested `CreateTaskResult` (2025-11-25 basic/utilities/tasks §Creating Tasks); `undefined` if not one. */
export function readLegacyCreateTaskResult(value: unknown): LegacyCreateTaskResult | undefined {
  const parsed = LegacyCreateTaskResultLoose.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** Whether a legacy tools/call result is a `CreateTaskResult` (the task nested under `task`). */
export function isLegacyCreateTaskResult(result: unknown): boolean {
  return readLegacyCreateTaskResult(result) !== undefined;
}

/**
 * Reads a legacy `Task`: flat (`tasks/get`, `tasks/cancel`, `notifications/tasks/status` params) or the nested `task`
 * of a `CreateTaskResult`; `undefined` when it is neither.
 */
export function readLegacyTask(value: unknown): LegacyTask | undefined {
  const v = isObject(value) && isObject(value.task) ? value.task : value;
  const parsed = LegacyTaskLoose.safeParse(v);
  return parsed.success ? parsed.data : undefined;
}

/**
 * Whether a legacy request's params ask for a task (`params.task` an object), and for how long: the requested `ttl`
 * as the gateway's `ttlMs` (normalised; absent when the requestor left it to the receiver). `undefined`: no task.
 */
export function readLegacyTaskMetadata(params: unknown): { ttlMs?: number } | undefined {
  if (!isObject(params) || !('task' in params)) return undefined;
  const parsed = LegacyTaskMetadataLoose.safeParse(params.task);
  if (!parsed.success) return undefined;
  const ttlMs = ttlMsFromWire(parsed.data.ttl);
  return ttlMs === null ? {} : { ttlMs };
}

/**
 * A legacy task as read → the gateway's snapshot (modern names, timing normalised). A legacy `failed` stays `failed`
 * here: whether it was a tool error or a JSON-RPC error only its `tasks/result` tells (`outcomeFromPayload`).
 */
export function taskSnapshotFromLegacy(task: LegacyTask, meta?: JsonObject): TaskSnapshot {
  const s: TaskSnapshot = { taskId: task.taskId, status: task.status, ttlMs: ttlMsFromWire(task.ttl) };
  if (task.createdAt !== undefined) s.createdAt = task.createdAt;
  if (task.lastUpdatedAt !== undefined) s.lastUpdatedAt = task.lastUpdatedAt;
  if (task.statusMessage !== undefined) s.statusMessage = task.statusMessage;
  const poll = pollIntervalMsFromWire(task.pollInterval);
  if (poll !== undefined) s.pollIntervalMs = poll;
  if (meta && Object.keys(meta).length > 0) s.meta = meta;
  return s;
}

/** Whether the legacy server supports task-augmented `tools/call` (2025-11-25 schema `ServerCapabilities.tasks`). */
export function legacySupportsToolTasks(caps: JsonObject): boolean {
  // Without `tasks` no schema can match (this runs on every tools/call of a legacy upstream).
  if (caps.tasks === undefined) return false;
  const parsed = LegacyServerCapabilitiesSchema.safeParse(caps);
  return parsed.success && parsed.data.tasks !== undefined && hasLegacyTaskToolCallCapability(parsed.data.tasks);
}

/** Reads each tool's task support from a legacy tools/list result (tools without a string name are skipped). */
export function toolTaskSupport(listResult: unknown): Map<string, TaskSupport> {
  const out = new Map<string, TaskSupport>();
  if (!isObject(listResult) || !Array.isArray(listResult.tools)) return out;
  for (const entry of listResult.tools) {
    const tool = LegacyToolTaskSupport.safeParse(entry);
    if (tool.success) out.set(tool.data.name, tool.data.execution?.taskSupport ?? 'forbidden');
  }
  return out;
}

/**
 * The legacy related-task `_meta` for messages about a task (2025-11-25 basic/utilities/tasks §Related Task
 * Metadata).
 */
export function relatedTaskMeta(taskId: string): JsonObject {
  return { [META.relatedTask]: { taskId } };
}

const RelatedTaskCarrier = z.looseObject({
  _meta: z.looseObject({ [META.relatedTask]: z.looseObject({ taskId: z.string() }) }),
});

/** The related task a legacy message's params (or result) name, if any. */
export function relatedTaskOf(params: unknown): string | undefined {
  const parsed = RelatedTaskCarrier.safeParse(params);
  return parsed.success ? parsed.data._meta[META.relatedTask].taskId : undefined;
}

/**
 * A task's input request (a modern `inputRequests` entry) → the params of the 2025-11-25 server→client request that
 * asks it: an `elicitationId` for URL mode, and the related-task `_meta` naming the task the client knows (2025-11-25
 * basic/utilities/tasks §Input Required Status: task-scoped requests MUST carry it).
 */
export function legacyTaskInputParams(taskId: string, request: InputRequest, elicitationId: string): JsonObject {
  const params = legacyInputParams(request.method, request.params, elicitationId) ?? {};
  const meta = isObject(params._meta) ? params._meta : {};
  return { ...params, _meta: { ...meta, ...relatedTaskMeta(taskId) } };
}

/**
 * A task record as the flat 2025-11-25 `Task` (`tasks/get`, `tasks/cancel`, `notifications/tasks/status`): no payload,
 * `ttl`/`pollInterval` names, and a completed tool result with `isError: true` reported as `failed` (`legacyStatus`).
 */
export function legacyTask(r: TaskRecord): JsonObject {
  const t: JsonObject = {
    taskId: r.taskId,
    status: legacyStatus(r.status, r.result),
    createdAt: r.createdAt,
    lastUpdatedAt: r.lastUpdatedAt,
    ttl: r.ttlMs,
  };
  if (r.statusMessage !== undefined) t.statusMessage = r.statusMessage;
  if (r.pollIntervalMs !== undefined) t.pollInterval = r.pollIntervalMs;
  return t;
}

/**
 * The nested 2025-11-25 `CreateTaskResult` (`{ task }`; 2025-11-25 basic/utilities/tasks §Creating Tasks): a task
 * starts `working` whatever happened since (legacy tasks MUST start in working), `_meta` passed through.
 */
export function legacyCreateTaskResult(r: TaskRecord, meta?: JsonObject): JsonObject {
  const task = legacyTask(r);
  task.status = 'working';
  return meta && Object.keys(meta).length > 0 ? { task, _meta: meta } : { task };
}

/** `notifications/tasks/status` params for a record (the flat legacy Task, no related-task `_meta`). */
export function legacyTaskStatusNotification(r: TaskRecord): { jsonrpc: '2.0'; method: string; params: JsonObject } {
  return { jsonrpc: '2.0', method: 'notifications/tasks/status', params: legacyTask(r) };
}

/**
 * What a 2025-11-25 `tasks/result` answers for a terminal record (2025-11-25 basic/utilities/tasks §Result
 * Retrieval): completed → the result (no `resultType`) with the related-task `_meta`; failed → the JSON-RPC error;
 * cancelled → an error saying so (the spec leaves it open).
 */
export function legacyTaskPayload(r: TaskRecord): { result: JsonObject } | { error: JsonRpcErrorObject } {
  if (r.status === 'completed') {
    // What the synchronous tools/call would have answered through the legacy face (resultType, the serverInfo `_meta`
    // key and a non-object structuredContent removed), with the related-task `_meta` added.
    const legacy = legacyResult('tools/call', { ...(r.result ?? { content: [] }), resultType: 'complete' });
    const rest = legacy.ok ? legacy.value : { content: [] };
    const meta = isObject(rest._meta) ? rest._meta : {};
    return { result: { ...rest, _meta: { ...meta, ...relatedTaskMeta(r.taskId) } } };
  }
  if (r.status === 'failed') return { error: r.error ? legacyError(r.error) : taskFailure(r.statusMessage) };
  return { error: r.statusMessage ? catalogError('GW_TASK_CANCELLED_BECAUSE', { args: [r.statusMessage] }) : catalogError('GW_TASK_CANCELLED') };
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
export function withLegacyTaskSupport(result: JsonObject, supportOf: (tool: string) => TaskSupport | undefined): JsonObject {
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
