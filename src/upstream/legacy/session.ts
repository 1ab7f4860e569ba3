/**
 * One legacy (2025-11-25) Streamable HTTP session with an upstream (2025-11-25 basic/transports): `initialize`,
 * `Mcp-Session-Id`, POSTed requests whose responses arrive as JSON or on a per-request SSE stream (where server→client
 * requests for that call also arrive), POSTed responses to those requests, a GET stream, DELETE on close.
 *
 * Written on plain HTTP exchanges rather than the SDK Client because the gateway must know on which request's stream a
 * server→client request arrived (to bridge it into that request's MRTR round); the SDK Client hands such
 * requests to one session-wide handler without that association.
 */
import {
  sessionStartAnswer,
  ErrorCode,
  GatewayError,
  identityFromInitialize,
  isErrorResponse,
  isNotification,
  isRequest,
  isResponse,
  LEGACY_VERSION,
  LEGACY_VERSIONS,
  logFailure,
  NO_LOG,
  setTraceHeaders,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type LayerLogger,
  type RequestId,
  type TraceCarrier,
  type UpstreamIdentity,
  catalogError,
} from '../../translate/index.js';
import { fetchFailure, SessionExpiredError, UpstreamHttpError, UpstreamTimeoutError, UpstreamUnavailableError } from '../errors.js';
import { exchange, parseUpstreamJson, type ExchangeStop, type SseCursor, type UpstreamResponse, type WholeMessages } from '../http.js';
import { SseResumption } from './sse-resume.js';
import { drain } from '../call-wrappers.js';
import { LegacyCall } from './call.js';

/** What a session needs to know. */
export interface LegacySessionOptions {
  url: string;
  /** Static upstream headers plus the client's Authorization, if any. */
  headers: Record<string, string>;
  /** The legacy client capabilities declared in `initialize`. */
  capabilities: JsonObject;
  clientInfo: { name: string; version: string };
  /** Budget for one upstream call, from sending to its response. */
  timeoutMs: number;
  /**
   * Keep the session's GET stream open and hand server→client requests that arrive there (not on a call's own
   * stream, as SDK servers send `server.elicitInput()` without a related request) to the one call that can take
   * them. Off for sessions that read the GET stream themselves (subscriptions/listen).
   */
  watchStrays?: boolean;
  /**
   * Joins a session another client (another gateway instance) initialized, by its id and protocol version, without a
   * new `initialize`: a Streamable HTTP session is named by its `Mcp-Session-Id` alone (2025-11-25 basic/transports
   * §Session Management), and a 2025-11-25 task lives in the session that created it.
   */
  join?: { sessionId: string; protocolVersion: string };
  /** The upstream layer's log (default nowhere). */
  log?: LayerLogger;
}

/**
 * How long a server→client request on the GET stream of a held session waits for the holder's call to be sent: the
 * holder sends it right after the checkout, so this bounds only a holder that sends none (a task's own requests).
 */
const STRAY_WAIT_MS = 1_000;

/**
 * Methods whose calls may ask for input (2026-07-28 basic/patterns/mrtr), and so may be handed a stray server→client
 * request.
 */
const INPUT_CAPABLE = new Set(['tools/call', 'prompts/get', 'resources/read']);

