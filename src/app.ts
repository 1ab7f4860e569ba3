/** The composition root: configuration → upstream clients, runtime, HTTP edge. */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import { pino, type DestinationStream, type Logger } from 'pino';
import { ConfigError, federatedPaths, sharedPaths, planReload, principalShare, wellKnownRootOwner } from './config/index.js';
import type { GatewayConfig, UpstreamConfig } from './config/index.js';
import {
  Authenticator,
  buildEdge,
  createAuditLog,
  GatewayMetrics,
  hostPolicy,
  type EdgeEndpoint,
  drainThenClose,
  type EdgeOptions,
  type FederationPlan,
  type PassthroughUpstream,
} from './proxy/index.js';
import { observeStore, type TaskStore } from './store/index.js';
import { openStore } from './store-setup.js';
import {
  FederationCollisionError,
  InstanceBus,
  mintInstanceId,
  MrtrBridge,
  NO_AUDIT,
  NO_TASK_METRICS,
  replaceHeaders,
  replaceRules,
  Sealer,
  TaskRuntime,
  teeAudit,
  type AuditLog,
  type LiveHoldLimits,
  type LiveTaskLimits,
  type TaskPolicy,
} from './tasks/index.js';
import { DEFAULT_TASK_MODE, globToRegExp, NO_LOG, type LayerLogger } from './translate/index.js';
import { LegacyUpstreamClient, ModernUpstreamClient, StdioHost, upstreamAvailability } from './upstream/index.js';
import type { SessionBounds, StdioHostStatus, UpstreamClient } from './upstream/index.js';
import { GATEWAY_NAME, GATEWAY_VERSION } from './version.js';

// The package's public entry (index.ts) reaches the configuration through the composition root, which owns it: a
// library user parses a configuration exactly as the command line does, then builds the gateway from it.
export {
  ConfigError,
  DEFAULTS,
  loadConfigFile,
  parseConfig,
  type AuthConfig,
  type ConfigOverrides,
  type GatewayConfig,
  type ToolRule,
  type UpstreamConfig,
} from './config/index.js';

/** Optional collaborators (tests pass a logger or a fixed key). */
export interface GatewayDeps {
  logger?: FastifyServerOptions['logger'];
  /**
   * The shared secret (HMAC key for MRTR request states, key of sealed values); otherwise from the configuration or
   * its environment variable, else random per process (memory store only: then states do not survive a restart).
   */
  stateKey?: Uint8Array;
  /** This instance's id (random when absent). */
  instanceId?: string;
  /** Environment to read the secret and the Redis URL from (default `process.env`). */
  env?: NodeJS.ProcessEnv;
  /**
   * A task store to use instead of the configured one (tests share one between several gateways in one process); the
   * gateway does not close it.
   */
  store?: TaskStore;
  /** Where audit events go (auth failures, …); default: nowhere. */
  audit?: AuditLog;
}

/** What a reload did: the keys applied live, and the keys that differ but wait for a restart (names, never values). */
export interface ReloadOutcome {
  applied: string[];
  needsRestart: string[];
}

/** A built gateway: the Fastify app (not listening), a live reload, a graceful shutdown and an idempotent, ordered close. */
export interface Gateway {
  app: FastifyInstance;
  /** The supervised processes of stdio upstreams, by upstream name: their state, restarts, and a change listener. */
  upstreamProcesses: ReadonlyMap<string, UpstreamProcess>;
  /** The configuration it runs with now (the live keys of the last reload included). */
  readonly config: Readonly<GatewayConfig>;
  /**
   * Applies what can change without a restart (tool rules, upstream headers, limits: `LIVE_SETTINGS`) from `next`, a
   * validated configuration; open connections, sessions and tasks stay. Whatever else differs is left as it is and
   * named in `needsRestart`.
   */
  reload(next: Readonly<GatewayConfig>): ReloadOutcome;
  /**
   * Graceful shutdown: refuses new requests (503 `GW_SHUTTING_DOWN`, `Connection: close`) and stops accepting
   * connections, lets requests in flight and gateway-owned tasks running here finish for up to `graceMs` (default
   * `server.shutdownGraceMs`), then stops what still runs (owned tasks: leases handed over with a shared store, failed
   * with `GW_TASK_SHUT_DOWN` with the memory store, written to the clients still connected), ends open streams
   * cleanly and closes everything (`close`). Idempotent.
   */
  shutdown(graceMs?: number): Promise<void>;
  /** Closes at once, in order: stop accepting → stop work (held calls, tasks) → upstream sessions and hosts → store. Idempotent. */
  close(): Promise<void>;
}

