/**
 * Proxied tasks: an upstream runs the task, whatever its era, and the gateway serves it under its own id to the client
 * that asked (a modern client as a tasks-extension task, a legacy client as a 2025-11-25 task). The upstream seam
 * follows the task (`UpstreamTask.next`: a legacy upstream's `tasks/result` stream and `tasks/get`, a modern
 * upstream's `tasks/get` polls); each state it reports is applied to the record, and the record's input, answers and
 * cancellation go back through the same `UpstreamTask` (tasks extension §Task Polling, §Input, §Cancellation;
 * 2025-11-25 basic/utilities/tasks §Task Status).
 */
import {
  ErrorCode,
  inlineResult,
  isTerminal,
  isValidInputResponse,
  modernError,
  type InputRequest,
  type JsonObject,
  type JsonRpcErrorObject,
  type TaskId,
  type TaskRecord,
} from '../translate/index.js';
import { UpstreamTaskLostError, type UpstreamTask, type UpstreamTaskSnapshot } from '../upstream/index.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from './route.js';
import type { TaskEvents, TaskOutcome } from './task-events.js';
import { clampTtl, mintTaskId, nowIso, TaskAlreadyTerminalError, TooManyTasksError, type TaskLimits } from './task-limits.js';

/** Who a task is created for, beyond the caller's principal. */
export interface TaskOrigin {
  tool: string;
  origin: 'legacy' | 'modern';
  /** The legacy face session of a caller without credentials. */
  session?: string;
}

interface ProxiedLive {
  task: UpstreamTask;
  /** Stops the follow loop. */
  stop: AbortController;
  lastPolled: number;
  /** Settles when the follow loop ends (the task is terminal, dropped, or lost). */
  followed: Promise<void>;
}

/** How often a broken follow loop asks the upstream again before the task is reported failed. */
const FOLLOW_ATTEMPTS = 3;

/** The proxied tasks of one gateway, and the upstream tasks they follow. */
export class ProxiedTasks {
  private readonly live = new Map<TaskId, ProxiedLive>();

  constructor(
    private readonly events: TaskEvents,
    private readonly limits: TaskLimits,
  ) {}

  /** Whether this lifecycle follows the task (it was adopted here and is not terminal yet). */
  has(taskId: TaskId): boolean {
    return this.live.has(taskId);
  }

  /**
   * Makes an upstream task a gateway task: stores its record (TTL from the upstream, clamped by the policy) and follows
   * it until it ends. On refusal (the principal's limit, a full store) the upstream task is cancelled, not orphaned.
   * `resync`: the task was followed since its creation (inside the creating request): start from its state now.
   */
  async adopt(
    route: UpstreamRoute,
    caller: CallerContext,
    policy: TaskPolicy,
    task: UpstreamTask,
    who: TaskOrigin,
    opts: { resync?: boolean } = {},
  ): Promise<TaskRecord> {
    const orphan = () => {
      void task.cancel().catch(() => {});
      task.release();
    };
    if ((await this.events.store.activeCount(caller.principal)) >= this.limits.maxActivePerPrincipal) {
      orphan();
      throw new TooManyTasksError(this.limits.maxActivePerPrincipal);
    }
    const c = task.created;
    const ttlMs = clampTtl(c.ttlMs, policy, this.limits.maxTtlMs);
    const now = nowIso();
    const requests = knownRequests(c);
    const record: TaskRecord = {
      taskId: mintTaskId(),
      principal: caller.principal,
      upstream: route.name,
      kind: 'proxied',
      upstreamTaskId: task.id,
      origin: who.origin,
      ...(who.session !== undefined ? { session: who.session } : {}),
      tool: who.tool,
      status: isTerminal(c.status) ? 'working' : statusOf(c, requests),
      ...(c.statusMessage !== undefined ? { statusMessage: c.statusMessage } : {}),
      ...(requests ? { inputRequests: requests } : {}),
      createdAt: c.createdAt ?? now,
      lastUpdatedAt: c.lastUpdatedAt ?? now,
      ttlMs,
      pollIntervalMs: c.pollIntervalMs ?? policy.pollIntervalMs ?? this.limits.defaultPollIntervalMs,
      version: 0,
    };
    try {
      await this.events.store.create(record, ttlMs);
    } catch (e) {
      orphan();
      throw e;
    }
    let settle!: () => void;
    const live: ProxiedLive = { task, stop: new AbortController(), lastPolled: Date.now(), followed: new Promise<void>((r) => (settle = r)) };
    this.live.set(record.taskId, live);
    // An upstream task that ended as it was created (an immediate shortcut) is applied at once.
    if (isTerminal(c.status)) await this.apply(record.taskId, c, who.origin);
    if (opts.resync) await this.refresh(record, true);
    void this.follow(record.taskId, live, who.origin).finally(settle);
    return (await this.events.store.get(record.taskId)) ?? record;
  }

