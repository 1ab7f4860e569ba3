/**
 * Every error the gateway answers with, in one table: a stable code, the JSON-RPC error code, the HTTP status, the
 * message (a template: each `%s` is replaced by the next argument), in the style of `@fastify/error`, and what it
 * means. Errors are raised and answered through it alone (gateway-error.ts); docs/errors.md is generated from it
 * (`npm run errors`), and tests pin it, check it against that page both ways, and find no error built outside it.
 *
 * Status 200 marks an in-band error: the request was understood and the answer is a JSON-RPC error (an unknown task,
 * 2025-11-25 basic/utilities/tasks §Protocol Errors; tasks extension §Protocol Errors).
 */
import { ErrorCode } from './constants.js';

/**
 * The gateway's own JSON-RPC codes, for what a client should retry rather than read as a server bug (-32603): a limit
 * or something unavailable for now, always answered with HTTP 429 or 503, and with `Retry-After` and
 * `data.retryAfterMs` whenever the wait is known. They lie outside the JSON-RPC reserved range (-32768..-32000):
 * 2026-07-28 basic §Error Codes reserves -32020..-32099 to the specification, allows no new code in the legacy
 * -32000..-32019, and asks for other codes outside the reserved range, the rest of the integers being the
 * application's (JSON-RPC 2.0 §5.1). docs/errors.md lists them.
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
  /** The wait is known only when the error happens: `Retry-After` and `data.retryAfterMs` are set then. */
  readonly retryAfterWhenRefused?: true;
  /** A gateway fault (logged as an error), not the caller's or an upstream's. */
  readonly fault?: boolean;
  /** What it means and when a client gets it: the meaning column of docs/errors.md. */
  readonly doc: string;
}

/**
 * The catalog. Grouped by where the error arises; a new error gets an entry here and nowhere else. Codes are stable
 * (operators may alert on them); messages may name values but never secrets, payloads or session ids.
 */
