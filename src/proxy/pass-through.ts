/**
 * Pass-through forwarding: a request the upstream serves itself, in the client's own era, forwarded as it is with
 * @fastify/reply-from (sessions, GET streams and DELETE included) and its answer passed back within the upstream's
 * budget.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import replyFrom from '@fastify/reply-from';
import type { FastifyInstance, FastifyReply, FastifyRequest, RawServerBase, RouteGenericInterface } from 'fastify';
import {
  GatewayError,
  catalogAnswer,
  encodeHeaderValue,
  TRACEPARENT,
  TRACESTATE,
  errorSummary,
  isObject,
  requestIdOf,
  singleHeader,
  type Era,
  type ErrorKind,
} from '../translate/index.js';
import type { SharedValues, UpstreamRoute } from '../tasks/index.js';
import {
  endHttpSpan,
  fetchFailure,
  startClientTrace,
  UpstreamHttpError,
  UpstreamTimeoutError,
  type RequestTrace,
  type UpstreamAvailability,
} from '../upstream/index.js';
import { identityOf } from './auth.js';
import { exceptionToEdge, refuse, refuseWith } from './errors.js';
import { infoEnabled, recordRequest } from './operator-log.js';
import { failureOf, passThroughOutcome } from './request-outcome.js';
import { relayJsonAnswer } from './json-lines.js';
import { PassedSessions } from './passed-sessions.js';
import { rawBodyOf } from './raw-body.js';
import { traceRequest } from './request-trace.js';

/** What pass-through forwarding needs. */
export interface PassThroughOptions {
  route: UpstreamRoute;
  /** Learns the upstream anew when an answer says it may have changed. */
  availability: UpstreamAvailability;
  /** Where the sessions passed through to a legacy upstream are bound to their principals (absent: this instance). */
  sessionStore?: SharedValues;
  /** A passed-through session without requests for this long is forgotten by the gateway (its client gets 404). */
  sessionIdleMs: number;
}

/** One forwarded exchange, as the answer's handling reads it. */
interface Exchange {
  request: FastifyRequest;
  reply: FastifyReply;
  clientEra: Era;
  /** The legacy session the request belongs to (checked as the caller's), if any. */
  session: string | undefined;
  /** A legacy `initialize`: the session its answer opens is bound to the caller before the client sees it. */
  initializing: boolean;
  /** Everything that waits for the answer's end (one close listener runs them all). */
  atClose: Array<() => void>;
  /** The catalog entry the gateway answered the request with instead of the upstream's answer, if it did. */
  failure?: ErrorKind;
  /** A federated call under its member's own name: the body sent instead of the client's, and its `Mcp-Name`. */
  renamed?: Renamed;
  /** A federated endpoint's call on its member (whose `application/json` answer may be JSON lines). */
  member?: true;
}

/** A request forwarded under another name (a federated endpoint's member's own): its new body and `Mcp-Name`. */
export interface Renamed {
  body: string;
  name: string;
}

/**
 * Pass-through answers that may mean the upstream changed under us: it is failing (5xx), or, to a legacy
 * client, forgot the session (404: restarted) or refuses a request (400: a forgotten session said the SDK way,
 * or a modern-only server's -32022); to a modern client, a 400 (a legacy server's "no valid session"). A modern
 * 404 is only "method not found" (2026-07-28 basic/transports/streamable-http §Sending Messages), and a 405 to
 * GET is an ordinary answer of a stateless dual-era server.
 */
function mayMeanUpstreamChanged(clientEra: Era, status: number): boolean {
  return status >= 500 || status === 400 || (clientEra === 'legacy' && status === 404);
}

