/**
 * Gateway-owned tasks (docs/tasks.md, wrapped tools): a synchronous upstream call that outlived its window keeps
 * running in the background as a task the gateway itself serves. Its input requests become the task's
 * `inputRequests`, its progress the task's `statusMessage`, its response the task's outcome.
 */
/**
 * Gateway-owned tasks (docs/tasks.md, wrapped tools): a synchronous upstream call that outlived its window keeps
 * running in the background as a task the gateway itself serves. Its input requests become the task's
 * `inputRequests`, its progress the task's `statusMessage`, its response the task's outcome.
 *
 * Across instances sharing a store (docs/architecture.md §4): the instance running the call holds the task's lease and
 * renews it while the call runs; the record names it (`owner`) and carries the call, sealed, so that another instance
 * can take the task over when the lease lapses (fail it, or run the call again when its rule says `retryOnLoss`).
 * Writes of a run are fenced by `owner` and `attempt`: a run that lost its task (a paused instance waking up) changes
 * nothing. Answers and cancels reaching an instance that does not run the call go to the one that does, over the
 * instance bus.
 */
import {
  GatewayError,
  answerOf,
  asErrorObject,
  isObject,
  isTerminal,
  logFailure,
  modernError,
  modernResult,
  outcomeFromPayload,
  type JsonObject,
  type JsonRpcNotification,
  type TaskId,
  type TaskRecord,
  catalogError,
} from '../../translate/index.js';
import { StoreUnavailableError } from '../../store/index.js';
import { callNow, UpstreamTimeoutError } from '../../upstream/index.js';
import { Conversation } from '../calls/conversation.js';
import { InstanceGoneError, type InstanceBus } from '../instances/instance-bus.js';
import type { TaskOrigin } from './proxied-tasks.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from '../route.js';
import type { Sealer } from '../instances/sealing.js';
import { finished, type TaskEvents, type TaskOutcome } from '../records/task-events.js';
import { clampTtl, mintTaskId, nowIso, TaskAlreadyTerminalError, TooManyTasksError, upstreamFailureMessage, type TaskLimits } from '../records/task-limits.js';

/** How long a running task's record change waits for an unavailable store to come back. */
const STORE_RETRY_MS = 5 * 60_000;

/** The error of an owned task whose upstream call outlived its budget. */
const TIMED_OUT = catalogError('GW_TASK_TIMED_OUT');

/** The error of an owned task whose instance was lost and whose tool may not run twice. */
const LOST_ERROR = catalogError('GW_TASK_INSTANCE_LOST');

/** The error of an owned task still running when a one-instance gateway shuts down (`GW_TASK_SHUT_DOWN`). */
const SHUTDOWN_ERROR = catalogError('GW_TASK_SHUT_DOWN');

/** The sealing purpose of an owned task's call (what another instance needs to run it again). */
const SEAL_PURPOSE = 'owned-task';

/** What owned tasks need to run across the instances sharing a store. */
export interface OwnedCluster {
  bus: InstanceBus;
  sealer: Sealer;
  /** How long a lease lasts unless renewed. */
  leaseMs: number;
  /** The route of an upstream by name (a task taken over from another instance). */
  route(name: string): UpstreamRoute | undefined;
  /** The rule for a tool on a route. */
  policyFor(route: UpstreamRoute, tool: string): TaskPolicy;
}

interface OwnedLive {
  conv: Conversation;
  stop: AbortController;
  /** Which start of the call this is (the record's `attempt` while this run owns it). */
  attempt: number;
  /** Whether this instance holds the task's lease (acquired at adoption or claimed at takeover). */
  leased: boolean;
  /** What becomes of the lease when the local call ends: dropped (the work ended), or kept (another instance's now). */
  lease: 'drop' | 'keep';
  /** When the task's retention ends (ms since the epoch): a call still running then ends with its record, expired. */
  retainedUntil?: number;
}

/** The call a sealed record carries. */
interface SealedCall {
  caller: CallerContext;
  params: JsonObject;
}

