/**
 * The MCP endpoint of one upstream, for both eras on one URL (2026-07-28 basic/versioning §Compatibility Matrix): its
 * routes, which ask the face decision (face-decision.ts) who serves each request and hand it over — to the upstream
 * as it is (pass-through.ts), to the legacy face (legacy-face/face.ts) or to the modern face (modern-face.ts) — or refuse it
 * while the upstream's eras cannot be learned (docs/how-it-works.md §Routing).
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { classifyEra, declaresTasks, errorSummary, isObject, needsGateway, requestIdOf, singleHeader, type Era } from '../translate/index.js';
import {
  hidesTool,
  runtimeServesTools,
  shapesToolList,
  wrapsTools,
  type MrtrBridge,
  type SharedValues,
  type TaskRuntime,
  type UpstreamRoute,
} from '../tasks/index.js';
import { UpstreamDownError, type UpstreamAvailability, type UpstreamEras } from '../upstream/index.js';
import { Authenticator, identityOf, registerAuth } from './auth.js';
import { exceptionToEdge } from './errors.js';
import { decideFace, type FaceDecision, type FaceFacts, type RouteRules } from './face-decision.js';
import type { LegacyFace } from './legacy-face/face.js';
import { logAvailability } from './health.js';
import { ModernFace } from './modern-face.js';
import { recordRequest } from './operator-log.js';
import { errorOutcome } from './request-outcome.js';
import { registerPassThrough } from './pass-through.js';

export { runRequest } from './modern-face.js';

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
  /** Serves legacy clients the upstream cannot take as they are (it speaks 2026-07-28 only, or rules wrap tools). */
  legacyFace: LegacyFace;
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

/** What a registered endpoint tells the gauges. */
export interface EndpointStats {
  /** `subscriptions/listen` streams open now. */
  readonly listenStreams: number;
}

/** The route's tool rules as the face decision asks them (read at each decision: a reload may replace them). */
function rulesOf(route: UpstreamRoute, modernRoute: UpstreamRoute, runtime: TaskRuntime): RouteRules {
  return {
    wrapsTools: () => wrapsTools(route),
    servesTools: () => runtimeServesTools(route),
    shapesToolList: () => shapesToolList(modernRoute),
    wrapsTool: (name) => needsGateway(runtime.policyFor(modernRoute, name)),
    hidesTool: (name) => hidesTool(modernRoute, name),
  };
}

/** Whether the 2026-07-28 upstream declares the tasks extension (its own tasks pass through untouched). */
export async function upstreamHasTasks(modernRoute: UpstreamRoute): Promise<boolean> {
  try {
    const identity = modernRoute.upstream.knownIdentity ?? (await modernRoute.upstream.identity({ capabilities: {} }));
    return declaresTasks(identity.capabilities);
  } catch {
    // Not known: the request passes through and the upstream answers it itself.
    return true;
  }
}