/**
 * What a 2025-11-25 client gets instead of a passed-through answer to its request that is no MCP answer (neither JSON
 * nor an SSE stream: a wrong path's HTML page, a proxy's error page), or `undefined` to pass the answer on. A 2025-11-25
 * client reads an HTTP error body as the server's message; the gateway's catalogued error says what happened instead:
 * 404 to a session (2025-11-25 basic/transports §Session Management: the client initializes again), the upstream's
 * HTTP error, or an unusable answer. A 401/403 passes as it is: its challenge is the client's to follow (2025-11-25
 * basic/authorization §Authorization Server Discovery). Notifications and responses (answered 202) are not judged.
 */
function notMcpAnswer(request: FastifyRequest, status: number, contentType: unknown, session: string | undefined): GatewayError | undefined {
  const body = request.body;
  if (request.method !== 'POST' || !isObject(body) || typeof body.method !== 'string' || body.id === undefined) return undefined;
  if (status === 401 || status === 403) return undefined;
  const type = String(contentType ?? '')
    .split(';')[0]
    ?.trim()
    .toLowerCase();
  if (type === 'application/json' || type === 'text/event-stream') return undefined;
  if (session !== undefined && status === 404) return new GatewayError('GW_SESSION_NOT_FOUND');
  if (status >= 400) return new UpstreamHttpError(status, '');
  return new GatewayError('GW_UPSTREAM_BAD_MESSAGE', { args: [`HTTP ${status} ${type || 'without a content type'}, not JSON-RPC`] });
}

/**
 * Registers the forwarding client (reply-from) in the endpoint's scope, after its authentication hook, and returns
 * the pass-through of the scope's upstream.
 */
export async function registerPassThrough(scope: FastifyInstance, opts: PassThroughOptions): Promise<PassThrough> {
  const upstreamUrl = new URL(opts.route.url);
  await scope.register(replyFrom, {
    base: upstreamUrl.origin,
    // The operator log has one line per request (its own); reply-from's "fetching"/"response received" would add two.
    disableRequestLogging: true,
    undici: { connections: 128, pipelining: 1, bodyTimeout: 0, headersTimeout: opts.route.timeoutMs },
  });
  return new PassThrough(opts, upstreamUrl, upstreamUrl.pathname + upstreamUrl.search);
}

/**
 * Registers one forwarding client for several upstreams (a federated path's members: a pool per origin, each request
 * naming its upstream's whole URL) and returns the maker of each upstream's pass-through over it. Each request bounds
 * its answer by its own upstream's budget (`timeout` in `forward`, then `budget`).
 */
export async function registerMembersPassThrough(scope: FastifyInstance): Promise<(opts: PassThroughOptions) => PassThrough> {
  await scope.register(replyFrom, { disableRequestLogging: true, undici: { connections: 128, pipelining: 1, bodyTimeout: 0, headersTimeout: 0 } });
  return (opts) => {
    const url = new URL(opts.route.url);
    return new PassThrough(opts, url, url.href);
  };
}

/** Forwards requests to one upstream as they are. */
export class PassThrough {
  private readonly route: UpstreamRoute;
  private readonly availability: UpstreamAvailability;
  private readonly passedSessions: PassedSessions;

  constructor(
    opts: PassThroughOptions,
    private readonly upstreamUrl: URL,
    /** What reply-from is asked for: the path (its client's base is the upstream) or the whole URL (it has none). */
    private readonly source: string,
  ) {
    this.route = opts.route;
    this.availability = opts.availability;
    this.passedSessions = new PassedSessions({
      upstream: opts.route.name,
      idleMs: opts.sessionIdleMs,
      ...(opts.sessionStore ? { store: opts.sessionStore } : {}),
    });
  }