/** What others may watch of an stdio upstream's process (never its private URL). */
export interface UpstreamProcess extends StdioHostStatus {
  /** Calls `listener` on every state change; returns the unsubscribe. */
  onChange(listener: (s: StdioHostStatus) => void): () => void;
}

/** Default logger: pino at info, with credentials redacted should a header ever be logged. */
export const DEFAULT_LOGGER = {
  level: process.env.LOG_LEVEL ?? 'info',
  redact: ['req.headers.authorization', 'req.headers.cookie', 'req.headers["mcp-session-id"]', 'headers.authorization'],
};

/** Builds the gateway from a validated configuration. */
export async function buildGateway(config: Readonly<GatewayConfig>, deps: GatewayDeps = {}): Promise<Gateway> {
  const env = deps.env ?? process.env;
  const shared = deps.stateKey ?? secretOf(config, env);
  if (!shared && config.store.kind !== 'memory') {
    // Everything one instance signs or seals must open on every other: a random key per process would not.
    throw new ConfigError([
      `secret: a shared store (${config.store.kind}) needs the deployment's shared secret, the same on every instance: set ${config.secret.env} (at ` +
        `least 32 characters) or secret.value`,
    ]);
  }
  const stateKey = shared ?? randomBytes(32);
  // One pino logger for the edge and the layers below it (each a child naming its layer), and the audit trail in it.
  const root = rootLogger(deps.logger);
  // This gateway's own registry (several gateways may share a process); fed through plain callbacks below.
  const metrics = config.server.metrics.enabled
    ? new GatewayMetrics({ maxToolLabels: config.server.metrics.maxToolLabels, defaultMetrics: config.server.metrics.defaultMetrics })
    : undefined;
  const auditTrail = deps.audit ?? (root ? createAuditLog(root) : NO_AUDIT);
  // The task events reach the metrics through the audit trail: one place records them, two sinks read them.
  const audit = metrics ? teeAudit(auditTrail, metrics.audit) : auditTrail;
  const logs: Logs = { root, tasks: root?.child({ layer: 'tasks' }) ?? NO_LOG, upstream: root?.child({ layer: 'upstream' }) ?? NO_LOG };
  // Built before anything that needs closing: a bad key or a missing secret is a configuration error at start.
  const authenticators = config.upstreams.map((u) => authenticatorOf(u, stateKey, env, audit));
  // Each resource's closer is registered as it is created; they run in reverse (close, or a start that failed).
  const closers = new Closers();
  if (metrics) closers.add(() => metrics.close());
  try {
    return await startGateway(config, deps, { stateKey, env, metrics, audit, logs, authenticators, closers });
  } catch (e) {
    await closers.run();
    throw e;
  }
}

/** The logger of the edge (none: no operator log) and those of the layers below it. */
interface Logs {
  root: Logger | undefined;
  tasks: LayerLogger;
  upstream: LayerLogger;
}

/** What `buildGateway` settled before anything was opened. */
interface Settled {
  stateKey: Uint8Array;
  env: NodeJS.ProcessEnv;
  metrics: GatewayMetrics | undefined;
  audit: AuditLog;
  logs: Logs;
  authenticators: Authenticator[];
  closers: Closers;
}

/**
 * Opens what the gateway runs on, each resource's closer registered as it is created, so that they close in the
 * reverse order — stop accepting → stop work (probes, held calls, tasks) → the instance bus → upstream sessions → the
 * stdio hosts they ran against → the store — whether the gateway closes or its start fails.
 */
