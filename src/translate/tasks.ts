/**
 * Tasks, era-neutral: the task record the gateway stores, the state of a task read off either era's wire, and the
 * mappings between 2025-11-25 core tasks (legacy: `legacy-tasks.ts`) and the 2026-07-28
 * `io.modelcontextprotocol/tasks` extension (modern: `modern-tasks.ts`) that do not belong to one era: statuses,
 * retention and poll interval, and a task's outcome (2025-11-25 basic/utilities/tasks §Data Types; tasks extension
 * §Tasks, §Task Polling). Pure: time and ids are arguments.
 */
import { META } from './constants.js';
import { isObject, type JsonObject, type JsonRpcErrorObject } from './jsonrpc.js';
import type { InputRequest } from './input.js';

/**
 * The five task statuses (same names in both eras; `failed` means different things: a legacy tool task with `isError`
 * fails, 2025-11-25 basic/utilities/tasks).
 */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** Terminal statuses. */
export const TERMINAL_STATUSES: readonly TaskStatus[] = ['completed', 'failed', 'cancelled'];

/** Whether a status is terminal. */
export function isTerminal(status: TaskStatus): boolean {
  return TERMINAL_STATUSES.includes(status);
}

/** A gateway-minted task id (≥128 bits of randomness, URL-safe). */
export type TaskId = string & { readonly __brand: 'TaskId' };

/** Who owns the work: the upstream (its own task id) or the gateway (a wrapped call). */
export type TaskKind = 'proxied' | 'owned';

/** Everything any gateway instance needs to answer tasks/get|update|cancel. Live objects are kept elsewhere. */
export interface TaskRecord {
  taskId: TaskId;
  principal: string;
  upstream: string;
  kind: TaskKind;
  /** The upstream's own task id (proxied tasks). */
  upstreamTaskId?: string;
  /**
   * The legacy face session that created it, when the caller had no credentials: a 2025-11-25 `tasks/list` then lists
   * that session's tasks only (2025-11-25 basic/utilities/tasks §Security Considerations).
   */
  session?: string;
  /** The client era that created it (decides how its status notifications are sent). */
  origin?: 'legacy' | 'modern';
  tool: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  /** Retention from creation, ms; `null` = unlimited (never stored as such: the gateway bounds it). */
  ttlMs: number | null;
  pollIntervalMs?: number;
  /** Terminal outcome, modern shape: `result` (with `resultType:"complete"`) or `error`. */
  result?: JsonObject;
  error?: JsonRpcErrorObject;
  /** Outstanding input requests by task-unique key. */
  inputRequests?: Record<string, InputRequest>;
  /**
   * The gateway instance that runs the work (owned) or follows the upstream task (proxied); the store's lease says
   * whether it still does. Absent for a one-instance store.
   */
  owner?: string;
  /** The upstream session a legacy upstream's task lives in (proxied tasks: another instance reaches it there). */
  upstreamSession?: string;
  /**
   * What another instance needs to take the work over (the caller's credentials and capabilities, an owned task's
   * call), sealed with the gateway's shared secret: opaque here, never logged.
   */
  sealed?: string;
  /** How many times an owned task's call has been started (a `retryOnLoss` takeover starts it again). */
  attempt?: number;
  /**
   * A job task (a proxied task whose upstream work is a hand-rolled job driven by the server's own tools, rule
   * `task: job`): the handle the start tool returned, as it returned it, and the rule that drives it as configured
   * when it started (any instance can go on polling it, whatever its own configuration says by then).
   */
  job?: { handle: unknown; rule: JsonObject };
  /** Compare-and-set version, incremented by every change. */
  version: number;
}

/**
 * A task as an upstream of either era reports it, in the gateway's terms: modern field names, `ttlMs` and
 * `pollIntervalMs` normalised, the outcome in modern shape. Read with `taskSnapshotFromLegacy` / `taskSnapshotFromModern`.
 */
