/**
 * A stateless client of a 2026-07-28 upstream (2026-07-28 basic/transports Streamable HTTP): every request is one
 * POST carrying the per-request `_meta` envelope of the caller (capabilities, client info, log level) and the
 * mirrored headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*` for tool arguments marked
 * `x-mcp-header`). No session: never `Mcp-Session-Id`, never `Last-Event-ID`, no GET stream.
 *
 * MRTR happens inside a call (2026-07-28 basic/patterns/mrtr): each entry of an `InputRequiredResult` becomes a
 * `request` event with an id unique for the call (`"<round>:<key>"`, the upstream's key also given as a hint in
 * `params._meta["mcp-tasks-gateway/inputKey"]`); once all of a round are answered through `respond()`, the
 * original request is retried under a new JSON-RPC id with `inputResponses` and the echoed `requestState`, and
 * the events of the retry follow. A round carrying only `requestState` is retried at once. Rounds are bounded
 * (`maxRounds`); past the bound, and on a malformed `InputRequiredResult`, the call ends with a -32603 response.
 *
 * An error answer to an input request (`respond(id, { error })`) ends the call with that JSON-RPC error as its
 * response: MRTR has no way to carry a refusal to the server (an `inputResponses` entry is a result), and
 * retrying without the answer would only make the server ask again until the round bound.
 *
 * `cancel()` and `abandon()` both abort the in-flight POST: on 2026-07-28 Streamable HTTP, closing the response
 * stream is the cancellation (§Cancellation), so there is no way to drop a stream and keep the work running.
 *
 * Written on fetch, not on `@modelcontextprotocol/client` 2.4.0. Its bare `StreamableHTTPClientTransport` was
 * read (dist/index.mjs) and does not surface what the gateway needs:
 * - a JSON-RPC error in a non-2xx answer reaches `onmessage` only for HTTP 400; a 2026 server's -32601 comes with
 *   404, and the transport rejects `send()` with an `SdkHttpError` holding the body as text;
 * - one `onmessage` per transport receives the messages of every request's stream, so the progress and log
 *   notifications of concurrent calls cannot be told apart (`notifications/message` names no request); a
 *   transport per call would be needed, leaving it nothing to do but derive three headers;
 * - when a response stream that carried an SSE event id breaks before the response, it reconnects with a GET
 *   and `Last-Event-ID`, which a 2026-07-28 client must never send (§Earlier Streamable HTTP Revisions);
 * - it bounds neither an SSE event nor a JSON body (`MAX_UPSTREAM_MESSAGE_BYTES` here), and on an SSE stream it
 *   reports a message that fails its schema to the transport-wide `onerror`, not as a failure of that call;
 * - `Mcp-Param-*` headers (the tool schemas, their cache) would have to be computed here anyway.
 */
import {
  ErrorCode,
  errorResponse,
  refusedListingOurVersion,
  identityFromDiscover,
  isErrorResponse,
  isNotification,
  isObject,
  isResponse,
  logFailure,
  modernHeaders,
  MRTR_METHODS,
  NO_LOG,
  paramHeaders,
  readModernCreateTaskResult,
  readInputRequired,
  readListenFilter,
  retryParams,
  setTraceHeaders,
  TASKS_EXTENSION,
  withEnvelope,
  withoutSubscriptionId,
  type Era,
  type HeaderParam,
  type ModernEnvelope,
  type JsonObject,
  type JsonRpcNotification,
  type JsonRpcResponse,
  type LayerLogger,
  type ListenFilter,
  type RequestId,
  type UpstreamIdentity,
  catalogError,
} from '../../translate/index.js';
import type {
  CallOptions,
  UpstreamCall,
  UpstreamCaller,
  UpstreamClient,
  UpstreamListen,
  UpstreamStats,
  UpstreamTask,
  UpstreamTaskRef,
  UpstreamTaskSnapshot,
} from '../client.js';
import { InFlight } from '../in-flight.js';
import { fetchFailure, UpstreamHttpError, UpstreamTimeoutError, UpstreamUnavailableError } from '../errors.js';
import { exchange, parseUpstreamJson, WholeMessages, type ExchangeStop, type UpstreamResponse } from '../http.js';
import { abortReason, CallStop, ModernCall, raceSignal, readResponse } from './call.js';
import { sameHeaderParams, ToolHeaders } from './tool-headers.js';
import { startClientTrace } from '../tracing.js';
import { ModernUpstreamTask } from './task.js';

