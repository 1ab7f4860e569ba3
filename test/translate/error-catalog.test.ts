/**
 * The error catalog (src/translate/error-catalog.ts) pinned: a literal copy of the whole table, so that a change to a
 * code, a status or a message is a deliberate edit here too (operators alert on codes, clients read messages). Beside
 * the copy: every kind named in src/ exists, entries are well-formed (statuses, JSON-RPC codes, in-band entries), and
 * every `GatewayError` subclass answers through its declared entry.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import {
  answerOf,
  catalogAnswer,
  ERROR_CATALOG,
  formatMessage,
  GatewayError,
  GatewayErrorCode,
  type ErrorKind,
  type ErrorSpec,
} from '../../src/translate/error-catalog.js';
import { AuthError } from '../../src/proxy/auth.js';
import { exceptionToEdge, failureToEdge } from '../../src/proxy/errors.js';
import { TooManySessionsError } from '../../src/proxy/legacy-face/face.js';
import { StoreUnavailableError } from '../../src/store/index.js';
import { StoreFullError, TaskIdClashError } from '../../src/store/task-store.js';
import { InstanceGoneError, RemoteError } from '../../src/tasks/instance-bus.js';
import { InvalidCursorError, TaskAlreadyTerminalError, TooManyTasksError, UnknownTaskError } from '../../src/tasks/task-limits.js';
import { InvalidRequestStateError } from '../../src/tasks/mrtr-bridge.js';
import { MissingCapabilityError } from '../../src/tasks/conversation.js';
import {
  UpstreamBusyError,
  UpstreamDownError,
  UpstreamHttpError,
  UpstreamTaskLostError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from '../../src/upstream/index.js';
import { SessionExpiredError } from '../../src/upstream/errors.js';

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, '..', '..', 'src');

/** The whole catalog as it must be. Change it only together with the catalog, on purpose. */
const PINNED: Record<string, ErrorSpec> = {
  // HTTP layer
  GW_PARSE_ERROR: { rpc: -32700, status: 400, message: 'Parse error: the body is not valid JSON' },
  GW_EMPTY_BODY: { rpc: -32700, status: 400, message: 'Parse error: empty body' },
  GW_BODY_TOO_LARGE: { rpc: -32600, status: 413, message: 'Request body too large' },
  GW_UNSUPPORTED_MEDIA_TYPE: { rpc: -32600, status: 415, message: 'Unsupported Content-Type: use application/json' },
  GW_INVALID_CONTENT_LENGTH: { rpc: -32600, status: 400, message: 'Invalid Content-Length' },
  GW_BAD_REQUEST: { rpc: -32600, status: 400, message: 'Bad request: %s' },
  GW_HEADERS_TOO_LARGE: { rpc: -32600, status: 431, message: 'Request header fields too large' },
  GW_REQUEST_TIMEOUT: { rpc: -32600, status: 408, message: 'Request timeout: the request did not arrive in time' },
  GW_TOO_DEEP: { rpc: -32600, status: 400, message: 'JSON nested deeper than %s levels' },
  GW_FORBIDDEN_HOST: { rpc: -32600, status: 403, message: 'Forbidden: Host or Origin not allowed' },
  GW_NOT_FOUND: { rpc: -32600, status: 404, message: 'Not found' },
  GW_INTERNAL: { rpc: -32603, status: 500, message: 'Internal error', fault: true },
  GW_SHUTTING_DOWN: { rpc: -31003, status: 503, message: 'Gateway shutting down' },
  // Modern face: validation
  GW_INVALID_REQUEST: { rpc: -32600, status: 400, message: '%s' },
  GW_HEADER_MISMATCH: { rpc: -32020, status: 400, message: '%s' },
  GW_UNSUPPORTED_VERSION: { rpc: -32022, status: 400, message: '%s' },
  GW_MISSING_ENVELOPE: { rpc: -32602, status: 400, message: '%s' },
  GW_METHOD_REMOVED: { rpc: -32601, status: 404, message: '%s' },
  GW_METHOD_NOT_FOUND: { rpc: -32601, status: 404, message: 'Method not found: %s' },
  GW_LEGACY_NOT_BRIDGED: { rpc: -32600, status: 400, message: 'This upstream speaks MCP 2026-07-28 only; 2025-11-25 clients are not bridged to it yet' },
  GW_TOO_MANY_SUBSCRIPTIONS: { rpc: -31002, status: 503, message: 'Too many open subscriptions; try again later' },
  // Legacy face
  GW_NOT_ONE_MESSAGE: { rpc: -32600, status: 400, message: 'Invalid Request: expected one JSON-RPC 2.0 message' },
  GW_NOT_A_REQUEST: { rpc: -32600, status: 400, message: 'Invalid Request' },
  GW_LEGACY_UNSUPPORTED_VERSION: { rpc: -32600, status: 400, message: 'Bad Request: unsupported MCP-Protocol-Version %s' },
  GW_SESSION_ID_REQUIRED: { rpc: -32000, status: 400, message: 'Bad Request: Mcp-Session-Id header is required' },
  GW_SESSION_NOT_FOUND: { rpc: -32001, status: 404, message: 'Session not found' },
  GW_STREAM_NOT_ACCEPTABLE: { rpc: -32600, status: 406, message: 'Not Acceptable: the GET stream needs Accept: text/event-stream' },
  GW_STREAM_CONFLICT: { rpc: -32600, status: 409, message: 'Conflict: only one GET stream per session' },
  GW_TOO_MANY_SESSIONS: { rpc: -31002, status: 503, message: 'Too many sessions; try again later', retryAfterSeconds: 5 },
  GW_INITIALIZE_PARAMS: { rpc: -32602, status: 400, message: 'Invalid params: initialize needs protocolVersion and clientInfo' },
  GW_UNKNOWN_LOG_LEVEL: { rpc: -32602, status: 200, message: 'Invalid params: unknown log level' },
  GW_URI_REQUIRED: { rpc: -32602, status: 200, message: 'Invalid params: uri is required' },
  GW_TASK_ID_REQUIRED: { rpc: -32602, status: 200, message: 'Invalid params: taskId is required' },
  GW_SUBSCRIBE_FAILED: { rpc: -32603, status: 200, message: 'Could not subscribe upstream' },
  GW_METHOD_NOT_SERVED: { rpc: -32601, status: 200, message: 'Method not found: %s' },
  GW_CLIENT_ANSWER_TIMEOUT: { rpc: -32603, status: 200, message: "The client did not answer the server's request in time" },
  GW_UNSUPPORTED_RESULT_TYPE: { rpc: -32603, status: 200, message: 'Upstream answered with result type %s, which a 2025-11-25 client cannot receive' },
  GW_NEEDS_STREAM: {
    rpc: -32603,
    status: 200,
    message: 'The server needs %s, which needs a response stream the client did not accept (Accept: text/event-stream)',
  },
  GW_REQUEST_CANCELLED: { rpc: -32603, status: 200, message: 'Request cancelled' },
  // Authentication
  GW_UNAUTHENTICATED: { rpc: -32600, status: 401, message: 'Unauthorized: credentials required' },
  GW_INVALID_TOKEN: { rpc: -32600, status: 401, message: 'Unauthorized: %s token' },
  GW_UNTRUSTED_SOURCE: { rpc: -32600, status: 401, message: 'Unauthorized: this address may not assert an identity' },
  GW_AUTH_UNAVAILABLE: { rpc: -31003, status: 503, message: 'Authentication unavailable; retry shortly', retryAfterSeconds: 5 },
  // Tasks
  GW_TASK_UNKNOWN: { rpc: -32602, status: 200, message: 'Unknown task' },
  GW_TASK_EXPIRED: { rpc: -32602, status: 200, message: 'Failed to retrieve task: Task has expired' },
  GW_TASK_TERMINAL: { rpc: -32602, status: 200, message: "Cannot cancel task: already in terminal status '%s'" },
  GW_INVALID_CURSOR: { rpc: -32602, status: 200, message: 'Invalid cursor' },
  GW_TOO_MANY_TASKS: { rpc: -31001, status: 429, message: 'Too many active tasks (limit %s); let some finish or cancel them' },
  GW_STORE_FULL: { rpc: -31002, status: 503, message: 'The task store is full (%s live tasks); try again later' },
  GW_STORE_UNAVAILABLE: { rpc: -31003, status: 503, message: 'The task store is unavailable; retry shortly', retryAfterSeconds: 1 },
  GW_MISSING_CAPABILITY: { rpc: -32021, status: 400, message: "The upstream needs %s, which this request's clientCapabilities do not declare" },
  GW_TASK_RESULT_TOO_LARGE: { rpc: -32603, status: 200, message: 'The task result is too large to keep (%s bytes; the limit is %s)' },
  GW_TASK_SHUT_DOWN: { rpc: -32603, status: 200, message: 'The gateway shut down before the task finished' },
  GW_JOB_NO_HANDLE: { rpc: -32603, status: 502, message: 'Job rule for tool %s: the start tool answered without a handle at %s' },
  GW_JOB_UNKNOWN_STATE: { rpc: -32603, status: 200, message: 'Job rule for tool %s: the status tool reported %s, which the rule does not map' },
  GW_TOOL_NOT_FOUND: { rpc: -32602, status: 200, message: 'Unknown tool: %s' },
  GW_POLL_TOO_FAST: { rpc: -31001, status: 429, message: 'Polling too fast: ask about this task again in %s ms' },
  // MRTR
  GW_INVALID_REQUEST_STATE: { rpc: -32602, status: 400, message: 'Invalid requestState' },
  GW_INSTANCE_GONE: {
    rpc: -32602,
    status: 400,
    message: 'Invalid requestState: the gateway instance holding this request is gone; send the request again without requestState',
  },
  GW_TOO_MANY_HELD_CALLS: {
    rpc: -31001,
    status: 503,
    message: 'Too many of your requests are waiting for input (limit %s); answer or abandon some, then retry',
    retryAfterSeconds: 1,
  },
  GW_HELD_CALLS_FULL: { rpc: -31002, status: 503, message: 'Too many requests are waiting for input; try again later', retryAfterSeconds: 1 },
  GW_INPUT_REQUESTS_EXCEEDED: { rpc: -32603, status: 502, message: 'The upstream asked for more input at once than allowed (limit %s)' },
  GW_INPUT_ROUNDS_EXCEEDED: { rpc: -32603, status: 502, message: 'The upstream asked for input more often than allowed (limit %s rounds)' },
  // Input validation
  GW_INVALID_META: { rpc: -32602, status: 400, message: 'Invalid params: %s must be %s' },
  GW_UNKNOWN_INPUT_KEY: { rpc: -32602, status: 400, message: 'Invalid params: inputResponses key %s was not asked' },
  GW_INVALID_INPUT_RESPONSE: { rpc: -32602, status: 400, message: 'Invalid params: the answer to input request %s is invalid (%s)' },
  // Upstream
  GW_UPSTREAM_TIMEOUT: { rpc: -32603, status: 504, message: 'Upstream timed out' },
  GW_UPSTREAM_UNAVAILABLE: { rpc: -32603, status: 502, message: 'Upstream unavailable: %s' },
  GW_UPSTREAM_HTTP: { rpc: -32603, status: 502, message: 'Upstream unavailable: upstream answered HTTP %s' },
  GW_UPSTREAM_UNAUTHORIZED: { rpc: -32600, status: 401, message: 'Unauthorized: the upstream requires authorization' },
  GW_UPSTREAM_FORBIDDEN: { rpc: -32600, status: 403, message: 'Forbidden: the upstream refused these credentials' },
  GW_UPSTREAM_DOWN: { rpc: -31003, status: 503, message: 'Upstream unavailable: %s is down; retry in %s s' },
  GW_UPSTREAM_BUSY: { rpc: -31002, status: 503, message: 'Gateway busy: %s' },
  GW_UPSTREAM_BAD_MESSAGE: { rpc: -32603, status: 502, message: 'Upstream sent an unusable message: %s' },
  GW_UPSTREAM_PROCESS_EXITED: { rpc: -32603, status: 502, message: 'Upstream process %s exited (%s); it is being restarted' },
  GW_UPSTREAM_REQUEST_UNATTRIBUTED: { rpc: -32603, status: 502, message: 'Cannot tie %s to a call: %s' },
  // Per-principal shares
  GW_PRINCIPAL_SHARE_EXHAUSTED: {
    rpc: -31001,
    status: 503,
    message: 'Too many %s for this caller (at most %s); retry when one of them ends',
    retryAfterSeconds: 1,
  },
};

