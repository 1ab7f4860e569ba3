/**
 * The caller's principal: a keyed fingerprint of who the caller is. Tasks, MRTR request states and sessions are bound
 * to it, and it travels in the store, in request states and (as a fingerprint of it) in the audit trail. It is an
 * HMAC-SHA256 under a key derived from the deployment secret, so a leaked principal (or a state carrying one) allows
 * no offline guessing of the credential behind it: without the key, a guess cannot be checked.
 */
import { createHmac, randomBytes } from 'node:crypto';

/** The principal of requests without credentials (and of every request of an upstream with `auth.mode: none`). */
export const ANONYMOUS = 'anonymous';

/**
 * What a principal was derived from: the bearer token (`b`), a trusted proxy's identity header (`h`), or a verified
 * JWT's `iss` and `sub` (`j`). The prefix keeps modes apart: the same string means different callers in each.
 */
export type PrincipalSource = 'b' | 'h' | 'j';

/** Label of the key derivation: the principal key is never the raw deployment secret (that one signs states). */
const KEY_LABEL = 'mcp-tasks-gateway principal v1';

/** Entries the memo keeps at most; cleared when full (a client sends the same credential on every request). */
const MEMO_MAX = 1024;

/** Derives principals from credentials with a keyed hash; memoizes them per credential (bounded). */
export class PrincipalHasher {
  private readonly key: Buffer;
  /**
   * Principals already computed, by source and credential. It holds credentials only as long as the process already
   * holds them per request, and never outside this process.
   */
  private readonly memo: Record<PrincipalSource, Map<string, string>> = { b: new Map(), h: new Map(), j: new Map() };

  /** `secret`: the deployment's shared secret (the same on every instance, so principals agree across instances). */
  constructor(secret: Uint8Array) {
    this.key = createHmac('sha256', secret).update(KEY_LABEL).digest();
  }

  /** The principal of `value` from `source`: `<source>:` + base64url HMAC-SHA256. */
  of(source: PrincipalSource, value: string): string {
    // One map per source: the hot path (a client's every request) is one lookup, no string built.
    const memo = this.memo[source];
    let p = memo.get(value);
    if (p === undefined) {
      p = `${source}:${createHmac('sha256', this.key).update(`${source}\n${value}`).digest('base64url')}`;
      if (memo.size >= MEMO_MAX) memo.clear();
      memo.set(value, p);
    }
    return p;
  }
}

let processHasher: PrincipalHasher | undefined;

/**
 * The default `bearer` principal under a random per-process key: for a legacy face mounted outside a gateway endpoint
 * (tests). A gateway's endpoints derive principals with the deployment's key (`Authenticator`).
 */
export function principalOf(authorization: string | undefined): string {
  if (!authorization) return ANONYMOUS;
  processHasher ??= new PrincipalHasher(randomBytes(32));
  return processHasher.of('b', authorization);
}