  /**
   * A request the upstream serves itself, forwarded as it is. Legacy session traffic is bound to the principal that
   * opened the session (passed-sessions.ts): another caller's, or an id the gateway never saw opened, is answered
   * 404 here and never forwarded; an `initialize` answer that opens a session is recorded before the client sees it.
   */
  async serve(request: FastifyRequest, reply: FastifyReply, clientEra: Era): Promise<FastifyReply> {
    const traced = traceRequest(request, reply, 'pass-through', clientEra, this.route.name);
    const sid = singleHeader(request.headers, 'mcp-session-id');
    let session: string | undefined;
    if (clientEra === 'legacy' && sid !== undefined) {
      let owned = false;
      try {
        // A repeated header names no one session: unknown, like any id that is not the caller's.
        owned = sid !== null && sid !== '' && (await this.passedSessions.owns(sid, identityOf(request).principal));
      } catch (e) {
        // The store that holds the bindings cannot be reached: 503 with Retry-After, as for any store failure.
        reply.log.warn({ err: e, upstream: this.route.name }, 'pass-through: the session bindings could not be read');
        return refuseWith(reply, exceptionToEdge(e), requestIdOf(request.body));
      }
      // 2025-11-25 basic/transports §Session Management: an unknown session is 404 (the client initializes again).
      if (!owned) return refuse(reply, 'GW_SESSION_NOT_FOUND', requestIdOf(request.body));
      session = sid as string;
    }
    const initializing = clientEra === 'legacy' && request.method === 'POST' && isObject(request.body) && request.body.method === 'initialize';
    return this.forward({ request, reply, clientEra, session, initializing, atClose: [] }, traced);
  }

  /**
   * A federated endpoint's 2026-07-28 request on this member (docs/federation.md §Eras and tasks): forwarded as a single
   * endpoint passes it, under the member's own name when `renamed`, the answer passed back as it comes.
   */
  serveModern(request: FastifyRequest, reply: FastifyReply, renamed: Renamed | undefined): Promise<FastifyReply> | FastifyReply {
    const traced = traceRequest(request, reply, 'pass-through', 'modern', this.route.name);
    const x: Exchange = { request, reply, clientEra: 'modern', session: undefined, initializing: false, atClose: [], member: true };
    if (renamed) x.renamed = renamed;
    return this.forward(x, traced);
  }

