/**
 * What one MCP request ended as, typed: every path that serves a request (both faces, pass-through, the endpoint's
 * refusals) ends it with a `RequestOutcome`, and the operator log's text, the metrics' outcome label and the span's
 * error code are all read from it here, by tables that a new kind must fill in (a kind left out fails typecheck), so
 * that rewording a log line cannot change a metric.
 */
import { GatewayError, type ErrorKind, type TaskStatus } from '../translate/index.js';

/** Outcome labels besides the catalog's codes (which name every error the gateway answers itself). */
export const OUTCOME_WORDS = [
  'ok',
  'task_created',
  'input_required',
  'client_closed',
  'cancelled',
  'upstream_error',
  'upstream_http_4xx',
  'upstream_http_5xx',
  'error',
] as const;

/** The `outcome` label of `mcp_gateway_requests_total`: a word above or a catalog code. */
export type OutcomeLabel = (typeof OUTCOME_WORDS)[number] | ErrorKind;

/** The result types of 2026-07-28 (basic §ResultType) a modern result the gateway forwards may name. */
export type ModernResultType = 'complete' | 'task' | 'input_required';

/** What a request ended as, by kind; each kind's fields are what its log text needs. */
type OutcomeKind =
  /** Answered (a result of the gateway's own, or a legacy result passed on). */
  | { kind: 'ok' }
  /** A legacy `initialize` the face answered with a new session. */
  | { kind: 'session-created' }
  /** A `subscriptions/listen` stream that ran to its end. */
  | { kind: 'subscription-ended' }
  /** A legacy task-augmented `tools/call` answered with its task. */
  | { kind: 'task-created' }
  /** A modern result forwarded to the client, by its `resultType` (absent: `complete`). */
  | { kind: 'result'; resultType: ModernResultType }
  /** A modern result with a `resultType` of the upstream's own (not one of 2026-07-28's). */
  | { kind: 'other-result'; resultType: string }
  /** A modern `tasks/get` answered with the task's status. */
  | { kind: 'task-status'; status: TaskStatus }
  /** A legacy `tasks/result` answered once its task ended, with the status it ended in. */
  | { kind: 'task-result'; status: TaskStatus }
  /** The client went away before the answer. */
  | { kind: 'client-closed' }
  /** The client cancelled the request (`notifications/cancelled`). */
  | { kind: 'cancelled' }
  /** The client did not answer a server→client request in time. */
  | { kind: 'input-timeout' }
  /** A modern result a legacy client cannot be given. */
  | { kind: 'unsupported-result-type' }
  /** A removed method the modern face names as not found. */
  | { kind: 'method-not-found' }
  /** A task that expired while `tasks/result` waited for it. */
  | { kind: 'expired' }
  /** An error the gateway answered, with its JSON-RPC code when the client was answered one. */
  | { kind: 'error'; code?: number }
  /** An upstream's JSON-RPC error, passed on. */
  | { kind: 'upstream-error'; code: number }
  /** A passed-through answer with an HTTP error status. */
  | { kind: 'upstream-http'; status: '4xx' | '5xx' };

/**
 * One request's outcome. `failure`: the catalog entry the request failed with (a thrown `GatewayError`'s kind, else
 * GW_INTERNAL, as the edge answers it); when present it is the metrics' label whatever the kind.
 */
export type RequestOutcome = OutcomeKind & { readonly failure?: ErrorKind };

type Kind = RequestOutcome['kind'];
type Of<K extends Kind> = Extract<RequestOutcome, { kind: K }>;
/** A table with one row per kind: a fixed value, or one read from the outcome's fields. */
type Table<T> = { readonly [K in Kind]: T | ((o: Of<K>) => T) };

/** The label of a poll's answer, by the status it found (the words that are labels too are kept as such). */
const TASK_STATUS_LABELS: Readonly<Record<TaskStatus, OutcomeLabel>> = {
  working: 'ok',
  input_required: 'input_required',
  completed: 'ok',
  failed: 'ok',
  cancelled: 'cancelled',
};

/** The label of a forwarded modern result, by its result type. */
const RESULT_TYPE_LABELS: Readonly<Record<ModernResultType, OutcomeLabel>> = {
  complete: 'ok',
  task: 'task_created',
  input_required: 'input_required',
};

/** The operator log's `outcome` text of each kind. */
const TEXTS: Table<string> = {
  ok: 'ok',
  'session-created': 'session created',
  'subscription-ended': 'subscription ended',
  'task-created': 'task created',
  result: (o) => o.resultType,
  'other-result': (o) => o.resultType,
  'task-status': (o) => o.status,
  'task-result': (o) => `task ${o.status}`,
  'client-closed': 'client closed',
  cancelled: 'cancelled',
  'input-timeout': 'input timeout',
  'unsupported-result-type': 'unsupported result type',
  'method-not-found': 'method not found',
  expired: 'expired',
  error: (o) => (o.code === undefined ? 'error' : `error ${o.code}`),
  'upstream-error': (o) => `upstream error ${o.code}`,
  'upstream-http': (o) => `upstream_http_${o.status}`,
};

