/**
 * translate/tasks-v2: the 2026-07-28 tasks extension's wire shapes: the capability, the flat CreateTaskResult and the
 * DetailedTask, built from a record and read with the ext-tasks v2 schemas, loosely (translation.md §2.1–2.8,
 * §2.12).
 */
import t from 'tap';
import {
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  hasTaskClientCapabilityV2,
  TaskStatusNotificationV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import {
  createTaskResultV2,
  declaresTasks,
  detailedTaskV2,
  readCreateTaskResultV2,
  readDetailedTaskV2,
  TASKS_REQUIRED_CAPABILITIES,
  taskSnapshotFromV2,
  taskStatusNotificationV2,
} from '../../src/translate/tasks-v2.js';
import type { TaskRecord, TaskSnapshot } from '../../src/translate/tasks.js';
import { clone, K, TASKS_V2, V1, type Json } from '../fixtures/translate-wire.js';
import { callResult, confirm, fieldsV2, kitchenSink, record, roots, rpcError, STATUSES } from '../helpers/task-records.js';
import { TASK_WIRE_V2, wire } from '../helpers/task-wire-fixtures.js';

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
    ['working, bare', record(), { resultType: 'task', ...fieldsV2('working') }],
    ['input_required announced as working', record({ status: 'input_required', inputRequests: { confirm } }), { resultType: 'task', ...fieldsV2('working') }],
    ['input_required without requests announced as working', record({ status: 'input_required' }), { resultType: 'task', ...fieldsV2('working') }],
    ['completed (no result inlined)', record({ status: 'completed', result: callResult }), { resultType: 'task', ...fieldsV2('completed') }],
    ['failed (no error inlined)', record({ status: 'failed', error: rpcError }), { resultType: 'task', ...fieldsV2('failed') }],
    ['cancelled', record({ status: 'cancelled' }), { resultType: 'task', ...fieldsV2('cancelled') }],
    ['statusMessage when set', record({ statusMessage: 'Rendering' }), { resultType: 'task', ...fieldsV2('working', { statusMessage: 'Rendering' }) }],
    ['empty statusMessage is still set', record({ statusMessage: '' }), { resultType: 'task', ...fieldsV2('working', { statusMessage: '' }) }],
    ['pollIntervalMs when set', record({ pollIntervalMs: 250 }), { resultType: 'task', ...fieldsV2('working', { pollIntervalMs: 250 }) }],
    ['ttlMs null kept', record({ ttlMs: null }), { resultType: 'task', ...fieldsV2('working', { ttlMs: null }) }],
    ['kitchen-sink record: outcome fields and stray keys dropped', kitchenSink('working'), { resultType: 'task', ...fieldsV2('working') }],
    ['kitchen-sink input_required record', kitchenSink('input_required'), { resultType: 'task', ...fieldsV2('working') }],
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
    ['working', record(), { resultType: 'complete', ...fieldsV2('working') }],
    [
      'working with statusMessage and pollIntervalMs',
      record({ statusMessage: 'step 2/5', pollIntervalMs: 1500 }),
      { resultType: 'complete', ...fieldsV2('working', { statusMessage: 'step 2/5', pollIntervalMs: 1500 }) },
    ],
    ['input_required, inputRequests absent → working', record({ status: 'input_required' }), { resultType: 'complete', ...fieldsV2('working') }],
    ['input_required, inputRequests {} → working', record({ status: 'input_required', inputRequests: {} }), { resultType: 'complete', ...fieldsV2('working') }],
    [
      'input_required with one request',
      record({ status: 'input_required', inputRequests: { confirm } }),
      { resultType: 'complete', ...fieldsV2('input_required', { inputRequests: { confirm } }) },
    ],
    [
      'input_required with several requests',
      record({ status: 'input_required', statusMessage: 'need input', inputRequests: { confirm, roots } }),
      {
        resultType: 'complete',
        ...fieldsV2('input_required', { statusMessage: 'need input', inputRequests: { confirm, roots } }),
      },
    ],
    [
      'completed without a stored result → an empty tool result (the variant requires one)',
      record({ status: 'completed' }),
      { resultType: 'complete', ...fieldsV2('completed', { result: { resultType: 'complete', content: [] } }) },
    ],
    ['completed + result', record({ status: 'completed', result: callResult }), { resultType: 'complete', ...fieldsV2('completed', { result: callResult }) }],
    [
      'completed with an isError result stays completed',
      record({ status: 'completed', result: { resultType: 'complete', content: [], isError: true } }),
      {
        resultType: 'complete',
        ...fieldsV2('completed', { result: { resultType: 'complete', content: [], isError: true } }),
      },
    ],
    ['failed + error', record({ status: 'failed', error: rpcError }), { resultType: 'complete', ...fieldsV2('failed', { error: rpcError }) }],
    [
      'failed + error, statusMessage kept',
      record({ status: 'failed', statusMessage: 'boom', error: rpcError }),
      { resultType: 'complete', ...fieldsV2('failed', { statusMessage: 'boom', error: rpcError }) },
    ],
    [
      'failed without error → default -32603 "Task failed"',
      record({ status: 'failed' }),
      { resultType: 'complete', ...fieldsV2('failed', { error: noStatus }) },
    ],
    [
      'failed without error → default carries statusMessage',
      record({ status: 'failed', statusMessage: 'Upstream gone' }),
      {
        resultType: 'complete',
        ...fieldsV2('failed', { statusMessage: 'Upstream gone', error: { code: -32603, message: 'Upstream gone' } }),
      },
    ],
    ['cancelled plain', record({ status: 'cancelled' }), { resultType: 'complete', ...fieldsV2('cancelled') }],
    ['ttlMs null kept', record({ ttlMs: null }), { resultType: 'complete', ...fieldsV2('working', { ttlMs: null }) }],
    // Outcome fields only for their own status; stray keys never.
    ['kitchen sink: working', kitchenSink('working'), { resultType: 'complete', ...fieldsV2('working') }],
    ['kitchen sink: input_required', kitchenSink('input_required'), { resultType: 'complete', ...fieldsV2('input_required', { inputRequests: { confirm } }) }],
    ['kitchen sink: completed', kitchenSink('completed'), { resultType: 'complete', ...fieldsV2('completed', { result: callResult }) }],
    ['kitchen sink: failed', kitchenSink('failed'), { resultType: 'complete', ...fieldsV2('failed', { error: rpcError }) }],
    ['kitchen sink: cancelled', kitchenSink('cancelled'), { resultType: 'complete', ...fieldsV2('cancelled') }],
  ];
  for (const [name, r, want] of table) {
    t.test(name, async (t) => {
      const before = clone(r);
      const got = detailedTaskV2(r);
      t.strictSame(got, want);
      t.equal(got.resultType, 'complete', 'always resultType "complete"');
      t.ok('ttlMs' in got, 'ttlMs key always present');
      for (const k of ['requestState', 'task', 'ttl', 'pollInterval', 'principal', 'upstream', 'kind', 'tool', 'version', 'upstreamTaskId'])
        t.notOk(k in got, `no ${k}`);
      if (got.status === 'input_required') t.ok(Object.keys(got.inputRequests as Json).length > 0, 'input_required always has a non-empty inputRequests');
      t.strictSame(r, before, 'record not mutated');
    });
  }
});

