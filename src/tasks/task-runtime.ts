/**
 * The task runtime of one gateway: runs each modern `tools/call` as `decideCall` says (a plain call, an MRTR
 * exchange, a proxied upstream task, an upstream task hidden inside the call, or a gateway-owned task), and
 * serves the task methods through the task service. The lifecycles live in their own modules (kinds/owned-tasks,
 * kinds/proxied-tasks, records/task-service, records/task-events); records live in the TaskStore, open upstream calls
 * in this process.
 */
import { randomBytes } from 'node:crypto';
import {
  GatewayError,
  TASKS_REQUIRED_CAPABILITIES,
  asErrorObject,
  modernCreateTaskResult,
  declaresTasks,
  DEFAULT_TASK_MODE,
  drivesJob,
  firstMatch,
  isObject,
  legacyParams,
  needsGateway,
  logFailure,
  NO_LOG,
  progressTokenOf,
  type JsonObject,
  type JsonRpcErrorObject,
  type LayerLogger,
  type ModernRequest,
  type TaskRecord,
  catalogError,
} from '../translate/index.js';
import { callNow, hideTask, settledResponse, UpstreamTimeoutError, type UpstreamCall } from '../upstream/index.js';
import { NO_AUDIT } from './audit.js';
import { callRoute, decideCall, supportMatters, type CallDecision, type CallFacts, type CallWindow } from './calls/call-decision.js';
import { Conversation, MissingCapabilityError, type PumpResult } from './calls/conversation.js';
import { plainOutcome, type BridgedCall, type ForwardHooks, type Outcome } from './calls/mrtr-bridge.js';
import { OwnedTasks } from './kinds/owned-tasks.js';
import { ProxiedTasks } from './kinds/proxied-tasks.js';
import { hidesTool, servesUpstream, type CallerContext, type TaskPolicy, type UpstreamRoute } from './route.js';
import { viaMember } from './federation/member-calls.js';
import { TaskEvents } from './records/task-events.js';
import { checkPollRate, clampTtl, DEFAULT_BOUNDS, TooManyTasksError, type TaskLimits } from './records/task-limits.js';
import { TaskService } from './records/task-service.js';
import { waitForChange } from './records/task-change-wait.js';
import { listPage } from './records/task-list.js';
import { ToolSupport } from './calls/tool-support.js';
import { JobListing } from './jobs/job-listing.js';
import { InstanceBus, mintInstanceId } from './instances/instance-bus.js';
import { LeaseKeeper } from './instances/lease-keeper.js';
import { DEFAULT_POLL_ADVICE, PollAdvisor } from './records/poll-advisor.js';
import { Sealer } from './instances/sealing.js';
import { RuntimeJobs } from './jobs/runtime-jobs.js';
import type { LiveTaskLimits, TaskRuntimeOptions } from './runtime-options.js';

/** How long a lease on running work lasts unless renewed, when the options do not say. */
const DEFAULT_LEASE_MS = 15_000;

const DEFAULT_POLICY: TaskPolicy = { task: DEFAULT_TASK_MODE };

/**
 * How long a legacy client's task-augmented call waits for the upstream's first answer (its task, a result, a
 * question) before the client gets a gateway-owned task instead; a rule's `afterMs` replaces it.
 */
const CREATE_WINDOW_MS = 1_000;

/** The runtime of one gateway. */
export class TaskRuntime {
  private readonly limits: TaskLimits;
  private readonly events: TaskEvents;
  private readonly owned: OwnedTasks;
  /** Proxied tasks (app.ts makes each route's clients of both eras known to it for takeovers). */
  readonly proxied: ProxiedTasks;
  /** Gateway-owned tasks whose call runs on this instance now (not the store's count: that would cost a scan). */
  get ownedLiveCount(): number {
    return this.owned.liveCount;
  }
  /** tasks/get, tasks/update, tasks/cancel and task subscriptions. */
  readonly service: TaskService;
  private readonly sweeper: NodeJS.Timeout;
  private readonly bus: InstanceBus;
  /** Whether this runtime made its bus (then it starts and closes it). */
  private readonly ownBus: boolean;
  private readonly leaseMs: number;
  private readonly routes = new Map<string, UpstreamRoute>();
  /** The task support of each route's tools (a legacy upstream's tools/list). */
  private readonly support: ToolSupport;
  /** tools/list as job rules show it (hidden plumbing, start tools' output schemas). */
  private readonly listing: JobListing;
  /** Learns tools' durations from the task changes heard, and suggests each read's poll interval. */
  readonly advisor: PollAdvisor;
  /** Starts and resumes the jobs of `task: job` rules. */
  private readonly jobs: RuntimeJobs;
  /** Renews this instance's leases and takes over the work whose leases lapsed (a shared store). */
  private readonly leases: LeaseKeeper;
  private started: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private readonly log: LayerLogger;

