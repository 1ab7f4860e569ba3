/**
 * The upstream seam for a legacy (2025-11-25) server, over the session pool. Each call checks out a session of its
 * own, keyed by the caller's principal under the upstream's session scope and by the input kinds it declared (README
 * §Upstream session isolation), and holds it alone until it ends; callers of this class never see a session.
 */
import {
  acceptListenFilter,
  isInputMethod,
  isObject,
  logFailure,
  NO_LOG,
  readLegacyCreateTaskResult,
  absentUserAnswer,
  withCallerCapabilities,
  withTraceMeta,
  type JsonObject,
  type JsonRpcNotification,
  type LayerLogger,
  type ListenFilter,
  type RequestId,
  type UpstreamIdentity,
  catalogError,
} from '../../translate/index.js';
import { drain } from '../call-wrappers.js';
import type {
  CallEvent,
  CallOptions,
  PassedRequest,
  UpstreamCall,
  UpstreamCaller,
  UpstreamClient,
  SessionBounds,
  UpstreamListen,
  UpstreamStats,
  UpstreamTask,
  UpstreamTaskRef,
  UpstreamTaskSnapshot,
} from '../client.js';
import { SessionExpiredError, UpstreamHttpError, UpstreamTaskLostError, UpstreamUnavailableError } from '../errors.js';
import type { LegacyCall } from './call.js';
import type { Handover } from './pool-handover.js';
import type { LegacySession } from './session.js';
import { LegacyUpstreamTask, type LegacyTaskSession } from './task.js';
import type { ExchangeStop } from '../http.js';
import { LegacySessionPool, type PoolOptions, type SessionHold, type SessionKey } from './pool.js';
import { endClientSpan, startClientTrace, type ClientTrace } from '../tracing.js';

/**
 * A request's params and CLIENT span on a legacy upstream: the trace context travels in the HTTP headers and, as the
 * OpenTelemetry semantic conventions for MCP put it for every revision, in `params._meta` (2025-11-25 reserves no
 * such key; an upstream that does not read it ignores it). A client's own `_meta` trace keys are replaced or dropped.
 */
function traced(
  upstream: string,
  caller: UpstreamCaller,
  method: string,
  params: JsonObject | undefined,
): { params: JsonObject | undefined; trace: ClientTrace } {
  const trace = startClientTrace(caller.trace, upstream, method, params);
  return { params: withTraceMeta(params, trace.carrier), trace };
}

/** What `send` makes, the CLIENT span of its call ended with the call's final event (or with the failure to send). */
function spanned<R>(trace: ClientTrace, send: () => Promise<R>, callOf: (r: R) => LegacyCall = (r) => r as unknown as LegacyCall): Promise<R> {
  // Without a tracer there is no span to end: the send's own promise (no async frame around it).
  return trace.span ? spannedSend(trace.span, send, callOf) : send();
}

async function spannedSend<R>(span: NonNullable<ClientTrace['span']>, send: () => Promise<R>, callOf: (r: R) => LegacyCall): Promise<R> {
  let r: R;
  try {
    r = await send();
  } catch (e) {
    endClientSpan(span, { kind: 'failure', error: e instanceof Error ? e : new Error(String(e)) });
    throw e;
  }
  callOf(r).traceWith(span);
  return r;
}

/** Notifications a listen stream carries (2025-11-25 server/utilities: list changes and resource updates). */
const LISTEN_METHODS = new Set([
  'notifications/tools/list_changed',
  'notifications/prompts/list_changed',
  'notifications/resources/list_changed',
  'notifications/resources/updated',
]);

/** Most notifications queued for a listen consumer that does not keep up (list changes are idempotent). */
const MAX_QUEUED_NOTIFICATIONS = 1_000;

/** The session key of a caller: its principal, the credentials its requests carry upstream, what it can answer. */
function sessionKeyOf(caller: UpstreamCaller): SessionKey {
  const key: SessionKey = { capabilities: caller.capabilities };
  if (caller.principal !== undefined) key.principal = caller.principal;
  if (caller.authorization) key.authorization = caller.authorization;
  return key;
}

