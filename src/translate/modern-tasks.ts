/**
 * The 2026-07-28 `io.modelcontextprotocol/tasks` extension's wire shapes (modern): the capability, the flat
 * `CreateTaskResult`, the `DetailedTask` of `tasks/get` and `notifications/tasks`, built from a `TaskRecord` and read
 * with the zod schemas of `@modelcontextprotocol/ext-tasks/core/v2` (tasks extension §Capability Negotiation, §Task
 * Creation, §Task Polling, §Task Status Notifications; the package's `…V2…` names are imported as `Modern…`). Wire
 * schemas are loose: unknown keys pass through.
 */
import { z } from 'zod';
import {
  CancelledTaskV2Schema as ModernCancelledTaskSchema,
  ClientTaskCapabilityEnvelopeV2Schema as ModernClientTaskCapabilityEnvelopeSchema,
  CompletedTaskV2Schema as ModernCompletedTaskSchema,
  CreateTaskResultV2Schema as ModernCreateTaskResultSchema,
  ErrorV2Schema as ModernErrorSchema,
  FailedTaskV2Schema as ModernFailedTaskSchema,
  InputRequiredTaskV2Schema as ModernInputRequiredTaskSchema,
  TASKS_EXTENSION_ID_V2 as MODERN_TASKS_EXTENSION_ID,
  TasksExtensionCapabilityV2Schema as ModernTasksExtensionCapabilitySchema,
  WorkingTaskV2Schema as ModernWorkingTaskSchema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import type { JsonObject } from './jsonrpc.js';
import { pollIntervalMsFromWire, ttlMsFromWire, type TaskRecord, type TaskSnapshot } from './tasks.js';
import { taskFailure } from './gateway-error.js';

/**
 * Retention, poll interval and timestamps, relaxed where servers differ from the published schemas: integers there,
 * any finite number here (normalised by `ttlMsFromWire`, `pollIntervalMsFromWire`: a fractional value is no reason to
 * lose a task); `ttlMs`, `createdAt` and `lastUpdatedAt` required there (tasks extension §Tasks), optional here (a
 * missing `ttlMs` reads as unlimited, which the gateway bounds; it keeps its own timestamps for the tasks it serves).
 */
const lenientTiming = {
  ttlMs: z.number().nullable().optional(),
  pollIntervalMs: z.number().optional(),
  createdAt: z.string().optional(),
  lastUpdatedAt: z.string().optional(),
};

/**
 * The tasks extension's settings. Published: `z.strictObject({})` (no settings are defined yet, tasks extension
 * §Capability Negotiation), so `{"io.modelcontextprotocol/tasks": {"foo": 1}}` would not count as declaring. Any JSON
 * object counts here: a peer that sends settings of a later revision still supports the extension.
 */
const ModernTasksSettings = ModernTasksExtensionCapabilitySchema.loose();

/** Client or server capabilities that name the extension (the published envelope, with the lenient settings). */
const ModernDeclaringCapabilities = ModernClientTaskCapabilityEnvelopeSchema.extend({
  extensions: z.looseObject({ [MODERN_TASKS_EXTENSION_ID]: ModernTasksSettings }),
}).loose();

/** The flat modern `CreateTaskResult` (tasks extension §Task Creation), unknown keys kept. */
const ModernCreateTaskResultLoose = ModernCreateTaskResultSchema.extend(lenientTiming).loose();

/**
 * `tasks/get` results (with `resultType: "complete"`, which a client MUST assume when it is missing: 2026-07-28 basic
 * §ResultType) and `notifications/tasks` params (without it) share the `DetailedTask` union; each variant keeps unknown
 * keys, and a failed task's `error` keeps its own.
 */
const detailedExtras = { ...lenientTiming, resultType: z.literal('complete').optional() };
const ModernDetailedTaskLoose = z.discriminatedUnion('status', [
  ModernWorkingTaskSchema.extend(detailedExtras).loose(),
  ModernInputRequiredTaskSchema.extend(detailedExtras).loose(),
  ModernCompletedTaskSchema.extend(detailedExtras).loose(),
  ModernFailedTaskSchema.extend({ ...detailedExtras, error: ModernErrorSchema.loose() }).loose(),
  ModernCancelledTaskSchema.extend(detailedExtras).loose(),
]);

/** A modern flat `CreateTaskResult` as read (`resultType: "task"`, unknown keys kept). */
export type ModernCreateTaskResult = z.output<typeof ModernCreateTaskResultLoose>;

/** A modern `DetailedTask` as read (`tasks/get` result or `notifications/tasks` params, unknown keys kept). */
export type ModernDetailedTask = z.output<typeof ModernDetailedTaskLoose>;

/**
 * Whether capabilities (a request's `clientCapabilities`, or a server's discover capabilities) declare the tasks
 * extension (tasks extension §Capability Negotiation: the key under `extensions`, its settings an object).
 */
export function declaresTasks(capabilities: JsonObject): boolean {
  // Without the key no schema can match: most requests end here, without a parse (this runs on every tools/call).
  const extensions = capabilities.extensions;
  if (typeof extensions !== 'object' || extensions === null || !Object.hasOwn(extensions, MODERN_TASKS_EXTENSION_ID)) return false;
  return ModernDeclaringCapabilities.safeParse(capabilities).success;
}

/** The -32021 data naming the tasks extension (2026-07-28 schema `MissingRequiredClientCapabilityError`). */
export const TASKS_REQUIRED_CAPABILITIES: JsonObject = { extensions: { [MODERN_TASKS_EXTENSION_ID]: {} } };

/** Reads an upstream's flat `CreateTaskResult` (a `tools/call` answered with a task); `undefined` when it is not one. */
export function readModernCreateTaskResult(value: unknown): ModernCreateTaskResult | undefined {
  const parsed = ModernCreateTaskResultLoose.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/** Reads a `DetailedTask` (a `tasks/get` result or `notifications/tasks` params); `undefined` when it is not one. */
export function readModernDetailedTask(value: unknown): ModernDetailedTask | undefined {
  const parsed = ModernDetailedTaskLoose.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/**
 * A modern task as read → the gateway's snapshot: timing normalised, an inlined result given the
 * `resultType: "complete"` a modern result MUST be read with when it lacks one (2026-07-28 basic §ResultType),
 * `_meta` as `meta`.
 */
export function taskSnapshotFromModern(task: ModernCreateTaskResult | ModernDetailedTask): TaskSnapshot {
  const s: TaskSnapshot = { taskId: task.taskId, status: task.status, ttlMs: ttlMsFromWire(task.ttlMs) };
  if (task.createdAt !== undefined) s.createdAt = task.createdAt;
  if (task.lastUpdatedAt !== undefined) s.lastUpdatedAt = task.lastUpdatedAt;
  if (task.statusMessage !== undefined) s.statusMessage = task.statusMessage;
  const poll = pollIntervalMsFromWire(task.pollIntervalMs);
  if (poll !== undefined) s.pollIntervalMs = poll;
  // A CreateTaskResult carries no outcome and no input requests (tasks extension §Task Creation).
  if (task.resultType !== 'task') {
    if (task.status === 'completed') s.result = { resultType: 'complete', ...task.result };
    else if (task.status === 'failed') s.error = task.error;
    else if (task.status === 'input_required') s.inputRequests = task.inputRequests;
  }
  if (typeof task._meta === 'object' && task._meta !== null && !Array.isArray(task._meta)) s.meta = task._meta as JsonObject;
  return s;
}

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
 * The flat modern `CreateTaskResult` (tasks extension §Task Creation; no result, error, inputRequests or requestState),
 * `_meta` passed through (e.g. the upstream's `io.modelcontextprotocol/model-immediate-response`).
 */
export function modernCreateTaskResult(r: TaskRecord, meta?: JsonObject): JsonObject {
  const t = baseTask(r);
  // A freshly created task is announced as working (input is reported through tasks/get).
  if (t.status === 'input_required') t.status = 'working';
  return meta && Object.keys(meta).length > 0 ? { resultType: 'task', ...t, _meta: meta } : { resultType: 'task', ...t };
}

function detailed(r: TaskRecord): JsonObject {
  const t = baseTask(r);
  switch (r.status) {
    case 'input_required': {
      const requests = r.inputRequests ?? {};
      if (Object.keys(requests).length === 0) t.status = 'working';
      else t.inputRequests = requests;
      break;
    }
    case 'completed':
      // The variant requires `result`; a record completed without one (never stored so) reads as an empty tool result.
      t.result = r.result ?? { resultType: 'complete', content: [] };
      break;
    case 'failed':
      t.error = r.error ?? taskFailure(r.statusMessage);
      break;
    default:
      break;
  }
  return t;
}

/**
 * The modern `DetailedTask` for `tasks/get` (tasks extension §Task Polling): `inputRequests` while input is required
 * (reported as `working` until one is known: the variant requires them), `result` when completed, `error` when failed.
 */
export function modernDetailedTask(r: TaskRecord): JsonObject {
  return { resultType: 'complete', ...detailed(r) };
}

/**
 * `notifications/tasks` for a record: the `DetailedTask` that `tasks/get` would return now, without `resultType`
 * (a notification is no result; tasks extension §Task Status Notifications).
 */
export function modernTaskStatusNotification(r: TaskRecord): { jsonrpc: '2.0'; method: 'notifications/tasks'; params: JsonObject } {
  return { jsonrpc: '2.0', method: 'notifications/tasks', params: detailed(r) };
}
