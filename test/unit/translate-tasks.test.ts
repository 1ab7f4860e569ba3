/**
 * translate/tasks: the gateway's task record and the legacy (2025-11-25 core tasks) ⇄ modern
 * (2026-07-28 `io.modelcontextprotocol/tasks`) mappings (translation.md §1.3–1.6, §2.3–2.7, §4.4–4.6, §4.12(e)).
 */
import t from 'tap';
import type { InputRequest } from '../../src/translate/input.js';
import type { JsonRpcErrorObject } from '../../src/translate/jsonrpc.js';
import {
  createTaskResultV2,
  declaresTasks,
  detailedTaskV2,
  inlineResult,
  isCreateTaskResultV1,
  isTerminal,
  outcomeFromPayload,
  pollIntervalMsFromLegacy,
  readTaskV1,
  relatedTaskMeta,
  relatedTaskOf,
  TASKS_REQUIRED_CAPABILITIES,
  TERMINAL_STATUSES,
  toolTaskSupport,
  ttlMsFromLegacy,
  type TaskId,
  type TaskRecord,
  type TaskStatus,
  type TaskSupport,
  type TaskV1,
} from '../../src/translate/tasks.js';
import { clone, K, TASKS_V1, TASKS_V2, V1, type Json } from '../fixtures/translate-wire.js';

const STATUSES: TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

/** A stored record; gateway-internal fields (principal, upstream, kind, tool, version…) must never reach the wire. */
const baseRecord: TaskRecord = {
  taskId: 'gw_Q2x9' as TaskId,
  principal: 'principal-a',
  upstream: 'legacy',
  kind: 'proxied',
  upstreamTaskId: 'upstream-task-1',
  tool: 'slow',
  status: 'working',
  createdAt: '2026-08-01T09:00:00Z',
  lastUpdatedAt: '2026-08-01T09:00:00Z',
  ttlMs: 600_000,
  version: 3,
};
function record(over: Partial<TaskRecord> = {}): TaskRecord {
  return { ...clone(baseRecord), ...over };
}
/** The base modern task fields of `baseRecord` with a given status. */
function wire(status: TaskStatus, extra: Json = {}): Json {
  return {
    taskId: 'gw_Q2x9',
    status,
    createdAt: '2026-08-01T09:00:00Z',
    lastUpdatedAt: '2026-08-01T09:00:00Z',
    ttlMs: 600_000,
    ...extra,
  };
}

const confirm: InputRequest = { method: 'elicitation/create', params: { mode: 'form', message: 'Delete?', requestedSchema: { type: 'object' } } };
const roots: InputRequest = { method: 'roots/list' };
const callResult: Json = { resultType: 'complete', content: [{ type: 'text', text: 'done' }], isError: false };
const rpcError: JsonRpcErrorObject = { code: -32000, message: 'upstream blew up', data: { at: 'step 2' } };

/** A record carrying every optional outcome field, plus keys a record must not have but a careless store might. */
function kitchenSink(status: TaskStatus): TaskRecord {
  return {
    ...record({ status, result: clone(callResult), error: clone(rpcError), inputRequests: { confirm: clone(confirm) } }),
    requestState: 'opaque',
    ttl: 5,
    pollInterval: 7,
    task: { taskId: 'nested' },
  } as TaskRecord;
}

t.test('TERMINAL_STATUSES / isTerminal', async (t) => {
  t.same([...TERMINAL_STATUSES].sort(), ['cancelled', 'completed', 'failed']);
  const table: Array<[TaskStatus, boolean]> = [
    ['working', false],
    ['input_required', false],
    ['completed', true],
    ['failed', true],
    ['cancelled', true],
  ];
  t.same(table.map(([s]) => s), STATUSES, 'the table covers all five statuses');
  for (const [status, want] of table) {
    t.equal(isTerminal(status), want, status);
    t.equal(TERMINAL_STATUSES.includes(status), want, `${status}: TERMINAL_STATUSES agrees`);
  }
});

