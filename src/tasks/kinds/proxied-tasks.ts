/**
 * Proxied tasks: an upstream runs the task, whatever its era, and the gateway serves it under its own id to the client
 * that asked (a modern client as a tasks-extension task, a legacy client as a 2025-11-25 task). The upstream seam
 * follows the task (`UpstreamTask.next`: a legacy upstream's `tasks/result` stream and `tasks/get`, a modern
 * upstream's `tasks/get` polls); each state it reports is applied to the record, and the record's input, answers and
 * cancellation go back through the same `UpstreamTask` (tasks extension §Task Polling, §Input, §Cancellation;
 * 2025-11-25 basic/utilities/tasks §Task Status).
 *
 * Across instances sharing the store: exactly one instance follows each task (its `owner`, holding the task's lease);
 * the record keeps what any other instance needs to reach the upstream task (its id, the legacy session it lives in,
 * and the caller sealed with the shared secret). An instance that does not follow a task serves a poll, an answer or
 * a cancel with a transient `UpstreamTask` resumed from that ref, except answers to a legacy upstream's questions:
 * those were asked on the follower's `tasks/result` stream, so the follower sends them (over the instance bus). When
 * the follower disappears, the instance whose reaper claims its lease takes the task over (`takeOver`).
 */
import {
  catalogAnswer,
  inlineResult,
  isTerminal,
  isValidInputResponse,
  modernError,
  logFailure,
  type InputRequest,
  type JsonObject,
  type TaskId,
  type TaskRecord,
  catalogError,
  taskFailure,
} from '../../translate/index.js';
import { UpstreamTaskLostError, type UpstreamCaller, type UpstreamTask, type UpstreamTaskSnapshot } from '../../upstream/index.js';
import type { InstanceBus } from '../instances/instance-bus.js';
import { ProxiedReach, type TaskAccess } from './proxied-reach.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from '../route.js';
import { JobTask } from '../jobs/job-task.js';
import type { Sealer } from '../instances/sealing.js';
import type { TaskEvents, TaskOutcome } from '../records/task-events.js';

export type { TaskAccess } from './proxied-reach.js';
import { clampTtl, mintTaskId, nowIso, TaskAlreadyTerminalError, TooManyTasksError, upstreamFailureMessage, type TaskLimits } from '../records/task-limits.js';

/** Who a task is created for, beyond the caller's principal. */
export interface TaskOrigin {
  tool: string;
  origin: 'legacy' | 'modern';
  /** The legacy face session of a caller without credentials. */
  session?: string;
}

/** Who this lifecycle is among the instances sharing the store. */
export interface ProxiedTasksOptions {
  /** This instance's id: the `owner` of the tasks it follows, the holder of their leases. */
  instanceId: string;
  /** Seals the caller into the record, for an instance that acts on the task without a request (a takeover). */
  sealer: Sealer;
  /** Asks the follower of a task to send answers to its upstream (absent: one instance, nobody to ask). */
  bus?: InstanceBus;
  /** How long a follower's lease lasts unless renewed (the runtime's renewal loop renews `liveIds()`). */
  leaseMs: number;
  /**
   * A job task (`record.job`, rule `task: job`) resumed from its record for `caller`: its handle and rule reach the
   * job from any instance. Absent: job records cannot be resumed here.
   */
  jobTask?: (record: TaskRecord, route: UpstreamRoute, caller: UpstreamCaller, snapshot: UpstreamTaskSnapshot) => UpstreamTask | undefined;
}

interface ProxiedLive {
  task: UpstreamTask;
  /** Stops the follow loop. */
  stop: AbortController;
  /** Settles when the follow loop ends (the task is terminal, dropped, or lost). */
  followed: Promise<void>;
  /**
   * Input keys outstanding when this instance took the task over from a follower that disappeared: a 2025-11-25
   * server sends a queued request on one `tasks/result` only, so those asked on the lost follower's stream are not
   * asked again, and the record says so once the resumed task shows they are gone.
   */
  inheritedKeys?: string[];
  /** Input keys the upstream task has asked so far, and in how many rounds (`input.maxRoundsPerTask`). */
  asked?: { keys: Set<string>; rounds: number };
}