interface Subscription {
  /** Listens that share this subscription on one session. */
  count: number;
  /** Whether the upstream accepted `resources/subscribe`. */
  ok: Promise<boolean>;
}

/** A client of one legacy upstream (era `legacy`), pooling one session per caller key. */
export class LegacyUpstreamClient implements UpstreamClient {
  readonly era = 'legacy' as const;
  private readonly pool: LegacySessionPool;
  /** Resource subscriptions per session, shared by the listens on it (one subscribe, one unsubscribe). */
  private readonly subscriptions = new WeakMap<LegacySession, Map<string, Subscription>>();

  /** The upstream layer's log (from the options; default nowhere). */
  readonly log: LayerLogger;

  constructor(
    readonly name: string,
    opts: PoolOptions,
  ) {
    this.pool = new LegacySessionPool(opts);
    this.log = opts.log ?? NO_LOG;
  }

  /** Later requests carry the operator's new static headers (a reload); open sessions stay open. */
  useStaticHeaders(headers: Record<string, string>): void {
    this.pool.useStaticHeaders(headers);
  }

  /** New session bounds (a reload): `sessions.maxPerUpstream`, `.maxPerPrincipal`, `.idleMs`, `.warmIdle`, `.acquireTimeoutMs`. */
  setSessionBounds(bounds: SessionBounds): void {
    this.pool.setBounds(bounds);
  }

  /** The identity from the most recent `initialize`, if any. */
  get knownIdentity(): UpstreamIdentity | undefined {
    return this.pool.identity;
  }

  /** The upstream's identity, initializing the caller's session when none has been made yet. */
  identity(caller: UpstreamCaller, signal?: AbortSignal): Promise<UpstreamIdentity> {
    return this.pool.getIdentity(sessionKeyOf(caller), signal);
  }

  /**
   * Sends a request on a session checked out for the caller. `signal` aborts getting the session ready; once sent, the
   * call is stopped with `cancel()`. The session is held until the call's final event is taken, or cancel/abandon.
   * The request also carries the caller's own capabilities in `_meta` (the 2026-07-28 per-request key), for a server
   * that reads them there.
   * With `opts.task` a `tools/call` is task-augmented (2025-11-25 basic/utilities/tasks §Creating Tasks) and a
   * CreateTaskResult answer becomes the call's `task` event; without it a CreateTaskResult stays a response.
   */
  async call(caller: UpstreamCaller, method: string, params: JsonObject | undefined, signal?: AbortSignal, opts?: CallOptions): Promise<UpstreamCall> {
    const key = sessionKeyOf(caller);
    const asTask = opts?.task !== undefined && method === 'tools/call';
    const task = opts?.task?.ttlMs !== undefined ? { ttl: opts.task.ttlMs } : {};
    const t = traced(this.name, caller, method, withCallerCapabilities(asTask ? { ...(params ?? {}), task } : params, caller.capabilities));
    // A task-augmented request is never cancelled with notifications/cancelled (2025-11-25
    // basic/utilities/cancellation, Behavior Requirements): its answer is awaited, and a task it created cancelled.
    // One span for the call, a retry on a fresh session (the first one was gone upstream) included.
    const handover: Handover = {};
    if (caller.logLevel !== undefined) handover.logLevel = caller.logLevel;
    if (opts?.patient) handover.patient = true;
    const { value: call, hold } = await spanned(
      t.trace,
      () => this.pool.withHeldSession(key, (s) => s.request(method, t.params, undefined, t.trace.carrier), signal, handover),
      (r) => r.value,
    );
    const release = (broken?: boolean) => hold.release(broken);
    return asTask ? new TaskAugmentedCall(call, release, (e) => this.taskOf(caller, e, hold), this.log) : new HeldCall(call, release);
  }