/** A legacy session. Created by the pool; `initialize()` before use. */
export class LegacySession {
  sessionId: string | undefined;
  protocolVersion: string = LEGACY_VERSION;
  identity: UpstreamIdentity | undefined;
  private nextId = 1;
  private closed = false;
  /** Calls that may ask for input, for stray server→client requests. */
  private readonly inputCalls: LegacyCall[] = [];
  /**
   * Calls waiting for their response: a server that resumes a call's stream may deliver the response on the session's
   * GET stream (the conformance suite's sse-retry server does, to whichever GET comes first), where it still reaches
   * its call. An array, not a `Map` by request id, for the reason `forgetInputCall` gives: a session has one call at a
   * time (checked out by one caller).
   */
  private readonly streamedCalls: LegacyCall[] = [];
  private readonly streamAbort = new AbortController();
  /** Who hears the notifications of the GET stream (list changes, resource updates); `undefined`: it ended. */
  private readonly streamListeners = new Set<(n: JsonRpcNotification | undefined) => void>();
  private streamState: 'none' | 'open' | 'ended' = 'none';
  private headerCache: { sessionId: string | undefined; version: string; headers: Record<string, string> } | undefined;
  /**
   * Set once a task that runs on was left in this session (handed to another instance, or left at shutdown): `close()`
   * then forgets the session without DELETE, since DELETE would end that task upstream.
   */
  keepUpstream = false;
  /** The upstream layer's log. */
  readonly log: LayerLogger;
  /** Notifications and answers being POSTed: `close()` lets them arrive before its DELETE. */
  private readonly sending = new Set<Promise<unknown>>();
  /**
   * Set when the upstream asks `roots/list` on the session (on any stream): it may have cached the answer, so the pool
   * tells it the roots changed before the session serves another caller. Cleared by the pool.
   */
  rootsAsked = false;
  /**
   * Set by the pool while a caller holds the session: a server→client request on the GET stream that finds no call yet
   * (the holder's call is being sent) waits a moment for it rather than being answered by the pool.
   */
  held = false;
  /** Who waits for the next input-capable call to be registered. */
  private readonly callWaiters = new Set<() => void>();

  constructor(private readonly opts: LegacySessionOptions) {
    this.log = opts.log ?? NO_LOG;
    if (opts.join) {
      this.sessionId = opts.join.sessionId;
      this.protocolVersion = opts.join.protocolVersion;
    }
  }

  /**
   * Hands every notification of the session's GET stream to `listener`, then `undefined` once the stream has
   * ended (at once if it already has). A server that keeps one instance per session sends a change only to the
   * session that caused it, so a caller's listen must hear the session its own calls use. Returns the remover.
   */
  onStreamNotification(listener: (n: JsonRpcNotification | undefined) => void): () => void {
    if (this.streamState === 'ended' || this.closed) {
      queueMicrotask(() => listener(undefined));
      return () => {};
    }
    this.streamListeners.add(listener);
    return () => this.streamListeners.delete(listener);
  }

  /**
   * Sends later requests of the session with `authorization` (the same principal's renewed credentials); the session
   * itself stays the same.
   */
  useAuthorization(authorization: string | undefined): void {
    if (authorization === undefined || this.opts.headers.authorization === authorization) return;
    this.opts.headers.authorization = authorization;
    this.headerCache = undefined;
  }

  /**
   * Sends later requests of the session with the operator's new static headers (a reload) in place of `previous`
   * ones; what the caller's own requests brought (its Authorization) still wins, as when the session was opened.
   */
  useStaticHeaders(next: Record<string, string>, previous: Record<string, string>): void {
    const own = { ...this.opts.headers };
    for (const [k, v] of Object.entries(previous)) if (own[k] === v) delete own[k];
    this.opts.headers = { ...next, ...own };
    this.headerCache = undefined;
  }

  /** The headers of every request of the session, rebuilt only when its id or version changes (read-only). */
  private headers(): Record<string, string> {
    const c = this.headerCache;
    if (c && c.sessionId === this.sessionId && c.version === this.protocolVersion) return c.headers;
    const h: Record<string, string> = {
      ...this.opts.headers,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': this.protocolVersion,
    };
    if (this.sessionId) h['mcp-session-id'] = this.sessionId;
    this.headerCache = { sessionId: this.sessionId, version: this.protocolVersion, headers: h };
    return h;
  }

  /**
   * POSTs one message. `timeoutMs` bounds the wait for the response headers only: a streamed body is bounded by
   * its consumer (the call's budget, or a task's deadline), which drops it properly. No controller or timer of its
   * own: `signal` (the caller's) goes to the pool, which also keeps the headers deadline (signals are costly to
   * create on this path).
   */
  /** POSTs `text`, a client's request as it came (passed through), and returns the answer unread. */
  send(text: string, stop?: ExchangeStop, trace?: TraceCarrier): Promise<UpstreamResponse> {
    return this.postText(text, stop, this.opts.timeoutMs, trace);
  }