  constructor(private readonly o: TaskRuntimeOptions) {
    this.leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
    this.support = new ToolSupport(o.toolSupportTtlMs);
    this.listing = new JobListing(o.toolSupportTtlMs, (route, tool) => this.policyFor(route, tool));
    this.ownBus = o.bus === undefined;
    this.bus = o.bus ?? new InstanceBus({ store: o.store, instanceId: mintInstanceId(), heartbeatMs: this.leaseMs });
    this.limits = {
      defaultTtlMs: o.defaultTtlMs,
      maxTtlMs: o.maxTtlMs,
      defaultPollIntervalMs: o.defaultPollIntervalMs,
      maxActivePerPrincipal: o.maxActivePerPrincipal,
      gatherMs: o.bridge.opts.gatherMs,
      maxResultBytes: o.maxResultBytes ?? DEFAULT_BOUNDS.maxResultBytes,
      pollBurst: o.pollBurst ?? DEFAULT_BOUNDS.pollBurst,
      input: o.inputBounds ?? o.bridge.opts.inputBounds ?? DEFAULT_BOUNDS.input,
    };
    this.log = o.log ?? NO_LOG;
    this.events = new TaskEvents(o.store, this.bus.instanceId, { audit: o.audit ?? NO_AUDIT, log: this.log }, this.limits.maxResultBytes);
    this.advisor = new PollAdvisor(o.pollAdvice ?? DEFAULT_POLL_ADVICE, o.defaultPollIntervalMs);
    this.events.on((t) => this.advisor.observe(t));
    this.jobs = new RuntimeJobs({ limits: this.limits, advisor: this.advisor, log: this.log });
    const sealer = o.sealer ?? new Sealer(randomBytes(32));
    this.owned = new OwnedTasks(this.events, this.limits, {
      bus: this.bus,
      sealer,
      leaseMs: this.leaseMs,
      route: (name) => this.routes.get(name),
      policyFor: (route, tool) => this.policyFor(route, tool),
    });
    this.proxied = new ProxiedTasks(this.events, this.limits, {
      instanceId: this.bus.instanceId,
      sealer,
      bus: this.bus,
      leaseMs: this.leaseMs,
      // A job is driven by the rule its record keeps, whatever this instance's configuration says now.
      jobTask: (record, route, caller, snapshot) => this.jobs.resume(record, route, caller, this.policyFor(route, record.tool), snapshot),
    });
    this.leases = new LeaseKeeper({
      store: o.store,
      instanceId: this.bus.instanceId,
      leaseMs: this.leaseMs,
      owned: this.owned,
      proxied: this.proxied,
      log: this.log,
    });
    this.service = new TaskService(
      this.events,
      this.owned,
      this.proxied,
      () => this.limits.defaultPollIntervalMs,
      (route, t) => this.shown(route, t),
      (route, t) => this.pollChecked(route, t),
    );
    // Live work whose record has expired (its TTL passed) is stopped: nobody can ask for it any more.
    this.sweeper = setInterval(
      () =>
        void this.owned
          .sweep()
          .then(() => this.proxied.sweep())
          .catch(logFailure(this.log, 'warn', 'sweep of expired tasks failed')),
      30_000,
    );
    this.sweeper.unref();
    for (const r of o.routes ?? []) this.register(r);
  }