export const ERROR_CATALOG = {
  // ── HTTP layer: what reaches the gateway before it is a JSON-RPC message ──
  GW_PARSE_ERROR: { rpc: ErrorCode.ParseError, status: 400, message: 'Parse error: the body is not valid JSON', doc: 'The request body is not JSON.' },
  GW_EMPTY_BODY: { rpc: ErrorCode.ParseError, status: 400, message: 'Parse error: empty body', doc: 'A JSON POST without a body.' },
  GW_BODY_TOO_LARGE: {
    rpc: ErrorCode.InvalidRequest,
    status: 413,
    message: 'Request body too large',
    doc: "The body is larger than `server.bodyLimitBytes` (or a stdio upstream's message bound).",
  },
  GW_UNSUPPORTED_MEDIA_TYPE: {
    rpc: ErrorCode.InvalidRequest,
    status: 415,
    message: 'Unsupported Content-Type: use application/json',
    doc: 'A POST whose `Content-Type` is not `application/json`.',
  },
  GW_INVALID_CONTENT_LENGTH: { rpc: ErrorCode.InvalidRequest, status: 400, message: 'Invalid Content-Length', doc: 'A `Content-Length` unlike the body.' },
  GW_BAD_REQUEST: {
    rpc: ErrorCode.InvalidRequest,
    status: 400,
    message: 'Bad request: %s',
    doc: 'An HTTP request the server could not read (malformed, or not a JSON-RPC message); the message says what.',
  },
  GW_HEADERS_TOO_LARGE: {
    rpc: ErrorCode.InvalidRequest,
    status: 431,
    message: 'Request header fields too large',
    doc: "Node's header limit (16 KiB in all) ran out before the headers ended.",
  },
  GW_REQUEST_TIMEOUT: {
    rpc: ErrorCode.InvalidRequest,
    status: 408,
    message: 'Request timeout: the request did not arrive in time',
    doc: 'The headers (`server.headersTimeoutMs`) or the whole request (`server.requestTimeoutMs`) took too long to arrive.',
  },
  GW_TOO_DEEP: {
    rpc: ErrorCode.InvalidRequest,
    status: 400,
    message: 'JSON nested deeper than %s levels',
    doc: 'Refused before parsing (`server.maxJsonDepth`): what walks a parsed value recurses, and a deep one exhausts the stack.',
  },
  GW_FORBIDDEN_HOST: {
    rpc: ErrorCode.InvalidRequest,
    status: 403,
    message: 'Forbidden: Host or Origin not allowed',
    doc: 'A `Host` or `Origin` header outside `server.allowedHosts` / `server.allowedOrigins` (DNS rebinding protection).',
  },
  GW_NOT_FOUND: { rpc: ErrorCode.InvalidRequest, status: 404, message: 'Not found', doc: 'No MCP endpoint, pass-through path or operator path here.' },
  GW_INTERNAL: {
    rpc: ErrorCode.InternalError,
    status: 500,
    message: 'Internal error',
    fault: true,
    doc: 'Anything that is not a catalog error: a gateway bug, logged as a fault; the client never sees what went wrong.',
  },
  GW_SHUTTING_DOWN: {
    rpc: GatewayErrorCode.Unavailable,
    status: 503,
    message: 'Gateway shutting down',
    doc: 'This instance is draining (SIGTERM): the request is refused with `Connection: close`; another instance takes it.',
  },

  // ── Modern face: a 2026-07-28 request refused by validation (2026-07-28 basic/transports/streamable-http §Server
  // Validation, basic §Error Codes). The validator words each refusal (which header, which key), so these take the
  // whole message as their one argument. ──
  GW_INVALID_REQUEST: {
    rpc: ErrorCode.InvalidRequest,
    status: 400,
    message: '%s',
    doc: 'A 2026-07-28 message that is not one valid JSON-RPC request or notification; the message says what.',
  },
  GW_HEADER_MISMATCH: {
    rpc: ErrorCode.HeaderMismatch,
    status: 400,
    message: '%s',
    doc: 'An `Mcp-*` header that disagrees with the body, or one that is malformed; the message names it.',
  },
  GW_UNSUPPORTED_VERSION: {
    rpc: ErrorCode.UnsupportedProtocolVersion,
    status: 400,
    message: '%s',
    doc: 'A protocol version the gateway does not speak; `data.supported` lists the ones it does.',
  },
  GW_MISSING_ENVELOPE: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: '%s',
    doc: 'A 2026-07-28 request missing keys of its per-request `_meta` envelope; the message names them.',
  },
  GW_METHOD_REMOVED: {
    rpc: ErrorCode.MethodNotFound,
    status: 404,
    message: '%s',
    doc: 'A method the 2026-07-28 era removed (`initialize`, `tasks/list`, …), sent by a 2026-07-28 client.',
  },
  GW_METHOD_NOT_FOUND: {
    rpc: ErrorCode.MethodNotFound,
    status: 404,
    message: 'Method not found: %s',
    doc: 'A method the modern face does not serve (2026-07-28 basic/transports/streamable-http: 404).',
  },
  GW_TOO_MANY_SUBSCRIPTIONS: {
    rpc: GatewayErrorCode.AtCapacity,
    status: 503,
    message: 'Too many open subscriptions; try again later',
    retryAfterSeconds: 1,
    doc: 'The gateway holds `server.maxListenStreams` `subscriptions/listen` streams, all callers together.',
  },

  // ── Legacy face: the gateway's own 2025-11-25 sessions (2025-11-25 basic/transports §Session Management) ──
  GW_NOT_ONE_MESSAGE: {
    rpc: ErrorCode.InvalidRequest,
    status: 400,
    message: 'Invalid Request: expected one JSON-RPC 2.0 message',
    doc: 'A 2025-11-25 POST whose body is not one JSON-RPC message (a batch, or not an object).',
  },
  GW_NOT_A_REQUEST: {
    rpc: ErrorCode.InvalidRequest,
    status: 400,
    message: 'Invalid Request',
    doc: 'A JSON-RPC message that is neither a request, a notification nor a response.',
  },
  GW_LEGACY_UNSUPPORTED_VERSION: {
    rpc: ErrorCode.InvalidRequest,
    status: 400,
    message: 'Bad Request: unsupported MCP-Protocol-Version %s',
    doc: 'An `MCP-Protocol-Version` header the legacy face does not speak.',
  },
  GW_SESSION_ID_REQUIRED: {
    rpc: -32000,
    status: 400,
    message: 'Bad Request: Mcp-Session-Id header is required',
    doc: "A request after `initialize` without `Mcp-Session-Id`. -32000, as the SDK's own Streamable HTTP server answers.",
  },
  GW_SESSION_NOT_FOUND: {
    rpc: -32001,
    status: 404,
    message: 'Session not found',
    doc:
      'An unknown, expired or foreign session id (also a session passed through to a legacy upstream that is not the ' +
      "caller's, or that the gateway never saw opened): the client starts a new session. -32001, as the SDK answers.",
  },
  GW_STREAM_NOT_ACCEPTABLE: {
    rpc: ErrorCode.InvalidRequest,
    status: 406,
    message: 'Not Acceptable: the GET stream needs Accept: text/event-stream',
    doc: 'A session GET without `Accept: text/event-stream`.',
  },
  GW_STREAM_CONFLICT: {
    rpc: ErrorCode.InvalidRequest,
    status: 409,
    message: 'Conflict: only one GET stream per session',
    doc: 'A second GET stream on a session that has one open.',
  },
  GW_TOO_MANY_SESSIONS: {
    rpc: GatewayErrorCode.AtCapacity,
    status: 503,
    message: 'Too many sessions; try again later',
    retryAfterSeconds: 5,
    doc: 'The legacy face holds `clientSessions.max` sessions and every one has a request in flight.',
  },
  GW_INITIALIZE_PARAMS: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: 'Invalid params: initialize needs protocolVersion and clientInfo',
    doc: 'An `initialize` without `protocolVersion` or `clientInfo`.',
  },
  // In-band (200): a legacy client reads the body of a 200 only, as a legacy server sends its errors.
  GW_UNKNOWN_LOG_LEVEL: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Invalid params: unknown log level',
    doc: '`logging/setLevel` with a level 2025-11-25 does not name.',
  },
  GW_URI_REQUIRED: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Invalid params: uri is required',
    doc: '`resources/subscribe` or `resources/unsubscribe` without a `uri`.',
  },
  GW_TASK_ID_REQUIRED: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Invalid params: taskId is required',
    doc: '`tasks/get`, `tasks/result` or `tasks/cancel` without a `taskId`.',
  },
  GW_SUBSCRIBE_FAILED: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'Could not subscribe upstream',
    doc: 'The legacy face could not open the upstream subscription a `resources/subscribe` needs.',
  },
  GW_METHOD_NOT_SERVED: {
    rpc: ErrorCode.MethodNotFound,
    status: 200,
    message: 'Method not found: %s',
    doc: 'A method the legacy face does not serve; also what the gateway answers an upstream for a request it does not relay.',
  },
  GW_CLIENT_ANSWER_TIMEOUT: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: "The client did not answer the server's request in time",
    doc: 'The upstream asked the client something (elicitation, sampling, roots) and the client did not answer in time.',
  },
  GW_UNSUPPORTED_RESULT_TYPE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'Upstream answered with result type %s, which a 2025-11-25 client cannot receive',
    doc: 'A 2026-07-28 upstream answered with a `resultType` that has no 2025-11-25 form.',
  },
  GW_NEEDS_STREAM: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The server needs %s, which needs a response stream the client did not accept (Accept: text/event-stream)',
    doc: 'The upstream asked the client something mid-call, but the client accepts only a JSON answer, which cannot carry the question.',
  },
  GW_REQUEST_CANCELLED: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'Request cancelled',
    doc: 'The request was cancelled (`notifications/cancelled`, or its held MRTR round abandoned) before it had an answer.',
  },

  // ── Authentication (per upstream `auth`): 401 with a WWW-Authenticate challenge (RFC 9110 §11.6.1, RFC 6750 §3);
  // the message names the class of failure only, never what in a token was wrong ──
  GW_UNAUTHENTICATED: {
    rpc: ErrorCode.InvalidRequest,
    status: 401,
    message: 'Unauthorized: credentials required',
    doc: "No credentials where the upstream's `auth` asks for them; `WWW-Authenticate` says which.",
  },
  GW_INVALID_TOKEN: {
    rpc: ErrorCode.InvalidRequest,
    status: 401,
    message: 'Unauthorized: %s token',
    doc: 'A token that is expired or does not verify (`WWW-Authenticate: Bearer error="invalid_token"`).',
  },
  GW_UNTRUSTED_SOURCE: {
    rpc: ErrorCode.InvalidRequest,
    status: 401,
    message: 'Unauthorized: this address may not assert an identity',
    doc: 'An identity header from an address not in `trustedProxies`: only the fronting proxy may name the caller.',
  },
  GW_AUTH_UNAVAILABLE: {
    rpc: GatewayErrorCode.Unavailable,
    status: 503,
    message: 'Authentication unavailable; retry shortly',
    retryAfterSeconds: 5,
    doc: "The JWT key set could not be fetched (the issuer's outage, not the caller's fault).",
  },

  // ── Tasks ──
  GW_TASK_UNKNOWN: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Unknown task',
    doc: 'An unknown, expired or foreign task id: one answer for all three (tasks extension §Protocol Errors).',
  },
  GW_TASK_EXPIRED: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Failed to retrieve task: Task has expired',
    doc: 'A 2025-11-25 `tasks/result` of a task past its TTL (2025-11-25 basic/utilities/tasks §Task Retrieval).',
  },
  GW_TASK_TERMINAL: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: "Cannot cancel task: already in terminal status '%s'",
    doc: 'A 2025-11-25 `tasks/cancel` of a task that already ended.',
  },
  GW_INVALID_CURSOR: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Invalid cursor',
    doc: "A `tasks/list` cursor, or a federated endpoint's list cursor, this gateway did not issue (or one of a list that has changed since).",
  },
  GW_TOO_MANY_TASKS: {
    rpc: GatewayErrorCode.CallerLimit,
    status: 429,
    message: 'Too many active tasks (limit %s); let some finish or cancel them',
    doc: 'The caller has `tasks.maxActivePerPrincipal` live tasks.',
  },
  GW_STORE_FULL: {
    rpc: GatewayErrorCode.AtCapacity,
    status: 503,
    message: 'The task store is full (%s live tasks); try again later',
    doc: 'The task store holds `tasks.maxTasks` live tasks (memory store), all callers together.',
  },
  GW_STORE_UNAVAILABLE: {
    rpc: GatewayErrorCode.Unavailable,
    status: 503,
    message: 'The task store is unavailable; retry shortly',
    retryAfterSeconds: 1,
    doc: 'The task store (Redis, Postgres) cannot be reached now: a fast, clear failure, never a hang.',
  },
  GW_MISSING_CAPABILITY: {
    rpc: ErrorCode.MissingRequiredClientCapability,
    status: 400,
    message: "The upstream needs %s, which this request's clientCapabilities do not declare",
    doc: 'The upstream asked for an input kind the 2026-07-28 request did not declare; `data.requiredCapabilities` names it.',
  },
  GW_TASK_RESULT_TOO_LARGE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The task result is too large to keep (%s bytes; the limit is %s)',
    doc: "A task's outcome larger than `tasks.maxResultBytes`: the task is stored failed with this error, never the result whole.",
  },
  GW_TASK_SHUT_DOWN: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The gateway shut down before the task finished',
    doc: 'A gateway-owned task still running when a one-instance gateway (memory store) stopped after its drain.',
  },
  GW_TASK_INSTANCE_LOST: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The gateway instance running this task was lost; the task did not finish',
    doc: 'The instance running an owned task lost its lease, and the task may not run again (no `retryOnLoss`).',
  },
  GW_TASK_UNREACHABLE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The gateway instance following this task is gone and this one cannot reach its upstream task',
    doc: "The instance following an upstream's task lost its lease, and the one that took it over cannot reach that task.",
  },
  GW_TASK_TIMED_OUT: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The upstream call timed out',
    doc: "A gateway-owned task whose upstream call outlived its budget (the task's, or the upstream's own).",
  },
  GW_TASK_FAILED: { rpc: ErrorCode.InternalError, status: 200, message: 'Task failed', doc: 'A failed task with neither an error nor a status message.' },
  GW_TASK_FAILED_BECAUSE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: '%s',
    doc:
      "A failed task in the words of what failed it: its own status message, a job rule's reason, or the catalog message " +
      'of the upstream failure that ended it ("Upstream unavailable: …", "Gateway busy: …").',
  },
  GW_TASK_CANCELLED: { rpc: ErrorCode.InternalError, status: 200, message: 'Task cancelled', doc: 'A 2025-11-25 `tasks/result` of a cancelled task.' },
  GW_TASK_CANCELLED_BECAUSE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'Task cancelled: %s',
    doc: 'A 2025-11-25 `tasks/result` of a cancelled task with a status message.',
  },
  GW_TASK_NOT_SUPPORTED: {
    rpc: ErrorCode.MethodNotFound,
    status: 200,
    message: 'Tool %s does not support task-augmented calls',
    doc: 'A 2025-11-25 call with `task` of a tool that runs no task (2025-11-25 basic/utilities/tasks §Tool-Level Negotiation: -32601).',
  },
  GW_JOB_NO_HANDLE: {
    rpc: ErrorCode.InternalError,
    status: 502,
    message: 'Job rule for tool %s: the start tool answered without a handle at %s',
    doc:
      "A `task: job` rule could not read the start tool's answer: no handle where the rule's `id` path points. Nothing was " +
      'created; the upstream job, if any, runs unobserved (the start tool is never called again).',
  },
  GW_JOB_UNKNOWN_STATE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'Job rule for tool %s: the status tool reported %s, which the rule does not map',
    doc: "A job's status tool answered a state the rule does not map: the task fails with this error.",
  },
  GW_TOOL_NOT_FOUND: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Unknown tool: %s',
    doc: 'A tool a `task: job` rule hides called directly, or one a federated endpoint does not show the caller (2026-07-28 server/tools).',
  },
  GW_RESOURCE_NOT_SERVED: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Resource not found: %s',
    doc: 'No member of a federated endpoint serves the URI.',
  },
  GW_PROMPT_NOT_FOUND: {
    rpc: ErrorCode.InvalidParams,
    status: 200,
    message: 'Unknown prompt: %s',
    doc: 'A federated endpoint shows the caller no such prompt.',
  },
  GW_POLL_TOO_FAST: {
    rpc: GatewayErrorCode.CallerLimit,
    status: 429,
    message: 'Polling too fast: ask about this task again in %s ms',
    retryAfterWhenRefused: true,
    doc: "A status poll sooner than the task's `pollIntervalMs` allows (beyond `tasks.pollBurst` per interval).",
  },

  // ── MRTR (2026-07-28 basic/patterns/mrtr §Server Requirements: an invalid state is -32602) ──
  GW_INVALID_REQUEST_STATE: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: 'Invalid requestState',
    doc: "A `requestState` the gateway did not issue, or one expired, used or not the caller's: one message for every invalid state.",
  },
  GW_INSTANCE_GONE: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: 'Invalid requestState: the gateway instance holding this request is gone; send the request again without requestState',
    doc: 'An MRTR retry for a call held by an instance that is gone: the client starts the request anew.',
  },
  GW_TOO_MANY_HELD_CALLS: {
    rpc: GatewayErrorCode.CallerLimit,
    status: 503,
    message: 'Too many of your requests are waiting for input (limit %s); answer or abandon some, then retry',
    retryAfterSeconds: 1,
    doc: 'The caller holds `input.maxHeldCallsPerPrincipal` calls waiting for its answers: it answers or drops some first.',
  },
  GW_HELD_CALLS_FULL: {
    rpc: GatewayErrorCode.AtCapacity,
    status: 503,
    message: 'Too many requests are waiting for input; try again later',
    retryAfterSeconds: 1,
    doc: 'The gateway holds `input.maxHeldCalls` calls waiting for input, all callers together.',
  },
  GW_INPUT_REQUESTS_EXCEEDED: {
    rpc: ErrorCode.InternalError,
    status: 502,
    message: 'The upstream asked for more input at once than allowed (limit %s)',
    doc: 'An upstream asking more at once than `input.maxRequestsPerRound`: the upstream call is cancelled (a task fails with it).',
  },
  GW_INPUT_ROUNDS_EXCEEDED: {
    rpc: ErrorCode.InternalError,
    status: 502,
    message: 'The upstream asked for input more often than allowed (limit %s rounds)',
    doc: 'An upstream asking more rounds than `input.maxRoundsPerTask`: the upstream call is cancelled (a task fails with it).',
  },
  GW_UNDECLARED_INPUT: {
    rpc: ErrorCode.MissingRequiredClientCapability,
    status: 400,
    message: 'The client did not declare the capability %s needs',
    doc: 'The upstream asked a 2025-11-25 client for an input kind it did not declare; `data.requiredCapabilities` names it.',
  },
  // ── Input validation: what a client sends is checked against what was asked before it reaches an upstream ──
  GW_INVALID_META: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: 'Invalid params: %s must be %s',
    doc: 'A reserved `_meta` value of the wrong type (2026-07-28 schema `RequestMetaObject`).',
  },
  GW_UNKNOWN_INPUT_KEY: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: 'Invalid params: inputResponses key %s was not asked',
    doc: 'An answer under a key the gateway never asked (MRTR retry); the held round stays usable.',
  },
  GW_INVALID_INPUT_RESPONSE: {
    rpc: ErrorCode.InvalidParams,
    status: 400,
    message: 'Invalid params: the answer to input request %s is invalid (%s)',
    doc: 'An answer that does not fit the request it answers; nothing was sent upstream and the question stays open.',
  },

  // ── Upstream ──
  GW_UPSTREAM_TIMEOUT: { rpc: ErrorCode.InternalError, status: 504, message: 'Upstream timed out', doc: 'The upstream did not answer within its budget.' },
  GW_UPSTREAM_UNAVAILABLE: {
    rpc: ErrorCode.InternalError,
    status: 502,
    message: 'Upstream unavailable: %s',
    doc: 'The upstream could not be reached, broke the connection, or is not an MCP server; the message says which, never its address.',
  },
  GW_UPSTREAM_HTTP: {
    rpc: ErrorCode.InternalError,
    status: 502,
    message: 'Upstream unavailable: upstream answered HTTP %s',
    doc: 'A non-2xx answer without a JSON-RPC message in it.',
  },
  GW_UPSTREAM_UNAUTHORIZED: {
    rpc: ErrorCode.InvalidRequest,
    status: 401,
    message: 'Unauthorized: the upstream requires authorization',
    doc:
      "The upstream refused the caller's credentials: 401 with the upstream's own `WWW-Authenticate` (header and " +
      "`data.wwwAuthenticate`), byte for byte, so the client can run the upstream's authorization through the gateway.",
  },
  GW_UPSTREAM_FORBIDDEN: {
    rpc: ErrorCode.InvalidRequest,
    status: 403,
    message: 'Forbidden: the upstream refused these credentials',
    doc: 'The upstream found the credentials lacking (RFC 6750 §3.1 insufficient_scope): 403 with its challenge, likewise.',
  },
  GW_UPSTREAM_DOWN: {
    rpc: GatewayErrorCode.Unavailable,
    status: 503,
    message: 'Upstream unavailable: %s is down; retry in %s s',
    retryAfterWhenRefused: true,
    doc: 'The upstream is known to be down: refused at once, until its next probe.',
  },
  GW_UPSTREAM_BUSY: { rpc: GatewayErrorCode.AtCapacity, status: 503, message: 'Gateway busy: %s', doc: "The gateway's bound on upstream sessions is reached." },
  GW_UPSTREAM_BAD_MESSAGE: {
    rpc: ErrorCode.InternalError,
    status: 502,
    message: 'Upstream sent an unusable message: %s',
    doc: 'An upstream answer the gateway will not handle (nested too deep, too large, not JSON-RPC); the exchange is dropped.',
  },
  GW_UPSTREAM_PROCESS_EXITED: {
    rpc: ErrorCode.InternalError,
    status: 502,
    message: 'Upstream process %s exited (%s); it is being restarted',
    doc: "A stdio upstream's process ended (exit code or signal, or why it could not start) while the call was in flight.",
  },
  GW_UPSTREAM_REQUEST_UNATTRIBUTED: {
    rpc: ErrorCode.InternalError,
    status: 502,
    message: 'Cannot tie %s to a call: %s',
    doc: 'What an upstream gets for a request the gateway cannot tie to a call (several calls share its session, or stdio).',
  },
  GW_UPSTREAM_TASK_FAILED: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The upstream task failed',
    doc: "A call whose upstream task failed without an error or a status message (the call's client asked for no task).",
  },
  GW_UPSTREAM_TASK_CANCELLED: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The upstream task was cancelled',
    doc: "A call whose upstream task was cancelled (the call's client asked for no task).",
  },
  GW_UPSTREAM_TASK_CANCELLED_BECAUSE: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The upstream task was cancelled: %s',
    doc: "A call whose upstream task was cancelled with a status message (the call's client asked for no task).",
  },
  GW_UPSTREAM_TASK_LOST: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'The upstream no longer knows this task',
    doc: 'The upstream forgot a task the gateway was following (its restart, its TTL): the task fails with this error.',
  },
  GW_UPSTREAM_BAD_INPUT_REQUIRED: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'upstream sent a malformed InputRequiredResult: %s',
    doc: "A 2026-07-28 upstream's `InputRequiredResult` the gateway cannot read; the message says what is wrong.",
  },
  GW_UPSTREAM_ENDLESS_INPUT: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'upstream still asked for input after %s rounds',
    doc: 'A 2026-07-28 upstream still asking for input after the rounds a call may take.',
  },
  GW_UPSTREAM_MALFORMED_ERROR: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: 'Malformed error from upstream',
    doc: 'An upstream error object without an integer code: no code a client could read.',
  },
  GW_UPSTREAM_REFUSED_GATEWAY: {
    rpc: ErrorCode.InternalError,
    status: 200,
    message: "Upstream refused the gateway's request: %s",
    doc:
      "A 2026-07-28 upstream's -32020 or -32022, which concerns the gateway's own request, as a 2025-11-25 client gets it; " +
      '`data.upstreamCode` and `data.upstreamData` keep the original.',
  },

  // ── Answers to an upstream's own requests (elicitation, sampling, roots) that no client can answer ──
  GW_CLIENT_LACKS_INPUT: {
    rpc: ErrorCode.MethodNotFound,
    status: 200,
    message: 'Client does not support %s',
    doc: 'What an upstream gets for an input request its caller did not declare, or nobody is there to answer.',
  },
  GW_UPSTREAM_REQUEST_NOT_RELAYED: {
    rpc: ErrorCode.MethodNotFound,
    status: 200,
    message: 'not supported here',
    doc: "What an upstream gets for a request of its own during a call the gateway makes itself (a tool listing, a job's tool, a task's request).",
  },
  GW_UPSTREAM_REQUEST_AFTER_CANCEL: {
    rpc: ErrorCode.MethodNotFound,
    status: 200,
    message: 'cancelled',
    doc: 'What an upstream gets for a request other than an input request (those are declined or refused as such) of a cancelled call.',
  },

  // ── Per-principal shares: one caller cannot take a shared resource from the others; checked before any upstream call ──
  GW_PRINCIPAL_SHARE_EXHAUSTED: {
    rpc: GatewayErrorCode.CallerLimit,
    status: 503,
    message: 'Too many %s for this caller (at most %s); retry when one of them ends',
    retryAfterSeconds: 1,
    doc: 'The caller holds its share of a bound all callers share (sessions, GET streams, subscriptions, upstream sessions).',
  },
} as const satisfies Record<string, ErrorSpec>;

/** The code of a catalog entry. */
export type ErrorKind = keyof typeof ERROR_CATALOG;

/** The entries answered in-band (HTTP 200 carrying a JSON-RPC error): what may go inside an answer of another status. */
export type InBandKind = { [K in ErrorKind]: (typeof ERROR_CATALOG)[K]['status'] extends 200 ? K : never }[ErrorKind];
