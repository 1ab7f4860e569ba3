/** The Fastify application: parsers, limits, the host check, the JSON-RPC error handler, and the endpoints. */
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import { ErrorCode } from '../translate/index.js';
import type { MrtrBridge, TaskRuntime, UpstreamRoute } from '../tasks/index.js';
import type { UpstreamAvailability, UpstreamClient } from '../upstream/index.js';
import type { Authenticator } from './auth.js';
import { checkHostOrigin, type HostPolicy } from './host-check.js';
import { LegacyFace } from './legacy-face.js';
import type { SessionStore } from './legacy-face-sessions.js';
import { registerMcpEndpoint, runRequest } from './mcp-endpoint.js';
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
}

/** What the edge is built from. */
export interface EdgeOptions {
  logger: FastifyServerOptions['logger'];
  bodyLimitBytes: number;
  hostPolicy: HostPolicy;
  keepAliveMs: number;
  maxListenStreams: number;
  bridge: MrtrBridge;
  runtime: TaskRuntime;
  /** Bounds of the sessions the legacy face mints for 2025-11-25 clients. */
  clientSessions: { max: number; idleMs: number };
  /** Where those sessions are shared with the other instances (the task store); absent: this instance alone. */
  sessionStore?: SessionStore;
  endpoints: EdgeEndpoint[];
  version: string;
}

const FASTIFY_ERRORS: Record<string, { status: number; code: number; message: string }> = {
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: ErrorCode.ParseError, message: 'Parse error: the body is not valid JSON' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: ErrorCode.ParseError, message: 'Parse error: empty body' },
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: ErrorCode.InvalidRequest, message: 'Request body too large' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: ErrorCode.InvalidRequest, message: 'Unsupported Content-Type: use application/json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: ErrorCode.InvalidRequest, message: 'Invalid Content-Length' },
};

/** Builds the not-yet-listening Fastify app. */
export async function buildEdge(opts: EdgeOptions): Promise<FastifyInstance> {
  const app = Fastify({
    logger: opts.logger,
    bodyLimit: opts.bodyLimitBytes,
    return503OnClosing: true,
    forceCloseConnections: true,
    // One operator line per MCP request comes from the endpoint (method, era, upstream, outcome, duration).
    logController: new LogController({ disableRequestLogging: true }),
  });
  // MCP bodies are JSON; the default text/plain parser would let other bodies through to the handlers.
  app.removeContentTypeParser('text/plain');
  // A DELETE (or GET) that names a JSON Content-Type but carries no body is legal session traffic: pass it on.
  const json = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && request.method !== 'POST') return done(null, undefined);
    keepRawBody(request, body as string);
    return json(request, body as string, done);
  });

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
    if (refused) {
      request.log.warn({ reason: refused }, 'request refused by the host check');
      void reply.code(403).send({ jsonrpc: '2.0', id: null, error: { code: ErrorCode.InvalidRequest, message: 'Forbidden: Host or Origin not allowed' } });
      return;
    }
    done();
  });

  app.setErrorHandler((err: { code?: string; statusCode?: number; message?: string }, request, reply) => {
    const known = err.code ? FASTIFY_ERRORS[err.code] : undefined;
    if (known) return reply.code(known.status).send({ jsonrpc: '2.0', id: null, error: { code: known.code, message: known.message } });
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500) {
      return reply.code(err.statusCode).send({ jsonrpc: '2.0', id: null, error: { code: ErrorCode.InvalidRequest, message: err.message ?? 'Bad request' } });
    }
    request.log.error({ err }, 'unhandled error');
    return reply.code(500).send({ jsonrpc: '2.0', id: null, error: { code: ErrorCode.InternalError, message: 'Internal error' } });
  });

  // The same upstream reached through its stateless 2026-07-28 client: the legacy face's route when the upstream speaks
  // that era, and the modern face's for wrapped tools of such an upstream. One object per upstream: it caches what
  // the runtime learns of the upstream's tools.
  const modernRoutes = opts.endpoints.map((e): UpstreamRoute => ({ ...e.route, upstream: e.modernUpstream }));
  // One legacy face per upstream; it holds sessions only once a 2025-11-25 client meets the face (README §How the
  // legacy face works: a 2026-07-28-only upstream, or rules that wrap tools).
  const faces = opts.endpoints.map(
    (e, i) =>
      new LegacyFace(
        {
          runtime: opts.runtime,
          routeFor: async () => ((await e.availability.eras()).modern ? (modernRoutes[i] as UpstreamRoute) : e.route),
          // A session another instance minted works over the client of the era it picked there.
          routeOf: (era) => [e.route, modernRoutes[i] as UpstreamRoute].find((r) => r.upstream.era === era),
        },
        {
          keepAliveMs: opts.keepAliveMs,
          maxSessions: opts.clientSessions.max,
          idleMs: opts.clientSessions.idleMs,
          ...(opts.sessionStore ? { store: opts.sessionStore } : {}),
        },
      ),
  );
  app.addHook('onClose', async () => {
    for (const f of faces) f.close();
  });
  // MRTR retries that landed on another instance come here to the call this instance holds, and run as if they had
  // arrived here (the hold names its route).
  opts.bridge.serveRelayed((route, req, caller, hooks) => runRequest(opts.runtime, opts.bridge, route, req, caller, hooks));
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'not found' }));
  // Liveness plus a few gauges for operators (no per-caller data).
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
      ...(e.availability.current ? { modern: e.availability.current.modern, legacy: e.availability.current.legacy } : {}),
    })),
  }));

  for (const [i, e] of opts.endpoints.entries()) {
    await registerMcpEndpoint(app, {
      legacyFace: faces[i],
      route: e.route,
      modernRoute: modernRoutes[i] as UpstreamRoute,
      path: e.path,
      bridge: opts.bridge,
      runtime: opts.runtime,
      keepAliveMs: opts.keepAliveMs,
      maxListenStreams: opts.maxListenStreams,
      availability: e.availability,
      ...(e.auth ? { auth: e.auth } : {}),
    });
  }
  return app;
}