t.test('declaresTasks', async (t) => {
  const table: Array<[string, Json, boolean]> = [
    ['extension with {} settings', { extensions: { [K.tasksExtension]: {} } }, true],
    ['extension with non-empty settings', { extensions: { [K.tasksExtension]: { version: 1, flags: ['x'] } } }, true],
    ['extension next to others and core caps', { elicitation: {}, extensions: { 'com.example/x': {}, [K.tasksExtension]: {} } }, true],
    ['the -32021 data itself', clone(TASKS_REQUIRED_CAPABILITIES), true],
    ['no capabilities', {}, false],
    ['empty extensions', { extensions: {} }, false],
    ['another extension only', { extensions: { 'com.example/x': {} } }, false],
    ['legacy tasks capability only', { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, false],
    ['legacy initialize capabilities', clone(V1.initializeResult.capabilities) as Json, false],
    ['under experimental instead of extensions', { experimental: { [K.tasksExtension]: {} } }, false],
    ['key spelled differently', { extensions: { 'io.modelcontextprotocol/Tasks': {} } }, false],
    ['settings true', { extensions: { [K.tasksExtension]: true } }, false],
    ['settings null', { extensions: { [K.tasksExtension]: null } }, false],
    ['settings array', { extensions: { [K.tasksExtension]: [] } }, false],
    ['settings string', { extensions: { [K.tasksExtension]: 'on' } }, false],
    ['extensions a string', { extensions: K.tasksExtension }, false],
    ['extensions an array', { extensions: [K.tasksExtension] }, false],
    ['extensions an array of objects', { extensions: [{ [K.tasksExtension]: {} }] }, false],
    ['extensions null', { extensions: null }, false],
    ['extensions true', { extensions: true }, false],
  ];
  for (const [name, caps, want] of table) t.equal(declaresTasks(caps), want, name);
});

t.test('TASKS_REQUIRED_CAPABILITIES', async (t) => {
  t.strictSame(TASKS_REQUIRED_CAPABILITIES, { extensions: { [K.tasksExtension]: {} } }, 'names exactly the tasks extension, with {} settings');
  t.strictSame(JSON.parse(JSON.stringify(TASKS_REQUIRED_CAPABILITIES)), TASKS_REQUIRED_CAPABILITIES, 'plain JSON');
  t.ok(declaresTasks(TASKS_REQUIRED_CAPABILITIES), 'a client echoing it back declares the extension');
});

t.test('createTaskResultV2', async (t) => {
  t.test('fixture: flat, resultType "task"', async (t) => {
    const got = createTaskResultV2(record({ pollIntervalMs: 1500 }));
    t.strictSame(got, TASKS_V2.createTaskResult);
    t.notOk('task' in got, 'no nested task');
  });

  // [name, record, expected]
  const table: Array<[string, TaskRecord, Json]> = [
    ['working, bare', record(), { resultType: 'task', ...wire('working') }],
    ['input_required announced as working', record({ status: 'input_required', inputRequests: { confirm } }), { resultType: 'task', ...wire('working') }],
    ['input_required without requests announced as working', record({ status: 'input_required' }), { resultType: 'task', ...wire('working') }],
    ['completed (no result inlined)', record({ status: 'completed', result: callResult }), { resultType: 'task', ...wire('completed') }],
    ['failed (no error inlined)', record({ status: 'failed', error: rpcError }), { resultType: 'task', ...wire('failed') }],
    ['cancelled', record({ status: 'cancelled' }), { resultType: 'task', ...wire('cancelled') }],
    ['statusMessage when set', record({ statusMessage: 'Rendering' }), { resultType: 'task', ...wire('working', { statusMessage: 'Rendering' }) }],
    ['empty statusMessage is still set', record({ statusMessage: '' }), { resultType: 'task', ...wire('working', { statusMessage: '' }) }],
    ['pollIntervalMs when set', record({ pollIntervalMs: 250 }), { resultType: 'task', ...wire('working', { pollIntervalMs: 250 }) }],
    ['ttlMs null kept', record({ ttlMs: null }), { resultType: 'task', ...wire('working', { ttlMs: null }) }],
    ['kitchen-sink record: outcome fields and stray keys dropped', kitchenSink('working'), { resultType: 'task', ...wire('working') }],
    ['kitchen-sink input_required record', kitchenSink('input_required'), { resultType: 'task', ...wire('working') }],
  ];
  for (const [name, r, want] of table) {
    t.test(name, async (t) => {
      const before = clone(r);
      const got = createTaskResultV2(r);
      t.strictSame(got, want);
      t.equal(got.resultType, 'task');
      t.ok('ttlMs' in got, 'ttlMs key always present');
      for (const k of TASKS_V2.createTaskResultForbiddenKeys) t.notOk(k in got, `no ${k}`);
      t.notOk('statusMessage' in got && r.statusMessage === undefined, 'statusMessage only when set');
      t.notOk('pollIntervalMs' in got && r.pollIntervalMs === undefined, 'pollIntervalMs only when set');
      t.strictSame(r, before, 'record not mutated');
    });
  }
  for (const status of STATUSES) {
    const got = createTaskResultV2(kitchenSink(status));
    t.strictSame(Object.keys(got).sort(), ['createdAt', 'lastUpdatedAt', 'resultType', 'status', 'taskId', 'ttlMs'], `${status}: only task fields`);
  }
});

t.test('detailedTaskV2', async (t) => {
  t.test('fixture: completed with the inlined result', async (t) => {
    const got = detailedTaskV2(record({ status: 'completed', lastUpdatedAt: '2026-08-01T09:03:10Z', result: clone(TASKS_V2.getCompleted.result) as Json }));
    t.strictSame(got, TASKS_V2.getCompleted);
  });

  const noStatus = { code: -32603, message: 'Task failed' };
  // [name, record, expected]
  const table: Array<[string, TaskRecord, Json]> = [
    ['working', record(), { resultType: 'complete', ...wire('working') }],
    ['working with statusMessage and pollIntervalMs', record({ statusMessage: 'step 2/5', pollIntervalMs: 1500 }), { resultType: 'complete', ...wire('working', { statusMessage: 'step 2/5', pollIntervalMs: 1500 }) }],
    ['input_required, inputRequests absent → working', record({ status: 'input_required' }), { resultType: 'complete', ...wire('working') }],
    ['input_required, inputRequests {} → working', record({ status: 'input_required', inputRequests: {} }), { resultType: 'complete', ...wire('working') }],
    ['input_required with one request', record({ status: 'input_required', inputRequests: { confirm } }), { resultType: 'complete', ...wire('input_required', { inputRequests: { confirm } }) }],
    ['input_required with several requests', record({ status: 'input_required', statusMessage: 'need input', inputRequests: { confirm, roots } }), {
      resultType: 'complete',
      ...wire('input_required', { statusMessage: 'need input', inputRequests: { confirm, roots } }),
    }],
    ['completed + result', record({ status: 'completed', result: callResult }), { resultType: 'complete', ...wire('completed', { result: callResult }) }],
    ['completed with an isError result stays completed', record({ status: 'completed', result: { resultType: 'complete', content: [], isError: true } }), {
      resultType: 'complete',
      ...wire('completed', { result: { resultType: 'complete', content: [], isError: true } }),
    }],
    ['failed + error', record({ status: 'failed', error: rpcError }), { resultType: 'complete', ...wire('failed', { error: rpcError }) }],
    ['failed + error, statusMessage kept', record({ status: 'failed', statusMessage: 'boom', error: rpcError }), { resultType: 'complete', ...wire('failed', { statusMessage: 'boom', error: rpcError }) }],
    ['failed without error → default -32603 "Task failed"', record({ status: 'failed' }), { resultType: 'complete', ...wire('failed', { error: noStatus }) }],
    ['failed without error → default carries statusMessage', record({ status: 'failed', statusMessage: 'Upstream gone' }), {
      resultType: 'complete',
      ...wire('failed', { statusMessage: 'Upstream gone', error: { code: -32603, message: 'Upstream gone' } }),
    }],
    ['cancelled plain', record({ status: 'cancelled' }), { resultType: 'complete', ...wire('cancelled') }],
    ['ttlMs null kept', record({ ttlMs: null }), { resultType: 'complete', ...wire('working', { ttlMs: null }) }],
    // Outcome fields only for their own status; stray keys never.
    ['kitchen sink: working', kitchenSink('working'), { resultType: 'complete', ...wire('working') }],
    ['kitchen sink: input_required', kitchenSink('input_required'), { resultType: 'complete', ...wire('input_required', { inputRequests: { confirm } }) }],
    ['kitchen sink: completed', kitchenSink('completed'), { resultType: 'complete', ...wire('completed', { result: callResult }) }],
    ['kitchen sink: failed', kitchenSink('failed'), { resultType: 'complete', ...wire('failed', { error: rpcError }) }],
    ['kitchen sink: cancelled', kitchenSink('cancelled'), { resultType: 'complete', ...wire('cancelled') }],
  ];
  for (const [name, r, want] of table) {
    t.test(name, async (t) => {
      const before = clone(r);
      const got = detailedTaskV2(r);
      t.strictSame(got, want);
      t.equal(got.resultType, 'complete', 'always resultType "complete"');
      t.ok('ttlMs' in got, 'ttlMs key always present');
      for (const k of ['requestState', 'task', 'ttl', 'pollInterval', 'principal', 'upstream', 'kind', 'tool', 'version', 'upstreamTaskId']) t.notOk(k in got, `no ${k}`);
      if (got.status === 'input_required') t.ok(Object.keys(got.inputRequests as Json).length > 0, 'input_required always has a non-empty inputRequests');
      t.strictSame(r, before, 'record not mutated');
    });
  }
});

t.test('ttlMsFromLegacy', async (t) => {
  const table: Array<[string, unknown, number | null]> = [
    ['null (unlimited) kept', null, null],
    ['undefined (missing, non-compliant) → null', undefined, null],
    ['NaN', NaN, null],
    ['Infinity', Infinity, null],
    ['-Infinity', -Infinity, null],
    ['numeric string', '1500', null],
    ['boolean', true, null],
    ['object', { ttl: 1 }, null],
    ['integer kept', 120_000, 120_000],
    ['1500.6 rounds up', 1500.6, 1501],
    ['1500.4 rounds down', 1500.4, 1500],
    ['0 → 1', 0, 1],
    ['-0 → 1', -0, 1],
    ['0.4 → 1', 0.4, 1],
    ['-5 → 1', -5, 1],
    ['-5.7 → 1', -5.7, 1],
  ];
  for (const [name, v, want] of table) {
    const got = ttlMsFromLegacy(v);
    t.equal(got, want, name);
    if (got !== null) t.ok(Number.isInteger(got) && got > 0, `${name}: positive integer`);
  }
});

t.test('pollIntervalMsFromLegacy', async (t) => {
  const table: Array<[string, unknown, number | undefined]> = [
    ['absent', undefined, undefined],
    ['null', null, undefined],
    ['0', 0, undefined],
    ['negative', -100, undefined],
    ['-0.4', -0.4, undefined],
    ['0.4 rounds to 0', 0.4, undefined],
    ['0.5 rounds to 1', 0.5, 1],
    ['250.4 → 250', 250.4, 250],
    ['250.5 → 251', 250.5, 251],
    ['integer kept', 2000, 2000],
    ['NaN', NaN, undefined],
    ['Infinity', Infinity, undefined],
    ['numeric string', '250', undefined],
    ['object', { ms: 250 }, undefined],
  ];
  for (const [name, v, want] of table) {
    const got = pollIntervalMsFromLegacy(v);
    t.equal(got, want, name);
    if (got !== undefined) t.ok(Number.isInteger(got) && got > 0, `${name}: positive integer`);
  }
});

t.test('readTaskV1', async (t) => {
  const full: TaskV1 = {
    taskId: 't-9f2c',
    status: 'working',
    createdAt: '2026-01-05T10:00:00Z',
    lastUpdatedAt: '2026-01-05T10:00:00Z',
    ttl: 120_000,
    pollInterval: 2000,
  };
  const min = { taskId: 'm', status: 'working' };
  // [name, input, expected]
  const table: Array<[string, unknown, TaskV1 | undefined]> = [
    ['flat Task (tasks/get)', clone(TASKS_V1.task), full],
    ['nested {task} (CreateTaskResult), outer _meta ignored', clone(TASKS_V1.createTaskResult), full],
    ['ttl null kept', { ...min, ttl: null }, { taskId: 'm', status: 'working', ttl: null }],
    ['ttl missing → null', min, { taskId: 'm', status: 'working', ttl: null }],
    ['ttl string → null', { ...min, ttl: '5' }, { taskId: 'm', status: 'working', ttl: null }],
    ['ttl fractional kept raw (mapped later)', { ...min, ttl: 1.5 }, { taskId: 'm', status: 'working', ttl: 1.5 }],
    ['statusMessage copied', { ...min, statusMessage: 'hi' }, { taskId: 'm', status: 'working', ttl: null, statusMessage: 'hi' }],
    ['optional fields of the wrong type dropped', { ...min, statusMessage: 5, createdAt: 1, lastUpdatedAt: null, pollInterval: '2000', ttl: 10 }, { taskId: 'm', status: 'working', ttl: 10 }],
    ['modern-only and unknown keys dropped', { ...min, ttlMs: 9, pollIntervalMs: 9, result: {}, inputRequests: {}, _meta: { a: 1 } }, { taskId: 'm', status: 'working', ttl: null }],
    ['task key not an object: read flat', { ...min, task: 'x' }, { taskId: 'm', status: 'working', ttl: null }],
    ['bad status', { taskId: 'm', status: 'done' }, undefined],
    ['status in the wrong case', { taskId: 'm', status: 'Working' }, undefined],
    ['status missing', { taskId: 'm' }, undefined],
    ['status not a string', { taskId: 'm', status: 1 }, undefined],
    ['taskId missing', { status: 'working' }, undefined],
    ['taskId a number', { taskId: 7, status: 'working' }, undefined],
    ['nested task invalid', { task: { taskId: 'm', status: 'nope' } }, undefined],
    ['nested task without taskId', { task: { status: 'working' } }, undefined],
    ['undefined', undefined, undefined],
    ['null', null, undefined],
    ['string', 't-9f2c', undefined],
    ['array', [clone(TASKS_V1.task)], undefined],
    ['a tool result', clone(V1.toolsCallResult), undefined],
  ];
  for (const status of STATUSES) table.push([`status ${status} accepted`, { ...min, status }, { taskId: 'm', status, ttl: null }]);
  for (const [name, v, want] of table) {
    const before = clone(v);
    t.strictSame(readTaskV1(v), want, name);
    t.strictSame(v, before, `${name}: input not mutated`);
  }
});

t.test('isCreateTaskResultV1', async (t) => {
  const table: Array<[string, unknown, boolean]> = [
    ['fixture', clone(TASKS_V1.createTaskResult), true],
    ['minimal nested task', { task: { taskId: 'x' } }, true],
    ['flat Task', clone(TASKS_V1.task), false],
    ['a CallToolResult', clone(V1.toolsCallResult), false],
    ['a modern flat CreateTaskResult', clone(TASKS_V2.createTaskResult), false],
    ['task without taskId', { task: { status: 'working' } }, false],
    ['numeric taskId', { task: { taskId: 5 } }, false],
    ['task null', { task: null }, false],
    ['task a string', { task: 't-9f2c' }, false],
    ['task an array', { task: [{ taskId: 'x' }] }, false],
    ['empty object', {}, false],
    ['undefined', undefined, false],
    ['null', null, false],
    ['string', 'task', false],
    ['array', [clone(TASKS_V1.createTaskResult)], false],
  ];
  for (const [name, v, want] of table) t.equal(isCreateTaskResultV1(v), want, name);
});

t.test('inlineResult', async (t) => {
  const rt = { [K.relatedTask]: { taskId: 'upstream-task-1' } };
  // [name, legacy payload, expected]
  const table: Array<[string, Json, Json]> = [
    ['CallToolResult fixture: related-task stripped, other _meta kept', clone(V1.toolsCallResult) as Json, {
      content: [{ type: 'text', text: 'done' }],
      isError: false,
      resultType: 'complete',
      _meta: { 'com.example/trace': 'abc' },
    }],
    ['isError kept, emptied _meta dropped', clone(TASKS_V1.payloadIsError) as Json, { content: [{ type: 'text', text: 'quota exceeded' }], isError: true, resultType: 'complete' }],
    ['no _meta', { content: [] }, { content: [], resultType: 'complete' }],
    ['empty _meta dropped', { content: [], _meta: {} }, { content: [], resultType: 'complete' }],
    ['_meta without related-task kept as is', { content: [], _meta: { progressToken: 1 } }, { content: [], resultType: 'complete', _meta: { progressToken: 1 } }],
    ['several other keys kept', { content: [], _meta: { ...rt, a: 1, b: { c: 2 } } }, { content: [], resultType: 'complete', _meta: { a: 1, b: { c: 2 } } }],
    ['resultType overwritten', { content: [], resultType: 'task' }, { content: [], resultType: 'complete' }],
    ['structuredContent and unknown keys kept', { content: [], structuredContent: { n: 1 }, 'x-vendor': true }, { content: [], structuredContent: { n: 1 }, 'x-vendor': true, resultType: 'complete' }],
    ['empty payload', {}, { resultType: 'complete' }],
  ];
  for (const [name, legacy, want] of table) {
    t.test(name, async (t) => {
      const before = clone(legacy);
      const got = inlineResult(legacy);
      t.strictSame(got, want);
      t.notOk(K.relatedTask in ((got._meta as Json | undefined) ?? {}), 'no related-task _meta');
      t.strictSame(legacy, before, 'input (and its _meta) not mutated');
    });
  }
});

t.test('outcomeFromPayload', async (t) => {
  t.strictSame(outcomeFromPayload({ result: clone(TASKS_V1.payloadIsError) as Json }), {
    status: 'completed',
    result: { content: [{ type: 'text', text: 'quota exceeded' }], isError: true, resultType: 'complete' },
  }, 'isError result → completed (not failed), inlined');
  t.strictSame(outcomeFromPayload({ result: clone(V1.toolsCallResult) as Json }), {
    status: 'completed',
    result: inlineResult(clone(V1.toolsCallResult) as Json),
  }, 'success result → completed, inlined like inlineResult');
  t.strictSame(outcomeFromPayload({ result: {} }), { status: 'completed', result: { resultType: 'complete' } }, 'empty result');

  const errors: Array<[string, JsonRpcErrorObject]> = [
    ['fixture error with data', clone(TASKS_V1.payloadError) as JsonRpcErrorObject],
    ['error without data', { code: -32601, message: 'Method not found' }],
    ['application error code', { code: 42, message: 'nope', data: null }],
  ];
  for (const [name, error] of errors) {
    const before = clone(error);
    t.strictSame(outcomeFromPayload({ error }), { status: 'failed', error: before }, `JSON-RPC error → failed: ${name}`);
    t.strictSame(error, before, `${name}: not mutated`);
  }
});

t.test('relatedTaskMeta / relatedTaskOf', async (t) => {
  t.strictSame(relatedTaskMeta('upstream-task-1'), { [K.relatedTask]: { taskId: 'upstream-task-1' } }, 'S1 shape');
  t.strictSame(relatedTaskMeta('upstream-task-1'), { [K.relatedTask]: V1.elicitForm.params._meta[K.relatedTask] }, 'same as the related-task entry of the wire fixture');

  for (const id of ['upstream-task-1', 't-9f2c', '', 'with/slash and space', 'ünïcødé-✓']) {
    t.equal(relatedTaskOf({ _meta: relatedTaskMeta(id) }), id, `round trip ${JSON.stringify(id)}`);
    t.equal(relatedTaskOf({ taskId: 'other', _meta: { ...relatedTaskMeta(id), progressToken: 3 } }), id, `round trip among other keys ${JSON.stringify(id)}`);
  }
  t.equal(relatedTaskOf(clone(V1.elicitForm.params)), 'upstream-task-1', 'legacy elicitation fixture');
  t.equal(relatedTaskOf(clone(V1.toolsCallResult)), 'upstream-task-1', 'a result carrying it');

  const rejects: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['null', null],
    ['string', 'upstream-task-1'],
    ['array', [{ _meta: relatedTaskMeta('x') }]],
    ['no _meta', { taskId: 'x' }],
    ['_meta null', { _meta: null }],
    ['_meta array', { _meta: [relatedTaskMeta('x')] }],
    ['_meta string', { _meta: 'x' }],
    ['_meta without related-task', { _meta: { progressToken: 1 } }],
    ['wrong key', { _meta: { 'related-task': { taskId: 'x' } } }],
    ['related-task a string', { _meta: { [K.relatedTask]: 'x' } }],
    ['related-task an array', { _meta: { [K.relatedTask]: [{ taskId: 'x' }] } }],
    ['related-task without taskId', { _meta: { [K.relatedTask]: {} } }],
    ['numeric taskId', { _meta: { [K.relatedTask]: { taskId: 5 } } }],
    ['related-task at the top level', { [K.relatedTask]: { taskId: 'x' } }],
    ['elicitation without it', clone(V1.elicitUrl.params)],
  ];
  for (const [name, v] of rejects) t.equal(relatedTaskOf(v), undefined, `rejects ${name}`);
});

