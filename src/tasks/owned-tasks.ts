/**
 * Gateway-owned tasks (README §Tasks, wrapped tools): a synchronous upstream call that outlived its window keeps
 * running in the background as a task the gateway itself serves. Its input requests become the task's
 * `inputRequests`, its progress the task's `statusMessage`, its response the task's outcome.
 */
import {
  ErrorCode,
  asErrorObject,
  isObject,
  isTerminal,
  modernError,
  modernResult,
  outcomeFromPayload,
  type JsonObject,
  type JsonRpcNotification,
  type TaskId,
  type TaskRecord,
} from '../translate/index.js';
import { UpstreamTimeoutError } from '../upstream/index.js';
import { Conversation } from './conversation.js';
import type { TaskOrigin } from './proxied-tasks.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from './route.js';
import type { TaskEvents } from './task-events.js';
import { clampTtl, mintTaskId, nowIso, TaskAlreadyTerminalError, TooManyTasksError, type TaskLimits } from './task-limits.js';

const TIMED_OUT = 'The upstream call timed out';

interface OwnedLive {
  conv: Conversation;
  stop: AbortController;
}

/** The owned tasks of one gateway, and their running calls. */
export class OwnedTasks {
  private readonly live = new Map<TaskId, OwnedLive>();

  constructor(
    private readonly events: TaskEvents,
    private readonly limits: TaskLimits,
  ) {}

  /** Whether the principal may start one more task now. */
  async atLimit(principal: string): Promise<boolean> {
    return (await this.events.store.activeCount(principal)) >= this.limits.maxActivePerPrincipal;
  }

  /**
   * Makes a running call a task: stores its record (readable before this resolves) and runs the call in the
   * background. `ttlMs`: the client's requested retention (a 2025-11-25 `task.ttl`), clamped by the policy.
   */
  async adopt(route: UpstreamRoute, caller: CallerContext, policy: TaskPolicy, conv: Conversation, who: TaskOrigin, requestedTtlMs?: number): Promise<TaskRecord> {
    if (await this.atLimit(caller.principal)) {
      conv.cancel('too many active tasks');
      throw new TooManyTasksError(this.limits.maxActivePerPrincipal);
    }
    const ttlMs = clampTtl(requestedTtlMs ?? policy.ttlMs ?? this.limits.defaultTtlMs, policy, this.limits.maxTtlMs);
    const now = nowIso();
    const inputRequests = conv.inputRequests();
    const asking = Object.keys(inputRequests).length > 0;
    const record: TaskRecord = {
      taskId: mintTaskId(),
      principal: caller.principal,
      upstream: route.name,
      kind: 'owned',
      origin: who.origin,
      ...(who.session !== undefined ? { session: who.session } : {}),
      tool: who.tool,
      status: asking ? 'input_required' : 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs,
      pollIntervalMs: policy.pollIntervalMs ?? this.limits.defaultPollIntervalMs,
      ...(asking ? { inputRequests } : {}),
      version: 0,
    };
    // Tasks extension §Task Creation: the task must be readable before the CreateTaskResult is sent.
    try {
      await this.events.store.create(record, ttlMs);
    } catch (e) {
      conv.cancel('the task could not be stored');
      throw e;
    }
    const stop = new AbortController();
    this.live.set(record.taskId, { conv, stop });
    // The call may run for its budget, and never past the task's retention (nobody could read the outcome).
    const timeoutAt = Date.now() + Math.min(policy.timeoutMs ?? route.timeoutMs, ttlMs);
    const running = this.run(route, record.taskId, conv, caller, stop.signal, timeoutAt);
    // A call that has already answered (an immediate result) completes its task before the task is handed out.
    if (conv.call.finished) {
      await running;
      return (await this.events.store.get(record.taskId)) ?? record;
    }
    return record;
  }

  /**
   * Answers a live task's outstanding input requests (unknown, answered or malformed keys ignored); the record drops
   * the answered ones before this resolves (read-your-writes, tasks extension §Input). Returns the keys answered.
   */
  async answer(record: TaskRecord, responses: JsonObject): Promise<string[]> {
    const conv = this.live.get(record.taskId)?.conv;
    if (!conv || isTerminal(record.status)) return [];
    const answered = await conv.answer(responses);
    if (answered.length > 0) {
      await this.events.change(record.taskId, (t) => {
        if (isTerminal(t.status)) return undefined;
        const remaining = conv.inputRequests();
        const { inputRequests: _old, ...rest } = t;
        return Object.keys(remaining).length > 0
          ? { ...rest, inputRequests: remaining, lastUpdatedAt: nowIso() }
          : { ...rest, status: 'working', lastUpdatedAt: nowIso() };
      });
    }
    return answered;
  }

