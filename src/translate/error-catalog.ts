/**
 * Every error the gateway answers with, in one table: a stable code, the JSON-RPC error code, the HTTP status and the
 * message (a template: each `%s` is replaced by the next argument), in the style of `@fastify/error`. Errors the
 * gateway throws are `GatewayError`s naming their entry; the edge turns any of them into a response through this
 * table alone, and a test pins the table so that a change to it is deliberate.
 *
 * Status 200 marks an in-band error: the request was understood and the answer is a JSON-RPC error (an unknown task,
 * 2025-11-25 basic/utilities/tasks §Protocol Errors; tasks extension §Protocol Errors).
 */
import { ErrorCode } from './constants.js';
import type { JsonRpcErrorObject } from './jsonrpc.js';

/** One catalog entry. */
export interface ErrorSpec {
  /** JSON-RPC error code. */
  readonly rpc: number;
  /** HTTP status of the response carrying it. */
  readonly status: number;
  /** Message template; `%s` placeholders take the error's arguments in order. */
  readonly message: string;
  /** Seconds after which a retry may succeed (sent as `Retry-After`, RFC 9110 §10.2.3), when it is known up front. */
  readonly retryAfterSeconds?: number;
  /** A gateway fault (logged as an error), not the caller's or an upstream's. */
  readonly fault?: boolean;
}

/**
 * The catalog. Grouped by where the error arises; a new error gets an entry here and nowhere else. Codes are stable
 * (operators may alert on them); messages may name values but never secrets, payloads or session ids.
 */
export const ERROR_CATALOG = {
  // ── HTTP layer: what reaches the gateway before it is a JSON-RPC message ──
  GW_PARSE_ERROR: { rpc: ErrorCode.ParseError, status: 400, message: 'Parse error: the body is not valid JSON' },
  GW_EMPTY_BODY: { rpc: ErrorCode.ParseError, status: 400, message: 'Parse error: empty body' },
  GW_BODY_TOO_LARGE: { rpc: ErrorCode.InvalidRequest, status: 413, message: 'Request body too large' },
  GW_UNSUPPORTED_MEDIA_TYPE: { rpc: ErrorCode.InvalidRequest, status: 415, message: 'Unsupported Content-Type: use application/json' },
  GW_INVALID_CONTENT_LENGTH: { rpc: ErrorCode.InvalidRequest, status: 400, message: 'Invalid Content-Length' },
  GW_BAD_REQUEST: { rpc: ErrorCode.InvalidRequest, status: 400, message: 'Bad request: %s' },
  GW_FORBIDDEN_HOST: { rpc: ErrorCode.InvalidRequest, status: 403, message: 'Forbidden: Host or Origin not allowed' },
  GW_NOT_FOUND: { rpc: ErrorCode.InvalidRequest, status: 404, message: 'Not found' },
  GW_INTERNAL: { rpc: ErrorCode.InternalError, status: 500, message: 'Internal error', fault: true },

  // ── Tasks ──
  GW_TASK_UNKNOWN: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Unknown task' },
  GW_TASK_TERMINAL: { rpc: ErrorCode.InvalidParams, status: 200, message: "Cannot cancel task: already in terminal status '%s'" },
  GW_INVALID_CURSOR: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Invalid cursor' },
  GW_TOO_MANY_TASKS: { rpc: ErrorCode.InternalError, status: 429, message: 'Too many active tasks (limit %s); let some finish or cancel them' },
  GW_STORE_FULL: { rpc: ErrorCode.InternalError, status: 503, message: 'Task store full' },
  GW_STORE_UNAVAILABLE: { rpc: ErrorCode.InternalError, status: 503, message: 'Task store unavailable; retry shortly', retryAfterSeconds: 1 },
  GW_MISSING_CAPABILITY: { rpc: ErrorCode.MissingRequiredClientCapability, status: 400, message: '%s' },

  // ── MRTR ──
  GW_INVALID_REQUEST_STATE: { rpc: ErrorCode.InvalidParams, status: 400, message: 'Invalid requestState' },
  GW_INSTANCE_GONE: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: 'Invalid requestState: the gateway instance holding this request is gone; send the request again without requestState',
  },

  // ── Input validation: what a client sends is checked against what was asked before it reaches an upstream ──
  /** A reserved `_meta` value of the wrong type (2026-07-28 schema `RequestMetaObject`). */
  GW_INVALID_META: { rpc: ErrorCode.InvalidParams, status: 400, message: 'Invalid params: %s must be %s' },
  /** An answer under a key the gateway never asked (MRTR retry); the held round stays usable. */
  GW_UNKNOWN_INPUT_KEY: { rpc: ErrorCode.InvalidParams, status: 400, message: 'Invalid params: inputResponses key %s was not asked' },
  /** An answer that does not fit the request it answers; nothing was sent upstream and the question stays open. */
  GW_INVALID_INPUT_RESPONSE: { rpc: ErrorCode.InvalidParams, status: 400, message: 'Invalid params: the answer to input request %s is invalid (%s)' },

  // ── Upstream ──
  GW_UPSTREAM_TIMEOUT: { rpc: ErrorCode.InternalError, status: 504, message: 'Upstream timed out' },
  GW_UPSTREAM_UNAVAILABLE: { rpc: ErrorCode.InternalError, status: 502, message: 'Upstream unavailable: %s' },
  GW_UPSTREAM_DOWN: { rpc: ErrorCode.InternalError, status: 503, message: 'Upstream unavailable: %s is down; retry in %s s' },
  GW_UPSTREAM_BUSY: { rpc: ErrorCode.InternalError, status: 503, message: 'Gateway busy: %s' },
} as const satisfies Record<string, ErrorSpec>;

/** The code of a catalog entry. */
export type ErrorKind = keyof typeof ERROR_CATALOG;

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
  readonly data: unknown;
  readonly retryAfterSeconds: number | undefined;
  constructor(kind: ErrorKind, opts: GatewayErrorOptions = {}) {
    super(formatMessage(ERROR_CATALOG[kind].message, opts.args ?? []), opts.cause === undefined ? undefined : { cause: opts.cause });
    this.kind = kind;
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
  const message = formatMessage(spec.message, opts.args ?? []);
  const error: JsonRpcErrorObject = opts.data === undefined ? { code: spec.rpc, message } : { code: spec.rpc, message, data: opts.data };
  const retryAfterSeconds = opts.retryAfterSeconds ?? spec.retryAfterSeconds;
  return { kind, status: spec.status, error, fault: spec.fault === true, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) };
}

/** A thrown `GatewayError` as the client gets it (its message already filled). */
export function answerOf(e: GatewayError): CatalogAnswer {
  const spec: ErrorSpec = ERROR_CATALOG[e.kind];
  const error: JsonRpcErrorObject = e.data === undefined ? { code: spec.rpc, message: e.message } : { code: spec.rpc, message: e.message, data: e.data };
  return { kind: e.kind, status: spec.status, error, fault: spec.fault === true, ...(e.retryAfterSeconds !== undefined ? { retryAfterSeconds: e.retryAfterSeconds } : {}) };
}