  private post(body: unknown, signal?: AbortSignal, timeoutMs = this.opts.timeoutMs, trace?: TraceCarrier): Promise<UpstreamResponse> {
    return this.postText(JSON.stringify(body), signal, timeoutMs, trace);
  }

  private async postText(text: string, signal: AbortSignal | ExchangeStop | undefined, timeoutMs: number, trace?: TraceCarrier): Promise<UpstreamResponse> {
    // The session's headers are shared by every request on it; a request's trace context is its own (a copy, then).
    const headers = trace ? setTraceHeaders({ ...this.headers() }, trace) : this.headers();
    let res: UpstreamResponse;
    try {
      res = await exchange(this.opts.url, { method: 'POST', headers, body: text, signal, headersTimeoutMs: timeoutMs });
    } catch (cause) {
      // The signal's reason says who aborted; a headers timeout is the pool's.
      throw fetchFailure(cause, signal);
    }
    return this.unlessSessionGone(res);
  }

  /**
   * Throws SessionExpiredError when an answer says the upstream no longer knows our session: 404 (2025-11-25
   * basic/transports §Session Management), or a 400 whose JSON-RPC error speaks of a missing or invalid session,
   * which is how many servers (the SDK's own examples among them) answer a session they forgot; and
   * UpstreamUnavailableError when a 400 says the 2025 era itself is refused. Any other answer is returned as it
   * came (a 400 body that was read is put back).
   */
  private async unlessSessionGone(res: UpstreamResponse): Promise<UpstreamResponse> {
    if (!this.sessionId || (res.status !== 404 && res.status !== 400)) return res;
    if (res.status === 404) {
      await res.discard();
      throw new SessionExpiredError();
    }
    const text = await res.textWithin();
    const body = safeJson(text);
    if (saysSessionGone(body)) throw new SessionExpiredError();
    // A modern-only server refuses every 2025 request with -32022 (2026-07-28 basic/versioning §Protocol Version
    // Negotiation): the upstream no longer speaks this era (it was replaced), which the caller must learn anew.
    if (isErrorResponse(body) && body.error.code === ErrorCode.UnsupportedProtocolVersion) {
      throw new UpstreamUnavailableError(`upstream no longer accepts ${this.protocolVersion}: ${body.error.message}`);
    }
    return res.withText(text);
  }

  /** Whether the session was closed (it serves no more requests). */
  get isClosed(): boolean {
    return this.closed;
  }

  /** Sets the upstream's log level for this session (2025-11-25 server/utilities/logging); an error answer is ignored. */
  async setLogLevel(level: string): Promise<void> {
    await drain(await this.request('logging/setLevel', { level }));
  }

  /**
   * Performs the `initialize` handshake and learns the upstream's identity. Sent as a 2025-11-25 client sends it: no
   * 2026-07-28 `_meta` or `Mcp-Method` (a dual-era server may route a request carrying them to its 2026-07-28 side,
   * docs/upstream-seam.md "Which era, and who translates"); the version header names 2025-11-25, a session-era revision.
   */
  async initialize(signal?: AbortSignal): Promise<UpstreamIdentity> {
    const call = await this.request(
      'initialize',
      { protocolVersion: LEGACY_VERSION, capabilities: this.opts.capabilities, clientInfo: this.opts.clientInfo },
      signal,
    );
    const response = await drain(call);
    if (isErrorResponse(response)) {
      throw new UpstreamUnavailableError(`upstream refused initialize: ${response.error.code} ${response.error.message}`);
    }
    const identity = identityFromInitialize(response.result);
    if (!identity) throw new UpstreamUnavailableError('upstream sent a malformed InitializeResult');
    if (LEGACY_VERSIONS.includes(identity.protocolVersion)) this.protocolVersion = identity.protocolVersion;
    this.identity = identity;
    await this.notify('notifications/initialized', {});
    if (this.opts.watchStrays) {
      // Open the GET stream before the first call, so that nothing the upstream sends there is missed (an SDK
      // server drops what it sends to a GET stream that is not open). Bounded: a slow stream is not waited for.
      const opened = this.watchStrays();
      await Promise.race([opened, new Promise((r) => setTimeout(r, 2_000).unref())]);
    }
    return identity;
  }

