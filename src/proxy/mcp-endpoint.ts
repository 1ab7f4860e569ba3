/**
 * The MCP endpoint of one upstream, for both eras on one URL (2026-07-28 basic/versioning §Compatibility Matrix). A
 * request whose era the upstream speaks passes through unchanged with @fastify/reply-from (sessions, GET streams and
 * DELETE included; both eras in front of a dual-era upstream); a request whose era the upstream lacks is translated.
 * Rules that wrap tools apply to every client era: a legacy client then always meets the legacy face, and a modern
 * client meets the modern face for exactly the traffic the gateway serves itself (docs/how-it-works.md §Routing).
 */
import { randomBytes } from 'node:crypto';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import replyFrom from '@fastify/reply-from';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import {
  ErrorCode,
  GatewayError,
  catalogAnswer,
  extractTrace,
  TRACEPARENT,
  TRACESTATE,
  classifyEra,
  discoverResult,
  errorSummary,
  isObject,
  declaresTasks,
  legacySupportsToolTasks,
  requestIdOf,
  singleHeader,
  validateModernRequest,
  type JsonRpcNotification,
  type Era,
  type ModernHeaders,
  type ModernRequest,
  type JsonObject,
  Tally,
} from '../translate/index.js';
import { hidesTool, hidesTools, runListen, runtimeServesTools, withoutHiddenTools, wrapsTools, type CallerContext, type ForwardHooks, type MrtrBridge, type Outcome, type SharedValues, type TaskRuntime, type UpstreamRoute } from '../tasks/index.js';
import {
  annotateTrace,
  endHttpSpan,
  startClientTrace,
  startServerTrace,
  UpstreamDownError,
  UpstreamHttpError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
  type RequestTrace,
  type RequestTraceAttributes,
  type UpstreamAvailability,
  type UpstreamEras,
} from '../upstream/index.js';
import { Authenticator, identityOf, registerAuth } from './auth.js';
import { channelError, exceptionToEdge, failureToEdge, refuse, refuseWith, upstreamErrorStatus } from './errors.js';
import type { LegacyFace } from './legacy-face.js';
import { logAvailability } from './health.js';
import { infoEnabled, noteFailure, recordRequest } from './operator-log.js';
import { PassedSessions } from './passed-sessions.js';
import { rawBodyOf } from './raw-body.js';
import { ResponseChannel } from './response.js';

/** What the endpoint needs. */
export interface EndpointOptions {
  /** The upstream through the client of the era it speaks (legacy sessions for a legacy-only upstream). */
  route: UpstreamRoute;
  /** The same upstream through its stateless 2026-07-28 client: the modern face's route for a modern upstream. */
  modernRoute: UpstreamRoute;
  path: string;
  bridge: MrtrBridge;
  runtime: TaskRuntime;
  keepAliveMs: number;
  maxListenStreams: number;
  /**
   * Listen streams one principal may hold open: its share of `maxListenStreams`, so that one caller cannot take every
   * stream from the others.
   */
  maxListenStreamsPerPrincipal: number;
  /** What the upstream speaks and whether it is up (probed or pinned; re-learned when traffic says it changed). */
  availability: UpstreamAvailability;
  /** Serves legacy clients when the upstream speaks 2026-07-28 only (absent: they are refused). */
  legacyFace?: LegacyFace;
  /**
   * Who the callers are (one hook for every path of the endpoint). Absent: the default `bearer` mode under a random
   * per-process key.
   */
  auth?: Authenticator;
  /** Where the sessions passed through to a legacy upstream are bound to their principals (absent: this instance). */
  sessionStore?: SharedValues;
  /** A passed-through session without requests for this long is forgotten by the gateway (its client gets 404). */
  sessionIdleMs: number;
}

/** The principal of a request, as the endpoint's authentication hook resolved it. */
function callerPrincipal(request: FastifyRequest): string {
  return identityOf(request).principal;
}

/**
 * Whether the upstream serves `era` itself. One that answered neither probe question is taken as legacy, as the
 * fallback rule reads a non-modern answer (2026-07-28 basic/transports/streamable-http §Backward Compatibility).
 */
