/**
 * The MRTR bridge (2026-07-28 basic/patterns/mrtr; docs/how-it-works.md §How the modern face works): input requests that arrive on an
 * upstream call become an `InputRequiredResult`; the call is held open (bounded in time and number) until the
 * client's retry brings `inputResponses` with the integrity-protected `requestState`, then resumes. The bridge
 * runs one round at a time and reports how it ended; what the call becomes is the caller's decision
 * (`decideCall` for `tools/call`, a plain answer for other requests). Progress and opted-in log messages are
 * relayed on the client's stream.
 *
 * A retry may reach any instance of the gateway (2026-07-28 basic/transports §Stateless): the state names the instance
 * holding the call, and a retry that lands elsewhere is relayed there whole over the instance bus (its caller sealed),
 * run there as if it had arrived there, and its answer comes back; an instance that is gone is a clear error.
 */
import { randomBytes } from 'node:crypto';
import {
  ERROR_CATALOG,
  GatewayError,
  META,
  asErrorObject,
  decodeRequestState,
  encodeRequestState,
  isObject,
  legacyParams,
  logFailure,
  methodPolicy,
  NO_LOG,
  modernError,
  modernResult,
  progressTokenOf,
  splicedResult,
  relayedOnRequestStream,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type ErrorKind,
  type JsonRpcResponse,
  type LayerLogger,
  type ModernRequest,
  type CacheHints,
  Tally,
  catalogError,
} from '../../translate/index.js';
import {
  callNow,
  UpstreamBusyError,
  UpstreamDownError,
  UpstreamHttpError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
  type UpstreamTask,
} from '../../upstream/index.js';
import { NO_AUDIT, type AuditLog } from '../audit.js';
import { NO_TASK_METRICS, type TaskMetrics } from '../metrics.js';
import { Conversation } from './conversation.js';
import { InstanceGoneError, RemoteError, type InstanceBus } from '../instances/instance-bus.js';
import type { CallerContext, UpstreamRoute } from '../route.js';
import type { Sealer } from '../instances/sealing.js';

/**
 * The outcome of a forwarded request, already in modern shape. `text`: the result's JSON text, spliced from the
 * upstream's own (`splicedResult`); whoever changes `result` leaves it out.
 */
export type Outcome = { kind: 'result'; result: JsonObject; text?: string } | { kind: 'error'; error: JsonRpcErrorObject };

/** Per-request hooks from the HTTP edge. */
export interface ForwardHooks {
  /** The client's request; aborted when the client goes away. */
  signal: AbortSignal;
  /** Relays a notification on the client's response stream. */
  notify(n: JsonRpcNotification): void;
}

/** Bridge settings. */
export interface MrtrOptions {
  /** HMAC key for request states. */
  stateKey: Uint8Array;
  /** How long a held call waits for the retry. */
  holdMs: number;
  /** Most calls held at once (`input.maxHeldCalls`). */
  maxHeld: number;
  /** Most calls held at once for one principal (`input.maxHeldCallsPerPrincipal`; default 100). */
  maxHeldPerPrincipal?: number;
  /** How much input one call may ask (`input.maxRequestsPerRound`, `input.maxRoundsPerTask`; default 32 and 100). */
  inputBounds?: { maxRequestsPerRound: number; maxRounds: number };
  /** How long to wait for further concurrent input requests once one arrived. */
  gatherMs: number;
  /**
   * The instances sharing the store: a retry whose call another instance holds is relayed to it. Absent: this is the
   * only instance.
   */
  bus?: InstanceBus;
  /** Seals a relayed retry's caller (it carries the client's credentials); needed with `bus`. */
  sealer?: Sealer;
  /** How often a relayed retry checks that the holding instance still lives (default 1 s). */
  livenessCheckMs?: number;
  /** Where MRTR input requests and their answers are recorded (default none). */
  audit?: AuditLog;
  /** Where each round that asks the client for input is counted (default nowhere). */
  metrics?: TaskMetrics;
  /** Where failures nobody is answered about are logged (default nowhere). */
  log?: LayerLogger;
}

