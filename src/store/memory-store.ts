/** The in-process task store: an LRU with a bound on entries and a per-record TTL. */
import { LRUCache } from 'lru-cache';
import { isTerminal, type TaskId, type TaskRecord } from '../translate/index.js';
import { StoreFullError, type TaskListQuery, type TaskStore } from './task-store.js';

/** Memory store options. */
export interface MemoryStoreOptions {
  /** Most records kept; when full, the least recently used terminal one makes room. */
  maxTasks: number;
}

/** A `TaskStore` in this process's memory. */
export class MemoryTaskStore implements TaskStore {
  private readonly records: LRUCache<string, TaskRecord>;

  private readonly max: number;

  constructor(opts: MemoryStoreOptions) {
    this.max = opts.maxTasks;
    this.records = new LRUCache<string, TaskRecord>({
      // One spare slot: create() makes room itself, so the LRU's own eviction never drops a live task.
      max: opts.maxTasks + 1,
      ttlAutopurge: true,
      // Records are replaced, never mutated in place: a reader never sees a half-applied change.
      noUpdateTTL: true,
    });
  }

  async create(record: TaskRecord, retentionMs: number): Promise<void> {
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
    this.records.set(record.taskId, Object.freeze({ ...record }), { ttl: retentionMs });
  }

  async get(taskId: TaskId): Promise<TaskRecord | undefined> {
    return this.records.get(taskId);
  }

  async update(taskId: TaskId, change: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    const current = this.records.get(taskId);
    if (!current) return undefined;
    const next = change(current);
    if (!next) return current;
    const stored = Object.freeze({ ...next, version: current.version + 1 });
    this.records.set(taskId, stored); // noUpdateTTL keeps the retention counted from creation
    return stored;
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

  async close(): Promise<void> {
    this.records.clear();
  }
}