  /**
   * Joins the instances sharing the store: starts this runtime's own bus (when none was given), hears the task
   * changes of other instances, serves their forwarded answers and cancels, and (shared store) renews the leases of
   * the work running here and takes over the work of instances that stopped renewing theirs. Idempotent.
   */
  start(): Promise<void> {
    this.started ??= (async () => {
      if (this.ownBus) await this.bus.start();
      await this.events.start();
      this.owned.start();
      if (this.o.store.scope === 'shared') this.leases.start();
    })();
    return this.started;
  }

  /**
   * Replaces the limits a reload may change: what is decided from now on (new tasks' TTL and poll interval, the
   * per-principal task limit, outcome sizes, the poll limit, input bounds, poll advice) follows them; tasks already
   * created keep what they were given.
   */
  setLimits(next: LiveTaskLimits): void {
    Object.assign(this.limits, {
      defaultTtlMs: next.defaultTtlMs,
      defaultPollIntervalMs: next.defaultPollIntervalMs,
      maxActivePerPrincipal: next.maxActivePerPrincipal,
      maxResultBytes: next.maxResultBytes,
      pollBurst: next.pollBurst,
      input: { ...next.inputBounds },
    });
    this.events.setMaxResultBytes(next.maxResultBytes);
    this.advisor.configure(next.pollAdvice, next.defaultPollIntervalMs);
  }

  /** Gateway-owned tasks whose calls run on this instance now (a draining gateway lets them finish first). */
  get ownedRunning(): number {
    return this.owned.running;
  }

  /** Resolves once no gateway-owned task's call runs on this instance. */
  ownedIdle(): Promise<void> {
    return this.owned.whenIdle();
  }

  /** Adds a route by its name (a task another instance created is taken over against it). */
  register(route: UpstreamRoute): void {
    this.routes.set(route.name, route);
    this.proxied.knowRoute(route);
  }

  /** The policy for a tool on a route. */
  policyFor(route: UpstreamRoute, tool: string): TaskPolicy {
    return firstMatch(route.rules, tool) ?? DEFAULT_POLICY;
  }

  /** One page of the upstream's tools/list as the route's job rules show it to `caller` (docs/jobs.md). */
  listTools(route: UpstreamRoute, caller: CallerContext, result: JsonObject, signal: AbortSignal): Promise<JsonObject> {
    return this.listing.list(route, caller, result, signal);
  }