export interface TaskSnapshot {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  /** As the upstream reported them, when it did (a compliant one always does). */
  createdAt?: string;
  lastUpdatedAt?: string;
  /** Retention from creation in ms; `null` unlimited. */
  ttlMs: number | null;
  pollIntervalMs?: number;
  /** `completed`: the result in modern shape (`resultType: "complete"`). */
  result?: JsonObject;
  /** `failed`: the JSON-RPC error. */
  error?: JsonRpcErrorObject;
  /** `input_required`: every outstanding input request by its task-unique key. */
  inputRequests?: Record<string, InputRequest>;
  /** `_meta` of the creating result (e.g. `io.modelcontextprotocol/model-immediate-response`), when there was one. */
  meta?: JsonObject;
}

/**
 * A wire retention (`ttl` of 2025-11-25, `ttlMs` of 2026-07-28) → the gateway's `ttlMs`: null kept, missing → null,
 * rounded, ≤0 → 1 (the tasks extension types `ttlMs` as a positive integer or null; 2025-11-25 servers built on the
 * TypeScript SDK 1.x type `ttl` as any number).
 */
export function ttlMsFromWire(ttl: unknown): number | null {
  if (ttl === null || ttl === undefined) return null;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl)) return null;
  return Math.max(1, Math.round(ttl));
}

/** A wire poll interval (`pollInterval` / `pollIntervalMs`) → a positive integer of ms, or absent. */
export function pollIntervalMsFromWire(v: unknown): number | undefined {
  if (typeof v !== 'number' || !Number.isFinite(v)) return undefined;
  const n = Math.round(v);
  return n > 0 ? n : undefined;
}

/** A legacy `ttl` → modern `ttlMs` (the name the proxied-task code has used since the first era bridge). */
export const ttlMsFromLegacy = ttlMsFromWire;

/** A legacy `pollInterval` → modern `pollIntervalMs` (kept name of `pollIntervalMsFromWire`). */
export const pollIntervalMsFromLegacy = pollIntervalMsFromWire;

/**
 * The status a 2025-11-25 requestor sees for a task in a given state: a completed tool call whose result has
 * `isError: true` is `failed` there (2025-11-25 basic/utilities/tasks §Task Status: for tool calls a tool error
 * fails the task), whereas the tasks extension keeps it `completed` (tasks extension §Task Execution Errors).
 */
export function legacyStatus(status: TaskStatus, result?: JsonObject): TaskStatus {
  return status === 'completed' && result?.isError === true ? 'failed' : status;
}

/**
 * A legacy message's result or params without the related-task `_meta` (an emptied or malformed `_meta` dropped): the
 * tasks extension names the task in `params.taskId` and has no such key (e.g. a 2025-11-25 client's answer to a
 * task-scoped request, sent on as a `tasks/update` input response).
 */
export function withoutRelatedTask(legacy: JsonObject): JsonObject {
  if (!('_meta' in legacy)) return legacy;
  const { _meta: m, ...rest } = legacy;
  if (!isObject(m)) return rest;
  const meta = { ...m };
  delete meta[META.relatedTask];
  return Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest;
}

/**
 * An inlined modern result from a legacy payload (`tasks/result` or a wrapped call's result): related-task `_meta`
 * removed (conformance rejects it on an inlined result), `resultType:"complete"` inside (the
 * `@modelcontextprotocol/ext-tasks` client rejects an inner result without it).
 */
export function inlineResult(legacy: JsonObject): JsonObject {
  return { ...withoutRelatedTask(legacy), resultType: 'complete' };
}

/**
 * The terminal outcome of a task from its legacy payload: any tool result (isError included) completes, a JSON-RPC
 * error fails (tasks extension §Task Execution Errors; so a legacy `failed` task becomes modern `completed` or
 * `failed` by what its `tasks/result` returns).
 */
export function outcomeFromPayload(
  payload: { result: JsonObject } | { error: JsonRpcErrorObject },
): { status: 'completed'; result: JsonObject } | { status: 'failed'; error: JsonRpcErrorObject } {
  if ('error' in payload) return { status: 'failed', error: payload.error };
  return { status: 'completed', result: inlineResult(payload.result) };
}