async function startGateway(config: Readonly<GatewayConfig>, deps: GatewayDeps, s: Settled): Promise<Gateway> {
  const { stateKey, metrics, audit, logs, closers } = s;
  const backing = deps.store ?? (await openStore(config, s.env));
  // Every store call of every layer passes this wrapper: failures are counted where they happen, nothing else changes.
  const store = metrics ? observeStore(backing, metrics.storeObserver(config.store.kind)) : backing;
  // A store the caller passed is the caller's to close.
  if (deps.store === undefined) closers.add(() => store.close());
  // stdio upstreams: each child is served at a private loopback URL, so that everything below treats it as HTTP.
  const hosts = await startStdioHosts(config, logs.upstream);
  // The children last: the upstream sessions were closed against them.
  closers.add(() => Promise.all([...hosts.values()].map((h) => h.close())));
  const routes = config.upstreams.map((u, i) =>
    endpointOf(u, s.authenticators[i] as Authenticator, u.url ?? (hosts.get(u.name) as StdioHost), config, logs.upstream),
  );
  // What a reload may not change of an upstream's rules: its retention cap, fixed as its authentication is.
  const caps = new Map(config.upstreams.map((u) => [u.name, retentionCapOf(u)]));
  closers.add(() => Promise.all(routes.flatMap((r) => [r.route.upstream.close(), r.modernUpstream.close()])));
  const bus = new InstanceBus({ store, instanceId: deps.instanceId ?? mintInstanceId(), heartbeatMs: config.tasks.leaseMs, log: logs.tasks });
  await bus.start();
  closers.add(() => bus.close());
  // One sealer for the runtime and the bridge: what one instance seals, every instance opens.
  const sealer = new Sealer(stateKey);
  const bridge = bridgeOf(config, { stateKey, bus, sealer, audit, metrics, log: logs.tasks });
  const runtime = runtimeOf(config, { store, bus, sealer, bridge, audit, log: logs.tasks });
  /** Stops the work running here (idempotent steps): probes, held MRTR calls, tasks (leases handed over, or failed). */
  const stopWork = async () => {
    for (const r of routes) r.availability.close();
    bridge.close();
    // Leases are handed over at once (another instance takes the work over without waiting for expiry).
    await runtime.close();
  };
  closers.add(stopWork);
  // Tasks created on another instance are taken over against their route by name; then this runtime joins the others.
  for (const r of routes) {
    runtime.register(r.route);
    // A proxied task is taken over through a client of the era that created it: the route's modern client too.
    runtime.proxied.knowRoute({ ...r.route, upstream: r.modernUpstream });
  }
  await runtime.start();
  const edgeOptions = { ...edgeOptionsOf(config, { root: logs.root, audit, store, bridge, runtime, routes, metrics }), federations: federationPlans(config) };
  const app = await buildEdge(edgeOptions).catch((e: unknown) => {
    // Two members of a federated path showing one name (asked at start): a configuration error naming both.
    throw e instanceof FederationCollisionError ? new ConfigError(e.problems) : e;
  });
  closers.add(() => app.close());
  // Every upstream on `era: auto` probed now, in the background (the listen does not wait): a dead upstream, or one that
  // is no MCP server, is known and logged before the first request; its outcome is logged by the edge (logAvailability).
  for (const r of routes) r.availability.start();
  for (const u of config.upstreams) {
    if (u.auth.mode !== 'none') continue;
    // Without identities a task id is the only secret: said once, loudly, at start.
    app.log.warn(
      { upstream: u.name, maxTtlMs: u.auth.maxTtlMs },
      'auth.mode is none: every caller is one anonymous principal, task ids are the only secret; task retention is capped at auth.maxTtlMs',
    );
  }
  const parts: LiveParts = { runtime, bridge, edgeOptions, routes, caps, gateway: LIVE_SETTINGS.gateway.from(config) };
  let current: Readonly<GatewayConfig> = config;
  let closing: Promise<void> | undefined;
  let shuttingDown: Promise<void> | undefined;
  // Ordered (the closers in reverse): stop accepting → cancel held calls and tasks → close upstream sessions (and,
  // where an upstream is a child process, its host) → the store.
  const close = () => (closing ??= closers.run());
  return {
    app,
    upstreamProcesses: hosts,
    get config() {
      return current;
    },
    reload(next) {
      const plan = planReload(current, next);
      const applied = new Set(plan.applied);
      for (const live of Object.values(LIVE_SETTINGS)) live.reload(parts, plan.effective, applied);
      current = plan.effective;
      return { applied: plan.applied, needsRestart: plan.needsRestart };
    },
    shutdown(graceMs = parts.gateway.shutdownGraceMs) {
      shuttingDown ??= drainThenClose(app, runtime, graceMs, stopWork, close);
      return shuttingDown;
    },
    close,
  };
}

