/**
 * The in-process task store: records in one insertion-ordered map used as an LRU (a read moves a record to the end),
 * each with the time it expires; leases and values in bounded maps; events delivered in this process only. The
 * reference for the contract in `task-store.ts`; one gateway only.
 *
 * Sized for many finished tasks (docs/architecture.md §5 "bounded by construction"): no timer per record (an expired
 * record is dropped when it is next touched, by the eviction scan, or by one periodic sweep), the strings records
 * repeat (principal, upstream, tool, owner, sessions) held once, and the live tasks of each principal indexed so that
 * `activeCount` never scans the store.
 */
import { EventEmitter } from 'node:events';
import { LRUCache } from 'lru-cache';
import { isTerminal, type JsonObject, type TaskId, type TaskRecord } from '../translate/index.js';
import {
  StoreFullError,
  TaskIdClashError,
  updateByReplace,
  type CounterHit,
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
  /** Most counters kept (`hit`: poll rates); default 100,000. The least recently hit one goes first. */
  maxCounters?: number;
  /** The clock (tests pass their own). */
  now?: () => number;
}

interface Lease {
  owner: string;
  until: number;
}

/** A stored record and when it expires (ms since the store's epoch: a small integer, no boxed number). */
class Slot {
  constructor(
    readonly record: TaskRecord,
    readonly expiresAt: number,
  ) {}
}

const DEFAULT_MAX_TTL_MS = 86_400_000;

/** How often expired records nobody touched are dropped (memory only: an expired record is never returned). */
const SWEEP_MS = 30_000;

/** How often at most a full store sweeps for expired records before it evicts a finished one. */
const FULL_SWEEP_MS = 1_000;

/** Distinct strings held for sharing; past this the table starts over (sharing is an optimisation, never a rule). */
const MAX_INTERNED = 4_096;

/** Longer strings are not shared: a client's oversized tool name must not outlive its record in the table. */
const MAX_INTERNED_LENGTH = 256;

/**
 * One copy of each string records repeat: every request makes its own copy of the principal (hashed from its
 * credentials), the tool name (parsed from its body) and so on, and a record would otherwise keep it.
 */
class Interner {
  private readonly seen = new Map<string, string>();

  get(s: string): string {
    if (s.length > MAX_INTERNED_LENGTH) return s;
    const held = this.seen.get(s);
    if (held !== undefined) return held;
    if (this.seen.size >= MAX_INTERNED) this.seen.clear();
    this.seen.set(s, s);
    return s;
  }
}

/** A `TaskStore` in this process's memory. */
export class MemoryTaskStore implements TaskStore {
  readonly scope = 'memory' as const;
  /** Records by id, least recently used first. */
  private readonly slots = new Map<TaskId, Slot>();
  /** The live (non-terminal) tasks of each principal, expired ones dropped when seen. */
  private readonly liveByPrincipal = new Map<string, Set<TaskId>>();
  private readonly strings = new Interner();
  private readonly values: LRUCache<string, JsonObject>;
  /** `hit` counters: the count and when its window ends (store clock). */
  private readonly counters: LRUCache<string, { count: number; until: number }>;
  private readonly leases = new Map<TaskId, Lease>();
  private readonly events = new EventEmitter();
  private readonly max: number;
  private readonly maxTtlMs: number;
  private readonly now: () => number;
  private readonly epoch: number;
  private readonly sweeper: NodeJS.Timeout;
  /** When the last sweep ran (store clock). */
  private sweptAt: number | undefined;

