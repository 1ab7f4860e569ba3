/**
 * proxy/request-outcome: what a request ended as, as a table. Each row is an outcome with the operator log's text, the
 * metrics' label and the span's error code it renders to (the texts are the words the log has always written, the
 * labels the values the dashboards name); then the constructors the producers use, row by row.
 */
import t from 'tap';
import { GatewayError } from '../../src/translate/index.js';
import { isErrorKind } from '../../src/proxy/metrics.js';
import {
  clientClosed,
  CLIENT_CLOSED,
  errorOutcome,
  OK,
  OUTCOME_WORDS,
  outcomeLabel,
  outcomeText,
  passThroughOutcome,
  resultOutcome,
  spanErrorCode,
  taskResultOutcome,
  taskStatusOutcome,
  upstreamErrorOutcome,
  type RequestOutcome,
} from '../../src/proxy/request-outcome.js';

/** Every kind, so that a kind without a row below fails here (and one missing from this record fails typecheck). */
const EVERY_KIND: Record<RequestOutcome['kind'], true> = {
  ok: true,
  'session-created': true,
  'subscription-ended': true,
  'task-created': true,
  result: true,
  'other-result': true,
  'task-status': true,
  'task-result': true,
  'client-closed': true,
  cancelled: true,
  'input-timeout': true,
  'unsupported-result-type': true,
  'method-not-found': true,
  expired: true,
  error: true,
  'upstream-error': true,
  'upstream-http': true,
};

/** outcome → [log text, metrics label, span error code]. */
const ROWS: Array<[RequestOutcome, string, string, number | undefined]> = [
  [{ kind: 'ok' }, 'ok', 'ok', undefined],
  [{ kind: 'session-created' }, 'session created', 'ok', undefined],
  [{ kind: 'subscription-ended' }, 'subscription ended', 'ok', undefined],
  [{ kind: 'task-created' }, 'task created', 'task_created', undefined],
  [{ kind: 'result', resultType: 'complete' }, 'complete', 'ok', undefined],
  [{ kind: 'result', resultType: 'task' }, 'task', 'task_created', undefined],
  [{ kind: 'result', resultType: 'input_required' }, 'input_required', 'input_required', undefined],
  [{ kind: 'other-result', resultType: 'error 7' }, 'error 7', 'ok', undefined],
  [{ kind: 'task-status', status: 'working' }, 'working', 'ok', undefined],
  [{ kind: 'task-status', status: 'input_required' }, 'input_required', 'input_required', undefined],
  [{ kind: 'task-status', status: 'completed' }, 'completed', 'ok', undefined],
  [{ kind: 'task-status', status: 'failed' }, 'failed', 'ok', undefined],
  [{ kind: 'task-status', status: 'cancelled' }, 'cancelled', 'cancelled', undefined],
  [{ kind: 'task-result', status: 'completed' }, 'task completed', 'ok', undefined],
  [{ kind: 'task-result', status: 'failed' }, 'task failed', 'ok', undefined],
  [{ kind: 'task-result', status: 'cancelled' }, 'task cancelled', 'ok', undefined],
  [{ kind: 'client-closed' }, 'client closed', 'client_closed', undefined],
  [{ kind: 'cancelled' }, 'cancelled', 'cancelled', undefined],
  [{ kind: 'input-timeout' }, 'input timeout', 'GW_CLIENT_ANSWER_TIMEOUT', undefined],
  [{ kind: 'unsupported-result-type' }, 'unsupported result type', 'GW_UNSUPPORTED_RESULT_TYPE', undefined],
  [{ kind: 'method-not-found' }, 'method not found', 'GW_METHOD_NOT_FOUND', undefined],
  [{ kind: 'expired' }, 'expired', 'GW_TASK_EXPIRED', undefined],
  [{ kind: 'error' }, 'error', 'error', undefined],
  [{ kind: 'error', code: -32602 }, 'error -32602', 'error', -32602],
  [{ kind: 'upstream-error', code: -32603 }, 'upstream error -32603', 'upstream_error', -32603],
  [{ kind: 'upstream-error', code: 7 }, 'upstream error 7', 'upstream_error', 7],
  [{ kind: 'upstream-http', status: '4xx' }, 'upstream_http_4xx', 'upstream_http_4xx', undefined],
  [{ kind: 'upstream-http', status: '5xx' }, 'upstream_http_5xx', 'upstream_http_5xx', undefined],
];

t.test('each outcome renders its log text, metrics label and span error code', async (t) => {
  t.same(new Set(ROWS.map(([o]) => o.kind)), new Set(Object.keys(EVERY_KIND)), 'every kind has a row');
  for (const [o, text, label, code] of ROWS) {
    const name = JSON.stringify(o);
    t.equal(outcomeText(o), text, `${name}: text`);
    t.equal(outcomeLabel(o), label, `${name}: label`);
    t.equal(spanErrorCode(o), code, `${name}: span error code`);
  }
  const words: readonly string[] = OUTCOME_WORDS;
  t.same(
    ROWS.map(([o]) => outcomeLabel(o)).filter((l) => !words.includes(l) && !isErrorKind(l)),
    [],
    'every label is an outcome word or a catalog code',
  );
});

