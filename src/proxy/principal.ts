/** The caller's principal: a fingerprint of its credentials. Tasks and request states are bound to it. */
import { createHash } from 'node:crypto';

/** The principal of requests without credentials. */
export const ANONYMOUS = 'anonymous';

/** A stable, non-reversible fingerprint of the Authorization header (never the header itself). */
export function principalOf(authorization: string | undefined): string {
  if (!authorization) return ANONYMOUS;
  return `sha256:${createHash('sha256').update(authorization).digest('base64url')}`;
}
