/**
 * The gateway's MRTR `requestState` (2026-07-28 basic/patterns/mrtr §Server Requirements): integrity-protected
 * (HMAC-SHA256), expiring, bound to the principal and to the request it continues, and naming the gateway instance
 * that holds the call (a retry may reach any instance; every instance holds the same key, so every one verifies it).
 *
 * The principal is bound through the MAC alone, never carried: a state travels through clients, logs and proxies, and
 * a principal fingerprint in it (an unkeyed hash of the credentials) would let whoever sees one guess the token
 * offline. Verified with another principal, a genuine state fails exactly as a forged one does, so that a state of
 * someone else reveals nothing (2026-07-28 basic/patterns/mrtr §Security Considerations). Pure: key and time are
 * arguments.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isObject } from './jsonrpc.js';

/** What a request state asserts (besides the principal, which only its MAC binds). */
export interface RequestStateClaims {
  /** The held upstream call this state continues. */
  hold: string;
  /** The gateway instance holding that call (a retry that lands elsewhere is relayed there). */
  inst: string;
  /** Method and name (tool / prompt name or resource URI) of the original request. */
  method: string;
  name: string;
  /** Round number, so that an older round's state cannot be replayed into a newer one. */
  round: number;
  /** Expiry, epoch milliseconds. */
  exp: number;
}

/**
 * Why a presented state was refused (for tests and reasoning only: the client gets one answer whatever the reason).
 * Another principal's state is a `bad-signature`.
 */
export type RequestStateFailure = 'malformed' | 'bad-signature' | 'expired' | 'mismatch';

/** Format version: 2 binds the principal in the MAC (1 carried it in the payload). */
const VERSION = 2;
/** Domain separation: the state key also seals relayed callers, under other labels. */
const LABEL = 'mcp-tasks-gateway/request-state/v2';
/** Longest state accepted (a genuine one is a few hundred characters). */
const MAX_LENGTH = 4096;

function sign(payload: string, principal: string, key: Uint8Array): Buffer {
  // Length-prefixed principal: no principal/payload split can produce the same MAC input as another.
  return createHmac('sha256', key).update(`${LABEL}\n${principal.length}:${principal}\n${payload}`).digest();
}

/** Encodes claims for `principal` as `base64url(json).base64url(hmac)`. */
export function encodeRequestState(claims: RequestStateClaims, principal: string, key: Uint8Array): string {
  const payload = Buffer.from(JSON.stringify({ v: VERSION, ...claims }), 'utf8').toString('base64url');
  return `${payload}.${sign(payload, principal, key).toString('base64url')}`;
}

/** Verifies a state: signature for this principal, expiry, and that it continues this request. */
export function decodeRequestState(
  token: string,
  key: Uint8Array,
  now: number,
  expect: { sub: string; method: string; name: string },
): { ok: true; value: RequestStateClaims } | { ok: false; reason: RequestStateFailure } {
  if (token.length > MAX_LENGTH) return { ok: false, reason: 'malformed' };
  const dot = token.indexOf('.');
  if (dot <= 0 || dot !== token.lastIndexOf('.')) return { ok: false, reason: 'malformed' };
  const payload = token.slice(0, dot);
  // Compare the signature text with its canonical encoding: a base64url decoder ignores junk characters and
  // unused bits, which would let altered tokens verify.
  const mac = Buffer.from(token.slice(dot + 1), 'utf8');
  const good = Buffer.from(sign(payload, expect.sub, key).toString('base64url'), 'utf8');
  if (mac.length !== good.length || !timingSafeEqual(mac, good)) return { ok: false, reason: 'bad-signature' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (
    !isObject(parsed) ||
    parsed.v !== VERSION ||
    typeof parsed.hold !== 'string' ||
    typeof parsed.inst !== 'string' ||
    typeof parsed.method !== 'string' ||
    typeof parsed.name !== 'string' ||
    typeof parsed.round !== 'number' ||
    typeof parsed.exp !== 'number'
  ) {
    return { ok: false, reason: 'malformed' };
  }
  if (parsed.exp <= now) return { ok: false, reason: 'expired' };
  if (parsed.method !== expect.method || parsed.name !== expect.name) return { ok: false, reason: 'mismatch' };
  return { ok: true, value: { hold: parsed.hold, inst: parsed.inst, method: parsed.method, name: parsed.name, round: parsed.round, exp: parsed.exp } };
}
