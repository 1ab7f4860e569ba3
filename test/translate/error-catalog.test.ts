/**
 * The error catalog (src/translate/error-catalog.ts) pinned: a literal copy of the whole table but the meanings, so
 * that a change to a code, a status or a message is a deliberate edit here too (operators alert on codes, clients read
 * messages). Beside the copy: every kind named in src/ exists and every entry is used there, entries are well-formed
 * (statuses, JSON-RPC codes, in-band entries, retry hints, meanings). How errors are raised and answered through it:
 * gateway-error.test.ts; the page made of it: error-catalog-page.test.ts; no error built outside it:
 * test/source/catalog-errors.test.ts.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ERROR_CATALOG, GatewayErrorCode, type ErrorKind, type ErrorSpec } from '../../src/translate/error-catalog.js';
import { sourcesUnder, withoutComments } from '../helpers/source-files.js';

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, '..', '..', 'src');

/** The whole catalog as it must be. Change it only together with the catalog, on purpose. */
const PINNED: Record<string, Omit<ErrorSpec, 'doc'>> = {
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
  GW_TOO_MANY_SUBSCRIPTIONS: { rpc: -31002, status: 503, message: 'Too many open subscriptions; try again later', retryAfterSeconds: 1 },
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
  GW_RESOURCE_NOT_SERVED: { rpc: -32602, status: 200, message: 'Resource not found: %s' },
  GW_PROMPT_NOT_FOUND: { rpc: -32602, status: 200, message: 'Unknown prompt: %s' },
  GW_TASK_INSTANCE_LOST: { rpc: -32603, status: 200, message: 'The gateway instance running this task was lost; the task did not finish' },
  GW_TASK_UNREACHABLE: {
    rpc: -32603,
    status: 200,
    message: 'The gateway instance following this task is gone and this one cannot reach its upstream task',
  },
  GW_TASK_TIMED_OUT: { rpc: -32603, status: 200, message: 'The upstream call timed out' },
  GW_TASK_FAILED: { rpc: -32603, status: 200, message: 'Task failed' },
  GW_TASK_FAILED_BECAUSE: { rpc: -32603, status: 200, message: '%s' },
  GW_TASK_CANCELLED: { rpc: -32603, status: 200, message: 'Task cancelled' },
  GW_TASK_CANCELLED_BECAUSE: { rpc: -32603, status: 200, message: 'Task cancelled: %s' },
  GW_TASK_NOT_SUPPORTED: { rpc: -32601, status: 200, message: 'Tool %s does not support task-augmented calls' },
  GW_POLL_TOO_FAST: { rpc: -31001, status: 429, message: 'Polling too fast: ask about this task again in %s ms', retryAfterWhenRefused: true },
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
  GW_UNDECLARED_INPUT: { rpc: -32021, status: 400, message: 'The client did not declare the capability %s needs' },
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
  GW_UPSTREAM_DOWN: { rpc: -31003, status: 503, message: 'Upstream unavailable: %s is down; retry in %s s', retryAfterWhenRefused: true },
  GW_UPSTREAM_BUSY: { rpc: -31002, status: 503, message: 'Gateway busy: %s' },
  GW_UPSTREAM_BAD_MESSAGE: { rpc: -32603, status: 502, message: 'Upstream sent an unusable message: %s' },
  GW_UPSTREAM_PROCESS_EXITED: { rpc: -32603, status: 502, message: 'Upstream process %s exited (%s); it is being restarted' },
  GW_UPSTREAM_REQUEST_UNATTRIBUTED: { rpc: -32603, status: 502, message: 'Cannot tie %s to a call: %s' },
  GW_UPSTREAM_TASK_FAILED: { rpc: -32603, status: 200, message: 'The upstream task failed' },
  GW_UPSTREAM_TASK_CANCELLED: { rpc: -32603, status: 200, message: 'The upstream task was cancelled' },
  GW_UPSTREAM_TASK_CANCELLED_BECAUSE: { rpc: -32603, status: 200, message: 'The upstream task was cancelled: %s' },
  GW_UPSTREAM_TASK_LOST: { rpc: -32603, status: 200, message: 'The upstream no longer knows this task' },
  GW_UPSTREAM_BAD_INPUT_REQUIRED: { rpc: -32603, status: 200, message: 'upstream sent a malformed InputRequiredResult: %s' },
  GW_UPSTREAM_ENDLESS_INPUT: { rpc: -32603, status: 200, message: 'upstream still asked for input after %s rounds' },
  GW_UPSTREAM_MALFORMED_ERROR: { rpc: -32603, status: 200, message: 'Malformed error from upstream' },
  GW_UPSTREAM_REFUSED_GATEWAY: { rpc: -32603, status: 200, message: "Upstream refused the gateway's request: %s" },
  // Answers to an upstream's own requests
  GW_CLIENT_LACKS_INPUT: { rpc: -32601, status: 200, message: 'Client does not support %s' },
  GW_UPSTREAM_REQUEST_NOT_RELAYED: { rpc: -32601, status: 200, message: 'not supported here' },
  GW_UPSTREAM_REQUEST_AFTER_CANCEL: { rpc: -32601, status: 200, message: 'cancelled' },
  // Per-principal shares
  GW_PRINCIPAL_SHARE_EXHAUSTED: {
    rpc: -31001,
    status: 503,
    message: 'Too many %s for this caller (at most %s); retry when one of them ends',
    retryAfterSeconds: 1,
  },
};

