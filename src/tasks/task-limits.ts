/** What every task lifecycle shares: the runtime's limits, task ids, TTL clamping and the errors the edge maps. */
import { randomBytes } from 'node:crypto';
import { GatewayError, type TaskId } from '../translate/index.js';
import type { TaskPolicy } from './route.js';

/** Runtime limits and defaults. */
export interface TaskLimits {
  defaultTtlMs: number;
  maxTtlMs: number;
  defaultPollIntervalMs: number;
  maxActivePerPrincipal: number;
  /** How long to wait for further concurrent input requests once one arrived. */
  gatherMs: number;
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
  return `Upstream unavailable: ${e instanceof Error ? e.message : String(e)}`;
}
