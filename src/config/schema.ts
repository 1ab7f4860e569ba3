/** The gateway's configuration: a strict zod schema with named defaults (a typo is an error naming its key). */
import { z } from 'zod';
import { DEFAULTS } from './defaults.js';
import { checkFederation, EndpointSchema } from './federation.js';
import { doc, live, POSTGRES_SCHEMA_NAME, positiveInt, postgresUrlProblem, redisUrlProblem } from './schema-parts.js';
import { checkRuleOrder } from './tool-rules.js';
import { checkPassthrough, UpstreamSchema } from './upstream-schema.js';

export { DEFAULTS, principalShare } from './defaults.js';
export {
  AccessRuleSchema,
  EndpointSchema,
  ExposeSchema,
  federatedPaths,
  LIST_CACHES,
  MCP_NAME,
  NAMESPACE,
  shapesItsNames,
  sharedPaths,
  type AccessRule,
  type EndpointConfig,
  type ExposeConfig,
} from './federation.js';
export { postgresUrlProblem, redactedUrl, redisUrlProblem, WHEN_ABSENT } from './schema-parts.js';
export { JOB_STATUSES, JobSchema, TASK_MODES, ToolRuleSchema, type ToolRule } from './tool-rules.js';
export {
  ANONYMOUS_SESSION_SCOPES,
  AuthSchema,
  JWT_ASYMMETRIC_ALGORITHMS,
  JWT_HMAC_ALGORITHMS,
  SESSION_SCOPES,
  UPSTREAM_ERAS,
  oauthCapable,
  UpstreamSchema,
  wellKnownRootOwner,
  type AuthConfig,
  type UpstreamConfig,
} from './upstream-schema.js';

/** `server.metrics` when the file says nothing. */
const METRICS_DEFAULTS = {
  enabled: DEFAULTS.metricsEnabled,
  path: DEFAULTS.metricsPath,
  defaultMetrics: DEFAULTS.metricsDefault,
  maxToolLabels: DEFAULTS.metricsMaxToolLabels,
};

/** `server.readiness` when the file says nothing. */
const READINESS_DEFAULTS = { storeCacheMs: DEFAULTS.readinessStoreCacheMs, upstreamCheckMs: DEFAULTS.readinessUpstreamCheckMs };

const storeKind = <K extends string>(kind: K) =>
  z
    .literal(kind)
    .describe('task state: `memory` (one instance), `redis` (several) or `postgres` (several, durable); docs/several-instances.md § Choosing a store');