  /**
   * A modern `tools/call`: a plain call, an MRTR exchange, a proxied task, a hidden upstream task or an owned task. Every
   * window counts from the moment the call is sent (`callNow`), whatever the upstream's response mode.
   */
  async callTool(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks): Promise<Outcome> {
    // A federated endpoint's call comes here already on its member's route (the modern face's `memberCall`, before the
    // relay of a retry, which needs the member's hold).
    const tool = typeof req.params.name === 'string' ? req.params.name : '';
    if (hidesTool(route, tool)) throw new GatewayError('GW_TOOL_NOT_FOUND', { args: [tool] });
    const policy = this.policyFor(route, tool);
    const job = drivesJob(policy.task);
    const who = { tool, origin: 'modern' as const };
    const known = this.factsOf(route, caller, tool, policy, { client: 'modern', declares: declaresTasks(caller.capabilities) }, hooks.signal);
    // Awaited only when the upstream's task support had to be asked (a microtask less on a plain call's path).
    const facts = known instanceof Promise ? await known : known;
    const resuming = req.policy.kind === 'forward-input' && req.requestState !== undefined;
    const first = decideCall({ ...facts, turn: resuming ? 'resume' : 'start' });
    if (first.action === 'refuse') throw new MissingCapabilityError(TASKS_REQUIRED_CAPABILITIES, `a task for tool ${tool}`);
    if (first.action !== 'send') throw new Error(`a ${first.action} decision before the call was sent`);
    // A call that may become a task is refused before it reaches the upstream when the principal is at its limit or
    // the store is full (the upstream work may not be idempotent, and could not be reported); adoption checks again.
    if (first.refuseAtLimit) await this.admitTask(caller);
    // A fresh call that could ask for input within its first round is refused now if it could not be held when it
    // asks (a call that becomes a task at once has no round to hold).
    if (!resuming && this.windowMs(first.window, policy, route, Date.now()) > 0) this.o.bridge.admitHold(caller);

    let call: BridgedCall;
    let sentAt: number | undefined;
    let window: CallWindow = first.window;
    // The params a gateway-owned task's call was sent with (another instance may send them again, `retryOnLoss`).
    let sent = legacyParams(req);
    if (resuming) {
      const resumed = await this.o.bridge.resume(route, req, caller);
      if ('outcome' in resumed) return resumed.outcome;
      call = resumed;
      if (call.conv.task) {
        const next = decideCall({ ...facts, following: true, turn: 'resume' });
        if (next.action === 'send') window = next.window;
      }
    } else if (!first.owned && !first.upstreamTask && first.window === 'budget' && !job) {
      // A plain call (docs/performance.md §The translated hop against a plain proxy): sent at once; an answer that
      // arrived whole with its headers (plain JSON) is the outcome, with no conversation around it; anything else is
      // pumped as below. A client gone meanwhile gets no answer (as a pump that saw it go).
      sentAt = Date.now();
      const direct = await route.upstream.call(caller, 'tools/call', sent, hooks.signal);
      if (hooks.signal.aborted) {
        direct.cancel('client closed the request');
        return { kind: 'error', error: catalogError('GW_REQUEST_CANCELLED') };
      }
      const settled = await settledResponse(direct);
      if (settled) return plainOutcome(route, req, settled.message, false, settled.raw);
      call = { conv: new Conversation(direct), progressToken: progressTokenOf(sent) };
    } else {
      if (first.owned) sent = withProgressToken(sent);
      call = {
        conv: new Conversation(this.sendCall(route, caller, policy, tool, first, sent, hooks.signal, this.upstreamTtl(policy))),
        progressToken: progressTokenOf(sent),
      };
    }
    let round = req;
    let roundStart = sentAt ?? Date.now();
    for (;;) {
      const r = await this.o.bridge.round(route, round, caller, hooks, call, this.windowMs(window, policy, route, roundStart));
      if (r.kind === 'outcome') return r.outcome;
      if (r.kind === 'window-passed') {
        const task = r.conv.task;
        const next = decideCall({ ...facts, following: task !== undefined, passed: window, turn: 'window-passed' });
        if (next.action === 'own-task') return taskResult(this.shown(route, await this.adoptOwned(route, caller, policy, r.conv, who, { params: sent })));
        // The followed task (nobody pulls its call any more) goes on as the client's task, from its state now.
        if (next.action === 'proxy-task' && task)
          return taskResult(this.shown(route, await this.proxied.adopt(route, caller, policy, task, who, { resync: true })), task.created.meta);
        if (next.action === 'wait') {
          window = next.window;
          call = { conv: r.conv };
          continue;
        }
        r.conv.cancel('gateway error');
        throw new UpstreamTimeoutError(`the upstream call took longer than ${route.timeoutMs} ms`);
      }
      if (r.kind === 'response') return plainOutcome(route, req, r.message, r.resumed);
      const open = window === 'after-ms' && Date.now() < roundStart + (policy.afterMs ?? 0);
      const next = decideCall({ ...facts, turn: open ? 'task-created-in-window' : 'task-created' });
      if (next.action === 'proxy-task') return taskResult(this.shown(route, await this.proxied.adopt(route, caller, policy, r.task, who)), r.task.created.meta);
      // Followed inside this request (docs/tasks.md): its questions are MRTR rounds of this request, answered into the
      // task by the retry, and its outcome the answer; for the rest of the first window, or to its end.
      const { requestState: _s, inputResponses: _r, ...fresh } = req;
      round = fresh;
      if (next.action === 'follow-task' && next.window === 'after-ms') {
        window = 'after-ms';
      } else {
        window = 'budget';
        roundStart = Date.now();
      }
      // A job followed inside the call reports its status tool's message as the call's progress.
      const token = job ? progressTokenOf(sent) : undefined;
      call = { conv: Conversation.following(r.task, token !== undefined ? { progressToken: token } : {}) };
    }
  }