/**
 * What each resource holds open, closed in the reverse order of creation (as fastify's `onClose` hooks): each closer
 * is added as its resource is created, so that a start that fails half-way closes exactly what it opened. A closer that
 * throws ends the run with its error.
 */
class Closers {
  private readonly list: Array<() => unknown> = [];

  add(close: () => unknown): void {
    this.list.push(close);
  }

  async run(): Promise<void> {
    for (let i = this.list.length - 1; i >= 0; i--) await (this.list[i] as () => unknown)();
  }
}

/** The running parts a reload changes. */
interface LiveParts {
  runtime: TaskRuntime;
  bridge: MrtrBridge;
  edgeOptions: EdgeOptions;
  routes: EdgeEndpoint[];
  /** Each upstream's retention cap (`retentionCapOf`), by name. */
  caps: ReadonlyMap<string, number | undefined>;
  /** The gateway's own. */
  gateway: { shutdownGraceMs: number };
}

/**
 * One running part's live settings: `from` reads them from a configuration where the part is built; `reload` reads
 * them from the effective configuration and `apply` hands them to the running part (`applied`: the keys that changed).
 */
function liveSetting<S>(from: (c: Readonly<GatewayConfig>) => S, apply: (p: LiveParts, settings: S, applied: ReadonlySet<string>) => void) {
  return { from, reload: (p: LiveParts, c: Readonly<GatewayConfig>, applied: ReadonlySet<string>) => apply(p, from(c), applied) };
}

/**
 * What a reload may change, declared once per running part (docs/operations.md § Reload): each `from` is used both
 * where its part is built and at every reload. The keys they read are the keys the schema marks live
 * (`test/config/reload.test.ts`).
 */
export const LIVE_SETTINGS = {
  runtime: liveSetting(
    (c): LiveTaskLimits => ({
      defaultTtlMs: c.tasks.defaultTtlMs,
      defaultPollIntervalMs: c.tasks.pollIntervalMs,
      maxActivePerPrincipal: c.tasks.maxActivePerPrincipal,
      maxResultBytes: c.tasks.maxResultBytes,
      pollBurst: c.tasks.pollBurst,
      inputBounds: inputBoundsOf(c),
      pollAdvice: { enabled: c.tasks.adaptivePolling, minMs: c.tasks.minPollIntervalMs, maxMs: c.tasks.maxPollIntervalMs },
    }),
    (p, s) => p.runtime.setLimits(s),
  ),
  bridge: liveSetting(
    (c): LiveHoldLimits => ({
      holdMs: c.input.holdMs,
      maxHeld: c.input.maxHeldCalls,
      maxHeldPerPrincipal: c.input.maxHeldCallsPerPrincipal,
      inputBounds: inputBoundsOf(c),
    }),
    (p, s) => p.bridge.setLimits(s),
  ),
  edge: liveSetting(
    (c): Pick<EdgeOptions, 'maxListenStreams' | 'maxListenStreamsPerPrincipal'> => ({
      maxListenStreams: c.server.maxListenStreams,
      maxListenStreamsPerPrincipal: principalShare(c.server.maxListenStreams, c.server.maxListenStreamsPerPrincipal),
    }),
    (p, s) => Object.assign(p.edgeOptions, s),
  ),
  sessions: liveSetting(
    ({ sessions: c }): SessionBounds => ({
      max: c.maxPerUpstream,
      maxPerPrincipal: principalShare(c.maxPerUpstream, c.maxPerPrincipal),
      idleMs: c.idleMs,
      warmIdle: c.warmIdle,
      acquireTimeoutMs: c.acquireTimeoutMs,
    }),
    (p, s) => p.routes.forEach((r) => r.route.upstream.setSessionBounds?.(s)),
  ),
  gateway: liveSetting(
    (c): LiveParts['gateway'] => ({ shutdownGraceMs: c.server.shutdownGraceMs }),
    (p, s) => Object.assign(p.gateway, s),
  ),
  upstreams: liveSetting((c) => c.upstreams.map(routeSettingsOf), applyRouteSettings),
};