  /** Opens the GET stream and reads it in the background (see readStrays). */
  private async watchStrays(): Promise<void> {
    const cursor: SseCursor = { events: 0 };
    let stream: AsyncGenerator<unknown> | undefined;
    try {
      stream = await this.openStream(this.streamAbort.signal, cursor);
    } catch {
      return; // best effort: without the GET stream, requests sent there stay unanswered, as without the gateway
    }
    if (stream) {
      this.streamState = 'open';
      void this.followStrays(stream, cursor);
    }
  }

  /**
   * Reads the GET stream across its connections: one the server closed (or that broke) after an event with an id is
   * resumed with `Last-Event-ID` (2025-11-25 basic/transports §Listening for Messages from the Server: the same polling
   * as for POST answers). The stream has ended for good once it cannot be resumed or the session closed.
   */
  private async followStrays(first: AsyncGenerator<unknown>, cursor: SseCursor): Promise<void> {
    let resumption: SseResumption | undefined;
    let stream = first;
    try {
      for (;;) {
        await this.readStrays(stream).catch((cause: unknown) => {
          if (cursor.lastEventId === undefined) throw cause;
        });
        if (this.closed || cursor.lastEventId === undefined) return;
        resumption ??= new SseResumption(cursor, {
          reconnect: (lastEventId, signal) => this.reconnect(lastEventId, signal),
          signal: this.streamAbort.signal,
          maxDelayMs: this.opts.timeoutMs,
          what: 'upstream closed the session stream',
        });
        stream = (await resumption.next()).messages(cursor);
      }
    } catch (cause) {
      // the stream ended (session closed, upstream gone): calls report their own failures
      if (!this.closed) logFailure(this.log, 'debug', 'upstream session stream ended')(cause);
    } finally {
      this.streamState = 'ended';
      for (const listener of [...this.streamListeners]) listener(undefined);
      this.streamListeners.clear();
    }
  }

  /**
   * Reads the GET stream for server→client requests that name no call (2025-11-25 basic/transports allows any stream).
   * One is handed to the session's only call that may ask for input; with none or several it cannot be tied to a call
   * and is refused, so the upstream does not wait for an answer that will never come.
   */
  private async readStrays(stream: AsyncGenerator<unknown>): Promise<void> {
    for await (const m of stream) {
      if (isNotification(m)) {
        for (const listener of [...this.streamListeners]) listener(m);
        continue;
      }
      if (isResponse(m)) {
        this.streamedCalls.find((c) => c.requestId === m.id)?.push({ kind: 'response', message: m });
        continue;
      }
      if (!isRequest(m)) continue;
      if (m.method === 'ping') {
        await this.respond(m.id, { result: {} }).catch(logFailure(this.log, 'debug', 'ping on the session stream not answered'));
        continue;
      }
      if (m.method === 'roots/list') this.rootsAsked = true;
      if (this.inputCalls.length === 0 && this.held) await this.nextInputCall(STRAY_WAIT_MS);
      const [only, ...others] = [...this.inputCalls];
      if (only && others.length === 0) only.push({ kind: 'request', message: m });
      else if (!only) {
        // Nobody holds the session for a call (warm-up, between calls, a task's own requests): answered as a client
        // with nobody to ask would, never attached to a call.
        await this.respond(m.id, sessionStartAnswer(m.method)).catch(
          logFailure(this.log, 'debug', 'answer to an upstream request outside a call not delivered'),
        );
      } else {
        const why = 'several calls are running on this session';
        this.log.warn({ method: m.method, why }, 'upstream request on the session stream tied to no call; refused');
        await this.respond(m.id, { error: catalogError('GW_UPSTREAM_REQUEST_UNATTRIBUTED', { args: [m.method, why] }) }).catch(
          logFailure(this.log, 'debug', 'refusal of a stray upstream request not delivered'),
        );
      }
    }
  }