const entries = Object.entries(ERROR_CATALOG) as Array<[ErrorKind, ErrorSpec]>;

/** The gateway's own codes (docs/security.md § Errors), pinned too. */
const ownCodes: number[] = Object.values(GatewayErrorCode);

/** Every .ts file under a directory. */
function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourcesUnder(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

t.test('the catalog is exactly the pinned table', async (t) => {
  t.strictSame({ ...ERROR_CATALOG }, PINNED, 'a change to the catalog is a change to this copy as well');
});

t.test('every kind named in src/ is in the catalog', async (t) => {
  const named = new Map<string, string>();
  for (const file of sourcesUnder(srcDir)) {
    for (const m of readFileSync(file, 'utf8').matchAll(/['"`](GW_[A-Z0-9_]+)['"`]/g)) named.set(m[1] as string, file.slice(srcDir.length + 1));
  }
  t.ok(named.size >= 20, `found the kinds the sources name (${named.size})`);
  for (const [kind, file] of named) t.ok(Object.hasOwn(ERROR_CATALOG, kind), `${kind} (named in src/${file}) is an entry`);
});

t.test('codes are unique and well-formed; no two entries answer alike', async (t) => {
  const answers = new Map<string, string>();
  for (const [kind, spec] of entries) {
    t.match(kind, /^GW_[A-Z0-9]+(_[A-Z0-9]+)*$/, `${kind}: GW_ and upper snake case`);
    const key = `${spec.rpc} ${spec.status} ${spec.message}`;
    t.notOk(answers.has(key), `${kind}: not the same answer as ${answers.get(key) ?? 'another entry'} (a client could not tell them apart)`);
    answers.set(key, kind);
  }
  t.equal(answers.size, entries.length);
});

t.test('statuses, JSON-RPC codes, retry hints and faults are valid', async (t) => {
  for (const [kind, spec] of entries) {
    t.ok(
      spec.status === 200 || (Number.isInteger(spec.status) && spec.status >= 400 && spec.status <= 599),
      `${kind}: 200 (in-band) or an error status (${spec.status})`,
    );
    // JSON-RPC 2.0 §5.1: the reserved range is -32768..-32000 (the spec's own codes and the implementation-defined
    // server errors that MCP uses: -32000, -32001, -32002, -32020..-32022, -32042); the gateway's own codes lie outside
    // it (2026-07-28 basic §Error Codes).
    t.ok(
      (Number.isInteger(spec.rpc) && spec.rpc >= -32768 && spec.rpc <= -32000) || ownCodes.includes(spec.rpc),
      `${kind}: a reserved JSON-RPC code or one of the gateway's (${spec.rpc})`,
    );
    t.ok(spec.message.length > 0 && spec.message.length <= 200, `${kind}: a message`);
    if (spec.retryAfterSeconds !== undefined) {
      t.ok(Number.isInteger(spec.retryAfterSeconds) && spec.retryAfterSeconds > 0, `${kind}: Retry-After in whole seconds`);
      t.ok(spec.status === 429 || spec.status === 503, `${kind}: a retry hint only on 429 or 503 (RFC 9110 §10.2.3)`);
    }
    if (spec.fault) t.ok(spec.status >= 500, `${kind}: a gateway fault is a 5xx`);
    // A limit or an unavailability (429, 503) is one of the gateway's codes, to retry; any other 5xx is -32603.
    if (spec.status === 429 || spec.status === 503) t.ok(ownCodes.includes(spec.rpc), `${kind}: a 429 or 503 carries a code of the gateway's (${spec.rpc})`);
    else if (spec.status >= 500 && spec.status !== 501) t.equal(spec.rpc, -32603, `${kind}: a 5xx carries -32603 (internal error)`);
    if (ownCodes.includes(spec.rpc)) t.ok(spec.status === 429 || spec.status === 503, `${kind}: a code of the gateway's only on 429 or 503`);
  }
  t.equal(ERROR_CATALOG.GW_INTERNAL.fault, true, 'the catch-all is the one logged as a fault');
});

t.test('in-band entries (200) use -32602, -32601 or -32603, each for what it means', async (t) => {
  const inBand = entries.filter(([, spec]) => spec.status === 200);
  t.ok(inBand.length > 0);
  for (const [kind, spec] of inBand) {
    t.ok([-32602, -32601, -32603].includes(spec.rpc), `${kind}: invalid params, method not found or internal error (${spec.rpc})`);
    if (spec.rpc === -32601) t.match(spec.message, /^Method not found/, `${kind}: -32601 says method not found`);
    // Invalid params name the parameter or the task it points at (2025-11-25 basic/utilities/tasks §Protocol Errors),
    // or the tool a call names (2026-07-28 server/tools §Error Handling: "Unknown tool").
    if (spec.rpc === -32602)
      t.match(
        spec.message,
        /^(Invalid params|Unknown task|Unknown tool|Invalid cursor|Cannot cancel task|Failed to retrieve task)/,
        `${kind}: -32602 about a parameter`,
      );
  }
});

t.test("the gateway's own codes: pinned, outside the reserved ranges, each for limits or unavailability", async (t) => {
  t.strictSame({ ...GatewayErrorCode }, { CallerLimit: -31001, AtCapacity: -31002, Unavailable: -31003 });
  for (const code of ownCodes) t.ok(code < -32768 || code > -32000, `${code}: outside JSON-RPC's reserved -32768..-32000`);
  const byCode = (code: number) =>
    entries
      .filter(([, spec]) => spec.rpc === code)
      .map(([kind]) => kind)
      .sort();
  t.same(byCode(GatewayErrorCode.CallerLimit), ['GW_POLL_TOO_FAST', 'GW_PRINCIPAL_SHARE_EXHAUSTED', 'GW_TOO_MANY_HELD_CALLS', 'GW_TOO_MANY_TASKS']);
  t.same(byCode(GatewayErrorCode.AtCapacity), ['GW_HELD_CALLS_FULL', 'GW_STORE_FULL', 'GW_TOO_MANY_SESSIONS', 'GW_TOO_MANY_SUBSCRIPTIONS', 'GW_UPSTREAM_BUSY']);
  t.same(byCode(GatewayErrorCode.Unavailable), ['GW_AUTH_UNAVAILABLE', 'GW_SHUTTING_DOWN', 'GW_STORE_UNAVAILABLE', 'GW_UPSTREAM_DOWN']);
});

t.test('a known wait is in data.retryAfterMs as well as Retry-After; a finer one in the data stays', async (t) => {
  for (const [kind, spec] of entries.filter(([, s]) => s.retryAfterSeconds !== undefined)) {
    const a = catalogAnswer(kind);
    t.same(a.error.data, { retryAfterMs: (spec.retryAfterSeconds as number) * 1000 }, `${kind}: data.retryAfterMs`);
  }
  const poll = answerOf(new GatewayError('GW_POLL_TOO_FAST', { args: [1234], data: { retryAfterMs: 1234 }, retryAfterSeconds: 2 }));
  t.same([poll.error.data, poll.retryAfterSeconds], [{ retryAfterMs: 1234 }, 2], "a poll's own wait, to the millisecond");
  const other = catalogAnswer('GW_PRINCIPAL_SHARE_EXHAUSTED', { args: ['sessions', 2], data: { share: 'sessions' } });
  t.same(other.error.data, { retryAfterMs: 1000, share: 'sessions' }, 'beside data of its own');
  t.equal(catalogAnswer('GW_TOO_MANY_TASKS', { args: [3] }).error.data, undefined, 'no hint without a known wait');
  t.same(exceptionToEdge(new UpstreamDownError('u', 2_500)).error.data, { retryAfterMs: 3000 }, 'the wait rounded up, as Retry-After');
});

t.test('every GatewayError subclass answers through its declared entry', async (t) => {
  const required = { sampling: {} };
  const cases: Array<[GatewayError, ErrorKind, string]> = [
    [new UpstreamUnavailableError('upstream unreachable: ECONNREFUSED'), 'GW_UPSTREAM_UNAVAILABLE', 'Upstream unavailable: upstream unreachable: ECONNREFUSED'],
    [new UpstreamTimeoutError('the upstream call took longer than 5 ms'), 'GW_UPSTREAM_TIMEOUT', 'Upstream timed out'],
    [new UpstreamHttpError(500, 'oops'), 'GW_UPSTREAM_HTTP', 'Upstream unavailable: upstream answered HTTP 500'],
    [new UpstreamBusyError('all 4 upstream sessions are busy'), 'GW_UPSTREAM_BUSY', 'Gateway busy: all 4 upstream sessions are busy'],
    [new UpstreamTaskLostError('t-1'), 'GW_TASK_UNKNOWN', 'Unknown task'],
    [new UpstreamDownError('everything', 1_200), 'GW_UPSTREAM_DOWN', 'Upstream unavailable: everything is down; retry in 2 s'],
    [new TooManyTasksError(3), 'GW_TOO_MANY_TASKS', 'Too many active tasks (limit 3); let some finish or cancel them'],
    [new UnknownTaskError(), 'GW_TASK_UNKNOWN', 'Unknown task'],
    [new TaskAlreadyTerminalError('completed'), 'GW_TASK_TERMINAL', "Cannot cancel task: already in terminal status 'completed'"],
    [new InvalidCursorError(), 'GW_INVALID_CURSOR', 'Invalid cursor'],
    [new InstanceGoneError('inst-1'), 'GW_INSTANCE_GONE', ERROR_CATALOG.GW_INSTANCE_GONE.message],
    [
      new MissingCapabilityError(required, 'sampling/createMessage'),
      'GW_MISSING_CAPABILITY',
      "The upstream needs sampling/createMessage, which this request's clientCapabilities do not declare",
    ],
    [new InvalidRequestStateError('expired'), 'GW_INVALID_REQUEST_STATE', 'Invalid requestState'],
    [new StoreFullError(10), 'GW_STORE_FULL', 'The task store is full (10 live tasks); try again later'],
    [new StoreUnavailableError('cannot reach Redis: ECONNREFUSED'), 'GW_STORE_UNAVAILABLE', 'The task store is unavailable; retry shortly'],
    [new TooManySessionsError(), 'GW_TOO_MANY_SESSIONS', 'Too many sessions; try again later'],
    [new AuthError('GW_INVALID_TOKEN', 'expired', 'Bearer error="invalid_token"', { args: ['expired'] }), 'GW_INVALID_TOKEN', 'Unauthorized: expired token'],
  ];
  for (const [e, kind, message] of cases) {
    const spec: ErrorSpec = ERROR_CATALOG[kind];
    t.equal(e.kind, kind, `${e.name} is ${kind}`);
    t.equal(e.message, message, `${e.name}: its message`);
    const edge = exceptionToEdge(e);
    t.equal(edge.status, spec.status, `${e.name}: status ${spec.status}`);
    t.equal(edge.error.code, spec.rpc, `${e.name}: code ${spec.rpc}`);
    t.equal(edge.error.message, message, `${e.name}: the client reads the same message`);
    t.equal(edge.fault, false, `${e.name}: not a gateway fault`);
  }

  // The fields callers read stay on the classes.
  const http = new UpstreamHttpError(503, 'busy');
  t.same([http.status, http.bodyText], [503, 'busy']);
  const down = new UpstreamDownError('u', 4_001);
  t.same(
    [down.upstream, down.retryAfterMs, down.retryAfterSeconds, exceptionToEdge(down).retryAfterSeconds],
    ['u', 4_001, 5, 5],
    'Retry-After in whole seconds, rounded up',
  );
  t.equal(exceptionToEdge(new UpstreamDownError('u', 0)).retryAfterSeconds, 1, 'never Retry-After: 0');
  t.equal(new TaskAlreadyTerminalError('failed').status, 'failed');
  t.same(new MissingCapabilityError(required, 'x').requiredCapabilities, required);
  t.same(exceptionToEdge(new MissingCapabilityError(required, 'x')).error.data, { requiredCapabilities: required }, '-32021 names what is missing');
  t.equal(exceptionToEdge(new StoreUnavailableError('x')).retryAfterSeconds, 1);
  t.equal(exceptionToEdge(new TooManySessionsError()).retryAfterSeconds, 5);
  t.equal(new InstanceGoneError('inst-9').instance, 'inst-9');
  t.equal(new UpstreamTaskLostError('t-9').upstreamTaskId, 't-9');
  t.equal(new UpstreamBusyError('x').name, 'UpstreamBusyError', 'the class name stays the error name (logs, tests)');

  // Every subclass in src/ is in the cases above: a new one gets its line here.
  const declared = new Set<string>();
  for (const file of sourcesUnder(srcDir)) {
    for (const m of readFileSync(file, 'utf8').matchAll(/class (\w+) extends GatewayError\b/g)) declared.add(m[1] as string);
  }
  t.strictSame([...declared].sort(), [...new Set(cases.map(([e]) => e.name))].sort(), 'each GatewayError subclass in src/ is checked here');
});

t.test('internal errors stay plain Errors and answer GW_INTERNAL (500, logged)', async (t) => {
  for (const e of [new SessionExpiredError(), new TaskIdClashError('gwt_x'), new RemoteError('boom', 'TypeError'), new Error('anything'), 'a string']) {
    t.notOk(e instanceof GatewayError, `${String((e as Error).name ?? e)} is not a catalog error`);
    t.strictSame(exceptionToEdge(e), { status: 500, error: { code: -32603, message: 'Internal error' }, fault: true });
  }
});

t.test('catalogAnswer, answerOf and failureToEdge fill the entry', async (t) => {
  t.equal(formatMessage('a %s b %s', [1]), 'a 1 b %s', 'a missing argument leaves its placeholder');
  const a = catalogAnswer('GW_UPSTREAM_DOWN', { args: ['u', 3], retryAfterSeconds: 3 });
  t.strictSame(a, {
    kind: 'GW_UPSTREAM_DOWN',
    status: 503,
    error: { code: -31003, message: 'Upstream unavailable: u is down; retry in 3 s', data: { retryAfterMs: 3000 } },
    fault: false,
    retryAfterSeconds: 3,
  });
  const e = new GatewayError('GW_TASK_TERMINAL', { args: ['completed'] });
  t.strictSame(answerOf(e), catalogAnswer('GW_TASK_TERMINAL', { args: ['completed'] }), 'thrown or not, the same answer');
  t.same(e.args, ['completed'], 'the arguments travel with the error (a relay rebuilds it from them)');
  t.strictSame(
    failureToEdge({ reason: 'unsupported-version', message: 'Unsupported protocol version: 1999-01-01', id: 1, data: { supported: ['2026-07-28'] } }),
    {
      status: 400,
      error: { code: -32022, message: 'Unsupported protocol version: 1999-01-01', data: { supported: ['2026-07-28'] } },
      fault: false,
    },
  );
  t.strictSame(failureToEdge({ reason: 'method-removed', message: 'Method not found: tasks/list', id: 1 }), {
    status: 404,
    error: { code: -32601, message: 'Method not found: tasks/list' },
    fault: false,
  });
});