/** An upstream's live settings: its tool rules and static headers (by its name, which a reload keeps). */
function routeSettingsOf(u: UpstreamConfig): Pick<UpstreamConfig, 'name' | 'tools' | 'headers'> {
  return { name: u.name, tools: u.tools, headers: u.headers };
}

/** Hands each upstream's changed rules and headers to every part that reads them; the next lookup or request sees them. */
function applyRouteSettings(p: LiveParts, list: Array<ReturnType<typeof routeSettingsOf>>, applied: ReadonlySet<string>): void {
  for (const r of p.routes) {
    const s = list.find((x) => x.name === r.route.name);
    if (!s) continue;
    // The rules every copy of the route reads (the edge's, the runtime's).
    if (applied.has(`upstreams.${s.name}.tools`)) replaceRules(r.route, rulesOf(s.tools, p.caps.get(s.name)));
    if (applied.has(`upstreams.${s.name}.headers`)) {
      replaceHeaders(r.route, s.headers);
      r.route.upstream.useStaticHeaders?.(s.headers);
      r.modernUpstream.useStaticHeaders?.(s.headers);
      r.availability.useHeaders(s.headers);
    }
  }
}

/** The MRTR bridge: held calls, their rounds and their relays between instances. */
function bridgeOf(
  config: Readonly<GatewayConfig>,
  d: { stateKey: Uint8Array; bus: InstanceBus; sealer: Sealer; audit: AuditLog; metrics: GatewayMetrics | undefined; log: LayerLogger },
): MrtrBridge {
  return new MrtrBridge({
    stateKey: d.stateKey,
    ...LIVE_SETTINGS.bridge.from(config),
    gatherMs: 25,
    bus: d.bus,
    sealer: d.sealer,
    audit: d.audit,
    metrics: d.metrics?.tasks ?? NO_TASK_METRICS,
    log: d.log,
  });
}

/** The task runtime (not started). */
function runtimeOf(
  config: Readonly<GatewayConfig>,
  d: { store: TaskStore; bus: InstanceBus; sealer: Sealer; bridge: MrtrBridge; audit: AuditLog; log: LayerLogger },
): TaskRuntime {
  return new TaskRuntime({
    store: d.store,
    bus: d.bus,
    sealer: d.sealer,
    leaseMs: config.tasks.leaseMs,
    bridge: d.bridge,
    maxTtlMs: config.tasks.maxTtlMs,
    ...LIVE_SETTINGS.runtime.from(config),
    toolSupportTtlMs: 60_000,
    audit: d.audit,
    log: d.log,
  });
}

/** The bounds of the input rounds of one call (the runtime's and the bridge's). */
function inputBoundsOf(config: Readonly<GatewayConfig>): { maxRequestsPerRound: number; maxRounds: number } {
  return { maxRequestsPerRound: config.input.maxRequestsPerRound, maxRounds: config.input.maxRoundsPerTask };
}

/** One configured upstream as the edge mounts it, at its own URL or its stdio host's (whose process availability asks first). */
function endpointOf(u: UpstreamConfig, auth: Authenticator, at: string | StdioHost, config: Readonly<GatewayConfig>, log: LayerLogger): EdgeEndpoint {
  const url = typeof at === 'string' ? at : at.url;
  const live = routeSettingsOf(u);
  return {
    path: u.path,
    auth,
    modernUpstream: new ModernUpstreamClient({
      name: u.name,
      url,
      staticHeaders: { ...live.headers },
      timeoutMs: u.timeoutMs,
      ackTimeoutMs: u.probeTimeoutMs,
      clientInfo: { name: GATEWAY_NAME, version: GATEWAY_VERSION },
      log,
    }),
    availability: upstreamAvailability({
      name: u.name,
      url,
      headers: live.headers,
      era: u.era,
      probeTimeoutMs: Math.min(u.probeTimeoutMs, u.timeoutMs),
      log,
      ...(typeof at === 'string' ? {} : { process: at }),
    }),
    route: {
      name: u.name,
      url,
      staticHeaders: { ...live.headers },
      timeoutMs: u.timeoutMs,
      cache: { ttlMs: u.cache.ttlMs, scope: u.cache.scope },
      rules: rulesOf(live.tools, retentionCapOf(u)),
      upstream: upstreamClient(u, url, live.headers, config, log),
    },
  };
}

