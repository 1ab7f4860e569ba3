/** The gateway's configuration: a strict zod schema with named defaults (a typo is an error naming its key). */
import { isIP } from 'node:net';
import { z } from 'zod';
import { compile as compileJmesPath } from '@jmespath-community/jmespath';
import { GATEWAY_OWN_PATHS, globCovers, OAUTH_WELL_KNOWN } from '../translate/index.js';

/** Named defaults, referenced by the schema (and so docs/configuration.md) and `--help`. */
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

/** `server.metrics` when the file says nothing. */
const METRICS_DEFAULTS = {
  enabled: DEFAULTS.metricsEnabled,
  path: DEFAULTS.metricsPath,
  defaultMetrics: DEFAULTS.metricsDefault,
  maxToolLabels: DEFAULTS.metricsMaxToolLabels,
};

/** `server.readiness` when the file says nothing. */
const READINESS_DEFAULTS = { storeCacheMs: DEFAULTS.readinessStoreCacheMs, upstreamCheckMs: DEFAULTS.readinessUpstreamCheckMs };

/**
 * The JSON Schema keyword (an annotation, in the generated `schema/gateway.schema.json`) saying what applies when a key
 * without a fixed default is absent; docs/configuration.md shows it in the default column.
 */
export const WHEN_ABSENT = 'x-when-absent';

/** A key's reference text: its meaning, and what applies when it is absent (for a key without a fixed default). */
function doc(description: string, whenAbsent: string): { description: string; [WHEN_ABSENT]: string } {
  return { description, [WHEN_ABSENT]: whenAbsent };
}

/** Task modes per tool: how the gateway treats a tool's long calls (docs/tasks.md, "Wrapped tools"). */
export const TASK_MODES = ['native', 'off', 'auto', 'always', 'required', 'job'] as const;

/** The task statuses a job rule maps its server's states onto (a job cannot ask for input). */
export const JOB_STATUSES = ['working', 'completed', 'failed', 'cancelled'] as const;

/** A JMESPath expression (jmespath.org), checked by compiling it. */
const jmesPath = (what: string) =>
  z
    .string()
    .min(1)
    .superRefine((expr, ctx) => {
      try {
        compileJmesPath(expr);
      } catch (e) {
        ctx.addIssue({ code: 'custom', message: `not a JMESPath expression (${e instanceof Error ? e.message : String(e)})` });
      }
    })
    .describe(what);

/** One call of a job's own tool: its name and arguments, where the string `{{id}}` stands for the job's handle. */
const JobCallSchema = z.strictObject({
  tool: z.string().min(1).describe('the tool to call'),
  arguments: z
    .record(z.string(), z.unknown())
    .default({})
    .describe('its arguments; a value `"{{id}}"` is the handle as the start tool returned it (a number stays a number), `{{id}}` inside a longer string its text'),
});

/**
 * How a `task: job` rule reads a hand-rolled async job (docs/jobs.md): where the start tool's result holds the handle,
 * which tool reports the state and how its states map onto task statuses, where the outcome comes from, which tool
 * cancels. Paths are JMESPath over the tool's result, whose `structuredContent` is the first text content parsed as
 * JSON when the result has none.
 */
export const JobSchema = z.strictObject({
  id: jmesPath("where the handle is in the start tool's result, e.g. `structuredContent.jobId`"),
  status: z.strictObject({
    tool: z.string().min(1).describe('the tool that reports the job\'s state'),
    arguments: JobCallSchema.shape.arguments,
    state: jmesPath("where the state is in the status tool's result"),
    states: z
      .record(z.string(), z.enum(JOB_STATUSES))
      .refine((m) => Object.keys(m).length > 0, 'name at least one state')
      .describe('each state the server reports → `working`, `completed`, `failed` or `cancelled`; a state not named here fails the task (GW_JOB_UNKNOWN_STATE)'),
    message: jmesPath('where a progress message is')
      .optional()
      .meta(doc("where a progress message is (→ the task's statusMessage, and progress notifications to a client that takes no task)", 'unset: no message')),
    error: jmesPath("where a failed job's message is")
      .optional()
      .meta(doc("where a failed job's message is", 'unset: `message`, else the text of the status result')),
  }),
  result: JobCallSchema.optional().describe("the tool whose result is the job's outcome once it completed (unset: the status tool's final result is)"),
  cancel: JobCallSchema.optional().describe('the tool that stops the job (unset: a cancelled task stops being polled and the upstream job runs on)'),
  hide: z.array(z.string().min(1)).default([]).describe('tools not listed to clients and refused when called directly (the job\'s plumbing)'),
});

const positiveInt = z.number().int().positive();

/**
 * Which protocol eras an upstream speaks: `auto` asks it (server/discover for 2026-07-28, initialize for
 * 2025-11-25); the others pin the answer and skip the probe. `dual` speaks both.
 */
export const UPSTREAM_ERAS = ['auto', 'modern', 'legacy', 'dual'] as const;

