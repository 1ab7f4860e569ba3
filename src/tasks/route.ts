/** What the runtime knows about one upstream route. */
import { drivesJob, isObject, makesTasks, needsGateway, type CacheHints, type JsonObject, type TaskMode, type TaskSupport } from '../translate/index.js';
import type { UpstreamAvailability, UpstreamCaller, UpstreamClient } from '../upstream/index.js';
import type { JobSpec } from './jobs/job-rule.js';

/** One upstream as the runtime sees it. */
export interface UpstreamRoute {
  name: string;
  url: string;
  /** Headers the operator configured for the upstream; shared by every copy of the route, replaced by `replaceHeaders`. */
  staticHeaders: Record<string, string>;
  timeoutMs: number;
  cache: CacheHints;
  /** The upstream, behind the era-neutral seam. */
  upstream: UpstreamClient;
  /**
   * Per-tool task rules, first match wins (exact names and globs compiled to patterns). Every copy of a route shares
   * this list (copies are shallow): a reload replaces its entries in place (`replaceRules`), and every reader sees
   * the new rules at its next lookup.
   */
  rules: ReadonlyArray<readonly [RegExp, TaskPolicy]>;
  /** The upstream's tools' task support, learned from its tools/list (refreshed by the runtime). */
  toolSupport?: { at: number; byName: Map<string, TaskSupport> };
  /**
   * Present on the route of a federated endpoint (several upstreams on one path, docs/federation.md): its tool calls
   * and tasks are its members' routes'; `upstream` is the federated client that merges and routes the rest.
   */
  federation?: FederationRouting;
}

/** What the runtime asks of a federated endpoint's route (tasks/federation/federation.ts). */
export interface FederationRouting {
  /** Whether `upstream` (a configured upstream's name) is a member: its tasks are this endpoint's. */
  has(upstream: string): boolean;
  /** The members' upstream names, in configuration order. */
  readonly members: readonly string[];
  /**
   * The member route and the upstream's own name of a tool or prompt as this caller sees it; `undefined` when the caller
   * sees no such name (unknown, filtered or denied: one answer). Rejects with the member's `UpstreamDownError` when
   * the name is a member's that is known to be down.
   */
  target(kind: 'tool' | 'prompt', name: string, caller: CallerContext, signal?: AbortSignal): Promise<{ route: UpstreamRoute; name: string } | undefined>;
  /** Every name two members would both show to `caller` now (members that are down are not asked). */
  collisionsNow(caller: CallerContext, signal?: AbortSignal): Promise<Array<{ kind: 'tool' | 'prompt'; name: string; kept: string; hidden: string }>>;
  /** A member's call failed with `e`: the member is asked again at once when the failure says it may be down. */
  failed(upstream: string, e: unknown): void;
  /** What a member speaks and whether it is up (what a call passed through to it learns anew from). */
  availabilityOf(member: string): UpstreamAvailability;
}

/** Whether a task of `upstream` belongs to the route: its own, or a member's of a federated route. */
export function servesUpstream(route: UpstreamRoute, upstream: string): boolean {
  return route.name === upstream || (route.federation?.has(upstream) ?? false);
}

/** How the gateway treats one tool's calls (docs/tasks.md, "Wrapped tools"). */
export interface TaskPolicy {
  /** The mode; what each one is: translate/task-modes.ts. */
  task: TaskMode;
  /** How long a call runs before its answer is a task, or the first round's window (by the mode's `afterMs` trait). */
  afterMs?: number;
  ttlMs?: number;
  maxTtlMs?: number;
  pollIntervalMs?: number;
  /** Budget of a gateway-owned task's upstream call. */
  timeoutMs?: number;
  /** A gateway-owned task whose instance is lost is run again by another instance (idempotent tools only). */
  retryOnLoss?: boolean;
  /** `job`: how the hand-rolled job is read and driven (docs/jobs.md). */
  job?: JobSpec;
}

/**
 * Replaces a route's tool rules in place (a reload): the list object stays, so every shallow copy of the route (the
 * edge's per-era routes, the runtime's registered ones) reads the new rules at its next lookup. Lookups are
 * synchronous, so none ever sees half of a replacement.
 */
export function replaceRules(route: UpstreamRoute, next: ReadonlyArray<readonly [RegExp, TaskPolicy]>): void {
  (route.rules as Array<readonly [RegExp, TaskPolicy]>).splice(0, route.rules.length, ...next);
}

/** Replaces a route's static headers in place (a reload), for every copy of the route, as `replaceRules` does. */
export function replaceHeaders(route: UpstreamRoute, next: Record<string, string>): void {
  for (const k of Object.keys(route.staticHeaders)) delete route.staticHeaders[k];
  Object.assign(route.staticHeaders, next);
}

/** Whether any rule makes the gateway create tasks itself. */
export function wrapsTools(route: UpstreamRoute): boolean {
  return route.rules.some(([, p]) => makesTasks(p.task));
}

/**
 * Whether a tool is one a job rule hides (its status, result or cancel tool): not listed to clients, refused
 * when called directly (`GW_TOOL_NOT_FOUND`). The gateway itself calls it.
 */
export function hidesTool(route: UpstreamRoute, tool: string): boolean {
  for (const [, p] of route.rules) if (drivesJob(p.task) && p.job?.hide?.includes(tool)) return true;
  return false;
}

/** Whether any job rule hides tools on this route. */
function hidesTools(route: UpstreamRoute): boolean {
  return route.rules.some(([, p]) => drivesJob(p.task) && (p.job?.hide?.length ?? 0) > 0);
}

/**
 * Whether the route has a `task: job` rule: then every `tools/list` is the gateway's to show (the plumbing hidden, each
 * start tool listed with its result tool's `outputSchema`; tasks/jobs/job-listing.ts).
 */
export function shapesToolList(route: UpstreamRoute): boolean {
  return route.rules.some(([, p]) => drivesJob(p.task));
}

/** A `tools/list` result without the tools the route's job rules hide (unchanged when none are hidden). */
export function withoutHiddenTools(route: UpstreamRoute, result: JsonObject): JsonObject {
  if (!hidesTools(route) || !Array.isArray(result.tools)) return result;
  return { ...result, tools: result.tools.filter((t) => !(isObject(t) && typeof t.name === 'string' && hidesTool(route, t.name))) };
}

/**
 * Whether the runtime must see this route's tool calls even when the upstream speaks the client's era: some rule needs
 * the gateway in its tool's path (`needsGateway`: it wraps the tool, or its `afterMs` window covers the upstream's tasks).
 */
export function runtimeServesTools(route: UpstreamRoute): boolean {
  return route.rules.some(([, p]) => needsGateway(p));
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
  /** What access rules read of the caller (docs/federation.md §Access): set by the edge from its credentials. */
  subject?: CallerSubject;
}

/**
 * Who the caller is as an operator names it: the `header` mode's identity, a JWT's `sub` (with its scopes and claims);
 * absent for `bearer` and `none` callers.
 */
export interface CallerSubject {
  name?: string;
  scopes?: readonly string[];
  claims?: JsonObject;
}