/** The owned tasks of one gateway instance, and their running calls. */
export class OwnedTasks {
  private readonly live = new Map<TaskId, OwnedLive>();
  private readonly idleWaiters = new Set<() => void>();
  private closing: Promise<void> | undefined;

  constructor(
    private readonly events: TaskEvents,
    private readonly limits: TaskLimits,
    private readonly cluster: OwnedCluster,
  ) {}

  /** Gateway-owned tasks whose call runs on this instance now (a cheap count for the metrics). */
  get liveCount(): number {
    return this.live.size;
  }

  /** This instance's id (the `owner` of the tasks it runs). */
  private get me(): string {
    return this.cluster.bus.instanceId;
  }

  /** Whether the store is shared with other instances (then tasks carry leases and their sealed call). */
  private get shared(): boolean {
    return this.events.store.scope === 'shared';
  }

  /** Serves the answers and cancels other instances forward. */
  start(): void {
    this.cluster.bus.handle('owned.answer', async (p) => {
      const record = typeof p.taskId === 'string' ? await this.events.store.get(p.taskId as TaskId) : undefined;
      if (record?.kind !== 'owned') return { answered: [] };
      return { answered: await this.answerHere(record, isObject(p.responses) ? p.responses : {}) };
    });
    this.cluster.bus.handle('owned.cancel', async (p) => {
      const record = typeof p.taskId === 'string' ? await this.events.store.get(p.taskId as TaskId) : undefined;
      if (record?.kind !== 'owned') return {};
      const after = await this.cancelHere(record);
      return after ? { status: after.status } : {};
    });
  }

  /** How many calls run here now. */
  get running(): number {
    return this.live.size;
  }

  /** Resolves once no call runs here (a draining gateway lets them finish first). */
  whenIdle(): Promise<void> {
    if (this.live.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.add(resolve));
  }

  private checkIdle(): void {
    if (this.live.size > 0) return;
    for (const w of this.idleWaiters) w();
    this.idleWaiters.clear();
  }

  /** Whether the principal may start one more task now. */
  async atLimit(principal: string): Promise<boolean> {
    return (await this.events.store.activeCount(principal)) >= this.limits.maxActivePerPrincipal;
  }

  /**
   * Makes a running call a task: stores its record (readable before this resolves) and runs the call in the
   * background. `ttlMs`: the client's requested retention (a 2025-11-25 `task.ttl`), clamped by the policy; `params`:
   * the `tools/call` params sent upstream (sealed into the record with a shared store, so another instance can run
   * the call again).
   */
  async adopt(
    route: UpstreamRoute,
    caller: CallerContext,
    policy: TaskPolicy,
    conv: Conversation,
    who: TaskOrigin,
    opts: { ttlMs?: number; params?: JsonObject } = {},
  ): Promise<TaskRecord> {
    if (await this.atLimit(caller.principal)) {
      conv.cancel('too many active tasks');
      throw new TooManyTasksError(this.limits.maxActivePerPrincipal);
    }
    const ttlMs = clampTtl(opts.ttlMs ?? policy.ttlMs ?? this.limits.defaultTtlMs, policy, this.limits.maxTtlMs);
    const now = nowIso();
    const inputRequests = conv.inputRequests();
    const asking = Object.keys(inputRequests).length > 0;
    const taskId = mintTaskId();
    // Nothing to hand over with a one-instance store: the call is sealed only for another instance to run it.
    const sealed = this.shared && opts.params ? this.cluster.sealer.seal(SEAL_PURPOSE, sealCall(taskId, caller, opts.params)) : undefined;
    const record: TaskRecord = {
      taskId,
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
      owner: this.me,
      attempt: 1,
      ...(sealed !== undefined ? { sealed } : {}),
      version: 0,
    };
    // Tasks extension §Task Creation: the task must be readable before the CreateTaskResult is sent.
    try {
      // Stored already leased (shared store): a task is never live without an instance that answers for it.
      await this.events.store.create(record, ttlMs, this.shared ? { owner: this.me, ttlMs: this.cluster.leaseMs } : undefined);
    } catch (e) {
      conv.cancel('the task could not be stored');
      throw e;
    }
    this.events.created(record);
    const live: OwnedLive = { conv, stop: new AbortController(), attempt: 1, leased: this.shared, lease: 'drop' };
    this.live.set(taskId, live);
    // The call may run for its budget, and never past the task's retention (nobody could read the outcome).
    live.retainedUntil = Date.now() + ttlMs;
    const timeoutAt = Date.now() + Math.min(policy.timeoutMs ?? route.timeoutMs, ttlMs);
    const running = this.run(route, taskId, live, caller, timeoutAt);
    // A call that has already answered (an immediate result) completes its task before the task is handed out.
    if (conv.call.finished) {
      await running;
      return (await this.events.store.get(taskId)) ?? record;
    }
    return record;
  }