/** How a modern upstream is reached. */
export interface ModernClientOptions {
  /** The upstream's configured name. */
  name: string;
  url: string;
  /** Headers sent on every request (operator credentials, …); the caller's Authorization wins over them. */
  staticHeaders?: Record<string, string>;
  /** Budget for the response headers of one POST (a streamed body is bounded by its consumer). */
  timeoutMs: number;
  /**
   * Budget for a `subscriptions/listen` acknowledgement, which is due at once (default `timeoutMs`; the gateway gives
   * the probe timeout): a listen the upstream never acknowledges fails soon, not at the end of a call's budget.
   */
  ackTimeoutMs?: number;
  /** The gateway's identity, sent as `io.modelcontextprotocol/clientInfo` when the caller has none. */
  clientInfo: { name: string; version: string };
  /** Most MRTR rounds one call may take (default 16). */
  maxRounds?: number;
  /** How long a tool's learned `x-mcp-header` declarations are trusted (default 60 s). */
  toolSchemaTtlMs?: number;
  /** Most tools whose declarations are kept (default 1000). */
  maxToolSchemas?: number;
  /** The upstream layer's log (default nowhere). */
  log?: LayerLogger;
}

const DEFAULT_MAX_ROUNDS = 16;
/** Most bytes read from a non-2xx body that is looked at for a JSON-RPC error. */
const MAX_ERROR_BODY_BYTES = 64 * 1024;
/** Headers that belong to the legacy transport and must never reach a 2026-07-28 upstream (§Earlier Revisions). */
const LEGACY_ONLY_HEADERS = ['mcp-session-id', 'last-event-id'];

/** Messages whose reading fails with `cause` (a whole answer's body that broke), for the reader to name it. */
// biome-ignore lint/correctness/useYield: it only fails, as the stream it stands for would have
async function* brokenMessages(cause: unknown): AsyncGenerator<unknown> {
  throw cause;
}

/** Messages read whole, or as they arrive, as one async iterable. */
function asAsync(messages: AsyncIterable<unknown> | Iterable<unknown>): AsyncIterable<unknown> {
  if (Symbol.asyncIterator in messages) return messages;
  return (async function* () {
    yield* messages;
  })();
}

/** The stateless client of one 2026-07-28 upstream. */
export class ModernUpstreamClient implements UpstreamClient {
  /** The upstream layer's log (from the options; default nowhere). */
  readonly log: LayerLogger;
  readonly era: Era = 'modern';
  readonly name: string;
  private staticHeaders: Record<string, string> = {};
  private readonly maxRounds: number;
  private identityValue: UpstreamIdentity | undefined;
  private identityPending: Promise<UpstreamIdentity> | undefined;
  /** The `Mcp-Param-*` header declarations of the upstream's tools, learned from its `tools/list`. */
  private readonly tools: ToolHeaders;
  /** Every exchange in flight, so that `close()` can abort them. */
  private readonly inFlight = new InFlight<{ abort(reason?: unknown): void }>();
  private nextId = 1;
  private closed = false;

  constructor(private readonly opts: ModernClientOptions) {
    this.name = opts.name;
    this.log = opts.log ?? NO_LOG;
    this.maxRounds = opts.maxRounds ?? DEFAULT_MAX_ROUNDS;
    this.tools = new ToolHeaders((caller, params) => this.requestWhole(caller, 'tools/list', params), opts.toolSchemaTtlMs, opts.maxToolSchemas);
    this.useStaticHeaders(opts.staticHeaders ?? {});
  }

  /** The operator's static headers, sent with every later request (replaced by a reload). */
  useStaticHeaders(headers: Record<string, string>): void {
    const statics: Record<string, string> = {};
    for (const [k, v] of Object.entries(headers)) {
      if (!LEGACY_ONLY_HEADERS.includes(k.toLowerCase())) statics[k.toLowerCase()] = v;
    }
    this.staticHeaders = statics;
  }

  /** The identity learned from `server/discover`, without I/O. */
  get knownIdentity(): UpstreamIdentity | undefined {
    return this.identityValue;
  }

  /** `server/discover`, once: concurrent callers share one request; a failure is not cached. */
  async identity(caller: UpstreamCaller, signal?: AbortSignal): Promise<UpstreamIdentity> {
    if (this.identityValue) return this.identityValue;
    this.identityPending ??= this.discover(caller).finally(() => {
      this.identityPending = undefined;
    });
    return raceSignal(this.identityPending, signal);
  }