/** The whole configuration file. */
export const ConfigSchema = z
  .strictObject({
    server: z
      .strictObject({
        host: z
          .string()
          .min(1)
          .default(DEFAULTS.host)
          .describe('listen address (`--host`); `0.0.0.0` or `::` to listen on every interface (docs/deployment.md)'),
        port: z.number().int().min(0).max(65535).default(DEFAULTS.port).describe('listen port (`--port`; `0` picks a free one)'),
        bodyLimitBytes: positiveInt.default(DEFAULTS.bodyLimitBytes).describe('largest request body (413 beyond)'),
        /** Bound on receiving a request's headers (slow headers are cut off with 408). */
        headersTimeoutMs: positiveInt
          .default(DEFAULTS.headersTimeoutMs)
          .describe("bound on receiving a request's headers (408 beyond; at most `requestTimeoutMs`)"),
        /**
         * Bound on receiving a whole request, headers and body (a body sent byte by byte is cut off with 408). Only
         * the request: a response may stream for as long as it needs (listen streams, long tool calls).
         */
        requestTimeoutMs: positiveInt
          .default(DEFAULTS.requestTimeoutMs)
          .describe('bound on receiving a whole request, body included (408 beyond); responses are not bounded by it'),
        /**
         * How long a keep-alive connection may sit idle between requests before the gateway closes it; longer than the
         * 60 s idle timeout of common load balancers, so that the gateway never closes a connection one is reusing.
         */
        idleTimeoutMs: positiveInt.default(DEFAULTS.idleTimeoutMs).describe('an idle keep-alive connection is closed after this long'),
        /**
         * Deepest nesting of objects and arrays accepted in a request body (deeper: 400 before parsing). Generous for
         * tool arguments; at most 1000, far below the depth at which walking a value exhausts the stack.
         */
        maxJsonDepth: positiveInt
          .max(1000)
          .default(DEFAULTS.maxJsonDepth)
          .describe('deepest nesting of objects and arrays in a request body (400 beyond; at most 1000)'),
        /** Host header allow-list (DNS-rebinding protection); defaults to loopback names when bound to loopback. */
        allowedHosts: z
          .array(z.string().min(1))
          .optional()
          .meta(
            doc(
              '`Host` allow-list (DNS-rebinding protection; `*.example.com` and `*` allowed), checked on every path; `/healthz` and `/readyz` also ' +
                'admit a loopback peer naming a loopback host (a container HEALTHCHECK)',
              'loopback names when bound to loopback, else unchecked',
            ),
          ),
        /** Origin allow-list; requests without Origin are allowed. Defaults to loopback origins. */
        allowedOrigins: z
          .array(z.string().min(1))
          .optional()
          .meta(doc('`Origin` allow-list (names or full origins); a request without `Origin` passes', 'loopback names when bound to loopback, else unchecked')),
        keepAliveMs: positiveInt.default(DEFAULTS.keepAliveMs).describe('SSE keep-alive comments'),
        maxListenStreams: positiveInt.default(DEFAULTS.maxListenStreams).describe('open `subscriptions/listen` streams').apply(live),
        /** Open `subscriptions/listen` streams per principal (default: a quarter of maxListenStreams). */
        maxListenStreamsPerPrincipal: positiveInt
          .optional()
          .meta(doc("one principal's share of them (503 past it)", 'a quarter of `maxListenStreams`'))
          .apply(live),
        /**
         * On SIGTERM/SIGINT, how long requests in flight and gateway-owned tasks running here may take to finish
         * while new requests are refused (503); then running tasks are handed to another instance (Redis) or end
         * failed (memory), and the process exits.
         */
        shutdownGraceMs: positiveInt
          .default(DEFAULTS.shutdownGraceMs)
          .describe(
            'on SIGTERM/SIGINT, how long requests in flight and wrapped tasks running here may take to finish before they are stopped ' +
              '(docs/operations.md § Shutdown)',
          )
          .apply(live),
        /**
         * Prometheus metrics (docs/operations.md §Metrics), unauthenticated like `/healthz` and `/readyz`: keep the
         * port off the public network or filter the path at the proxy in front.
         */
        metrics: z
          .strictObject({
            enabled: z.boolean().default(DEFAULTS.metricsEnabled).describe('serve Prometheus metrics (docs/operations.md § Metrics)'),
            /** The path the text exposition is served at (must not be an upstream's path). */
            path: z
              .string()
              .regex(/^\/[A-Za-z0-9._~/-]*$/, 'an absolute URL path such as /metrics')
              .default(DEFAULTS.metricsPath)
              .describe("where they are served; must not be an upstream's path"),
            defaultMetrics: z
              .boolean()
              .default(DEFAULTS.metricsDefault)
              .describe("also prom-client's process metrics (CPU, memory, event loop lag, GC), prefixed `mcp_gateway_`"),
            maxToolLabels: positiveInt
              .max(10_000)
              .default(DEFAULTS.metricsMaxToolLabels)
              .describe('distinct tool names the task metrics label per upstream; later ones count as `other`'),
          })
          .default(METRICS_DEFAULTS),
        /** What `/readyz` may cost (docs/operations.md §Health). */
        readiness: z
          .strictObject({
            storeCacheMs: z
              .number()
              .int()
              .nonnegative()
              .default(DEFAULTS.readinessStoreCacheMs)
              .describe('one store ping answers every `/readyz` for this long (docs/operations.md § Health)'),
            upstreamCheckMs: z
              .number()
              .int()
              .nonnegative()
              .default(DEFAULTS.readinessUpstreamCheckMs)
              .describe('least time between two re-probes of an upstream that `/readyz` asks for'),
          })
          .default(READINESS_DEFAULTS),
      })
      .refine((s) => s.headersTimeoutMs <= s.requestTimeoutMs, {
        path: ['headersTimeoutMs'],
        message: 'headersTimeoutMs must not exceed requestTimeoutMs (the headers are part of the request)',
      })
      .default({
        host: DEFAULTS.host,
        port: DEFAULTS.port,
        bodyLimitBytes: DEFAULTS.bodyLimitBytes,
        headersTimeoutMs: DEFAULTS.headersTimeoutMs,
        requestTimeoutMs: DEFAULTS.requestTimeoutMs,
        idleTimeoutMs: DEFAULTS.idleTimeoutMs,
        maxJsonDepth: DEFAULTS.maxJsonDepth,
        keepAliveMs: DEFAULTS.keepAliveMs,
        maxListenStreams: DEFAULTS.maxListenStreams,
        shutdownGraceMs: DEFAULTS.shutdownGraceMs,
        metrics: METRICS_DEFAULTS,
        readiness: READINESS_DEFAULTS,
      })
      .describe('The HTTP listener: address, request limits, Host and Origin checks, listen streams, shutdown, metrics and readiness.'),
    store: z
      .discriminatedUnion('kind', [
        z.strictObject({ kind: storeKind('memory') }),
        z.strictObject({
          kind: storeKind('redis'),
          /** The Redis URL (`redis://…`, `rediss://…`); better given through `urlEnv`, so that a password stays out of files. */
          url: z
            .string()
            .superRefine((v, ctx) => {
              const problem = redisUrlProblem(v);
              if (problem) ctx.addIssue({ code: 'custom', message: problem });
            })
            .optional()
            .meta({
              ...doc(
                'Redis: the URL (`redis://…`, `rediss://…` for TLS); better given through `urlEnv`, so that a password stays out of files',
                'unset: read from `urlEnv`',
              ),
              // The refinement names the value in its error; editors get the same rule as a pattern.
              pattern: '^[Rr][Ee][Dd][Ii][Ss][Ss]?://',
            }),
          /** The environment variable holding the URL when `url` is absent. */
          urlEnv: z.string().min(1).default(DEFAULTS.redisUrlEnv).describe('Redis: the environment variable holding the URL when `url` is absent'),
          /** Prefix of every key and channel (several deployments can share one Redis). */
          keyPrefix: z.string().min(1).default(DEFAULTS.redisKeyPrefix).describe('Redis: prefix of every key and channel'),
          /** Bound on each Redis command: a Redis outage is an error after this long, never a hang. */
          commandTimeoutMs: positiveInt
            .default(DEFAULTS.redisCommandTimeoutMs)
            .describe('Redis: bound on each command (an outage is an error after this long, never a hang)'),
          connectTimeoutMs: positiveInt.default(DEFAULTS.redisConnectTimeoutMs).describe('Redis: bound on connecting'),
        }),
        z.strictObject({
          kind: storeKind('postgres'),
          /** The Postgres URL; better given through `urlEnv`, so that a password stays out of files. */
          url: z
            .string()
            .superRefine((v, ctx) => {
              const problem = postgresUrlProblem(v);
              if (problem) ctx.addIssue({ code: 'custom', message: problem });
            })
            .optional()
            .meta({
              ...doc(
                'Postgres: the URL (`postgres://user@host:5432/db`, `?sslmode=…` honoured); better given through `urlEnv` (a password stays out of files)',
                'unset: read from `urlEnv`',
              ),
              pattern: '^[Pp][Oo][Ss][Tt][Gg][Rr][Ee][Ss]([Qq][Ll])?://',
            }),
          urlEnv: z.string().min(1).default(DEFAULTS.postgresUrlEnv).describe('Postgres: the environment variable holding the URL when `url` is absent'),
          /** The schema holding the gateway's tables (several deployments can share one database). */
          schema: z
            .string()
            .regex(POSTGRES_SCHEMA_NAME, 'a lower-case identifier of at most 40 characters (letters, digits, _)')
            .default(DEFAULTS.postgresSchema)
            .describe("Postgres: the schema holding the gateway's tables (several deployments can share one database)"),
          /** `auto`: the gateway migrates the schema at start; `off`: it refuses to start on an older schema (`--migrate` first). */
          migrate: z
            .enum(['auto', 'off'])
            .default('auto')
            .describe('Postgres: `auto` migrates the schema at start (safe with several instances); `off` refuses an older schema: run `--migrate` first'),
          poolSize: positiveInt.default(DEFAULTS.postgresPoolSize).describe('Postgres: most connections of each instance (plus one for LISTEN)'),
          commandTimeoutMs: positiveInt
            .default(DEFAULTS.postgresCommandTimeoutMs)
            .describe('Postgres: bound on each statement (an outage is an error after this long, never a hang)'),
          connectTimeoutMs: positiveInt.default(DEFAULTS.postgresConnectTimeoutMs).describe('Postgres: bound on connecting'),
          /** TLS to the database; absent: as the URL's `sslmode` says. */
          tls: z
            .strictObject({
              mode: z
                .enum(['disable', 'require', 'verify'])
                .describe('`require`: encrypted, certificate not checked; `verify`: checked against `caFile` (else the system CAs) and the host name'),
              caFile: z.string().min(1).optional().meta(doc('PEM file of the CA that signed the server certificate', 'unset: the system CAs')),
              certFile: z.string().min(1).optional().meta(doc('PEM client certificate, for servers that authenticate clients by certificate', 'unset: none')),
              keyFile: z.string().min(1).optional().meta(doc('PEM key of `certFile`', 'unset: none')),
            })
            .optional()
            .meta(doc('Postgres: TLS to the database', "unset: as the URL's `sslmode` says")),
        }),
      ])
      .default({ kind: 'memory' })
      .describe(
        'Where task state, MRTR rounds and legacy sessions live: `memory` (one instance), `redis` (several instances) or `postgres` (several, durable).',
      ),
    /**
     * The shared secret of a deployment (HMAC key of principals and MRTR request states, key of sealed values): every instance must
     * hold the same one. Better given through the environment (`secretEnv`); required with a shared store.
     */
    secret: z
      .strictObject({
        value: z
          .string()
          .min(32, 'at least 32 characters')
          .optional()
          .meta(
            doc("the deployment's shared secret (at least 32 characters); required with Redis, the same on every instance", 'unset: read from `secret.env`'),
          ),
        env: z
          .string()
          .min(1)
          .default(DEFAULTS.secretEnv)
          .describe('the environment variable holding the secret when `value` is absent (unset with the memory store: random per process)'),
      })
      .default({ env: DEFAULTS.secretEnv })
      .describe("The deployment's shared secret: HMAC key of principals and MRTR request states, key of sealed values."),
    tasks: z
      .strictObject({
        defaultTtlMs: positiveInt.default(DEFAULTS.taskTtlMs).describe('retention of a task whose rule sets no `ttlMs`').apply(live),
        maxTtlMs: positiveInt
          .default(DEFAULTS.maxTaskTtlMs)
          .describe("upper bound on any task's retention (an upstream's unlimited `ttl` is reported as this)"),
        /**
         * pollIntervalMs suggested to clients for a tool whose durations are not learned yet (or always, with
         * `adaptivePolling: false`); a rule's own `pollIntervalMs` wins.
         */
        pollIntervalMs: positiveInt
          .default(DEFAULTS.pollIntervalMs)
          .describe('`pollIntervalMs` suggested for a tool whose durations are not learned yet (every task, with `adaptivePolling: false`)')
          .apply(live),
        /**
         * Suggest each read's pollIntervalMs from the durations of the tool's tasks seen to end (the next poll where the
         * delay it adds and the polls still needed cost least, a poll worth half the interval suggested unlearned, of delay), between
         * `minPollIntervalMs` and `maxPollIntervalMs`.
         * A proxied task is never told to poll faster than its upstream suggests.
         */
        adaptivePolling: z
          .boolean()
          .default(DEFAULTS.adaptivePolling)
          .describe("suggest each read's `pollIntervalMs` from the tool's learned durations")
          .apply(live),
        minPollIntervalMs: positiveInt
          .default(DEFAULTS.minPollIntervalMs)
          .describe('shortest learned suggestion (the bounds never exclude `pollIntervalMs`)')
          .apply(live),
        maxPollIntervalMs: positiveInt
          .default(DEFAULTS.maxPollIntervalMs)
          .describe('longest learned suggestion (a task that outlived every duration seen backs off up to this)')
          .apply(live),
        /**
         * Live tasks one principal may have; a call that would become one more is refused (429) before the upstream
         * sees it.
         */
        maxActivePerPrincipal: positiveInt
          .default(DEFAULTS.maxActiveTasksPerPrincipal)
          .describe('live tasks per principal (429 beyond, before the upstream sees the call)')
          .apply(live),
        /**
         * Largest outcome (result or error, as JSON) a task keeps; a larger one is stored as a failure naming the size
         * (never whole). With the memory store, `maxTasks` times this bounds what finished tasks may hold.
         */
        maxResultBytes: positiveInt
          .default(DEFAULTS.maxTaskResultBytes)
          .describe('largest task outcome kept (JSON bytes); a larger one is stored as a failure naming the size')
          .apply(live),
        /**
         * Status polls (tasks/get) of one unchanged task a principal may send within one of the task's pollIntervalMs;
         * one more is refused with 429 and Retry-After (a change to the task starts a fresh count). Counted in the
         * store, so across instances. A little slack for jitter.
         */
        pollBurst: positiveInt
          .default(DEFAULTS.pollBurst)
          .describe('`tasks/get` polls of one unchanged task per its `pollIntervalMs` (and at least per second), per principal (429 with `Retry-After` beyond)')
          .apply(live),
        maxTasks: positiveInt.default(DEFAULTS.maxTasks).describe('task records kept (memory store)'),
        /**
         * How long an instance's claim on running work (a wrapped call, following an upstream task) lasts unless
         * renewed (every third of it); after that another instance takes the work over.
         */
        leaseMs: positiveInt
          .default(DEFAULTS.leaseMs)
          .describe("an instance's claim on running work, renewed every third of it; another instance takes over after it lapses"),
      })
      .default({
        defaultTtlMs: DEFAULTS.taskTtlMs,
        maxTtlMs: DEFAULTS.maxTaskTtlMs,
        pollIntervalMs: DEFAULTS.pollIntervalMs,
        adaptivePolling: DEFAULTS.adaptivePolling,
        minPollIntervalMs: DEFAULTS.minPollIntervalMs,
        maxPollIntervalMs: DEFAULTS.maxPollIntervalMs,
        maxActivePerPrincipal: DEFAULTS.maxActiveTasksPerPrincipal,
        maxResultBytes: DEFAULTS.maxTaskResultBytes,
        pollBurst: DEFAULTS.pollBurst,
        maxTasks: DEFAULTS.maxTasks,
        leaseMs: DEFAULTS.leaseMs,
      })
      .describe('Tasks: retention, suggested polling, and the bounds on what they hold.'),
    input: z
      .strictObject({
        holdMs: positiveInt.default(DEFAULTS.inputHoldMs).describe('how long a held upstream call waits for the MRTR retry').apply(live),
        maxHeldCalls: positiveInt.default(DEFAULTS.maxHeldCalls).describe('calls held for input at once (503 with `Retry-After` beyond)').apply(live),
        /**
         * Calls held for one principal's retries at once (503 with Retry-After beyond), so that one principal cannot
         * take every hold; a principal at it is refused before the upstream sees a call that may ask for input.
         */
        maxHeldCallsPerPrincipal: positiveInt
          .default(DEFAULTS.maxHeldCallsPerPrincipal)
          .describe("calls held for one principal's MRTR retries at once (503 with `Retry-After` beyond)")
          .apply(live),
        maxRequestsPerRound: positiveInt
          .default(DEFAULTS.maxInputRequestsPerRound)
          .describe('input requests one upstream call may have outstanding at once (the call is cancelled beyond)')
          .apply(live),
        maxRoundsPerTask: positiveInt
          .default(DEFAULTS.maxInputRoundsPerTask)
          .describe('rounds of input one call or task may ask (the call is cancelled beyond)')
          .apply(live),
      })
      .default({
        holdMs: DEFAULTS.inputHoldMs,
        maxHeldCalls: DEFAULTS.maxHeldCalls,
        maxHeldCallsPerPrincipal: DEFAULTS.maxHeldCallsPerPrincipal,
        maxRequestsPerRound: DEFAULTS.maxInputRequestsPerRound,
        maxRoundsPerTask: DEFAULTS.maxInputRoundsPerTask,
      })
      .describe('Upstream calls held while the client answers their input requests (MRTR rounds), and the bounds on them.'),
    sessions: z
      .strictObject({
        maxPerUpstream: positiveInt.default(DEFAULTS.maxSessionsPerUpstream).describe('legacy upstream sessions per upstream').apply(live),
        idleMs: positiveInt.default(DEFAULTS.sessionIdleMs).describe('idle upstream sessions are closed after this').apply(live),
        /**
         * Upstream sessions one principal may hold on one upstream (default: a quarter of maxPerUpstream): past it the
         * principal's own idle sessions are closed first, then its requests get 503 until one of its sessions ends.
         */
        maxPerPrincipal: positiveInt
          .optional()
          .meta(
            doc(
              "one principal's share of them: its own idle session makes room, else the call waits (`acquireTimeoutMs`), then 503",
              'a quarter of `maxPerUpstream`',
            ),
          )
          .apply(live),
        /**
         * Idle upstream sessions kept ready per pool key (principal and declared input kinds) that has demand, within the
         * bounds; 0 opens sessions only when a call needs one.
         */
        warmIdle: z
          .number()
          .int()
          .min(0)
          .max(64)
          .default(DEFAULTS.warmIdleSessions)
          .describe(
            'idle upstream sessions kept ready per pool key (principal and declared input kinds) that has demand, within the bounds; `0` opens a ' +
              'session only when a call needs one',
          )
          .apply(live),
        /**
         * How long a call waits for a session to come free when the bounds (or its principal's share) are full, before
         * it is refused with 503; nothing is sent upstream meanwhile.
         */
        acquireTimeoutMs: positiveInt
          .default(DEFAULTS.sessionAcquireTimeoutMs)
          .describe(
            "how long a call waits for an upstream session to come free when the bounds (or its principal's share) are full, before 503; nothing is " +
              "sent upstream meanwhile (a wrapped task's background call waits within its own budget, `upstreams[].timeoutMs`)",
          )
          .apply(live),
      })
      .default({
        maxPerUpstream: DEFAULTS.maxSessionsPerUpstream,
        idleMs: DEFAULTS.sessionIdleMs,
        warmIdle: DEFAULTS.warmIdleSessions,
        acquireTimeoutMs: DEFAULTS.sessionAcquireTimeoutMs,
      })
      .describe('Sessions the gateway holds with 2025-11-25 upstreams.'),
    /**
     * Sessions the gateway itself mints for 2025-11-25 clients (the legacy face): of 2026-07-28-only upstreams, and of
     * any upstream whose tools a rule wraps.
     */
    clientSessions: z
      .strictObject({
        max: positiveInt
          .default(DEFAULTS.maxClientSessions)
          .describe(
            'sessions the legacy face holds for 2025-11-25 clients (of 2026-07-28-only upstreams, or of upstreams whose tools a rule wraps), per upstream',
          ),
        idleMs: positiveInt
          .default(DEFAULTS.clientSessionIdleMs)
          .describe(
            "a legacy-face session without requests for this long ends (its client gets 404 and initializes again); likewise the gateway's binding of a " +
              'session passed through to a legacy upstream (docs/security.md § Principal binding)',
          ),
        /**
         * Sessions one principal may hold (default: a quarter of max): past it the principal's own least recently used
         * idle session ends first (its client re-initializes on 404), then `initialize` gets 503.
         */
        maxPerPrincipal: positiveInt
          .optional()
          .meta(doc("one principal's share: its own least recently used idle session ends to make room, else 503", 'a quarter of `max`')),
        maxStreamsPerPrincipal: positiveInt.optional().meta(doc("one principal's open GET streams on the legacy face", "the principal's share of sessions")),
      })
      .default({ max: DEFAULTS.maxClientSessions, idleMs: DEFAULTS.clientSessionIdleMs })
      .describe('Sessions the gateway mints for 2025-11-25 clients (the legacy face).'),
    upstreams: z
      .array(UpstreamSchema)
      .default([])
      .describe(
        'The MCP servers behind the gateway, each on a path; several on one path form one federated endpoint, the union of their tools and prompts ' +
          '(none: the bundled demo upstream at `/mcp`).',
      ),
    endpoints: z
      .array(EndpointSchema)
      .default([])
      .describe("How federated paths introduce themselves to clients (`serverInfo`, instructions); each on an upstream's path, once."),
  })
  .superRefine((cfg, ctx) => {
    // Several upstreams on one path are one federated endpoint: their namespaces, authenticator and pass-through agree.
    checkFederation(cfg.upstreams, cfg.endpoints, ctx);
    // The operations paths are the gateway's own: an upstream mounted there would never be reached.
    const own = new Set(['/healthz', '/readyz', ...(cfg.server.metrics.enabled ? [cfg.server.metrics.path] : [])]);
    cfg.upstreams.forEach((u, i) => {
      if (own.has(u.path))
        ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'path'], message: `path ${u.path} is the gateway's own (health, readiness or metrics)` });
    });
    checkPassthrough(cfg.upstreams, ctx, cfg.server.metrics.enabled ? [cfg.server.metrics.path] : []);
    cfg.upstreams.forEach((u, i) => checkRuleOrder(u.tools, ['upstreams', i, 'tools'], ctx));
    const names = new Set<string>();
    cfg.upstreams.forEach((u, i) => {
      if (names.has(u.name)) ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'name'], message: `duplicate upstream name ${u.name}` });
      names.add(u.name);
    });
    // A share larger than the bound it is a share of is a typo, not a wish.
    const shares: Array<[string[], number | undefined, number]> = [
      [['sessions', 'maxPerPrincipal'], cfg.sessions.maxPerPrincipal, cfg.sessions.maxPerUpstream],
      [['server', 'maxListenStreamsPerPrincipal'], cfg.server.maxListenStreamsPerPrincipal, cfg.server.maxListenStreams],
      [['clientSessions', 'maxPerPrincipal'], cfg.clientSessions.maxPerPrincipal, cfg.clientSessions.max],
      [['clientSessions', 'maxStreamsPerPrincipal'], cfg.clientSessions.maxStreamsPerPrincipal, cfg.clientSessions.max],
    ];
    for (const [path, share, bound] of shares) {
      if (share !== undefined && share > bound)
        ctx.addIssue({ code: 'custom', path, message: `a principal's share (${share}) cannot exceed the bound it is a share of (${bound})` });
    }
  });

/** The validated configuration. */
export type GatewayConfig = z.infer<typeof ConfigSchema>;
