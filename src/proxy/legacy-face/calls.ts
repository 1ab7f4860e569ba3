/**
 * The legacy face's calls in flight: a client request forwarded upstream whose answer streams back on the request's
 * own POST response (SSE when the client accepts it). The request is cancellable (its `notifications/cancelled`, or
 * the connection closing); the call's notifications are relayed; its input requests (MRTR rounds, whatever the
 * upstream era) become legacy server→client requests on that stream with gateway-minted ids, and the client's POSTed
 * responses are checked and routed back to the call by id. Each session's share (its requests in flight, its calls'
 * server→client requests) is its own SessionCalls, made here and ended with the session.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  asErrorObject,
  declaresTasks,
  isInputDeclared,
  isInputMethod,
  isObject,
  legacyError,
  legacyInputParams,
  legacyResult,
  modernParamsFromLegacy,
  progressTokenOf,
  relayedOnRequestStream,
  splicedResult,
  requiredCapabilityFor,
  singleHeader,
  toolTaskSupport,
  undeclaredInputError,
  withLegacyTaskSupport,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type RequestId,
  type TraceCarrier,
} from '../../translate/index.js';
import type { TaskRuntime } from '../../tasks/index.js';
import type { UpstreamCall } from '../../upstream/index.js';
import { channelError, exceptionToEdge, inBandError } from '../errors.js';
import { legacyTaskSupport } from '../../tasks/index.js';
import type { BackgroundFailure, ClientSession } from './session.js';
import { CANCELLED, errorOutcome, INPUT_TIMEOUT, OK, UNSUPPORTED_RESULT_TYPE, upstreamErrorOutcome, type RequestOutcome } from '../request-outcome.js';
import { ResponseChannel, stopWhenClientLeaves } from '../response.js';

/** The key of a client request id in a session's maps (a number and a string id of the same digits differ). */
/** What stops a client request in flight: an AbortController, or anything else that can be told to stop. */
export interface Abortable {
  abort(reason?: unknown): void;
}

export const idKey = (id: RequestId): string => `${typeof id}:${id}`;

/** A server→client request the gateway sent for a call, waiting for the client's POSTed response. */
interface Outbound {
  call: UpstreamCall;
  upstreamId: RequestId;
  /** The client request whose call asked. */
  owner: string;
  /** What was asked: the client's answer is checked against it before it goes upstream. */
  method: string;
  params: JsonObject | undefined;
}

/** One session's calls: its client requests in flight and the server→client requests their calls sent. */
export class SessionCalls {
  /**
   * Client requests in flight, with their request id keys: aborting one cancels its upstream call. An array, not a
   * `Map` keyed per request (docs/performance.md: a `Map` with churn promotes what it points to); a session has a few
   * requests in flight at a time.
   */
  private readonly inflight: { key: string; aborter: Abortable }[] = [];
  private readonly outbound = new Map<string, Outbound>();
  private nextOutbound = 0;

  /**
   * Marks a client request in flight under `key` (its `notifications/cancelled` or the session's end aborts it); the
   * returned function marks it done.
   */
  track(key: string, aborter: Abortable): () => void {
    // A key tracked again replaces the earlier entry, as a map's set would.
    const earlier = this.inflight.findIndex((e) => e.key === key);
    if (earlier >= 0) this.inflight.splice(earlier, 1);
    const entry = { key, aborter };
    this.inflight.push(entry);
    return () => {
      const at = this.inflight.indexOf(entry);
      if (at >= 0) this.inflight.splice(at, 1);
    };
  }

  /** Aborts the client request `id` names, if it is in flight. */
  cancel(id: RequestId, reason: string): void {
    const key = idKey(id);
    this.inflight.find((e) => e.key === key)?.aborter.abort(new Error(reason));
  }

  /** Records a server→client request a call of request `o.owner` sent; returns the id minted for it. */
  asked(o: Outbound): string {
    const gid = `gw-${++this.nextOutbound}`;
    this.outbound.set(gid, o);
    return gid;
  }