  private async discover(caller: UpstreamCaller): Promise<UpstreamIdentity> {
    let response = await this.requestWhole(caller, 'server/discover', {});
    if (isErrorResponse(response) && refusedListingOurVersion(response.error)) response = await this.requestWhole(caller, 'server/discover', {});
    if (isErrorResponse(response)) {
      throw new UpstreamUnavailableError(`upstream refused server/discover: ${response.error.code} ${response.error.message}`);
    }
    const identity = identityFromDiscover(response.result, { name: this.name, version: 'unknown' });
    if (!identity) throw new UpstreamUnavailableError('upstream did not answer server/discover with a 2026-07-28 DiscoverResult');
    this.identityValue = identity;
    return identity;
  }

  /**
   * Sends one request; resolves once the upstream has accepted it (HTTP status checked). With `opts.task` the
   * request declares the tasks extension and a `CreateTaskResult` answer becomes the call's `task` event; without it
   * the extension is taken out of the caller's capabilities, so that the upstream cannot answer with a task (tasks
   * extension §Capability Negotiation; a tool that needs one answers -32021, an ordinary response). The extension
   * has no way to ask for a ttl: `opts.task.ttlMs` is the upstream's to pick.
   */
  async call(caller: UpstreamCaller, method: string, params: JsonObject | undefined, signal?: AbortSignal, opts?: CallOptions): Promise<UpstreamCall> {
    if (this.closed) throw new UpstreamUnavailableError('upstream client closed');
    return this.send(withTasksExtension(caller, opts?.task !== undefined), method, params, signal, opts?.task !== undefined && method === 'tools/call');
  }

  private async send(
    caller: UpstreamCaller,
    method: string,
    params: JsonObject | undefined,
    signal: AbortSignal | undefined,
    asTask: boolean,
  ): Promise<UpstreamCall> {
    const stop = new CallStop();
    const onAbort = () => stop.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    const flying = this.inFlight.add(stop);
    const settle = () => {
      signal?.removeEventListener('abort', onAbort);
      this.inFlight.remove(flying);
    };
    const id = this.nextId++;
    const call = new ModernCall(id, stop);
    // One CLIENT span per call: its MRTR retries and a HeaderMismatch retry are exchanges of the same call.
    const traced = startClientTrace(caller.trace, this.name, method, params);
    const sender = traced.carrier === caller.trace ? caller : { ...caller, trace: traced.carrier };
    call.traceWith(traced.span);
    try {
      // A tool whose headers are known needs no wait (and no signal).
      const toolParams = method === 'tools/call' ? (this.tools.knownParams(params) ?? (await this.tools.paramsFor(caller, params, stop))) : [];
      const first = await this.exchange(sender, method, params, id, stop, toolParams);
      void this.drive(call, sender, method, params, first, id, toolParams, asTask).finally(settle);
      return call;
    } catch (e) {
      settle();
      call.push({ kind: 'failure', error: e instanceof Error ? e : new Error(String(e)) });
      throw e;
    }
  }