  /**
   * A 2025-11-25 `tools/call` WITHOUT `task`, from the legacy face: the events of an ordinary call, as `decideCall`
   * says (never a task for this client, never refused for one); where the upstream requires or returns a task anyway
   * it is hidden (`hideTask`): its input requests arrive as ordinary requests of this call, its outcome as the
   * response, and `cancel()` cancels it upstream.
   */
  async callToolPlain(route: UpstreamRoute, params: JsonObject, caller: CallerContext, signal: AbortSignal): Promise<UpstreamCall> {
    const tool = typeof params.name === 'string' ? params.name : '';
    if (route.federation) return viaMember(route, params, caller, signal, (r, own) => this.callToolPlain(r, own, caller, signal));
    if (hidesTool(route, tool)) throw new GatewayError('GW_TOOL_NOT_FOUND', { args: [tool] });
    const policy = this.policyFor(route, tool);
    const first = decideCall({ ...(await this.factsOf(route, caller, tool, policy, { client: 'legacy', declares: false }, signal)), turn: 'start' });
    if (first.action !== 'send') throw new Error(`a ${first.action} decision for a call that takes no task`);
    // A plain call is the upstream's call itself (the face pumps it; nothing here counts a window from its sending).
    if (!first.upstreamTask && !first.owned && !drivesJob(policy.task)) return route.upstream.call(caller, 'tools/call', params, signal);
    const call = this.sendCall(route, caller, policy, tool, first, params, signal, this.upstreamTtl(policy));
    if (!first.upstreamTask) return call;
    // A job followed inside the call reports its status tool's message as the call's progress.
    const token = drivesJob(policy.task) ? progressTokenOf(params) : undefined;
    return hideTask(call, this.log, token !== undefined ? { progressToken: token } : {});
  }

  /**
   * Whether a plain call of `tool` (no task asked for) needs nothing of the gateway: no rule of the route's hides it or
   * makes it the gateway's, and the upstream does not insist on running it as a task. Such a call may pass through to
   * the upstream as it came (a federated endpoint's 2025-11-25 call on its member).
   */
  async passesPlainCall(route: UpstreamRoute, tool: string, caller: CallerContext, signal?: AbortSignal): Promise<boolean> {
    const policy = this.policyFor(route, tool);
    if (hidesTool(route, tool) || needsGateway(policy)) return false;
    // The route `callToolPlain`'s decision takes, asked once (its facts without `supportMatters`' three askings).
    const support = await this.support.of(route, caller, tool, signal);
    return callRoute({ mode: policy.task, declares: false, client: 'legacy', support, upstreamDecides: route.upstream.era === 'modern' }) === 'plain';
  }

  /**
   * A 2025-11-25 task-augmented `tools/call` (`params.task` removed, its `ttl` in `ttlMs`), from the legacy face: always
   * a task, stored before this resolves, as `decideCall` says. The upstream's own task (proxied) where it creates one;
   * otherwise a gateway-owned task, completed from an immediate answer, `input_required` on an immediate question, or
   * running. An immediate JSON-RPC error (invalid arguments, an unknown tool) is no task: it is returned as `{ error }`.
   */
  async createTask(
    route: UpstreamRoute,
    params: JsonObject,
    caller: CallerContext,
    opts: { ttlMs?: number },
    signal: AbortSignal,
  ): Promise<{ record: TaskRecord; meta?: JsonObject } | { error: JsonRpcErrorObject }> {
    if (route.federation) return viaMember(route, params, caller, signal, (r, own) => this.createTask(r, own, caller, opts, signal));
    const created = await this.createRecord(route, params, caller, opts, signal);
    return 'record' in created ? { ...created, record: this.shown(route, created.record) } : created;
  }