  private forward(x: Exchange, traced: RequestTrace | undefined): Promise<FastifyReply> | FastifyReply {
    const { request, reply, clientEra, atClose } = x;
    const route = this.route;
    const started = Date.now();
    // Everything that waits for the answer's end runs from ONE close listener: a passed-through SSE answer already
    // carries the drain's and the stream's own, and one listener per concern took it past Node's
    // warning threshold (a bounded count, not a leak, but a warning an operator would chase).
    reply.raw.once('close', () => {
      for (const f of atClose) f();
    });
    // The operator line only when info is logged; the metrics when they are on.
    const logs = infoEnabled(request);
    if (logs || request.server.metrics) {
      atClose.push(() => {
        const method = request.method === 'POST' && isObject(request.body) ? (request.body.method ?? 'response') : request.method;
        const ms = Date.now() - started;
        if (logs && reply.raw.writableFinished)
          request.log.info(
            { method, era: 'pass-through', upstream: route.name, status: reply.statusCode, ms, ...(traced ? { traceId: traced.traceId } : {}) },
            'mcp request',
          );
        const outcome = passThroughOutcome(reply.raw.writableFinished, reply.statusCode, x.failure);
        recordRequest(request, { upstream: route.name, method, clientEra, upstreamEra: clientEra, mode: 'passthrough', outcome, ms });
      });
    }
    // The upstream exchange's own CLIENT span (with an SDK), ended with the answer; its context goes in the headers.
    // The body goes as it came (byte for byte): a `_meta.traceparent` in it reaches the upstream as the client sent it.
    const body = request.body;
    const upstreamTrace = traced
      ? startClientTrace(
          traced.carrier,
          route.name,
          isObject(body) && typeof body.method === 'string' ? body.method : request.method,
          isObject(body) && isObject(body.params) ? body.params : undefined,
        )
      : undefined;
    const clientSpan = upstreamTrace?.span;
    if (clientSpan) atClose.push(() => endHttpSpan(clientSpan, reply.statusCode));
    const carried = upstreamTrace?.carrier;
    const text = x.renamed?.body ?? rawBodyOf(request);
    return reply.from(this.source, {
      // A member's answer starts within its own budget (the client serving every member cannot bound it for each); its
      // silence as long as that (undici's body timeout) ends a stream as the budget does.
      ...(x.member ? { timeout: route.timeoutMs } : {}),
      // The body as it arrived (not serialized again from the parsed object), with its own Content-Type.
      ...(text !== undefined ? { body: text, contentType: String(request.headers['content-type']) } : {}),
      rewriteRequestHeaders: (_req, headers) => {
        // A credential the gateway consumed itself (`auth.forward: false`) does not travel on (a static one does).
        const client: Record<string, string | string[] | undefined> = { ...headers };
        if (identityOf(request).authorization === undefined) delete client.authorization;
        const out: Record<string, string | string[] | undefined> = { ...client, ...route.staticHeaders, host: this.upstreamUrl.host };
        // The client's Origin belongs to the gateway's origin check, not to the upstream's.
        delete out.origin;
        // The trace context read at the edge, or none: a client's malformed value is not carried on.
        delete out[TRACEPARENT];
        delete out[TRACESTATE];
        if (carried) {
          out[TRACEPARENT] = carried.traceparent;
          if (carried.tracestate !== undefined) out[TRACESTATE] = carried.tracestate;
        }
        // 2026-07-28 has no sessions: a session id on a modern request would reach a dual-era upstream's legacy
        // sessions without the binding check above.
        if (clientEra === 'modern') delete out['mcp-session-id'];
        if (x.renamed) out['mcp-name'] = encodeHeaderValue(x.renamed.name);
        return out;
      },
      onError: (rep, { error }) => {
        this.availability.suspect(true);
        // reply-from's own errors name the cause (503 refused, 504 timed out, …); the client gets the one table's.
        // reply-from wraps the socket's error: its own is what says what failed, without the upstream's address.
        const why = error as { statusCode?: number; cause?: unknown };
        const e = why.statusCode === 504 ? new UpstreamTimeoutError('upstream did not answer in time', { cause: error }) : fetchFailure(why.cause ?? error);
        x.failure = failureOf(e);
        const edge = exceptionToEdge(e);
        return rep.code(edge.status).send({ jsonrpc: '2.0', id: requestIdOf(request.body), error: edge.error });
      },
      onResponse: (_req, rep, res) => this.answered(x, rep, res.stream as UpstreamStream),
    });
  }