  /** Whether a call of request `owner` waits for the client to answer one of its server→client requests. */
  waitsOnClient(owner: string): boolean {
    return this.outbound.size > 0 && [...this.outbound.values()].some((o) => o.owner === owner);
  }

  /** Drops what request `owner` asked and was not answered (the request ended). */
  dropAsked(owner: string): void {
    if (this.outbound.size > 0) for (const [gid, o] of this.outbound) if (o.owner === owner) this.outbound.delete(gid);
  }

  /** A client's POSTed response to a server→client request, routed to the waiting call. */
  async answer(body: JsonObject): Promise<void> {
    const id = body.id;
    if (typeof id !== 'string') return;
    const o = this.outbound.get(id);
    if (!o) return;
    // The answer goes to the upstream as it came, fitting the question or not: the upstream judges it, as it would
    // had the client been passed through to it. Refusing it here would leave the question open for a client that
    // does not read the refusal (SDK 1.32.2 drops a 400 to its answer), and its call would wait for ever where a
    // pass-through serves it (the conformance suite's tools-call-elicitation through a federated path).
    this.outbound.delete(id);
    const payload = 'error' in body ? { error: asErrorObject(body.error) } : { result: body.result as JsonObject };
    await o.call.respond(o.upstreamId, payload).catch(() => {
      // The call ended meanwhile; its request's response says so.
    });
  }

  /** The session ended: its requests in flight are aborted (their calls cancelled), their server→client requests dropped. */
  end(): void {
    for (const e of this.inflight.splice(0)) e.aborter.abort(new Error('session ended'));
    this.outbound.clear();
  }
}

/** What a streamed request's work gets: the response channel, whether it may stream, its cancellation, its key. */
export interface StreamedIo {
  channel: ResponseChannel;
  canStream: boolean;
  signal: AbortSignal;
  key: string;
}

/** What the calls work with. */
export interface FaceCallsOptions {
  /** The runtime that runs tool calls (its rules apply) and knows each tool's task policy. */
  runtime: TaskRuntime;
  /** SSE keep-alive comment interval. */
  keepAliveMs: number;
  /** How long a call waits for the client to answer a server→client request. */
  inputTimeoutMs: number;
  /** Background failures of a session. */
  failed: BackgroundFailure;
}

/** Client requests whose answers stream from their calls, and the server→client requests those calls make. */
export class FaceCalls {
  constructor(private readonly o: FaceCallsOptions) {}

  /** Forwards a request upstream and streams what its call produces back to the client. */
  forward(request: FastifyRequest, reply: FastifyReply, s: ClientSession, req: JsonRpcRequest, trace: TraceCarrier | undefined): Promise<RequestOutcome> {
    // 2025-11-25 basic/transports says a disconnect is not a cancellation, but this face keeps no resumable streams:
    // nothing could reach the client any more, so the upstream work is stopped.
    return this.streamed(
      request,
      reply,
      s,
      req,
      async ({ channel, canStream, signal, key }) => {
        let call: UpstreamCall | undefined;
        try {
          // A tools/call goes through the runtime: its rules apply, and a task the upstream insists on is hidden.
          call =
            req.method === 'tools/call'
              ? await this.o.runtime.callToolPlain(s.route, modernParamsFromLegacy(isObject(req.params) ? req.params : {}) ?? {}, s.contextOf(trace), signal)
              : await s.route.upstream.call(s.callerOf(trace), req.method, modernParamsFromLegacy(req.params), signal);
          // Cancelled while the call was being sent (a plain call is awaited to its answer's headers): whatever it
          // answered is not the client's any more.
          if (signal.aborted) {
            call.cancel(String((signal.reason as Error | undefined)?.message ?? 'cancelled'));
            return this.endCancelled(req, channel);
          }
          return await this.pump(s, req, key, call, channel, canStream, signal);
        } catch (e) {
          call?.cancel('gateway error');
          throw e;
        }
      },
      (channel) => this.endCancelled(req, channel),
    );
  }

