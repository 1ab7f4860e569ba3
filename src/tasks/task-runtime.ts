/**
 * The task runtime of one gateway: runs each modern `tools/call` as `decideCall` says (a plain call, an MRTR
 * exchange, a proxied upstream task, an upstream task hidden inside the call, or a gateway-owned task), and
 * serves the task methods through the task service. The lifecycles live in their own modules (owned-tasks,
 * proxied-tasks, task-service, task-events); records live in the TaskStore, open upstream calls in this process.
 */
import { randomBytes } from 'node:crypto';
import {
  TASKS_REQUIRED_CAPABILITIES,
  declaresTasks,
  firstMatch,
  isCreateTaskResultV1,
  isObject,
  legacyParams,
  legacySupportsToolTasks,
  progressTokenOf,
  readTaskV1,
  relatedTaskMeta,
  toolTaskSupport,
  type JsonObject,
  type JsonRpcErrorObject,
  type ModernRequest,
  type TaskRecord,
  type TaskSupport,
} from '../translate/index.js';
import type { TaskStore } from '../store/index.js';
import { requestOnce, UpstreamTimeoutError, type UpstreamCall } from '../upstream/index.js';
import { decideCall, type CallFacts, type CallWindow } from './call-decision.js';
import { Conversation, MissingCapabilityError } from './conversation.js';
import { plainOutcome, type BridgedCall, type ForwardHooks, type MrtrBridge, type Outcome } from './mrtr-bridge.js';
import { OwnedTasks } from './owned-tasks.js';
import { ProxiedTasks } from './proxied-tasks.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from './route.js';
import { TaskEvents } from './task-events.js';
import { clampTtl, TooManyTasksError, type TaskLimits } from './task-limits.js';
import { TaskService } from './task-service.js';

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

const DEFAULT_POLICY: TaskPolicy = { task: 'native' };

/** The runtime of one gateway. */
export class TaskRuntime {
  private readonly limits: TaskLimits;
  private readonly events: TaskEvents;
  private readonly owned: OwnedTasks;
  private readonly proxied: ProxiedTasks;
  /** tasks/get, tasks/update, tasks/cancel and task subscriptions. */
  readonly service: TaskService;
  private readonly sweeper: NodeJS.Timeout;

  constructor(private readonly o: TaskRuntimeOptions) {
    this.limits = {
      defaultTtlMs: o.defaultTtlMs,
      maxTtlMs: o.maxTtlMs,
      defaultPollIntervalMs: o.defaultPollIntervalMs,
      maxActivePerPrincipal: o.maxActivePerPrincipal,
      gatherMs: o.bridge.opts.gatherMs,
    };
    this.events = new TaskEvents(o.store);
    this.owned = new OwnedTasks(this.events, this.limits);
    this.proxied = new ProxiedTasks(this.events, this.limits);
    this.service = new TaskService(this.events, this.owned, this.proxied, o.defaultPollIntervalMs);
    // Live work whose record has expired (its TTL passed) is stopped: nobody can ask for it any more.
    this.sweeper = setInterval(() => void this.owned.sweep().then(() => this.proxied.sweep()).catch(() => {}), 30_000);
    this.sweeper.unref();
  }

  /** The policy for a tool on a route. */
  policyFor(route: UpstreamRoute, tool: string): TaskPolicy {
    return firstMatch(route.rules, tool) ?? DEFAULT_POLICY;
  }

