/**
 * Which face serves one request at an upstream's endpoint — passed through to the upstream, the legacy face, or the
 * modern face (and over which route) — as a pure function of what is known of the request, the upstream and the
 * route's rules (2026-07-28 basic/versioning §Compatibility Matrix; docs/how-it-works.md §Routing).
 */
import { declaresTasks, isObject, legacySupportsToolTasks, type Era, type JsonObject } from '../translate/index.js';
import type { UpstreamEras } from '../upstream/index.js';

/** What a route's tool rules say, as the decision asks it (lookups, read at the moment of the decision). */
export interface RouteRules {
  /** A rule's mode makes the tool's tasks the gateway's own (`makesTasks`, translate/task-modes.ts). */
  wrapsTools(): boolean;
  /** The runtime serves some tool calls itself (a rule that `needsGateway`: it wraps, or a window covers the upstream's tasks). */
  servesTools(): boolean;
  /** A `job` rule: every `tools/list` is then the gateway's (plumbing hidden, start tools' output schemas). */
  shapesToolList(): boolean;
  /** The call of this tool is the gateway's: its rule wraps it (or `native` with `afterMs`). */
  wrapsTool(name: string): boolean;
  /** This tool is one a job rule hides (the runtime refuses its direct call). */
  hidesTool(name: string): boolean;
}

/** What the decision reads. */
export interface FaceFacts {
  /** The client's era (GET and DELETE are 2025-11-25 session traffic). */
  clientEra: Era;
  /** The request's parsed body (a POST's JSON-RPC message), or `undefined`. */
  body: unknown;
  /** The upstream's eras, or `undefined` when they could not be learned for this request (down, probe failed). */
  eras: UpstreamEras | undefined;
  /** The eras last known, read when `eras` is `undefined`: the gateway's own task records answer without the upstream. */
  lastKnownEras?: UpstreamEras | undefined;
  rules: RouteRules;
  /**
   * Whether the 2026-07-28 upstream declares the tasks extension (its own tasks pass through untouched); `undefined`:
   * not asked, and the decision is `ask` when it needs it.
   */
  upstreamHasTasks?: boolean | undefined;
}

/**
 * Who serves the request: `pass-through` (the upstream, in the client's era), `legacy` (the legacy face), `modern`
 * over `route` (the upstream's own client: its legacy sessions when it lacks 2026-07-28) or `modern-route` (its
 * stateless 2026-07-28 client), `unavailable` (the upstream's eras could not be learned: refused), or `ask` (decide
 * again once `upstreamHasTasks` is known).
 */
export type FaceDecision =
  | { face: 'pass-through' }
  | { face: 'legacy' }
  | { face: 'modern'; over: 'route' | 'modern-route' }
  | { face: 'unavailable' }
  | { face: 'ask'; fact: 'upstreamHasTasks' };

const PASS: FaceDecision = { face: 'pass-through' };
const LEGACY: FaceDecision = { face: 'legacy' };
const OVER_ROUTE: FaceDecision = { face: 'modern', over: 'route' };
const OVER_MODERN: FaceDecision = { face: 'modern', over: 'modern-route' };
const UNAVAILABLE: FaceDecision = { face: 'unavailable' };
const ASK: FaceDecision = { face: 'ask', fact: 'upstreamHasTasks' };

/** Requests about tasks (2026-07-28 tasks extension), which the modern face answers from its own records. */
export const TASK_METHODS: ReadonlySet<string> = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

/** Gateway-minted task ids start so (the runtime's `mintTaskId`); any other id is the upstream's own. */
const GATEWAY_TASK_ID = /^gwt_/;

/**
 * Whether the upstream serves `era` itself. One that answered neither probe question is taken as legacy, as the
 * fallback rule reads a non-modern answer (2026-07-28 basic/transports/streamable-http §Backward Compatibility).
 */
export function speaks(eras: UpstreamEras, era: Era): boolean {
  return era === 'modern' ? eras.modern : eras.legacy || !eras.modern;
}

