/** One upstream of the configuration (`upstreams[]`): where it is, how its callers authenticate, its sessions and passed-through paths. */
import { isIP } from 'node:net';
import { z } from 'zod';
import { DEFAULT_TASK_MODE, GATEWAY_OWN_PATHS, OAUTH_WELL_KNOWN } from '../translate/index.js';
import { DEFAULTS } from './defaults.js';
import { AccessRuleSchema, ExposeSchema, sharedPaths } from './federation.js';
import { doc, headerName, httpUrl, live, positiveInt } from './schema-parts.js';
import { ToolRuleSchema } from './tool-rules.js';

/**
 * Which protocol eras an upstream speaks: `auto` asks it (server/discover for 2026-07-28, initialize for
 * 2025-11-25); the others pin the answer and skip the probe. `dual` speaks both.
 */
export const UPSTREAM_ERAS = ['auto', 'modern', 'legacy', 'dual'] as const;

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
      jwksUrl: httpUrl.optional().meta(doc('`jwt` only: the JWKS URL', 'one of the three key sources required')),
      publicKey: z.string().min(1).optional().meta(doc('`jwt` only: a static public key (PEM, or a JWK as JSON)', 'one of the three key sources required')),
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
export const UpstreamSchema = z
  .strictObject({
    name: z
      .string()
      .regex(/^[A-Za-z0-9._-]+$/, 'letters, digits, ".", "_" and "-" only')
      .describe("the upstream's name (letters, digits, `.`, `_`, `-`) in logs and `/healthz`"),
    path: z
      .string()
      .regex(/^\/[A-Za-z0-9._~/-]*$/, 'an absolute URL path such as /mcp')
      .default(DEFAULTS.path)
      .describe('where clients reach it on the gateway'),
    /** An HTTP upstream's MCP endpoint. Exactly one of `url` and `command`. */
    url: httpUrl.optional().meta(doc("an HTTP upstream's Streamable HTTP endpoint (`http://` or `https://`)", 'one of `url`, `command`')),
    /**
     * An stdio upstream: the program and its arguments (no shell), spawned and supervised by each gateway instance
     * (docs/deployment.md § stdio upstreams). Exactly one of `url` and `command`.
     */
    command: z
      .array(z.string().min(1))
      .min(1)
      .optional()
      .meta(
        doc(
          'an stdio upstream: program and arguments (no shell), e.g. `["node", "server.js"]`, run by each instance (docs/deployment.md § stdio upstreams)',
          'one of `url`, `command`',
        ),
      ),
    /**
     * Environment of an stdio upstream's process, set over the few variables it inherits from the gateway (PATH, HOME,
     * USER, LANG, TZ, TMPDIR and the like); nothing else of the gateway's environment (its secrets) reaches the child.
     */
    env: z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), z.string())
      .default({})
      .describe(
        'stdio only: variables set for the process over the few it inherits (`PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `TERM`, `LANG`, `LC_ALL`, ' +
          '`LC_CTYPE`, `TZ`, `TMPDIR`/`TEMP`/`TMP`, and on Windows `SYSTEMROOT`, `COMSPEC`, `PATHEXT`, `USERPROFILE`, `APPDATA`, `LOCALAPPDATA`); ' +
          "nothing else of the gateway's environment reaches it",
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
      .describe('static headers sent upstream (e.g. an API key)')
      .apply(live),
    timeoutMs: positiveInt.default(DEFAULTS.upstreamTimeoutMs).describe('budget of one upstream call, including time waiting for input'),
    era: z
      .enum(UPSTREAM_ERAS)
      .default(DEFAULTS.era)
      .describe(
        'which eras the upstream speaks: `auto` probes it (`server/discover` for 2026-07-28; `initialize` for 2025-11-25 when it does not answer that, ' +
          'or, for one that does, when the first 2025-11-25 client arrives, asked exactly as a 2025-11-25 client asks: no 2026-07-28 headers or ' +
          '`_meta`); `modern`, `legacy` or ' +
          '`dual` pin the answer and skip the probe. A client whose era the upstream speaks is passed through untouched. An stdio process is opened ' +
          "with its pinned era's handshake (`initialize` for `legacy`, else `server/discover`), and `/readyz` says when it refuses it. Pin `legacy` " +
          'for a dual-era server whose 2026-07-28 side is weaker (docs/configuration.md § Pinning an era)',
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
      .default({ '*': { task: DEFAULT_TASK_MODE } })
      .describe(
        'per-tool rules, by exact tool name or glob (first match wins: a rule an earlier glob covers, such as one after `"*"`, is a configuration error ' +
          'naming both); each rule has the keys below',
      )
      .apply(live),
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
            "non-MCP paths passed through to the upstream's origin on the same path: exact (`/oauth/token`) or a prefix ending in `/*` (`/oauth/*`: " +
              '`/oauth` and all under it); may not overlap an MCP endpoint, `/healthz`, `/readyz`, `/metrics`, the OAuth documents or another ' +
              "upstream's paths (docs/deployment.md § OAuth and other paths)",
          ),
        wellKnownRoot: z
          .boolean()
          .optional()
          .meta(
            doc(
              'whether the root OAuth documents (`/.well-known/oauth-protected-resource`, `…/oauth-authorization-server`, `…/openid-configuration`) go ' +
                'to this upstream; at most one upstream may take them',
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
            'who shares legacy upstream sessions among callers with credentials: `principal` (a pool per principal, one call per session at a time) or ' +
              '`request` (a fresh one per request, ended with DELETE)',
          ),
        anonymousScope: z
          .enum(ANONYMOUS_SESSION_SCOPES)
          .default(DEFAULTS.anonymousSessionScope)
          .describe(
            'the same for callers without credentials: `shared` (one pool for all of them, reset on handover), or `request` (a fresh session per ' +
              'request: for servers with other per-session state)',
          ),
      })
      .default({ scope: DEFAULTS.sessionScope, anonymousScope: DEFAULTS.anonymousSessionScope }),
    expose: ExposeSchema,
    /**
     * Per-principal access to this member's tools and prompts on a federated path: the first rule whose `when`
     * matches the caller decides; no rule matching, or none given: everything shown.
     */
    access: z
      .array(AccessRuleSchema)
      .default([])
      .describe(
        'on a federated path, which of its tools and prompts each caller may list and call: the first rule whose `when` matches the caller decides ' +
          '(none matching: all)',
      ),
  })
  .refine((u) => (u.url === undefined) !== (u.command === undefined), {
    message: 'give exactly one of url (an HTTP upstream) and command (an stdio upstream)',
    path: ['url'],
  });