  /**
   * Refreshes a live task from the upstream, at most once per poll interval unless `force` (the follow loop polls
   * once per interval too: at most two upstream reads per interval however often clients poll).
   */
  async refresh(record: TaskRecord, force = false): Promise<TaskRecord> {
    const live = this.live.get(record.taskId);
    if (!live || isTerminal(record.status)) return record;
    const minGap = record.pollIntervalMs ?? this.limits.defaultPollIntervalMs;
    if (!force && Date.now() - live.lastPolled < minGap) return record;
    live.lastPolled = Date.now();
    let snap: UpstreamTaskSnapshot;
    try {
      snap = await live.task.get();
    } catch (e) {
      if (e instanceof UpstreamTaskLostError) return (await this.lost(record.taskId)) ?? record;
      return record; // the upstream is unreachable now: report what is known
    }
    return (await this.apply(record.taskId, snap, record.origin ?? 'modern')) ?? record;
  }

  /**
   * Answers outstanding input requests by key (malformed answers are left outstanding, to be asked again); returns the
   * keys the upstream got. The record drops them before this resolves (read-your-writes, tasks extension §Input).
   */
  async answer(record: TaskRecord, responses: JsonObject): Promise<string[]> {
    const live = this.live.get(record.taskId);
    const outstanding = record.inputRequests ?? {};
    if (!live || isTerminal(record.status)) return [];
    const valid: JsonObject = {};
    for (const [key, request] of Object.entries(outstanding)) {
      if (Object.hasOwn(responses, key) && isValidInputResponse(request.method, responses[key])) valid[key] = responses[key] as JsonObject;
    }
    if (Object.keys(valid).length === 0) return [];
    const sent = await live.task.answer(valid);
    if (sent.length > 0) {
      await this.events.change(record.taskId, (t) => {
        if (isTerminal(t.status) || !t.inputRequests) return undefined;
        const { inputRequests: old, ...rest } = t;
        const remaining = Object.fromEntries(Object.entries(old).filter(([k]) => !sent.includes(k)));
        return Object.keys(remaining).length > 0
          ? { ...rest, inputRequests: remaining, lastUpdatedAt: nowIso() }
          : { ...rest, status: 'working', lastUpdatedAt: nowIso() };
      });
    }
    return sent;
  }

  /**
   * A modern `tasks/cancel`: asks the upstream to cancel and ends the record cancelled; a task that had already ended
   * upstream keeps its outcome (tasks extension §Cancellation: cooperative; 2025-11-25 basic/utilities/tasks §Task
   * Cancellation).
   */
  async cancel(record: TaskRecord): Promise<TaskRecord | undefined> {
    const live = this.live.get(record.taskId);
    if (live) {
      const answer = await live.task.cancel().catch(() => 'cancelled' as const);
      if (answer === 'terminal') {
        const ended = await this.settled(record, live);
        if (ended) return ended;
      }
    }
    return this.finish(record.taskId, { status: 'cancelled' }, 'Cancelled by the client');
  }

  /**
   * A 2025-11-25 `tasks/cancel`: `TaskAlreadyTerminalError` when the task has ended (asked of the upstream first);
   * otherwise cancelled upstream and the record `cancelled` before this resolves, whatever the upstream reports later
   * (2025-11-25 basic/utilities/tasks §Task Cancellation).
   */
  async cancelStrict(record: TaskRecord): Promise<TaskRecord> {
    const fresh = await this.refresh(record, true);
    if (isTerminal(fresh.status)) throw new TaskAlreadyTerminalError(fresh.status);
    const after = await this.cancel(fresh);
    if (!after) return fresh;
    if (after.status !== 'cancelled') throw new TaskAlreadyTerminalError(after.status);
    return after;
  }

  /** Stops following tasks whose record has expired: nobody can ask for them any more. */
  async sweep(): Promise<void> {
    for (const id of [...this.live.keys()]) {
      if (!(await this.events.store.get(id))) this.drop(id);
    }
  }

  /**
   * Takes over following a task whose lease this instance claimed (its follower stopped renewing it). Placeholder
   * until proxied tasks are followed across instances: the lease is dropped, the record left as it is.
   */
  async takeOver(record: TaskRecord): Promise<void> {
    await this.events.store.releaseLease(record.taskId, this.events.instanceId, 'drop');
  }

  /** Stops following every task (on shutdown; the upstream tasks run on). */
  close(): void {
    for (const id of [...this.live.keys()]) this.drop(id);
  }

  private drop(taskId: TaskId): void {
    const live = this.live.get(taskId);
    if (!live) return;
    this.live.delete(taskId);
    live.stop.abort();
    live.task.release();
  }