  /**
   * Forgets a call that may ask for input. An array, not a Set: a session has one such call at a time (it is checked out
   * by one caller), and a Set added to and deleted from per request keeps rehashed tables that point at requests in
   * flight, which promotes them out of the young generation (see docs/performance.md).
   */
  private forgetInputCall(call: LegacyCall): void {
    const at = this.inputCalls.indexOf(call);
    if (at >= 0) this.inputCalls.splice(at, 1);
  }

  /** Forgets a call whose response can no longer come on the GET stream. */
  private unstream(call: LegacyCall): void {
    const at = this.streamedCalls.indexOf(call);
    if (at >= 0) this.streamedCalls.splice(at, 1);
  }

  /** Resolves once an input-capable call is registered, or after `ms`. */
  private nextInputCall(ms: number): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.callWaiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      timer.unref();
      this.callWaiters.add(done);
    });
  }

  /**
   * Sends a request and returns its call once the upstream has accepted it (status checked). `trace`: the context its
   * POST carries in `traceparent`/`tracestate`.
   */
  async request(method: string, params: JsonObject | undefined, signal?: AbortSignal, trace?: TraceCarrier): Promise<LegacyCall> {
    if (this.closed) throw new UpstreamUnavailableError('session closed');
    const id = this.nextId++;
    const message: JsonRpcRequest = params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params };
    // Registered before the POST: the upstream may send a stray request on the GET stream before it answers.
    const inputCapable = INPUT_CAPABLE.has(method);
    const call: LegacyCall = inputCapable ? new LegacyCall(this, id, () => this.forgetInputCall(call)) : new LegacyCall(this, id);
    if (inputCapable) {
      this.inputCalls.push(call);
      for (const wake of [...this.callWaiters]) wake();
    }
    // Registered before the POST too: its response may come on the GET stream before the POST's headers are read.
    this.streamedCalls.push(call);
    let res: UpstreamResponse;
    try {
      res = await this.post(message, signal, undefined, trace);
    } catch (e) {
      this.unstream(call);
      this.forgetInputCall(call);
      throw e;
    }
    if (method === 'initialize') {
      const sid = res.header('mcp-session-id');
      if (sid) this.sessionId = sid;
    }
    if (!res.ok) {
      const text = await res.textWithin();
      const parsed = safeJson(text);
      // 401/403 judge the caller's credentials whatever the body says: the client needs the status and the challenge
      // (2025-11-25 basic/authorization §Error Handling), not a JSON-RPC error inside them.
      this.unstream(call);
      if (isErrorResponse(parsed) && res.status !== 401 && res.status !== 403) {
        call.push({ kind: 'response', message: { ...parsed, id } });
        return call;
      }
      this.forgetInputCall(call);
      throw new UpstreamHttpError(res.status, text.slice(0, 500), { challenge: res.challenge });
    }
    call.attach(res);
    const whole = res.wholeMessages();
    if (whole === undefined) void this.pump(res, call, id);
    else await this.settle(whole, res, call, id);
    return call;
  }

  /**
   * Reads a JSON answer of declared length into its call before the call is handed out (the common answer to a plain
   * call: the consumer finds it finished, with no stream to pump). Bounded like the headers (`timeoutMs`): nobody can
   * cancel a call that has not been handed out yet, so a body that stalls is dropped here (GW_UPSTREAM_TIMEOUT).
   */
  private async settle(whole: Promise<WholeMessages>, res: UpstreamResponse, call: LegacyCall, id: RequestId): Promise<void> {
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      res.cancel();
    }, this.opts.timeoutMs);
    try {
      const { messages, text } = await whole;
      // Relayed in this turn when nothing in it waits (a ping to answer does): no async iteration of an array.
      const relayed = messages.some(isPing) ? await this.relay(messages, call, id, text) : this.relayNow(messages, call, id, text);
      if (!relayed) throw new UpstreamUnavailableError(CLOSED_EARLY);
    } catch (cause) {
      call.push({ kind: 'failure', error: failureOf(cause, late, this.opts.timeoutMs) });
    } finally {
      clearTimeout(timer);
      this.unstream(call);
    }
  }

  /**
   * Reads a call's answer until its response. A stream closed (or broken) before the response, after an event with an
   * id, is resumed with GET and `Last-Event-ID` (2025-11-25 basic/transports §Resumability and Redelivery): the
   * server may close the connection to be polled, and the response comes on the resumed stream.
   */
  private async pump(res: UpstreamResponse, call: LegacyCall, id: RequestId): Promise<void> {
    // Followed on SSE answers only; the resumption itself is made only once a stream ended early (rare).
    const cursor: SseCursor | undefined = res.isEventStream ? { events: 0 } : undefined;
    let resumption: SseResumption | undefined;
    let stream = res;
    try {
      for (;;) {
        try {
          if (await this.relay(stream.messages(cursor), call, id)) return;
        } catch (cause) {
          // A message refused as unusable (nested too deep) says so; a broken stream may be resumed like a closed one.
          if (cause instanceof GatewayError || cursor?.lastEventId === undefined || call.finished) throw cause;
        }
        if (call.finished) return;
        if (cursor?.lastEventId === undefined) throw new UpstreamUnavailableError(CLOSED_EARLY);
        resumption ??= this.resumption(call, cursor);
        stream = await resumption.next();
        call.attach(stream);
      }
    } catch (cause) {
      call.push({ kind: 'failure', error: failureOf(cause, false, this.opts.timeoutMs) });
    } finally {
      this.unstream(call);
    }
  }

  /** How a call's stream is resumed: on this session, stopped by the call's drop or the session's close. */
  private resumption(call: LegacyCall, cursor: SseCursor): SseResumption {
    return new SseResumption(cursor, {
      reconnect: (lastEventId, signal) => this.reconnect(lastEventId, signal),
      signal: AbortSignal.any([call.dropSignal, this.streamAbort.signal]),
      maxDelayMs: this.opts.timeoutMs,
      what: CLOSED_EARLY,
    });
  }

  /** `relay` for messages read whole, none of them a ping: synchronously. */
  private relayNow(messages: readonly unknown[], call: LegacyCall, id: RequestId, raw?: string): boolean {
    for (const m of messages) if (this.relayOne(m, call, id, raw)) return true;
    return false;
  }

  /** Relays one message that needs no answer to `call`; returns whether it was the call's response. */
  private relayOne(m: unknown, call: LegacyCall, id: RequestId, raw?: string): boolean {
    if (isResponse(m)) {
      if (m.id !== id) return false;
      call.push(raw === undefined ? { kind: 'response', message: m } : { kind: 'response', message: m, raw });
      return true;
    }
    if (isRequest(m)) {
      if (m.method === 'roots/list') this.rootsAsked = true;
      call.push({ kind: 'request', message: m });
    } else if (isNotification(m)) call.push({ kind: 'notification', message: m });
    return false;
  }

  /** Relays one connection's messages to `call`; returns whether the call's response came. */
  private async relay(messages: AsyncIterable<unknown> | Iterable<unknown>, call: LegacyCall, id: RequestId, raw?: string): Promise<boolean> {
    for await (const m of messages) {
      if (isPing(m)) {
        await this.respond(m.id, { result: {} }).catch(logFailure(this.log, 'debug', 'ping on a call stream not answered'));
        continue;
      }
      if (this.relayOne(m, call, id, raw)) return true;
    }
    return false;
  }

  /** GET with `Last-Event-ID`: resumes a stream of this session after that event (status left to the caller). */
  private async reconnect(lastEventId: string, signal: AbortSignal): Promise<UpstreamResponse> {
    const headers: Record<string, string> = { ...this.headers(), accept: 'text/event-stream', 'last-event-id': lastEventId };
    delete headers['content-type'];
    try {
      return await exchange(this.opts.url, { method: 'GET', headers, signal, headersTimeoutMs: this.opts.timeoutMs });
    } catch (cause) {
      throw fetchFailure(cause, signal);
    }
  }

  /** POSTs a response to a server→client request. */
  respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void> {
    return this.tracked(async () => {
      const res = await this.post({ jsonrpc: '2.0', id, ...payload }, undefined, 30_000);
      await res.discard();
      if (!res.ok) throw new UpstreamHttpError(res.status, '');
    });
  }

  /** POSTs a notification. */
  notify(method: string, params: JsonObject): Promise<void> {
    return this.tracked(async () => {
      const res = await this.post({ jsonrpc: '2.0', method, params }, undefined, 30_000);
      await res.discard();
    });
  }

  /** Runs one outgoing POST, known to `close()` while it runs. */
  private tracked(send: () => Promise<void>): Promise<void> {
    const p = send();
    const settled = p.then(
      () => {},
      () => {},
    );
    this.sending.add(settled);
    void settled.then(() => this.sending.delete(settled));
    return p;
  }

  /** Opens the session's GET stream; `undefined` when the upstream offers none (405). */
  async openStream(signal: AbortSignal, cursor?: SseCursor): Promise<AsyncGenerator<unknown> | undefined> {
    let res: UpstreamResponse;
    try {
      res = await exchange(this.opts.url, { method: 'GET', headers: { ...this.headers(), accept: 'text/event-stream' }, signal });
    } catch (cause) {
      throw fetchFailure(cause, signal);
    }
    if (res.status === 405) {
      await res.discard();
      return undefined;
    }
    res = await this.unlessSessionGone(res);
    if (!res.ok) throw new UpstreamHttpError(res.status, await res.textWithin(), { challenge: res.challenge });
    return res.messages(cursor);
  }

  /**
   * Ends the session upstream (DELETE, best effort; none when `keepUpstream`). Idempotent. What is being sent arrives
   * first (bounded): a session of one request ends right after its call, and the call's `notifications/cancelled` must
   * reach the upstream before the session is gone, or the work it cancels runs on.
   */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.sending.size > 0) {
      await Promise.race([Promise.all([...this.sending]), new Promise((r) => setTimeout(r, 5_000).unref())]);
    }
    this.streamAbort.abort();
    for (const listener of [...this.streamListeners]) listener(undefined);
    this.streamListeners.clear();
    if (!this.sessionId || this.keepUpstream) return;
    try {
      const res = await exchange(this.opts.url, { method: 'DELETE', headers: this.headers(), signal: AbortSignal.timeout(5_000) });
      await res.discard();
    } catch {
      // best effort: the upstream expires idle sessions itself
    }
  }
}

