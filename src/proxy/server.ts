/** The Fastify application: parsers, limits, the host check, the JSON-RPC error handler, and the endpoints. */
import type { Socket } from 'node:net';
import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
} from 'fastify';
import { catalogAnswer, GatewayError, jsonTooDeep, answerOf, type CatalogAnswer, type ErrorKind } from '../translate/index.js';
import {
  federatedRoute,
  NO_AUDIT,
  refuseCollisions,
  type AuditLog,
  type FederatedIdentity,
  type MemberExposure,
  type MrtrBridge,
  type TaskRuntime,
  type UpstreamRoute,
} from '../tasks/index.js';
import type { UpstreamAvailability, UpstreamClient, UpstreamEras } from '../upstream/index.js';
import type { Authenticator } from './auth.js';
import { EdgeDrain } from './drain.js';
import { checkHostOrigin, isLocalProbe, type HostPolicy } from './host-check.js';
import { LegacyFace, type LegacyFaceOptions } from './legacy-face/face.js';
import type { SessionStore } from './legacy-face/registry.js';
import { Readiness } from './health.js';
import { registerFederatedEndpoint } from './federated-endpoint.js';
import { registerMcpEndpoint, type EndpointStats } from './mcp-endpoint.js';
import { runRequest } from './modern-face.js';
import type { GatewayMetrics } from './metrics.js';
import { registerPassthroughPaths, type PassthroughUpstream } from './passthrough-paths.js';
import { keepRawBody } from './raw-body.js';

/** One upstream as the edge mounts it. */
export interface EdgeEndpoint {
  path: string;
  /** The upstream as the modern face and the task runtime reach it (a legacy-only upstream's sessions). */
  route: UpstreamRoute;
  /** What the upstream speaks and whether it is up. */
  availability: UpstreamAvailability;
  /** The stateless 2026-07-28 client the faces use when the upstream speaks that era. */
  modernUpstream: UpstreamClient;
  /** Who the endpoint's callers are (absent: the default `bearer` mode under a per-process key). */
  auth?: Authenticator;
  /** A member of a federated path: mounted by its federation, not on its own; `required`: `/readyz` needs it. */
  member?: { required: boolean };
}

/** A federated path as the composition root plans it (docs/federation.md): its members by upstream name, and how each shows itself. */
export interface FederationPlan {
  path: string;
  identity: FederatedIdentity;
  members: MemberExposure[];
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The audit trail (auth failures are recorded at the edge: `request.server.audit.record(...)`). */
    audit: AuditLog;
    /** The edge's side of a graceful shutdown (refuse new requests, count those in flight). */
    drain: EdgeDrain;
  }
}

/** A federated path as the edge serves it. */
interface EdgeFederation {
  path: string;
  route: UpstreamRoute;
  auth?: Authenticator;
}

/** What the edge is built from. */
export interface EdgeOptions {
  logger: FastifyServerOptions['logger'];
  /** A logger already built (the composition root shares it with the other layers); replaces `logger`. */
  loggerInstance?: FastifyBaseLogger;
  /** The audit trail (default none): session events of the legacy face, auth failures. */
  audit?: AuditLog;
  bodyLimitBytes: number;
  /** Bound on receiving a request's headers (Node's `headersTimeout`). */
  headersTimeoutMs: number;
  /** Bound on receiving a whole request (Node's `requestTimeout`); responses are not bounded by it. */
  requestTimeoutMs: number;
  /** Idle time after which a keep-alive connection is closed (Node's `keepAliveTimeout`). */
  idleTimeoutMs: number;
  /** Deepest JSON nesting accepted in a request body. */
  maxJsonDepth: number;
  hostPolicy: HostPolicy;
  keepAliveMs: number;
  /** Read at each listen: the composition root may change it on this object (a reload). */
  maxListenStreams: number;
  /** A principal's share of `maxListenStreams` (default: all of it); read at each listen, as `maxListenStreams`. */
  maxListenStreamsPerPrincipal?: number;
  bridge: MrtrBridge;
  runtime: TaskRuntime;
  /**
   * Bounds of the sessions the legacy face mints for 2025-11-25 clients, and a principal's shares of them (sessions,
   * GET streams; default: all of them).
   */
  clientSessions: { max: number; idleMs: number; maxPerPrincipal?: number; maxStreamsPerPrincipal?: number };
  /** Where those sessions are shared with the other instances (the task store); absent: this instance alone. */
  sessionStore?: SessionStore;
  endpoints: EdgeEndpoint[];
  /** The federated paths (absent: none); their members are endpoints of `endpoints`, mounted by their federation only. */
  federations?: FederationPlan[];
  /** Non-MCP paths passed through to HTTP upstreams (OAuth discovery, configured paths); absent: none. */
  passthrough?: readonly PassthroughUpstream[];
  version: string;
  /** The metrics served at `metricsPath` (absent: no metrics, no route). */
  metrics?: GatewayMetrics;
  /** Where the metrics are served (default `/metrics`). */
  metricsPath?: string;
  /** What `/readyz` checks besides the upstreams: the task store (absent: no store check), and how often. */
  readiness?: { store?: { ping(): Promise<void> }; cacheMs: number; upstreamCheckMs: number };
}