  /**
   * Sends `text`, a client's request as it came, on a session checked out for the caller, and hands the answer back
   * unread with the session held until `release()` (a federated endpoint's 2025-11-25 call passed through to its member,
   * docs/federation.md §Eras and tasks). A session the upstream forgot is replaced and the request sent once more, as
   * for `call`: a 404 means the upstream did not process it. Stopped (`stop`) before its answer, the exchange is dropped
   * and the request cancelled on its session (2025-11-25 basic/utilities/cancellation), as a call is; waiting for a
   * session is bounded by the pool's own acquire timeout.
   */
  async passRequest(caller: UpstreamCaller, text: string, requestId: string | number, stop?: ExchangeStop): Promise<PassedRequest> {
    const handover = caller.logLevel !== undefined ? { logLevel: caller.logLevel } : {};
    let sentOn: LegacySession | undefined;
    const cancel = (session: LegacySession, reason: string) => {
      session.notify('notifications/cancelled', { requestId, reason }).catch(() => {});
    };
    try {
      const { value: res, hold } = await this.pool.withHeldSession(
        sessionKeyOf(caller),
        (s) => {
          sentOn = s;
          return s.send(text, stop, caller.trace);
        },
        undefined,
        handover,
      );
      const session = hold.session;
      return {
        status: res.status,
        header: (name) => res.header(name),
        body: res.takeBody(),
        cancel: (reason) => cancel(session, reason),
        release: (broken) => hold.release(broken),
      };
    } catch (e) {
      if (stop?.aborted && sentOn) cancel(sentOn, stop.reason instanceof Error ? stop.reason.message : 'cancelled');
      throw e;
    }
  }

  /**
   * A CreateTaskResult answer as the call's `task` event. A legacy task lives in the session that created it
   * (2025-11-25 basic/utilities/tasks §Security Considerations): the task holds that very session for its life and
   * sends its requests there, whatever the session scope.
   */
  private taskOf(caller: UpstreamCaller, e: CallEvent, hold: SessionHold): CallEvent {
    if (e.kind !== 'response' || !('result' in e.message)) return e;
    const created = readLegacyCreateTaskResult(e.message.result);
    if (!created) return e;
    const meta = isObject(e.message.result._meta) ? e.message.result._meta : undefined;
    const taskHold = hold.retain();
    const session = hold.session;
    const taskId = created.task.taskId;
    const upstreamName = this.name;
    const pooled: LegacyTaskSession = {
      sessionId: session.sessionId,
      async call(method, params, signal) {
        const use = taskHold.retain();
        try {
          // The session declares the gateway's capabilities; the request carries the caller's own (as `call` does).
          const t = traced(upstreamName, caller, method, withCallerCapabilities(params, caller.capabilities));
          const call = await spanned(t.trace, () => session.request(method, t.params, signal, t.trace.carrier));
          return new HeldCall(call, () => use.release());
        } catch (err) {
          use.release();
          // The session the task lived in is gone upstream, and the task with it.
          if (err instanceof SessionExpiredError) throw new UpstreamTaskLostError(taskId, { cause: err });
          throw err;
        }
      },
      release: (runsOn) => {
        // A task left running (handed to another instance, or at shutdown) must not end with a DELETE of its session.
        if (runsOn) session.keepUpstream = true;
        taskHold.release();
      },
    };
    return { kind: 'task', task: new LegacyUpstreamTask(this, caller, created.task, meta, { session: pooled }) };
  }

