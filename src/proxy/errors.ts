/**
 * The one table from failures to JSON-RPC errors and HTTP statuses at the edge: expected failures travel as values
 * up to here, and are mapped in this one place.
 */
import {
  answerOf,
  ErrorCode,
  GatewayError,
  REQUEST_FAILURE_STATUS,
  type JsonRpcErrorObject,
  type RequestFailure,
} from '../translate/index.js';
import {
  InvalidCursorError,
  InvalidRequestStateError,
  MissingCapabilityError,
  InstanceGoneError,
  StoreFullError,
  StoreUnavailableError,
  TaskAlreadyTerminalError,
  TooManyTasksError,
  UnknownTaskError,
} from '../tasks/index.js';
import {
  UpstreamBusyError,
  UpstreamDownError,
  UpstreamHttpError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from '../upstream/index.js';

/** An error as the client gets it. */
export interface EdgeError {
  status: number;
  error: JsonRpcErrorObject;
  /** Whether the operator log should carry it as a gateway fault. */
  fault: boolean;
  /** Seconds after which a retry may succeed (sent as `Retry-After`, RFC 9110 §10.2.3). */
  retryAfterSeconds?: number;
}

/** A refused modern request → its HTTP status and JSON-RPC error. */
export function failureToEdge(f: RequestFailure): EdgeError {
  const { status, code } = REQUEST_FAILURE_STATUS[f.reason];
  const error: JsonRpcErrorObject = f.data === undefined ? { code, message: f.message } : { code, message: f.message, data: f.data };
  return { status, error, fault: false };
}

/**
 * An upstream's in-band JSON-RPC error keeps its code; only "method not found" changes the status (2026-07-28
 * basic/transports/streamable-http: 404).
 */
export function upstreamErrorStatus(error: JsonRpcErrorObject): number {
  if (error.code === ErrorCode.MethodNotFound) return 404;
  if (error.code === ErrorCode.MissingRequiredClientCapability || error.code === ErrorCode.HeaderMismatch || error.code === ErrorCode.UnsupportedProtocolVersion) return 400;
  return 200;
}

/** A thrown error → what the client gets. Unknown errors are 500 and logged. */
export function exceptionToEdge(e: unknown): EdgeError {
  if (e instanceof GatewayError) return answerOf(e);
  if (e instanceof MissingCapabilityError) {
    return {
      status: 400,
      error: { code: ErrorCode.MissingRequiredClientCapability, message: e.message, data: { requiredCapabilities: e.requiredCapabilities } },
      fault: false,
    };
  }
  // 2025-11-25 basic/utilities/tasks §Protocol Errors: unknown task, invalid cursor and cancel of a terminal task are
  // -32602 (in-band; tasks extension §Protocol Errors likewise for an unknown task).
  if (e instanceof UnknownTaskError || e instanceof InvalidCursorError || e instanceof TaskAlreadyTerminalError) {
    return { status: 200, error: { code: ErrorCode.InvalidParams, message: e.message }, fault: false };
  }
  if (e instanceof StoreFullError) return { status: 503, error: { code: ErrorCode.InternalError, message: e.message }, fault: false };
  if (e instanceof StoreUnavailableError) return { status: 503, error: { code: ErrorCode.InternalError, message: e.message }, fault: false, retryAfterSeconds: 1 };
  // An MRTR retry whose held call lived on an instance that is gone: the round is lost, the client starts over. An
  // invalid state like any other (2026-07-28 basic/patterns/mrtr §Server Requirements), so 400 with -32602.
  if (e instanceof InstanceGoneError) {
    return { status: 400, error: { code: ErrorCode.InvalidParams, message: 'Invalid requestState: the gateway instance holding this request is gone; send the request again without requestState' }, fault: false };
  }
  if (e instanceof TooManyTasksError) return { status: 429, error: { code: ErrorCode.InternalError, message: e.message }, fault: false };
  if (e instanceof InvalidRequestStateError) return { status: 400, error: { code: ErrorCode.InvalidParams, message: e.message }, fault: false };
  if (e instanceof UpstreamTimeoutError) return { status: 504, error: { code: ErrorCode.InternalError, message: 'Upstream timed out' }, fault: false };
  if (e instanceof UpstreamDownError) {
    // Known to be down: answered at once, with when the gateway will have looked again.
    const retryAfterSeconds = Math.max(1, Math.ceil(e.retryAfterMs / 1000));
    return { status: 503, error: { code: ErrorCode.InternalError, message: `Upstream unavailable: ${e.upstream} is down; retry in ${retryAfterSeconds} s` }, fault: false, retryAfterSeconds };
  }
  if (e instanceof UpstreamBusyError) return { status: 503, error: { code: ErrorCode.InternalError, message: `Gateway busy: ${e.message}` }, fault: false };
  if (e instanceof UpstreamUnavailableError || e instanceof UpstreamHttpError) {
    return { status: 502, error: { code: ErrorCode.InternalError, message: `Upstream unavailable: ${e.message}` }, fault: false };
  }
  return { status: 500, error: { code: ErrorCode.InternalError, message: 'Internal error' }, fault: true };
}
