/**
 * The task store contract (docs/architecture.md §4): records written by compare-and-set under the task state machine,
 * expiry by retention capped by the store's `maxTtlMs`, the per-principal inventory, leases for running work, a small
 * key-value space with TTLs (gateway-minted sessions, instance heartbeats), and an event channel between gateway
 * instances. Two implementations keep the same contract (one test suite runs against both): memory (one process) and
 * Redis (several instances).
 */
import { GatewayError, type JsonObject, type TaskId, type TaskRecord } from '../translate/index.js';

/**
 * Why a compare-and-set did not apply: the record is unknown or expired (`not-found`), another writer changed it
 * first (`conflict`: the stale writer loses), or it is terminal and terminal records never change (`terminal`).
 */
export type UpdateFailure = 'not-found' | 'conflict' | 'terminal';

/** The outcome of `TaskStore.replace`; a failure carries the record as it is now, when there is one. */
export type ReplaceResult = { ok: true; record: TaskRecord } | { ok: false; reason: UpdateFailure; current?: TaskRecord };

/** What `TaskStore.list` is asked. */
export interface TaskListQuery {
  principal: string;
  upstream: string;
  session?: string;
  /** Where the previous page ended: its last task's creation time and id. */
  after?: { createdAt: string; taskId: string };
  limit: number;
}

/** A lease another instance may take over: its task and the instance that let it lapse. */
export interface ExpiredLease {
  taskId: TaskId;
  previousOwner: string;
}

/** A counter after one `TaskStore.hit`. */
export interface CounterHit {
  /** Hits in the current window, this one included. */
  count: number;
  /** Milliseconds until the window has ended (≥ 1): a hit after waiting this long starts a new window. */
  resetInMs: number;
}

/** Store-wide bounds. */
export interface StoreLimits {
  /** Most records kept (memory store; the Redis store is bounded by key TTLs). */
  maxTasks: number;
  /** No record is retained longer than this, whatever its `ttlMs`. */
  maxTtlMs: number;
}

