/**
 * The gateway's MRTR `requestState` (2026-07-28 basic/patterns/mrtr §Server Requirements): integrity-protected
 * (HMAC-SHA256), expiring, bound to the principal and to the request it continues, and naming the gateway instance
 * that holds the call (a retry may reach any instance; every instance holds the same key, so every one verifies it).
 * Pure: key and time are arguments.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isObject } from './jsonrpc.js';

/** What a request state asserts. */
export interface RequestStateClaims {
  /** The held upstream call this state continues. */
  hold: string;
  /** The gateway instance holding that call (a retry that lands elsewhere is relayed there). */
  inst: string;
  /** Principal fingerprint. */
  sub: string;
  /** Method and name (tool / prompt name or resource URI) of the original request. */
  method: string;
  name: string;
  /** Round number, so that an older round's state cannot be replayed into a newer one. */
  round: number;
  /** Expiry, epoch milliseconds. */
  exp: number;
}

/** Why a presented state was refused. */
export type RequestStateFailure = 'malformed' | 'bad-signature' | 'expired' | 'mismatch';

function sign(payload: string, key: Uint8Array): Buffer {
  return createHmac('sha256', key).update(payload).digest();
}

/** Encodes claims as `base64url(json).base64url(hmac)`. */
export function encodeRequestState(claims: RequestStateClaims, key: Uint8Array): string {
  const payload = Buffer.from(JSON.stringify({ v: 1, ...claims }), 'utf8').toString('base64url');
  return `${payload}.${sign(payload, key).toString('base64url')}`;
}

/** Verifies a state: signature, expiry, and that it belongs to this principal and request. */
export function decodeRequestState(
  token: string,
  key: Uint8Array,
  now: number,
  expect: { sub: string; method: string; name: string },
): { ok: true; value: RequestStateClaims } | { ok: false; reason: RequestStateFailure } {
  if (token.length > 4096) return { ok: false, reason: 'malformed' };
  const dot = token.indexOf('.');
  if (dot <= 0 || dot !== token.lastIndexOf('.')) return { ok: false, reason: 'malformed' };
  const payload = token.slice(0, dot);
  // Compare the signature text with its canonical encoding: a base64url decoder ignores junk characters and
  // unused bits, which would let altered tokens verify.
  const mac = Buffer.from(token.slice(dot + 1), 'utf8');
  const good = Buffer.from(sign(payload, key).toString('base64url'), 'utf8');
  if (mac.length !== good.length || !timingSafeEqual(mac, good)) return { ok: false, reason: 'bad-signature' };
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  if (
    !isObject(parsed) || parsed.v !== 1 || typeof parsed.hold !== 'string' || typeof parsed.inst !== 'string' || typeof parsed.sub !== 'string' ||
    typeof parsed.method !== 'string' || typeof parsed.name !== 'string' || typeof parsed.round !== 'number' ||
    typeof parsed.exp !== 'number'
  ) {
    return { ok: false, reason: 'malformed' };
  }
  if (parsed.exp <= now) return { ok: false, reason: 'expired' };
  if (parsed.sub !== expect.sub || parsed.method !== expect.method || parsed.name !== expect.name) {
    return { ok: false, reason: 'mismatch' };
  }
  return {
    ok: true,
    value: { hold: parsed.hold, inst: parsed.inst, sub: parsed.sub, method: parsed.method, name: parsed.name, round: parsed.round, exp: parsed.exp },
  };
}
