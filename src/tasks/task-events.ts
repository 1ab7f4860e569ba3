/**
 * Task record changes and their fan-out: every change goes through the store (atomic per record) and, when it
 * applied, is told to whoever listens (listen streams asking for `taskIds`, tasks extension §Task Status
 * Notifications; a blocking 2025-11-25 `tasks/result`). Listeners hear the changes of every gateway instance sharing
 * the store: each applied change is published on the store's `task` topic, and the changes of other instances are
 * told to this instance's listeners as they arrive. The lifecycles write records only through here.
 */
import { EventEmitter } from 'node:events';
import { isObject, isTerminal, type JsonObject, type JsonRpcErrorObject, type TaskId, type TaskRecord } from '../translate/index.js';
import type { TaskStore } from '../store/index.js';
import { boundedOutcome, nowIso } from './task-limits.js';

/** A task's terminal outcome. */
export type TaskOutcome =
  | { status: 'completed'; result: JsonObject }
  | { status: 'failed'; error: JsonRpcErrorObject }
  | { status: 'cancelled' };

/** The store topic every instance publishes its applied record changes on. */
export const TASK_TOPIC = 'task';

/** How many tasks' last told versions are remembered (oldest forgotten first). */
const MAX_REMEMBERED_VERSIONS = 10_000;

/** Record changes of one gateway instance and of the others sharing its store, and their listeners. */
export class TaskEvents {
  private readonly emitter = new EventEmitter();
  private unsubscribe: (() => void) | undefined;
  private closed = false;
  /**
   * The last version told per task: changes of different instances may arrive out of order over the channel, and a
   * listener must never hear a task go back to an older state (a status notification of a stale status).
   */
  private readonly told = new Map<string, number>();

  constructor(
    readonly store: TaskStore,
    /** This instance's id: its own changes, told locally at once, are ignored when they come back from the store. */
    readonly instanceId: string,
    /** Largest terminal outcome a record keeps (`tasks.maxResultBytes`); a larger one is stored as a failure. */
    private readonly maxResultBytes = Infinity,
  ) {
    this.emitter.setMaxListeners(0);
  }

  /** Subscribes to the changes of other instances; resolves once they are delivered. */
  async start(): Promise<void> {
    if (this.unsubscribe || this.closed) return;
    const off = await this.store.subscribe(TASK_TOPIC, (m) => this.remote(m));
    if (this.closed) off();
    else this.unsubscribe = off;
  }

  /** Applies `fn` to the record (`undefined`: no change) and tells listeners when it applied. */
  async change(taskId: TaskId, fn: (t: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    // Whether the change applied is known from the change itself: no second read of the record.
    let applied = false;
    const after = await this.store.update(taskId, (t) => {
      // Every terminal write passes here: an outcome over the limit is never handed to the store.
      const proposed = fn(t);
      const next = proposed && boundedOutcome(proposed, this.maxResultBytes);
      applied = next !== undefined;
      return next;
    });
    if (after && applied) {
      this.tell(after);
      // The record is stored whatever becomes of the event: a lost publish delays another instance's listeners (a
      // blocking wait re-reads the record now and then), it does not undo the change.
      this.store.publish(TASK_TOPIC, { from: this.instanceId, record: after as unknown as JsonObject }).catch(() => {});
    }
    return after;
  }

  /** Moves a task to its terminal state, unless it already is terminal. */
  finish(taskId: TaskId, outcome: TaskOutcome, statusMessage?: string): Promise<TaskRecord | undefined> {
    return this.change(taskId, (t) => (isTerminal(t.status) ? undefined : finished(t, outcome, statusMessage)));
  }

  /** Calls `listener` with every record change that applied, here or on another instance; returns the remover. */
  on(listener: (t: TaskRecord) => void): () => void {
    this.emitter.on('task', listener);
    return () => this.emitter.off('task', listener);
  }

  /** Drops every listener and the subscription (on shutdown). Idempotent. */
  close(): void {
    this.closed = true;
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.emitter.removeAllListeners();
  }

  private remote(m: JsonObject): void {
    if (m.from === this.instanceId || !isObject(m.record)) return;
    const r = m.record;
    // Only what another instance of this gateway stored: a record has at least its id, status and version.
    if (typeof r.taskId !== 'string' || typeof r.status !== 'string' || typeof r.version !== 'number') return;
    this.tell(r as unknown as TaskRecord);
  }

  /** Tells listeners a change, unless a newer version of the task has been told already. */
  private tell(t: TaskRecord): void {
    const last = this.told.get(t.taskId);
    if (last !== undefined && last >= t.version) return;
    this.told.delete(t.taskId); // re-inserted last: the map's order is the order of last news
    if (!isTerminal(t.status)) this.told.set(t.taskId, t.version);
    else this.told.set(t.taskId, Number.MAX_SAFE_INTEGER); // terminal records never change again
    if (this.told.size > MAX_REMEMBERED_VERSIONS) {
      const oldest = this.told.keys().next();
      if (!oldest.done) this.told.delete(oldest.value);
    }
    this.emitter.emit('task', t);
  }
}

/** The record moved to `outcome`: its input requests and any earlier outcome dropped. */
export function finished(t: TaskRecord, outcome: TaskOutcome, statusMessage?: string): TaskRecord {
  const { inputRequests: _i, result: _r, error: _e, ...rest } = t;
  const next: TaskRecord = { ...rest, status: outcome.status, lastUpdatedAt: nowIso() };
  if (outcome.status === 'completed') next.result = outcome.result;
  if (outcome.status === 'failed') next.error = outcome.error;
  if (statusMessage !== undefined) next.statusMessage = statusMessage;
  return next;
}