/** The metrics' outcome label of each kind (when no catalog failure names it). */
const LABELS: Table<OutcomeLabel> = {
  ok: 'ok',
  'session-created': 'ok',
  'subscription-ended': 'ok',
  'task-created': 'task_created',
  result: (o) => RESULT_TYPE_LABELS[o.resultType],
  // The request itself succeeded; the upstream's word is not a label.
  'other-result': 'ok',
  'task-status': (o) => TASK_STATUS_LABELS[o.status],
  // tasks/result answered: the request succeeded, whatever its task ended as.
  'task-result': 'ok',
  'client-closed': 'client_closed',
  cancelled: 'cancelled',
  'input-timeout': 'GW_CLIENT_ANSWER_TIMEOUT',
  'unsupported-result-type': 'GW_UNSUPPORTED_RESULT_TYPE',
  'method-not-found': 'GW_METHOD_NOT_FOUND',
  expired: 'GW_TASK_EXPIRED',
  error: 'error',
  'upstream-error': 'upstream_error',
  'upstream-http': (o) => (o.status === '5xx' ? 'upstream_http_5xx' : 'upstream_http_4xx'),
};

/** The row of `table` for `o`. */
function read<T>(table: Table<T>, o: RequestOutcome): T {
  const row = table[o.kind] as T | ((o: RequestOutcome) => T);
  return typeof row === 'function' ? (row as (o: RequestOutcome) => T)(o) : row;
}

/** The operator log's `outcome` text (the words the log has always used). */
export function outcomeText(o: RequestOutcome): string {
  return read(TEXTS, o);
}

/** The metrics' outcome label: the catalog code of the failure when there is one, else the kind's label. */
export function outcomeLabel(o: RequestOutcome): OutcomeLabel {
  return o.failure ?? read(LABELS, o);
}

/** The JSON-RPC error code the client was answered, for the request's span (none: the request did not fail so). */
export function spanErrorCode(o: RequestOutcome): number | undefined {
  return o.kind === 'error' || o.kind === 'upstream-error' ? o.code : undefined;
}

// ── The outcomes producers return ──────────────────────────────────────────────────────────────────────────────

/** Answered (every request passes here: the outcomes without fields are shared, never copied). */
export const OK: RequestOutcome = Object.freeze({ kind: 'ok' });
export const SESSION_CREATED: RequestOutcome = Object.freeze({ kind: 'session-created' });
export const SUBSCRIPTION_ENDED: RequestOutcome = Object.freeze({ kind: 'subscription-ended' });
export const TASK_CREATED: RequestOutcome = Object.freeze({ kind: 'task-created' });
export const CLIENT_CLOSED: RequestOutcome = Object.freeze({ kind: 'client-closed' });
export const CANCELLED: RequestOutcome = Object.freeze({ kind: 'cancelled' });
export const INPUT_TIMEOUT: RequestOutcome = Object.freeze({ kind: 'input-timeout' });
export const UNSUPPORTED_RESULT_TYPE: RequestOutcome = Object.freeze({ kind: 'unsupported-result-type' });
export const METHOD_NOT_FOUND: RequestOutcome = Object.freeze({ kind: 'method-not-found' });
export const EXPIRED: RequestOutcome = Object.freeze({ kind: 'expired' });

/** The catalog entry an exception is answered with: a `GatewayError`'s kind, anything else GW_INTERNAL. */
export function failureOf(e: unknown): ErrorKind {
  return e instanceof GatewayError ? e.kind : 'GW_INTERNAL';
}

/** An error the gateway answered itself (`code`: the JSON-RPC code the client got); `e`: the exception it came from. */
export function errorOutcome(code: number | undefined, e?: unknown): RequestOutcome {
  const o: { kind: 'error'; code?: number; failure?: ErrorKind } = { kind: 'error' };
  if (code !== undefined) o.code = code;
  if (e !== undefined) o.failure = failureOf(e);
  return o;
}

/** An upstream's JSON-RPC error passed on to the client. */
export function upstreamErrorOutcome(code: number): RequestOutcome {
  return { kind: 'upstream-error', code };
}

/** The client went away; the catalog failure the request had met before, if any, stays its label. */
export function clientClosed(failure: ErrorKind | undefined): RequestOutcome {
  return failure === undefined ? CLIENT_CLOSED : { kind: 'client-closed', failure };
}

/** A forwarded modern result, by its `resultType` (absent: `complete`, as 2026-07-28 basic §ResultType reads it). */
export function resultOutcome(resultType: unknown): RequestOutcome {
  const type = resultType ?? 'complete';
  if (typeof type === 'string' && Object.hasOwn(RESULT_TYPE_LABELS, type)) return { kind: 'result', resultType: type as ModernResultType };
  return { kind: 'other-result', resultType: String(type) };
}

/** A modern task request's answer: its task's status when it names one (`tasks/get`), else answered. */
export function taskStatusOutcome(status: unknown): RequestOutcome {
  return typeof status === 'string' && Object.hasOwn(TASK_STATUS_LABELS, status) ? { kind: 'task-status', status: status as TaskStatus } : OK;
}

/** A legacy `tasks/result` answered with what its task ended as. */
export function taskResultOutcome(status: TaskStatus): RequestOutcome {
  return { kind: 'task-result', status };
}

/**
 * A passed-through request, from how its answer ended: not finished (the client went away), else by HTTP status;
 * `failure`: the catalog entry the gateway answered it with instead of the upstream, if it did.
 */
export function passThroughOutcome(finished: boolean, status: number, failure: ErrorKind | undefined): RequestOutcome {
  const o: RequestOutcome = !finished ? CLIENT_CLOSED : status < 400 ? OK : { kind: 'upstream-http', status: status >= 500 ? '5xx' : '4xx' };
  return failure === undefined ? o : { ...o, failure };
}
