/** The configuration's named defaults, referenced by the schema (and so docs/configuration.md) and `--help`. */
export const DEFAULTS = {
  host: '127.0.0.1',
  port: 8080,
  path: '/mcp',
  bodyLimitBytes: 1_048_576,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 72_000,
  maxJsonDepth: 128,
  shutdownGraceMs: 10_000,
  cacheTtlMs: 0,
  cacheScope: 'private' as const,
  upstreamTimeoutMs: 300_000,
  era: 'auto' as const,
  probeTimeoutMs: 10_000,
  inputHoldMs: 300_000,
  maxHeldCalls: 10_000,
  maxHeldCallsPerPrincipal: 100,
  maxInputRequestsPerRound: 32,
  maxInputRoundsPerTask: 100,
  maxSessionsPerUpstream: 256,
  /**
   * A principal's share of a bound shared by every caller (upstream sessions, listen streams, legacy face sessions and
   * streams) when its `maxPerPrincipal`-style key is absent: the bound divided by this, at least 1.
   */
  principalShareDivisor: 4,
  /** Callers with credentials get one pooled upstream session set each (docs/security.md §Upstream session isolation). */
  sessionScope: 'principal' as const,
  /**
   * Callers without credentials share one pool of upstream sessions, each checked out by one call at a time and reset
   * on handover (docs/security.md §Upstream session isolation); `request` is the opt-in for servers with other per-session state.
   */
  anonymousSessionScope: 'shared' as const,
  /** Idle upstream sessions kept ready per pool key that has demand, so that no call waits for an `initialize`. */
  warmIdleSessions: 2,
  /** How long a call waits for an upstream session when the session bounds are full, before 503. */
  sessionAcquireTimeoutMs: 5_000,
  sessionIdleMs: 600_000,
  maxListenStreams: 1_000,
  keepAliveMs: 15_000,
  taskTtlMs: 3_600_000,
  maxTaskTtlMs: 86_400_000,
  pollIntervalMs: 1_000,
  adaptivePolling: true,
  minPollIntervalMs: 100,
  maxPollIntervalMs: 30_000,
  maxActiveTasksPerPrincipal: 100,
  maxTaskResultBytes: 4_194_304,
  pollBurst: 10,
  maxTasks: 10_000,
  maxClientSessions: 1_000,
  clientSessionIdleMs: 1_800_000,
  leaseMs: 15_000,
  redisUrlEnv: 'MCP_GATEWAY_REDIS_URL',
  redisKeyPrefix: 'mcpgw:',
  redisCommandTimeoutMs: 2_000,
  redisConnectTimeoutMs: 2_000,
  postgresUrlEnv: 'MCP_GATEWAY_POSTGRES_URL',
  postgresSchema: 'mcpgw',
  postgresCommandTimeoutMs: 2_000,
  postgresConnectTimeoutMs: 2_000,
  postgresPoolSize: 10,
  secretEnv: 'MCP_GATEWAY_STATE_SECRET',
  authMode: 'bearer' as const,
  noAuthMaxTtlMs: 600_000,
  jwtClockToleranceSec: 30,
  /** First wait before an stdio upstream's process is restarted. */
  restartInitialDelayMs: 100,
  restartMaxDelayMs: 30_000,
  /** An stdio process up this long counts as healthy: the next restart waits `restartInitialDelayMs` again. */
  restartResetAfterMs: 60_000,
  metricsEnabled: true,
  metricsPath: '/metrics',
  /** Prom-client's process metrics (CPU, memory, event loop lag, GC) beside the gateway's own. */
  metricsDefault: true,
  /** Distinct tool names a task metric labels per upstream before the rest count as `other` (bounded cardinality). */
  metricsMaxToolLabels: 50,
  /** How long `/readyz` reuses one answer of the store (frequent probes cost one ping a second at most). */
  readinessStoreCacheMs: 1_000,
  /** Least time between two re-probes of an upstream that `/readyz` asks for. */
  readinessUpstreamCheckMs: 10_000,
} as const;

/**
 * A principal's share of a shared bound: `explicit` when set, else the bound divided by
 * `DEFAULTS.principalShareDivisor`, at least 1 (docs/security.md §Limits).
 */
export function principalShare(bound: number, explicit?: number): number {
  return explicit ?? Math.max(1, Math.floor(bound / DEFAULTS.principalShareDivisor));
}