  /** Cancels a task: its call stopped and cancelled upstream, the record `cancelled` (unless it had already ended). */
  cancel(record: TaskRecord): Promise<TaskRecord | undefined> {
    this.stop(record.taskId, 'task cancelled by the client');
    return this.events.finish(record.taskId, { status: 'cancelled' }, 'Cancelled by the client');
  }

  /** A 2025-11-25 `tasks/cancel`: `TaskAlreadyTerminalError` for a task that has ended, else `cancel`. */
  async cancelStrict(record: TaskRecord): Promise<TaskRecord> {
    if (isTerminal(record.status)) throw new TaskAlreadyTerminalError(record.status);
    const after = await this.cancel(record);
    if (after && after.status !== 'cancelled') throw new TaskAlreadyTerminalError(after.status);
    return after ?? record;
  }

  /** Stops a task's call and cancels it upstream (the record is the caller's to finish). */
  stop(taskId: TaskId, reason: string): void {
    const live = this.live.get(taskId);
    if (!live) return;
    this.live.delete(taskId);
    live.stop.abort();
    live.conv.cancel(reason);
  }

  /** Stops the calls of tasks whose record has expired: nobody can ask for them any more. */
  async sweep(): Promise<void> {
    for (const id of [...this.live.keys()]) {
      if (!(await this.events.store.get(id))) this.stop(id, 'task expired');
    }
  }

  /** Stops every call (on shutdown). */
  close(): void {
    for (const id of [...this.live.keys()]) this.stop(id, 'gateway shutting down');
  }

  private async run(route: UpstreamRoute, taskId: TaskId, first: Conversation, caller: CallerContext, stop: AbortSignal, timeoutAt: number): Promise<void> {
    let conv = first;
    try {
      for (;;) {
        const r = await conv.pump({
          signal: stop,
          capabilities: caller.capabilities,
          inputAllowed: true,
          onUndeclared: 'refuse',
          deadlineAt: timeoutAt,
          gatherMs: this.limits.gatherMs,
          notify: (n) => void this.progress(taskId, n),
        });
        if (r.kind === 'aborted') return;
        if (r.kind === 'task') {
          // The upstream made its own task after all (a modern upstream decides per call, tasks extension §Task
          // Creation): this task follows it as an ordinary call, its questions and outcome this task's.
          conv = Conversation.following(r.task);
          const live = this.live.get(taskId);
          if (live) live.conv = conv;
          continue;
        }
        if (r.kind === 'input') {
          await this.events.change(taskId, (t) => (isTerminal(t.status) ? undefined : { ...t, status: 'input_required', inputRequests: conv.inputRequests(), lastUpdatedAt: nowIso() }));
          continue;
        }
        if (r.kind === 'deadline') {
          conv.cancel('task timed out');
          await this.events.finish(taskId, { status: 'failed', error: { code: ErrorCode.InternalError, message: TIMED_OUT } }, TIMED_OUT);
          return;
        }
        const m = r.message;
        if ('error' in m) {
          await this.events.finish(taskId, { status: 'failed', error: modernError(asErrorObject(m.error)) }, asErrorObject(m.error).message);
        } else {
          const identity = route.upstream.knownIdentity;
          const result = modernResult('tools/call', isObject(m.result) ? m.result : {}, { cache: route.cache, ...(identity ? { serverInfo: identity.serverInfo } : {}) });
          await this.events.finish(taskId, outcomeFromPayload({ result }));
        }
        return;
      }
    } catch (e) {
      if (stop.aborted) return;
      conv.cancel('gateway error');
      // The upstream's own budget may end the call before the task's does (its headers did not come in time).
      const message = e instanceof UpstreamTimeoutError ? TIMED_OUT : `Upstream unavailable: ${(e as Error).message}`;
      await this.events.finish(taskId, { status: 'failed', error: { code: ErrorCode.InternalError, message } }, message);
    } finally {
      if (this.live.get(taskId)?.conv === conv) this.live.delete(taskId);
    }
  }

  /** Progress of the task's call becomes its statusMessage (progress is not relayed for tasks, tasks extension). */
  private async progress(taskId: TaskId, n: JsonRpcNotification): Promise<void> {
    if (n.method !== 'notifications/progress' || !isObject(n.params)) return;
    const p = n.params;
    const message = typeof p.message === 'string' ? p.message : typeof p.total === 'number' ? `${p.progress}/${p.total}` : `${p.progress}`;
    await this.events.change(taskId, (t) => (isTerminal(t.status) || t.statusMessage === message ? undefined : { ...t, statusMessage: message, lastUpdatedAt: nowIso() }));
  }
}