  /**
   * Answers a live task's outstanding input requests (unknown, answered or malformed keys ignored); the record drops
   * the answered ones before this resolves (read-your-writes, tasks extension §Input). Returns the keys answered. A
   * task running on another instance is answered there; when that instance is gone nothing is answered (the task is
   * taken over when its lease lapses).
   */
  async answer(record: TaskRecord, responses: JsonObject): Promise<string[]> {
    if (isTerminal(record.status)) return [];
    const owner = this.remoteOwner(record);
    if (!owner) return this.answerHere(record, responses);
    try {
      const r = await this.cluster.bus.request(owner, 'owned.answer', { taskId: record.taskId, responses });
      return Array.isArray(r.answered) ? r.answered.filter((k): k is string => typeof k === 'string') : [];
    } catch (e) {
      if (e instanceof InstanceGoneError) return [];
      throw e;
    }
  }

  /**
   * Cancels a task: its call stopped and cancelled upstream, the record `cancelled` (unless it had already ended). A
   * task running on another instance is cancelled there (its call stops); when that instance is gone, the record is
   * cancelled here.
   */
  async cancel(record: TaskRecord): Promise<TaskRecord | undefined> {
    const owner = isTerminal(record.status) ? undefined : this.remoteOwner(record);
    if (owner) {
      try {
        await this.cluster.bus.request(owner, 'owned.cancel', { taskId: record.taskId });
        return await this.events.store.get(record.taskId);
      } catch (e) {
        if (!(e instanceof InstanceGoneError)) throw e;
      }
    }
    return this.cancelHere(record);
  }

  /** A 2025-11-25 `tasks/cancel`: `TaskAlreadyTerminalError` for a task that has ended, else `cancel`. */
  async cancelStrict(record: TaskRecord): Promise<TaskRecord> {
    if (isTerminal(record.status)) throw new TaskAlreadyTerminalError(record.status);
    const after = await this.cancel(record);
    if (after && after.status !== 'cancelled') throw new TaskAlreadyTerminalError(after.status);
    return after ?? record;
  }

  /**
   * Stops a task's call and cancels it upstream (the record is the caller's to finish). `lease`: `keep` when the task
   * is another instance's now (or is being handed over), so its lease is left alone.
   */
  stop(taskId: TaskId, reason: string, lease: 'drop' | 'keep' = 'drop'): void {
    const live = this.live.get(taskId);
    if (!live) return;
    this.live.delete(taskId);
    live.lease = lease;
    live.stop.abort();
    live.conv.cancel(reason);
    this.checkIdle();
  }

  /** Stops the calls of tasks whose record has expired: nobody can ask for them any more. */
  async sweep(): Promise<void> {
    for (const id of [...this.live.keys()]) {
      if (await this.events.store.get(id)) continue;
      this.stop(id, 'task expired');
      this.events.expired(id);
    }
  }

