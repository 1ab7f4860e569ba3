/**
 * Who the caller is, per upstream: the one place at the edge that turns a request's credentials into its principal,
 * for every path of an upstream's endpoint (the modern face, the legacy face and pass-through). A hook in the
 * endpoint's scope computes it once per request and decorates the request with it; refusals are 401 answers from
 * the error catalog, with a `WWW-Authenticate` challenge (RFC 9110 §11.6.1; RFC 6750 §3 for bearer tokens).
 *
 * Modes (docs/security.md §Authentication):
 * - `bearer` (default): a keyed hash of the `Authorization` header; anonymous without one. Forwarded unchanged.
 * - `none`: everyone is one anonymous principal (the task id is the only secret; retention is capped in app.ts).
 * - `header`: a trusted fronting proxy's identity header, honoured only from its configured addresses.
 * - `jwt`: a bearer JWT verified with `jose` (RFC 7519; RFC 8725 best practices: explicit algorithm allow-list,
 *   issuer and audience checked); the principal is its `iss` + `sub`.
 */
import { createPublicKey, createSecretKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createRemoteJWKSet, errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { answerOf, GatewayError, requestIdOf, type GatewayErrorOptions } from '../translate/index.js';
import { NO_AUDIT, type AuditLog, type CallerSubject } from '../tasks/index.js';
import { ANONYMOUS, PrincipalHasher, principalOf } from './principal.js';

/** An upstream's authentication settings (the validated `upstreams[].auth` of the configuration). */
export type AuthSettings =
  | { mode: 'bearer' }
  | { mode: 'none'; maxTtlMs: number }
  | { mode: 'header'; header: string; trustedProxies: readonly string[] }
  | {
      mode: 'jwt';
      jwksUrl?: string | undefined;
      publicKey?: string | undefined;
      secretEnv?: string | undefined;
      issuer: string | readonly string[];
      audience: string | readonly string[];
      clockToleranceSec: number;
      algorithms?: readonly string[] | undefined;
      forward: boolean;
    };

/** Who a request comes from, as the rest of the edge sees it. */
export interface Identity {
  /** The principal (keyed hash, or `anonymous`): tasks, request states and sessions are bound to it. */
  readonly principal: string;
  /** The `Authorization` header to forward upstream (absent: none, or `forward: false`). */
  readonly authorization: string | undefined;
  /** Who the caller is as an operator names it, for access rules (`header`: its name; `jwt`: `sub`, scopes, claims). */
  readonly subject?: CallerSubject;
}

/** Why a request was refused (the audit trail's `reason`; never anything from the credential itself). */
export type AuthFailure = 'missing' | 'expired' | 'invalid' | 'untrusted_source' | 'unavailable';

/** The realm of every challenge the gateway sends. */
const REALM = 'mcp-tasks-gateway';

/** Asymmetric JWS algorithms, the default allow-list for a JWKS or a public key. */
const ASYMMETRIC = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'];
/** HMAC algorithms, the default allow-list with a shared secret. */
const HMAC = ['HS256', 'HS384', 'HS512'];

/** Verified tokens remembered at most (cleared when full), and for at most this long each (a key set may rotate). */
const JWT_MEMO_MAX = 1024;
const JWT_MEMO_MS = 300_000;

/** The catalog entries of authentication. */
type AuthKind = 'GW_UNAUTHENTICATED' | 'GW_INVALID_TOKEN' | 'GW_UNTRUSTED_SOURCE' | 'GW_AUTH_UNAVAILABLE';

/** A refused request: a catalog error plus the challenge to send with it. */
export class AuthError extends GatewayError {
  /** The `WWW-Authenticate` value. */
  readonly challenge: string;
  /** The reason recorded in the audit trail. */
  readonly reason: AuthFailure;
  constructor(kind: AuthKind, reason: AuthFailure, challenge: string, opts: GatewayErrorOptions = {}) {
    super(kind, opts);
    this.reason = reason;
    this.challenge = challenge;
  }
}

/** What an authenticator needs besides its settings. */
export interface AuthenticatorOptions {
  /** The deployment's shared secret: principals are HMACs under a key derived from it. */
  key: Uint8Array;
  /** The upstream's name (audit lines). */
  upstream: string;
  /** The HMAC secret of `jwt` with `secretEnv` (read from the environment by the composition root). */
  jwtSecret?: Uint8Array;
  /** Where auth failures are recorded (default: nowhere). */
  audit?: AuditLog;
  /** The clock (ms): token times are judged by it, and the verified-token memo expires by it. */
  now?: () => number;
}

/** The part of a request an authenticator reads. */
export interface AuthRequest {
  headers: Record<string, string | string[] | undefined>;
  /** The connection's peer address (not any forwarded-for header). */
  remoteAddress: string | undefined;
}

/** Turns one upstream's requests into identities, or refuses them. */
export class Authenticator {
  readonly mode: AuthSettings['mode'];
  private readonly hasher: PrincipalHasher;
  private readonly audit: AuditLog;
  private readonly upstream: string;
  private readonly now: () => number;
  private readonly trusted?: BlockList;
  private readonly identityHeader?: string;
  private readonly jwt?: {
    key: KeyObject | JWTVerifyGetKey;
    options: { issuer: string | string[]; audience: string | string[]; clockTolerance: number; algorithms: string[]; requiredClaims: string[] };
    forward: boolean;
  };
  /** Verified tokens: principal and until when it may be reused without verifying again. */
  private readonly verified = new Map<string, { principal: string; subject: CallerSubject; until: number }>();

  constructor(settings: AuthSettings, opts: AuthenticatorOptions) {
    this.mode = settings.mode;
    this.hasher = new PrincipalHasher(opts.key);
    this.audit = opts.audit ?? NO_AUDIT;
    this.upstream = opts.upstream;
    this.now = opts.now ?? Date.now;
    if (settings.mode === 'header') {
      this.identityHeader = settings.header.toLowerCase();
      this.trusted = new BlockList();
      for (const entry of settings.trustedProxies) {
        const [addr = '', bits] = entry.split('/');
        const type = isIP(addr) === 6 ? 'ipv6' : 'ipv4';
        if (bits === undefined) this.trusted.addAddress(addr, type);
        else this.trusted.addSubnet(addr, Number(bits), type);
      }
    } else if (settings.mode === 'jwt') {
      let key: KeyObject | JWTVerifyGetKey;
      let defaults = ASYMMETRIC;
      if (settings.jwksUrl !== undefined) key = createRemoteJWKSet(new URL(settings.jwksUrl));
      else if (settings.publicKey !== undefined) key = publicKeyOf(settings.publicKey);
      else {
        if (!opts.jwtSecret) throw new Error(`auth: the jwt secret of upstream ${opts.upstream} is missing`);
        key = createSecretKey(opts.jwtSecret);
        defaults = HMAC;
      }
      const list = (v: string | readonly string[]) => (typeof v === 'string' ? v : [...v]);
      this.jwt = {
        key,
        options: {
          issuer: list(settings.issuer),
          audience: list(settings.audience),
          clockTolerance: settings.clockToleranceSec,
          // Never `none`: the schema's enum has no such value, and jose refuses it for a key anyway.
          algorithms: [...(settings.algorithms ?? defaults)],
          requiredClaims: ['sub'],
        },
        forward: settings.forward,
      };
    }
  }

  /**
   * The request's identity, or an `AuthError`. Synchronous for every mode but `jwt` (whose verified tokens are
   * remembered, so that a client's later requests cost one lookup).
   */
  authenticate(req: AuthRequest): Identity | Promise<Identity> {
    const authorization = single(req.headers.authorization);
    switch (this.mode) {
      case 'none':
        return { principal: ANONYMOUS, authorization };
      case 'bearer':
        return { principal: authorization ? this.hasher.of('b', authorization) : ANONYMOUS, authorization };
      case 'header': {
        const from = req.remoteAddress;
        if (!from || !this.trusted?.check(from, isIP(from) === 6 ? 'ipv6' : 'ipv4')) {
          throw this.fail('GW_UNTRUSTED_SOURCE', 'untrusted_source', `Bearer realm="${REALM}"`);
        }
        const name = single(req.headers[this.identityHeader as string]);
        // A missing (or repeated) identity header from the proxy is a refusal, not an anonymous caller: the proxy
        // vouches for every request it lets through, so a request without a name is a misconfiguration to see.
        if (!name) throw this.fail('GW_UNAUTHENTICATED', 'missing', `Bearer realm="${REALM}"`);
        return { principal: this.hasher.of('h', name), authorization, subject: { name } };
      }
      case 'jwt':
        return this.verifyJwt(authorization);
    }
  }

  private verifyJwt(authorization: string | undefined): Identity | Promise<Identity> {
    const jwt = this.jwt as NonNullable<Authenticator['jwt']>;
    const token = authorization && /^bearer +/i.test(authorization) ? authorization.replace(/^bearer +/i, '').trim() : undefined;
    // RFC 6750 §3.1: a request without credentials gets the challenge without an error code.
    if (!token) throw this.fail('GW_UNAUTHENTICATED', 'missing', `Bearer realm="${REALM}"`);
    const forwarded = jwt.forward ? authorization : undefined;
    const known = this.verified.get(token);
    if (known && known.until > this.now()) return { principal: known.principal, authorization: forwarded, subject: known.subject };
    return this.verifyJwtSlow(jwt, token, forwarded);
  }

  private async verifyJwtSlow(jwt: NonNullable<Authenticator['jwt']>, token: string, forwarded: string | undefined): Promise<Identity> {
    let payload: { iss?: string; sub?: string; exp?: number; scope?: unknown; scp?: unknown };
    try {
      // The two overloads (a key, a key-set function) take the same options.
      payload = (await jwtVerify(token, jwt.key as KeyObject, { ...jwt.options, currentDate: new Date(this.now()) })).payload;
    } catch (e) {
      throw this.tokenFailure(e);
    }
    const principal = this.hasher.of('j', `${payload.iss ?? ''}\n${payload.sub ?? ''}`);
    const now = this.now();
    const until = Math.min(now + JWT_MEMO_MS, typeof payload.exp === 'number' ? payload.exp * 1000 : now + JWT_MEMO_MS);
    if (this.verified.size >= JWT_MEMO_MAX) this.verified.clear();
    const subject = subjectOf(payload);
    this.verified.set(token, { principal, subject, until });
    return { principal, authorization: forwarded, subject };
  }

  /** A failed verification → its class: expired, invalid, or the key set could not be had (not the caller's fault). */
  private tokenFailure(e: unknown): AuthError {
    if (e instanceof joseErrors.JWTExpired) return this.fail('GW_INVALID_TOKEN', 'expired', challenge('invalid_token', 'expired'), ['expired']);
    const code = e instanceof joseErrors.JOSEError ? e.code : undefined;
    if (code === undefined || code === 'ERR_JWKS_TIMEOUT' || code === 'ERR_JWKS_INVALID' || code === 'ERR_JOSE_GENERIC') {
      return this.fail('GW_AUTH_UNAVAILABLE', 'unavailable', `Bearer realm="${REALM}"`, [], e);
    }
    return this.fail('GW_INVALID_TOKEN', 'invalid', challenge('invalid_token', 'invalid'), ['invalid']);
  }

  private fail(kind: AuthKind, reason: AuthFailure, challengeValue: string, args: string[] = [], cause?: unknown): AuthError {
    this.audit.record('auth.failed', { upstream: this.upstream, reason });
    return new AuthError(kind, reason, challengeValue, { args, ...(cause !== undefined ? { cause } : {}) });
  }
}

/** What access rules read of a verified JWT: `sub`, the scopes (`scope`, RFC 8693 §4.2; or `scp`), every claim. */
function subjectOf(payload: { sub?: string; scope?: unknown; scp?: unknown }): CallerSubject {
  const scopes =
    typeof payload.scope === 'string'
      ? payload.scope.split(' ').filter(Boolean)
      : Array.isArray(payload.scp)
        ? payload.scp.filter((x): x is string => typeof x === 'string')
        : [];
  return { ...(payload.sub !== undefined ? { name: payload.sub } : {}), scopes, claims: payload as Record<string, unknown> };
}

/** A bearer challenge with an error (RFC 6750 §3): the description names the class only. */
function challenge(error: string, description: string): string {
  return `Bearer realm="${REALM}", error="${error}", error_description="${description}"`;
}

/** One header value; a repeated header counts as none (it names no one caller). */
function single(v: string | string[] | undefined): string | undefined {
  if (Array.isArray(v)) return v.length === 1 ? v[0] : undefined;
  return v === '' ? undefined : v;
}

/** A static verification key: a PEM public key, or a JWK given as JSON. */
function publicKeyOf(text: string): KeyObject {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) return createPublicKey({ key: JSON.parse(trimmed) as JsonWebKey, format: 'jwk' });
  return createPublicKey(trimmed);
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Who the request comes from, set by the endpoint's authentication hook (`null` before it ran). */
    gwIdentity: Identity | null;
  }
}

