/** What the runtime knows about one upstream route. */
import type { CacheHints, JsonObject } from '../translate/index.js';
import type { LegacySessionPool } from '../upstream/index.js';

/** One upstream as the runtime sees it. */
export interface UpstreamRoute {
  name: string;
  url: string;
  staticHeaders: Record<string, string>;
  timeoutMs: number;
  cache: CacheHints;
  pool: LegacySessionPool;
}

/** Who is calling, and what the request declared. */
export interface CallerContext {
  /** Fingerprint of the caller's credentials; tasks and request states are bound to it. */
  principal: string;
  /** The Authorization header, forwarded upstream unchanged. */
  authorization?: string;
  /** The request's declared client capabilities. */
  capabilities: JsonObject;
  /** `io.modelcontextprotocol/logLevel`, when the request asked for log messages. */
  logLevel?: string;
}