t.test("a failure's catalog kind is the label, whatever the kind; the text and the span's code stay the kind's", async (t) => {
  for (const [o, text, , code] of ROWS) {
    const failed: RequestOutcome = { ...o, failure: 'GW_UPSTREAM_TIMEOUT' };
    t.equal(outcomeLabel(failed), 'GW_UPSTREAM_TIMEOUT', `${o.kind}: label`);
    t.equal(outcomeText(failed), text, `${o.kind}: text`);
    t.equal(spanErrorCode(failed), code, `${o.kind}: span error code`);
  }
});

t.test('errors: the code the client got, and the catalog kind of the exception answered', async (t) => {
  t.same(errorOutcome(-32602), { kind: 'error', code: -32602 }, 'an in-band refusal of the face: no catalog kind');
  t.same(errorOutcome(-32602, new GatewayError('GW_TASK_UNKNOWN')), { kind: 'error', code: -32602, failure: 'GW_TASK_UNKNOWN' });
  t.same(errorOutcome(undefined, new Error('boom')), { kind: 'error', failure: 'GW_INTERNAL' }, 'anything else is GW_INTERNAL');
  t.equal(outcomeLabel(errorOutcome(-32603, new GatewayError('GW_STORE_UNAVAILABLE'))), 'GW_STORE_UNAVAILABLE');
  t.same(upstreamErrorOutcome(-32001), { kind: 'upstream-error', code: -32001 });
  t.equal(clientClosed(undefined), CLIENT_CLOSED, 'a client that left: the shared outcome');
  t.same(clientClosed('GW_UPSTREAM_TIMEOUT'), { kind: 'client-closed', failure: 'GW_UPSTREAM_TIMEOUT' }, 'after a failure: labelled by it');
});

t.test('a forwarded modern result, by its resultType', async (t) => {
  const rows: Array<[unknown, RequestOutcome]> = [
    [undefined, { kind: 'result', resultType: 'complete' }],
    [null, { kind: 'result', resultType: 'complete' }],
    ['complete', { kind: 'result', resultType: 'complete' }],
    ['task', { kind: 'result', resultType: 'task' }],
    ['input_required', { kind: 'result', resultType: 'input_required' }],
    ['streaming', { kind: 'other-result', resultType: 'streaming' }],
    ['toString', { kind: 'other-result', resultType: 'toString' }],
    [7, { kind: 'other-result', resultType: '7' }],
  ];
  for (const [resultType, outcome] of rows) t.same(resultOutcome(resultType), outcome, String(resultType));
});

t.test("a task request's answer, by its task's status", async (t) => {
  t.same(taskStatusOutcome('working'), { kind: 'task-status', status: 'working' });
  t.same(taskStatusOutcome('cancelled'), { kind: 'task-status', status: 'cancelled' });
  t.equal(taskStatusOutcome(undefined), OK, 'tasks/update and tasks/cancel name no status: answered');
  t.equal(taskStatusOutcome('constructor'), OK, 'not a status');
  t.same(taskResultOutcome('failed'), { kind: 'task-result', status: 'failed' });
});

t.test('a passed-through request, by how its answer ended', async (t) => {
  const rows: Array<[boolean, number, RequestOutcome]> = [
    [true, 200, { kind: 'ok' }],
    [true, 202, { kind: 'ok' }],
    [true, 399, { kind: 'ok' }],
    [true, 400, { kind: 'upstream-http', status: '4xx' }],
    [true, 404, { kind: 'upstream-http', status: '4xx' }],
    [true, 499, { kind: 'upstream-http', status: '4xx' }],
    [true, 500, { kind: 'upstream-http', status: '5xx' }],
    [true, 504, { kind: 'upstream-http', status: '5xx' }],
    [false, 200, { kind: 'client-closed' }],
    [false, 502, { kind: 'client-closed' }],
  ];
  for (const [finished, status, outcome] of rows) t.same(passThroughOutcome(finished, status, undefined), outcome, `${finished} ${status}`);
  t.same(passThroughOutcome(true, 502, 'GW_UPSTREAM_UNAVAILABLE'), { kind: 'upstream-http', status: '5xx', failure: 'GW_UPSTREAM_UNAVAILABLE' });
  t.equal(outcomeLabel(passThroughOutcome(true, 504, 'GW_UPSTREAM_TIMEOUT')), 'GW_UPSTREAM_TIMEOUT', 'the refusal the gateway answered is the label');
  t.equal(outcomeLabel(passThroughOutcome(false, 200, 'GW_UPSTREAM_TIMEOUT')), 'GW_UPSTREAM_TIMEOUT');
});