/**
 * Registers the authentication hook in an endpoint's scope: every route of the scope runs it before its handler,
 * after the body is parsed (so that a refusal carries the request's JSON-RPC id). A refusal ends the request there.
 */
export function registerAuth(scope: FastifyInstance, auth: Authenticator): void {
  scope.decorateRequest('gwIdentity', null);
  scope.addHook('preHandler', (request, reply, done) => {
    let got: Identity | Promise<Identity>;
    try {
      got = auth.authenticate({ headers: request.headers, remoteAddress: request.socket.remoteAddress });
    } catch (e) {
      return refuse(request, reply, e, done);
    }
    if (!(got instanceof Promise)) {
      request.gwIdentity = got;
      return done();
    }
    got.then(
      (identity) => {
        request.gwIdentity = identity;
        done();
      },
      (e: unknown) => refuse(request, reply, e, done),
    );
  });
}

function refuse(request: FastifyRequest, reply: FastifyReply, e: unknown, done: (err?: Error) => void): void {
  if (!(e instanceof AuthError)) return done(e instanceof Error ? e : new Error(String(e)));
  const answer = answerOf(e);
  if (answer.status === 401) reply.header('www-authenticate', e.challenge);
  if (answer.retryAfterSeconds !== undefined) reply.header('retry-after', String(answer.retryAfterSeconds));
  if (e.reason === 'unavailable') request.log.warn({ err: e.cause }, 'JWT key set unavailable');
  void reply.code(answer.status).send({ jsonrpc: '2.0', id: requestIdOf(request.body), error: answer.error });
}

/**
 * The identity the endpoint's hook computed for a request. A request outside any endpoint scope (a legacy face
 * mounted alone, in tests) gets the default `bearer` identity under a per-process key; inside a scope whose hook did
 * not run, this is a bug, and it throws rather than let the request through without an identity.
 */
export function identityOf(request: FastifyRequest): Identity {
  const id = (request as { gwIdentity?: Identity | null }).gwIdentity;
  if (id) return id;
  if (id === null) throw new Error('no identity: the authentication hook did not run for this route');
  const authorization = single(request.headers.authorization);
  return { principal: principalOf(authorization), authorization };
}