  /** A terminal task needs its upstream task no more. */
  private finish(taskId: TaskId, outcome: TaskOutcome, statusMessage?: string): Promise<TaskRecord | undefined> {
    this.drop(taskId);
    return this.events.finish(taskId, outcome, statusMessage);
  }

  /** The upstream's terminal state after it refused a cancel, applied; `undefined` if it does not say so. */
  private async settled(record: TaskRecord, live: ProxiedLive): Promise<TaskRecord | undefined> {
    try {
      const snap = await live.task.get();
      if (!isTerminal(snap.status)) return undefined;
      return this.apply(record.taskId, snap, record.origin ?? 'modern');
    } catch {
      return undefined;
    }
  }

  private lost(taskId: TaskId): Promise<TaskRecord | undefined> {
    const error: JsonRpcErrorObject = { code: ErrorCode.InternalError, message: 'The upstream no longer knows this task' };
    return this.finish(taskId, { status: 'failed', error }, error.message);
  }

  /**
   * One upstream state applied to the record: status, statusMessage and input requests, or the terminal outcome.
   * `input_required` only once a request is known (tasks extension §Task Polling: such a task carries `inputRequests`).
   */
  private async apply(taskId: TaskId, snap: UpstreamTaskSnapshot, origin: 'legacy' | 'modern'): Promise<TaskRecord | undefined> {
    if (isTerminal(snap.status)) return this.finish(taskId, outcomeOf(snap, origin), snap.statusMessage);
    const requests = knownRequests(snap);
    return this.events.change(taskId, (t) => {
      if (isTerminal(t.status)) return undefined;
      const status = statusOf(snap, requests);
      const sameRequests = sameKeys(t.inputRequests, requests);
      if (status === t.status && snap.statusMessage === t.statusMessage && sameRequests) return undefined;
      const { inputRequests: _old, statusMessage: _m, ...rest } = t;
      return {
        ...rest,
        status,
        ...(snap.statusMessage !== undefined ? { statusMessage: snap.statusMessage } : {}),
        ...(requests ? { inputRequests: requests } : {}),
        lastUpdatedAt: nowIso(),
      };
    });
  }

  /** Applies each state the upstream task reports until it ends, is dropped, or is lost. */
  private async follow(taskId: TaskId, live: ProxiedLive, origin: 'legacy' | 'modern'): Promise<void> {
    let failures = 0;
    while (!live.stop.signal.aborted) {
      let snap: UpstreamTaskSnapshot | undefined;
      try {
        snap = await live.task.next(live.stop.signal);
        failures = 0;
      } catch (e) {
        if (live.stop.signal.aborted) return;
        if (e instanceof UpstreamTaskLostError) {
          await this.lost(taskId);
          return;
        }
        // The seam retries its own waits; a failure that reaches here repeatedly means the upstream is gone.
        if (++failures >= FOLLOW_ATTEMPTS) {
          const message = `Upstream unavailable: ${(e as Error).message}`;
          await this.finish(taskId, { status: 'failed', error: { code: ErrorCode.InternalError, message } }, message);
          return;
        }
        continue;
      }
      if (!snap) return;
      const after = await this.apply(taskId, snap, origin);
      if (!after || isTerminal(after.status)) {
        this.drop(taskId);
        return;
      }
    }
  }
}

/** The terminal outcome of an upstream state; a modern client's error re-coded for its era. */
function outcomeOf(snap: UpstreamTaskSnapshot, origin: 'legacy' | 'modern'): TaskOutcome {
  if (snap.status === 'completed') return { status: 'completed', result: inlineResult(snap.result ?? { content: [] }) };
  if (snap.status === 'failed') {
    const error = snap.error ?? { code: ErrorCode.InternalError, message: snap.statusMessage ?? 'Task failed' };
    return { status: 'failed', error: origin === 'modern' ? modernError(error) : error };
  }
  return { status: 'cancelled' };
}

function knownRequests(snap: UpstreamTaskSnapshot): Record<string, InputRequest> | undefined {
  return snap.inputRequests && Object.keys(snap.inputRequests).length > 0 ? snap.inputRequests : undefined;
}

/** A live status: `input_required` exactly when input requests are known. */
function statusOf(snap: UpstreamTaskSnapshot, requests: Record<string, InputRequest> | undefined): TaskRecord['status'] {
  if (requests) return 'input_required';
  return snap.status === 'input_required' ? 'working' : snap.status;
}

function sameKeys(a: Record<string, unknown> | undefined, b: Record<string, unknown> | undefined): boolean {
  const ka = Object.keys(a ?? {});
  const kb = Object.keys(b ?? {});
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b ?? {}, k));
}