  /**
   * Serves a client request whose answer may stream (SSE when the client accepts it): the request is cancellable (its
   * `notifications/cancelled`, or the connection closing, aborts `signal`), a failure is answered through the one
   * error table, and what the request left behind (its in-flight entry, its server→client requests) is dropped.
   */
  async streamed(
    request: FastifyRequest,
    reply: FastifyReply,
    s: ClientSession,
    req: JsonRpcRequest,
    run: (io: StreamedIo) => Promise<RequestOutcome>,
    cancelled: (channel: ResponseChannel) => RequestOutcome,
  ): Promise<RequestOutcome> {
    const accept = singleHeader(request.headers, 'accept') ?? '';
    const canStream = accept.includes('text/event-stream') || accept.includes('*/*');
    const channel = new ResponseChannel(reply, canStream, this.o.keepAliveMs);
    const key = idKey(req.id);
    const aborter = new AbortController();
    const release = s.calls.track(key, aborter);
    const unwatch = stopWhenClientLeaves(reply, aborter);
    try {
      return await run({ channel, canStream, signal: aborter.signal, key });
    } catch (e) {
      if (aborter.signal.aborted) return cancelled(channel);
      const edge = exceptionToEdge(e);
      if (edge.fault) request.log.error({ err: e, method: req.method, upstream: s.route.name }, 'legacy face: request failed');
      // An upstream's 401/403 challenge goes on the reply before the channel ends it (Retry-After is the channel's).
      if (edge.challenge !== undefined) void reply.header('www-authenticate', edge.challenge);
      channel.error(req.id, edge.error, edge.status, edge.retryAfterSeconds);
      return errorOutcome(edge.error.code, e);
    } finally {
      unwatch();
      release();
      s.calls.dropAsked(key);
    }
  }

  /** A client notification: `notifications/cancelled` aborts the request it names; others are dropped. */
  onNotification(s: ClientSession, n: JsonRpcNotification): void {
    if (n.method !== 'notifications/cancelled') return;
    // 2025-11-25 basic/utilities/cancellation → the upstream call is aborted (2026-07-28: the stream is closed).
    const p = isObject(n.params) ? n.params : {};
    const rid = p.requestId;
    if (typeof rid !== 'string' && typeof rid !== 'number') return;
    s.calls.cancel(rid, typeof p.reason === 'string' ? p.reason : 'cancelled by the client');
  }

  /**
   * Reads a call's events: notifications are relayed (progress for the client's token, log messages at its
   * level), input requests go to the client on this request's stream, the outcome ends the response.
   */
  private async pump(
    s: ClientSession,
    req: JsonRpcRequest,
    key: string,
    call: UpstreamCall,
    channel: ResponseChannel,
    canStream: boolean,
    signal: AbortSignal,
  ): Promise<RequestOutcome> {
    const token = progressTokenOf(isObject(req.params) ? req.params : {});
    for (;;) {
      const e = await call.nextUnless(s.calls.waitsOnClient(key) ? this.o.inputTimeoutMs : undefined, signal);
      if (e === undefined) {
        if (signal.aborted) {
          call.cancel(String((signal.reason as Error | undefined)?.message ?? 'cancelled'));
          return this.endCancelled(req, channel);
        }
        call.cancel('the client did not answer the input request in time');
        channelError(channel, req.id, 'GW_CLIENT_ANSWER_TIMEOUT');
        return INPUT_TIMEOUT;
      }
      switch (e.kind) {
        case 'notification':
          // Progress for the client's own token, log messages at its level (the 2026-07-28 request-stream rule holds
          // for a legacy POST stream too); list changes reach the session through its listen, not this stream.
          if (relayedOnRequestStream(e.message, { progressToken: token, logLevel: s.logLevel })) channel.notify(e.message);
          break;
        case 'request': {
          const refused = this.ask(s, key, call, e.message, channel, canStream);
          if (refused) {
            call.cancel(refused.message);
            channel.error(req.id, refused, 200);
            return errorOutcome(refused.code);
          }
          break;
        }
        case 'response': {
          const m = e.message;
          if ('error' in m) {
            const error = legacyError(asErrorObject(m.error));
            channel.error(req.id, error, 200);
            return upstreamErrorOutcome(error.code);
          }
          const upstream = isObject(m.result) ? m.result : {};
          // A tools/list as job rules show it (docs/jobs.md), before the era's translation screens its schemas, with
          // each tool's task support.
          const listed = req.method === 'tools/list' ? await this.o.runtime.listTools(s.route, s.contextOf(), upstream, signal) : upstream;
          const r = legacyResult(req.method, listed);
          if (!r.ok) {
            channelError(channel, req.id, 'GW_UNSUPPORTED_RESULT_TYPE', { args: [r.failure.resultType] });
            return UNSUPPORTED_RESULT_TYPE;
          }
          if (req.method === 'tools/list' && s.tasks) channel.result(req.id, this.withTaskSupport(s, m.result, r.value));
          // A tool's result changes only at its top level: written from the upstream's own text when it came whole.
          else channel.result(req.id, r.value, e.raw !== undefined && req.method === 'tools/call' ? splicedResult(e.raw, upstream, r.value) : undefined);
          return OK;
        }
        case 'failure':
          throw e.error;
      }
    }
  }

