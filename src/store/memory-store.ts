/**
 * The in-process task store: an LRU with a bound on entries and a per-record TTL, leases and values in bounded maps,
 * and events delivered in this process only. The reference for the contract in `task-store.ts`; one gateway only.
 */
import { EventEmitter } from 'node:events';
import { LRUCache } from 'lru-cache';
import { isTerminal, type JsonObject, type TaskId, type TaskRecord } from '../translate/index.js';
import {
  StoreFullError,
  TaskIdClashError,
  updateByReplace,
  type ExpiredLease,
  type ReplaceResult,
  type StoreLimits,
  type TaskListQuery,
  type TaskStore,
} from './task-store.js';

/** Memory store options. */
export interface MemoryStoreOptions extends Partial<StoreLimits> {
  /** Most records kept; when full, the least recently used terminal one makes room. */
  maxTasks: number;
  /** Most shared values kept (sessions, heartbeats); default 100,000. */
  maxValues?: number;
  /** The clock (tests pass their own). */
  now?: () => number;
}

interface Lease {
  owner: string;
  until: number;
}

const DEFAULT_MAX_TTL_MS = 86_400_000;

/** Stored records are frozen copies: a reader never sees a half-applied change. */
const frozen = (r: TaskRecord): TaskRecord => Object.freeze({ ...r });

/** A `TaskStore` in this process's memory. */
export class MemoryTaskStore implements TaskStore {
  readonly scope = 'memory' as const;
  private readonly records: LRUCache<string, TaskRecord>;
  private readonly values: LRUCache<string, JsonObject>;
  private readonly leases = new Map<TaskId, Lease>();
  private readonly events = new EventEmitter();
  private readonly max: number;
  private readonly maxTtlMs: number;
  private readonly now: () => number;

  constructor(opts: MemoryStoreOptions) {
    this.max = opts.maxTasks;
    this.maxTtlMs = opts.maxTtlMs ?? DEFAULT_MAX_TTL_MS;
    this.now = opts.now ?? Date.now;
    this.events.setMaxListeners(0);
    this.records = new LRUCache<string, TaskRecord>({
      // One spare slot: create() makes room itself, so the LRU's own eviction never drops a live task.
      max: opts.maxTasks + 1,
      ttlAutopurge: true,
      // Records are replaced, never mutated in place: a reader never sees a half-applied change.
      noUpdateTTL: true,
      perf: { now: this.now },
      // A record's lease goes with it (not when the record is replaced by a newer version).
      dispose: (_v, key, reason) => {
        if (reason !== 'set') this.leases.delete(key as TaskId);
      },
    });
    this.values = new LRUCache<string, JsonObject>({ max: opts.maxValues ?? 100_000, ttlAutopurge: true, perf: { now: this.now } });
  }

  async create(record: TaskRecord, retentionMs: number, lease?: { owner: string; ttlMs: number }): Promise<void> {
    if (this.records.has(record.taskId)) throw new TaskIdClashError(record.taskId);
    if (this.records.size >= this.max) {
      // Full: the least recently used finished task makes room; live tasks are never evicted.
      let victim: string | undefined;
      for (const id of this.records.rkeys()) {
        const r = this.records.peek(id);
        if (r && isTerminal(r.status)) {
          victim = id;
          break;
        }
      }
      if (victim === undefined) throw new StoreFullError(this.max);
      this.records.delete(victim);
    }
    this.records.set(record.taskId, frozen(record), { ttl: Math.max(1, Math.min(retentionMs, this.maxTtlMs)) });
    if (lease) this.leases.set(record.taskId, { owner: lease.owner, until: this.now() + lease.ttlMs });
  }

  async get(taskId: TaskId): Promise<TaskRecord | undefined> {
    return this.records.get(taskId);
  }

  async replace(next: TaskRecord, expectedVersion: number): Promise<ReplaceResult> {
    const current = this.records.get(next.taskId);
    if (!current) return { ok: false, reason: 'not-found' };
    if (current.version !== expectedVersion) return { ok: false, reason: 'conflict', current };
    if (isTerminal(current.status)) return { ok: false, reason: 'terminal', current };
    const stored = frozen({ ...next, version: expectedVersion + 1 });
    this.records.set(next.taskId, stored); // noUpdateTTL keeps the retention counted from creation
    return { ok: true, record: stored };
  }