/** Stores task records and the little shared state gateway instances need. */
export interface TaskStore {
  /** `memory`: one process only; `shared`: every instance using the same backend sees the same state. */
  readonly scope: 'memory' | 'shared';
  /**
   * Stores a new record (its `version` as given, normally 0) for `min(retentionMs, maxTtlMs)`; resolves once a `get`
   * from any instance sees it (durable creation, tasks extension §Task Creation). Rejects with `TaskIdClashError` when
   * the id exists, `StoreFullError` when no room can be made (live tasks are never evicted). With `lease`, the record
   * is stored already leased to `lease.owner` (one atomic step: an instance lost between storing a task and leasing it
   * would leave a live task nobody takes over).
   */
  create(record: TaskRecord, retentionMs: number, lease?: { owner: string; ttlMs: number }): Promise<void>;
  /** The record, or `undefined` if unknown or expired. */
  get(taskId: TaskId): Promise<TaskRecord | undefined>;
  /**
   * Compare-and-set: stores `next` with `version: expectedVersion + 1` if the stored record's version is
   * `expectedVersion` and the stored record is not terminal. The retention stays counted from creation. A record that
   * leaves the live statuses leaves the principal's active count.
   */
  replace(next: TaskRecord, expectedVersion: number): Promise<ReplaceResult>;
  /**
   * Read, `change`, `replace`, retried on conflict (bounded): `change` gets the current record and returns the next
   * one (without touching `version`) or `undefined` to leave it. Resolves to the stored record (unchanged when `change`
   * declined or the record is terminal), `undefined` when unknown.
   */
  update(taskId: TaskId, change: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined>;
  /**
   * One page of a principal's tasks on one upstream, oldest first (2025-11-25 `tasks/list`); `session` narrows it to
   * the tasks a credential-less session created. A page starts after `after` in (createdAt, taskId) order, so a
   * cursor stays valid when the task it names expires.
   */
  list(query: TaskListQuery): Promise<{ tasks: TaskRecord[]; more: boolean }>;
  /** How many live (non-terminal, unexpired) tasks a principal has. */
  activeCount(principal: string): Promise<number>;
  /**
   * Resolves when a `create` now would find room, rejects with `StoreFullError` when it would not (memory: `maxTasks`
   * live records and none it may evict; Redis: never, bounded by key TTLs). Asked before an upstream call that may
   * become a task, so that a full store refuses the call before the upstream starts work it could not report.
   */
  ensureRoom(): Promise<void>;

  /**
   * Counts one hit on `key` in a fixed window, atomically across every instance sharing the store: the first hit
   * starts a window of `windowMs`, the following ones until it ends add to it. Resolves to the count including this
   * hit and how long the window still runs. The counter is gone when its window ends (a rate limit that holds across
   * instances, with nothing to clean up).
   */
  hit(key: string, windowMs: number): Promise<CounterHit>;

  /**
   * Takes the lease on a task's running work for `owner` for `ttlMs`: true when it was free, had lapsed, or is
   * already `owner`'s (then renewed).
   */
  acquireLease(taskId: TaskId, owner: string, ttlMs: number): Promise<boolean>;
  /** Renews `owner`'s leases on these tasks; resolves to the ids still held by `owner` (the others were lost). */
  renewLeases(owner: string, taskIds: readonly TaskId[], ttlMs: number): Promise<TaskId[]>;
  /**
   * Ends `owner`'s lease: `drop` forgets it (the work ended), `handover` makes it lapse at once so that another
   * instance claims it without waiting for expiry (graceful shutdown). A lease held by someone else is untouched.
   */
  releaseLease(taskId: TaskId, owner: string, mode: 'drop' | 'handover'): Promise<void>;
  /**
   * Claims up to `limit` lapsed leases for `owner` (each claimed by exactly one caller, however many ask at once) and
   * returns them with the owner that let them lapse. Leases of expired records are dropped, not returned.
   */
  claimExpiredLeases(owner: string, ttlMs: number, limit: number): Promise<ExpiredLease[]>;
  /** The current holder of a task's lease, if it has not lapsed. */
  leaseOwner(taskId: TaskId): Promise<string | undefined>;

  /** Shared values with a TTL (gateway-minted sessions, instance heartbeats); `ifAbsent` fails on an existing key. */
  putValue(key: string, value: JsonObject, ttlMs: number, opts?: { ifAbsent?: boolean }): Promise<boolean>;
  getValue(key: string): Promise<JsonObject | undefined>;
  /** Restarts a value's TTL; false when it is gone. */
  touchValue(key: string, ttlMs: number): Promise<boolean>;
  deleteValue(key: string): Promise<boolean>;

  /** Publishes a message on a topic to every subscriber in every instance (this one included). At most once. */
  publish(topic: string, message: JsonObject): Promise<void>;
  /** Subscribes to a topic; resolves once messages published from then on are delivered. Returns the remover. */
  subscribe(topic: string, listener: (message: JsonObject) => void): Promise<() => void>;

  /**
   * Resolves when the backend answers now (Redis: a PING, bounded by the command timeout); rejects with
   * `StoreUnavailableError` otherwise. Readiness asks it: an instance whose store is gone cannot serve tasks.
   */
  ping(): Promise<void>;

  /** Releases resources (Redis: `quit`). Idempotent. */
  close(): Promise<void>;
}

/** The part of a store that holds shared values and topics (the sessions the gateway mints for legacy clients). */
export type SharedValues = Pick<TaskStore, 'putValue' | 'getValue' | 'touchValue' | 'deleteValue' | 'publish' | 'subscribe'>;

/** The store holds as many live tasks as it may (GW_STORE_FULL, 503). */
export class StoreFullError extends GatewayError {
  constructor(limit: number) {
    super('GW_STORE_FULL', { args: [limit] });
  }
}

/**
 * `create` with an id that is already stored (a minting bug or a replay: never overwritten). Internal: the runtimes
 * mint ids and never show this to a client as itself (so a plain Error; one that escaped would be GW_INTERNAL).
 */
export class TaskIdClashError extends Error {
  constructor(readonly taskId: string) {
    super('A task with this id already exists');
    this.name = 'TaskIdClashError';
  }
}

/**
 * The store's backend cannot be reached now (Redis down): a fast, clear failure, never a hang (GW_STORE_UNAVAILABLE,
 * 503 with `Retry-After`). The client's message names no backend detail; `detail` keeps it for the operator log.
 */
export class StoreUnavailableError extends GatewayError {
  constructor(
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super('GW_STORE_UNAVAILABLE', { cause: options?.cause });
  }
}

/** How often `update` re-reads and retries after losing a compare-and-set. */
export const UPDATE_ATTEMPTS = 16;

/**
 * `TaskStore.update` over `get` and `replace`, shared by the implementations: a stale read loses the compare-and-set
 * and is retried from the record as it is now.
 */
export async function updateByReplace(
  store: Pick<TaskStore, 'get' | 'replace'>,
  taskId: TaskId,
  change: (current: TaskRecord) => TaskRecord | undefined,
): Promise<TaskRecord | undefined> {
  let current = await store.get(taskId);
  for (let attempt = 0; attempt < UPDATE_ATTEMPTS; attempt++) {
    if (!current) return undefined;
    const next = change(current);
    if (!next) return current;
    const r = await store.replace(next, current.version);
    if (r.ok) return r.record;
    if (r.reason !== 'conflict') return r.current;
    current = r.current ?? (await store.get(taskId));
  }
  throw new Error(`task ${taskId}: ${UPDATE_ATTEMPTS} conflicting writers in a row`);
}

/**
 * `open`, run once however many callers ask while it runs or after it succeeded, and again after it failed: a store's
 * `connect()` (called again while connected it resolves at once; after a failure it tries again).
 */
export function openOnce(open: () => Promise<void>): () => Promise<void> {
  let opening: Promise<void> | undefined;
  return () =>
    (opening ??= open().catch((err: unknown) => {
      opening = undefined;
      throw err;
    }));
}
