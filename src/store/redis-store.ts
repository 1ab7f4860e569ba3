/**
 * The Redis task store (several gateway instances share one Redis): see `task-store.ts` for the contract.
 * Being written: every method rejects until then.
 */
import type { JsonObject, TaskId, TaskRecord } from '../translate/index.js';
import type { ExpiredLease, ReplaceResult, TaskListQuery, TaskStore } from './task-store.js';

/** Redis store options (from `store: { kind: redis, … }`). */
export interface RedisStoreOptions {
  url: string;
  /** Prefix of every key and channel. */
  keyPrefix: string;
  /** No record is retained longer than this. */
  maxTtlMs: number;
  /** Bound on each command (no offline queue: an outage is an error after at most this long). */
  commandTimeoutMs: number;
  connectTimeoutMs: number;
}

const todo = (): never => {
  throw new Error('RedisTaskStore: not implemented yet');
};

/** A `TaskStore` on Redis. */
export class RedisTaskStore implements TaskStore {
  readonly scope = 'shared' as const;
  constructor(readonly opts: RedisStoreOptions) {}
  /** Connects and loads the scripts; rejects with `StoreUnavailableError` when Redis cannot be reached. */
  async connect(): Promise<void> { todo(); }
  async create(_record: TaskRecord, _retentionMs: number): Promise<void> { todo(); }
  async get(_taskId: TaskId): Promise<TaskRecord | undefined> { return todo(); }
  async replace(_next: TaskRecord, _expectedVersion: number): Promise<ReplaceResult> { return todo(); }
  async update(_taskId: TaskId, _change: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> { return todo(); }
  async list(_q: TaskListQuery): Promise<{ tasks: TaskRecord[]; more: boolean }> { return todo(); }
  async activeCount(_principal: string): Promise<number> { return todo(); }
  async acquireLease(_taskId: TaskId, _owner: string, _ttlMs: number): Promise<boolean> { return todo(); }
  async renewLeases(_owner: string, _taskIds: readonly TaskId[], _ttlMs: number): Promise<TaskId[]> { return todo(); }
  async releaseLease(_taskId: TaskId, _owner: string, _mode: 'drop' | 'handover'): Promise<void> { todo(); }
  async claimExpiredLeases(_owner: string, _ttlMs: number, _limit: number): Promise<ExpiredLease[]> { return todo(); }
  async leaseOwner(_taskId: TaskId): Promise<string | undefined> { return todo(); }
  async putValue(_key: string, _value: JsonObject, _ttlMs: number, _opts?: { ifAbsent?: boolean }): Promise<boolean> { return todo(); }
  async getValue(_key: string): Promise<JsonObject | undefined> { return todo(); }
  async touchValue(_key: string, _ttlMs: number): Promise<boolean> { return todo(); }
  async deleteValue(_key: string): Promise<boolean> { return todo(); }
  async publish(_topic: string, _message: JsonObject): Promise<void> { todo(); }
  async subscribe(_topic: string, _listener: (message: JsonObject) => void): Promise<() => void> { return todo(); }
  async close(): Promise<void> {}
}