/** One per-tool rule. */
export const ToolRuleSchema = z
  .strictObject({
    task: z
      .enum(TASK_MODES)
      .default('native')
      .describe(
        '`native` (the upstream\'s own tasks, passed through or translated), `off` (never a task), `auto` (a task when the call runs longer than `afterMs`; needs `afterMs`), `always` or `required` (docs/tasks.md), `job` (a hand-rolled async job driven by the server\'s own tools; needs `job`, docs/jobs.md)',
      ),
    afterMs: z
      .number()
      .int()
      .nonnegative()
      .optional()
      .meta(
        doc(
          '`auto`: how long a call runs before the answer is a task; `native`, `always`, `required`: the window in which a first question or result is answered within the creating call; not with `off`',
          'unset (required with `auto`)',
        ),
      ),
    ttlMs: positiveInt.optional().meta(doc("retention of the tool's gateway-owned tasks when the client asks for none (at most `maxTtlMs`)", 'unset: `tasks.defaultTtlMs`')),
    maxTtlMs: positiveInt
      .optional()
      .meta(doc("upper bound on the tool's task retention, a client's requested `ttl` included (never above `tasks.maxTtlMs`)", 'unset: `tasks.maxTtlMs`')),
    pollIntervalMs: positiveInt.optional().meta(doc("the `pollIntervalMs` suggested for the tool's tasks", 'unset: learned, or `tasks.pollIntervalMs`')),
    timeoutMs: positiveInt.optional().meta(doc('budget of a wrapped call', "unset: the upstream's `timeoutMs`")),
    /**
     * When the instance running a wrapped call is lost, another instance starts the call again instead of failing the
     * task. Only for idempotent tools (`idempotentHint: true`): the upstream may see the call twice.
     */
    retryOnLoss: z
      .boolean()
      .optional()
      .meta(doc('another instance runs a wrapped call again when its instance is lost; only for tools whose `idempotentHint` is true', 'unset (`false`)')),
    job: JobSchema.optional().meta(doc('with `task: job`: how the job is read and driven (docs/jobs.md)', 'unset (required with `job`)')),
  })
  .superRefine((rule, ctx) => {
    if (rule.task === 'auto' && rule.afterMs === undefined) {
      ctx.addIssue({ code: 'custom', path: ['afterMs'], message: 'task "auto" needs afterMs (milliseconds to wait before answering with a task)' });
    }
    // On native, afterMs is the window in which an upstream task's first question or result is answered within the
    // creating call; off never makes a task, so a window means nothing there.
    if (rule.task === 'off' && rule.afterMs !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['afterMs'], message: 'afterMs applies to task "native", "auto", "always" and "required", not "off"' });
    }
    if (rule.task === 'job' && rule.job === undefined) {
      ctx.addIssue({ code: 'custom', path: ['job'], message: 'task "job" needs job (how to read the handle and drive the job: id, status)' });
    }
    if (rule.task !== 'job' && rule.job !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['job'], message: 'job applies to task "job" only' });
    }
    // A job's start tool is not idempotent: it is called once, and a lost instance's job is polled again, never restarted.
    if (rule.task === 'job' && rule.retryOnLoss !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['retryOnLoss'], message: 'retryOnLoss does not apply to task "job": another instance goes on polling the same job, the start tool is never called again' });
    }
    if (rule.task === 'job' && rule.afterMs !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['afterMs'], message: 'afterMs does not apply to task "job" (the start tool\'s handle makes the task at once)' });
    }
    if (rule.ttlMs !== undefined && rule.maxTtlMs !== undefined && rule.ttlMs > rule.maxTtlMs) {
      ctx.addIssue({ code: 'custom', path: ['ttlMs'], message: 'ttlMs must not exceed maxTtlMs' });
    }
  });

/** A URL as an error message may show it: any password in it replaced by `***`. */
export function redactedUrl(value: string): string {
  try {
    const u = new URL(value);
    if (!u.password) return value;
    u.password = '***';
    return u.href;
  } catch {
    return value.replace(/\/\/([^@/]*?):[^@/]*@/, '//$1:***@');
  }
}

/** An HTTP(S) URL; a wrong one is named in the error (a URL without a scheme, `localhost:3000/mcp`, included). */
const httpUrl = z.url({ protocol: /^https?$/, error: (issue) => `an http:// or https:// URL, got ${JSON.stringify(redactedUrl(String(issue.input)))}` });

/**
 * Why `value` is not a Redis URL the store takes (`redis://…` or `rediss://…`), or `undefined` when it is one. Shared by
 * `store.url` and the variable `store.urlEnv` names, which only building reads.
 */
