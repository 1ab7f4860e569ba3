/**
 * Errors raised and answered through the catalog (src/translate/gateway-error.ts): a known wait as `Retry-After` and
 * `data.retryAfterMs`, every `GatewayError` subclass in src/ through its declared entry, anything else GW_INTERNAL, the
 * answer of an entry filled from its template, and the error objects outcomes carry (`catalogError`, `taskFailure`).
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ERROR_CATALOG, type ErrorKind, type ErrorSpec } from '../../src/translate/error-catalog.js';
import { answerOf, catalogAnswer, catalogError, formatMessage, GatewayError, taskFailure } from '../../src/translate/gateway-error.js';
import { AuthError } from '../../src/proxy/auth.js';
import { exceptionToEdge, failureToEdge } from '../../src/proxy/errors.js';
import { TooManySessionsError } from '../../src/proxy/legacy-face/face.js';
import { StoreUnavailableError } from '../../src/store/index.js';
import { StoreFullError, TaskIdClashError } from '../../src/store/task-store.js';
import { InstanceGoneError, RemoteError } from '../../src/tasks/instances/instance-bus.js';
import { InvalidCursorError, TaskAlreadyTerminalError, TooManyTasksError, UnknownTaskError } from '../../src/tasks/records/task-limits.js';
import { InvalidRequestStateError } from '../../src/tasks/calls/mrtr-bridge.js';
import { MissingCapabilityError } from '../../src/tasks/calls/conversation.js';
import {
  UpstreamBusyError,
  UpstreamDownError,
  UpstreamHttpError,
  UpstreamTaskLostError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
} from '../../src/upstream/index.js';
import { SessionExpiredError } from '../../src/upstream/errors.js';
import { sourcesUnder } from '../helpers/source-files.js';

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, '..', '..', 'src');
const entries = Object.entries(ERROR_CATALOG) as Array<[ErrorKind, ErrorSpec]>;

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

t.test('catalogError and taskFailure: the error object alone, filled from the entry', async (t) => {
  t.strictSame(catalogError('GW_REQUEST_CANCELLED'), { code: -32603, message: 'Request cancelled' });
  t.strictSame(catalogError('GW_METHOD_NOT_SERVED', { args: ['sampling/createMessage'] }), {
    code: -32601,
    message: 'Method not found: sampling/createMessage',
  });
  t.strictSame(catalogError('GW_UNDECLARED_INPUT', { args: ['roots/list'], data: { requiredCapabilities: { roots: {} } } }), {
    code: -32021,
    message: 'The client did not declare the capability roots/list needs',
    data: { requiredCapabilities: { roots: {} } },
  });
  t.strictSame(catalogError('GW_TOO_MANY_HELD_CALLS', { args: [2] }).data, { retryAfterMs: 1000 }, 'with the known wait, as every answer');
  t.strictSame(taskFailure(undefined), { code: -32603, message: 'Task failed' }, 'no status message: the fallback entry');
  t.strictSame(taskFailure(undefined, 'GW_UPSTREAM_TASK_FAILED'), { code: -32603, message: 'The upstream task failed' });
  t.strictSame(taskFailure('disk full'), { code: -32603, message: 'disk full' }, 'the status message as it is');
  t.strictSame(taskFailure('50%s done'), { code: -32603, message: '50%s done' }, 'a placeholder in the status message is not filled');
  t.strictSame(taskFailure('', 'GW_UPSTREAM_TASK_FAILED'), { code: -32603, message: '' }, 'an empty status message is still its own');
});