t.test('createTaskResultV2 passes _meta through', async (t) => {
  const meta = { 'io.modelcontextprotocol/model-immediate-response': 'Started.', 'com.example/trace': 'abc' };
  const got = createTaskResultV2(record(), meta);
  t.strictSame(got, { resultType: 'task', ...fieldsV2('working'), _meta: meta });
  t.ok(CreateTaskResultV2Schema.safeParse(got).success, 'valid (ext-tasks)');
  t.notOk('_meta' in createTaskResultV2(record(), {}), 'an empty _meta is left out');
  t.notOk('_meta' in createTaskResultV2(record()), 'no _meta without meta');
});

t.test('declaresTasks agrees with ext-tasks, except for settings (relaxed here)', async (t) => {
  const envelope = (caps: Json) => ({ _meta: { [K.clientCapabilities]: caps } });
  const agree: Array<[string, Json]> = [
    ['{} settings', { extensions: { [K.tasksExtension]: {} } }],
    ['fixture', clone(TASK_WIRE_V2.declaring) as Json],
    ['absent', { elicitation: {} }],
    ['null settings', { extensions: { [K.tasksExtension]: null } }],
    ['array settings', { extensions: { [K.tasksExtension]: [] } }],
  ];
  for (const [name, caps] of agree) t.equal(declaresTasks(caps), hasTaskClientCapabilityV2(envelope(caps)), `same answer: ${name}`);
  // ext-tasks wants `{}` exactly (a strictObject); a peer with settings of a later revision still supports it.
  const settings = { extensions: { [K.tasksExtension]: { foo: 1 } } };
  t.notOk(hasTaskClientCapabilityV2(envelope(settings)), 'ext-tasks: {foo:1} does not declare');
  t.ok(declaresTasks(settings), 'here: {foo:1} declares');
});