  /** A tools/list result with each tool's 2025-11-25 `execution.taskSupport` (legacyTaskSupport). */
  private withTaskSupport(s: ClientSession, upstreamResult: unknown, result: JsonObject): JsonObject {
    const route = s.route;
    // A federated route's tools carry each member's support already (tasks/federation: its rule and its era).
    if (route.federation) return withLegacyTaskSupport(result, (name) => toolTaskSupport(upstreamResult).get(name) ?? 'forbidden');
    const era = route.upstream.era;
    const extension = declaresTasks(route.upstream.knownIdentity?.capabilities ?? {});
    const own = era === 'legacy' ? toolTaskSupport(upstreamResult) : undefined;
    return withLegacyTaskSupport(result, (name) =>
      legacyTaskSupport(this.o.runtime.policyFor(route, name).task, era === 'modern' ? { era, extension } : { era: 'legacy', support: own?.get(name) }),
    );
  }

  /**
   * Sends one input request of a call to the client as a legacy server→client request, or says why it cannot be
   * sent: an input kind the client did not declare is never sent (2026-07-28 basic/patterns/mrtr §Server
   * Requirements; the upstream would answer -32021 itself).
   */
  private ask(
    s: ClientSession,
    owner: string,
    call: UpstreamCall,
    m: JsonRpcRequest,
    channel: ResponseChannel,
    canStream: boolean,
  ): JsonRpcErrorObject | undefined {
    const params = isObject(m.params) ? m.params : undefined;
    if (!isInputMethod(m.method)) {
      void call
        .respond(m.id, { error: inBandError('GW_METHOD_NOT_SERVED', { args: [m.method] }) })
        .catch(this.o.failed('debug', 'refusal of an upstream request not delivered; its call ended', s));
      return undefined;
    }
    if (!isInputDeclared(m.method, params, s.legacyCapabilities)) return undeclaredInputError(m.method, requiredCapabilityFor(m.method, params));
    if (!canStream) return inBandError('GW_NEEDS_STREAM', { args: [m.method] });
    const gid = s.calls.asked({ call, upstreamId: m.id, owner, method: m.method, params });
    const out: JsonRpcMessage = { jsonrpc: '2.0', id: gid, method: m.method };
    const p = legacyInputParams(m.method, params, `${s.id.slice(0, 8)}-${gid}`);
    if (p) out.params = p;
    channel.notify(out);
    return undefined;
  }

  /** A cancelled request gets no response (2025-11-25 cancellation: SHOULD NOT); a JSON reply still needs a body. */
  private endCancelled(req: JsonRpcRequest, channel: ResponseChannel): RequestOutcome {
    if (channel.isStreaming) channel.abandon();
    else channelError(channel, req.id, 'GW_REQUEST_CANCELLED');
    return CANCELLED;
  }
}