  /**
   * A task another instance created: its session is joined by id (no `initialize`; the upstream is one server shared by
   * every instance, so the id names the same session from here). A session the upstream no longer knows (404, or a
   * 400 that says so) loses the task: `UpstreamTaskLostError`. A ref without a session (an upstream that gave none)
   * uses the caller's pooled session.
   */
  resumeTask(caller: UpstreamCaller, ref: UpstreamTaskRef, created: UpstreamTaskSnapshot): UpstreamTask {
    const resumed = { resumed: ref, created };
    if (ref.session === undefined) return new LegacyUpstreamTask(this, caller, resumed);
    const sessionId = ref.session;
    const upstreamName = this.name;
    const joined = this.pool.join(sessionKeyOf(caller), sessionId);
    const session: LegacyTaskSession = {
      sessionId,
      async call(method, params, signal) {
        try {
          // The session declares the gateway's capabilities; the request carries the caller's own (as `call` does).
          const t = traced(upstreamName, caller, method, withCallerCapabilities(params, caller.capabilities));
          return await spanned(t.trace, () => joined.session.request(method, t.params, signal, t.trace.carrier));
        } catch (e) {
          // A bare 400 or 404 to a well-formed tasks/* request in the session is the session refused (some servers send
          // no JSON-RPC body with it), as a 404 or a 400 that says so is (2025-11-25 basic/transports §Session Management).
          if (e instanceof SessionExpiredError || (e instanceof UpstreamHttpError && (e.status === 400 || e.status === 404))) {
            throw new UpstreamTaskLostError(ref.id, { cause: e });
          }
          throw e;
        }
      },
      release: () => joined.release(),
    };
    return new LegacyUpstreamTask(this, caller, resumed, undefined, { session });
  }

  /**
   * Nothing to hold: a task made on a session holds that very session (`taskOf`), and one whose upstream named no
   * session is reached by calls that each check one out.
   */
  retain(_caller: UpstreamCaller): () => void {
    return () => {};
  }