  /**
   * Takes over a task whose lease this instance claimed (its owner stopped renewing it): runs its call again when its
   * rule says `retryOnLoss` and the sealed call opens, else ends it failed. The restart is a compare-and-set on the
   * record's owner and attempt, so the call is started once more at most however the claims race.
   */
  async takeOver(record: TaskRecord): Promise<void> {
    const store = this.events.store;
    const mine = this.live.get(record.taskId);
    if (mine) {
      // This instance let its own lease lapse (a stall) and claimed it back: the call still runs here.
      mine.leased = true;
      return;
    }
    const route = this.cluster.route(record.upstream);
    const policy = route ? this.cluster.policyFor(route, record.tool) : undefined;
    const call = route && policy?.retryOnLoss ? this.unseal(record) : undefined;
    const attempt = record.attempt ?? 1;
    const unchanged = (t: TaskRecord) => !isTerminal(t.status) && t.owner === record.owner && (t.attempt ?? 1) === attempt;
    if (!route || !policy || !call) {
      await this.events.change(record.taskId, (t) => (unchanged(t) ? finished(t, { status: 'failed', error: LOST_ERROR }, LOST_ERROR.message) : undefined));
      await store.releaseLease(record.taskId, this.me, 'drop');
      return;
    }
    const after = await this.events.change(record.taskId, (t) => {
      if (!unchanged(t)) return undefined;
      const { inputRequests: _i, statusMessage: _m, ...rest } = t;
      return { ...rest, owner: this.me, attempt: attempt + 1, status: 'working', lastUpdatedAt: nowIso() };
    });
    if (!after || after.owner !== this.me || after.attempt !== attempt + 1) {
      // Ended meanwhile (or restarted by someone else): nothing to run.
      if (!after || isTerminal(after.status)) await store.releaseLease(record.taskId, this.me, 'drop');
      return;
    }
    const conv = new Conversation(callNow(route.upstream, call.caller, 'tools/call', call.params, undefined, { patient: true }));
    const live: OwnedLive = { conv, stop: new AbortController(), attempt: attempt + 1, leased: true, lease: 'drop' };
    this.live.set(record.taskId, live);
    // The new call gets the rule's budget again, never past the task's retention.
    const retention = record.ttlMs === null ? Infinity : Date.parse(record.createdAt) + record.ttlMs - Date.now();
    const timeoutAt = Date.now() + Math.max(0, Math.min(policy.timeoutMs ?? route.timeoutMs, retention));
    live.retainedUntil = Date.now() + retention;
    void this.run(route, record.taskId, live, call.caller, timeoutAt);
  }

  /**
   * Stops every call (on shutdown). With a shared store each task's lease is handed over at once, so that another
   * instance takes it over without waiting for the lease to lapse; with a one-instance store the task ends failed.
   * Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const ids = [...this.live.keys()];
      await Promise.allSettled(
        ids.map(async (id) => {
          const live = this.live.get(id);
          this.stop(id, 'gateway shutting down', 'keep');
          if (this.shared) {
            if (live?.leased) await this.events.store.releaseLease(id, this.me, 'handover');
            return;
          }
          await this.finishRun(id, live?.attempt ?? 1, { status: 'failed', error: SHUTDOWN_ERROR }, SHUTDOWN_ERROR.message);
        }),
      );
    })();
    return this.closing;
  }

  /** The instance to forward to: the task's owner when it is another instance and the call does not run here. */
  private remoteOwner(record: TaskRecord): string | undefined {
    if (this.live.has(record.taskId)) return undefined;
    return record.owner !== undefined && record.owner !== this.me ? record.owner : undefined;
  }

  private async answerHere(record: TaskRecord, responses: JsonObject): Promise<string[]> {
    const live = this.live.get(record.taskId);
    if (!live || isTerminal(record.status)) return [];
    const answered = await live.conv.answer(responses);
    if (answered.length > 0) {
      await this.events.change(record.taskId, (t) => {
        if (isTerminal(t.status) || !this.runs(t, live.attempt)) return undefined;
        const remaining = live.conv.inputRequests();
        const { inputRequests: _old, ...rest } = t;
        return Object.keys(remaining).length > 0
          ? { ...rest, inputRequests: remaining, lastUpdatedAt: nowIso() }
          : { ...rest, status: 'working', lastUpdatedAt: nowIso() };
      });
    }
    return answered;
  }

  private cancelHere(record: TaskRecord): Promise<TaskRecord | undefined> {
    this.stop(record.taskId, 'task cancelled by the client');
    return this.events.finish(record.taskId, { status: 'cancelled' }, 'Cancelled by the client');
  }