  /** The upstream's answer: checked, its session bound or unbound, then passed on to the client. */
  private answered(x: Exchange, rep: UpstreamReply, stream: UpstreamStream): unknown {
    const { request, reply, clientEra, session, atClose } = x;
    const route = this.route;
    if (mayMeanUpstreamChanged(clientEra, rep.statusCode)) this.availability.suspect();
    // An SSE answer (a GET stream, a POST stream) may stay silent for a long time: send its headers now, not
    // with the first body byte (Fastify sets stream headers lazily, and Node sends them with the first write).
    const sendUpstream = () => {
      const type = String(rep.getHeader('content-type') ?? '');
      const sse = type.startsWith('text/event-stream');
      this.budget(request, rep.raw as ServerResponse, stream, sse, atClose);
      // A federated member's answer may be JSON lines (json-lines.ts): re-framed as the modern face would.
      if (!sse && x.member && type.startsWith('application/json')) return relayJsonAnswer(rep, stream, atClose);
      if (!sse) return rep.send(stream);
      rep.hijack();
      rep.raw.writeHead(rep.statusCode, rep.getHeaders() as OutgoingHttpHeaders);
      (rep.raw as ServerResponse).flushHeaders();
      // `pipe` with the two ends tied by hand rather than `pipeline`, which hangs seven close listeners on the
      // response (past Node's leak warning with the ones above): an upstream that breaks ends the client's
      // stream, a client that leaves drops the upstream's answer.
      stream.on('error', (e: { code?: unknown }) => {
        if (e?.code === 'UND_ERR_BODY_TIMEOUT' && !rep.raw.writableEnded) endWithTimeout(request, rep.raw as ServerResponse, stream);
        else rep.raw.destroy();
      });
      atClose.push(() => {
        if (!stream.destroyed) stream.destroy();
      });
      stream.pipe(rep.raw);
      return rep;
    };
    if (session && (request.method === 'DELETE' ? rep.statusCode < 500 : rep.statusCode === 404)) {
      // Ended by its owner, or forgotten by the upstream (2025-11-25: 404 to a session it no longer has).
      void this.passedSessions
        .unbind(session)
        .catch((e: unknown) => request.log.debug({ upstream: route.name, err: errorSummary(e) }, 'passed-through session not unbound; its binding expires'));
    }
    const refusal = clientEra === 'legacy' ? notMcpAnswer(request, rep.statusCode, rep.getHeader('content-type'), session) : undefined;
    if (refusal) {
      // Dropped, with the upstream's headers (its length and type no longer describe the body).
      stream.destroy();
      for (const h of ['content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'mcp-session-id']) reply.removeHeader(h);
      x.failure = failureOf(refusal);
      return refuseWith(reply, exceptionToEdge(refusal), requestIdOf(request.body));
    }
    const opened = x.initializing && rep.statusCode < 300 ? rep.getHeader('mcp-session-id') : undefined;
    if (typeof opened === 'string' && opened !== '') {
      // Bound before the client learns the id: its next request may reach any instance.
      this.passedSessions.bind(opened, identityOf(request).principal).then(
        () => sendUpstream(),
        (e: unknown) => {
          stream.destroy();
          // `rep` is this request's reply: refused with the upstream's headers taken back.
          reply.removeHeader('mcp-session-id');
          request.log.warn({ err: e, upstream: route.name }, 'pass-through: a new session could not be bound; refused');
          refuseWith(reply, exceptionToEdge(e), requestIdOf(request.body));
        },
      );
      return rep;
    }
    return sendUpstream();
  }

  /**
   * A passed-through answer to a POST ends within the upstream's budget (`timeoutMs`), as a translated one does: an
   * upstream that starts an answer and then hangs would otherwise hold the client's response open for ever. A stream
   * that has started ends with the catalog's timeout as its last event; a plain body is cut. Streams meant to stay
   * open (GET streams, `subscriptions/listen`) are not bounded.
   */
  private budget(request: FastifyRequest, raw: ServerResponse, upstream: UpstreamStream, sse: boolean, atClose: Array<() => void>): void {
    if (request.method !== 'POST' || !isObject(request.body) || request.body.method === 'subscriptions/listen') return;
    const timer = setTimeout(() => {
      if (raw.writableEnded) return;
      request.log.warn({ upstream: this.route.name }, 'pass-through: the upstream answer outlived its budget; ended');
      if (sse && !raw.destroyed) endWithTimeout(request, raw, upstream);
      else {
        upstream.unpipe?.(raw);
        upstream.destroy();
        raw.destroy();
      }
    }, this.route.timeoutMs);
    timer.unref();
    atClose.push(() => clearTimeout(timer));
  }
}

/** Ends a passed-through SSE answer with the catalog's timeout as its last event (the upstream's rest dropped). */
function endWithTimeout(request: FastifyRequest, raw: ServerResponse, upstream: UpstreamStream): void {
  upstream.unpipe?.(raw);
  const edge = catalogAnswer('GW_UPSTREAM_TIMEOUT');
  raw.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: requestIdOf(request.body), error: edge.error })}\n\n`, () => upstream.destroy());
}

/** The client's reply as reply-from hands it to `onResponse`. */
type UpstreamReply = FastifyReply<RouteGenericInterface, RawServerBase>;

/** The upstream's answer body as reply-from hands it over. */
type UpstreamStream = NodeJS.ReadableStream & { destroy(): void; destroyed?: boolean };