function speaks(eras: UpstreamEras, era: Era): boolean {
  return era === 'modern' ? eras.modern : eras.legacy || !eras.modern;
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
  const type = String(contentType ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json' || type === 'text/event-stream') return undefined;
  if (session !== undefined && status === 404) return new GatewayError('GW_SESSION_NOT_FOUND');
  if (status >= 400) return new UpstreamHttpError(status, '');
  return new GatewayError('GW_UPSTREAM_BAD_MESSAGE', { args: [`HTTP ${status} ${type || 'without a content type'}, not JSON-RPC`] });
}

/** Requests about tasks (2026-07-28 tasks extension), which the modern face answers from its own records. */
const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/** Gateway-minted task ids start so (the runtime's `mintTaskId`); any other id is the upstream's own. */
const GATEWAY_TASK_ID = /^gwt_/;

/** Whether the upstream runs tool tasks itself: a modern one declares the tasks extension, a legacy one tool tasks. */
function upstreamRunsTasks(route: UpstreamRoute, capabilities: JsonObject): boolean {
  return route.upstream.era === 'modern' ? declaresTasks(capabilities) : legacySupportsToolTasks(capabilities);
}

function header(req: FastifyRequest, name: string): string | undefined | null {
  return singleHeader(req.headers, name);
}

/**
 * Runs one modern request that may need input: `tools/call` through the runtime (its rules decide what the call
 * becomes), the rest through the MRTR bridge. The same for a request that arrived here and one relayed from another
 * instance.
 */
export async function runRequest(runtime: TaskRuntime, bridge: MrtrBridge, route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ForwardHooks): Promise<Outcome> {
  if (req.method === 'tools/call') return runtime.callTool(route, req, caller, hooks);
  const outcome = await bridge.forward(route, req, caller, hooks);
  // The tools a job rule hides are the gateway's plumbing, not the client's (docs/jobs.md).
  return req.method === 'tools/list' && outcome.kind === 'result' ? { ...outcome, result: withoutHiddenTools(route, outcome.result) } : outcome;
}

/**
 * The trace of one request (docs/operations.md §Traces): its context read from `params._meta` or the
 * `traceparent`/`tracestate` headers (strictly; a malformed value is ignored), its SERVER span opened when an SDK is
 * registered and ended when the answer is done. `undefined` (nothing allocated) without an SDK or an incoming context.
 */
function traceRequest(request: FastifyRequest, reply: FastifyReply, path: RequestTraceAttributes['path'], clientEra: Era, upstream: string): RequestTrace | undefined {
  const body = request.body;
  const params = isObject(body) && isObject(body.params) ? body.params : undefined;
  const t = startServerTrace(extractTrace(request.headers, params?._meta), isObject(body) && typeof body.method === 'string' ? body.method : request.method, params, { path, clientEra, upstream });
  const span = t?.span;
  if (span) reply.raw.once('close', () => endHttpSpan(span, reply.statusCode));
  return t;
}

/** What a registered endpoint tells the gauges. */
export interface EndpointStats {
  /** `subscriptions/listen` streams open now. */
  readonly listenStreams: number;
}

/** Registers the endpoint's routes in an encapsulated scope. */
export async function registerMcpEndpoint(app: FastifyInstance, opts: EndpointOptions): Promise<EndpointStats> {
  const { route, modernRoute, bridge, runtime, availability } = opts;
  const upstreamUrl = new URL(route.url);
  let listenStreams = 0;
  /** Open listen streams per principal (entries removed at zero: bounded by the streams open). */
  const listensOf = new Tally();
  const passedSessions = new PassedSessions({ upstream: route.name, idleMs: opts.sessionIdleMs, ...(opts.sessionStore ? { store: opts.sessionStore } : {}) });

  // The upstream's eras, learned once (or pinned) and re-learned when traffic says they changed; while the
  // upstream is known to be down this fails at once (UpstreamDownError) instead of waiting for it. The request's
  // forwarded Authorization goes along: an OAuth-protected upstream answers the probe only with a token.
  // For a 2025-11-25 client, the upstream's 2025-11-25 side too: a modern upstream is asked it only then (probe.ts).
  const upstreamEra = (request: FastifyRequest, clientEra: Era): Promise<UpstreamEras> =>
    clientEra === 'legacy' ? availability.legacyEras(identityOf(request).authorization) : availability.eras(identityOf(request).authorization);
  // Said once per outcome (the probe at start's included), not per probe or refused request.
  logAvailability(route.name, availability, app.log);

  await app.register(async (scope) => {
    // The principal of every request of this endpoint (modern face, legacy face, pass-through), or its 401.
    registerAuth(scope, opts.auth ?? new Authenticator({ mode: 'bearer' }, { key: randomBytes(32), upstream: route.name }));
    await scope.register(replyFrom, {
      base: upstreamUrl.origin,
      // The operator log has one line per request (its own); reply-from's "fetching"/"response received" would add two.
      disableRequestLogging: true,
      undici: { connections: 128, pipelining: 1, bodyTimeout: 0, headersTimeout: route.timeoutMs },
    });

    /**
     * A request the upstream serves itself, forwarded as it is. Legacy session traffic is bound to the principal that
     * opened the session (passed-sessions.ts): another caller's, or an id the gateway never saw opened, is answered
     * 404 here and never forwarded; an `initialize` answer that opens a session is recorded before the client sees it.
     */
    const passThrough = async (request: FastifyRequest, reply: FastifyReply, clientEra: Era): Promise<FastifyReply> => {
      const traced = traceRequest(request, reply, 'pass-through', clientEra, route.name);
      const sid = header(request, 'mcp-session-id');
      let session: string | undefined;
      if (clientEra === 'legacy' && sid !== undefined) {
        let owned = false;
        try {
          // A repeated header names no one session: unknown, like any id that is not the caller's.
          owned = sid !== null && sid !== '' && (await passedSessions.owns(sid, callerPrincipal(request)));
        } catch (e) {
          // The store that holds the bindings cannot be reached: 503 with Retry-After, as for any store failure.
          reply.log.warn({ err: e, upstream: route.name }, 'pass-through: the session bindings could not be read');
          return refuseWith(reply, exceptionToEdge(e), requestIdOf(request.body));
        }
        if (!owned) return sessionUnknown(reply, request.body);
        session = sid as string;
      }
      const initializing = clientEra === 'legacy' && request.method === 'POST' && isObject(request.body) && request.body.method === 'initialize';
      return forward(request, reply, clientEra, session, initializing, traced);
    };

    /** 2025-11-25 basic/transports §Session Management: an unknown session is 404 (the client initializes again). */
    const sessionUnknown = (reply: FastifyReply, body: unknown): FastifyReply => refuse(reply, 'GW_SESSION_NOT_FOUND', requestIdOf(body));

    const forward = (request: FastifyRequest, reply: FastifyReply, clientEra: Era, session: string | undefined, initializing: boolean, traced: RequestTrace | undefined) => {
      const started = Date.now();
      // Everything that waits for the answer's end runs from ONE close listener: a passed-through SSE answer already
      // carries the drain's and the stream's own, and one listener per concern took it past Node's
      // warning threshold (a bounded count, not a leak, but a warning an operator would chase).
      const atClose: Array<() => void> = [];
      reply.raw.once('close', () => {
        for (const f of atClose) f();
      });
      // The operator line only when info is logged; the metrics when they are on.
      const logs = infoEnabled(request);
      if (logs || request.server.metrics) {
        atClose.push(() => {
          const method = request.method === 'POST' && isObject(request.body) ? request.body.method ?? 'response' : request.method;
          const ms = Date.now() - started;
          if (logs && reply.raw.writableFinished) request.log.info({ method, era: 'pass-through', upstream: route.name, status: reply.statusCode, ms, ...(traced ? { traceId: traced.traceId } : {}) }, 'mcp request');
          const status = reply.statusCode;
          const outcome = !reply.raw.writableFinished ? 'client closed' : status < 400 ? 'ok' : status >= 500 ? 'upstream_http_5xx' : 'upstream_http_4xx';
          recordRequest(request, { upstream: route.name, method, clientEra, upstreamEra: clientEra, mode: 'passthrough', outcome, ms });
        });
      }
      // The upstream exchange's own CLIENT span (with an SDK), ended with the answer; its context goes in the headers.
      // The body goes as it came (byte for byte): a `_meta.traceparent` in it reaches the upstream as the client sent it.
      const body = request.body;
      const upstreamTrace = traced ? startClientTrace(traced.carrier, route.name, isObject(body) && typeof body.method === 'string' ? body.method : request.method, isObject(body) && isObject(body.params) ? body.params : undefined) : undefined;
      const clientSpan = upstreamTrace?.span;
      if (clientSpan) atClose.push(() => endHttpSpan(clientSpan, reply.statusCode));
      const text = rawBodyOf(request);
      return reply.from(upstreamUrl.pathname + upstreamUrl.search, {
        // The body as it arrived (not serialized again from the parsed object), with its own Content-Type.
        ...(text !== undefined ? { body: text, contentType: String(request.headers['content-type']) } : {}),
        rewriteRequestHeaders: (_req, headers) => {
          // A credential the gateway consumed itself (`auth.forward: false`) does not travel on (a static one does).
          const client: Record<string, string | string[] | undefined> = { ...headers };
          if (identityOf(request).authorization === undefined) delete client.authorization;
          const out: Record<string, string | string[] | undefined> = { ...client, ...route.staticHeaders, host: upstreamUrl.host };
          // The client's Origin belongs to the gateway's origin check, not to the upstream's.
          delete out.origin;
          // The trace context read at the edge, or none: a client's malformed value is not carried on.
          delete out[TRACEPARENT];
          delete out[TRACESTATE];
          const carried = upstreamTrace?.carrier;
          if (carried) {
            out[TRACEPARENT] = carried.traceparent;
            if (carried.tracestate !== undefined) out[TRACESTATE] = carried.tracestate;
          }
          // 2026-07-28 has no sessions: a session id on a modern request would reach a dual-era upstream's legacy
          // sessions without the binding check above.
          if (clientEra === 'modern') delete out['mcp-session-id'];
          return out;
        },
        onError: (rep, { error }) => {
          availability.suspect(true);
          // reply-from's own errors name the cause (503 refused, 504 timed out, …); the client gets the one table's.
          const why = error as { statusCode?: number; message?: string };
          const e = why.statusCode === 504 ? new UpstreamTimeoutError('upstream did not answer in time', { cause: error }) : new UpstreamUnavailableError(why.message ?? 'upstream failed', { cause: error });
          noteFailure(request, e);
          const edge = exceptionToEdge(e);
          return rep.code(edge.status).send({ jsonrpc: '2.0', id: requestIdOf(request.body), error: edge.error });
        },
        onResponse: (_req, rep, res) => {
          if (mayMeanUpstreamChanged(clientEra, rep.statusCode)) availability.suspect();
          // An SSE answer (a GET stream, a POST stream) may stay silent for a long time: send its headers now, not
          // with the first body byte (Fastify sets stream headers lazily, and Node sends them with the first write).
          const sendUpstream = () => {
            const sse = String(rep.getHeader('content-type') ?? '').startsWith('text/event-stream');
            budget(request, rep.raw as ServerResponse, res.stream, sse, atClose);
            if (!sse) return rep.send(res.stream);
            rep.hijack();
            rep.raw.writeHead(rep.statusCode, rep.getHeaders() as OutgoingHttpHeaders);
            (rep.raw as ServerResponse).flushHeaders();
            // `pipe` with the two ends tied by hand rather than `pipeline`, which hangs seven close listeners on the
            // response (past Node's leak warning with the ones above): an upstream that breaks ends the client's
            // stream, a client that leaves drops the upstream's answer.
            const source = res.stream as NodeJS.ReadableStream & { destroy(): void; destroyed?: boolean };
            source.on('error', () => rep.raw.destroy());
            atClose.push(() => {
              if (!source.destroyed) source.destroy();
            });
            source.pipe(rep.raw);
            return rep;
          };
          if (session && (request.method === 'DELETE' ? rep.statusCode < 500 : rep.statusCode === 404)) {
            // Ended by its owner, or forgotten by the upstream (2025-11-25: 404 to a session it no longer has).
            void passedSessions
              .unbind(session)
              .catch((e: unknown) => request.log.debug({ upstream: route.name, err: errorSummary(e) }, 'passed-through session not unbound; its binding expires'));
          }
          const refusal = clientEra === 'legacy' ? notMcpAnswer(request, rep.statusCode, rep.getHeader('content-type'), session) : undefined;
          if (refusal) {
            // Dropped, with the upstream's headers (its length and type no longer describe the body).
            res.stream.destroy();
            for (const h of ['content-type', 'content-length', 'content-encoding', 'transfer-encoding', 'mcp-session-id']) reply.removeHeader(h);
            noteFailure(request, refusal);
            return refuseWith(reply, exceptionToEdge(refusal), requestIdOf(request.body));
          }
          const opened = initializing && rep.statusCode < 300 ? rep.getHeader('mcp-session-id') : undefined;
          if (typeof opened === 'string' && opened !== '') {
            // Bound before the client learns the id: its next request may reach any instance.
            passedSessions.bind(opened, callerPrincipal(request)).then(
              () => sendUpstream(),
              (e: unknown) => {
                res.stream.destroy();
                // `rep` is this request's reply: refused with the upstream's headers taken back.
                reply.removeHeader('mcp-session-id');
                request.log.warn({ err: e, upstream: route.name }, 'pass-through: a new session could not be bound; refused');
                refuseWith(reply, exceptionToEdge(e), requestIdOf(request.body));
              },
            );
            return rep;
          }
          return sendUpstream();
        },
      });
    };

    /**
     * A passed-through answer to a POST ends within the upstream's budget (`timeoutMs`), as a translated one does: an
     * upstream that starts an answer and then hangs would otherwise hold the client's response open for ever. A stream
     * that has started ends with the catalog's timeout as its last event; a plain body is cut. Streams meant to stay
     * open (GET streams, `subscriptions/listen`) are not bounded.
     */
    const budget = (request: FastifyRequest, raw: ServerResponse, upstream: NodeJS.ReadableStream & { destroy(): void }, sse: boolean, atClose: Array<() => void>) => {
      if (request.method !== 'POST' || !isObject(request.body) || request.body.method === 'subscriptions/listen') return;
      const id = requestIdOf(request.body);
      const timer = setTimeout(() => {
        if (raw.writableEnded) return;
        request.log.warn({ upstream: route.name }, 'pass-through: the upstream answer outlived its budget; ended');
        upstream.unpipe?.(raw);
        if (sse && !raw.destroyed) {
          const edge = catalogAnswer('GW_UPSTREAM_TIMEOUT');
          raw.end(`event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error: edge.error })}\n\n`, () => upstream.destroy());
        } else {
          upstream.destroy();
          raw.destroy();
        }
      }, route.timeoutMs);
      timer.unref();
      atClose.push(() => clearTimeout(timer));
    };

    const unavailable = (reply: FastifyReply, e: unknown, clientEra: Era, started: number, body?: unknown) => {
      const edge = exceptionToEdge(e);
      // No operator line (a down upstream is logged once), but counted: the refusals are what an operator graphs.
      noteFailure(reply.request, e);
      recordRequest(reply.request, { upstream: route.name, method: isObject(body) ? body.method : reply.request.method, clientEra, upstreamEra: 'unknown', mode: 'gateway', outcome: 'error', ms: Date.now() - started });
      // The probe's failure is logged once as the upstream's outcome ('upstream is down', logAvailability), not per
      // refused request: a caller that waited for that probe is told at debug.
      if (!(e instanceof UpstreamDownError)) reply.log.debug({ err: errorSummary(e), upstream: route.name }, 'upstream era probe failed');
      if (edge.retryAfterSeconds !== undefined) reply.header('retry-after', String(edge.retryAfterSeconds));
      return reply.code(edge.status).send({ jsonrpc: '2.0', id: requestIdOf(body), error: edge.error });
    };

    /**
     * Legacy (2025-11-25) traffic the upstream cannot take as it is (it speaks only 2026-07-28, or rules wrap tools):
     * the legacy face answers it (the gateway's own sessions and tasks). Without one: a clear refusal.
     */
    const legacyFace = (request: FastifyRequest, reply: FastifyReply) => {
      const face = opts.legacyFace;
      const traced = face ? traceRequest(request, reply, 'legacy-face', 'legacy', route.name) : undefined;
      // The face's 502/504 say the upstream failed it (gone, restarted, or now refusing our era): learn it anew at
      // once, as the modern face does, so a dead upstream is remembered and a restarted one re-probed.
      if (face) {
        reply.raw.once('finish', () => {
          if (reply.statusCode === 502 || reply.statusCode === 504) availability.suspect(true);
        });
        return request.method === 'GET' ? face.get(request, reply) : request.method === 'DELETE' ? face.delete(request, reply) : face.post(request, reply, traced);
      }
      // 2026-07-28 basic/transports/streamable-http: GET and DELETE are gone in the modern era; a modern upstream would
      // answer 405 itself.
      if (request.method !== 'POST') return reply.code(405).header('allow', 'POST').send();
      return refuse(reply, 'GW_LEGACY_NOT_BRIDGED', requestIdOf(request.body));
    };

    scope.route({
      method: ['GET', 'DELETE'],
      url: opts.path,
      handler: async (request, reply) => {
        const started = Date.now();
        let eras: UpstreamEras;
        try {
          eras = await upstreamEra(request, 'legacy');
        } catch (e) {
          return unavailable(reply, e, 'legacy', started);
        }
        // GET and DELETE are legacy session traffic (2025-11-25 basic/transports): the upstream's own if its sessions
        // serve the client, else the face's.
        if (legacyPassesThrough(eras)) return passThrough(request, reply, 'legacy');
        return legacyFace(request, reply);
      },
    });

    scope.post(opts.path, async (request, reply) => {
      const started = Date.now();
      const clientEra = classifyEra({
        httpMethod: 'POST',
        protocolVersionHeader: header(request, 'mcp-protocol-version') ?? undefined,
        body: request.body,
      });
      let eras: UpstreamEras;
      try {
        eras = await upstreamEra(request, clientEra);
      } catch (e) {
        // The gateway's own task records answer without the upstream: a task outlives its upstream's outage.
        const known = availability.current;
        const faceRoute = clientEra === 'modern' && known && isTaskRequest(request.body) ? await modernFaceRoute(request.body, known) : undefined;
        if (faceRoute) return handleModern(request, reply, faceRoute);
        return unavailable(reply, e, clientEra, started, request.body);
      }
      // In its own era whenever the upstream speaks it (legacy → dual and modern → dual included): a gateway must
      // never make a working pairing fail. Translation only where the upstream lacks the client's era, and the
      // gateway's own tasks where rules wrap tools.
      if (clientEra === 'legacy') return legacyPassesThrough(eras) ? passThrough(request, reply, 'legacy') : legacyFace(request, reply);
      const faceRoute = await modernFaceRoute(request.body, eras);
      return faceRoute ? handleModern(request, reply, faceRoute) : passThrough(request, reply, 'modern');
    });

    /**
     * A legacy client passes through when the upstream speaks its era and no rule wraps tools (a wrapped tool needs
     * the gateway's own tasks and calls, which only the face serves), unless the upstream runs tasks only in its
     * 2026-07-28 leg (its `server/discover` declares the tasks extension, its `initialize` no tool tasks): the face
     * then gives the legacy client those tasks.
     */
    function legacyPassesThrough(eras: UpstreamEras): boolean {
      if (!speaks(eras, 'legacy') || wrapsTools(route)) return false;
      const discover = eras.discover;
      const modernTasks = eras.modern && isObject(discover) && isObject(discover.capabilities) && declaresTasks(discover.capabilities);
      const legacyTasks = eras.identity !== undefined && legacySupportsToolTasks(eras.identity.capabilities);
      return !modernTasks || legacyTasks;
    }

    function isTaskRequest(body: unknown): boolean {
      return isObject(body) && typeof body.method === 'string' && TASK_METHODS.has(body.method);
    }

    /**
     * The route the modern face serves a modern request over, or `undefined` for a pass-through: everything, over the
     * legacy sessions, for an upstream without 2026-07-28; for one that speaks it, only what wrapping rules make the
     * gateway's own (the extension's advertisement, calls of wrapped tools, requests about gateway tasks, and every
     * task request when the upstream has no tasks of its own), so that the upstream's own tasks keep working untouched.
     */
    async function modernFaceRoute(body: unknown, eras: UpstreamEras): Promise<UpstreamRoute | undefined> {
      if (!speaks(eras, 'modern')) return route;
      if (!runtimeServesTools(route) || !isObject(body) || typeof body.method !== 'string') return undefined;
      const params: JsonObject = isObject(body.params) ? body.params : {};
      switch (body.method) {
        case 'server/discover':
          return modernRoute;
        case 'tools/call': {
          const name = typeof params.name === 'string' ? params.name : '';
          const policy = runtime.policyFor(modernRoute, name);
          const wrapped = policy.task === 'auto' || policy.task === 'always' || policy.task === 'required' || policy.task === 'job' || (policy.task === 'native' && policy.afterMs !== undefined);
          // A tool a job rule hides is refused by the runtime, not passed to the upstream.
          return wrapped || hidesTool(modernRoute, name) ? modernRoute : undefined;
        }
        case 'tools/list':
          return hidesTools(modernRoute) ? modernRoute : undefined;
        case 'subscriptions/listen': {
          const n = isObject(params.notifications) ? params.notifications : {};
          const ids = Array.isArray(n.taskIds) ? n.taskIds : [];
          if (ids.length === 0) return undefined;
          return ids.some((id) => typeof id === 'string' && GATEWAY_TASK_ID.test(id)) || !(await upstreamHasTasks()) ? modernRoute : undefined;
        }
        default:
          if (!TASK_METHODS.has(body.method)) return undefined;
          if (typeof params.taskId === 'string' && GATEWAY_TASK_ID.test(params.taskId)) return modernRoute;
          // An upstream without the extension has no tasks: the modern face answers as the extension says (-32021 to a
          // request that does not declare it, -32602 for an unknown id; tasks extension §Protocol Errors).
          return (await upstreamHasTasks()) ? undefined : modernRoute;
      }
    }

    /** Whether the 2026-07-28 upstream declares the tasks extension (its own tasks pass through untouched). */
    async function upstreamHasTasks(): Promise<boolean> {
      try {
        const identity = modernRoute.upstream.knownIdentity ?? (await modernRoute.upstream.identity({ capabilities: {} }));
        return declaresTasks(identity.capabilities);
      } catch {
        // Not known: the request passes through and the upstream answers it itself.
        return true;
      }
    }

    async function handleModern(request: FastifyRequest, reply: FastifyReply, route: UpstreamRoute): Promise<FastifyReply | void> {
      const headers: ModernHeaders = {
        'mcp-protocol-version': header(request, 'mcp-protocol-version'),
        'mcp-method': header(request, 'mcp-method'),
        'mcp-name': header(request, 'mcp-name'),
      };
      const v = validateModernRequest(headers, request.body);
      const accept = header(request, 'accept') ?? '';
      if (!v.ok) {
        const edge = failureToEdge(v.failure);
        // Through the response channel, as every later refusal: a refusal here (a requestState of the wrong type) is
        // byte for byte the refusal after it (a forged state), headers included.
        new ResponseChannel(reply, false, opts.keepAliveMs).error(v.failure.id, edge.error, edge.status);
        return reply;
      }
      const req = v.value;
      // 2026-07-28 basic/transports/streamable-http: a notification is accepted with 202; the core defines none a
      // modern client sends over HTTP.
      if (req.id === undefined) return reply.code(202).send();

      const traced = traceRequest(request, reply, 'modern-face', 'modern', route.name);
      const { principal, authorization } = identityOf(request);
      const caller: CallerContext = {
        principal,
        capabilities: req.envelope.clientCapabilities,
        ...(authorization ? { authorization } : {}),
        ...(req.envelope.clientInfo ? { clientInfo: req.envelope.clientInfo } : {}),
        ...(req.envelope.logLevel ? { logLevel: req.envelope.logLevel } : {}),
        ...(traced ? { trace: traced.carrier } : {}),
      };
      const channel = new ResponseChannel(reply, accept.includes('text/event-stream') || accept.includes('*/*'), opts.keepAliveMs);
      // Only what may outlive the client's patience (an upstream call, a listen stream) is stopped when it goes away;
      // requests the gateway answers from its own records skip the signal (creating one is costly on this path).
      const stoppable = req.policy.kind === 'forward' || req.policy.kind === 'forward-input' || req.policy.kind === 'listen';
      const aborter = stoppable ? new AbortController() : undefined;
      const onClose = () => {
        if (!reply.raw.writableFinished) aborter?.abort(new Error('client closed the request'));
      };
      if (aborter) reply.raw.on('close', onClose);
      const started = Date.now();
      let outcome = 'ok';
      let taskId = typeof req.params.taskId === 'string' ? req.params.taskId : undefined;
      try {
        const done = await dispatch(route, req, caller, channel, aborter?.signal);
        outcome = done.outcome;
        taskId ??= done.taskId;
        if (traced && done.errorCode !== undefined) annotateTrace(traced, { errorCode: done.errorCode });
      } catch (e) {
        const edge = exceptionToEdge(e);
        // An upstream that stopped answering, or refuses our era, may be down or replaced: learn it anew (at once;
        // a 4xx without a JSON-RPC body, such as a client's refused credentials, only at the spaced pace).
        // The upstream judging a caller's credentials (401/403) says nothing about the upstream.
        if (e instanceof UpstreamUnavailableError || e instanceof UpstreamTimeoutError) availability.suspect(true);
        else if (e instanceof UpstreamHttpError && !e.refusedCredentials) availability.suspect(e.status >= 500);
        outcome = `error ${edge.error.code}`;
        noteFailure(request, e);
        if (traced) annotateTrace(traced, { errorCode: edge.error.code, errorMessage: edge.error.message });
        if (edge.fault) request.log.error({ err: e, method: req.method, upstream: route.name }, 'request failed');
        if (aborter?.signal.aborted) channel.abandon();
        else {
          // The upstream's challenge goes on the reply before the channel ends it (Retry-After is the channel's).
          if (edge.challenge !== undefined) void reply.header('www-authenticate', edge.challenge);
          channel.error(req.id, edge.error, edge.status, edge.retryAfterSeconds);
        }
      } finally {
        if (aborter) reply.raw.off('close', onClose);
        if (aborter?.signal.aborted) outcome = 'client closed';
        if (traced && taskId) annotateTrace(traced, { taskId });
        if (infoEnabled(request)) {
          request.log.info({ method: req.method, era: 'modern', upstream: route.name, ...(taskId ? { taskId } : {}), outcome, ms: Date.now() - started, ...(traced ? { traceId: traced.traceId } : {}) }, 'mcp request');
        }
        recordRequest(request, { upstream: route.name, method: req.method, clientEra: 'modern', upstreamEra: route.upstream.era, mode: 'gateway', outcome, ms: Date.now() - started });
      }
      return reply;
    }

    /** Serves one validated request; returns what the operator log says about it. */
    async function dispatch(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, channel: ResponseChannel, stopSignal: AbortSignal | undefined): Promise<{ outcome: string; taskId?: string; errorCode?: number }> {
      const id = req.id as string | number;
      switch (req.policy.kind) {
        case 'discover': {
          const identity = await route.upstream.identity(caller);
          // The extension is advertised when the upstream runs tool tasks or the gateway wraps tools (docs/tasks.md).
          const tasksExtension = upstreamRunsTasks(route, identity.capabilities) || wrapsTools(route);
          channel.result(id, discoverResult(identity, { tasksExtension, cache: route.cache }));
          return { outcome: 'ok' };
        }
        case 'forward':
        case 'forward-input': {
          const signal = stopSignal as AbortSignal;
          const hooks = { signal, notify: (n: JsonRpcNotification) => channel.notify(n) };
          // A retry whose held call another instance holds is answered there (2026-07-28 basic/patterns/mrtr).
          const outcome = (await bridge.relay(route, req, caller, hooks)) ?? (await runRequest(runtime, bridge, route, req, caller, hooks));
          if (outcome.kind === 'error') {
            channel.error(id, outcome.error, upstreamErrorStatus(outcome.error));
            return { outcome: `upstream error ${outcome.error.code}`, errorCode: outcome.error.code };
          }
          channel.result(id, outcome.result);
          const created = outcome.result.resultType === 'task' && typeof outcome.result.taskId === 'string' ? { taskId: outcome.result.taskId } : {};
          return { outcome: String(outcome.result.resultType ?? 'complete'), ...created };
        }
        case 'listen': {
          const signal = stopSignal as AbortSignal;
          // Both bounds are checked before anything reaches the upstream. The principal's share first: a caller at its
          // share is told so, and the others keep their streams (a legacy upstream's listen also holds an upstream
          // session, counted in that pool's bound and share).
          const mine = listensOf.of(caller.principal);
          if (mine >= opts.maxListenStreamsPerPrincipal) {
            throw new GatewayError('GW_PRINCIPAL_SHARE_EXHAUSTED', { args: ['open subscriptions', opts.maxListenStreamsPerPrincipal] });
          }
          if (listenStreams >= opts.maxListenStreams) {
            throw new GatewayError('GW_TOO_MANY_SUBSCRIPTIONS', { retryAfterSeconds: 1 });
          }
          listenStreams++;
          listensOf.add(caller.principal);
          try {
            // The acknowledgement starts the stream (ResponseChannel.notify); refusals before it keep their HTTP status.
            const closing = await runListen(route, req, caller, { signal, send: (n) => channel.notify(n), tasks: runtime });
            if (signal.aborted) channel.abandon();
            else channel.result(id, closing);
          } finally {
            listenStreams--;
            listensOf.remove(caller.principal);
          }
          return { outcome: 'subscription ended' };
        }
        case 'tasks': {
          const result = req.method === 'tasks/get'
            ? await runtime.get(route, req, caller)
            : req.method === 'tasks/update'
              ? await runtime.update(route, req, caller)
              : await runtime.cancel(route, req, caller);
          channel.result(id, result);
          return { outcome: typeof result.status === 'string' ? result.status : 'ok' };
        }
        case 'removed':
          // validateModernRequest already refused these; kept for exhaustiveness.
          channelError(channel, id, 'GW_METHOD_NOT_FOUND', { args: [req.method] });
          return { outcome: 'method not found' };
      }
    }
  });
  return {
    get listenStreams() {
      return listenStreams;
    },
  };
}