t.test('createTaskResultV2 / detailedTaskV2 / taskStatusNotificationV2 output is what ext-tasks accepts', async (t) => {
  for (const status of STATUSES) {
    for (const [name, r] of [
      ['plain', record({ status })],
      ['kitchen sink', kitchenSink(status)],
      ['with message and poll', record({ status, statusMessage: 'm', pollIntervalMs: 5 })],
    ] as Array<[string, TaskRecord]>) {
      t.ok(CreateTaskResultV2Schema.safeParse(createTaskResultV2(r)).success, `CreateTaskResult: ${status} ${name}`);
      t.ok(GetTaskResultV2Schema.safeParse(detailedTaskV2(r)).success, `GetTaskResult: ${status} ${name}`);
      t.ok(TaskStatusNotificationV2Schema.safeParse(taskStatusNotificationV2(r)).success, `notifications/tasks: ${status} ${name}`);
    }
  }
});

t.test('taskStatusNotificationV2: the DetailedTask of tasks/get without resultType', async (t) => {
  for (const status of STATUSES) {
    const r = kitchenSink(status);
    const n = taskStatusNotificationV2(r);
    t.equal(n.method, 'notifications/tasks');
    t.equal(n.jsonrpc, '2.0');
    const { resultType, ...rest } = detailedTaskV2(r);
    t.equal(resultType, 'complete');
    t.strictSame(n.params, rest, `${status}: same fields as tasks/get`);
    t.notOk('resultType' in n.params, `${status}: no resultType on a notification`);
  }
  t.strictSame(
    taskStatusNotificationV2(record({ status: 'completed', result: callResult })).params,
    fieldsV2('completed', { result: callResult }),
    'result inlined',
  );
});

