/**
 * Who shares a legacy session (docs/security.md §Upstream session isolation): a caller's session key, the group and
 * pool key its call sessions are pooled under (principal or credentials, and normalised input capabilities), and
 * whose share of the pool they count against.
 */
import { sessionInputCapabilities, type JsonObject } from '../../translate/index.js';

/** Who shares sessions among callers with credentials (see pool.ts). */
export type SessionScope = 'principal' | 'request';
/** Who shares sessions among callers without credentials. */
export type AnonymousSessionScope = 'request' | 'shared';

/** Who a session is for: the caller's principal, the credentials sent upstream on its behalf, what it can answer. */
export interface SessionKey {
  /** The edge's principal (`anonymous` without credentials); absent: not known, never shared. */
  principal?: string;
  authorization?: string;
  /** The caller's declared capabilities (either era's shape); the session declares the input kinds among them. */
  capabilities?: JsonObject;
}

/** The pool's sharing settings. */
export interface SessionSharing {
  /** Who shares sessions (default `principal`). */
  scope?: SessionScope;
  /** Who shares sessions among callers without credentials (default `shared`). */
  anonymousScope?: AnonymousSessionScope;
}

/** The principal of callers without credentials (the edge's `ANONYMOUS`, proxy/principal.ts). */
export const ANONYMOUS = 'anonymous';

/** The principal part of a caller's keys, or `undefined` when each of its requests gets a session of its own. */
export function groupOf(k: SessionKey, sharing: SessionSharing): string | undefined {
  if (k.principal === undefined) return undefined;
  if (k.principal === ANONYMOUS) {
    if ((sharing.anonymousScope ?? 'shared') !== 'shared') return undefined;
    // Shared, but never across credentials: with `auth.mode: none` anonymous callers may still send (and forward)
    // different ones, and a session carries the credentials it was opened with.
    return `a:${k.authorization ?? ''}`;
  }
  return (sharing.scope ?? 'principal') === 'principal' ? `p:${k.principal}` : undefined;
}

/**
 * Where a caller's call sessions are pooled: its group, the pool key (`undefined`: a session of one request) and the
 * input capabilities its sessions declare.
 */
export function placeOf(k: SessionKey, sharing: SessionSharing): { group: string | undefined; key: string | undefined; capabilities: JsonObject } {
  const group = groupOf(k, sharing);
  const input = sessionInputCapabilities(k.capabilities ?? {});
  return { group, key: group === undefined ? undefined : `${group}|${input.key}`, capabilities: input.capabilities };
}

/** Whose share a caller's sessions count against (callers not known share one). */
export function ownerOf(k: SessionKey): string {
  return k.principal ?? '';
}