const entries = Object.entries(ERROR_CATALOG) as Array<[ErrorKind, ErrorSpec]>;

/** The gateway's own codes (docs/errors.md), pinned too. */
const ownCodes: number[] = Object.values(GatewayErrorCode);

t.test('the catalog is exactly the pinned table', async (t) => {
  const withoutDocs = Object.fromEntries(entries.map(([kind, { doc: _doc, ...spec }]) => [kind, spec]));
  t.strictSame(withoutDocs, PINNED, 'a change to the catalog is a change to this copy as well');
});

t.test('every entry is used in src/ outside the catalog: no dead entry', async (t) => {
  const others = sourcesUnder(srcDir).filter((f) => !f.endsWith(join('translate', 'error-catalog.ts')));
  const used = new Set<string>();
  for (const file of others) for (const m of withoutComments(readFileSync(file, 'utf8')).matchAll(/\bGW_[A-Z0-9_]+\b/g)) used.add(m[0]);
  for (const [kind] of entries) t.ok(used.has(kind), `${kind} is raised or answered somewhere in src/ (not only named in a comment)`);
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
    t.ok(/^\S.{19,299}[.)]$/s.test(spec.doc), `${kind}: a meaning (docs/errors.md), one or two sentences`);
    if (spec.retryAfterWhenRefused) {
      t.equal(spec.retryAfterSeconds, undefined, `${kind}: a wait known up front or at the refusal, not both`);
      t.ok(spec.status === 429 || spec.status === 503, `${kind}: a retry hint only on 429 or 503`);
    }
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
    // -32601 says the method is not found, or names what is not offered: a task for a tool (2025-11-25
    // basic/utilities/tasks §Tool-Level Negotiation), an input kind the gateway answers an upstream in its client's place.
    if (spec.rpc === -32601)
      t.match(
        spec.message,
        /^(Method not found|Tool %s does not support|Client does not support|not supported here$|cancelled$)/,
        `${kind}: -32601 says what is not offered`,
      );
    // Invalid params name the parameter or the task it points at (2025-11-25 basic/utilities/tasks §Protocol Errors),
    // or the tool, prompt or resource a request names (2026-07-28 server/tools §Error Handling: "Unknown tool";
    // server/resources §Error Handling: "Resource not found").
    if (spec.rpc === -32602)
      t.match(
        spec.message,
        /^(Invalid params|Unknown task|Unknown tool|Unknown prompt|Resource not found|Invalid cursor|Cannot cancel task|Failed to retrieve task)/,
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