t.test('readCreateTaskResultV2', async (t) => {
  t.test('the fixture, _meta and unknown keys passed through', async (t) => {
    const got = readCreateTaskResultV2(wire(TASK_WIRE_V2.createTaskResult));
    t.strictSame(got, TASK_WIRE_V2.createTaskResult);
    const extra = readCreateTaskResultV2({ ...wire(TASK_WIRE_V2.createTaskResult), 'com.example/shard': 7 });
    t.equal(extra?.['com.example/shard'], 7, 'unknown top-level key kept');
  });
  t.test('what the gateway itself builds reads back', async (t) => {
    const r = record({ pollIntervalMs: 1500, statusMessage: 'queued' });
    t.strictSame(readCreateTaskResultV2(createTaskResultV2(r)), createTaskResultV2(r));
    t.strictSame(readCreateTaskResultV2(clone(TASKS_V2.createTaskResult)), TASKS_V2.createTaskResult);
  });
  t.test('relaxed: no ttlMs, no timestamps (ext-tasks requires them)', async (t) => {
    const bare = { resultType: 'task', taskId: 'up-9', status: 'working' };
    t.notOk(CreateTaskResultV2Schema.safeParse(bare).success, 'ext-tasks rejects it');
    const got = readCreateTaskResultV2(bare);
    t.strictSame(got, bare, 'read here');
    t.strictSame(got && taskSnapshotFromV2(got), { taskId: 'up-9', status: 'working', ttlMs: null }, 'snapshot: unlimited, no timestamps');
  });
  t.test('relaxed: fractional ttlMs and pollIntervalMs (ext-tasks wants integers)', async (t) => {
    const fractional = { ...wire(TASK_WIRE_V2.createTaskResult), ttlMs: 1500.5, pollIntervalMs: 250.4 };
    t.notOk(CreateTaskResultV2Schema.safeParse(fractional).success, 'ext-tasks rejects it');
    const got = readCreateTaskResultV2(fractional);
    t.ok(got, 'read here');
    t.equal(got && taskSnapshotFromV2(got).ttlMs, 1501, 'normalised by the snapshot');
    t.equal(got && taskSnapshotFromV2(got).pollIntervalMs, 250);
  });
  const base = wire(TASK_WIRE_V2.createTaskResult);
  const rejects: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['null', null],
    ['array', [base]],
    ['a legacy nested CreateTaskResult', clone(V1.toolsCallResult)],
    ['resultType complete (a DetailedTask)', { ...base, resultType: 'complete' }],
    ['resultType missing', (({ resultType: _r, ...rest }) => rest)(base)],
    ['taskId missing', (({ taskId: _i, ...rest }) => rest)(base)],
    ['taskId a number', { ...base, taskId: 5 }],
    ['status unknown', { ...base, status: 'done' }],
    ['ttlMs a string', { ...base, ttlMs: '5' }],
    ['ttlMs Infinity', { ...base, ttlMs: Infinity }],
    ['createdAt a number', { ...base, createdAt: 5 }],
    ['pollIntervalMs null', { ...base, pollIntervalMs: null }],
    ['_meta not an object', { ...base, _meta: 'x' }],
  ];
  for (const [name, v] of rejects) t.equal(readCreateTaskResultV2(v), undefined, `rejects ${name}`);
});

t.test('readDetailedTaskV2', async (t) => {
  const variants = ['working', 'inputRequired', 'completed', 'completedToolError', 'failed', 'cancelled', 'unlimited', 'withExtras'] as const;
  for (const v of variants) t.strictSame(readDetailedTaskV2(wire(TASK_WIRE_V2[v])), TASK_WIRE_V2[v], `fixture ${v} read whole`);
  t.strictSame(
    readDetailedTaskV2(wire(TASK_WIRE_V2.statusNotification.params)),
    TASK_WIRE_V2.statusNotification.params,
    'notifications/tasks params (no resultType, _meta kept)',
  );
  const failedExtra = { ...wire(TASK_WIRE_V2.failed), error: { ...rpcError, 'com.example/x': 1 } };
  t.strictSame(readDetailedTaskV2(failedExtra)?.error, { ...rpcError, 'com.example/x': 1 }, 'unknown keys of the error kept');
  for (const status of STATUSES) {
    const r = kitchenSink(status);
    t.strictSame(readDetailedTaskV2(detailedTaskV2(r)), detailedTaskV2(r), `the gateway's own ${status} reads back`);
  }

  const base = wire(TASK_WIRE_V2.working);
  const rejects: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['a CreateTaskResult (resultType task)', wire(TASK_WIRE_V2.createTaskResult)],
    ['resultType input_required', { ...base, resultType: 'input_required' }],
    ['input_required without inputRequests', (({ inputRequests: _i, ...rest }) => rest)(wire(TASK_WIRE_V2.inputRequired))],
    [
      'input_required with a malformed sampling request (no maxTokens)',
      { ...wire(TASK_WIRE_V2.inputRequired), inputRequests: { k: { method: 'sampling/createMessage', params: { messages: [] } } } },
    ],
    ['input_required with an unknown input method', { ...wire(TASK_WIRE_V2.inputRequired), inputRequests: { k: { method: 'tools/call', params: {} } } }],
    ['completed without result', (({ result: _r, ...rest }) => rest)(wire(TASK_WIRE_V2.completed))],
    ['completed with a non-object result', { ...wire(TASK_WIRE_V2.completed), result: 'done' }],
    ['failed without error', (({ error: _e, ...rest }) => rest)(wire(TASK_WIRE_V2.failed))],
    ['failed with an error lacking a code', { ...wire(TASK_WIRE_V2.failed), error: { message: 'x' } }],
    ['failed with a fractional error code', { ...wire(TASK_WIRE_V2.failed), error: { code: 1.5, message: 'x' } }],
    ['status unknown', { ...base, status: 'done' }],
    ['legacy Task (ttl, no ttlMs)', clone(V1.notifications.taskStatus)],
    ['lastUpdatedAt a number', { ...base, lastUpdatedAt: 5 }],
  ];
  for (const [name, v] of rejects) t.equal(readDetailedTaskV2(v), undefined, `rejects ${name}`);
});