  /** Reads the call's exchanges to the end: notifications, MRTR rounds, the one outcome. */
  private async drive(
    call: ModernCall,
    caller: UpstreamCaller,
    method: string,
    params: JsonObject | undefined,
    first: AsyncIterable<unknown> | Iterable<unknown>,
    firstId: number,
    toolParams: HeaderParam[],
    asTask: boolean,
  ): Promise<void> {
    const mrtr = MRTR_METHODS.includes(method);
    let messages = first;
    let id = firstId;
    let headerParams = toolParams;
    let headersRelearned = false;
    let versionRetried = false;
    let sent = params;
    try {
      for (let round = 1; ; ) {
        const response = await readResponse(call, messages, id);
        if (call.finished) return;
        if (!response) {
          call.push({ kind: 'failure', error: new UpstreamUnavailableError('upstream closed the stream before answering') });
          return;
        }
        if (isErrorResponse(response)) {
          // §Client Behavior: on a HeaderMismatch, re-read the tool's schema and retry once if its headers changed.
          if (response.error.code === ErrorCode.HeaderMismatch && method === 'tools/call' && !headersRelearned) {
            headersRelearned = true;
            const relearned = await this.tools.paramsFor(caller, params, call.stop, true);
            if (!sameHeaderParams(relearned, headerParams)) {
              headerParams = relearned;
              id = this.nextId++;
              messages = await this.exchange(caller, method, sent, id, call.stop, headerParams);
              continue;
            }
          }
          // 2026-07-28 basic/versioning: refused with -32022 naming our version among those it supports, asked again once.
          if (!versionRetried && refusedListingOurVersion(response.error)) {
            versionRetried = true;
            id = this.nextId++;
            messages = await this.exchange(caller, method, sent, id, call.stop, headerParams);
            continue;
          }
          call.push({ kind: 'response', message: { ...response, id: call.requestId } });
          return;
        }
        if (isObject(response.result) && response.result.resultType === 'task') {
          // Only a tools/call that declared the extension may get one; anything else is an invalid response
          // (tasks extension §Capability Negotiation, §Supported Methods).
          const created = readModernCreateTaskResult(response.result);
          const why = !asTask ? 'a task it was not allowed to create' : !created ? 'a malformed CreateTaskResult' : undefined;
          if (why || !created) {
            call.push({ kind: 'failure', error: new UpstreamUnavailableError(`upstream answered ${method} with ${why}`) });
            return;
          }
          call.push({ kind: 'task', task: new ModernUpstreamTask(this, caller, created) });
          return;
        }
        const input = mrtr ? readInputRequired(response.result) : undefined;
        if (!input) {
          const result = method === 'tools/list' && isObject(response.result) ? this.tools.learn(response.result) : response.result;
          // The upstream's own text goes along while its result is passed on as it came (a translation may splice it).
          const raw = result === response.result && messages instanceof WholeMessages ? messages.text : undefined;
          const message: JsonRpcResponse = { jsonrpc: '2.0', id: call.requestId, result };
          call.push(raw === undefined ? { kind: 'response', message } : { kind: 'response', message, raw });
          return;
        }
        if (!input.ok) {
          call.push({
            kind: 'response',
            message: errorResponse(call.requestId, catalogError('GW_UPSTREAM_BAD_INPUT_REQUIRED', { args: [input.message] })),
          });
          return;
        }
        if (round > this.maxRounds) {
          call.push({
            kind: 'response',
            message: errorResponse(call.requestId, catalogError('GW_UPSTREAM_ENDLESS_INPUT', { args: [this.maxRounds] })),
          });
          return;
        }
        const answers = await call.ask(round, input.value.inputRequests);
        if (!answers) return; // the call ended meanwhile (cancelled, or an input request was refused)
        round++;
        sent = retryParams(params, answers, input.value.requestState);
        id = this.nextId++;
        messages = await this.exchange(caller, method, sent, id, call.stop, headerParams);
      }
    } catch (e) {
      call.push({ kind: 'failure', error: e instanceof Error ? e : new Error(String(e)) });
    }
  }