  /** `createTask` before the record is shown (its poll interval suggested). */
  private async createRecord(
    route: UpstreamRoute,
    params: JsonObject,
    caller: CallerContext,
    opts: { ttlMs?: number },
    signal: AbortSignal,
  ): Promise<{ record: TaskRecord; meta?: JsonObject } | { error: JsonRpcErrorObject }> {
    const tool = typeof params.name === 'string' ? params.name : '';
    if (hidesTool(route, tool)) throw new GatewayError('GW_TOOL_NOT_FOUND', { args: [tool] });
    const policy = this.policyFor(route, tool);
    const who = { tool, origin: 'legacy' as const, ...(caller.session !== undefined ? { session: caller.session } : {}) };
    const facts = await this.factsOf(route, caller, tool, policy, { client: 'legacy', declares: true }, signal);
    const first = decideCall({ ...facts, turn: 'start' });
    // A tool that can be no task (its mode makes none, or the upstream cannot run it as one and no rule wraps it) takes no
    // `task` (2025-11-25 basic/utilities/tasks §Tool-Level Negotiation: SHOULD answer -32601).
    if (first.action === 'refuse-task') return { error: catalogError('GW_TASK_NOT_SUPPORTED', { args: [tool] }) };
    if (first.action !== 'send') throw new Error(`a ${first.action} decision for a call that asks a task`);
    // A call here becomes a task: a principal at its limit (or a full store) is refused before the upstream sees it.
    if (first.refuseAtLimit) await this.admitTask(caller);
    const ttlMs = clampTtl(opts.ttlMs ?? policy.ttlMs ?? this.limits.defaultTtlMs, policy, this.limits.maxTtlMs);
    // The call is not bound to this request's signal (it may outlive it as a task); the client leaving before its task
    // exists cancels it.
    const sent = first.owned ? withProgressToken(params) : params;
    const conv = new Conversation(this.sendCall(route, caller, policy, tool, first, sent, undefined, ttlMs));
    /** What a turn's decision makes of the call: its task (owned or proxied), or the error that answers it. */
    const act = async (d: CallDecision, r?: PumpResult): Promise<{ record: TaskRecord; meta?: JsonObject } | { error: JsonRpcErrorObject }> => {
      if (d.action === 'own-task') return { record: await this.adoptOwned(route, caller, policy, conv, who, { ttlMs, params: sent }) };
      if (d.action === 'proxy-task' && r?.kind === 'task') {
        // The creating result's `_meta` (e.g. io.modelcontextprotocol/model-immediate-response) is passed through.
        const meta = r.task.created.meta;
        const record = await this.proxied.adopt(route, caller, policy, r.task, who);
        return meta && Object.keys(meta).length > 0 ? { record, meta } : { record };
      }
      if (d.action === 'answer' && r?.kind === 'response' && 'error' in r.message) return { error: asErrorObject(r.message.error) };
      conv.cancel('gateway error');
      throw new Error(`a ${d.action} decision for a call that asks a task`);
    };
    // A gateway task at once (2025-11-25 basic/utilities/tasks §Creating Tasks): the call runs in the background.
    if (first.window === 'none') return act(decideCall({ ...facts, turn: 'window-passed', passed: 'none' }));
    let r: PumpResult;
    try {
      r = await conv.pump({
        signal,
        capabilities: caller.capabilities,
        inputAllowed: true,
        // The client asked for a task and must get one soon (2025-11-25 basic/utilities/tasks §Creating Tasks: as soon
        // as possible): an upstream that has not answered within the creation window (a modern server running the
        // tool synchronously, a slow one) gets a gateway-owned task, which follows an upstream task created later.
        // A job's start tool answers with its handle within the call budget: its task is then the job itself, which any
        // instance can go on polling (a gateway-owned task following it would end with this instance).
        deadlineAt: Date.now() + this.windowMs(first.window, policy, route, Date.now()),
        gatherMs: this.limits.gatherMs,
        log: this.log,
        bounds: this.limits.input,
        notify: () => {},
      });
    } catch (e) {
      conv.cancel('gateway error');
      throw e;
    }
    switch (r.kind) {
      case 'task':
        return act(decideCall({ ...facts, turn: 'task-created' }), r);
      case 'response':
        return act(decideCall({ ...facts, turn: 'error' in r.message ? 'error' : 'result' }), r);
      case 'input':
        // A question before any task: the gateway's task carries it (2025-11-25 input_required).
        return act(decideCall({ ...facts, turn: 'input' }), r);
      case 'deadline':
        return act(decideCall({ ...facts, turn: 'window-passed', passed: first.window }), r);
      case 'aborted':
        conv.cancel('client closed the request');
        throw new Error('the client closed the request');
    }
  }

