/**
 * The MCP endpoint of a federated path (docs/federation.md): several upstreams behind one URL. Nothing passes through
 * (names and lists are the gateway's): a 2026-07-28 request goes to the modern face, 2025-11-25 traffic to the legacy
 * face, both over the federated route, whose client routes each request to its member. A member that is down takes
 * only its own tools away; the endpoint answers as long as the gateway does.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { classifyEra, singleHeader } from '../translate/index.js';
import type { MrtrBridge, TaskRuntime, UpstreamRoute } from '../tasks/index.js';
import { Authenticator, registerAuth } from './auth.js';
import type { EndpointStats } from './mcp-endpoint.js';
import type { LegacyFace } from './legacy-face/face.js';
import { ModernFace } from './modern-face.js';

/** What a federated endpoint needs. */
export interface FederatedEndpointOptions {
  path: string;
  /** The federated route: `upstream` is the federated client, `federation` its routing. */
  route: UpstreamRoute;
  bridge: MrtrBridge;
  runtime: TaskRuntime;
  keepAliveMs: number;
  readonly maxListenStreams: number;
  readonly maxListenStreamsPerPrincipal: number;
  legacyFace: LegacyFace;
  /** Who the callers are (the members share one authentication; absent: `bearer` under a random key). */
  auth?: Authenticator;
}

/** A member failure is learned by the member itself (tasks/federation); the endpoint has no availability of its own. */
const NO_AVAILABILITY = { suspect: () => {} };

/** Registers a federated endpoint's routes in an encapsulated scope. */
export async function registerFederatedEndpoint(app: FastifyInstance, opts: FederatedEndpointOptions): Promise<EndpointStats> {
  const { route } = opts;
  const modern = new ModernFace({ ...opts, availability: NO_AVAILABILITY });
  const legacy = (request: FastifyRequest, reply: FastifyReply) => opts.legacyFace.handle(request, reply, route.name);
  await app.register(async (scope) => {
    registerAuth(scope, opts.auth ?? new Authenticator({ mode: 'bearer' }, { key: randomBytes(32), upstream: route.name }));
    scope.route({ method: ['GET', 'DELETE'], url: opts.path, handler: legacy });
    scope.post(opts.path, (request, reply) => {
      const era = classifyEra({
        httpMethod: 'POST',
        protocolVersionHeader: singleHeader(request.headers, 'mcp-protocol-version') ?? undefined,
        body: request.body,
      });
      return era === 'modern' ? modern.handle(request, reply, route) : legacy(request, reply);
    });
  });
  return {
    get listenStreams() {
      return modern.listenStreams;
    },
  };
}