  update(taskId: TaskId, change: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    return updateByReplace(this, taskId, change);
  }

  async list(q: TaskListQuery): Promise<{ tasks: TaskRecord[]; more: boolean }> {
    // Oldest first by creation, ties by id: a stable order, so that a cursor (the last id of a page) stays valid.
    const mine: TaskRecord[] = [];
    for (const r of this.records.values()) {
      if (r.principal === q.principal && r.upstream === q.upstream && (q.session === undefined || r.session === q.session)) mine.push(r);
    }
    const order = (a: { createdAt: string; taskId: string }, b: { createdAt: string; taskId: string }) =>
      a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
    mine.sort(order);
    const after = q.after;
    const rest = after ? mine.filter((r) => order(r, after) > 0) : mine;
    return { tasks: rest.slice(0, q.limit), more: rest.length > q.limit };
  }

  async activeCount(principal: string): Promise<number> {
    let n = 0;
    for (const r of this.records.values()) if (r.principal === principal && !isTerminal(r.status)) n++;
    return n;
  }

  async acquireLease(taskId: TaskId, owner: string, ttlMs: number): Promise<boolean> {
    if (!this.records.has(taskId)) return false;
    const l = this.leases.get(taskId);
    if (l && l.owner !== owner && l.until > this.now()) return false;
    this.leases.set(taskId, { owner, until: this.now() + ttlMs });
    return true;
  }

  async renewLeases(owner: string, taskIds: readonly TaskId[], ttlMs: number): Promise<TaskId[]> {
    const held: TaskId[] = [];
    for (const id of taskIds) {
      const l = this.leases.get(id);
      // A lapsed lease nobody has claimed is still its owner's to renew.
      if (l && l.owner === owner && this.records.has(id)) {
        l.until = this.now() + ttlMs;
        held.push(id);
      }
    }
    return held;
  }

  async releaseLease(taskId: TaskId, owner: string, mode: 'drop' | 'handover'): Promise<void> {
    const l = this.leases.get(taskId);
    if (!l || l.owner !== owner) return;
    if (mode === 'drop') this.leases.delete(taskId);
    else l.until = 0;
  }

  async claimExpiredLeases(owner: string, ttlMs: number, limit: number): Promise<ExpiredLease[]> {
    const now = this.now();
    const claimed: ExpiredLease[] = [];
    for (const [taskId, l] of this.leases) {
      if (claimed.length >= limit) break;
      if (l.until > now) continue;
      if (!this.records.has(taskId)) {
        this.leases.delete(taskId);
        continue;
      }
      claimed.push({ taskId, previousOwner: l.owner });
      this.leases.set(taskId, { owner, until: now + ttlMs });
    }
    return claimed;
  }

  async leaseOwner(taskId: TaskId): Promise<string | undefined> {
    const l = this.leases.get(taskId);
    return l && l.until > this.now() ? l.owner : undefined;
  }

  async putValue(key: string, value: JsonObject, ttlMs: number, opts: { ifAbsent?: boolean } = {}): Promise<boolean> {
    if (opts.ifAbsent && this.values.has(key)) return false;
    this.values.set(key, structuredClone(value), { ttl: Math.max(1, ttlMs) });
    return true;
  }

  async getValue(key: string): Promise<JsonObject | undefined> {
    const v = this.values.get(key);
    return v === undefined ? undefined : structuredClone(v);
  }

  async touchValue(key: string, ttlMs: number): Promise<boolean> {
    const v = this.values.get(key);
    if (v === undefined) return false;
    this.values.set(key, v, { ttl: Math.max(1, ttlMs) });
    return true;
  }

  async deleteValue(key: string): Promise<boolean> {
    return this.values.delete(key);
  }

  async publish(topic: string, message: JsonObject): Promise<void> {
    // Delivered after the publisher's turn, as a networked channel would: a listener never runs inside publish().
    const copy = structuredClone(message);
    queueMicrotask(() => this.events.emit(topic, copy));
  }

  async subscribe(topic: string, listener: (message: JsonObject) => void): Promise<() => void> {
    this.events.on(topic, listener);
    return () => this.events.off(topic, listener);
  }

  async close(): Promise<void> {
    this.records.clear();
    this.values.clear();
    this.leases.clear();
    this.events.removeAllListeners();
  }
}
