/** Which protocol era a client request belongs to (2026-07-28 basic/versioning §Compatibility Matrix). */
import { LEGACY_VERSIONS, META } from './constants.js';
import { isObject } from './jsonrpc.js';

/** The two protocol eras. */
export type Era = 'modern' | 'legacy';

/** What the classifier looks at. Header names are lower-case. */
export interface EraSignals {
  httpMethod: string;
  protocolVersionHeader: string | undefined;
  body: unknown;
}

/** The `_meta` protocol version a body declares, if any. */
export function metaProtocolVersion(body: unknown): unknown {
  if (!isObject(body) || !isObject(body.params) || !isObject(body.params._meta)) return undefined;
  return body.params._meta[META.protocolVersion];
}

/**
 * Classifies a request. Modern markers (the `_meta` protocol version, or a non-legacy `MCP-Protocol-Version`)
 * win, so that `initialize` sent with modern markers is judged by modern rules (a removed method, 404).
 * GET/DELETE, session traffic, `initialize` and anything without markers are legacy.
 */
export function classifyEra(s: EraSignals): Era {
  const method = s.httpMethod.toUpperCase();
  if (method !== 'POST') return 'legacy';
  const hv = s.protocolVersionHeader;
  const modernHeader = hv !== undefined && hv !== '' && !LEGACY_VERSIONS.includes(hv);
  // JSON-RPC batches exist only before 2025-06-18; one sent with a modern header is a malformed modern request.
  if (Array.isArray(s.body)) return modernHeader ? 'modern' : 'legacy';
  if (metaProtocolVersion(s.body) !== undefined) return 'modern';
  return modernHeader ? 'modern' : 'legacy';
}