/** The hold limits a reload may replace (`MrtrBridge.setLimits`). */
export type LiveHoldLimits = Pick<MrtrOptions, 'holdMs' | 'maxHeld' | 'maxHeldPerPrincipal' | 'inputBounds'>;

/**
 * Runs a relayed retry on the instance holding its call exactly as the edge runs one that arrived there (the edge
 * registers it: `tools/call` through the runtime, the rest through `forward`).
 */
export type RelayedDispatch = (route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks) => Promise<Outcome>;

/** Held calls per principal when the options do not say (the configuration's default). */
const DEFAULT_MAX_HELD_PER_PRINCIPAL = 100;

/** Input one call may ask when the options do not say (the configuration's defaults). */
const DEFAULT_INPUT_BOUNDS = { maxRequestsPerRound: 32, maxRounds: 100 };

/** The bus request kind of a relayed retry, and the purpose its caller is sealed for. */
const RELAY_KIND = 'mrtr.retry';

/** A call held between MRTR rounds (opaque outside the bridge). */
export interface Hold {
  id: string;
  /** The upstream route the held call runs on; a state is only valid on that route. */
  route: string;
  /** That route (a relayed retry runs over it). */
  on: UpstreamRoute;
  conv: Conversation;
  /** The progress token the held call was sent upstream with (its progress goes to each retry's own token). */
  progressToken: string | number | undefined;
  principal: string;
  method: string;
  name: string;
  round: number;
  busy: boolean;
  timer: NodeJS.Timeout | undefined;
}

/** A call the bridge runs a round of: a fresh one, or a held one that a retry resumed. */
export interface BridgedCall {
  conv: Conversation;
  hold?: Hold;
  /** The progress token a fresh call was sent upstream with (a held one's is its hold's). */
  progressToken?: string | number | undefined;
}

/** How a round ended. */
export type RoundResult =
  /** The upstream answered; `resumed`: after an MRTR round (its result must not be cached). */
  | { kind: 'response'; message: JsonRpcResponse; resumed: boolean }
  /** The round's window passed; the call still runs and is the caller's to take or cancel. */
  | { kind: 'window-passed'; conv: Conversation }
  /** The upstream answered a call sent with `CallOptions.task` by creating a task; it is the caller's to serve. */
  | { kind: 'task'; task: UpstreamTask; resumed: boolean }
  /** The client's answer is ready: an `InputRequiredResult` (the call is held), or a cancellation. */
  | { kind: 'outcome'; outcome: Outcome };

/**
 * Thrown for an invalid `requestState` (GW_INVALID_REQUEST_STATE, 400 with -32602). Every invalid state gets the one
 * catalog message, whatever is wrong with it (no oracle for forged, foreign or expired states); `detail` says what
 * for the operator log only.
 */
export class InvalidRequestStateError extends GatewayError {
  constructor(readonly detail = '') {
    super('GW_INVALID_REQUEST_STATE');
  }
}

/**
 * The one refusal of every invalid state: forged, another principal's, expired, replayed, for another request or
 * upstream, or a round being continued already. One answer, so that a state reveals nothing about whose it is or
 * whether its round lives (2026-07-28 basic/patterns/mrtr §Server Requirements).
 */
function invalidState(detail: string): InvalidRequestStateError {
  return new InvalidRequestStateError(detail);
}

/** The cache hints of an MRTR retry's result. */
const NO_CACHE: CacheHints = { ttlMs: 0, scope: 'private' };