/** The federated paths as the edge builds them (docs/federation.md): each path's members, as each shows itself. */
function federationPlans(config: Readonly<GatewayConfig>): FederationPlan[] {
  return [...federatedPaths(config)].map(([path, members]) => {
    const shown = config.endpoints.find((x) => x.path === path);
    const serverInfo = { name: shown?.name ?? GATEWAY_NAME, version: shown?.version ?? GATEWAY_VERSION };
    return {
      path,
      identity: { serverInfo, instructions: shown?.instructions },
      members: members.map((u) => ({ ...u.expose, name: u.name, access: u.access })),
    };
  });
}

/** The edge's options from the configuration and the parts built for it. */
function edgeOptionsOf(
  config: Readonly<GatewayConfig>,
  d: {
    root: Logger | undefined;
    audit: AuditLog;
    store: TaskStore;
    bridge: MrtrBridge;
    runtime: TaskRuntime;
    routes: EdgeEndpoint[];
    metrics: GatewayMetrics | undefined;
  },
): EdgeOptions {
  return {
    logger: false,
    ...(d.root ? { loggerInstance: d.root } : {}),
    audit: d.audit,
    bodyLimitBytes: config.server.bodyLimitBytes,
    headersTimeoutMs: config.server.headersTimeoutMs,
    requestTimeoutMs: config.server.requestTimeoutMs,
    idleTimeoutMs: config.server.idleTimeoutMs,
    maxJsonDepth: config.server.maxJsonDepth,
    hostPolicy: hostPolicy(config.server.host, config.server.allowedHosts, config.server.allowedOrigins),
    keepAliveMs: config.server.keepAliveMs,
    ...LIVE_SETTINGS.edge.from(config),
    clientSessions: {
      max: config.clientSessions.max,
      idleMs: config.clientSessions.idleMs,
      maxPerPrincipal: principalShare(config.clientSessions.max, config.clientSessions.maxPerPrincipal),
      maxStreamsPerPrincipal: principalShare(config.clientSessions.max, config.clientSessions.maxStreamsPerPrincipal ?? config.clientSessions.maxPerPrincipal),
    },
    sessionStore: d.store,
    bridge: d.bridge,
    runtime: d.runtime,
    endpoints: d.routes,
    passthrough: passthroughOf(config.upstreams),
    version: GATEWAY_VERSION,
    ...(d.metrics ? { metrics: d.metrics, metricsPath: config.server.metrics.path } : {}),
    readiness: { store: d.store, cacheMs: config.server.readiness.storeCacheMs, upstreamCheckMs: config.server.readiness.upstreamCheckMs },
  };
}

/** The non-MCP paths of the HTTP upstreams (docs/deployment.md §OAuth and other paths); stdio upstreams have none. */
function passthroughOf(upstreams: GatewayConfig['upstreams']): PassthroughUpstream[] {
  const root = wellKnownRootOwner(upstreams);
  // A path several upstreams share has no one authorization server: its members' OAuth documents are not passed through.
  const federated = federatedPaths({ upstreams });
  return upstreams.flatMap((u, i) =>
    u.url === undefined || federated.has(u.path)
      ? []
      : [{ name: u.name, mountPath: u.path, url: u.url, timeoutMs: u.timeoutMs, paths: u.passthrough.paths, wellKnownRoot: root === i }],
  );
}

/** The operator log as configured (`false`/absent: none): a pino logger the edge and the layers share. */
function rootLogger(logger: GatewayDeps['logger']): Logger | undefined {
  if (!logger) return undefined;
  // Fastify's logger options are pino's plus a destination (`stream` or `file`), given to pino apart.
  const { stream, file, ...opts } = (logger === true ? {} : logger) as { stream?: DestinationStream; file?: string };
  return pino({ level: 'info', ...opts }, stream ?? (file ? pino.destination(file) : undefined) ?? pino.destination(1));
}