  /**
   * Listens on the GET stream of the caller's listen session (never a call session: it is not held by one call), and
   * on the GET streams of the caller's call sessions: a server that keeps one instance per session notifies only the
   * session that made a change (2025-11-25 server/tools §List Changed Notification), so the changes the caller's own
   * calls cause arrive there. Resource subscriptions are made on the listen session, shared with other listens on it,
   * and undone when the last of them ends.
   */
  async listen(caller: UpstreamCaller, filter: ListenFilter, signal: AbortSignal): Promise<UpstreamListen> {
    const queue: JsonRpcNotification[] = [];
    let ended = false;
    let lost = false;
    const name = this.name;
    let wake: (() => void) | undefined;
    const hear = (n: JsonRpcNotification) => {
      if (!LISTEN_METHODS.has(n.method)) return;
      // A server that notifies every session sends the same change on several: one queued copy is enough.
      if (queue.some((q) => q.method === n.method && sameUri(q, n))) return;
      if (queue.length >= MAX_QUEUED_NOTIFICATIONS) queue.shift();
      queue.push(n);
      wake?.();
    };
    const { session, release } = await this.pool.listenSession(sessionKeyOf(caller), signal, hear);
    const undo: Array<() => void> = [release];
    // Undone last first: the subscriptions' unsubscribes go out before the listen session is let go.
    const cleanup = () => {
      for (const u of undo.splice(0).reverse()) u();
    };
    const onAbort = () => {
      ended = true;
      cleanup();
      wake?.();
    };
    try {
      const accepted = acceptListenFilter(filter, session.identity?.capabilities ?? {});
      // Registered before subscribing, so that nothing sent after the subscription is missed.
      undo.push(
        session.onStreamNotification((n) => {
          if (n !== undefined) return hear(n);
          ended = true;
          // The session's stream ended under a listen its consumer still reads: the upstream is gone, or ended the
          // session; that is an error for the consumer, not the listen's graceful end.
          lost = !signal.aborted;
          wake?.();
        }),
      );
      if (accepted.resourceSubscriptions) {
        const ok: string[] = [];
        for (const uri of accepted.resourceSubscriptions) {
          const unsubscribe = await this.subscribe(session, uri);
          if (!unsubscribe) continue;
          undo.push(unsubscribe);
          ok.push(uri);
        }
        if (ok.length > 0) accepted.resourceSubscriptions = ok;
        else delete accepted.resourceSubscriptions;
      }
      if (signal.aborted) throw signal.reason instanceof Error ? signal.reason : new Error('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
      undo.push(() => signal.removeEventListener('abort', onAbort));
      async function* notifications(): AsyncGenerator<JsonRpcNotification> {
        try {
          for (;;) {
            const n = queue.shift();
            if (n) {
              yield n;
              continue;
            }
            if (signal.aborted) return;
            if (ended) {
              if (lost) throw new UpstreamUnavailableError(`${name} ended the session stream under subscriptions/listen`);
              return;
            }
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
          }
        } finally {
          cleanup();
        }
      }
      return { accepted, notifications: notifications() };
    } catch (e) {
      cleanup();
      throw e;
    }
  }

  /** Subscribes `uri` on a session once for all its listens; returns this listen's release, or `undefined` if refused. */
  private async subscribe(session: LegacySession, uri: string): Promise<(() => void) | undefined> {
    let subs = this.subscriptions.get(session);
    if (!subs) {
      subs = new Map();
      this.subscriptions.set(session, subs);
    }
    let sub = subs.get(uri);
    if (!sub) {
      // Not tied to one listen's signal: other listens may come to share it. Bounded by the session's budget.
      const ok = session
        .request('resources/subscribe', { uri })
        .then(drain)
        .then(
          (res) => !('error' in res),
          () => false,
        );
      sub = { count: 0, ok };
      subs.set(uri, sub);
    }
    sub.count++;
    const shared = sub;
    const map = subs;
    let released = false;
    const releaseOne = () => {
      if (released) return;
      released = true;
      shared.count--;
      if (shared.count > 0 || map.get(uri) !== shared) return;
      map.delete(uri);
      void shared.ok
        .then(async (wasSubscribed) => {
          if (wasSubscribed) await drain(await session.request('resources/unsubscribe', { uri }));
        })
        .catch(logFailure(this.log, 'debug', 'resources/unsubscribe not sent; a closed session has no subscriptions left'));
    };
    if (await shared.ok) return releaseOne;
    releaseOne();
    return undefined;
  }

  /** Sessions held (for /healthz). */
  stats(): UpstreamStats {
    return { sessions: this.pool.size };
  }

  /** Closes every session (DELETE upstream). Idempotent. */
  close(): Promise<void> {
    return this.pool.close();
  }
}

/**
 * A call that keeps its session held until its final event is taken, or it is cancelled or abandoned; `final`
 * may turn the final event into another (a CreateTaskResult into a `task` event), once.
 */
class HeldCall implements UpstreamCall {
  /** The final event as the consumer sees it, once taken. */
  protected finalSeen: CallEvent | undefined;

  constructor(
    protected readonly inner: UpstreamCall,
    /** Ends the session's hold; `broken`: the session is not to be reused. */
    protected readonly release: (broken?: boolean) => void,
    private readonly final?: (e: CallEvent) => CallEvent,
  ) {}

  get finished(): boolean {
    return this.inner.finished;
  }

  get pending(): number {
    return this.inner.pending;
  }

  async next(): Promise<CallEvent> {
    return this.seen(await this.inner.next());
  }

  async nextUnless(ms: number | undefined, signal: AbortSignal | undefined): Promise<CallEvent | undefined> {
    const e = await this.inner.nextUnless(ms, signal);
    return e && this.seen(e);
  }

  respond(...args: Parameters<UpstreamCall['respond']>): Promise<void> {
    return this.inner.respond(...args);
  }

  cancel(reason: string): void {
    this.inner.cancel(reason);
    this.release();
  }

  abandon(reason: string): void {
    // Dropped unanswered, the request may still run upstream and ask on the session: no other caller gets it.
    const unfinished = !this.inner.finished;
    this.inner.abandon(reason);
    this.release(unfinished);
  }

