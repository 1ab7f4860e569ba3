/** The composition root: configuration → upstream clients, runtime, HTTP edge. */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { GatewayConfig } from './config/index.js';
import { buildEdge, hostPolicy, type EdgeEndpoint } from './proxy/index.js';
import { MemoryTaskStore } from './store/index.js';
import { MrtrBridge, TaskRuntime, type TaskPolicy } from './tasks/index.js';
import { globToRegExp } from './translate/index.js';
import { LegacyUpstreamClient, ModernUpstreamClient, upstreamAvailability, type UpstreamClient } from './upstream/index.js';
import { GATEWAY_NAME, GATEWAY_VERSION } from './version.js';

/** Optional collaborators (tests pass a logger or a fixed key). */
export interface GatewayDeps {
  logger?: FastifyServerOptions['logger'];
  /** HMAC key for MRTR request states; random per process when absent (then states do not survive a restart). */
  stateKey?: Uint8Array;
}

/** A built gateway: the Fastify app (not listening) and an idempotent, ordered close. */
export interface Gateway {
  app: FastifyInstance;
  close(): Promise<void>;
}

/** Default logger: pino at info, with credentials redacted should a header ever be logged. */
export const DEFAULT_LOGGER = {
  level: process.env.LOG_LEVEL ?? 'info',
  redact: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["mcp-session-id"]', 'headers.authorization'],
};

/** Builds the gateway from a validated configuration. */
export async function buildGateway(config: Readonly<GatewayConfig>, deps: GatewayDeps = {}): Promise<Gateway> {
  const stateKey = deps.stateKey ?? stateKeyFromEnv() ?? randomBytes(32);
  const bridge = new MrtrBridge({ stateKey, holdMs: config.input.holdMs, maxHeld: config.input.maxHeldCalls, gatherMs: 25 });
  const store = new MemoryTaskStore({ maxTasks: config.tasks.maxTasks });
  const runtime = new TaskRuntime({
    store,
    bridge,
    defaultTtlMs: config.tasks.defaultTtlMs,
    maxTtlMs: config.tasks.maxTtlMs,
    defaultPollIntervalMs: config.tasks.pollIntervalMs,
    maxActivePerPrincipal: config.tasks.maxActivePerPrincipal,
    toolSupportTtlMs: 60_000,
  });
  const routes: Array<EdgeEndpoint> = config.upstreams.map((u) => ({
    path: u.path,
    modernUpstream: new ModernUpstreamClient({
      name: u.name,
      url: u.url,
      staticHeaders: { ...u.headers },
      timeoutMs: u.timeoutMs,
      clientInfo: { name: GATEWAY_NAME, version: GATEWAY_VERSION },
    }),
    availability: upstreamAvailability({
      name: u.name,
      url: u.url,
      headers: u.headers,
      era: u.era,
      probeTimeoutMs: Math.min(u.probeTimeoutMs, u.timeoutMs),
    }),
    route: {
      name: u.name,
      url: u.url,
      staticHeaders: { ...u.headers },
      timeoutMs: u.timeoutMs,
      cache: { ttlMs: u.cache.ttlMs, scope: u.cache.scope },
      rules: Object.entries(u.tools).map(([pattern, rule]) => [globToRegExp(pattern), rule as TaskPolicy] as const),
      upstream: upstreamClient(u, config),
    },
  }));
  const app = await buildEdge({
    logger: deps.logger ?? false,
    bodyLimitBytes: config.server.bodyLimitBytes,
    hostPolicy: hostPolicy(config.server.host, config.server.allowedHosts, config.server.allowedOrigins),
    keepAliveMs: config.server.keepAliveMs,
    maxListenStreams: config.server.maxListenStreams,
    clientSessions: { max: config.clientSessions.max, idleMs: config.clientSessions.idleMs },
    bridge,
    runtime,
    endpoints: routes,
    version: GATEWAY_VERSION,
  });
  let closing: Promise<void> | undefined;
  return {
    app,
    close() {
      // Ordered: stop accepting → cancel held calls → close upstream sessions.
      closing ??= (async () => {
        await app.close();
        for (const r of routes) r.availability.close();
        bridge.close();
        runtime.close();
        await Promise.all(routes.flatMap((r) => [r.route.upstream.close(), r.modernUpstream.close()]));
        await store.close();
      })();
      return closing;
    },
  };
}

/** The client of one configured upstream: the one place that picks an implementation of the upstream seam. */
function upstreamClient(u: GatewayConfig['upstreams'][number], config: Readonly<GatewayConfig>): UpstreamClient {
  return new LegacyUpstreamClient(u.name, {
    url: u.url,
    staticHeaders: { ...u.headers },
    timeoutMs: u.timeoutMs,
    max: config.sessions.maxPerUpstream,
    idleMs: config.sessions.idleMs,
    clientInfo: { name: GATEWAY_NAME, version: GATEWAY_VERSION },
  });
}

function stateKeyFromEnv(): Uint8Array | undefined {
  const v = process.env.MCP_GATEWAY_STATE_SECRET;
  if (!v) return undefined;
  if (v.length < 32) throw new Error('MCP_GATEWAY_STATE_SECRET must be at least 32 characters');
  return Buffer.from(v, 'utf8');
}