/** Fastify's own refusals of a request, by code → the catalog entry answering them. */
const FASTIFY_ERRORS: Record<string, ErrorKind> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'GW_PARSE_ERROR',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'GW_EMPTY_BODY',
  FST_ERR_CTP_BODY_TOO_LARGE: 'GW_BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'GW_UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'GW_INVALID_CONTENT_LENGTH',
};

/**
 * How much of a refused body is still read (and dropped) before the connection is closed. A client that sends its
 * whole body before reading the answer (fetch, most HTTP clients) sees a reset instead of the 413 when the socket is
 * closed under its writes; reading on lets it finish and read the answer. Beyond this, or after
 * `requestTimeoutMs`, the connection is cut.
 */
const REFUSED_BODY_DRAIN_BYTES = 64 * 1024 * 1024;

/** A catalog answer as the HTTP layer sends it: a JSON-RPC error without an id (none was read). */
function rpcBody(answer: CatalogAnswer): string {
  return JSON.stringify({ jsonrpc: '2.0', id: null, error: answer.error });
}

/** Node's and llhttp's codes of a request refused before it reached Fastify → the catalog entry answering it. */
function clientErrorKind(code: string | undefined): ErrorKind {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'GW_REQUEST_TIMEOUT';
  if (code === 'HPE_HEADER_OVERFLOW') return 'GW_HEADERS_TOO_LARGE';
  return 'GW_BAD_REQUEST';
}

/**
 * Answers what Node's HTTP parser refused (a malformed request line or header, headers over the size limit, a request
 * that did not arrive within its timeout) with a catalog error, then closes the connection: what follows on it can no
 * longer be framed. Nothing is written when a response has already begun on the socket (it would corrupt it).
 */