/** How often a broken follow loop asks the upstream again before the task is reported failed. */
const FOLLOW_ATTEMPTS = 3;

/** How long the follow loop waits before writing again to a store that could not be reached. */
const STORE_RETRY_MS = 1_000;

/** What the record says when input asked before a takeover is gone (see `ProxiedLive.inheritedKeys`). */
const LOST_INPUT_MESSAGE =
  'Input requested before another gateway instance took this task over was lost with the instance that followed it; the upstream task may wait for it ' +
  'until its own timeout';

/** The proxied tasks of one gateway, and the upstream tasks they follow. */
export class ProxiedTasks {
  private readonly live = new Map<TaskId, ProxiedLive>();
  /** Routes, sealed callers, transient tasks and forwarded answers: what reaches a task this instance does not follow. */
  private readonly reach: ProxiedReach;

  constructor(
    private readonly events: TaskEvents,
    private readonly limits: TaskLimits,
    private readonly o: ProxiedTasksOptions,
  ) {
    this.reach = new ProxiedReach({
      instanceId: o.instanceId,
      sealer: o.sealer,
      ...(o.bus ? { bus: o.bus } : {}),
      ...(o.jobTask ? { jobTask: o.jobTask } : {}),
    });
    this.reach.serveAnswers(async (taskId, responses) => {
      const record = await this.events.store.get(taskId);
      // Only the follower holds the stream the questions came on; anything else answers nothing.
      if (!record || !this.live.has(record.taskId)) return [];
      return this.answer(record, responses);
    });
  }

  /** This instance's id (the `owner` of the tasks it follows). */
  get instanceId(): string {
    return this.o.instanceId;
  }

  /** Whether the store is shared with other instances (then tasks carry a lease and their sealed caller). */
  private get shared(): boolean {
    return this.events.store.scope === 'shared';
  }

  /** The tasks this instance follows (the runtime renews their leases while they are). */
  liveIds(): TaskId[] {
    return [...this.live.keys()];
  }

  /** The lease on a followed task was lost (another instance holds it now): stop following, leave its lease alone. */
  leaseLost(taskId: TaskId): void {
    this.drop(taskId, 'none');
  }

