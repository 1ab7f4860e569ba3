/**
 * Task record changes and their fan-out: every change goes through the store (atomic per record) and, when it
 * applied, is told to whoever listens (listen streams asking for `taskIds`, tasks extension §Task Status
 * Notifications; a blocking 2025-11-25 `tasks/result`). Listeners hear the changes of every gateway instance sharing
 * the store: each applied change is published on the store's `task` topic, and the changes of other instances are
 * told to this instance's listeners as they arrive. The lifecycles write records only through here.
 */
import { EventEmitter } from 'node:events';
import {
  isObject,
  isTerminal,
  logFailure,
  NO_LOG,
  type JsonObject,
  type JsonRpcErrorObject,
  type LayerLogger,
  type TaskId,
  type TaskRecord,
} from '../../translate/index.js';
import type { TaskStore } from '../../store/index.js';
import { NO_AUDIT, type AuditFields, type AuditLog } from '../audit.js';
import { boundedOutcome, nowIso } from './task-limits.js';

/** A task's terminal outcome. */
export type TaskOutcome = { status: 'completed'; result: JsonObject } | { status: 'failed'; error: JsonRpcErrorObject } | { status: 'cancelled' };

/** The store topic every instance publishes its applied record changes on. */
export const TASK_TOPIC = 'task';

/** How many tasks' last told versions are remembered (oldest forgotten first). */
const MAX_REMEMBERED_VERSIONS = 10_000;

/** What the audit trail and the layer's log get (both default to nothing). */
export interface TaskEventsLogs {
  audit?: AuditLog;
  log?: LayerLogger;
}

/**
 * Records changes of one gateway instance and of the others sharing its store, and their listeners. The audit trail's
 * task events are recorded here, where every write of this instance passes: each by the instance that made the change
 * (changes heard from other instances are theirs to record).
 */
export class TaskEvents {
  /** The audit trail. */
  readonly audit: AuditLog;
  /** The runtime layer's log. */
  readonly log: LayerLogger;
  /**
   * The audit identity of the unfinished tasks this instance created or changed, so that an expiry noticed later (the
   * record is gone, and with it what it named) is recorded with them. Bounded like `told`.
   */
  private readonly unfinished = new Map<string, AuditFields>();
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
    logs: TaskEventsLogs = {},
    /** Largest terminal outcome a record keeps (`tasks.maxResultBytes`); a larger one is stored as a failure. */
    private maxResultBytes = Infinity,
  ) {
    this.emitter.setMaxListeners(0);
    this.audit = logs.audit ?? NO_AUDIT;
    this.log = logs.log ?? NO_LOG;
  }

  /** Replaces the largest outcome a record keeps (a reload); outcomes stored from now on are bounded by it. */
  setMaxResultBytes(bytes: number): void {
    this.maxResultBytes = bytes;
  }

  /** Records a task this instance just stored (and its first question, when it was created asking). */
  created(record: TaskRecord): void {
    this.audit.record('task.created', auditFieldsOf(record));
    this.audited(undefined, record);
  }

  /**
   * Records the expiry of a task this instance knew unfinished, once: its retention ended before it did (noticed by
   * the sweep of live work, or by a write that found the record gone). A task nobody here knew is not recorded.
   */
  expired(taskId: TaskId): void {
    const fields = this.unfinished.get(taskId);
    if (!fields) return;
    this.unfinished.delete(taskId);
    this.audit.record('task.expired', { ...fields, reason: 'ttl' });
  }

  /** Records an answer to a task's input requests (the keys answered, not their content). */
  answered(record: TaskRecord, keys: readonly string[]): void {
    if (keys.length > 0) this.audit.record('task.input_answered', auditFieldsOf(record));
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
    let before: TaskRecord | undefined;
    const after = await this.store.update(taskId, (t) => {
      // Every terminal write passes here: an outcome over the limit is never handed to the store.
      const proposed = fn(t);
      const next = proposed && boundedOutcome(proposed, this.maxResultBytes);
      applied = next !== undefined;
      before = t;
      return next;
    });
    // Gone: its retention ended (or it never was); recorded when this instance knew it unfinished.
    if (!after) this.expired(taskId);
    if (after && applied) {
      this.audited(before, after);
      this.tell(after);
      // The record is stored whatever becomes of the event: a lost publish delays another instance's listeners (a
      // blocking wait re-reads the record now and then), it does not undo the change.
      this.store
        .publish(TASK_TOPIC, { from: this.instanceId, record: after as unknown as JsonObject })
        .catch(logFailure(this.log, 'warn', 'task change not published to the other instances', { taskId }));
    }
    return after;
  }

  /** Moves a task to its terminal state, unless it already is terminal. */
  finish(taskId: TaskId, outcome: TaskOutcome, statusMessage?: string | null): Promise<TaskRecord | undefined> {
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

  /** Records what a change of this instance did to the task: a new question, or its end. */
  private audited(before: TaskRecord | undefined, after: TaskRecord): void {
    const fields = auditFieldsOf(after);
    if (isTerminal(after.status)) {
      this.unfinished.delete(after.taskId);
      if (before && isTerminal(before.status)) return;
      const event = after.status === 'completed' ? 'task.completed' : after.status === 'failed' ? 'task.failed' : 'task.cancelled';
      // A failure's reason is its JSON-RPC code only: its message may quote the upstream's answer.
      this.audit.record(event, after.status === 'failed' && after.error ? { ...fields, reason: String(after.error.code) } : fields);
      return;
    }
    this.unfinished.delete(after.taskId); // re-inserted last: the oldest are forgotten first
    this.unfinished.set(after.taskId, fields);
    if (this.unfinished.size > MAX_REMEMBERED_VERSIONS) {
      const oldest = this.unfinished.keys().next();
      if (!oldest.done) this.unfinished.delete(oldest.value);
    }
    if (after.status !== 'input_required') return;
    const old = before?.status === 'input_required' ? Object.keys(before.inputRequests ?? {}) : [];
    if (Object.keys(after.inputRequests ?? {}).some((k) => !old.includes(k))) this.audit.record('task.input_requested', fields);
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

/** What an audit line says about a task: who, where, which tool, which id, through which era; never its payload. */
function auditFieldsOf(t: TaskRecord): AuditFields {
  return { principal: t.principal, upstream: t.upstream, tool: t.tool, taskId: t.taskId, ...(t.origin ? { era: t.origin } : {}) };
}

/**
 * The record moved to `outcome`: its input requests and any earlier outcome dropped. `statusMessage` replaces the
 * record's; `null`: the final state has none, and an earlier one (the progress of a running task) is dropped too.
 */
export function finished(t: TaskRecord, outcome: TaskOutcome, statusMessage?: string | null): TaskRecord {
  const { inputRequests: _i, result: _r, error: _e, ...rest } = t;
  const next: TaskRecord = { ...rest, status: outcome.status, lastUpdatedAt: nowIso() };
  if (outcome.status === 'completed') next.result = outcome.result;
  if (outcome.status === 'failed') next.error = outcome.error;
  if (statusMessage === null) delete next.statusMessage;
  else if (statusMessage !== undefined) next.statusMessage = statusMessage;
  return next;
}
