/** What the runtime knows about one upstream route. */
import type { CacheHints, TaskSupport } from '../translate/index.js';
import type { UpstreamCaller, UpstreamClient } from '../upstream/index.js';

/** One upstream as the runtime sees it. */
export interface UpstreamRoute {
  name: string;
  url: string;
  staticHeaders: Record<string, string>;
  timeoutMs: number;
  cache: CacheHints;
  /** The upstream, behind the era-neutral seam. */
  upstream: UpstreamClient;
  /** Per-tool task rules, first match wins (exact names and globs compiled to patterns). */
  rules: ReadonlyArray<readonly [RegExp, TaskPolicy]>;
  /** The upstream's tools' task support, learned from its tools/list (refreshed by the runtime). */
  toolSupport?: { at: number; byName: Map<string, TaskSupport> };
}

/** How the gateway treats one tool's calls (the README table under "Wrapped tools"). */
export interface TaskPolicy {
  task: 'native' | 'off' | 'auto' | 'always' | 'required';
  /** auto: answer synchronously if the call ends within this; always/required: the first round's window. */
  afterMs?: number;
  ttlMs?: number;
  maxTtlMs?: number;
  pollIntervalMs?: number;
  /** Budget of a gateway-owned task's upstream call. */
  timeoutMs?: number;
  /** A gateway-owned task whose instance is lost is run again by another instance (idempotent tools only). */
  retryOnLoss?: boolean;
}

/** Whether any rule makes the gateway create tasks itself. */
export function wrapsTools(route: UpstreamRoute): boolean {
  return route.rules.some(([, p]) => p.task === 'auto' || p.task === 'always' || p.task === 'required');
}

/**
 * Whether the runtime must see this route's tool calls even when the upstream speaks the client's era: a rule wraps
 * tools, or a `native` rule's `afterMs` window covers the upstream's tasks (its questions become MRTR rounds of the
 * creating call, its tasks get gateway ids).
 */
export function runtimeServesTools(route: UpstreamRoute): boolean {
  return wrapsTools(route) || route.rules.some(([, p]) => p.task === 'native' && p.afterMs !== undefined);
}

/** Who is calling, and what the request declared (the upstream sees it as an `UpstreamCaller`). */
export interface CallerContext extends UpstreamCaller {
  /** Fingerprint of the caller's credentials; tasks and request states are bound to it. */
  principal: string;
  /**
   * The legacy face session the request came on, when the caller has no credentials (its tasks are listed per session,
   * 2025-11-25 basic/utilities/tasks §Security Considerations).
   */
  session?: string;
}