  /** Makes a route known for takeovers (routes are otherwise seen only with requests). */
  knowRoute(route: UpstreamRoute): void {
    this.reach.knowRoute(route);
  }

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
      void task.cancel().catch(logFailure(this.events.log, 'debug', 'upstream task not cancelled after its adoption failed'));
      task.release();
    };
    if ((await this.events.store.activeCount(caller.principal)) >= this.limits.maxActivePerPrincipal) {
      orphan();
      throw new TooManyTasksError(this.limits.maxActivePerPrincipal);
    }
    this.knowRoute(route);
    const c = task.created;
    const ttlMs = clampTtl(c.ttlMs, policy, this.limits.maxTtlMs);
    const now = nowIso();
    const requests = knownRequests(c);
    const ref = task.ref;
    const record: TaskRecord = {
      taskId: mintTaskId(),
      principal: caller.principal,
      upstream: route.name,
      kind: 'proxied',
      upstreamTaskId: ref.id,
      ...(ref.session !== undefined ? { upstreamSession: ref.session } : {}),
      // A job: its handle and rule, for any instance to go on polling it (the start tool is never called again).
      ...(task instanceof JobTask ? { job: task.job } : {}),
      owner: this.o.instanceId,
      // What another instance needs to act for the caller without a request of its own (a takeover).
      ...(this.shared ? { sealed: this.reach.seal(caller, route) } : {}),
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
      // This instance follows it: the lease, stored with the record, says so to the others and lapses if this instance
      // disappears.
      await this.events.store.create(record, ttlMs, this.shared ? { owner: this.o.instanceId, ttlMs: this.o.leaseMs } : undefined);
    } catch (e) {
      orphan();
      throw e;
    }
    this.events.created(record);
    let settle!: () => void;
    const live: ProxiedLive = { task, stop: new AbortController(), followed: new Promise<void>((r) => (settle = r)) };
    this.live.set(record.taskId, live);
    // An upstream task that ended as it was created (an immediate shortcut) is applied at once.
    if (isTerminal(c.status)) await this.apply(record.taskId, c, who.origin);
    if (opts.resync) await this.refresh(record, true);
    void this.follow(record.taskId, live, who.origin)
      .catch(logFailure(this.events.log, 'warn', 'following an upstream task failed', { taskId: record.taskId }))
      .finally(settle);
    return (await this.events.store.get(record.taskId)) ?? record;
  }

  /**
   * Refreshes a task from the upstream unless `force` only when the upstream's poll interval has passed since it was
   * last asked: a followed task shares that clock with its follow loop (`UpstreamTask.pollDue`), so the upstream sees
   * one `tasks/get` per interval at most however often clients poll, and a faster client gets the record as last read.
   * A task this instance does not follow is asked through a transient task resumed from the record's ref, on behalf of
   * `access.caller` (or the sealed caller), at most once per interval per instance (with several instances, each may
   * add one such read per interval to the follower's); the follower's input requests are left as the record has them.
   */
  async refresh(record: TaskRecord, force = false, access: TaskAccess = {}): Promise<TaskRecord> {
    if (isTerminal(record.status)) return record;
    const minGap = record.pollIntervalMs ?? this.limits.defaultPollIntervalMs;
    const live = this.live.get(record.taskId);
    if (live) {
      if (!force && !live.task.pollDue()) return record;
      let snap: UpstreamTaskSnapshot;
      try {
        snap = await live.task.get();
      } catch (e) {
        if (e instanceof UpstreamTaskLostError) return (await this.lost(record.taskId)) ?? record;
        return record; // the upstream is unreachable now: report what is known
      }
      return (await this.apply(record.taskId, snap, record.origin ?? 'modern')) ?? record;
    }
    if (!force && this.reach.polledWithin(record.taskId, minGap)) return record;
    const route = this.reach.routeOf(record, access);
    const task = route && this.reach.transient(record, route, access.caller);
    if (!route || !task) return record;
    this.reach.notePoll(record.taskId);
    try {
      const snap = await task.get();
      return (await this.apply(record.taskId, snap, record.origin ?? 'modern', { inputElsewhere: route.upstream.era === 'legacy' })) ?? record;
    } catch (e) {
      if (e instanceof UpstreamTaskLostError) return (await this.lost(record.taskId)) ?? record;
      return record;
    } finally {
      task.release();
    }
  }

  /**
   * Answers outstanding input requests by key (malformed answers are left outstanding, to be asked again); returns the
   * keys the upstream got. The record drops them before this resolves (read-your-writes, tasks extension §Input).
   */
  async answer(record: TaskRecord, responses: JsonObject, access: TaskAccess = {}): Promise<string[]> {
    const live = this.live.get(record.taskId);
    const outstanding = record.inputRequests ?? {};
    if (isTerminal(record.status)) return [];
    const valid: JsonObject = {};
    for (const [key, request] of Object.entries(outstanding)) {
      if (Object.hasOwn(responses, key) && isValidInputResponse(request.method, responses[key])) valid[key] = responses[key] as JsonObject;
    }
    if (Object.keys(valid).length === 0) return [];
    let sent: string[];
    if (live) sent = await live.task.answer(valid);
    else {
      const route = this.reach.routeOf(record, access);
      if (!route) return [];
      // A 2025-11-25 task's questions were asked on its follower's tasks/result stream, and only an answer in reply to
      // that request reaches the task (2025-11-25 basic/utilities/tasks §Input Required Status): the follower sends it,
      // and has dropped the keys from the record before it replies. A modern task takes tasks/update from anyone.
      if (route.upstream.era === 'legacy') return this.reach.forwardAnswer(record, valid);
      const task = this.reach.transient(record, route, access.caller);
      if (!task) return [];
      try {
        sent = await task.answer(valid);
      } finally {
        task.release();
      }
    }
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
  async cancel(record: TaskRecord, access: TaskAccess = {}): Promise<TaskRecord | undefined> {
    const live = this.live.get(record.taskId);
    const route = live ? undefined : this.reach.routeOf(record, access);
    const task = live?.task ?? (route && this.reach.transient(record, route, access.caller));
    if (task) {
      try {
        const answer = await task.cancel().catch(() => 'cancelled' as const);
        if (answer === 'terminal') {
          const ended = await this.settled(record, task);
          if (ended) return ended;
        }
      } finally {
        if (!live) task.release();
      }
    }
    return this.finish(record.taskId, { status: 'cancelled' }, 'Cancelled by the client');
  }

  /**
   * A 2025-11-25 `tasks/cancel`: `TaskAlreadyTerminalError` when the task has ended (asked of the upstream first);
   * otherwise cancelled upstream and the record `cancelled` before this resolves, whatever the upstream reports later
   * (2025-11-25 basic/utilities/tasks §Task Cancellation).
   */
  async cancelStrict(record: TaskRecord, access: TaskAccess = {}): Promise<TaskRecord> {
    const fresh = await this.refresh(record, true, access);
    if (isTerminal(fresh.status)) throw new TaskAlreadyTerminalError(fresh.status);
    const after = await this.cancel(fresh, access);
    if (!after) return fresh;
    if (after.status !== 'cancelled') throw new TaskAlreadyTerminalError(after.status);
    return after;
  }

  /**
   * Follows a task whose follower disappeared: the reaper on this instance claimed its lease. The sealed caller reaches
   * the upstream task from the record's ref (a legacy upstream's session joined by id); the record names this instance
   * its owner; from then on the task is followed as `adopt` follows it (a legacy task's `tasks/result` is opened in the
   * joined session, where a server that re-sends pending input asks it again). A task that cannot be reached any more
   * (no route, no caller, the upstream lost it) ends `failed`. Resolves whether this instance now follows it.
   */
  async takeOver(record: TaskRecord, route?: UpstreamRoute): Promise<boolean> {
    const taskId = record.taskId;
    if (record.kind !== 'proxied' || isTerminal(record.status) || this.live.has(taskId)) return this.live.has(taskId);
    const r = route ?? this.reach.routeOf(record, {});
    if (r) this.knowRoute(r);
    const caller = this.reach.sealedCaller(record);
    const task = r && caller && this.reach.transient(record, r, caller);
    if (!task) {
      const error = catalogError('GW_TASK_UNREACHABLE');
      await this.events.finish(taskId, { status: 'failed', error }, error.message);
      await this.events.store
        .releaseLease(taskId, this.o.instanceId, 'drop')
        .catch(logFailure(this.events.log, 'debug', 'lease not released; it lapses', { taskId }));
      return false;
    }
    const after = await this.events.change(taskId, (t) =>
      isTerminal(t.status) || t.owner === this.o.instanceId ? undefined : { ...t, owner: this.o.instanceId },
    );
    if (!after || isTerminal(after.status)) {
      task.release();
      await this.events.store
        .releaseLease(taskId, this.o.instanceId, 'drop')
        .catch(logFailure(this.events.log, 'debug', 'lease not released; it lapses', { taskId }));
      return false;
    }
    let settle!: () => void;
    const inherited = r.upstream.era === 'legacy' ? Object.keys(after.inputRequests ?? {}) : [];
    const live: ProxiedLive = {
      task,
      stop: new AbortController(),
      followed: new Promise<void>((res) => (settle = res)),
      ...(inherited.length > 0 ? { inheritedKeys: inherited } : {}),
    };
    this.live.set(taskId, live);
    // The resumed task starts from what this instance knows of it (a legacy task: no input yet, see inheritedKeys);
    // the follow loop reports what differs from that.
    if (inherited.length > 0) await this.apply(taskId, task.created, after.origin ?? 'modern');
    void this.follow(taskId, live, after.origin ?? 'modern')
      .catch(logFailure(this.events.log, 'warn', 'following an upstream task failed', { taskId }))
      .finally(settle);
    return true;
  }

  /** Stops following tasks whose record has expired: nobody can ask for them any more. */
  async sweep(): Promise<void> {
    for (const id of [...this.live.keys()]) {
      if (await this.events.store.get(id)) continue;
      this.drop(id, 'drop');
      this.events.expired(id);
    }
    // Remembered polls of tasks no longer polled are let go (bounded anyway).
    const cutoff = Date.now() - 10 * this.limits.defaultPollIntervalMs;
    this.reach.forgetPollsBefore(cutoff);
  }

  /**
   * Stops following every task (on shutdown; the upstream tasks run on) and hands their leases over at once, so that
   * another instance takes them over without waiting for the leases to lapse.
   */
  async close(): Promise<void> {
    const ids = [...this.live.keys()];
    for (const id of ids) this.drop(id, 'none');
    if (!this.shared) return;
    await Promise.all(
      ids.map((id) =>
        this.events.store
          .releaseLease(id, this.o.instanceId, 'handover')
          .catch(logFailure(this.events.log, 'debug', 'lease not handed over on shutdown; it lapses', { taskId: id })),
      ),
    );
  }

  /** Stops following a task; `lease`: what becomes of this instance's lease on it. */
  private drop(taskId: TaskId, lease: 'drop' | 'handover' | 'none'): void {
    const live = this.live.get(taskId);
    if (!live) return;
    this.live.delete(taskId);
    live.stop.abort();
    live.task.release();
    if (lease !== 'none' && this.shared) {
      void this.events.store
        .releaseLease(taskId, this.o.instanceId, lease)
        .catch(logFailure(this.events.log, 'debug', 'lease not released; it lapses', { taskId, lease }));
    }
  }

  /**
   * A terminal task needs its upstream task no more, once its record says so: a write that fails (the store is down)
   * leaves it followed, so that the outcome is written when the store is back.
   */
  private async finish(taskId: TaskId, outcome: TaskOutcome, statusMessage?: string | null): Promise<TaskRecord | undefined> {
    const after = await this.events.finish(taskId, outcome, statusMessage);
    this.drop(taskId, 'drop');
    return after;
  }

  /**
   * A write of the follow loop, waiting out a store that cannot be reached now (StoreUnavailableError: never a crash of
   * the instance, never a hot loop): the upstream task's state is written once the store is back. `undefined` when
   * the task stopped being followed meanwhile.
   */
  private async written<T>(live: ProxiedLive, write: () => Promise<T>): Promise<T | undefined> {
    for (;;) {
      try {
        return await write();
      } catch {
        if (live.stop.signal.aborted) return undefined;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, STORE_RETRY_MS);
          timer.unref();
          live.stop.signal.addEventListener('abort', done, { once: true });
          function done() {
            clearTimeout(timer);
            live.stop.signal.removeEventListener('abort', done);
            resolve();
          }
        });
        if (live.stop.signal.aborted) return undefined;
      }
    }
  }

  /** The upstream's terminal state after it refused a cancel, applied; `undefined` if it does not say so. */
  private async settled(record: TaskRecord, task: UpstreamTask): Promise<TaskRecord | undefined> {
    try {
      const snap = await task.get();
      if (!isTerminal(snap.status)) return undefined;
      return this.apply(record.taskId, snap, record.origin ?? 'modern');
    } catch {
      return undefined;
    }
  }

  private lost(taskId: TaskId): Promise<TaskRecord | undefined> {
    const error = catalogError('GW_UPSTREAM_TASK_LOST');
    return this.finish(taskId, { status: 'failed', error }, error.message);
  }

  /**
   * One upstream state applied to the record: status, statusMessage and input requests, or the terminal outcome.
   * `input_required` only once a request is known (tasks extension §Task Polling: such a task carries `inputRequests`).
   */
  private async apply(
    taskId: TaskId,
    snap: UpstreamTaskSnapshot,
    origin: 'legacy' | 'modern',
    opts: { inputElsewhere?: boolean } = {},
  ): Promise<TaskRecord | undefined> {
    // The final state's message replaces the record's, as every state's does below: none drops a running task's progress.
    if (isTerminal(snap.status)) return this.finish(taskId, outcomeOf(snap, origin), snap.statusMessage ?? null);
    const live = this.live.get(taskId);
    const excess = live ? this.inputExcess(live, snap) : undefined;
    if (live && excess) {
      // An upstream task that asks without end is stopped: cancelled upstream, failed here with the limit's error.
      void live.task.cancel().catch(() => {});
      const error = catalogAnswer(excess.kind, { args: [excess.limit] }).error;
      return this.finish(taskId, { status: 'failed', error }, error.message);
    }
    let statusMessage = snap.statusMessage;
    if (live?.inheritedKeys) {
      // Input the lost follower had been asked is gone unless the upstream asked it again on this instance's stream.
      const lost = live.inheritedKeys.filter((k) => !Object.hasOwn(snap.inputRequests ?? {}, k));
      delete live.inheritedKeys;
      if (lost.length > 0 && statusMessage === undefined) statusMessage = LOST_INPUT_MESSAGE;
    }
    return this.events.change(taskId, (t) => {
      if (isTerminal(t.status)) return undefined;
      // A legacy task's questions are the follower's to report: another instance keeps the record's as they are.
      const requests = opts.inputElsewhere ? t.inputRequests : knownRequests(snap);
      const status = opts.inputElsewhere && !requests && snap.status === 'input_required' ? 'working' : statusOf(snap, requests);
      const sameRequests = sameKeys(t.inputRequests, requests);
      if (status === t.status && statusMessage === t.statusMessage && sameRequests) return undefined;
      const { inputRequests: _old, statusMessage: _m, ...rest } = t;
      return {
        ...rest,
        status,
        ...(statusMessage !== undefined ? { statusMessage } : {}),
        ...(requests ? { inputRequests: requests } : {}),
        lastUpdatedAt: nowIso(),
      };
    });
  }

  /** The input limit a followed task's state passes (`input.maxRequestsPerRound`, `input.maxRoundsPerTask`), if any. */
  private inputExcess(
    live: ProxiedLive,
    snap: UpstreamTaskSnapshot,
  ): { kind: 'GW_INPUT_REQUESTS_EXCEEDED' | 'GW_INPUT_ROUNDS_EXCEEDED'; limit: number } | undefined {
    const keys = Object.keys(snap.inputRequests ?? {});
    const bounds = this.limits.input;
    if (keys.length > bounds.maxRequestsPerRound) return { kind: 'GW_INPUT_REQUESTS_EXCEEDED', limit: bounds.maxRequestsPerRound };
    const asked = (live.asked ??= { keys: new Set(), rounds: 0 });
    const fresh = keys.filter((k) => !asked.keys.has(k));
    if (fresh.length === 0) return undefined;
    for (const k of fresh) asked.keys.add(k);
    asked.rounds += 1;
    return asked.rounds > bounds.maxRounds ? { kind: 'GW_INPUT_ROUNDS_EXCEEDED', limit: bounds.maxRounds } : undefined;
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
          await this.written(live, () => this.lost(taskId));
          return;
        }
        // The seam retries its own waits; a failure that reaches here repeatedly means the upstream is gone.
        if (++failures >= FOLLOW_ATTEMPTS) {
          const error = catalogError('GW_TASK_FAILED_BECAUSE', { args: [upstreamFailureMessage(e)] });
          await this.written(live, () => this.finish(taskId, { status: 'failed', error }, error.message));
          return;
        }
        continue;
      }
      if (!snap) return;
      const after = await this.written(live, () => this.apply(taskId, snap, origin));
      if (live.stop.signal.aborted) return;
      if (!after || isTerminal(after.status)) {
        this.drop(taskId, 'drop');
        return;
      }
    }
  }
}

/** The terminal outcome of an upstream state; a modern client's error re-coded for its era. */
function outcomeOf(snap: UpstreamTaskSnapshot, origin: 'legacy' | 'modern'): TaskOutcome {
  if (snap.status === 'completed') return { status: 'completed', result: inlineResult(snap.result ?? { content: [] }) };
  if (snap.status === 'failed') {
    const error = snap.error ?? taskFailure(snap.statusMessage);
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