export function redisUrlProblem(value: string): string | undefined {
  const shown = JSON.stringify(redactedUrl(value));
  if (!/^rediss?:\/\//i.test(value)) return `a redis:// or rediss:// URL, got ${shown}`;
  if (!URL.canParse(value)) return `not a valid URL: ${shown}`;
  return undefined;
}

const headerName = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Algorithms a JWT may be signed with: asymmetric ones for a JWKS or a public key, HMAC ones for a shared secret. */
export const JWT_ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;
/** HMAC algorithms, allowed only with `secretEnv` (never with a public key: no algorithm confusion, RFC 8725 §3.1). */
export const JWT_HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'] as const;

/** An IPv4/IPv6 address or a CIDR block such as `10.0.0.0/8`. */
function isAddressOrCidr(v: string): boolean {
  const [addr, bits, ...rest] = v.split('/');
  const family = isIP(addr ?? '');
  if (family === 0 || rest.length > 0) return false;
  if (bits === undefined) return true;
  if (!/^\d{1,3}$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

/**
 * Who the caller is, per upstream (docs/security.md §Authentication). The principal it yields owns tasks, request
 * states and sessions; it is always a keyed hash (HMAC with the deployment secret), never a credential.
 */
const authMode = <M extends string>(mode: M) =>
  z.literal(mode).describe('who the callers are: `bearer`, `none`, `header` or `jwt` (docs/security.md § Authentication)');
export const AuthSchema = z.discriminatedUnion('mode', [
  /**
   * The default, as before: the principal is a keyed hash of the `Authorization` header (anonymous without one); the
   * header is forwarded upstream unchanged, and the upstream decides whether the token is any good.
   */
  z.strictObject({ mode: authMode('bearer') }),
  /**
   * No identity: every caller is one anonymous principal, so a task id is the only secret and task retention is
   * capped at `maxTtlMs` (a warning is logged at start). Credentials still reach the upstream.
   */
  z.strictObject({
    mode: authMode('none'),
    maxTtlMs: positiveInt.default(DEFAULTS.noAuthMaxTtlMs).describe("`none` only: cap on every task's retention (the task id is the only secret)"),
  }),
  /**
   * A header set by a trusted fronting proxy names the caller (e.g. `x-forwarded-user`); honoured only from
   * `trustedProxies` (addresses or CIDR blocks). Any other source, or a missing header, is refused with 401.
   */
  z.strictObject({
    mode: authMode('header'),
    header: z
      .string()
      .regex(headerName, 'an HTTP header name')
      .transform((h) => h.toLowerCase())
      .describe('`header` only: the identity header a fronting proxy sets'),
    trustedProxies: z
      .array(z.string().refine(isAddressOrCidr, 'an IP address or CIDR block such as 10.0.0.0/8'))
      .min(1)
      .describe('`header` only: the addresses or CIDR blocks the fronting proxy connects from (others get 401)'),
  }),
  /**
   * Bearer JWTs verified at the edge (RFC 7519, RFC 8725) against exactly one key source: `jwksUrl`, `publicKey` (PEM
   * or a JWK as JSON) or `secretEnv` (the environment variable holding an HMAC secret). The principal is `iss` + `sub`.
   */
  z
    .strictObject({
      mode: authMode('jwt'),
      jwksUrl: httpUrl
        .optional()
        .meta(doc('`jwt` only: the JWKS URL', 'one of the three key sources required')),
      publicKey: z
        .string()
        .min(1)
        .optional()
        .meta(doc('`jwt` only: a static public key (PEM, or a JWK as JSON)', 'one of the three key sources required')),
      secretEnv: z
        .string()
        .min(1)
        .optional()
        .meta(doc('`jwt` only: the variable holding an HMAC secret (at least 32 characters)', 'one of the three key sources required')),
      issuer: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).describe('`jwt` only: accepted `iss` (a string or a list)'),
      audience: z.union([z.string().min(1), z.array(z.string().min(1)).min(1)]).describe('`jwt` only: accepted `aud` (a string or a list)'),
      /** Leeway for `exp` and `nbf` against clock skew between the issuer and the gateway. */
      clockToleranceSec: z.number().int().nonnegative().default(DEFAULTS.jwtClockToleranceSec).describe('`jwt` only: leeway on `exp` and `nbf`'),
      /** Allowed `alg` values; default: the asymmetric ones (HMAC ones with `secretEnv`). `none` is never allowed. */
      algorithms: z
        .array(z.enum([...JWT_ASYMMETRIC_ALGORITHMS, ...JWT_HMAC_ALGORITHMS]))
        .min(1)
        .optional()
        .meta(doc('`jwt` only: the `alg` allow-list; `none` is never accepted, `HS*` only with `secretEnv`', 'asymmetric ones (`HS*` with `secretEnv`)')),
      /** Forward the token upstream (false: the upstream never sees it). */
      forward: z.boolean().default(true).describe('`jwt` only: forward the token upstream'),
    })
    .superRefine((a, ctx) => {
      const sources = [a.jwksUrl, a.publicKey, a.secretEnv].filter((s) => s !== undefined).length;
      if (sources !== 1) ctx.addIssue({ code: 'custom', path: ['jwksUrl'], message: 'exactly one of jwksUrl, publicKey or secretEnv' });
      const hmac = (a.algorithms ?? []).filter((x) => (JWT_HMAC_ALGORITHMS as readonly string[]).includes(x));
      if (a.secretEnv !== undefined && a.algorithms && hmac.length !== a.algorithms.length) {
        ctx.addIssue({ code: 'custom', path: ['algorithms'], message: 'with secretEnv only HS256, HS384 and HS512' });
      }
      if (a.secretEnv === undefined && hmac.length > 0) {
        ctx.addIssue({ code: 'custom', path: ['algorithms'], message: 'HS* algorithms need secretEnv (never a public key)' });
      }
    }),
]);
/**
 * A principal's share of a shared bound: `explicit` when set, else the bound divided by
 * `DEFAULTS.principalShareDivisor`, at least 1 (docs/security.md §Limits).
 */
export function principalShare(bound: number, explicit?: number): number {
  return explicit ?? Math.max(1, Math.floor(bound / DEFAULTS.principalShareDivisor));
}

/**
 * Who shares an upstream (legacy) session: `principal` — one pooled session set per principal, never shared across
 * principals; `request` — a fresh session per modern request, ended (DELETE) when the request and whatever it left
 * running (an MRTR round, a task) end.
 */
export const SESSION_SCOPES = ['principal', 'request'] as const;
/** Who shares an upstream session among callers without credentials: a fresh one per request, or one shared by all. */
export const ANONYMOUS_SESSION_SCOPES = ['request', 'shared'] as const;

/**
 * One extra non-MCP path passed through to an upstream's origin on the same path: exact (`/oauth/token`) or a prefix
 * ending in `/*` (`/oauth/*`: `/oauth` and everything under it). No `.`/`..` segments, query or fragment.
 */
const passthroughPath = z
  .string()
  .regex(/^(?:\/[A-Za-z0-9._~!$&'()+,;=:@%-]+)+(?:\/\*)?$/, 'an absolute path such as /oauth/token, or a prefix such as /oauth/*')
  .refine((p) => !p.split('/').some((seg) => seg === '.' || seg === '..'), 'no "." or ".." segments');

/** An exact path or a prefix (`/x/*` covers `/x` and `/x/…`) as the overlap check reads it. */
interface PathClaim {
  path: string;
  prefix: boolean;
}

function claimOf(p: string): PathClaim {
  return p.endsWith('/*') ? { path: p.slice(0, -2), prefix: true } : { path: p, prefix: false };
}

/** Whether a prefix claim covers `path` (the prefix itself, or under it). */
function under(prefix: string, path: string): boolean {
  return path === prefix || path.startsWith(prefix === '/' ? '/' : `${prefix}/`);
}

/** Whether two claims could answer the same request path. */
function overlaps(a: PathClaim, b: PathClaim): boolean {
  if (a.prefix && under(a.path, b.path)) return true;
  if (b.prefix && under(b.path, a.path)) return true;
  return a.path === b.path;
}

/** One upstream MCP server mounted on a path of the gateway. */
export const UpstreamSchema = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only')
    .describe("the upstream's name (letters, digits, `.`, `_`, `-`) in logs and `/healthz`"),
  path: z
    .string()
    .regex(/^\/[A-Za-z0-9._~\/-]*$/, 'an absolute URL path such as /mcp')
    .default(DEFAULTS.path)
    .describe('where clients reach it on the gateway'),
  /** An HTTP upstream's MCP endpoint. Exactly one of `url` and `command`. */
  url: httpUrl
    .optional()
    .meta(doc("an HTTP upstream's Streamable HTTP endpoint (`http://` or `https://`)", 'one of `url`, `command`')),
  /**
   * An stdio upstream: the program and its arguments (no shell), spawned and supervised by each gateway instance
   * (docs/deployment.md § stdio upstreams). Exactly one of `url` and `command`.
   */
  command: z
    .array(z.string().min(1))
    .min(1)
    .optional()
    .meta(
      doc('an stdio upstream: program and arguments (no shell), e.g. `["node", "server.js"]`, run by each instance (docs/deployment.md § stdio upstreams)', 'one of `url`, `command`'),
    ),
  /**
   * Environment of an stdio upstream's process, set over the few variables it inherits from the gateway (PATH, HOME,
   * USER, LANG, TZ, TMPDIR and the like); nothing else of the gateway's environment (its secrets) reaches the child.
   */
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), z.string())
    .default({})
    .describe(
      'stdio only: variables set for the process over the few it inherits (`PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`, `LANG`, `LC_ALL`, `LC_CTYPE`, `TZ`, `TMPDIR`/`TEMP`/`TMP`, and on Windows `SYSTEMROOT`, `COMSPEC`, `PATHEXT`, `USERPROFILE`, `APPDATA`, `LOCALAPPDATA`); nothing else of the gateway\'s environment reaches it',
    ),
  /** Working directory of an stdio upstream's process (default: the gateway's). */
  cwd: z.string().min(1).optional().meta(doc("stdio only: the process's working directory", "the gateway's")),
  /**
   * Restart of an stdio upstream's process after it exits: waits from `initialDelayMs`, doubled after each failed
   * start up to `maxDelayMs`, back to `initialDelayMs` once a process stayed up `resetAfterMs`.
   */
  restart: z
    .strictObject({
      initialDelayMs: positiveInt
        .default(DEFAULTS.restartInitialDelayMs)
        .describe('stdio only: after the process exits it is started again after this long, each failed start doubling the wait'),
      maxDelayMs: positiveInt.default(DEFAULTS.restartMaxDelayMs).describe('stdio only: the longest wait between restarts'),
      resetAfterMs: positiveInt
        .default(DEFAULTS.restartResetAfterMs)
        .describe('stdio only: a process that stayed up this long starts the backoff over at `initialDelayMs`'),
    })
    .refine((r) => r.initialDelayMs <= r.maxDelayMs, { path: ['initialDelayMs'], message: 'initialDelayMs must not exceed maxDelayMs' })
    .default({ initialDelayMs: DEFAULTS.restartInitialDelayMs, maxDelayMs: DEFAULTS.restartMaxDelayMs, resetAfterMs: DEFAULTS.restartResetAfterMs }),
  headers: z
    .record(z.string().regex(headerName, 'an HTTP header name'), z.string())
    .default({})
    .describe('static headers sent upstream (e.g. an API key)'),
  timeoutMs: positiveInt.default(DEFAULTS.upstreamTimeoutMs).describe('budget of one upstream call, including time waiting for input'),
  era: z
    .enum(UPSTREAM_ERAS)
    .default(DEFAULTS.era)
    .describe(
      'which eras the upstream speaks: `auto` probes it (`server/discover` for 2026-07-28; `initialize` for 2025-11-25 when it does not answer that, or, for one that does, when the first 2025-11-25 client arrives, marked as 2025-11-25 in its headers and `_meta`); `modern`, `legacy` or `dual` pin the answer and skip the probe. A client whose era the upstream speaks is passed through untouched',
    ),
  /** Bound on each era-probe question (and so on the first request's wait for an upstream that hangs). */
  probeTimeoutMs: positiveInt
    .default(DEFAULTS.probeTimeoutMs)
    .describe("bound on each probe question, and so on the first request's wait for an upstream that hangs"),
  cache: z
    .strictObject({
      ttlMs: z.number().int().nonnegative().default(DEFAULTS.cacheTtlMs).describe('cache hint (time to live) on cacheable modern results'),
      scope: z.enum(['public', 'private']).default(DEFAULTS.cacheScope).describe('cache hint scope: `private` or `public`'),
    })
    .default({ ttlMs: DEFAULTS.cacheTtlMs, scope: DEFAULTS.cacheScope }),
  tools: z
    .record(z.string().min(1), ToolRuleSchema)
    .default({ '*': { task: 'native' } })
    .describe(
      'per-tool rules, by exact tool name or glob (first match wins: a rule an earlier glob covers, such as one after `"*"`, is a configuration error naming both); each rule has the keys below',
    ),
  /**
   * Non-MCP HTTP paths passed through to this upstream (docs/deployment.md §OAuth and other paths). Its OAuth discovery documents
   * pass always; `paths` adds others (e.g. the token endpoint of an authorization server it hosts). `wellKnownRoot`:
   * whether the root well-known documents (`/.well-known/oauth-protected-resource`, …) go to this upstream; default:
   * when it is the only HTTP upstream. At most one upstream may take them.
   */
  passthrough: z
    .strictObject({
      paths: z
        .array(passthroughPath)
        .default([])
        .describe(
          "non-MCP paths passed through to the upstream's origin on the same path: exact (`/oauth/token`) or a prefix ending in `/*` (`/oauth/*`: `/oauth` and all under it); may not overlap an MCP endpoint, `/healthz`, `/readyz`, `/metrics`, the OAuth documents or another upstream's paths (docs/deployment.md § OAuth and other paths)",
        ),
      wellKnownRoot: z
        .boolean()
        .optional()
        .meta(
          doc(
            'whether the root OAuth documents (`/.well-known/oauth-protected-resource`, `…/oauth-authorization-server`, `…/openid-configuration`) go to this upstream; at most one upstream may take them',
            'only HTTP upstream: `true`',
          ),
        ),
    })
    .default({ paths: [] }),
  /** How callers are identified (default `bearer`: a keyed hash of the Authorization header, as before). */
  auth: AuthSchema.default({ mode: DEFAULTS.authMode }),
  /**
   * Upstream session isolation (legacy upstreams: session-scoped state such as cached roots lives in the session).
   * `scope` applies to callers with credentials; `anonymousScope` to callers without, who cannot be told apart.
   */
  sessions: z
    .strictObject({
      scope: z
        .enum(SESSION_SCOPES)
        .default(DEFAULTS.sessionScope)
        .describe(
          'who shares legacy upstream sessions among callers with credentials: `principal` (a pool per principal, one call per session at a time) or `request` (a fresh one per request, ended with DELETE)',
        ),
      anonymousScope: z
        .enum(ANONYMOUS_SESSION_SCOPES)
        .default(DEFAULTS.anonymousSessionScope)
        .describe(
          'the same for callers without credentials: `shared` (one pool for all of them, reset on handover), or `request` (a fresh session per request: for servers with other per-session state)',
        ),
    })
    .default({ scope: DEFAULTS.sessionScope, anonymousScope: DEFAULTS.anonymousSessionScope }),
}).refine((u) => (u.url === undefined) !== (u.command === undefined), {
  message: 'give exactly one of url (an HTTP upstream) and command (an stdio upstream)',
  path: ['url'],
});

const storeKind = <K extends string>(kind: K) =>
  z.literal(kind).describe('task state: `memory` (one instance) or `redis` (several; docs/deployment.md § Several instances behind a load balancer (Redis))');

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
              '`Host` allow-list (DNS-rebinding protection; `*.example.com` and `*` allowed), checked on every path; `/healthz` and `/readyz` also admit a loopback peer naming a loopback host (a container HEALTHCHECK)',
              'loopback names when bound to loopback, else unchecked',
            ),
          ),
        /** Origin allow-list; requests without Origin are allowed. Defaults to loopback origins. */
        allowedOrigins: z
          .array(z.string().min(1))
          .optional()
          .meta(
            doc('`Origin` allow-list (names or full origins); a request without `Origin` passes', 'loopback names when bound to loopback, else unchecked'),
          ),
        keepAliveMs: positiveInt.default(DEFAULTS.keepAliveMs).describe('SSE keep-alive comments'),
        maxListenStreams: positiveInt.default(DEFAULTS.maxListenStreams).describe('open `subscriptions/listen` streams'),
        /** Open `subscriptions/listen` streams per principal (default: a quarter of maxListenStreams). */
        maxListenStreamsPerPrincipal: positiveInt.optional().meta(doc("one principal's share of them (503 past it)", 'a quarter of `maxListenStreams`')),
        /**
         * On SIGTERM/SIGINT, how long requests in flight and gateway-owned tasks running here may take to finish
         * while new requests are refused (503); then running tasks are handed to another instance (Redis) or end
         * failed (memory), and the process exits.
         */
        shutdownGraceMs: positiveInt
          .default(DEFAULTS.shutdownGraceMs)
          .describe(
            'on SIGTERM/SIGINT, how long requests in flight and wrapped tasks running here may take to finish before they are stopped (docs/operations.md § Shutdown)',
          ),
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
              .regex(/^\/[A-Za-z0-9._~\/-]*$/, 'an absolute URL path such as /metrics')
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
      ])
      .default({ kind: 'memory' })
      .describe('Where task state, MRTR rounds and legacy sessions live: `memory` (one instance) or `redis` (several instances sharing one Redis).'),
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
        defaultTtlMs: positiveInt.default(DEFAULTS.taskTtlMs).describe('retention of a task whose rule sets no `ttlMs`'),
        maxTtlMs: positiveInt
          .default(DEFAULTS.maxTaskTtlMs)
          .describe("upper bound on any task's retention (an upstream's unlimited `ttl` is reported as this)"),
        /**
         * pollIntervalMs suggested to clients for a tool whose durations are not learned yet (or always, with
         * `adaptivePolling: false`); a rule's own `pollIntervalMs` wins.
         */
        pollIntervalMs: positiveInt
          .default(DEFAULTS.pollIntervalMs)
          .describe('`pollIntervalMs` suggested for a tool whose durations are not learned yet (every task, with `adaptivePolling: false`)'),
        /**
         * Suggest each read's pollIntervalMs from the durations of the tool's tasks seen to end (the next poll where the
         * delay it adds and the polls still needed cost least, a poll worth half the interval suggested unlearned, of delay), between
         * `minPollIntervalMs` and `maxPollIntervalMs`.
         * A proxied task is never told to poll faster than its upstream suggests.
         */
        adaptivePolling: z.boolean().default(DEFAULTS.adaptivePolling).describe("suggest each read's `pollIntervalMs` from the tool's learned durations"),
        minPollIntervalMs: positiveInt.default(DEFAULTS.minPollIntervalMs).describe('shortest learned suggestion (the bounds never exclude `pollIntervalMs`)'),
        maxPollIntervalMs: positiveInt
          .default(DEFAULTS.maxPollIntervalMs)
          .describe('longest learned suggestion (a task that outlived every duration seen backs off up to this)'),
        /**
         * Live tasks one principal may have; a call that would become one more is refused (429) before the upstream
         * sees it.
         */
        maxActivePerPrincipal: positiveInt
          .default(DEFAULTS.maxActiveTasksPerPrincipal)
          .describe('live tasks per principal (429 beyond, before the upstream sees the call)'),
        /**
         * Largest outcome (result or error, as JSON) a task keeps; a larger one is stored as a failure naming the size
         * (never whole). With the memory store, `maxTasks` times this bounds what finished tasks may hold.
         */
        maxResultBytes: positiveInt
          .default(DEFAULTS.maxTaskResultBytes)
          .describe('largest task outcome kept (JSON bytes); a larger one is stored as a failure naming the size'),
        /**
         * Status polls (tasks/get) of one unchanged task a principal may send within one of the task's pollIntervalMs;
         * one more is refused with 429 and Retry-After (a change to the task starts a fresh count). Counted in the
         * store, so across instances. A little slack for jitter.
         */
        pollBurst: positiveInt
          .default(DEFAULTS.pollBurst)
          .describe('`tasks/get` polls of one unchanged task per its `pollIntervalMs` (and at least per second), per principal (429 with `Retry-After` beyond)'),
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
        holdMs: positiveInt.default(DEFAULTS.inputHoldMs).describe('how long a held upstream call waits for the MRTR retry'),
        maxHeldCalls: positiveInt.default(DEFAULTS.maxHeldCalls).describe('calls held for input at once (503 with `Retry-After` beyond)'),
        /**
         * Calls held for one principal's retries at once (503 with Retry-After beyond), so that one principal cannot
         * take every hold; a principal at it is refused before the upstream sees a call that may ask for input.
         */
        maxHeldCallsPerPrincipal: positiveInt
          .default(DEFAULTS.maxHeldCallsPerPrincipal)
          .describe("calls held for one principal's MRTR retries at once (503 with `Retry-After` beyond)"),
        maxRequestsPerRound: positiveInt
          .default(DEFAULTS.maxInputRequestsPerRound)
          .describe('input requests one upstream call may have outstanding at once (the call is cancelled beyond)'),
        maxRoundsPerTask: positiveInt.default(DEFAULTS.maxInputRoundsPerTask).describe('rounds of input one call or task may ask (the call is cancelled beyond)'),
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
        maxPerUpstream: positiveInt.default(DEFAULTS.maxSessionsPerUpstream).describe('legacy upstream sessions per upstream'),
        idleMs: positiveInt.default(DEFAULTS.sessionIdleMs).describe('idle upstream sessions are closed after this'),
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
          ),
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
            'idle upstream sessions kept ready per pool key (principal and declared input kinds) that has demand, within the bounds; `0` opens a session only when a call needs one',
          ),
        /**
         * How long a call waits for a session to come free when the bounds (or its principal's share) are full, before
         * it is refused with 503; nothing is sent upstream meanwhile.
         */
        acquireTimeoutMs: positiveInt
          .default(DEFAULTS.sessionAcquireTimeoutMs)
          .describe(
            "how long a call waits for an upstream session to come free when the bounds (or its principal's share) are full, before 503; nothing is sent upstream meanwhile (a wrapped task's background call waits within its own budget, `upstreams[].timeoutMs`)",
          ),
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
            "a legacy-face session without requests for this long ends (its client gets 404 and initializes again); likewise the gateway's binding of a session passed through to a legacy upstream (docs/security.md § Principal binding)",
          ),
        /**
         * Sessions one principal may hold (default: a quarter of max): past it the principal's own least recently used
         * idle session ends first (its client re-initializes on 404), then `initialize` gets 503.
         */
        maxPerPrincipal: positiveInt
          .optional()
          .meta(doc("one principal's share: its own least recently used idle session ends to make room, else 503", 'a quarter of `max`')),
        maxStreamsPerPrincipal: positiveInt
          .optional()
          .meta(doc("one principal's open GET streams on the legacy face", "the principal's share of sessions")),
      })
      .default({ max: DEFAULTS.maxClientSessions, idleMs: DEFAULTS.clientSessionIdleMs })
      .describe('Sessions the gateway mints for 2025-11-25 clients (the legacy face).'),
    upstreams: z
      .array(UpstreamSchema)
      .default([])
      .describe('The MCP servers behind the gateway, each on its own path (none: the bundled demo upstream at `/mcp`).'),
  })
  .superRefine((cfg, ctx) => {
    const paths = new Map<string, number>();
    cfg.upstreams.forEach((u, i) => {
      const prev = paths.get(u.path);
      if (prev !== undefined) ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'path'], message: `path ${u.path} is already used by upstreams.${prev}` });
      paths.set(u.path, i);
    });
    // The operations paths are the gateway's own: an upstream mounted there would never be reached.
    const own = new Set(['/healthz', '/readyz', ...(cfg.server.metrics.enabled ? [cfg.server.metrics.path] : [])]);
    cfg.upstreams.forEach((u, i) => {
      if (own.has(u.path)) ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'path'], message: `path ${u.path} is the gateway's own (health, readiness or metrics)` });
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
      if (share !== undefined && share > bound) ctx.addIssue({ code: 'custom', path, message: `a principal's share (${share}) cannot exceed the bound it is a share of (${bound})` });
    }
  });

