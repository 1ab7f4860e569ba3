/** What every task lifecycle shares: the runtime's limits, task ids, TTL clamping and the errors the edge maps. */
import { randomBytes } from 'node:crypto';
import type { TaskId } from '../translate/index.js';
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

/** A principal has as many live tasks as it may (→ 429). */
export class TooManyTasksError extends Error {
  constructor(limit: number) {
    super(`Too many active tasks (limit ${limit}); let some finish or cancel them`);
    this.name = 'TooManyTasksError';
  }
}

/** An unknown, expired or foreign task id (tasks extension §Protocol Errors: -32602). */
export class UnknownTaskError extends Error {
  constructor() {
    super('Unknown task');
    this.name = 'UnknownTaskError';
  }
}

/**
 * A 2025-11-25 `tasks/cancel` of a task that already ended (2025-11-25 basic/utilities/tasks §Task Cancellation:
 * -32602, "Cannot cancel task: already in terminal status").
 */
export class TaskAlreadyTerminalError extends Error {
  constructor(readonly status: string) {
    super(`Cannot cancel task: already in terminal status '${status}'`);
    this.name = 'TaskAlreadyTerminalError';
  }
}

/** A `tasks/list` cursor this gateway did not issue (2025-11-25 basic/utilities/tasks §Listing Tasks: -32602). */
export class InvalidCursorError extends Error {
  constructor() {
    super('Invalid cursor');
    this.name = 'InvalidCursorError';
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