/**
 * An upstream's tool rules as task policies. With a retention cap (`retentionCapOf`) every rule (and a last catch-all,
 * for tools no rule names) caps retention at it, so that no task of that upstream, owned or proxied, outlives it.
 */
function rulesOf(tools: UpstreamConfig['tools'], cap: number | undefined): Array<readonly [RegExp, TaskPolicy]> {
  const rules = Object.entries(tools).map(([pattern, rule]) => [globToRegExp(pattern), rule as TaskPolicy] as const);
  if (cap === undefined) return rules;
  const capped = rules.map(([re, p]) => [re, { ...p, maxTtlMs: Math.min(p.maxTtlMs ?? cap, cap) }] as const);
  return [...capped, [/^/, { task: DEFAULT_TASK_MODE, maxTtlMs: cap }] as const];
}

/** The cap on an upstream's task retention: `auth.maxTtlMs` with `auth.mode: none`; fixed at start, as authentication is. */
function retentionCapOf(u: UpstreamConfig): number | undefined {
  return u.auth.mode === 'none' ? u.auth.maxTtlMs : undefined;
}

/** The authenticator of one upstream (its keys read and checked now: a bad one is a configuration error). */
function authenticatorOf(u: GatewayConfig['upstreams'][number], key: Uint8Array, env: NodeJS.ProcessEnv, audit: AuditLog): Authenticator {
  const auth = u.auth;
  let jwtSecret: Uint8Array | undefined;
  if (auth.mode === 'jwt' && auth.secretEnv !== undefined) {
    const v = env[auth.secretEnv];
    // RFC 7518 §3.2: an HS256 key has at least as many bits as the hash.
    if (!v || v.length < 32) throw new ConfigError([`upstreams.${u.name}.auth.secretEnv: set ${auth.secretEnv} to the JWT secret (at least 32 characters)`]);
    jwtSecret = Buffer.from(v, 'utf8');
  }
  try {
    return new Authenticator(auth, { key, upstream: u.name, audit, ...(jwtSecret ? { jwtSecret } : {}) });
  } catch (e) {
    throw new ConfigError([`upstreams.${u.name}.auth: ${e instanceof Error ? e.message : String(e)}`]);
  }
}

/** The client of one configured upstream: the one place that picks an implementation of the upstream seam. */
function upstreamClient(u: UpstreamConfig, url: string, headers: Record<string, string>, config: Readonly<GatewayConfig>, log: LayerLogger): UpstreamClient {
  return new LegacyUpstreamClient(u.name, {
    url,
    staticHeaders: { ...headers },
    timeoutMs: u.timeoutMs,
    ...LIVE_SETTINGS.sessions.from(config),
    scope: u.sessions.scope,
    anonymousScope: u.sessions.anonymousScope,
    clientInfo: { name: GATEWAY_NAME, version: GATEWAY_VERSION },
    log,
  });
}

/**
 * The hosts of the stdio upstreams (docs/deployment.md § stdio upstreams), started. A command that cannot start is
 * no error here: the host logs it, retries with backoff and answers 503 meanwhile, so the other upstreams still serve.
 */
async function startStdioHosts(config: Readonly<GatewayConfig>, log: LayerLogger): Promise<Map<string, StdioHost>> {
  const hosts = new Map<string, StdioHost>();
  try {
    for (const u of config.upstreams) {
      if (!u.command) continue;
      const opts = { name: u.name, command: u.command, env: u.env, ...(u.cwd ? { cwd: u.cwd } : {}), restart: u.restart, era: u.era, log };
      hosts.set(u.name, await StdioHost.start(opts));
    }
  } catch (e) {
    await Promise.all([...hosts.values()].map((h) => h.close()));
    throw e;
  }
  return hosts;
}

/** The deployment's shared secret: `secret.value`, else the variable `secret.env` names. */
function secretOf(config: Readonly<GatewayConfig>, env: NodeJS.ProcessEnv): Uint8Array | undefined {
  const v = config.secret.value ?? env[config.secret.env];
  if (!v) return undefined;
  if (v.length < 32) throw new ConfigError([`secret: ${config.secret.env} must be at least 32 characters`]);
  return Buffer.from(v, 'utf8');
}
