/**
 * The task runtime (issues #3 and #4): decides per tool call whether it becomes a task, and serves
 * tasks/get|update|cancel for the tasks it created.
 *
 * - proxied: the legacy upstream runs the task (2025-11-25 core tasks). The gateway keeps an upstream
 *   `tasks/result` call open from creation on: that is where legacy servers deliver task-scoped input requests
 *   and, once terminal, the outcome (translation.md §4.5, §4.12(a)).
 * - owned: the gateway runs a synchronous upstream call in the background (a wrapped tool, §4.12(j)).
 *
 * Records live in the TaskStore; live objects (open upstream calls) stay in this process.
 */
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import {
  ErrorCode,
  TASKS_REQUIRED_CAPABILITIES,
  asErrorObject,
  createTaskResultV2,
  declaresTasks,
  detailedTaskV2,
  firstMatch,
  isCreateTaskResultV1,
  isObject,
  isTerminal,
  legacySupportsToolTasks,
  modernError,
  modernResult,
  outcomeFromPayload,
  pollIntervalMsFromLegacy,
  readTaskV1,
  relatedTaskMeta,
  toolTaskSupport,
  ttlMsFromLegacy,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type JsonRpcResponse,
  type ModernRequest,
  type TaskId,
  type TaskRecord,
  type TaskSupport,
} from '../translate/index.js';
import type { TaskStore } from '../store/index.js';

/** Store errors the edge maps, re-exported so the edge depends on the runtime only. */
export { StoreFullError } from '../store/index.js';
import { requestOnce } from '../upstream/index.js';
import { Conversation, MissingCapabilityError } from './conversation.js';
import { legacyParams, progressTokenOf, startConversation, type Continuation, type ForwardHooks, type MrtrBridge, type Outcome } from './mrtr-bridge.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from './route.js';

/** Runtime limits and defaults. */
export interface TaskRuntimeOptions {
  store: TaskStore;
  bridge: MrtrBridge;
  defaultTtlMs: number;
  maxTtlMs: number;
  defaultPollIntervalMs: number;
  maxActivePerPrincipal: number;
  /** How long the upstream's tool list (task support) is trusted. */
  toolSupportTtlMs: number;
}

/** A principal has as many live tasks as it may (→ 429). */
export class TooManyTasksError extends Error {
  constructor(limit: number) {
    super(`Too many active tasks (limit ${limit}); let some finish or cancel them`);
    this.name = 'TooManyTasksError';
  }
}

/** An unknown, expired or foreign task id (X §Protocol Errors: -32602). */
export class UnknownTaskError extends Error {
  constructor() {
    super('Unknown task');
    this.name = 'UnknownTaskError';
  }
}

const DEFAULT_POLICY: TaskPolicy = { task: 'native' };

interface OwnedLive {
  kind: 'owned';
  conv: Conversation;
  stop: AbortController;
}
interface ProxiedLive {
  kind: 'proxied';
  route: UpstreamRoute;
  caller: CallerContext;
  releaseSession: () => void;
  pump?: Conversation;
  /** Settles when the pump has stored the terminal outcome (or given up). */
  pumped: Promise<void>;
  lastPolled: number;
}
type Live = OwnedLive | ProxiedLive;

/** Mints an unguessable, URL-safe task id (144 bits). */
function mintTaskId(): TaskId {
  return `gwt_${randomBytes(18).toString('base64url')}` as TaskId;
}

const nowIso = () => new Date().toISOString();

