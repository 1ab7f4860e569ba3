/** The task store contract: atomic updates by compare-and-set, TTL expiry, principal-bound counting. */
import type { TaskId, TaskRecord } from '../translate/index.js';

/** Why an update did not apply. */
export type UpdateFailure = 'not-found' | 'conflict';

/** What `TaskStore.list` is asked. */
export interface TaskListQuery {
  principal: string;
  upstream: string;
  session?: string;
  /** Where the previous page ended: its last task's creation time and id. */
  after?: { createdAt: string; taskId: string };
  limit: number;
}

/** Stores task records. Implementations: memory (this process) and, with the store issue, Redis. */
export interface TaskStore {
  /**
   * Stores a new record; resolves once a `get` from anywhere would see it (durable creation, tasks extension §Task
   * Creation).
   */
  create(record: TaskRecord, retentionMs: number): Promise<void>;
  /** The record, or `undefined` if unknown or expired. */
  get(taskId: TaskId): Promise<TaskRecord | undefined>;
  /**
   * Applies `change` to the current record atomically and bumps its version. `change` returns the new record
   * (without touching `version`) or `undefined` to leave it as it is. Resolves to the stored record.
   */
  update(taskId: TaskId, change: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined>;
  /**
   * One page of a principal's tasks on one upstream, oldest first (2025-11-25 `tasks/list`); `session` narrows it to
   * the tasks a credential-less session created. A page starts after `after` in (createdAt, taskId) order, so a
   * cursor stays valid when the task it names expires.
   */
  list(query: TaskListQuery): Promise<{ tasks: TaskRecord[]; more: boolean }>;
  /** How many live (non-terminal) tasks a principal has. */
  activeCount(principal: string): Promise<number>;
  /** Releases resources. Idempotent. */
  close(): Promise<void>;
}

/** The store holds as many live tasks as it may (→ 503). */
export class StoreFullError extends Error {
  constructor(limit: number) {
    super(`The task store is full (${limit} live tasks); try again later`);
    this.name = 'StoreFullError';
  }
}