/** Registers the endpoint's routes in an encapsulated scope. */
export async function registerMcpEndpoint(app: FastifyInstance, opts: EndpointOptions): Promise<EndpointStats> {
  const { route, modernRoute, runtime, availability } = opts;
  const rules = rulesOf(route, modernRoute, runtime);
  const modern = new ModernFace(opts);

  // The upstream's eras, learned once (or pinned) and re-learned when traffic says they changed; while the
  // upstream is known to be down this fails at once (UpstreamDownError) instead of waiting for it. The request's
  // forwarded Authorization goes along: an OAuth-protected upstream answers the probe only with a token.
  // For a 2025-11-25 client, the upstream's 2025-11-25 side too: a modern upstream is asked it only then (probe.ts).
  const upstreamEra = (request: FastifyRequest, clientEra: Era): Promise<UpstreamEras> =>
    clientEra === 'legacy' ? availability.legacyEras(identityOf(request).authorization) : availability.eras(identityOf(request).authorization);
  // Said once per outcome (the probe at start's included), not per probe or refused request.
  logAvailability(route.name, availability, app.log);

  /** The face decision, with the upstream's own tasks asked only when it needs them (a promise only then). */
  const decide = (facts: FaceFacts): FaceDecision | Promise<FaceDecision> => {
    const d = decideFace(facts);
    return d.face === 'ask' ? upstreamHasTasks(modernRoute).then((has) => decideFace({ ...facts, upstreamHasTasks: has })) : d;
  };

  const unavailable = (reply: FastifyReply, e: unknown, clientEra: Era, started: number, body?: unknown) => {
    const edge = exceptionToEdge(e);
    // No operator line (a down upstream is logged once), but counted: the refusals are what an operator graphs.
    recordRequest(reply.request, {
      upstream: route.name,
      method: isObject(body) ? body.method : reply.request.method,
      clientEra,
      upstreamEra: 'unknown',
      mode: 'gateway',
      outcome: errorOutcome(undefined, e),
      ms: Date.now() - started,
    });
    // The probe's failure is logged once as the upstream's outcome ('upstream is down', logAvailability), not per
    // refused request: a caller that waited for that probe is told at debug.
    if (!(e instanceof UpstreamDownError)) reply.log.debug({ err: errorSummary(e), upstream: route.name }, 'upstream era probe failed');
    if (edge.retryAfterSeconds !== undefined) reply.header('retry-after', String(edge.retryAfterSeconds));
    return reply.code(edge.status).send({ jsonrpc: '2.0', id: requestIdOf(body), error: edge.error });
  };

  /**
   * Legacy (2025-11-25) traffic the upstream cannot take as it is (it speaks only 2026-07-28, or rules wrap tools):
   * the legacy face answers it (the gateway's own sessions and tasks).
   */
  const legacyFace = (request: FastifyRequest, reply: FastifyReply) => {
    // The face's 502/504 say the upstream failed it (gone, restarted, or now refusing our era): learn it anew at
    // once, as the modern face does, so a dead upstream is remembered and a restarted one re-probed.
    reply.raw.once('finish', () => {
      if (reply.statusCode === 502 || reply.statusCode === 504) availability.suspect(true);
    });
    return opts.legacyFace.handle(request, reply, route.name);
  };

  await app.register(async (scope) => {
    // The principal of every request of this endpoint (modern face, legacy face, pass-through), or its 401.
    registerAuth(scope, opts.auth ?? new Authenticator({ mode: 'bearer' }, { key: randomBytes(32), upstream: route.name }));
    const passThrough = await registerPassThrough(scope, opts);

    /**
     * Learns the upstream's eras for the client's era, asks the face decision and hands the request to the face it
     * names. GET and DELETE are legacy session traffic (2025-11-25 basic/transports), refused without their body.
     */
    const serve = async (request: FastifyRequest, reply: FastifyReply, clientEra: Era, body: unknown) => {
      const started = Date.now();
      // Known eras and a decision that asks nothing are taken without a promise (every request of a known upstream).
      let eras = availability.knownEras(clientEra);
      let failure: unknown;
      if (eras === undefined) {
        try {
          eras = await upstreamEra(request, clientEra);
        } catch (e) {
          failure = e;
        }
      }
      const decided = decide({ clientEra, body, eras, rules, ...(eras === undefined ? { lastKnownEras: availability.current } : {}) });
      const d = decided instanceof Promise ? await decided : decided;
      switch (d.face) {
        case 'pass-through':
          return passThrough.serve(request, reply, clientEra);
        case 'legacy':
          return legacyFace(request, reply);
        case 'modern':
          return modern.handle(request, reply, d.over === 'route' ? route : modernRoute);
        default:
          return unavailable(reply, failure, clientEra, started, body);
      }
    };

    scope.route({ method: ['GET', 'DELETE'], url: opts.path, handler: (request, reply) => serve(request, reply, 'legacy', undefined) });
    scope.post(opts.path, (request, reply) => {
      const clientEra = classifyEra({
        httpMethod: 'POST',
        protocolVersionHeader: singleHeader(request.headers, 'mcp-protocol-version') ?? undefined,
        body: request.body,
      });
      return serve(request, reply, clientEra, request.body);
    });
  });
  return {
    get listenStreams() {
      return modern.listenStreams;
    },
  };
}