/**
 * Passed-through paths must not shadow what the gateway answers itself (MCP endpoints, /healthz, /readyz, /metrics,
 * the OAuth well-known documents it passes on its own), nor each other (two upstreams on one path: which one answers
 * would be an accident); at most one upstream takes the root well-known documents.
 */
export function checkPassthrough(upstreams: ReadonlyArray<z.infer<typeof UpstreamSchema>>, ctx: z.RefinementCtx, ownPaths: readonly string[]): void {
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
  // ones), or by the only HTTP upstream; never by a member of a shared path (checkFederation refuses the claim).
  const http = oauthCapable(upstreams);
  const claimants = http.filter(([u]) => u.passthrough.wellKnownRoot === true || (u.path === '/' && u.passthrough.wellKnownRoot !== false));
  if (claimants.length > 1) {
    for (const [, i] of claimants.slice(1)) {
      ctx.addIssue({
        code: 'custom',
        path: ['upstreams', i, 'passthrough', 'wellKnownRoot'],
        message: `the root well-known documents are already upstreams.${claimants[0]?.[1]}'s`,
      });
    }
  }
}

/**
 * The upstreams (with their index) whose OAuth documents may be passed through: HTTP ones alone on their path. A path
 * several upstreams share is one endpoint with one authenticator and no single authorization server: no OAuth
 * document of it is passed through, neither its path-suffixed ones nor the root ones.
 */
export function oauthCapable<U extends Pick<z.infer<typeof UpstreamSchema>, 'url' | 'path'>>(upstreams: readonly U[]): Array<readonly [U, number]> {
  const shared = sharedPaths(upstreams);
  return upstreams.map((u, i) => [u, i] as const).filter(([u]) => u.url !== undefined && !shared.has(u.path));
}

/** Which upstream (index) answers the root OAuth well-known documents, if any (docs/deployment.md §OAuth and other paths). */
export function wellKnownRootOwner(upstreams: ReadonlyArray<Pick<z.infer<typeof UpstreamSchema>, 'url' | 'path' | 'passthrough'>>): number | undefined {
  const http = oauthCapable(upstreams);
  const claimant = http.find(([u]) => u.passthrough.wellKnownRoot === true || (u.path === '/' && u.passthrough.wellKnownRoot !== false));
  if (claimant) return claimant[1];
  const only = http.length === 1 ? http[0] : undefined;
  return only && only[0].passthrough.wellKnownRoot !== false ? only[1] : undefined;
}

/** One validated upstream. */
export type UpstreamConfig = z.infer<typeof UpstreamSchema>;
/** One upstream's validated authentication settings. */
export type AuthConfig = z.infer<typeof AuthSchema>;