t.test('toolTaskSupport', async (t) => {
  const entries = (m: Map<string, TaskSupport>) => [...m.entries()];
  t.strictSame(entries(toolTaskSupport(clone(V1.toolsListResult))), [
    ['slow', 'optional'],
    ['fast', 'forbidden'],
    ['must', 'required'],
  ], 'fixture: optional / absent → forbidden / required');

  // [name, tools, expected entries]
  const table: Array<[string, unknown[], Array<[string, TaskSupport]>]> = [
    ['optional', [{ name: 'a', execution: { taskSupport: 'optional' } }], [['a', 'optional']]],
    ['required', [{ name: 'a', execution: { taskSupport: 'required' } }], [['a', 'required']]],
    ['forbidden', [{ name: 'a', execution: { taskSupport: 'forbidden' } }], [['a', 'forbidden']]],
    ['execution absent', [{ name: 'a' }], [['a', 'forbidden']]],
    ['execution {}', [{ name: 'a', execution: {} }], [['a', 'forbidden']]],
    ['unknown taskSupport value', [{ name: 'a', execution: { taskSupport: 'sometimes' } }], [['a', 'forbidden']]],
    ['wrong case', [{ name: 'a', execution: { taskSupport: 'Optional' } }], [['a', 'forbidden']]],
    ['taskSupport not a string', [{ name: 'a', execution: { taskSupport: true } }], [['a', 'forbidden']]],
    ['execution a string', [{ name: 'a', execution: 'optional' }], [['a', 'forbidden']]],
    ['execution an array', [{ name: 'a', execution: [{ taskSupport: 'optional' }] }], [['a', 'forbidden']]],
    ['taskSupport at the top level is not read', [{ name: 'a', taskSupport: 'required' }], [['a', 'forbidden']]],
    ['junk entries skipped', [null, 'odd', 5, [], {}, { description: 'no name' }, { name: 7, execution: { taskSupport: 'required' } }, { name: 'ok', execution: { taskSupport: 'required' } }], [['ok', 'required']]],
    ['duplicate names: last wins', [{ name: 'a', execution: { taskSupport: 'required' } }, { name: 'a' }], [['a', 'forbidden']]],
    ['empty list', [], []],
  ];
  for (const [name, tools, want] of table) t.strictSame(entries(toolTaskSupport({ tools })), want, name);

  const nonLists: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['null', null],
    ['string', 'tools'],
    ['array of tools', [{ name: 'a', execution: { taskSupport: 'optional' } }]],
    ['empty object', {}],
    ['tools a string', { tools: 'a' }],
    ['tools an object', { tools: { a: { execution: { taskSupport: 'optional' } } } }],
    ['tools null', { tools: null }],
  ];
  for (const [name, v] of nonLists) {
    const got = toolTaskSupport(v);
    t.ok(got instanceof Map, `${name}: a Map`);
    t.equal(got.size, 0, `${name}: empty`);
  }
});