/** A legacy response → the modern outcome of a request that was forwarded as it is. */
export function plainOutcome(route: UpstreamRoute, req: ModernRequest, m: JsonRpcResponse, resumed: boolean, raw?: string): Outcome {
  if ('error' in m) {
    const uri = typeof req.params.uri === 'string' ? { uri: req.params.uri } : {};
    return { kind: 'error', error: modernError(asErrorObject(m.error), { method: req.method, ...uri }) };
  }
  const identity = route.upstream.knownIdentity;
  const upstream = isObject(m.result) ? m.result : {};
  // 2026-07-28 server/utilities/caching: results of MRTR retries MUST NOT be cached.
  const opts: { serverInfo?: JsonObject; cache: CacheHints } = { cache: resumed ? NO_CACHE : route.cache };
  if (identity) opts.serverInfo = identity.serverInfo;
  const result = modernResult(req.method, upstream, opts);
  // A tool's result changes only at its top level: written from the upstream's own text (a large result is not
  // serialized again), when the answer was that one message.
  const text = raw !== undefined && req.method === 'tools/call' ? splicedResult(raw, upstream, result) : undefined;
  return text === undefined ? { kind: 'result', result } : { kind: 'result', result, text };
}

/** The MRTR bridge of one gateway: holds calls that asked for input and resumes them on the client's retry. */
export class MrtrBridge {
  private readonly holds = new Map<string, Hold>();
  private readonly audit: AuditLog;
  private readonly metrics: TaskMetrics;
  private readonly log: LayerLogger;
  /** Held calls per principal (no principal takes every hold: `input.maxHeldCallsPerPrincipal`). */
  private readonly heldBy = new Tally();

  constructor(readonly opts: MrtrOptions) {
    this.audit = opts.audit ?? NO_AUDIT;
    this.metrics = opts.metrics ?? NO_TASK_METRICS;
    this.log = opts.log ?? NO_LOG;
  }

  /**
   * Replaces the hold limits a reload may change: holds made from now on follow them (a hold's timer already set keeps
   * its length).
   */
  setLimits(next: LiveHoldLimits): void {
    Object.assign(this.opts, next);
  }

  /** The id request states name as the holder of this bridge's calls. */
  get instanceId(): string {
    return this.opts.bus?.instanceId ?? 'local';
  }

  /** Whether `req` may be a retry whose held call another instance holds (`relay` has something to look at). */
  mayRelay(req: ModernRequest): boolean {
    return req.policy.kind === 'forward-input' && req.requestState !== undefined && this.opts.bus !== undefined;
  }

  /**
   * A retry whose call another instance holds: relayed there whole and answered with its outcome; `undefined` when
   * the retry is this instance's to serve (no state, a state this instance holds, or one it refuses itself).
   * Rejects with `InstanceGoneError` when the holder is gone (no heartbeat, no acknowledgement, or its heartbeat
   * stops while it runs the retry), and with the error the holder's run failed with, rebuilt by name.
   */
  async relay(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks): Promise<Outcome | undefined> {
    const { bus, sealer } = this.opts;
    if (!bus || !sealer || !this.mayRelay(req) || req.requestState === undefined) return undefined;
    const decoded = decodeRequestState(req.requestState, this.opts.stateKey, Date.now(), { sub: caller.principal, method: req.method, name: nameOf(req) });
    if (!decoded.ok || decoded.value.inst === bus.instanceId) return undefined;
    const holder = decoded.value.inst;
    // A holder that dies after acknowledging sends no answer: its heartbeat lapsing ends the wait.
    const gone = new AbortController();
    const check = setInterval(() => {
      bus.alive(holder).then(
        (alive) => {
          if (!alive) gone.abort(new InstanceGoneError(holder));
        },
        logFailure(this.log, 'debug', 'liveness of the holding instance not checked; checked again shortly'),
      );
    }, this.opts.livenessCheckMs ?? 1_000);
    check.unref();
    try {
      const answer = await bus.request(
        holder,
        RELAY_KIND,
        { route: route.name, req: req as unknown as JsonObject, caller: sealer.seal(RELAY_KIND, caller as unknown as JsonObject) },
        { signal: AbortSignal.any([hooks.signal, gone.signal]), onNotify: (n) => hooks.notify(n as unknown as JsonRpcNotification) },
      );
      if (isObject(answer.thrown)) throw rebuildError(answer.thrown);
      if (!isOutcome(answer.outcome)) throw new Error('the holding instance answered a relayed retry without an outcome');
      return answer.outcome;
    } catch (e) {
      if (hooks.signal.aborted) return CANCELLED;
      if (gone.signal.aborted) throw gone.signal.reason;
      if (e instanceof RemoteError) throw rebuildError({ name: e.remoteName, message: e.message });
      throw e;
    } finally {
      clearInterval(check);
    }
  }