  protected seen(e: CallEvent): CallEvent {
    if (e.kind !== 'response' && e.kind !== 'failure') return e;
    // The task (which holds the session itself) is made before this call's hold ends.
    this.finalSeen ??= this.final ? this.final(e) : e;
    // A stream that broke leaves the session in doubt: it is replaced, not reused.
    this.release(e.kind === 'failure');
    return this.finalSeen;
  }
}

/** How long a cancelled task-augmented request is awaited for the task it may have created. */
const CANCEL_DRAIN_MS = 30_000;

/**
 * A task-augmented `tools/call`. Cancelling it before its answer was taken sends no `notifications/cancelled`
 * (2025-11-25 basic/utilities/cancellation: task-augmented requests are cancelled with `tasks/cancel` only): the
 * answer is awaited in the background (bounded; questions asked before the task exists are refused), and a task
 * it created is cancelled with `tasks/cancel`.
 */
class TaskAugmentedCall extends HeldCall {
  private stopped: CallEvent | undefined;
  /** Questions the consumer took and has not answered, by id: refused on cancel, so that the upstream goes on. */
  private readonly asked = new Map<RequestId, string>();
  /** Ends the consumer's wait when the call is cancelled (the background wait takes over the events). */
  private readonly stop = new AbortController();

  constructor(
    inner: UpstreamCall,
    release: (broken?: boolean) => void,
    final: (e: CallEvent) => CallEvent,
    private readonly log: LayerLogger,
  ) {
    super(inner, release, final);
  }

  override async next(): Promise<CallEvent> {
    return (await this.nextUnless(undefined, undefined)) as CallEvent;
  }

  override async nextUnless(ms: number | undefined, signal: AbortSignal | undefined): Promise<CallEvent | undefined> {
    if (this.stopped) return this.stopped;
    const e = await super.nextUnless(ms, signal ? AbortSignal.any([signal, this.stop.signal]) : this.stop.signal);
    if (e?.kind === 'request') this.asked.set(e.message.id, e.message.method);
    return this.stopped ?? e;
  }

  override respond(...args: Parameters<UpstreamCall['respond']>): Promise<void> {
    this.asked.delete(args[0]);
    return super.respond(...args);
  }

  override cancel(reason: string): void {
    if (this.stopped) return;
    if (this.finalSeen) return super.cancel(reason); // the answer was taken: a task is its taker's to cancel
    this.stopped = { kind: 'failure', error: new Error(`cancelled: ${reason}`) };
    this.stop.abort();
    void this.cancelCreated();
  }

  private async cancelCreated(): Promise<void> {
    const until = Date.now() + CANCEL_DRAIN_MS;
    // Answered as with nobody there (an elicitation declined: the tool may go on to make its task, which is then
    // cancelled).
    const refuse = (id: RequestId, method: string) =>
      this.inner
        .respond(id, isInputMethod(method) ? absentUserAnswer(method) : { error: catalogError('GW_UPSTREAM_REQUEST_AFTER_CANCEL') })
        .catch(logFailure(this.log, 'debug', 'refusal of a question of a cancelled call not delivered'));
    try {
      for (const [id, method] of this.asked) await refuse(id, method);
      this.asked.clear();
      for (;;) {
        const e = await this.inner.nextUnless(Math.max(0, until - Date.now()), undefined);
        if (!e) {
          this.inner.abandon('cancelled, and no answer came in time');
          return;
        }
        if (e.kind === 'request') {
          await refuse(e.message.id, e.message.method);
          continue;
        }
        if (e.kind === 'notification') continue;
        const final = this.seen(e);
        if (final.kind === 'task')
          await final.task
            .cancel()
            .catch(() => 'unknown')
            .finally(() => final.task.release());
        return;
      }
    } finally {
      this.release();
    }
  }
}

/** Whether two notifications name the same resource (or none). */
function sameUri(a: JsonRpcNotification, b: JsonRpcNotification): boolean {
  const ua = isObject(a.params) ? a.params.uri : undefined;
  const ub = isObject(b.params) ? b.params.uri : undefined;
  return ua === ub;
}