/**
 * Tool rules are first-match in the order written: a rule after one whose glob covers every name it matches (most
 * often anything after `"*"`) can never apply. That is a mistake, not a wish, so it is refused, naming both rules.
 */
function checkRuleOrder(tools: Record<string, unknown>, at: Array<string | number>, ctx: z.RefinementCtx): void {
  const patterns = Object.keys(tools);
  patterns.forEach((later, j) => {
    const earlier = patterns.slice(0, j).find((p) => globCovers(p, later));
    if (earlier === undefined) return;
    ctx.addIssue({
      code: 'custom',
      path: [...at, later],
      message: `rule "${later}" can never apply: the earlier rule "${earlier}" matches every tool it names (rules are first-match; put "${later}" above "${earlier}")`,
    });
  });
}

/**
 * Passed-through paths must not shadow what the gateway answers itself (MCP endpoints, /healthz, /readyz, /metrics,
 * the OAuth well-known documents it passes on its own), nor each other (two upstreams on one path: which one answers
 * would be an accident); at most one upstream takes the root well-known documents.
 */
function checkPassthrough(upstreams: ReadonlyArray<z.infer<typeof UpstreamSchema>>, ctx: z.RefinementCtx, ownPaths: readonly string[]): void {
  const reserved: Array<[PathClaim, string]> = [
    ...upstreams.map((u, i): [PathClaim, string] => [{ path: u.path, prefix: false }, `the MCP endpoint of upstreams.${i}`]),
    ...[...new Set([...GATEWAY_OWN_PATHS, ...ownPaths])].map((p): [PathClaim, string] => [{ path: p, prefix: false }, `the gateway's ${p}`]),
    ...OAUTH_WELL_KNOWN.map((p): [PathClaim, string] => [{ path: p, prefix: true }, `the OAuth discovery documents (${p}…), passed through already`]),
  ];
  const seen: Array<[PathClaim, string]> = [];
  upstreams.forEach((u, i) => {
    // Only an HTTP upstream has an origin to pass paths to (a `command` one speaks over stdio).
    if (u.url === undefined && (u.passthrough.paths.length > 0 || u.passthrough.wellKnownRoot === true)) {
      ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'passthrough'], message: 'passthrough needs an upstream with a url' });
    }
    u.passthrough.paths.forEach((p, j) => {
      const at = ['upstreams', i, 'passthrough', 'paths', j];
      const claim = claimOf(p);
      // The path-appended OpenID form (`<path>/.well-known/openid-configuration`) is one of the documents too.
      const appended = OAUTH_WELL_KNOWN.some((w) => claim.path.includes(w) || (claim.prefix && w.startsWith(`${claim.path}/`)));
      const hit = reserved.find(([r]) => overlaps(claim, r)) ?? (appended ? [claim, 'the OAuth discovery documents, passed through already'] : undefined);
      if (hit) ctx.addIssue({ code: 'custom', path: at, message: `${p} overlaps ${hit[1]}` });
      const other = seen.find(([c]) => overlaps(claim, c));
      if (other) ctx.addIssue({ code: 'custom', path: at, message: `${p} overlaps ${other[1]}` });
      seen.push([claim, `upstreams.${i}.passthrough.paths.${j} (${p})`]);
    });
  });
  // The root documents: claimed explicitly, by an upstream mounted at / (its path-suffixed documents are the root
  // ones), or by the only HTTP upstream.
  const http = upstreams.map((u, i) => [u, i] as const).filter(([u]) => u.url !== undefined);
  const claimants = http.filter(([u]) => u.passthrough.wellKnownRoot === true || (u.path === '/' && u.passthrough.wellKnownRoot !== false));
  if (claimants.length > 1) {
    for (const [, i] of claimants.slice(1)) {
      ctx.addIssue({ code: 'custom', path: ['upstreams', i, 'passthrough', 'wellKnownRoot'], message: `the root well-known documents are already upstreams.${claimants[0]?.[1]}'s` });
    }
  }
}

/** Which upstream (index) answers the root OAuth well-known documents, if any (docs/deployment.md §OAuth and other paths). */
export function wellKnownRootOwner(upstreams: ReadonlyArray<Pick<z.infer<typeof UpstreamSchema>, 'url' | 'path' | 'passthrough'>>): number | undefined {
  const http = upstreams.map((u, i) => [u, i] as const).filter(([u]) => u.url !== undefined);
  const claimant = http.find(([u]) => u.passthrough.wellKnownRoot === true || (u.path === '/' && u.passthrough.wellKnownRoot !== false));
  if (claimant) return claimant[1];
  const only = http.length === 1 ? http[0] : undefined;
  return only && only[0].passthrough.wellKnownRoot !== false ? only[1] : undefined;
}

/** The validated configuration. */
export type GatewayConfig = z.infer<typeof ConfigSchema>;
/** One validated upstream. */
export type UpstreamConfig = z.infer<typeof UpstreamSchema>;
/** One upstream's validated authentication settings. */
export type AuthConfig = z.infer<typeof AuthSchema>;
/** One validated tool rule. */
export type ToolRule = z.infer<typeof ToolRuleSchema>;