function clientErrorHandler(this: FastifyInstance, err: Error & { code?: string }, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const kind = clientErrorKind(err.code);
  const answer = catalogAnswer(kind, kind === 'GW_BAD_REQUEST' ? { args: ['malformed HTTP request'] } : {});
  this.log.debug({ err, kind }, 'client error');
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) {
    const body = rpcBody(answer);
    socket.end(
      `HTTP/1.1 ${answer.status} ${STATUS_TEXT[answer.status] ?? 'Error'}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ` +
        `${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    // Half-closed: the answer is flushed before the socket goes (bounded: destroyed once written or after a second).
    socket.once('finish', () => socket.destroy());
    setTimeout(() => socket.destroy(), 1_000).unref();
    return;
  }
  socket.destroy();
}

const STATUS_TEXT: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/**
 * Refuses a body over the limit with 413 and `Connection: close`, reading and dropping the rest of it (bounded) before
 * the socket closes, so that the client receives the answer instead of a reset.
 */
function refuseBody(request: FastifyRequest, reply: FastifyReply): void {
  const answer = catalogAnswer('GW_BODY_TOO_LARGE');
  const body = rpcBody(answer);
  const req = request.raw;
  const res = reply.raw;
  reply.hijack();
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // The whole answer now; the response ends (and Node closes the connection) once the request has been read.
  res.writeHead(answer.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), connection: 'close' });
  res.write(body);
  if (req.complete || req.destroyed) {
    res.end();
    return;
  }
  let dropped = 0;
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > REFUSED_BODY_DRAIN_BYTES) {
      done();
      req.socket.destroy();
    }
  };
  const done = () => {
    req.off('data', onData);
    req.off('end', done);
    req.off('error', done);
    req.off('close', done);
    if (!res.writableEnded) res.end();
  };
  req.on('data', onData);
  req.once('end', done);
  req.once('error', done);
  req.once('close', done);
  req.resume();
}

/** Builds the not-yet-listening Fastify app. */
export async function buildEdge(opts: EdgeOptions): Promise<FastifyInstance> {
  const app = createApp(opts);
  const audit = opts.audit ?? NO_AUDIT;
  registerGuards(app, opts);
  // The same upstream reached through its stateless 2026-07-28 client: the legacy face's route when the upstream speaks
  // that era, and the modern face's for wrapped tools of such an upstream. One object per upstream: it caches what
  // the runtime learns of the upstream's tools.
  const modernRoutes = opts.endpoints.map((e): UpstreamRoute => ({ ...e.route, upstream: e.modernUpstream }));
  const faces = legacyFacesOf(opts, modernRoutes, audit);
  app.addHook('onClose', async () => {
    for (const f of faces) f.close();
  });
  // Federated paths first: their members are then mounted by them alone, and /readyz needs only the required ones (`member`).
  const federated = (opts.federations ?? []).map((plan) => federationOf(opts, plan, modernRoutes, app.log));
  app.addHook('onClose', async () => {
    for (const f of federated) await f.route.upstream.close();
  });
  // A name two members would both show is refused before the gateway serves (docs/federation.md §Collisions).
  await refuseCollisions(federated.map((f) => f.route));
  // MRTR retries that landed on another instance come here to the call this instance holds, and run as if they had
  // arrived here (the hold names its route).
  opts.bridge.serveRelayed((route, req, caller, hooks) => runRequest(opts.runtime, opts.bridge, route, req, caller, hooks));
  app.setNotFoundHandler((_request, reply) => sendAnswer(reply, catalogAnswer('GW_NOT_FOUND')));
  registerHealth(app, opts, faces);

  const stats: EndpointStats[] = [];
  if (opts.metrics) registerMetrics(app, opts, opts.metrics, faces, stats);

  for (const [i, e] of opts.endpoints.entries()) {
    if (e.member) continue;
    const endpointStats = await registerMcpEndpoint(app, {
      legacyFace: faces[i] as LegacyFace,
      route: e.route,
      modernRoute: modernRoutes[i] as UpstreamRoute,
      path: e.path,
      bridge: opts.bridge,
      runtime: opts.runtime,
      keepAliveMs: opts.keepAliveMs,
      // Getters: a reload may change the bounds on `opts`, and the endpoint reads them at each listen.
      get maxListenStreams() {
        return opts.maxListenStreams;
      },
      get maxListenStreamsPerPrincipal() {
        return opts.maxListenStreamsPerPrincipal ?? opts.maxListenStreams;
      },
      availability: e.availability,
      ...(e.auth ? { auth: e.auth } : {}),
      ...(opts.sessionStore ? { sessionStore: opts.sessionStore } : {}),
      sessionIdleMs: opts.clientSessions.idleMs,
    });
    stats[i] = endpointStats;
  }
  for (const f of federated) {
    const face = federatedFace(opts, f, audit);
    app.addHook('onClose', async () => face.close());
    await registerFederatedEndpoint(app, {
      path: f.path,
      route: f.route,
      bridge: opts.bridge,
      runtime: opts.runtime,
      keepAliveMs: opts.keepAliveMs,
      get maxListenStreams() {
        return opts.maxListenStreams;
      },
      get maxListenStreamsPerPrincipal() {
        return opts.maxListenStreamsPerPrincipal ?? opts.maxListenStreams;
      },
      legacyFace: face,
      ...(f.auth ? { auth: f.auth } : {}),
      sessionIdleMs: opts.clientSessions.idleMs,
    });
  }
  await registerPassthroughPaths(app, opts.passthrough ?? [], { bodyLimitBytes: opts.bodyLimitBytes });
  return app;
}

/** The Fastify instance with its server bounds, its decorations and its JSON parser. */
function createApp(opts: EdgeOptions): FastifyInstance {
  const app = Fastify({
    ...(opts.loggerInstance ? { loggerInstance: opts.loggerInstance } : opts.logger !== undefined ? { logger: opts.logger } : {}),
    bodyLimit: opts.bodyLimitBytes,
    // Node bounds receiving a request (its headers, then all of it) and idle keep-alive connections; Fastify passes
    // `http` to http.createServer and sets requestTimeout and keepAliveTimeout itself. The request timeout stops at the
    // request's end: an answer may stream for as long as it needs. Connections are checked at a quarter of the
    // shorter bound (Node's default, every 30 s, would let a 1 s timeout fire 30 s late).
    http: {
      headersTimeout: opts.headersTimeoutMs,
      requestTimeout: opts.requestTimeoutMs,
      keepAliveTimeout: opts.idleTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(Math.min(opts.headersTimeoutMs, opts.requestTimeoutMs) / 4))),
    },
    requestTimeout: opts.requestTimeoutMs,
    keepAliveTimeout: opts.idleTimeoutMs,
    clientErrorHandler,
    return503OnClosing: true,
    forceCloseConnections: true,
    // One operator line per MCP request comes from the endpoint (method, era, upstream, outcome, duration).
    logController: new LogController({ disableRequestLogging: true }),
  });
  // First of the hooks: during a shutdown's drain a request is refused before anything else looks at it.
  app.decorate('drain', new EdgeDrain(app));
  app.decorate('audit', opts.audit ?? NO_AUDIT);
  app.decorate('metrics', opts.metrics);
  // MCP bodies are JSON; the default text/plain parser would let other bodies through to the handlers.
  app.removeContentTypeParser('text/plain');
  // A DELETE (or GET) that names a JSON Content-Type but carries no body is legal session traffic: pass it on.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && request.method !== 'POST') return done(null, undefined);
    // Refused before parsing: whatever walks the parsed value (serializing, validating, translating) recurses.
    if (jsonTooDeep(body as string, opts.maxJsonDepth)) return done(new GatewayError('GW_TOO_DEEP', { args: [opts.maxJsonDepth] }), undefined);
    keepRawBody(request, body as string);
    return plainJson(body as string, done) ? undefined : json(request, body as string, done);
  });
  return app;
}

/**
 * Parses a body that cannot smuggle a prototype key with `JSON.parse` alone: one naming neither `__proto__` nor
 * `constructor`, with no `\u` escape that could spell either. Anything else, and any text that does not parse, is left
 * to Fastify's parser (secure-json-parse, which refuses both keys), so its refusals and error answers stay its own.
 * Returns whether the body was handled. secure-json-parse's own scan of every body showed in the hot path's profile.
 */
function plainJson(text: string, done: (err: Error | null, body?: unknown) => void): boolean {
  if (text.includes('__proto__') || text.includes('constructor') || text.includes('\\u')) return false;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return false;
  }
  done(null, value);
  return true;
}

/** What every request meets first: the host check, the declared length's bound, and the JSON-RPC error handler. */
function registerGuards(app: FastifyInstance, opts: EdgeOptions): void {
  // The verdict for a (Host, Origin) pair is the same every time: remembered, so that a client's requests after its
  // first cost one lookup (bounded: cleared when full, as hostile clients may vary the headers).
  const verdicts = new Map<string, string | undefined>();
  app.addHook('onRequest', (request, reply, done) => {
    const host = request.headers.host;
    const origin = typeof request.headers.origin === 'string' ? request.headers.origin : undefined;
    const key = origin === undefined ? `${host}` : `${host}\n${origin}`;
    let refused = verdicts.get(key);
    if (refused === undefined && !verdicts.has(key)) {
      refused = checkHostOrigin(host, origin, opts.hostPolicy);
      if (verdicts.size >= 1024) verdicts.clear();
      verdicts.set(key, refused);
    }
    if (refused && !isLocalProbe(request.url.split('?', 1)[0]!, host, request.socket.remoteAddress)) {
      request.log.warn({ reason: refused }, 'request refused by the host check');
      void sendAnswer(reply, catalogAnswer('GW_FORBIDDEN_HOST'));
      return;
    }
    done();
  });

  // A declared length over the limit is refused before any of the body is read (Fastify would check it only when
  // parsing begins, after the other hooks); a chunked body that grows over it is refused by the parser (error handler).
  app.addHook('onRequest', (request, reply, done) => {
    const declared = Number(request.headers['content-length']);
    if (declared > opts.bodyLimitBytes) {
      refuseBody(request, reply);
      return;
    }
    done();
  });

  app.setErrorHandler((err: Error & { code?: string; statusCode?: number }, request, reply) => {
    const known = err.code ? FASTIFY_ERRORS[err.code] : undefined;
    if (known === 'GW_BODY_TOO_LARGE') return refuseBody(request, reply);
    if (known) return sendAnswer(reply, catalogAnswer(known));
    if (err instanceof GatewayError) return sendAnswer(reply, answerOf(err));
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return sendAnswer(reply, catalogAnswer('GW_BAD_REQUEST', { args: [err.message || 'refused'] }));
    }
    request.log.error({ err }, 'unhandled error');
    return sendAnswer(reply, catalogAnswer('GW_INTERNAL'));
  });
}

/** What every legacy face of the edge is bounded by: the client sessions' bounds and shares, their store, the audit trail. */
function faceOptionsOf(opts: EdgeOptions, audit: AuditLog): LegacyFaceOptions {
  return {
    keepAliveMs: opts.keepAliveMs,
    maxSessions: opts.clientSessions.max,
    idleMs: opts.clientSessions.idleMs,
    ...(opts.clientSessions.maxPerPrincipal !== undefined ? { maxSessionsPerPrincipal: opts.clientSessions.maxPerPrincipal } : {}),
    ...(opts.clientSessions.maxStreamsPerPrincipal !== undefined ? { maxStreamsPerPrincipal: opts.clientSessions.maxStreamsPerPrincipal } : {}),
    ...(opts.sessionStore ? { store: opts.sessionStore } : {}),
    audit,
  };
}

/**
 * One legacy face per upstream; it holds sessions only once a 2025-11-25 client meets the face (docs/how-it-works.md
 * §How the legacy face works: a 2026-07-28-only upstream, or rules that wrap tools).
 */
function legacyFacesOf(opts: EdgeOptions, modernRoutes: UpstreamRoute[], audit: AuditLog): LegacyFace[] {
  return opts.endpoints.map(
    (e, i) =>
      new LegacyFace(
        {
          name: e.route.name,
          runtime: opts.runtime,
          routeFor: async (_signal, authorization) => ((await e.availability.eras(authorization)).modern ? (modernRoutes[i] as UpstreamRoute) : e.route),
          // A session another instance minted works over the client of the era it picked there.
          routeOf: (era) => [e.route, modernRoutes[i] as UpstreamRoute].find((r) => r.upstream.era === era),
        },
        faceOptionsOf(opts, audit),
      ),
  );
}

/** A federated path: its route over its members' endpoints, which are then mounted by it alone (`member`). */
function federationOf(opts: EdgeOptions, plan: FederationPlan, modernRoutes: UpstreamRoute[], log: FastifyBaseLogger): EdgeFederation {
  const members = plan.members.map((x) => {
    const i = opts.endpoints.findIndex((e) => e.route.name === x.name);
    const e = opts.endpoints[i] as EdgeEndpoint;
    e.member = { required: x.required };
    return { ...x, route: e.route, modernRoute: modernRoutes[i] as UpstreamRoute, availability: e.availability, auth: e.auth };
  });
  const route = federatedRoute({
    path: plan.path,
    identity: plan.identity,
    members,
    runtime: opts.runtime,
    log,
    onCollision: (c) => opts.metrics?.federationCollision(plan.path, c.kept, c.hidden),
  });
  const auth = members[0]?.auth;
  return { path: plan.path, route, ...(auth ? { auth } : {}) };
}

/** The legacy face of a federated path: its sessions' route is the federated one, whatever era each member speaks. */
function federatedFace(opts: EdgeOptions, f: EdgeFederation, audit: AuditLog): LegacyFace {
  return new LegacyFace({ name: f.route.name, runtime: opts.runtime, routeFor: async () => f.route, routeOf: () => f.route }, faceOptionsOf(opts, audit));
}

/** `/healthz` (liveness and a few gauges, from memory) and `/readyz` (the store and every upstream answer). */
function registerHealth(app: FastifyInstance, opts: EdgeOptions, faces: LegacyFace[]): void {
  // Liveness plus a few gauges for operators (no per-caller data); answered from memory, nothing is asked.
  app.get('/healthz', async () => ({
    status: 'ok',
    version: opts.version,
    heldCalls: opts.bridge.heldCount,
    upstreams: opts.endpoints.map((e, i) => ({
      name: e.route.name,
      path: e.path,
      sessions: e.route.upstream.stats().sessions,
      clientSessions: faces[i]?.sessionCount ?? 0,
      state: e.availability.state,
      // Why it is down: what it answered (a wrong path's "HTTP 404 text/html to …") or how it failed; never an address.
      ...(e.availability.downReason !== undefined ? { reason: e.availability.downReason } : {}),
      // Eras only when known: an upstream that refused the probe for want of a token is `up` with `eras: refused`
      // until a caller's token has it answered.
      // `legacy` is absent while unasked: an upstream that answers server/discover is asked it by a 2025-11-25 client.
      ...(e.availability.current ? erasForHealth(e.availability.current) : e.availability.erasRefused ? { eras: 'refused' } : {}),
    })),
  }));

  // Readiness: the store answers and every upstream is reachable (health.ts); 503 naming the failed checks otherwise.
  const readiness = new Readiness({
    ...(opts.readiness?.store ? { store: opts.readiness.store } : {}),
    // A federated path's members not marked required do not make the gateway unready (docs/federation.md).
    upstreams: opts.endpoints.filter((e) => e.member?.required !== false).map((e) => ({ name: e.route.name, availability: e.availability })),
    cacheMs: opts.readiness?.cacheMs ?? 1_000,
    upstreamCheckMs: opts.readiness?.upstreamCheckMs ?? 10_000,
  });
  app.get('/readyz', async (_request, reply) => {
    const report = await readiness.check();
    return reply
      .code(report.status === 'ready' ? 200 : 503)
      .header('cache-control', 'no-store')
      .send(report);
  });
}

/** The metrics' gauges (read at each scrape; `stats` is filled as the endpoints are registered) and their route. */
function registerMetrics(app: FastifyInstance, opts: EdgeOptions, metrics: GatewayMetrics, faces: LegacyFace[], stats: EndpointStats[]): void {
  metrics.watch({
    liveTasks: () => opts.runtime.ownedLiveCount,
    heldCalls: () => opts.bridge.heldCount,
    upstreams: () =>
      opts.endpoints.map((e, i) => {
        // The route's client and the stateless modern one, each counted once under the era it speaks.
        const sessions = { legacy: 0, modern: 0 };
        for (const c of new Set([e.route.upstream, e.modernUpstream])) sessions[c.era] += c.stats().sessions;
        return {
          name: e.route.name,
          sessions,
          clientSessions: faces[i]?.sessionCount ?? 0,
          streams: { listen: stats[i]?.listenStreams ?? 0, get: faces[i]?.streamCount ?? 0 },
          state: e.availability.state,
        };
      }),
  });
  app.get(opts.metricsPath ?? '/metrics', async (_request, reply) => {
    const { contentType, text } = await metrics.exposition();
    return reply.header('content-type', contentType).header('cache-control', 'no-store').send(text);
  });
}

/** Sends a catalog answer from the HTTP layer (no request id was read). */
function sendAnswer(reply: FastifyReply, answer: CatalogAnswer): FastifyReply {
  if (answer.retryAfterSeconds !== undefined) void reply.header('retry-after', String(answer.retryAfterSeconds));
  return reply.code(answer.status).type('application/json').send(rpcBody(answer));
}

/** The eras `/healthz` shows: `modern`, and `legacy` once known. */
function erasForHealth(eras: UpstreamEras): { modern: boolean; legacy?: boolean } {
  return eras.legacyUnasked ? { modern: eras.modern } : { modern: eras.modern, legacy: eras.legacy };
}