  constructor(opts: MemoryStoreOptions) {
    this.max = opts.maxTasks;
    this.maxTtlMs = opts.maxTtlMs ?? DEFAULT_MAX_TTL_MS;
    this.now = opts.now ?? Date.now;
    this.epoch = this.now();
    this.events.setMaxListeners(0);
    this.values = new LRUCache<string, JsonObject>({ max: opts.maxValues ?? 100_000, ttlAutopurge: true, perf: { now: this.now } });
    // No timer per counter: a counter whose window ended is replaced when hit again, or evicted by newer ones.
    this.counters = new LRUCache({ max: opts.maxCounters ?? 100_000 });
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS);
    this.sweeper.unref();
  }

  async create(record: TaskRecord, retentionMs: number, lease?: { owner: string; ttlMs: number }): Promise<void> {
    if (this.slot(record.taskId)) throw new TaskIdClashError(record.taskId);
    if (this.slots.size >= this.max) this.makeRoom();
    const ttl = Math.max(1, Math.min(retentionMs, this.maxTtlMs));
    const stored = this.stored(record);
    this.slots.set(stored.taskId, new Slot(stored, this.clock() + ttl));
    if (!isTerminal(stored.status)) this.index(stored);
    if (lease) this.leases.set(stored.taskId, { owner: lease.owner, until: this.now() + lease.ttlMs });
  }

  async get(taskId: TaskId): Promise<TaskRecord | undefined> {
    const s = this.slot(taskId);
    if (!s) return undefined;
    this.touch(taskId, s);
    return s.record;
  }

  async replace(next: TaskRecord, expectedVersion: number): Promise<ReplaceResult> {
    const s = this.slot(next.taskId);
    if (!s) return { ok: false, reason: 'not-found' };
    const current = s.record;
    if (current.version !== expectedVersion || isTerminal(current.status)) {
      this.touch(next.taskId, s);
      return { ok: false, reason: current.version !== expectedVersion ? 'conflict' : 'terminal', current };
    }
    const stored = this.stored({ ...next, version: expectedVersion + 1 });
    // Moved to the most recently used end; the retention stays counted from creation.
    this.slots.delete(next.taskId);
    this.slots.set(next.taskId, new Slot(stored, s.expiresAt));
    this.unindex(current);
    if (!isTerminal(stored.status)) this.index(stored);
    return { ok: true, record: stored };
  }

  update(taskId: TaskId, change: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    return updateByReplace(this, taskId, change);
  }

  async list(q: TaskListQuery): Promise<{ tasks: TaskRecord[]; more: boolean }> {
    // Oldest first by creation, ties by id: a stable order, so that a cursor (the last id of a page) stays valid.
    const mine: TaskRecord[] = [];
    const now = this.clock();
    for (const [id, s] of this.slots) {
      if (s.expiresAt < now) {
        this.drop(id, s);
        continue;
      }
      const r = s.record;
      if (r.principal === q.principal && r.upstream === q.upstream && (q.session === undefined || r.session === q.session)) mine.push(r);
    }
    const order = (a: { createdAt: string; taskId: string }, b: { createdAt: string; taskId: string }) =>
      a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.taskId < b.taskId ? -1 : a.taskId > b.taskId ? 1 : 0;
    mine.sort(order);
    const after = q.after;
    const rest = after ? mine.filter((r) => order(r, after) > 0) : mine;
    return { tasks: rest.slice(0, q.limit), more: rest.length > q.limit };
  }

  async ensureRoom(): Promise<void> {
    if (this.slots.size < this.max) return;
    let live = 0;
    for (const ids of this.liveByPrincipal.values()) live += ids.size;
    // A finished record can always make room (makeRoom evicts it); so can an expired one.
    if (live < this.slots.size) return;
    const now = this.clock();
    for (const s of this.slots.values()) if (s.expiresAt < now) return;
    throw new StoreFullError(this.max);
  }

  async hit(key: string, windowMs: number): Promise<CounterHit> {
    const now = this.now();
    const c = this.counters.get(key);
    if (!c || c.until <= now) {
      const window = Math.max(1, Math.ceil(windowMs));
      this.counters.set(key, { count: 1, until: now + window });
      return { count: 1, resetInMs: window };
    }
    c.count += 1;
    return { count: c.count, resetInMs: Math.max(1, c.until - now) };
  }

  async activeCount(principal: string): Promise<number> {
    const ids = this.liveByPrincipal.get(principal);
    if (!ids) return 0;
    let n = 0;
    // An expired one leaves the set as it is seen (slot() drops it).
    for (const id of ids) if (this.slot(id)) n++;
    return n;
  }

  async acquireLease(taskId: TaskId, owner: string, ttlMs: number): Promise<boolean> {
    if (!this.slot(taskId)) return false;
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
      if (l && l.owner === owner && this.slot(id)) {
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
      if (!this.slot(taskId)) {
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
    return l && l.until > this.now() && this.slot(taskId) ? l.owner : undefined;
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

  /** Always answers: the store is this process. */
  async ping(): Promise<void> {}

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    this.slots.clear();
    this.liveByPrincipal.clear();
    this.values.clear();
    this.leases.clear();
    this.events.removeAllListeners();
  }

  /** Now, in ms since the store's epoch (the unit of `Slot.expiresAt`). */
  private clock(): number {
    return this.now() - this.epoch;
  }

  /** The slot of an unexpired record; an expired one is dropped (with its lease) as it is seen. */
  private slot(taskId: TaskId): Slot | undefined {
    const s = this.slots.get(taskId);
    if (s === undefined) return undefined;
    if (s.expiresAt < this.clock()) {
      this.drop(taskId, s);
      return undefined;
    }
    return s;
  }

  /** Marks a record used: it moves to the most recently used end. */
  private touch(taskId: TaskId, s: Slot): void {
    this.slots.delete(taskId);
    this.slots.set(taskId, s);
  }

  /** Forgets a record, its lease and its place in the live index. */
  private drop(taskId: TaskId, s: Slot): void {
    this.slots.delete(taskId);
    this.leases.delete(taskId);
    this.unindex(s.record);
  }

  /**
   * Full: expired records go first (a sweep, at most once per `FULL_SWEEP_MS`: a store that stays full must not scan
   * every record on every create), then the least recently used finished one makes room; live tasks are never
   * evicted. Throws `StoreFullError` when nothing can go.
   */
  private makeRoom(): void {
    const now = this.clock();
    if (this.sweptAt === undefined || now - this.sweptAt >= FULL_SWEEP_MS) {
      this.sweep();
      if (this.slots.size < this.max) return;
    }
    for (const [id, s] of this.slots) {
      if (s.expiresAt < now || isTerminal(s.record.status)) {
        this.drop(id, s);
        return;
      }
    }
    throw new StoreFullError(this.max);
  }

  /** Drops every expired record (the periodic sweep: nothing else would free the ones nobody asks for again). */
  private sweep(): void {
    const now = this.clock();
    this.sweptAt = now;
    for (const [id, s] of this.slots) if (s.expiresAt < now) this.drop(id, s);
  }

  private index(r: TaskRecord): void {
    let ids = this.liveByPrincipal.get(r.principal);
    if (!ids) this.liveByPrincipal.set(r.principal, (ids = new Set()));
    ids.add(r.taskId);
  }

  private unindex(r: TaskRecord): void {
    const ids = this.liveByPrincipal.get(r.principal);
    if (!ids?.delete(r.taskId)) return;
    if (ids.size === 0) this.liveByPrincipal.delete(r.principal);
  }

  /**
   * The frozen copy that is stored (a reader never sees a half-applied change), its repeated strings shared with the
   * other records.
   */
  private stored(r: TaskRecord): TaskRecord {
    const c: TaskRecord = { ...r };
    const s = this.strings;
    c.principal = s.get(c.principal);
    c.upstream = s.get(c.upstream);
    c.tool = s.get(c.tool);
    if (c.owner !== undefined) c.owner = s.get(c.owner);
    if (c.session !== undefined) c.session = s.get(c.session);
    if (c.upstreamSession !== undefined) c.upstreamSession = s.get(c.upstreamSession);
    if (c.lastUpdatedAt === c.createdAt) c.lastUpdatedAt = c.createdAt;
    return Object.freeze(c);
  }
}