/** The runtime of one gateway. */
export class TaskRuntime {
  private readonly live = new Map<string, Live>();
  private readonly events = new EventEmitter();
  private closed = false;

  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly o: TaskRuntimeOptions) {
    this.events.setMaxListeners(0);
    // Live work whose record has expired (its TTL passed) is stopped: nobody can ask for it any more.
    this.sweeper = setInterval(() => void this.sweep(), 30_000);
    this.sweeper.unref();
  }

  private async sweep(): Promise<void> {
    for (const [id, live] of [...this.live]) {
      if (await this.o.store.get(id as TaskId)) continue;
      this.live.delete(id);
      stopLive(live, 'task expired');
    }
  }

  /** The policy for a tool on a route. */
  policyFor(route: UpstreamRoute, tool: string): TaskPolicy {
    return firstMatch(route.rules, tool) ?? DEFAULT_POLICY;
  }

  /** Whether the route's upstream can run this tool as a legacy task, per its own tools/list. */
  private async supportOf(route: UpstreamRoute, caller: CallerContext, tool: string, signal: AbortSignal): Promise<TaskSupport> {
    const identity = route.upstream.knownIdentity ?? (await route.upstream.identity(caller, signal));
    if (!legacySupportsToolTasks(identity.capabilities)) return 'forbidden';
    const age = route.toolSupport ? Date.now() - route.toolSupport.at : Infinity;
    // Refetch when stale, or for a name not seen yet at most every few seconds (unknown names must not
    // turn every call into an upstream tools/list).
    if (age >= this.o.toolSupportTtlMs || (!route.toolSupport?.byName.has(tool) && age >= 5_000)) {
      // Every page of the upstream's tools/list (bounded), then one map of task support by tool name.
      const byName = new Map<string, TaskSupport>();
      let cursor: string | undefined;
      for (let page = 0; page < 50; page++) {
        const params = cursor ? { cursor } : {};
        const res = await requestOnce(route.upstream, caller, 'tools/list', params, signal);
        if (!('result' in res)) break;
        for (const [k, v] of toolTaskSupport(res.result)) byName.set(k, v);
        cursor = typeof res.result.nextCursor === 'string' ? res.result.nextCursor : undefined;
        if (!cursor) break;
      }
      route.toolSupport = { at: Date.now(), byName };
    }
    return route.toolSupport?.byName.get(tool) ?? 'forbidden';
  }

  private clampTtl(requested: number | null, policy: TaskPolicy): number {
    const cap = Math.min(policy.maxTtlMs ?? this.o.maxTtlMs, this.o.maxTtlMs);
    return Math.min(requested ?? cap, cap);
  }

  /** A modern `tools/call`: a plain call, an MRTR exchange, a proxied task or a gateway-owned task. */
  async callTool(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks): Promise<Outcome> {
    const tool = typeof req.params.name === 'string' ? req.params.name : '';
    const policy = this.policyFor(route, tool);
    const declares = declaresTasks(caller.capabilities);
    const support = await this.supportOf(route, caller, tool, hooks.signal);
    const plain = () => this.o.bridge.forward(route, req, caller, hooks);

    // The upstream's own task support decides when it requires a task, or offers one and no rule wraps the tool.
    if (support === 'required' || (support === 'optional' && (policy.task === 'native' || policy.task === 'off'))) {
      if (declares && policy.task !== 'off') return this.nativeCreate(route, req, caller, hooks, policy);
      // The upstream runs an optional tool synchronously for a client that takes no task (or may not get one).
      if (support === 'optional') return plain();
      // The upstream insists on a task the client cannot take: refuse (native, required; §4.12(g) option 1),
      // or drive the upstream task to its end inside this call (off, auto, always; option 2).
      if (policy.task === 'native' || policy.task === 'required') {
        throw new MissingCapabilityError(TASKS_REQUIRED_CAPABILITIES, `a task for tool ${tool}`);
      }
      return this.hiddenNative(route, req, caller, hooks, policy);
    }
    switch (policy.task) {
      case 'native':
      case 'off':
        return plain();
      case 'required':
        if (!declares) throw new MissingCapabilityError(TASKS_REQUIRED_CAPABILITIES, `a task for tool ${tool}`);
        return this.wrapped(route, req, caller, hooks, policy);
      case 'auto':
      case 'always':
        return declares ? this.wrapped(route, req, caller, hooks, policy) : plain();
    }
  }

  // ── gateway-owned tasks ─────────────────────────────────────────────────────────────────────────────

  private async wrapped(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks, policy: TaskPolicy): Promise<Outcome> {
    // auto: every round gets afterMs to finish synchronously. always/required: the first round gets afterMs
    // (default 0) to finish or ask for input (MRTR before the task, X §Task Creation); later rounds none.
    const resumed = req.requestState !== undefined;
    // A call that will become a task is refused before it reaches the upstream when the principal is at its
    // limit (the upstream work may not be idempotent). auto calls may end synchronously: checked on adoption.
    if (policy.task !== 'auto' && !resumed && (await this.o.store.activeCount(caller.principal)) >= this.o.maxActivePerPrincipal) {
      throw new TooManyTasksError(this.o.maxActivePerPrincipal);
    }
    const deadlineMs = policy.task === 'auto' ? (policy.afterMs ?? 0) : resumed ? 0 : (policy.afterMs ?? 0);
    return this.o.bridge.run(
      route,
      req,
      caller,
      hooks,
      () => startConversation(route, caller, 'tools/call', withProgressToken(legacyParams(req)), hooks.signal),
      {
        ...this.o.bridge.plainContinuation(route, req),
        deadlineMs,
        onDeadline: (conv) => this.adoptOwned(route, req, caller, policy, conv),
      },
    );
  }

  private async adoptOwned(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, policy: TaskPolicy, conv: Conversation): Promise<Outcome> {
    if ((await this.o.store.activeCount(caller.principal)) >= this.o.maxActivePerPrincipal) {
      conv.cancel('too many active tasks');
      throw new TooManyTasksError(this.o.maxActivePerPrincipal);
    }
    const ttlMs = this.clampTtl(policy.ttlMs ?? this.o.defaultTtlMs, policy);
    const now = nowIso();
    const inputRequests = conv.inputRequests();
    const record: TaskRecord = {
      taskId: mintTaskId(),
      principal: caller.principal,
      upstream: route.name,
      kind: 'owned',
      tool: typeof req.params.name === 'string' ? req.params.name : '',
      status: Object.keys(inputRequests).length > 0 ? 'input_required' : 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs,
      pollIntervalMs: policy.pollIntervalMs ?? this.o.defaultPollIntervalMs,
      ...(Object.keys(inputRequests).length > 0 ? { inputRequests } : {}),
      version: 0,
    };
    // X: the task must be readable before the CreateTaskResult is sent.
    try {
      await this.o.store.create(record, ttlMs);
    } catch (e) {
      conv.cancel('the task could not be stored');
      throw e;
    }
    const stop = new AbortController();
    this.live.set(record.taskId, { kind: 'owned', conv, stop });
    // The call may run for its budget, and never past the task's retention (nobody could read the outcome).
    const timeoutAt = Date.now() + Math.min(policy.timeoutMs ?? route.timeoutMs, ttlMs);
    void this.runOwned(route, record.taskId, conv, caller, stop.signal, timeoutAt);
    return { kind: 'result', result: createTaskResultV2(record) };
  }

  private async runOwned(route: UpstreamRoute, taskId: TaskId, conv: Conversation, caller: CallerContext, stop: AbortSignal, timeoutAt: number): Promise<void> {
    try {
      for (;;) {
        const r = await conv.pump({
          signal: stop,
          capabilities: caller.capabilities,
          inputAllowed: true,
          onUndeclared: 'refuse',
          deadlineAt: timeoutAt,
          gatherMs: this.o.bridge.opts.gatherMs,
          notify: (n) => void this.progress(taskId, n),
        });
        if (r.kind === 'aborted') return;
        if (r.kind === 'input') {
          await this.change(taskId, (t) => (isTerminal(t.status) ? undefined : { ...t, status: 'input_required', inputRequests: conv.inputRequests(), lastUpdatedAt: nowIso() }));
          continue;
        }
        if (r.kind === 'deadline') {
          conv.cancel('task timed out');
          await this.finish(taskId, { status: 'failed', error: { code: ErrorCode.InternalError, message: 'The upstream call timed out' } }, 'The upstream call timed out');
          return;
        }
        const m = r.message;
        if ('error' in m) {
          await this.finish(taskId, { status: 'failed', error: modernError(asErrorObject(m.error)) }, asErrorObject(m.error).message);
        } else {
          const result = modernResult('tools/call', isObject(m.result) ? m.result : {}, { cache: route.cache, ...(route.upstream.knownIdentity ? { serverInfo: route.upstream.knownIdentity.serverInfo } : {}) });
          await this.finish(taskId, outcomeFromPayload({ result }));
        }
        return;
      }
    } catch (e) {
      if (stop.aborted) return;
      conv.cancel('gateway error');
      const message = `Upstream unavailable: ${(e as Error).message}`;
      await this.finish(taskId, { status: 'failed', error: { code: ErrorCode.InternalError, message } }, message);
    } finally {
      this.live.delete(taskId);
    }
  }

  /** Progress from a task's upstream call becomes its statusMessage (progress is not relayed for tasks, X). */
  private async progress(taskId: TaskId, n: JsonRpcNotification): Promise<void> {
    if (n.method !== 'notifications/progress' || !isObject(n.params)) return;
    const p = n.params;
    const message = typeof p.message === 'string' ? p.message : typeof p.total === 'number' ? `${p.progress}/${p.total}` : `${p.progress}`;
    await this.change(taskId, (t) => (isTerminal(t.status) || t.statusMessage === message ? undefined : { ...t, statusMessage: message, lastUpdatedAt: nowIso() }));
  }

  // ── proxied (upstream) tasks ──────────────────────────────────────────────────────────────────────

  private nativeCreate(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks, policy: TaskPolicy): Promise<Outcome> {
    const ttl = this.clampTtl(policy.ttlMs ?? this.o.defaultTtlMs, policy);
    const plain = this.o.bridge.plainContinuation(route, req);
    return this.o.bridge.run(
      route,
      req,
      caller,
      hooks,
      () => startConversation(route, caller, 'tools/call', { ...legacyParams(req), task: { ttl } }, hooks.signal),
      {
        finish: async (m, resumed) => {
          // The upstream may answer at once instead (the immediate-result shortcut): a plain result is fine.
          if ('error' in m || !isCreateTaskResultV1(m.result)) return plain.finish(m, resumed);
          return this.adoptProxied(route, req, caller, policy, m.result);
        },
      },
    );
  }

  private async adoptProxied(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, policy: TaskPolicy, created: JsonObject): Promise<Outcome> {
    const v1 = readTaskV1(created);
    if (!v1) throw new Error('malformed CreateTaskResult from upstream');
    const releaseSession = route.upstream.retain(caller);
    if ((await this.o.store.activeCount(caller.principal)) >= this.o.maxActivePerPrincipal) {
      // The upstream task exists already: cancel it there.
      void requestOnce(route.upstream, caller, 'tasks/cancel', { taskId: v1.taskId }).catch(() => {});
      releaseSession();
      throw new TooManyTasksError(this.o.maxActivePerPrincipal);
    }
    const ttlMs = this.clampTtl(ttlMsFromLegacy(v1.ttl), policy);
    const now = nowIso();
    const pollIntervalMs = pollIntervalMsFromLegacy(v1.pollInterval) ?? policy.pollIntervalMs ?? this.o.defaultPollIntervalMs;
    const record: TaskRecord = {
      taskId: mintTaskId(),
      principal: caller.principal,
      upstream: route.name,
      kind: 'proxied',
      upstreamTaskId: v1.taskId,
      tool: typeof req.params.name === 'string' ? req.params.name : '',
      status: v1.status === 'input_required' ? 'working' : v1.status,
      ...(v1.statusMessage !== undefined ? { statusMessage: v1.statusMessage } : {}),
      createdAt: v1.createdAt ?? now,
      lastUpdatedAt: v1.lastUpdatedAt ?? now,
      ttlMs,
      pollIntervalMs,
      version: 0,
    };
    try {
      await this.o.store.create(record, ttlMs);
    } catch (e) {
      // Not stored, so nobody can reach it: cancel the upstream task rather than orphan it.
      void requestOnce(route.upstream, caller, 'tasks/cancel', { taskId: v1.taskId }).catch(() => {});
      releaseSession();
      throw e;
    }
    let settle!: () => void;
    const live: ProxiedLive = {
      kind: 'proxied',
      route,
      caller,
      releaseSession,
      pumped: new Promise<void>((r) => (settle = r)),
      lastPolled: Date.now(),
    };
    this.live.set(record.taskId, live);
    void this.pumpProxied(record.taskId, v1.taskId, live).finally(settle);
    return { kind: 'result', result: createTaskResultV2(record) };
  }

  /** Keeps an upstream tasks/result open: input requests arrive on it, and finally the payload (§4.12(a)). */
  private async pumpProxied(taskId: TaskId, upstreamTaskId: string, live: ProxiedLive): Promise<void> {
    for (let attempt = 0; attempt < 3 && !this.closed; attempt++) {
      let conv: Conversation;
      try {
        const call = await live.route.upstream.call(live.caller, 'tasks/result', { taskId: upstreamTaskId });
        conv = new Conversation(call, relatedTaskMeta(upstreamTaskId));
      } catch {
        continue;
      }
      live.pump = conv;
      try {
        for (;;) {
          const r = await conv.pump({
            signal: new AbortController().signal,
            capabilities: live.caller.capabilities,
            inputAllowed: true,
            onUndeclared: 'refuse',
            gatherMs: this.o.bridge.opts.gatherMs,
            notify: () => {},
          });
          if (r.kind === 'input') {
            await this.change(taskId, (t) => (isTerminal(t.status) ? undefined : { ...t, status: 'input_required', inputRequests: conv.inputRequests(), lastUpdatedAt: nowIso() }));
            continue;
          }
          if (r.kind !== 'response') return;
          await this.settleProxied(taskId, live, r.message);
          return;
        }
      } catch {
        // the stream broke before the task ended: ask again (§4.12(a) step 5)
        const current = await this.o.store.get(taskId);
        if (!current || isTerminal(current.status)) return;
      }
    }
  }

  /** Stores a proxied task's terminal outcome from its tasks/result response. */
  private async settleProxied(taskId: TaskId, live: ProxiedLive, m: JsonRpcResponse): Promise<void> {
    if ('error' in m) {
      // A cancelled task has no payload; its status comes from tasks/get.
      const status = await this.upstreamStatus(live, taskId);
      if (status === 'cancelled') {
        await this.finish(taskId, { status: 'cancelled' });
        return;
      }
      const error = modernError(asErrorObject(m.error));
      await this.finish(taskId, { status: 'failed', error }, error.message);
      return;
    }
    await this.finish(taskId, outcomeFromPayload({ result: isObject(m.result) ? m.result : {} }));
  }

  private async upstreamStatus(live: ProxiedLive, taskId: TaskId): Promise<TaskRecord['status'] | 'unknown'> {
    const record = await this.o.store.get(taskId);
    if (!record?.upstreamTaskId) return 'unknown';
    try {
      const res = await requestOnce(live.route.upstream, live.caller, 'tasks/get', { taskId: record.upstreamTaskId });
      if ('error' in res) return 'unknown';
      return readTaskV1(res.result)?.status ?? 'unknown';
    } catch {
      return 'unknown';
    }
  }

  /** Refreshes a proxied task from upstream tasks/get (at most once per half poll interval). */
  private async refreshProxied(record: TaskRecord): Promise<TaskRecord> {
    const live = this.live.get(record.taskId);
    if (!live || live.kind !== 'proxied' || isTerminal(record.status)) return record;
    const minGap = Math.floor((record.pollIntervalMs ?? this.o.defaultPollIntervalMs) / 2);
    if (Date.now() - live.lastPolled < minGap) return record;
    live.lastPolled = Date.now();
    let res: JsonRpcResponse;
    try {
      res = await requestOnce(live.route.upstream, live.caller, 'tasks/get', { taskId: record.upstreamTaskId });
    } catch {
      return record; // the upstream is unreachable now: report what is known
    }
    if ('error' in res) {
      const error: JsonRpcErrorObject = { code: ErrorCode.InternalError, message: 'The upstream no longer knows this task' };
      return (await this.finish(record.taskId, { status: 'failed', error }, error.message)) ?? record;
    }
    const v1 = readTaskV1(res.result);
    if (!v1) return record;
    if (isTerminal(v1.status)) {
      if (v1.status === 'cancelled') return (await this.finish(record.taskId, { status: 'cancelled' })) ?? record;
      // The payload arrives on the open tasks/result; wait for it briefly (it is being sent).
      await Promise.race([live.pumped, new Promise((r) => setTimeout(r, 5_000).unref())]);
      return (await this.o.store.get(record.taskId)) ?? record;
    }
    return (
      (await this.change(record.taskId, (t) => {
        if (isTerminal(t.status)) return undefined;
        // Report input_required only once an input request is actually known (§4.5).
        const status = v1.status === 'input_required' && !t.inputRequests ? 'working' : v1.status === 'working' && t.inputRequests ? 'input_required' : v1.status;
        if (status === t.status && v1.statusMessage === t.statusMessage) return undefined;
        return { ...t, status, ...(v1.statusMessage !== undefined ? { statusMessage: v1.statusMessage } : {}), lastUpdatedAt: nowIso() };
      })) ?? record
    );
  }

  /** Drives a native upstream task to its end inside one synchronous call (task: off, §4.12(g) option 2). */
  private hiddenNative(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks, policy: TaskPolicy): Promise<Outcome> {
    const ttl = this.clampTtl(policy.ttlMs ?? this.o.defaultTtlMs, policy);
    const plain = this.o.bridge.plainContinuation(route, req);
    // Two calls in sequence, each bridged to MRTR rounds: the task-augmented tools/call (a question asked before
    // the task exists arrives there), then the task's tasks/result (task-scoped questions and the payload).
    // A retry of either round comes back through here and resumes the held call; only a CreateTaskResult
    // response moves on to the second call.
    const cont: Continuation = {
      finish: async (m, resumed) => {
        if ('error' in m || !isCreateTaskResultV1(m.result)) return plain.finish(m, resumed);
        const upstreamTaskId = readTaskV1(m.result)?.taskId as string;
        const { requestState: _s, inputResponses: _r, ...fresh } = req;
        return this.o.bridge.run(
          route,
          fresh,
          caller,
          hooks,
          async () => {
            const call = await route.upstream.call(caller, 'tasks/result', { taskId: upstreamTaskId }, hooks.signal);
            return new Conversation(call, relatedTaskMeta(upstreamTaskId));
          },
          cont,
        );
      },
    };
    return this.o.bridge.run(route, req, caller, hooks, () => startConversation(route, caller, 'tools/call', { ...legacyParams(req), task: { ttl } }, hooks.signal), cont);
  }

  // ── tasks/get, tasks/update, tasks/cancel ──────────────────────────────────────────────────────────

  private async own(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<TaskRecord> {
    // X §Protocol Errors: the capability is checked before the id is looked up.
    if (!declaresTasks(caller.capabilities)) throw new MissingCapabilityError(TASKS_REQUIRED_CAPABILITIES, req.method);
    const id = req.params.taskId;
    if (typeof id !== 'string') throw new UnknownTaskError();
    const record = await this.o.store.get(id as TaskId);
    // A foreign task is indistinguishable from an unknown one (X §Security Considerations).
    if (!record || record.principal !== caller.principal || record.upstream !== route.name) throw new UnknownTaskError();
    return record;
  }

  /** tasks/get → the DetailedTask (X §Task Polling). */
  async get(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    let record = await this.own(route, req, caller);
    if (record.kind === 'proxied') record = await this.refreshProxied(record);
    return detailedTaskV2(record);
  }

  /** tasks/update → answers outstanding input requests; the ack follows the record change (read-your-writes). */
  async update(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    const record = await this.own(route, req, caller);
    const responses = isObject(req.inputResponses) ? req.inputResponses : {};
    const live = this.live.get(record.taskId);
    const conv = live?.kind === 'owned' ? live.conv : live?.pump;
    if (conv && !isTerminal(record.status)) {
      const answered = await conv.answer(responses);
      if (answered.length > 0) {
        await this.change(record.taskId, (t) => {
          if (isTerminal(t.status)) return undefined;
          const remaining = conv.inputRequests();
          const { inputRequests: _old, ...rest } = t;
          return Object.keys(remaining).length > 0
            ? { ...rest, inputRequests: remaining, lastUpdatedAt: nowIso() }
            : { ...rest, status: 'working', lastUpdatedAt: nowIso() };
        });
      }
    }
    return { resultType: 'complete' };
  }

  /** tasks/cancel → an empty ack; idempotent on terminal tasks (conformance). */
  async cancel(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    const record = await this.own(route, req, caller);
    if (isTerminal(record.status)) return { resultType: 'complete' };
    const live = this.live.get(record.taskId);
    if (record.kind === 'owned') {
      if (live?.kind === 'owned') {
        live.stop.abort();
        live.conv.cancel('task cancelled by the client');
      }
    } else if (live?.kind === 'proxied') {
      let refused = false;
      try {
        const res = await requestOnce(live.route.upstream, live.caller, 'tasks/cancel', { taskId: record.upstreamTaskId });
        refused = 'error' in res;
      } catch {
        // cooperative (X): the local record still ends cancelled
      }
      if (refused) {
        // The upstream refuses to cancel a task that already ended (§4.12(d)): its outcome stands.
        const status = await this.upstreamStatus(live, record.taskId);
        if (status === 'completed' || status === 'failed') {
          await Promise.race([live.pumped, new Promise((r) => setTimeout(r, 5_000).unref())]);
          return { resultType: 'complete' };
        }
      }
      live.pump?.abandon('task cancelled');
    }
    await this.finish(record.taskId, { status: 'cancelled' }, 'Cancelled by the client');
    return { resultType: 'complete' };
  }

  // ── records and events ────────────────────────────────────────────────────────────────────────────

  private async change(taskId: TaskId, fn: (t: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    // Whether the change applied is known from the change itself: no second read of the record.
    let applied = false;
    const after = await this.o.store.update(taskId, (t) => {
      const next = fn(t);
      applied = next !== undefined;
      return next;
    });
    if (after && applied) this.events.emit('task', after);
    return after;
  }

  private finish(
    taskId: TaskId,
    outcome: { status: 'completed'; result: JsonObject } | { status: 'failed'; error: JsonRpcErrorObject } | { status: 'cancelled' },
    statusMessage?: string,
  ): Promise<TaskRecord | undefined> {
    const live = this.live.get(taskId);
    if (live?.kind === 'proxied') {
      // A terminal proxied task needs its upstream session no more.
      live.releaseSession();
      this.live.delete(taskId);
    }
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

  /**
   * Subscribes to task changes for a listen stream: returns the ids accepted (existing tasks of this principal on
   * this route) and a function that ends the subscription.
   */
  async subscribe(route: UpstreamRoute, principal: string, taskIds: string[], listener: (t: JsonObject) => void): Promise<{ accepted: string[]; stop: () => void }> {
    const accepted: string[] = [];
    for (const id of taskIds) {
      const r = await this.o.store.get(id as TaskId);
      if (r && r.principal === principal && r.upstream === route.name) accepted.push(id);
    }
    const wanted = new Set(accepted);
    const onTask = (t: TaskRecord) => {
      if (wanted.has(t.taskId)) listener(detailedTaskV2(t));
    };
    this.events.on('task', onTask);
    // Proxied tasks change upstream: poll them while someone listens.
    const timer = setInterval(() => {
      for (const id of wanted) {
        void this.o.store.get(id as TaskId).then((r) => (r && r.kind === 'proxied' ? this.refreshProxied(r) : undefined)).catch(() => {});
      }
    }, this.o.defaultPollIntervalMs);
    timer.unref();
    return {
      accepted,
      stop: () => {
        clearInterval(timer);
        this.events.off('task', onTask);
      },
    };
  }

  /** Stops every live task (on shutdown; owned calls are cancelled upstream). Idempotent. */
  close(): void {
    this.closed = true;
    clearInterval(this.sweeper);
    for (const live of this.live.values()) stopLive(live, 'gateway shutting down');
    this.live.clear();
    this.events.removeAllListeners();
  }
}

/**
 * A wrapped call asks the upstream for progress (a gateway token when the client sent none), so that a task's
 * statusMessage can follow it; the client's own stream still gets only progress for its own token.
 */
function withProgressToken(params: JsonObject): JsonObject {
  if (progressTokenOf(params) !== undefined) return params;
  const meta = isObject(params._meta) ? params._meta : {};
  return { ...params, _meta: { ...meta, progressToken: `gw-${randomBytes(9).toString('base64url')}` } };
}

/** Stops a task's live work: an owned call is cancelled upstream; a proxied task's wait is dropped. */
function stopLive(live: Live, reason: string): void {
  if (live.kind === 'owned') {
    live.stop.abort();
    live.conv.cancel(reason);
  } else {
    live.pump?.abandon(reason);
    live.releaseSession();
  }
}