  /**
   * Serves retries other instances relay here with `dispatch` (the edge's own way of running a request): the caller
   * is opened, the held call looked up, notifications go back to the asking instance, and the asker giving up aborts
   * the run. Failures travel back described, so that the asker answers what this instance would have.
   */
  serveRelayed(dispatch: RelayedDispatch): void {
    const { bus, sealer } = this.opts;
    if (!bus || !sealer) return;
    bus.handle(RELAY_KIND, async (payload, ctx) => {
      try {
        const opened = typeof payload.caller === 'string' ? sealer.open(RELAY_KIND, payload.caller) : undefined;
        const raw = payload.req;
        if (!opened || typeof opened.principal !== 'string' || !isObject(raw) || typeof raw.method !== 'string' || typeof raw.requestState !== 'string') {
          throw invalidState('the relayed retry could not be read');
        }
        const caller = opened as unknown as CallerContext;
        const req = { ...(raw as unknown as ModernRequest), policy: methodPolicy(raw.method) };
        const decoded = decodeRequestState(raw.requestState, this.opts.stateKey, Date.now(), { sub: caller.principal, method: req.method, name: nameOf(req) });
        if (!decoded.ok) throw invalidState(decoded.reason);
        const hold = this.holds.get(decoded.value.hold);
        if (!hold || hold.route !== payload.route || hold.principal !== caller.principal) throw invalidState('the round it continues has ended');
        const outcome = await dispatch(hold.on, req, caller, { signal: ctx.signal, notify: (n) => ctx.notify(n as unknown as JsonObject) });
        return { outcome: outcome as unknown as JsonObject };
      } catch (e) {
        return { thrown: describeError(e) };
      }
    });
  }

  /** Number of calls currently held for input. */
  get heldCount(): number {
    return this.holds.size;
  }

  /**
   * Refuses, before the upstream sees it, a fresh call that could ask for input (its request declares an input kind)
   * when it could not be held if it did: the principal holds its share of calls, or the gateway holds all it may.
   * `GW_TOO_MANY_HELD_CALLS` / `GW_HELD_CALLS_FULL` (503 with Retry-After). A slot that is taken meanwhile is checked
   * again when the call asks (`ask`).
   */
  admitHold(caller: CallerContext): void {
    const c = caller.capabilities;
    if (!isObject(c.elicitation) && !isObject(c.sampling) && !isObject(c.roots)) return;
    this.checkHoldRoom(caller.principal);
  }

  private checkHoldRoom(principal: string): void {
    const perPrincipal = this.opts.maxHeldPerPrincipal ?? DEFAULT_MAX_HELD_PER_PRINCIPAL;
    if (this.heldBy.of(principal) >= perPrincipal) throw new GatewayError('GW_TOO_MANY_HELD_CALLS', { args: [perPrincipal] });
    if (this.holds.size >= this.opts.maxHeld) throw new GatewayError('GW_HELD_CALLS_FULL');
  }

  /** Forwards one modern request (not a task candidate) and returns its modern outcome. */
  async forward(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks): Promise<Outcome> {
    let call: BridgedCall;
    if (req.policy.kind === 'forward-input' && req.requestState !== undefined) {
      const resumed = await this.resume(route, req, caller);
      if ('outcome' in resumed) return resumed.outcome;
      call = resumed;
    } else {
      if (req.policy.kind === 'forward-input') this.admitHold(caller);
      const sent = legacyParams(req);
      call = { conv: new Conversation(callNow(route.upstream, caller, req.method, sent, hooks.signal)), progressToken: progressTokenOf(sent) };
    }
    const r = await this.round(route, req, caller, hooks, call, route.timeoutMs);
    if (r.kind === 'outcome') return r.outcome;
    if (r.kind === 'window-passed') {
      r.conv.cancel('gateway error');
      throw new UpstreamTimeoutError(`the upstream call took longer than ${route.timeoutMs} ms`);
    }
    if (r.kind === 'task') {
      // Never asked for: a request forwarded here is sent without `CallOptions.task`.
      void r.task.cancel().catch(logFailure(this.log, 'debug', 'unasked-for upstream task not cancelled', { upstream: route.name, method: req.method }));
      r.task.release();
      throw new Error(`the upstream answered ${req.method} with a task it was not offered`);
    }
    return plainOutcome(route, req, r.message, r.resumed);
  }