t.test('taskSnapshotFromV2', async (t) => {
  const common = { taskId: 'up-1', createdAt: '2026-01-05T10:00:00Z', lastUpdatedAt: '2026-01-05T10:00:07Z', ttlMs: 120_000, pollIntervalMs: 2000 };
  // [name, wire, expected snapshot]
  const table: Array<[string, unknown, TaskSnapshot]> = [
    [
      'CreateTaskResult: _meta → meta',
      TASK_WIRE_V2.createTaskResult,
      { ...common, lastUpdatedAt: common.createdAt, status: 'working', meta: clone(TASK_WIRE_V2.createTaskResult._meta) },
    ],
    ['working', TASK_WIRE_V2.working, { ...common, status: 'working', statusMessage: 'step 2/5' }],
    [
      'input_required: the requests',
      TASK_WIRE_V2.inputRequired,
      { ...common, status: 'input_required', inputRequests: clone(TASK_WIRE_V2.inputRequired.inputRequests) as TaskSnapshot['inputRequests'] },
    ],
    ['completed: the result', TASK_WIRE_V2.completed, { ...common, status: 'completed', result: clone(TASK_WIRE_V2.completed.result) }],
    [
      'completed tool error stays completed',
      TASK_WIRE_V2.completedToolError,
      { ...common, status: 'completed', statusMessage: 'quota exceeded', result: clone(TASK_WIRE_V2.completedToolError.result) },
    ],
    ['failed: the error', TASK_WIRE_V2.failed, { ...common, status: 'failed', statusMessage: 'quota exceeded', error: clone(TASK_WIRE_V2.failed.error) }],
    ['cancelled', TASK_WIRE_V2.cancelled, { ...common, status: 'cancelled' }],
    [
      'ttlMs null kept, no poll interval',
      TASK_WIRE_V2.unlimited,
      { taskId: 'up-2', status: 'working', createdAt: common.createdAt, lastUpdatedAt: common.createdAt, ttlMs: null },
    ],
    [
      'notification params: _meta → meta',
      TASK_WIRE_V2.statusNotification.params,
      {
        ...common,
        status: 'completed',
        result: clone(TASK_WIRE_V2.statusNotification.params.result),
        meta: clone(TASK_WIRE_V2.statusNotification.params._meta),
      },
    ],
    [
      'a result without resultType gets "complete"',
      { ...wire(TASK_WIRE_V2.completed), result: { content: [] } },
      { ...common, status: 'completed', result: { resultType: 'complete', content: [] } },
    ],
    [
      'ttlMs 0 → 1, pollIntervalMs 0 dropped',
      { ...wire(TASK_WIRE_V2.cancelled), ttlMs: 0, pollIntervalMs: 0 },
      { ...common, ttlMs: 1, pollIntervalMs: undefined, status: 'cancelled' } as TaskSnapshot,
    ],
    ['ttlMs negative → 1', { ...wire(TASK_WIRE_V2.cancelled), ttlMs: -5 }, { ...common, ttlMs: 1, status: 'cancelled' }],
  ];
  for (const [name, w, want] of table) {
    const read = readDetailedTaskV2(clone(w)) ?? readCreateTaskResultV2(clone(w));
    if (!read) {
      t.fail(`${name}: not read`);
      continue;
    }
    const expected = JSON.parse(JSON.stringify(want)) as TaskSnapshot;
    t.strictSame(taskSnapshotFromV2(read), expected, name);
  }
  t.notOk(
    'result' in taskSnapshotFromV2(readCreateTaskResultV2({ ...wire(TASK_WIRE_V2.createTaskResult), status: 'completed', result: {} })!),
    'a CreateTaskResult carries no outcome, even when a server adds one',
  );
});
