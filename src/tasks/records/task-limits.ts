/** What every task lifecycle shares: the runtime's limits, task ids, TTL clamping and the errors the edge maps. */
import { createHash, randomBytes } from 'node:crypto';
import { catalogAnswer, catalogError, GatewayError, isTerminal, type JsonRpcErrorObject, type TaskId, type TaskRecord } from '../../translate/index.js';
import type { TaskStore } from '../../store/index.js';
import type { TaskPolicy } from '../route.js';

/** How much input one upstream call may ask (`input.maxRequestsPerRound`, `input.maxRoundsPerTask`). */
export interface InputBounds {
  /** Input requests outstanding at once. */
  maxRequestsPerRound: number;
  /** Rounds of input over the call's life (an MRTR exchange's rounds, a task's `input_required` phases). */
  maxRounds: number;
}

/** The limits' defaults when a runtime is built without them (the configuration's defaults are the same). */
export const DEFAULT_BOUNDS = {
  maxResultBytes: 4_194_304,
  pollBurst: 3,
  input: { maxRequestsPerRound: 32, maxRounds: 100 } satisfies InputBounds,
  maxHeldPerPrincipal: 100,
} as const;

/** Runtime limits and defaults. */
export interface TaskLimits {
  defaultTtlMs: number;
  maxTtlMs: number;
  defaultPollIntervalMs: number;
  maxActivePerPrincipal: number;
  /** How long to wait for further concurrent input requests once one arrived. */
  gatherMs: number;
  /** Largest task outcome (result or error JSON, in bytes) a record keeps. */
  maxResultBytes: number;
  /** Status polls of one task per pollIntervalMs before 429. */
  pollBurst: number;
  /** How much input one call may ask. */
  input: InputBounds;
}

/**
 * A terminal record whose outcome is larger than `maxBytes` as JSON, made a failure that names the size instead
 * (`GW_TASK_RESULT_TOO_LARGE`): the store is never asked to hold more. Any other record is returned as it is.
 */
export function boundedOutcome(next: TaskRecord, maxBytes: number): TaskRecord {
  if (!isTerminal(next.status)) return next;
  const outcome = next.result ?? next.error;
  if (outcome === undefined) return next;
  const json = JSON.stringify(outcome);
  // A UTF-16 unit of the JSON is at most 3 UTF-8 bytes: the exact count only when the bound may be passed.
  if (json.length * 3 <= maxBytes) return next;
  const bytes = Buffer.byteLength(json);
  if (bytes <= maxBytes) return next;
  const { result: _r, error: _e, ...rest } = next;
  const error: JsonRpcErrorObject = catalogAnswer('GW_TASK_RESULT_TOO_LARGE', {
    args: [bytes, maxBytes],
    data: { resultBytes: bytes, limitBytes: maxBytes },
  }).error;
  return { ...rest, status: 'failed', error, statusMessage: error.message };
}

/**
 * The shortest window the poll limit counts in: a suggested interval may be as short as 100 ms, and clients that poll
 * at a fixed pace of their own (the conformance suite's client polls every 200 ms) are eager, not hostile.
 */
const POLL_WINDOW_FLOOR_MS = 1_000;

/**
 * The poll limit (`tasks.pollBurst` status polls of one task per its pollIntervalMs, and at least per second; tasks extension §Task Polling:
 * a client should respect `pollIntervalMs`): counted in the store, so that it holds across instances. Throws
 * `GW_POLL_TOO_FAST` (429 with Retry-After and `data.retryAfterMs`) beyond. Counted per version of the record: polls
 * of a task that has not changed are the storm this stops, while a read after a change (the client's own
 * `tasks/update`, new progress) starts a fresh count, so that read-your-writes is never refused. A terminal task is
 * not polled for status any more (its outcome is read once), so it is not counted.
 */
export async function checkPollRate(store: Pick<TaskStore, 'hit'>, record: TaskRecord, intervalMs: number, burst: number): Promise<void> {
  if (isTerminal(record.status)) return;
  const key = `poll:${pollKeyOf(record.principal)}:${record.taskId}:${record.version}`;
  const { count, resetInMs } = await store.hit(key, Math.max(POLL_WINDOW_FLOOR_MS, intervalMs));
  if (count <= burst) return;
  throw new GatewayError('GW_POLL_TOO_FAST', {
    args: [resetInMs],
    data: { retryAfterMs: resetInMs },
    retryAfterSeconds: Math.max(1, Math.ceil(resetInMs / 1000)),
  });
}

/** A short digest of a principal for counter keys (a principal may be long and hold any character). */
function pollKeyOf(principal: string): string {
  return createHash('sha256').update(principal).digest('base64url').slice(0, 16);
}

/** A principal has as many live tasks as it may (GW_TOO_MANY_TASKS, 429). */
export class TooManyTasksError extends GatewayError {
  constructor(limit: number) {
    super('GW_TOO_MANY_TASKS', { args: [limit] });
  }
}

/** An unknown, expired or foreign task id (GW_TASK_UNKNOWN; tasks extension §Protocol Errors: -32602). */
export class UnknownTaskError extends GatewayError {
  constructor() {
    super('GW_TASK_UNKNOWN');
  }
}

/**
 * A 2025-11-25 `tasks/cancel` of a task that already ended (GW_TASK_TERMINAL; 2025-11-25 basic/utilities/tasks §Task
 * Cancellation: -32602, "Cannot cancel task: already in terminal status").
 */
export class TaskAlreadyTerminalError extends GatewayError {
  constructor(readonly status: string) {
    super('GW_TASK_TERMINAL', { args: [status] });
  }
}

/** A `tasks/list` cursor this gateway did not issue (GW_INVALID_CURSOR; 2025-11-25 basic/utilities/tasks §Listing Tasks: -32602). */
export class InvalidCursorError extends GatewayError {
  constructor() {
    super('GW_INVALID_CURSOR');
  }
}

/** Mints an unguessable, URL-safe task id (144 bits). */
export function mintTaskId(): TaskId {
  return `gwt_${randomBytes(18).toString('base64url')}` as TaskId;
}

/** The current time as an ISO 8601 string (task timestamps). */
export function nowIso(): string {
  return new Date().toISOString();
}

/** A task's retention: the requested TTL, never above the policy's cap or the runtime's. */
export function clampTtl(requested: number | null, policy: TaskPolicy, maxTtlMs: number): number {
  const cap = Math.min(policy.maxTtlMs ?? maxTtlMs, maxTtlMs);
  return Math.min(requested ?? cap, cap);
}

/**
 * What a task failed by an upstream failure says: a catalog error's own message (already "Upstream unavailable: …",
 * "Gateway busy: …" or the store's), anything else as an unavailable upstream.
 */
export function upstreamFailureMessage(e: unknown): string {
  if (e instanceof GatewayError) return e.message;
  return catalogError('GW_UPSTREAM_UNAVAILABLE', { args: [e instanceof Error ? e.message : String(e)] }).message;
}