  /** The caller's task by id (refreshed when proxied); `UnknownTaskError` for an unknown, expired or foreign one. */
  async task(route: UpstreamRoute, taskId: string, caller: CallerContext): Promise<TaskRecord> {
    return this.shown(route, await this.service.refresh(await this.service.lookup(route, taskId, caller), { route, caller }));
  }

  /**
   * A 2025-11-25 `tasks/get` (a status poll, unlike `tasks/result`): `task`, after the poll limit (`GW_POLL_TOO_FAST`
   * beyond `tasks.pollBurst` polls per the task's pollIntervalMs).
   */
  async poll(route: UpstreamRoute, taskId: string, caller: CallerContext): Promise<TaskRecord> {
    const record = await this.service.lookup(route, taskId, caller);
    await this.pollChecked(route, record);
    return this.shown(route, await this.service.refresh(record, { route, caller }));
  }

  /**
   * The poll limit for a status poll of a task the caller owns (checked after the ownership check, so that an unknown
   * or foreign id answers as always; before the upstream is asked, for a proxied task). The window is the interval the
   * task suggests now (tasks extension §Task Polling: pollIntervalMs), which adaptive polling varies.
   */
  private pollChecked(route: UpstreamRoute, record: TaskRecord): Promise<void> {
    const interval = this.shown(route, record).pollIntervalMs ?? this.limits.defaultPollIntervalMs;
    return checkPollRate(this.o.store, record, interval, this.limits.pollBurst);
  }

  /** Refuses a call that may become a task when its principal is at its limit or the store has no room. */
  private async admitTask(caller: CallerContext): Promise<void> {
    if (await this.owned.atLimit(caller.principal)) throw new TooManyTasksError(this.limits.maxActivePerPrincipal);
    await this.o.store.ensureRoom();
  }

  /** A record as a read shows it: its `pollIntervalMs` suggested now, from the tool's learned durations (poll-advisor). */
  shown(route: UpstreamRoute, record: TaskRecord): TaskRecord {
    const own = route.name === record.upstream ? route : (this.routes.get(record.upstream) ?? route);
    return this.advisor.advise(record, this.policyFor(own, record.tool));
  }

  /**
   * Waits until the task's record has a version above `afterVersion` (or is terminal, or `signal` aborts) and
   * returns the record then; `undefined` if it expired.
   */
  changed(taskId: string, afterVersion: number, signal: AbortSignal): Promise<TaskRecord | undefined> {
    return waitForChange(this.o.store, this.events, taskId, afterVersion, signal);
  }

  /**
   * Answers a task's outstanding input requests by key with bare modern results (the legacy face maps a client's
   * POSTed response to its key); returns the keys answered. The record leaves `input_required` when none remain.
   */
  async answer(route: UpstreamRoute, taskId: string, caller: CallerContext, responses: JsonObject): Promise<string[]> {
    return this.service.answer(await this.service.lookup(route, taskId, caller), responses, { route, caller });
  }

  /**
   * A 2025-11-25 `tasks/cancel`: `TaskAlreadyTerminalError` for a task that already ended (checked against the
   * upstream first for a proxied task); otherwise cancelled upstream (or the owned call aborted) and the record
   * `cancelled` before this resolves, for good.
   */
  async cancelTask(route: UpstreamRoute, taskId: string, caller: CallerContext): Promise<TaskRecord> {
    const record = await this.service.lookup(route, taskId, caller);
    return record.kind === 'owned' ? this.owned.cancelStrict(record) : this.proxied.cancelStrict(record, { route, caller });
  }

  /**
   * A 2025-11-25 `tasks/list` page of the caller's tasks on this route (its session's, when it has no credentials),
   * with an opaque cursor; `InvalidCursorError` for a cursor this gateway did not issue.
   */
  async list(route: UpstreamRoute, caller: CallerContext, cursor: string | undefined): Promise<{ tasks: TaskRecord[]; nextCursor?: string }> {
    const page = await listPage(this.o.store, route, caller, cursor);
    return { ...page, tasks: page.tasks.map((r) => this.shown(route, r)) };
  }