/**
 * The face that serves a request. In its own era whenever the upstream speaks it (legacy → dual and modern → dual
 * included): a gateway must never make a working pairing fail. Translation only where the upstream lacks the client's
 * era, and the gateway's own tasks where rules wrap tools. While the upstream's eras cannot be learned, a modern
 * request about tasks is still answered from the gateway's own records (a task outlives its upstream's outage).
 */
export function decideFace(facts: FaceFacts): FaceDecision {
  const { clientEra, body, eras } = facts;
  if (eras === undefined) {
    const known = facts.lastKnownEras;
    if (clientEra !== 'modern' || !known || !isTaskRequest(body)) return UNAVAILABLE;
    const d = modernFace(facts, known);
    return d.face === 'pass-through' ? UNAVAILABLE : d;
  }
  if (clientEra === 'legacy') return legacyPassesThrough(eras, facts.rules) ? PASS : LEGACY;
  return modernFace(facts, eras);
}

/** A request about tasks (`tasks/get`, `tasks/update`, `tasks/cancel`). */
function isTaskRequest(body: unknown): boolean {
  return isObject(body) && typeof body.method === 'string' && TASK_METHODS.has(body.method);
}

/**
 * A legacy client passes through when the upstream speaks its era and no rule wraps tools (a wrapped tool needs
 * the gateway's own tasks and calls, which only the face serves), unless the upstream runs tasks only in its
 * 2026-07-28 leg (its `server/discover` declares the tasks extension, its `initialize` no tool tasks): the face
 * then gives the legacy client those tasks.
 */
function legacyPassesThrough(eras: UpstreamEras, rules: RouteRules): boolean {
  if (!speaks(eras, 'legacy') || rules.wrapsTools()) return false;
  const discover = eras.discover;
  const modernTasks = eras.modern && isObject(discover) && isObject(discover.capabilities) && declaresTasks(discover.capabilities);
  const legacyTasks = eras.identity !== undefined && legacySupportsToolTasks(eras.identity.capabilities);
  return !modernTasks || legacyTasks;
}

/**
 * The modern face for a modern request, or a pass-through: everything, over the legacy sessions, for an upstream
 * without 2026-07-28; for one that speaks it, only what wrapping rules make the gateway's own (the extension's
 * advertisement, calls of wrapped tools, requests about gateway tasks, and every task request when the upstream has no
 * tasks of its own), so that the upstream's own tasks keep working untouched.
 */
function modernFace(facts: FaceFacts, eras: UpstreamEras): FaceDecision {
  const { body, rules } = facts;
  if (!speaks(eras, 'modern')) return OVER_ROUTE;
  if (!rules.servesTools() || !isObject(body) || typeof body.method !== 'string') return PASS;
  const params: JsonObject = isObject(body.params) ? body.params : {};
  /** The upstream's own tasks decide: without them, the modern face answers. */
  const unlessUpstreamTasks = (): FaceDecision => (facts.upstreamHasTasks === undefined ? ASK : facts.upstreamHasTasks ? PASS : OVER_MODERN);
  switch (body.method) {
    case 'server/discover':
      return OVER_MODERN;
    case 'tools/call': {
      const name = typeof params.name === 'string' ? params.name : '';
      // A tool a job rule hides is refused by the runtime, not passed to the upstream.
      return rules.wrapsTool(name) || rules.hidesTool(name) ? OVER_MODERN : PASS;
    }
    case 'tools/list':
      return rules.shapesToolList() ? OVER_MODERN : PASS;
    case 'subscriptions/listen': {
      const n = isObject(params.notifications) ? params.notifications : {};
      const ids = Array.isArray(n.taskIds) ? n.taskIds : [];
      if (ids.length === 0) return PASS;
      return ids.some((id) => typeof id === 'string' && GATEWAY_TASK_ID.test(id)) ? OVER_MODERN : unlessUpstreamTasks();
    }
    default:
      if (!TASK_METHODS.has(body.method)) return PASS;
      if (typeof params.taskId === 'string' && GATEWAY_TASK_ID.test(params.taskId)) return OVER_MODERN;
      // An upstream without the extension has no tasks: the modern face answers as the extension says (-32021 to a
      // request that does not declare it, -32602 for an unknown id; tasks extension §Protocol Errors).
      return unlessUpstreamTasks();
  }
}