  /**
   * POSTs one request and returns its messages once the status is known: a JSON-RPC error in a non-2xx answer
   * is in-band (a 2026 server answers -32601 with 404, -32020/-32021/-32022 with 400); a non-2xx without one
   * is an `UpstreamHttpError`. `timeoutMs` bounds the wait for the response headers.
   */
  private async exchange(
    caller: UpstreamCaller,
    method: string,
    params: JsonObject | undefined,
    id: RequestId,
    stop: AbortSignal | ExchangeStop,
    toolParams: HeaderParam[] = [],
  ): Promise<AsyncIterable<unknown> | Iterable<unknown>> {
    // Built member by member (every call passes here: no conditional objects spread in).
    const envelope: ModernEnvelope = { capabilities: caller.capabilities, clientInfo: caller.clientInfo ?? this.opts.clientInfo };
    if (caller.logLevel !== undefined) envelope.logLevel = caller.logLevel;
    if (caller.trace !== undefined) envelope.trace = caller.trace;
    const body = { jsonrpc: '2.0', id, method, params: withEnvelope(params, envelope) };
    // Later members win, as in the spread this replaces: the static headers, the caller's credentials, ours.
    const headers: Record<string, string> = { ...this.staticHeaders };
    if (caller.authorization) headers.authorization = caller.authorization;
    headers['content-type'] = 'application/json';
    headers.accept = 'application/json, text/event-stream';
    Object.assign(headers, modernHeaders(method, params));
    if (toolParams.length > 0) Object.assign(headers, paramHeaders(toolParams, params?.arguments));
    // The same context in the headers as in `_meta` (2026-07-28 basic §General fields › `_meta`), for what reads
    // the transport's (a proxy, an HTTP instrumentation).
    if (caller.trace) setTraceHeaders(headers, caller.trace);
    let res: UpstreamResponse;
    try {
      // The headers deadline is the pool's own timer (no timer per exchange); failureOf reads it as a timeout.
      res = await exchange(this.opts.url, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: stop,
        headersTimeoutMs: this.opts.timeoutMs,
      });
    } catch (cause) {
      throw failureOf(cause, stop);
    }
    if (res.ok) {
      // A JSON answer of declared length is read whole here (no async generators between its body and the call); a
      // body that breaks meanwhile fails when read, as a stream does, so the reader names the failure the same way.
      const whole = res.wholeMessages();
      return whole === undefined ? res.messages() : await whole.catch(brokenMessages);
    }
    const text = await res.text(MAX_ERROR_BODY_BYTES).catch(() => '');
    const parsed = safeJson(text);
    // 401/403 judge the caller's credentials whatever the body says: the client needs the status and the challenge
    // (2025-11-25 basic/authorization §Error Handling), not a JSON-RPC error inside them.
    if (isErrorResponse(parsed) && res.status !== 401 && res.status !== 403) return once(parsed);
    throw new UpstreamHttpError(res.status, text.slice(0, 500), { challenge: res.challenge });
  }

  /** One request read to its response within `timeoutMs` (discover, tools/list for schemas). */
  private async requestWhole(caller: UpstreamCaller, method: string, params: JsonObject): Promise<JsonRpcResponse> {
    if (this.closed) throw new UpstreamUnavailableError('upstream client closed');
    // Shared by concurrent callers, so no caller's signal aborts it: each caller races its own (raceSignal).
    const controller = new AbortController();
    const flying = this.inFlight.add(controller);
    const clear = deadline(controller, this.opts.timeoutMs);
    const id = this.nextId++;
    try {
      const messages = await this.exchange(caller, method, params, id, controller.signal);
      try {
        for await (const m of messages) if (isResponse(m) && (m.id === id || m.id === null)) return m;
      } catch (cause) {
        throw failureOf(cause, controller.signal);
      }
      throw new UpstreamUnavailableError(`upstream closed the stream before answering ${method}`);
    } finally {
      clear();
      this.inFlight.remove(flying);
    }
  }

  /**
   * Opens `subscriptions/listen` (2026-07-28 basic/patterns/subscriptions): the acknowledgement gives the accepted
   * filter; each later notification is yielded without its `subscriptionId`. Ends when `signal` aborts, the
   * upstream closes the stream or sends the final result, or the consumer stops reading.
   */
  async listen(caller: UpstreamCaller, filter: ListenFilter, signal: AbortSignal): Promise<UpstreamListen> {
    if (this.closed) throw new UpstreamUnavailableError('upstream client closed');
    const controller = new AbortController();
    const flying = this.inFlight.add(controller);
    const onAbort = () => {
      controller.abort(signal.reason);
      this.inFlight.remove(flying); // also when the consumer never starts reading the notifications
    };
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    const cleanup = () => {
      controller.abort();
      signal.removeEventListener('abort', onAbort);
      this.inFlight.remove(flying);
    };
    const id = this.nextId++;
    let it: AsyncIterator<unknown>;
    const early: JsonRpcNotification[] = [];
    let accepted: ListenFilter | undefined;
    let ended = false;
    // the acknowledgement is due at once (2026-07-28 basic/patterns/subscriptions)
    const clear = deadline(
      controller,
      Math.min(this.opts.ackTimeoutMs ?? this.opts.timeoutMs, this.opts.timeoutMs),
      'upstream did not acknowledge subscriptions/listen in time',
    );
    try {
      it = asAsync(await this.exchange(caller, 'subscriptions/listen', { notifications: { ...filter } }, id, controller.signal))[Symbol.asyncIterator]();
      while (accepted === undefined) {
        let step: IteratorResult<unknown>;
        try {
          step = await it.next();
        } catch (cause) {
          throw failureOf(cause, controller.signal);
        }
        if (step.done) throw new UpstreamUnavailableError('upstream closed subscriptions/listen before acknowledging it');
        const m = step.value;
        if (isResponse(m)) {
          if (isErrorResponse(m)) throw new UpstreamUnavailableError(`upstream refused subscriptions/listen: ${m.error.code} ${m.error.message}`);
          accepted = {}; // closed at once, gracefully: nothing is served
          ended = true;
        } else if (isNotification(m)) {
          if (m.method === 'notifications/subscriptions/acknowledged') accepted = readListenFilter(isObject(m.params) ? m.params : {});
          else early.push(withoutSubscriptionId(m));
        }
      }
    } catch (e) {
      clear();
      cleanup();
      throw e;
    }
    clear();
    const iterator = it;
    const log = this.log;
    const name = this.opts.name;
    async function* notifications(): AsyncGenerator<JsonRpcNotification> {
      try {
        yield* early;
        if (ended) return;
        for (;;) {
          let step: IteratorResult<unknown>;
          try {
            step = await iterator.next();
          } catch (cause) {
            // Ended by its consumer: the stream ends. Broken under it (the upstream died): that is an error, not an end.
            if (controller.signal.aborted) return;
            throw new UpstreamUnavailableError(`${name} broke its subscriptions/listen stream`, { cause });
          }
          // A stream that stops without the closing result was not ended by the server (2026-07-28
          // basic/patterns/subscriptions §Graceful Closure): the upstream is gone.
          if (step.done) throw new UpstreamUnavailableError(`${name} closed its subscriptions/listen stream without ending it`);
          const m = step.value;
          if (isResponse(m)) return; // the graceful closing result (2026-07-28 basic/patterns/subscriptions §Graceful Closure)
          if (isNotification(m) && m.method !== 'notifications/subscriptions/acknowledged') yield withoutSubscriptionId(m);
        }
      } finally {
        cleanup();
        await iterator.return?.().catch(logFailure(log, 'debug', 'listen stream not closed cleanly'));
      }
    }
    return { accepted, notifications: notifications() };
  }

  /**
   * A task another instance created: a 2026-07-28 upstream holds no session (2026-07-28 basic/transports
   * §Stateless), so `tasks/get`, `tasks/update` and `tasks/cancel` with the caller's headers reach it from here.
   */
  resumeTask(caller: UpstreamCaller, ref: UpstreamTaskRef, created: UpstreamTaskSnapshot): UpstreamTask {
    return new ModernUpstreamTask(this, caller, { resumed: ref, created });
  }

  /** Nothing to keep: a modern upstream holds no per-caller state. */
  retain(_caller: UpstreamCaller): () => void {
    return () => {};
  }

  /** A stateless upstream holds no sessions. */
  stats(): UpstreamStats {
    return { sessions: 0 };
  }

  /** Aborts every exchange in flight. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = new UpstreamUnavailableError('upstream client closed');
    for (const c of this.inFlight.drain()) c.abort(error);
  }
}

/**
 * The caller with the tasks extension declared (`declare`), or taken out of its capabilities: a modern upstream sees
 * the extension only on requests that may be answered with a task or that touch one.
 */