  /**
   * Takes the held call that a retry's `requestState` continues and answers it with the retry's `inputResponses`.
   * 2026-07-28 basic/patterns/mrtr §Server Requirements: a round answered only in part (or with malformed answers) is
   * asked again at once.
   */
  async resume(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<BridgedCall | { outcome: Outcome }> {
    const name = nameOf(req);
    const hold = this.take(route, req, caller, name);
    try {
      // Every answer is checked against what was asked before any goes upstream; a refused map leaves the round
      // exactly as it was, so the same requestState carries a corrected retry.
      hold.conv.input.check(req.inputResponses ?? {});
    } catch (e) {
      this.untake(hold);
      throw e;
    }
    const answered = await hold.conv.answer(req.inputResponses ?? {});
    if (answered.length > 0) this.audit.record('task.input_answered', { principal: caller.principal, upstream: route.name, tool: name, era: 'modern' });
    if (hold.conv.input.size > 0) return { outcome: this.ask(route, hold, hold.conv, req, caller, name, hold.progressToken) };
    return { conv: hold.conv, hold };
  }

  /**
   * Runs one round of a call: pumps it until it answers, asks for input (the call is held and the client gets
   * an `InputRequiredResult`), outlives `windowMs` (0: at once), or the client goes away (the call is cancelled).
   */
  async round(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks, call: BridgedCall, windowMs: number): Promise<RoundResult> {
    const { conv, hold } = call;
    if (windowMs === 0) {
      // No window: whatever the call sends next is no longer this request's.
      this.drop(hold);
      return { kind: 'window-passed', conv };
    }
    const progressToken = progressTokenOf(req.params);
    // The upstream sends progress under the token the call went out with; after an MRTR round the retry may bring a
    // token of its own, and the progress belongs to the request now waiting (none: it asked for none).
    const upstreamToken = hold ? hold.progressToken : call.progressToken;
    try {
      const r = await conv.pump({
        signal: hooks.signal,
        capabilities: caller.capabilities,
        inputAllowed: req.policy.kind === 'forward-input',
        ...(hold || !req.inputResponses ? {} : { offered: req.inputResponses }),
        deadlineAt: Date.now() + windowMs,
        gatherMs: this.opts.gatherMs,
        log: this.log,
        bounds: this.opts.inputBounds ?? DEFAULT_INPUT_BOUNDS,
        // Progress for the client's own token and the log messages it asked for (the rest has no modern
        // counterpart on a request stream).
        notify: (n) => {
          const m = progressFor(n, upstreamToken, progressToken);
          if (m && relayedOnRequestStream(m, { progressToken, logLevel: caller.logLevel })) hooks.notify(m);
        },
      });
      switch (r.kind) {
        case 'response':
          this.drop(hold);
          return { kind: 'response', message: r.message, resumed: hold !== undefined };
        case 'task':
          this.drop(hold);
          return { kind: 'task', task: r.task, resumed: hold !== undefined };
        case 'input':
          return { kind: 'outcome', outcome: this.ask(route, hold, conv, req, caller, nameOf(req), upstreamToken) };
        case 'deadline':
          this.drop(hold);
          return { kind: 'window-passed', conv };
        case 'aborted':
          this.drop(hold);
          conv.cancel('client closed the request');
          return { kind: 'outcome', outcome: CANCELLED };
      }
    } catch (e) {
      this.drop(hold);
      conv.cancel('gateway error');
      throw e;
    }
  }

  private take(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, name: string): Hold {
    const decoded = decodeRequestState(req.requestState as string, this.opts.stateKey, Date.now(), {
      sub: caller.principal,
      method: req.method,
      name,
    });
    // Every refusal below is the same one; none reaches the store or the upstream, so none takes longer than another.
    if (!decoded.ok) throw invalidState(decoded.reason);
    const hold = this.holds.get(decoded.value.hold);
    // The MAC binds the principal already; the hold's own is checked too, at no cost.
    if (!hold || hold.round !== decoded.value.round || hold.route !== route.name || hold.principal !== caller.principal || hold.busy) {
      throw invalidState(hold?.busy ? 'the round is being continued already' : 'the round it continues has ended');
    }
    hold.busy = true;
    if (hold.timer) clearTimeout(hold.timer);
    hold.timer = undefined;
    return hold;
  }

  /** Gives a taken round back unanswered (its retry was refused before anything went upstream). */
  private untake(hold: Hold): void {
    hold.busy = false;
    if (this.holds.get(hold.id) !== hold) return;
    hold.timer = setTimeout(() => this.expire(hold), this.opts.holdMs);
    hold.timer.unref();
  }

  /** Holds the call and answers with an `InputRequiredResult` for every outstanding request. */
  private ask(
    route: UpstreamRoute,
    existing: Hold | undefined,
    conv: Conversation,
    req: ModernRequest,
    caller: CallerContext,
    name: string,
    progressToken: string | number | undefined,
  ): Outcome {
    let hold = existing;
    if (!hold) {
      // No slot (taken since the call was admitted): the call is cancelled upstream by the round's failure path, and
      // the client gets 503 with Retry-After, not an in-band error.
      this.checkHoldRoom(caller.principal);
      hold = {
        id: randomBytes(16).toString('base64url'),
        route: route.name,
        on: route,
        conv,
        progressToken,
        principal: caller.principal,
        method: req.method,
        name,
        round: 0,
        busy: false,
        timer: undefined,
      };
      this.holds.set(hold.id, hold);
      this.heldBy.add(hold.principal);
    }
    hold.round += 1;
    hold.busy = false;
    // An MRTR round has no task id: the line names the request's tool (or prompt, or resource).
    this.audit.record('task.input_requested', { principal: caller.principal, upstream: route.name, tool: name, era: 'modern' });
    this.metrics.mrtrRound(route.name);
    const h = hold;
    hold.timer = setTimeout(() => this.expire(h), this.opts.holdMs);
    hold.timer.unref();
    const requestState = encodeRequestState(
      { hold: hold.id, inst: this.instanceId, method: hold.method, name: hold.name, round: hold.round, exp: Date.now() + this.opts.holdMs },
      hold.principal,
      this.opts.stateKey,
    );
    const result: JsonObject = { resultType: 'input_required', inputRequests: conv.inputRequests(), requestState };
    if (route.upstream.knownIdentity) result._meta = { [META.serverInfo]: route.upstream.knownIdentity.serverInfo };
    return { kind: 'result', result };
  }

  private expire(hold: Hold): void {
    if (hold.busy) return;
    this.drop(hold);
    hold.conv.cancel('no retry arrived for the input request in time');
  }

  private drop(hold: Hold | undefined): void {
    if (!hold) return;
    if (hold.timer) clearTimeout(hold.timer);
    if (this.holds.get(hold.id) !== hold) return;
    this.holds.delete(hold.id);
    this.heldBy.remove(hold.principal);
  }

  /** Cancels every held call (on shutdown). */
  close(): void {
    for (const hold of [...this.holds.values()]) {
      this.drop(hold);
      hold.conv.cancel('gateway shutting down');
    }
  }
}

/** The name a request state is bound to: the tool or prompt name, or the resource URI. */
function nameOf(req: ModernRequest): string {
  const p = req.policy.nameParam;
  const v = p ? req.params[p] : undefined;
  return typeof v === 'string' ? v : '';
}

/** The outcome of a request whose client went away (never sent: the edge abandons the response). */
const CANCELLED: Outcome = { kind: 'error', error: catalogError('GW_REQUEST_CANCELLED') };

function isOutcome(v: unknown): v is Outcome {
  return isObject(v) && ((v.kind === 'result' && isObject(v.result)) || (v.kind === 'error' && isObject(v.error)));
}

/**
 * An error as it travels back from the holding instance: a catalog error as its kind, arguments and data (so the
 * asker answers exactly what the holder would have), with what the upstream errors carry besides; anything else as
 * its name and message.
 */
function describeError(e: unknown): JsonObject {
  const err = e instanceof Error ? e : new Error(String(e));
  const out: JsonObject = { name: err.name, message: err.message };
  if (!(e instanceof GatewayError)) return out;
  Object.assign(out, { kind: e.kind, args: e.args.map((a) => (typeof a === 'number' ? a : String(a))) });
  if (e.data !== undefined) out.data = e.data as JsonObject;
  if (e.retryAfterSeconds !== undefined) out.retryAfterSeconds = e.retryAfterSeconds;
  if (e instanceof UpstreamDownError) Object.assign(out, { upstream: e.upstream, retryAfterMs: e.retryAfterMs });
  if (e instanceof UpstreamHttpError)
    Object.assign(out, { status: e.status, bodyText: e.bodyText, ...(e.challenge !== undefined ? { challenge: e.challenge } : {}) });
  if (e instanceof UpstreamUnavailableError || e instanceof UpstreamTimeoutError || e instanceof UpstreamBusyError) out.detail = e.detail;
  return out;
}

/**
 * The error the holding instance failed with, rebuilt: the upstream errors as their classes (the asker's edge reads
 * them to suspect the upstream), any other catalog error as a `GatewayError` of the same kind; the rest is internal.
 */
function rebuildError(d: JsonObject): Error {
  const message = typeof d.message === 'string' ? d.message : 'remote failure';
  const str = (v: unknown) => (typeof v === 'string' ? v : '');
  switch (d.name) {
    case 'UpstreamTimeoutError':
      return new UpstreamTimeoutError(str(d.detail));
    case 'UpstreamUnavailableError':
      return new UpstreamUnavailableError(str(d.detail));
    case 'UpstreamBusyError':
      return new UpstreamBusyError(str(d.detail));
    case 'UpstreamHttpError':
      return new UpstreamHttpError(typeof d.status === 'number' ? d.status : 502, str(d.bodyText), {
        challenge:
          typeof d.challenge === 'string' || (Array.isArray(d.challenge) && d.challenge.every((c) => typeof c === 'string'))
            ? (d.challenge as string | string[])
            : undefined,
      });
    case 'UpstreamDownError':
      return new UpstreamDownError(str(d.upstream), typeof d.retryAfterMs === 'number' ? d.retryAfterMs : 1_000);
  }
  if (typeof d.kind === 'string' && Object.hasOwn(ERROR_CATALOG, d.kind)) {
    return new GatewayError(d.kind as ErrorKind, {
      args: Array.isArray(d.args) ? d.args : [],
      ...(d.data !== undefined ? { data: d.data } : {}),
      ...(typeof d.retryAfterSeconds === 'number' ? { retryAfterSeconds: d.retryAfterSeconds } : {}),
    });
  }
  return new Error(message);
}

/**
 * A notification of the held call as the request now waiting sees it: progress under the token the call went upstream
 * with carries the waiting request's token instead (undefined when that request asked for none); anything else as is.
 */
function progressFor(
  n: JsonRpcNotification,
  upstreamToken: string | number | undefined,
  clientToken: string | number | undefined,
): JsonRpcNotification | undefined {
  if (n.method !== 'notifications/progress' || upstreamToken === undefined || upstreamToken === clientToken) return n;
  const params = isObject(n.params) ? n.params : undefined;
  if (params?.progressToken !== upstreamToken) return n;
  return clientToken === undefined ? undefined : { ...n, params: { ...params, progressToken: clientToken } };
}