  /** The tasks whose calls run here under a lease (the runtime renews them). */
  leasedIds(): TaskId[] {
    return [...this.live].filter(([, l]) => l.leased).map(([id]) => id);
  }

  /** The lease on a task running here was lost (another instance claimed it): its call stops, the record untouched. */
  leaseLost(taskId: TaskId): void {
    this.stop(taskId, 'the task is run by another gateway instance', 'keep');
  }

  /** Whether a run of `attempt` still owns the record (a record written by a one-instance gateway has no owner). */
  private runs(t: TaskRecord, attempt: number): boolean {
    return t.owner === undefined || (t.owner === this.me && (t.attempt ?? 1) === attempt);
  }

  /**
   * Changes the record for the run of `attempt`, unless it lost the task meanwhile (the stale writer loses). While the
   * store is unavailable (Redis down), the change is tried again with backoff for as long as this run still holds the
   * task, within `STORE_RETRY_MS`: an outcome that arrives during an outage is stored once the store is back, unless
   * another instance took the task over meanwhile (then the fenced write applies nothing).
   */
  private async changeRun(taskId: TaskId, attempt: number, fn: (t: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    const change = () => this.events.change(taskId, (t) => (isTerminal(t.status) || !this.runs(t, attempt) ? undefined : fn(t)));
    const giveUpAt = Date.now() + STORE_RETRY_MS;
    for (let delay = 100; ; delay = Math.min(delay * 2, 2_000)) {
      try {
        return await change();
      } catch (e) {
        const live = this.live.get(taskId);
        const holding = live !== undefined && live.attempt === attempt && !live.stop.signal.aborted;
        if (!(e instanceof StoreUnavailableError) || !holding || Date.now() + delay > giveUpAt) throw e;
        await new Promise<void>((r) => setTimeout(r, delay).unref());
      }
    }
  }

  private finishRun(taskId: TaskId, attempt: number, outcome: TaskOutcome, statusMessage?: string): Promise<TaskRecord | undefined> {
    return this.changeRun(taskId, attempt, (t) => finished(t, outcome, statusMessage));
  }

  /** The call a record carries, if it opens with this deployment's secret and belongs to this task. */
  private unseal(record: TaskRecord): SealedCall | undefined {
    if (record.sealed === undefined) return undefined;
    const v = this.cluster.sealer.open(SEAL_PURPOSE, record.sealed);
    if (!v || v.taskId !== record.taskId || !isObject(v.caller) || !isObject(v.params)) return undefined;
    const c = v.caller;
    if (typeof c.principal !== 'string' || c.principal !== record.principal || !isObject(c.capabilities)) return undefined;
    const caller: CallerContext = {
      principal: c.principal,
      capabilities: c.capabilities,
      ...(typeof c.authorization === 'string' ? { authorization: c.authorization } : {}),
      ...(isObject(c.clientInfo) ? { clientInfo: c.clientInfo } : {}),
      ...(typeof c.logLevel === 'string' ? { logLevel: c.logLevel } : {}),
      ...(typeof c.session === 'string' ? { session: c.session } : {}),
    };
    return { caller, params: v.params };
  }

  private async run(route: UpstreamRoute, taskId: TaskId, live: OwnedLive, caller: CallerContext, timeoutAt: number): Promise<void> {
    const stop = live.stop.signal;
    const attempt = live.attempt;
    try {
      for (;;) {
        const conv = live.conv;
        const r = await conv.pump({
          signal: stop,
          capabilities: caller.capabilities,
          inputAllowed: true,
          deadlineAt: timeoutAt,
          gatherMs: this.limits.gatherMs,
          log: this.events.log,
          bounds: this.limits.input,
          notify: (n) => void this.progress(taskId, attempt, n).catch(logFailure(this.events.log, 'debug', 'progress not written to its task', { taskId })),
        });
        if (r.kind === 'aborted') return;
        if (r.kind === 'task') {
          // The upstream made its own task after all (a modern upstream decides per call, tasks extension §Task
          // Creation): this task follows it as an ordinary call, its questions and outcome this task's.
          live.conv = Conversation.following(r.task);
          continue;
        }
        if (r.kind === 'input') {
          await this.changeRun(taskId, attempt, (t) => ({ ...t, status: 'input_required', inputRequests: conv.inputRequests(), lastUpdatedAt: nowIso() }));
          continue;
        }
        if (r.kind === 'deadline' && live.retainedUntil !== undefined && Date.now() >= live.retainedUntil) {
          // The task's retention ended before its call did: the record expires (a failure written now would be gone
          // within a moment); nobody can ask for the outcome any more.
          conv.cancel('task expired');
          this.events.expired(taskId);
          return;
        }
        if (r.kind === 'deadline') {
          conv.cancel('task timed out');
          await this.finishRun(taskId, attempt, { status: 'failed', error: TIMED_OUT }, TIMED_OUT.message);
          return;
        }
        const m = r.message;
        if ('error' in m) {
          await this.finishRun(taskId, attempt, { status: 'failed', error: modernError(asErrorObject(m.error)) }, asErrorObject(m.error).message);
        } else {
          const identity = route.upstream.knownIdentity;
          const result = modernResult('tools/call', isObject(m.result) ? m.result : {}, {
            cache: route.cache,
            ...(identity ? { serverInfo: identity.serverInfo } : {}),
          });
          await this.finishRun(taskId, attempt, outcomeFromPayload({ result }));
        }
        return;
      }
    } catch (e) {
      if (stop.aborted) return;
      live.conv.cancel('gateway error');
      // The upstream's own budget may end the call before the task's does (its headers did not come in time).
      // An input limit the call passed (an upstream asking without end) fails the task with that limit's error.
      const limit = e instanceof GatewayError && (e.kind === 'GW_INPUT_REQUESTS_EXCEEDED' || e.kind === 'GW_INPUT_ROUNDS_EXCEEDED');
      const error =
        limit && e instanceof GatewayError
          ? answerOf(e).error
          : e instanceof UpstreamTimeoutError
            ? TIMED_OUT
            : catalogError('GW_TASK_FAILED_BECAUSE', { args: [upstreamFailureMessage(e)] });
      // A run never rejects (nobody awaits a background run): an outcome that cannot be stored, even after the store's
      // retries, is left to the lease (another instance takes the task over when this one lets it lapse).
      await this.finishRun(taskId, attempt, { status: 'failed', error }, error.message).catch(
        logFailure(this.events.log, 'warn', 'a failed owned task could not be stored; its lease decides', { taskId }),
      );
    } finally {
      if (this.live.get(taskId) === live) this.live.delete(taskId);
      this.checkIdle();
      // The work ended here: its lease goes (a lease kept is another instance's, or handed over on shutdown).
      if (live.leased && live.lease === 'drop') {
        await this.events.store
          .releaseLease(taskId, this.me, 'drop')
          .catch(logFailure(this.events.log, 'debug', 'lease of an ended task not released; it lapses', { taskId }));
      }
    }
  }

  /** Progress of the task's call becomes its statusMessage (progress is not relayed for tasks, tasks extension). */
  private async progress(taskId: TaskId, attempt: number, n: JsonRpcNotification): Promise<void> {
    if (n.method !== 'notifications/progress' || !isObject(n.params)) return;
    const p = n.params;
    const message = typeof p.message === 'string' ? p.message : typeof p.total === 'number' ? `${p.progress}/${p.total}` : `${p.progress}`;
    await this.changeRun(taskId, attempt, (t) => (t.statusMessage === message ? undefined : { ...t, statusMessage: message, lastUpdatedAt: nowIso() }));
  }
}

/** What another instance needs to run an owned task's call again, bound to the task (sealed into its record). */
function sealCall(taskId: TaskId, caller: CallerContext, params: JsonObject): JsonObject {
  const c: JsonObject = { principal: caller.principal, capabilities: caller.capabilities };
  if (caller.authorization !== undefined) c.authorization = caller.authorization;
  if (caller.clientInfo !== undefined) c.clientInfo = caller.clientInfo;
  if (caller.logLevel !== undefined) c.logLevel = caller.logLevel;
  if (caller.session !== undefined) c.session = caller.session;
  return { taskId, caller: c, params };
}
