/**
 * The MCP endpoint of a federated path (docs/federation.md): several upstreams behind one URL. Names and lists are the
 * gateway's: a 2026-07-28 request goes to the modern face, 2025-11-25 traffic to the legacy face, both over the
 * federated route, whose client routes each request to its member; only a 2026-07-28 tool call that its member serves
 * itself in that era passes through to it, under the member's own name. A member that is down takes only its own
 * tools away; the endpoint answers as long as the gateway does.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { classifyEra, declaresTasks, isObject, META, needsGateway, singleHeader } from '../translate/index.js';
import { hidesTool, runtimeServesTools, type FederationRouting, type MrtrBridge, type TaskRuntime, type UpstreamRoute } from '../tasks/index.js';
import { Authenticator, identityOf, registerAuth } from './auth.js';
import { upstreamHasTasks, type EndpointStats } from './mcp-endpoint.js';
import type { LegacyFace } from './legacy-face/face.js';
import { ModernFace } from './modern-face.js';
import { registerMembersPassThrough, type PassThrough, type PassThroughOptions, type Renamed } from './pass-through.js';

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
  /** A passed-through session without requests for this long is forgotten (what every pass-through is built with). */
  sessionIdleMs: number;
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
    const members = new MemberPassThrough(await registerMembersPassThrough(scope), route.federation as FederationRouting, opts);
    scope.route({ method: ['GET', 'DELETE'], url: opts.path, handler: legacy });
    scope.post(opts.path, async (request, reply) => {
      const era = classifyEra({
        httpMethod: 'POST',
        protocolVersionHeader: singleHeader(request.headers, 'mcp-protocol-version') ?? undefined,
        body: request.body,
      });
      if (era !== 'modern') return legacy(request, reply);
      return (await members.passed(request, reply)) ? reply : modern.handle(request, reply, route);
    });
  });
  return {
    get listenStreams() {
      return modern.listenStreams;
    },
  };
}

/**
 * A federated endpoint's 2026-07-28 `tools/call` passed through to its member, as a single endpoint in front of that
 * member would pass it (docs/federation.md §Eras and tasks): when the member speaks 2026-07-28, no rule of its makes
 * the call the gateway's, and no task of the member's could come back (an id the endpoint could not route). The body
 * and `Mcp-Name` carry the member's own name; the answer, its progress and its MRTR rounds come back as the member sent
 * them (a retry names the same tool, so it reaches the same member). Anything else is the modern face's.
 */
class MemberPassThrough {
  /** Each member's pass-through, made when first needed. */
  private readonly byMember = new Map<string, PassThrough>();

  constructor(
    private readonly make: (opts: PassThroughOptions) => PassThrough,
    private readonly federation: FederationRouting,
    private readonly opts: { runtime: TaskRuntime; sessionIdleMs: number },
  ) {}

  /**
   * Passes `request` through to its member (the answer goes on `reply` from there) and says so; `false`: the modern face
   * serves it.
   */
  async passed(request: FastifyRequest, reply: FastifyReply): Promise<boolean> {
    const hop = await this.hopOf(request);
    if (!hop) return false;
    // Not awaited: a reply is a thenable that settles (without a value) when its answer has been sent.
    void hop.pass.serveModern(request, reply, hop.renamed);
    return true;
  }

  private async hopOf(request: FastifyRequest): Promise<{ pass: PassThrough; renamed: Renamed | undefined } | undefined> {
    const body = request.body;
    if (!isObject(body) || body.method !== 'tools/call') return undefined;
    // A member's JSON-lines answer is re-framed as SSE (json-lines.ts): a client that takes only JSON gets the face.
    const accept = singleHeader(request.headers, 'accept') ?? '';
    if (!accept.includes('text/event-stream') && !accept.includes('*/*')) return undefined;
    // What a single endpoint would pass through unread, this one does too: the member judges the request. The face
    // takes what the rewriting would hide or cannot route: a request without an id or a name, no envelope's
    // capabilities (the member's view of the caller), an `Mcp-Name` that is not the body's name as it stands.
    const params = body.params;
    if (body.id === undefined || body.id === null || !isObject(params) || typeof params.name !== 'string') return undefined;
    const name = params.name;
    if (singleHeader(request.headers, 'mcp-name') !== name) return undefined;
    const meta = isObject(params._meta) ? params._meta : undefined;
    const capabilities = meta?.[META.clientCapabilities];
    if (!isObject(capabilities)) return undefined;
    const { principal, authorization, subject } = identityOf(request);
    const caller = { principal, ...(subject ? { subject } : {}), capabilities, ...(authorization ? { authorization } : {}) };
    let target: { route: UpstreamRoute; name: string } | undefined;
    try {
      target = await this.federation.target('tool', name, caller);
    } catch {
      // A member known to be down, a list that could not be read: the face answers it.
      return undefined;
    }
    if (target?.route.upstream.era !== 'modern') return undefined;
    const member = target.route;
    const own = target.name;
    if (runtimeServesTools(member) && (needsGateway(this.opts.runtime.policyFor(member, own)) || hidesTool(member, own))) return undefined;
    if (declaresTasks(caller.capabilities) && (await upstreamHasTasks(member))) return undefined;
    let pass = this.byMember.get(member.name);
    if (!pass) {
      pass = this.make({ route: member, availability: this.federation.availabilityOf(member.name), sessionIdleMs: this.opts.sessionIdleMs });
      this.byMember.set(member.name, pass);
    }
    if (own === name) return { pass, renamed: undefined };
    return { pass, renamed: { body: JSON.stringify({ ...body, params: { ...params, name: own } }), name: own } };
  }
}