  /** Every applied change of a task record of this principal on this route; returns the remover. */
  watch(route: UpstreamRoute, principal: string, listener: (t: TaskRecord) => void): () => void {
    return this.events.on((t) => {
      if (t.principal === principal && servesUpstream(route, t.upstream)) listener(t);
    });
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

  /**
   * Stops every live task (on shutdown; owned calls are cancelled upstream): with a shared store their leases are
   * handed over, so that another instance takes them over at once; with a one-instance store they end failed.
   * Never rejects. Idempotent.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.sweeper);
      this.leases.stop();
      // Best effort on shutdown: each part is closed whatever became of the one before.
      await this.started?.catch(logFailure(this.log, 'debug', 'closing a runtime whose start had failed'));
      await this.owned.close().catch(logFailure(this.log, 'warn', 'owned tasks did not close cleanly'));
      await this.proxied.close().catch(logFailure(this.log, 'warn', 'proxied tasks did not close cleanly'));
      this.events.close();
      if (this.ownBus) await this.bus.close().catch(logFailure(this.log, 'warn', 'instance bus did not close cleanly'));
    })();
    return this.closing;
  }

  /** A gateway-owned task for this call (its route remembered for a takeover by this instance). */
  private adoptOwned(...args: Parameters<OwnedTasks['adopt']>): Promise<TaskRecord> {
    this.register(args[0]);
    return this.owned.adopt(...args);
  }

  private upstreamTtl(policy: TaskPolicy): number {
    return clampTtl(policy.ttlMs ?? this.limits.defaultTtlMs, policy, this.limits.maxTtlMs);
  }

  /** What is left of a round's window that started at `since` (0: none, the window has passed). */
  private windowMs(window: CallWindow, policy: TaskPolicy, route: UpstreamRoute, since: number): number {
    const length =
      window === 'budget'
        ? route.timeoutMs
        : window === 'after-ms'
          ? (policy.afterMs ?? 0)
          : window === 'creation'
            ? Math.min(policy.afterMs ?? CREATE_WINDOW_MS, route.timeoutMs)
            : 0;
    return Math.max(0, since + length - Date.now());
  }

  /**
   * The facts `decideCall` decides a tool's call from. The upstream's task support is asked only when the decision
   * can depend on it (a job is made of the server's own tools, a wrapped call a 2025-11-25 client asked as a task is a
   * gateway task at once: no tools/list for them).
   */
  private factsOf(
    route: UpstreamRoute,
    caller: CallerContext,
    tool: string,
    policy: TaskPolicy,
    client: Pick<CallFacts, 'client' | 'declares'>,
    signal: AbortSignal | undefined,
  ): Omit<CallFacts, 'turn'> | Promise<Omit<CallFacts, 'turn'>> {
    const known = { mode: policy.task, ...client, upstreamDecides: route.upstream.era === 'modern', windowed: policy.afterMs !== undefined };
    if (!supportMatters(known)) return { ...known, support: 'forbidden' };
    return this.support.of(route, caller, tool, signal).then((support) => ({ ...known, support }));
  }

  /**
   * The upstream call a `send` decision makes: a job's start tool (an ordinary call whose handle makes the task,
   * jobs/job-task.ts), a task-augmented call, or a plain one (patient where it may become a gateway-owned task).
   */
  private sendCall(
    route: UpstreamRoute,
    caller: CallerContext,
    policy: TaskPolicy,
    tool: string,
    send: Extract<CallDecision, { action: 'send' }>,
    params: JsonObject,
    signal: AbortSignal | undefined,
    ttlMs: number,
  ): UpstreamCall {
    if (drivesJob(policy.task)) return this.jobs.start(route, caller, policy, tool, callNow(route.upstream, caller, 'tools/call', params, signal), ttlMs);
    const opts = send.upstreamTask ? { task: { ttlMs } } : send.owned ? { patient: true } : undefined;
    return callNow(route.upstream, caller, 'tools/call', params, signal, opts);
  }
}

/**
 * The modern `CreateTaskResult` outcome for a task record (tasks extension §Task Creation), with the upstream's creating
 * `_meta` (e.g. `io.modelcontextprotocol/model-immediate-response`) passed through.
 */
function taskResult(record: TaskRecord, meta?: JsonObject): Outcome {
  return { kind: 'result', result: modernCreateTaskResult(record, meta) };
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
