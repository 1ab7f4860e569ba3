/**
 * Task record changes and their fan-out: every change goes through the store (atomic per record) and, when it
 * applied, is told to whoever listens (listen streams asking for `taskIds`, tasks extension §Task Status
 * Notifications). The lifecycles write records only through here.
 */
import { EventEmitter } from 'node:events';
import { isTerminal, type JsonObject, type JsonRpcErrorObject, type TaskId, type TaskRecord } from '../translate/index.js';
import type { TaskStore } from '../store/index.js';
import { nowIso } from './task-limits.js';

/** A task's terminal outcome. */
export type TaskOutcome =
  | { status: 'completed'; result: JsonObject }
  | { status: 'failed'; error: JsonRpcErrorObject }
  | { status: 'cancelled' };

/** Record changes of one gateway, and their listeners. */
export class TaskEvents {
  private readonly emitter = new EventEmitter();

  constructor(readonly store: TaskStore) {
    this.emitter.setMaxListeners(0);
  }

  /** Applies `fn` to the record (`undefined`: no change) and tells listeners when it applied. */
  async change(taskId: TaskId, fn: (t: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    // Whether the change applied is known from the change itself: no second read of the record.
    let applied = false;
    const after = await this.store.update(taskId, (t) => {
      const next = fn(t);
      applied = next !== undefined;
      return next;
    });
    if (after && applied) this.emitter.emit('task', after);
    return after;
  }

  /** Moves a task to its terminal state, unless it already is terminal. */
  finish(taskId: TaskId, outcome: TaskOutcome, statusMessage?: string): Promise<TaskRecord | undefined> {
    return this.change(taskId, (t) => {
      if (isTerminal(t.status)) return undefined;
      const { inputRequests: _i, result: _r, error: _e, ...rest } = t;
      const next: TaskRecord = { ...rest, status: outcome.status, lastUpdatedAt: nowIso() };
      if (outcome.status === 'completed') next.result = outcome.result;
      if (outcome.status === 'failed') next.error = outcome.error;
      if (statusMessage !== undefined) next.statusMessage = statusMessage;
      return next;
    });
  }

  /** Calls `listener` with every record change that applied; returns the remover. */
  on(listener: (t: TaskRecord) => void): () => void {
    this.emitter.on('task', listener);
    return () => this.emitter.off('task', listener);
  }

  /** Drops every listener (on shutdown). */
  close(): void {
    this.emitter.removeAllListeners();
  }
}
