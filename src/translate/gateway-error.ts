/**
 * Errors as the gateway raises and answers them, through the catalog (error-catalog.ts) alone: a message template
 * filled, a thrown `GatewayError` naming its entry, and the JSON-RPC error object, HTTP status and retry hint a client
 * gets for an entry (`catalogAnswer`, `answerOf`; `catalogError` for the error object alone, which an outcome or an
 * answer to an upstream's request carries).
 */
import { ERROR_CATALOG, type ErrorKind, type ErrorSpec } from './error-catalog.js';
import { isObject, type JsonRpcErrorObject } from './jsonrpc.js';

/** Fills a message template. */
export function formatMessage(template: string, args: readonly unknown[]): string {
  let i = 0;
  return template.replace(/%s/g, () => (i < args.length ? String(args[i++]) : '%s'));
}

/** Options of a thrown catalog error. */
export interface GatewayErrorOptions {
  /** Arguments of the message template. */
  args?: readonly unknown[];
  /** JSON-RPC `data`. */
  data?: unknown;
  /** Overrides the entry's `retryAfterSeconds` (a value known only when the error happens). */
  retryAfterSeconds?: number;
  cause?: unknown;
}

/** An error the gateway answers with: it names its catalog entry, and the edge maps it through the catalog. */
export class GatewayError extends Error {
  readonly kind: ErrorKind;
  /** The message template's arguments (what a relay to another instance carries to build the same error). */
  readonly args: readonly unknown[];
  readonly data: unknown;
  readonly retryAfterSeconds: number | undefined;
  constructor(kind: ErrorKind, opts: GatewayErrorOptions = {}) {
    super(formatMessage(ERROR_CATALOG[kind].message, opts.args ?? []), opts.cause === undefined ? undefined : { cause: opts.cause });
    this.kind = kind;
    this.args = opts.args ?? [];
    this.data = opts.data;
    this.retryAfterSeconds = opts.retryAfterSeconds ?? (ERROR_CATALOG[kind] as ErrorSpec).retryAfterSeconds;
  }
  override get name(): string {
    return this.constructor.name;
  }
}

/** An error as the client gets it. */
export interface CatalogAnswer {
  kind: ErrorKind;
  status: number;
  error: JsonRpcErrorObject;
  fault: boolean;
  retryAfterSeconds?: number;
}

/** A catalog entry as the client gets it. */
export function catalogAnswer(kind: ErrorKind, opts: GatewayErrorOptions = {}): CatalogAnswer {
  const spec: ErrorSpec = ERROR_CATALOG[kind];
  return answer(kind, formatMessage(spec.message, opts.args ?? []), opts.data, opts.retryAfterSeconds ?? spec.retryAfterSeconds);
}

/** The JSON-RPC error object of a catalog entry: what a task's outcome, a call's answer or an answer to an upstream carries. */
export function catalogError(kind: ErrorKind, opts: GatewayErrorOptions = {}): JsonRpcErrorObject {
  return catalogAnswer(kind, opts).error;
}

/** A thrown `GatewayError` as the client gets it (its message already filled). */
export function answerOf(e: GatewayError): CatalogAnswer {
  return answer(e.kind, e.message, e.data, e.retryAfterSeconds);
}

/**
 * The answer of an entry. A known wait travels twice: as `Retry-After` for HTTP clients, and as `data.retryAfterMs` for
 * those that see the JSON-RPC error only (an SDK's error object, an error inside an SSE stream); a finer `retryAfterMs`
 * already in the data (a poll's, to the millisecond) stays.
 */
function answer(kind: ErrorKind, message: string, data: unknown, retryAfterSeconds: number | undefined): CatalogAnswer {
  const spec: ErrorSpec = ERROR_CATALOG[kind];
  const hinted = retryAfterSeconds !== undefined && (data === undefined || isObject(data)) ? { retryAfterMs: retryAfterSeconds * 1000, ...data } : data;
  const error: JsonRpcErrorObject = hinted === undefined ? { code: spec.rpc, message } : { code: spec.rpc, message, data: hinted };
  return { kind, status: spec.status, error, fault: spec.fault === true, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) };
}

/** The error of a failed task that carries none of its own: its status message when it has one, else `fallback`'s. */
export function taskFailure(statusMessage: string | undefined, fallback: 'GW_TASK_FAILED' | 'GW_UPSTREAM_TASK_FAILED' = 'GW_TASK_FAILED'): JsonRpcErrorObject {
  return statusMessage === undefined ? catalogError(fallback) : catalogError('GW_TASK_FAILED_BECAUSE', { args: [statusMessage] });
}