function withTasksExtension(caller: UpstreamCaller, declare: boolean): UpstreamCaller {
  const caps = caller.capabilities;
  const extensions: JsonObject = isObject(caps.extensions) ? { ...caps.extensions } : {};
  if (declare) extensions[TASKS_EXTENSION] = {};
  else if (!(TASKS_EXTENSION in extensions)) return caller;
  else delete extensions[TASKS_EXTENSION];
  const capabilities: JsonObject = { ...caps };
  if (Object.keys(extensions).length > 0) capabilities.extensions = extensions;
  else delete capabilities.extensions;
  return { ...caller, capabilities };
}

/** Aborts `controller` with an `UpstreamTimeoutError` after `ms`; returns the function that disarms it. */
function deadline(controller: AbortController, ms: number, what = 'upstream did not answer in time'): () => void {
  const timer = setTimeout(() => controller.abort(new UpstreamTimeoutError(what)), ms);
  timer.unref();
  return () => clearTimeout(timer);
}

/** The error for a failed fetch or read: the timeout (with its cause), the abort reason, or unreachable. */
function failureOf(cause: unknown, signal: { readonly aborted: boolean; readonly reason: unknown }): Error {
  if (signal.aborted) return abortReason(signal, cause);
  return fetchFailure(cause);
}

async function* once(message: unknown): AsyncGenerator<unknown> {
  yield message;
}

function safeJson(text: string): unknown {
  try {
    return parseUpstreamJson(text);
  } catch {
    return undefined;
  }
}
