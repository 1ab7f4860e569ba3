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
import { isObject, type JsonRpcErrorObject } from './jsonrpc.js';

/**
 * The gateway's own JSON-RPC codes, for what a client should retry rather than read as a server bug (-32603): a limit
 * or something unavailable for now, always answered with HTTP 429 or 503, and with `Retry-After` and
 * `data.retryAfterMs` whenever the wait is known. They lie outside the JSON-RPC reserved range (-32768..-32000):
 * 2026-07-28 basic §Error Codes reserves -32020..-32099 to the specification, allows no new code in the legacy
 * -32000..-32019, and asks for other codes outside the reserved range, the rest of the integers being the
 * application's (JSON-RPC 2.0 §5.1). docs/security.md § Errors lists them.
 */
export const GatewayErrorCode = {
  /** The caller is over a limit of its own: live tasks, held calls, sessions or streams of its own, polls of a task. */
  CallerLimit: -31001,
  /** The gateway is at a bound all callers share: sessions, subscriptions, held calls, task store, upstream sessions. */
  AtCapacity: -31002,
  /** What the request needs is unavailable for now: the task store, the upstream, the JWT key set, this instance (stopping). */
  Unavailable: -31003,
} as const;

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
  // Node's header limit (16 KiB in all) ran out before the headers ended.
  GW_HEADERS_TOO_LARGE: { rpc: ErrorCode.InvalidRequest, status: 431, message: 'Request header fields too large' },
  // The headers (server.headersTimeoutMs) or the whole request (server.requestTimeoutMs) took too long to arrive.
  GW_REQUEST_TIMEOUT: { rpc: ErrorCode.InvalidRequest, status: 408, message: 'Request timeout: the request did not arrive in time' },
  // Refused before parsing (server.maxJsonDepth): what walks a parsed value recurses, and a deep one exhausts the stack.
  GW_TOO_DEEP: { rpc: ErrorCode.InvalidRequest, status: 400, message: 'JSON nested deeper than %s levels' },
  GW_FORBIDDEN_HOST: { rpc: ErrorCode.InvalidRequest, status: 403, message: 'Forbidden: Host or Origin not allowed' },
  GW_NOT_FOUND: { rpc: ErrorCode.InvalidRequest, status: 404, message: 'Not found' },
  GW_INTERNAL: { rpc: ErrorCode.InternalError, status: 500, message: 'Internal error', fault: true },
  GW_SHUTTING_DOWN: { rpc: GatewayErrorCode.Unavailable, status: 503, message: 'Gateway shutting down' },

  // ── Modern face: a 2026-07-28 request refused by validation (2026-07-28 basic/transports/streamable-http §Server
  // Validation, basic §Error Codes). The validator words each refusal (which header, which key), so these take the
  // whole message as their one argument. ──
  GW_INVALID_REQUEST: { rpc: ErrorCode.InvalidRequest, status: 400, message: '%s' },
  GW_HEADER_MISMATCH: { rpc: ErrorCode.HeaderMismatch, status: 400, message: '%s' },
  GW_UNSUPPORTED_VERSION: { rpc: ErrorCode.UnsupportedProtocolVersion, status: 400, message: '%s' },
  GW_MISSING_ENVELOPE: { rpc: ErrorCode.InvalidParams, status: 400, message: '%s' },
  GW_METHOD_REMOVED: { rpc: ErrorCode.MethodNotFound, status: 404, message: '%s' },
  // A method the modern face does not serve (2026-07-28 basic/transports/streamable-http: 404).
  GW_METHOD_NOT_FOUND: { rpc: ErrorCode.MethodNotFound, status: 404, message: 'Method not found: %s' },
  GW_TOO_MANY_SUBSCRIPTIONS: { rpc: GatewayErrorCode.AtCapacity, status: 503, message: 'Too many open subscriptions; try again later' },

  // ── Legacy face: the gateway's own 2025-11-25 sessions (2025-11-25 basic/transports §Session Management) ──
  GW_NOT_ONE_MESSAGE: { rpc: ErrorCode.InvalidRequest, status: 400, message: 'Invalid Request: expected one JSON-RPC 2.0 message' },
  // A JSON-RPC message that is neither a request, a notification nor a response.
  GW_NOT_A_REQUEST: { rpc: ErrorCode.InvalidRequest, status: 400, message: 'Invalid Request' },
  GW_LEGACY_UNSUPPORTED_VERSION: { rpc: ErrorCode.InvalidRequest, status: 400, message: 'Bad Request: unsupported MCP-Protocol-Version %s' },
  // -32000 and -32001 are what the SDK's own Streamable HTTP server answers here; 2025 clients know them.
  GW_SESSION_ID_REQUIRED: { rpc: -32000, status: 400, message: 'Bad Request: Mcp-Session-Id header is required' },
  // Also a session passed through to a legacy upstream that is not the caller's, or that the gateway never saw opened.
  GW_SESSION_NOT_FOUND: { rpc: -32001, status: 404, message: 'Session not found' },
  GW_STREAM_NOT_ACCEPTABLE: { rpc: ErrorCode.InvalidRequest, status: 406, message: 'Not Acceptable: the GET stream needs Accept: text/event-stream' },
  GW_STREAM_CONFLICT: { rpc: ErrorCode.InvalidRequest, status: 409, message: 'Conflict: only one GET stream per session' },
  GW_TOO_MANY_SESSIONS: { rpc: GatewayErrorCode.AtCapacity, status: 503, message: 'Too many sessions; try again later', retryAfterSeconds: 5 },
  GW_INITIALIZE_PARAMS: { rpc: ErrorCode.InvalidParams, status: 400, message: 'Invalid params: initialize needs protocolVersion and clientInfo' },
  // In-band (200): a legacy client reads the body of a 200 only, as a legacy server sends its errors.
  GW_UNKNOWN_LOG_LEVEL: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Invalid params: unknown log level' },
  GW_URI_REQUIRED: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Invalid params: uri is required' },
  GW_TASK_ID_REQUIRED: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Invalid params: taskId is required' },
  GW_SUBSCRIBE_FAILED: { rpc: ErrorCode.InternalError, status: 200, message: 'Could not subscribe upstream' },
  // Also the gateway's answer to a server request it does not relay.
  GW_METHOD_NOT_SERVED: { rpc: ErrorCode.MethodNotFound, status: 200, message: 'Method not found: %s' },
  GW_CLIENT_ANSWER_TIMEOUT: { rpc: ErrorCode.InternalError, status: 200, message: "The client did not answer the server's request in time" },
  GW_UNSUPPORTED_RESULT_TYPE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'Upstream answered with result type %s, which a 2025-11-25 client cannot receive',
  },
  GW_NEEDS_STREAM: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The server needs %s, which needs a response stream the client did not accept (Accept: text/event-stream)',
  },
  GW_REQUEST_CANCELLED: { rpc: ErrorCode.InternalError, status: 200, message: 'Request cancelled' },

  // ── Authentication (per upstream `auth`): 401 with a WWW-Authenticate challenge (RFC 9110 §11.6.1, RFC 6750 §3);
  // the message names the class of failure only, never what in a token was wrong ──
  GW_UNAUTHENTICATED: { rpc: ErrorCode.InvalidRequest, status: 401, message: 'Unauthorized: credentials required' },
  GW_INVALID_TOKEN: { rpc: ErrorCode.InvalidRequest, status: 401, message: 'Unauthorized: %s token' },
  // An identity header from an address not in `trustedProxies`: only the fronting proxy may name the caller.
  GW_UNTRUSTED_SOURCE: { rpc: ErrorCode.InvalidRequest, status: 401, message: 'Unauthorized: this address may not assert an identity' },
  // The JWT key set could not be fetched (the issuer's outage, not the caller's fault).
  GW_AUTH_UNAVAILABLE: { rpc: GatewayErrorCode.Unavailable, status: 503, message: 'Authentication unavailable; retry shortly', retryAfterSeconds: 5 },

  // ── Tasks ──
  GW_TASK_UNKNOWN: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Unknown task' },
  // 2025-11-25 basic/utilities/tasks §Task Retrieval: a task past its TTL.
  GW_TASK_EXPIRED: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Failed to retrieve task: Task has expired' },
  GW_TASK_TERMINAL: { rpc: ErrorCode.InvalidParams, status: 200, message: "Cannot cancel task: already in terminal status '%s'" },
  GW_INVALID_CURSOR: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Invalid cursor' },
  GW_TOO_MANY_TASKS: { rpc: GatewayErrorCode.CallerLimit, status: 429, message: 'Too many active tasks (limit %s); let some finish or cancel them' },
  GW_STORE_FULL: { rpc: GatewayErrorCode.AtCapacity, status: 503, message: 'The task store is full (%s live tasks); try again later' },
  GW_STORE_UNAVAILABLE: { rpc: GatewayErrorCode.Unavailable, status: 503, message: 'The task store is unavailable; retry shortly', retryAfterSeconds: 1 },
  // 2026-07-28 schema MissingRequiredClientCapabilityError; `data.requiredCapabilities` names what is missing.
  GW_MISSING_CAPABILITY: {
    rpc: ErrorCode.MissingRequiredClientCapability,
    status: 400,
    message: "The upstream needs %s, which this request's clientCapabilities do not declare",
  },
  // A task's outcome larger than `tasks.maxResultBytes`: the task is stored failed with this error (in its record, so
  // in-band), never the result whole.
  GW_TASK_RESULT_TOO_LARGE: { rpc: ErrorCode.InternalError, status: 200, message: 'The task result is too large to keep (%s bytes; the limit is %s)' },
  // A gateway-owned task still running when a one-instance gateway (memory store) stops after its drain: the task is
  // stored failed with this error (in its record, so in-band), and clients still connected read it before the exit.
  GW_TASK_SHUT_DOWN: { rpc: ErrorCode.InternalError, status: 200, message: 'The gateway shut down before the task finished' },
  // A `task: job` rule (docs/jobs.md) could not read the start tool's answer: no handle where the rule's `id` path
  // points. Nothing was created; the upstream job, if any, runs unobserved (the start tool is never called again).
  GW_JOB_NO_HANDLE: { rpc: ErrorCode.InternalError, status: 502, message: 'Job rule for tool %s: the start tool answered without a handle at %s' },
  // A job's status tool answered a state the rule does not map (stored in the task's record, so in-band).
  GW_JOB_UNKNOWN_STATE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'Job rule for tool %s: the status tool reported %s, which the rule does not map',
  },
  // A tool a `task: job` rule hides (its status, result or cancel tool) called directly (2026-07-28 server/tools
  // §Error Handling: an unknown tool is -32602).
  GW_TOOL_NOT_FOUND: { rpc: ErrorCode.InvalidParams, status: 200, message: 'Unknown tool: %s' },
  // A status poll sooner than the task's pollIntervalMs allows (beyond `tasks.pollBurst` per interval); data.retryAfterMs.
  GW_POLL_TOO_FAST: { rpc: GatewayErrorCode.CallerLimit, status: 429, message: 'Polling too fast: ask about this task again in %s ms' },

  // ── MRTR (2026-07-28 basic/patterns/mrtr §Server Requirements: an invalid state is -32602) ──
  GW_INVALID_REQUEST_STATE: { rpc: ErrorCode.InvalidParams, status: 400, message: 'Invalid requestState' },
  GW_INSTANCE_GONE: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: 'Invalid requestState: the gateway instance holding this request is gone; send the request again without requestState',
  },

  // One principal holds `input.maxHeldCallsPerPrincipal` calls waiting for its answers: it answers or drops some first.
  GW_TOO_MANY_HELD_CALLS: {
    rpc: GatewayErrorCode.CallerLimit,
    status: 503,
    message: 'Too many of your requests are waiting for input (limit %s); answer or abandon some, then retry',
    retryAfterSeconds: 1,
  },
  // The gateway holds `input.maxHeldCalls` calls waiting for input, all principals together.
  GW_HELD_CALLS_FULL: {
    rpc: GatewayErrorCode.AtCapacity,
    status: 503,
    message: 'Too many requests are waiting for input; try again later',
    retryAfterSeconds: 1,
  },
  // An upstream asking more at once than `input.maxRequestsPerRound`, or more rounds than `input.maxRoundsPerTask`:
  // the upstream call is cancelled (a task fails with the same error).
  GW_INPUT_REQUESTS_EXCEEDED: { rpc: ErrorCode.InternalError, status: 502, message: 'The upstream asked for more input at once than allowed (limit %s)' },
  GW_INPUT_ROUNDS_EXCEEDED: { rpc: ErrorCode.InternalError, status: 502, message: 'The upstream asked for input more often than allowed (limit %s rounds)' },
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
  // A non-2xx answer without a JSON-RPC message in it.
  GW_UPSTREAM_HTTP: { rpc: ErrorCode.InternalError, status: 502, message: 'Upstream unavailable: upstream answered HTTP %s' },
  // The upstream refused the caller's credentials (RFC 9110 §15.5.2, RFC 6750 §3): the client gets 401 with the
  // upstream's own WWW-Authenticate challenge (header and data.wwwAuthenticate), byte for byte, so that it can run the
  // upstream's authorization through the gateway (2025-11-25 basic/authorization §Authorization Server Discovery).
  GW_UPSTREAM_UNAUTHORIZED: { rpc: ErrorCode.InvalidRequest, status: 401, message: 'Unauthorized: the upstream requires authorization' },
  // The upstream found the credentials lacking (RFC 6750 §3.1 insufficient_scope): 403 with its challenge, likewise.
  GW_UPSTREAM_FORBIDDEN: { rpc: ErrorCode.InvalidRequest, status: 403, message: 'Forbidden: the upstream refused these credentials' },
  GW_UPSTREAM_DOWN: { rpc: GatewayErrorCode.Unavailable, status: 503, message: 'Upstream unavailable: %s is down; retry in %s s' },
  GW_UPSTREAM_BUSY: { rpc: GatewayErrorCode.AtCapacity, status: 503, message: 'Gateway busy: %s' },
  // An upstream answer the gateway will not handle (nested too deep, too large); the exchange is dropped.
  GW_UPSTREAM_BAD_MESSAGE: { rpc: ErrorCode.InternalError, status: 502, message: 'Upstream sent an unusable message: %s' },
  // A stdio upstream's process ended (exit code or signal, or why it could not start) while the call was in flight;
  // the gateway restarts it (2025-11-25 and 2026-07-28 basic/transports/stdio: the child is the whole server).
  GW_UPSTREAM_PROCESS_EXITED: { rpc: ErrorCode.InternalError, status: 502, message: 'Upstream process %s exited (%s); it is being restarted' },
  // A request a stdio upstream sent that names no call the gateway can tie it to (stdio carries no request context).
  GW_UPSTREAM_REQUEST_UNATTRIBUTED: { rpc: ErrorCode.InternalError, status: 502, message: 'Cannot tie %s to a call: %s' },

  // ── Per-principal shares: one caller cannot take a shared resource from the others; checked before any upstream call ──
  GW_PRINCIPAL_SHARE_EXHAUSTED: {
    rpc: GatewayErrorCode.CallerLimit,
    status: 503,
    message: 'Too many %s for this caller (at most %s); retry when one of them ends',
    retryAfterSeconds: 1,
  },
} as const satisfies Record<string, ErrorSpec>;

/** The code of a catalog entry. */
export type ErrorKind = keyof typeof ERROR_CATALOG;

/** The entries answered in-band (HTTP 200 carrying a JSON-RPC error): what may go inside an answer of another status. */
export type InBandKind = { [K in ErrorKind]: (typeof ERROR_CATALOG)[K]['status'] extends 200 ? K : never }[ErrorKind];

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
