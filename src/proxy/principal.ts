/** The caller's principal: a fingerprint of its credentials. Tasks and request states are bound to it. */
import { createHash } from 'node:crypto';

/** The principal of requests without credentials. */
export const ANONYMOUS = 'anonymous';

/**
 * Fingerprints already computed, by header: a client sends the same header on every request. Bounded (cleared when
 * full); it holds credentials only as long as the process already holds them per request.
 */
const known = new Map<string, string>();

/** A stable, non-reversible fingerprint of the Authorization header (never the header itself). */
export function principalOf(authorization: string | undefined): string {
  if (!authorization) return ANONYMOUS;
  let p = known.get(authorization);
  if (p === undefined) {
    p = `sha256:${createHash('sha256').update(authorization).digest('base64url')}`;
    if (known.size >= 1024) known.clear();
    known.set(authorization, p);
  }
  return p;
}