  /** A modern `tools/call`: a plain call, an MRTR exchange, a proxied task, a hidden upstream task or an owned task. */
  async callTool(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks): Promise<Outcome> {
    const tool = typeof req.params.name === 'string' ? req.params.name : '';
    const policy = this.policyFor(route, tool);
    const facts: Omit<CallFacts, 'turn'> = {
      mode: policy.task,
      declares: declaresTasks(caller.capabilities),
      support: await this.supportOf(route, caller, tool, hooks.signal),
    };
    const resuming = req.policy.kind === 'forward-input' && req.requestState !== undefined;
    const first = decideCall({ ...facts, turn: resuming ? 'resume' : 'start' });
    if (first.action === 'refuse') throw new MissingCapabilityError(TASKS_REQUIRED_CAPABILITIES, `a task for tool ${tool}`);
    if (first.action !== 'send') throw new Error(`a ${first.action} decision before the call was sent`);
    // A call that will become a task is refused before it reaches the upstream when the principal is at its
    // limit (the upstream work may not be idempotent); one that may still end synchronously is checked on adoption.
    if (first.refuseAtLimit && (await this.owned.atLimit(caller.principal))) throw new TooManyTasksError(this.o.maxActivePerPrincipal);

    let call: BridgedCall;
    if (resuming) {
      const resumed = await this.o.bridge.resume(route, req, caller);
      if ('outcome' in resumed) return resumed.outcome;
      call = resumed;
    } else {
      const params = first.upstreamTask
        ? { ...legacyParams(req), task: { ttl: this.upstreamTtl(policy) } }
        : first.owned
          ? withProgressToken(legacyParams(req))
          : legacyParams(req);
      call = { conv: new Conversation(await route.upstream.call(caller, 'tools/call', params, hooks.signal)) };
    }
    let round = req;
    let window: CallWindow = first.window;
    for (;;) {
      const r = await this.o.bridge.round(route, round, caller, hooks, call, this.windowMs(window, policy, route));
      if (r.kind === 'outcome') return r.outcome;
      if (r.kind === 'window-passed') {
        if (decideCall({ ...facts, turn: 'window-passed' }).action === 'own-task') return this.owned.adopt(route, req, caller, policy, r.conv);
        r.conv.cancel('gateway error');
        throw new UpstreamTimeoutError(`the upstream call took longer than ${route.timeoutMs} ms`);
      }
      const m = r.message;
      const created = 'result' in m && isCreateTaskResultV1(m.result) ? (m.result as JsonObject) : undefined;
      const next = decideCall({ ...facts, turn: created ? 'task-created' : 'result' });
      if (next.action === 'proxy-task' && created) return this.proxied.adopt(route, req, caller, policy, created);
      if (next.action !== 'follow-task' || !created) return plainOutcome(route, req, m, r.resumed);
      // The upstream task is driven to its end inside this request (README §Tasks): its tasks/result carries
      // the task-scoped questions (MRTR rounds of this request) and the payload.
      const upstreamTaskId = readTaskV1(created)?.taskId as string;
      const { requestState: _s, inputResponses: _r, ...fresh } = req;
      round = fresh;
      window = 'budget';
      call = { conv: new Conversation(await route.upstream.call(caller, 'tasks/result', { taskId: upstreamTaskId }, hooks.signal), relatedTaskMeta(upstreamTaskId)) };
    }
  }

  /**
   * A 2025-11-25 `tools/call` WITHOUT `task`, from the legacy face: the events of an ordinary call. The tool's rules
   * do not make it a task (a legacy client cannot receive an unsolicited task); where the upstream requires or returns
   * one anyway it is hidden (`taskAsCall`): its input requests arrive as ordinary requests of this call, its outcome
   * as the response, and `cancel()` cancels it upstream.
   */
  async callToolPlain(route: UpstreamRoute, params: JsonObject, caller: CallerContext, signal: AbortSignal): Promise<UpstreamCall> {
    void route;
    void params;
    void caller;
    void signal;
    throw new Error('callToolPlain: not implemented yet');
  }

  /**
   * A 2025-11-25 task-augmented `tools/call` (`params.task` removed, its `ttl` in `ttlMs`), from the legacy face: always
   * a task, stored before this resolves. The upstream's own task (proxied) where it creates one; otherwise a
   * gateway-owned task, completed from an immediate answer, `input_required` on an immediate question, or running.
   * An immediate JSON-RPC error (invalid arguments, an unknown tool) is no task: it is returned as `{ error }`.
   */
  async createTask(
    route: UpstreamRoute,
    params: JsonObject,
    caller: CallerContext,
    opts: { ttlMs?: number },
    signal: AbortSignal,
  ): Promise<{ record: TaskRecord } | { error: JsonRpcErrorObject }> {
    void route;
    void params;
    void caller;
    void opts;
    void signal;
    throw new Error('createTask: not implemented yet');
  }