/** Why a call failed whose stream ended without its response and could not be resumed. */
const CLOSED_EARLY = 'upstream closed the stream before answering';

/** A `ping` from the server on a call's stream, answered by the session. */
function isPing(m: unknown): m is JsonRpcRequest {
  return isRequest(m) && m.method === 'ping';
}

/** What a call's answer that broke off becomes: a message refused as unusable says so; one cut off at `timeoutMs` is late. */
function failureOf(cause: unknown, late: boolean, timeoutMs: number): Error {
  if (cause instanceof GatewayError) return cause;
  if (late) return new UpstreamTimeoutError(`the upstream's answer took longer than ${timeoutMs} ms to arrive`, { cause });
  return new UpstreamUnavailableError('upstream stream broke', { cause });
}

/** Words with which servers say a session is gone: "no valid session ID provided", "Session not found", "invalid session". */
const SESSION_GONE = /\bsession\b/i;
const GONE_WORDS = /\b(no valid|not valid|invalid|unknown|not found|missing|expired|no such|required|terminated)\b/i;
/** An SDK server that routed our session to a fresh transport says "Bad Request: Server not initialized". */
const NOT_INITIALIZED = /\bnot initiali[sz]ed\b/i;

/** Whether a 400 body is a JSON-RPC error about the session (not about the request itself). */
function saysSessionGone(body: unknown): boolean {
  if (!isErrorResponse(body)) return false;
  const message = body.error.message;
  if (typeof message !== 'string') return false;
  return (SESSION_GONE.test(message) && GONE_WORDS.test(message)) || NOT_INITIALIZED.test(message);
}

function safeJson(text: string): unknown {
  try {
    return parseUpstreamJson(text);
  } catch {
    return undefined;
  }
}