  /** The caller's task by id (refreshed when proxied); `UnknownTaskError` for an unknown, expired or foreign one. */
  async task(route: UpstreamRoute, taskId: string, caller: CallerContext): Promise<TaskRecord> {
    void route;
    void taskId;
    void caller;
    throw new Error('task: not implemented yet');
  }

  /**
   * Waits until the task's record has a version above `afterVersion` (or is terminal, or `signal` aborts) and
   * returns the record then; `undefined` if it expired.
   */
  async changed(taskId: string, afterVersion: number, signal: AbortSignal): Promise<TaskRecord | undefined> {
    void taskId;
    void afterVersion;
    void signal;
    throw new Error('changed: not implemented yet');
  }

  /**
   * Answers a task's outstanding input requests by key with bare modern results (the legacy face maps a client's
   * POSTed response to its key); returns the keys answered. The record leaves `input_required` when none remain.
   */
  async answer(route: UpstreamRoute, taskId: string, caller: CallerContext, responses: JsonObject): Promise<string[]> {
    void route;
    void taskId;
    void caller;
    void responses;
    throw new Error('answer: not implemented yet');
  }

  /**
   * A 2025-11-25 `tasks/cancel`: `TaskAlreadyTerminalError` for a task that already ended (checked against the
   * upstream first for a proxied task); otherwise cancelled upstream (or the owned call aborted) and the record
   * `cancelled` before this resolves, for good.
   */
  async cancelTask(route: UpstreamRoute, taskId: string, caller: CallerContext): Promise<TaskRecord> {
    void route;
    void taskId;
    void caller;
    throw new Error('cancelTask: not implemented yet');
  }

  /**
   * A 2025-11-25 `tasks/list` page of the caller's tasks on this route (its session's, when it has no credentials),
   * with an opaque cursor; `InvalidCursorError` for a cursor this gateway did not issue.
   */
  async list(route: UpstreamRoute, caller: CallerContext, cursor: string | undefined): Promise<{ tasks: TaskRecord[]; nextCursor?: string }> {
    void route;
    void caller;
    void cursor;
    throw new Error('list: not implemented yet');
  }

  /** Every applied change of a task record of this principal on this route; returns the remover. */
  watch(route: UpstreamRoute, principal: string, listener: (t: TaskRecord) => void): () => void {
    void route;
    void principal;
    void listener;
    throw new Error('watch: not implemented yet');
  }

  /** tasks/get → the DetailedTask. */
  get(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    return this.service.get(route, req, caller);
  }

  /** tasks/update → answers outstanding input requests. */
  update(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    return this.service.update(route, req, caller);
  }

  /** tasks/cancel → an empty ack. */
  cancel(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    return this.service.cancel(route, req, caller);
  }

  /** Task notifications for a listen stream (see TaskService.subscribe). */
  subscribe(route: UpstreamRoute, principal: string, taskIds: string[], listener: (t: JsonObject) => void): Promise<{ accepted: string[]; stop: () => void }> {
    return this.service.subscribe(route, principal, taskIds, listener);
  }

  /** Stops every live task (on shutdown; owned calls are cancelled upstream). Idempotent. */
  close(): void {
    clearInterval(this.sweeper);
    this.owned.close();
    this.proxied.close();
    this.events.close();
  }

  private upstreamTtl(policy: TaskPolicy): number {
    return clampTtl(policy.ttlMs ?? this.o.defaultTtlMs, policy, this.o.maxTtlMs);
  }

  private windowMs(window: CallWindow, policy: TaskPolicy, route: UpstreamRoute): number {
    if (window === 'budget') return route.timeoutMs;
    return window === 'after-ms' ? (policy.afterMs ?? 0) : 0;
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
        const res = await requestOnce(route.upstream, caller, 'tools/list', cursor ? { cursor } : {}, signal);
        if (!('result' in res)) break;
        for (const [k, v] of toolTaskSupport(res.result)) byName.set(k, v);
        cursor = typeof res.result.nextCursor === 'string' ? res.result.nextCursor : undefined;
        if (!cursor) break;
      }
      route.toolSupport = { at: Date.now(), byName };
    }
    return route.toolSupport?.byName.get(tool) ?? 'forbidden';
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
