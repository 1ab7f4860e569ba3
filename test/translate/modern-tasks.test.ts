/**
 * translate/modern-tasks: the 2026-07-28 tasks extension's wire shapes: the capability, the flat CreateTaskResult and the
 * DetailedTask, built from a record and read with the ext-tasks `core/v2` schemas, loosely (translation.md §2.1–2.8,
 * §2.12).
 */
import t from 'tap';
import {
  CreateTaskResultV2Schema as ModernCreateTaskResultSchema,
  GetTaskResultV2Schema as ModernGetTaskResultSchema,
  hasTaskClientCapabilityV2 as hasModernTaskClientCapability,
  TaskStatusNotificationV2Schema as ModernTaskStatusNotificationSchema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import {
  modernCreateTaskResult,
  declaresTasks,
  modernDetailedTask,
  readModernCreateTaskResult,
  readModernDetailedTask,
  TASKS_REQUIRED_CAPABILITIES,
  taskSnapshotFromModern,
  modernTaskStatusNotification,
} from '../../src/translate/modern-tasks.js';
import type { TaskRecord, TaskSnapshot } from '../../src/translate/tasks.js';
import { clone, K, MODERN_TASKS, LEGACY_WIRE, type Json } from '../fixtures/translate-wire.js';
import { callResult, confirm, modernFields, kitchenSink, record, roots, rpcError, STATUSES } from '../helpers/task-records.js';
import { MODERN_TASK_WIRE, wire } from '../helpers/task-wire-fixtures.js';

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
    ['legacy initialize capabilities', clone(LEGACY_WIRE.initializeResult.capabilities) as Json, false],
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

t.test('modernCreateTaskResult', async (t) => {
  t.test('fixture: flat, resultType "task"', async (t) => {
    const got = modernCreateTaskResult(record({ pollIntervalMs: 1500 }));
    t.strictSame(got, MODERN_TASKS.createTaskResult);
    t.notOk('task' in got, 'no nested task');
  });

  // [name, record, expected]
  const table: Array<[string, TaskRecord, Json]> = [
    ['working, bare', record(), { resultType: 'task', ...modernFields('working') }],
    [
      'input_required announced as working',
      record({ status: 'input_required', inputRequests: { confirm } }),
      { resultType: 'task', ...modernFields('working') },
    ],
    ['input_required without requests announced as working', record({ status: 'input_required' }), { resultType: 'task', ...modernFields('working') }],
    ['completed (no result inlined)', record({ status: 'completed', result: callResult }), { resultType: 'task', ...modernFields('completed') }],
    ['failed (no error inlined)', record({ status: 'failed', error: rpcError }), { resultType: 'task', ...modernFields('failed') }],
    ['cancelled', record({ status: 'cancelled' }), { resultType: 'task', ...modernFields('cancelled') }],
    ['statusMessage when set', record({ statusMessage: 'Rendering' }), { resultType: 'task', ...modernFields('working', { statusMessage: 'Rendering' }) }],
    ['empty statusMessage is still set', record({ statusMessage: '' }), { resultType: 'task', ...modernFields('working', { statusMessage: '' }) }],
    ['pollIntervalMs when set', record({ pollIntervalMs: 250 }), { resultType: 'task', ...modernFields('working', { pollIntervalMs: 250 }) }],
    ['ttlMs null kept', record({ ttlMs: null }), { resultType: 'task', ...modernFields('working', { ttlMs: null }) }],
    ['kitchen-sink record: outcome fields and stray keys dropped', kitchenSink('working'), { resultType: 'task', ...modernFields('working') }],
    ['kitchen-sink input_required record', kitchenSink('input_required'), { resultType: 'task', ...modernFields('working') }],
  ];
  for (const [name, r, want] of table) {
    t.test(name, async (t) => {
      const before = clone(r);
      const got = modernCreateTaskResult(r);
      t.strictSame(got, want);
      t.equal(got.resultType, 'task');
      t.ok('ttlMs' in got, 'ttlMs key always present');
      for (const k of MODERN_TASKS.createTaskResultForbiddenKeys) t.notOk(k in got, `no ${k}`);
      t.notOk('statusMessage' in got && r.statusMessage === undefined, 'statusMessage only when set');
      t.notOk('pollIntervalMs' in got && r.pollIntervalMs === undefined, 'pollIntervalMs only when set');
      t.strictSame(r, before, 'record not mutated');
    });
  }
  for (const status of STATUSES) {
    const got = modernCreateTaskResult(kitchenSink(status));
    t.strictSame(Object.keys(got).sort(), ['createdAt', 'lastUpdatedAt', 'resultType', 'status', 'taskId', 'ttlMs'], `${status}: only task fields`);
  }
});

t.test('modernDetailedTask', async (t) => {
  t.test('fixture: completed with the inlined result', async (t) => {
    const got = modernDetailedTask(
      record({ status: 'completed', lastUpdatedAt: '2026-08-01T09:03:10Z', result: clone(MODERN_TASKS.getCompleted.result) as Json }),
    );
    t.strictSame(got, MODERN_TASKS.getCompleted);
  });

  const noStatus = { code: -32603, message: 'Task failed' };
  // [name, record, expected]
  const table: Array<[string, TaskRecord, Json]> = [
    ['working', record(), { resultType: 'complete', ...modernFields('working') }],
    [
      'working with statusMessage and pollIntervalMs',
      record({ statusMessage: 'step 2/5', pollIntervalMs: 1500 }),
      { resultType: 'complete', ...modernFields('working', { statusMessage: 'step 2/5', pollIntervalMs: 1500 }) },
    ],
    ['input_required, inputRequests absent → working', record({ status: 'input_required' }), { resultType: 'complete', ...modernFields('working') }],
    [
      'input_required, inputRequests {} → working',
      record({ status: 'input_required', inputRequests: {} }),
      { resultType: 'complete', ...modernFields('working') },
    ],
    [
      'input_required with one request',
      record({ status: 'input_required', inputRequests: { confirm } }),
      { resultType: 'complete', ...modernFields('input_required', { inputRequests: { confirm } }) },
    ],
    [
      'input_required with several requests',
      record({ status: 'input_required', statusMessage: 'need input', inputRequests: { confirm, roots } }),
      {
        resultType: 'complete',
        ...modernFields('input_required', { statusMessage: 'need input', inputRequests: { confirm, roots } }),
      },
    ],
    [
      'completed without a stored result → an empty tool result (the variant requires one)',
      record({ status: 'completed' }),
      { resultType: 'complete', ...modernFields('completed', { result: { resultType: 'complete', content: [] } }) },
    ],
    [
      'completed + result',
      record({ status: 'completed', result: callResult }),
      { resultType: 'complete', ...modernFields('completed', { result: callResult }) },
    ],
    [
      'completed with an isError result stays completed',
      record({ status: 'completed', result: { resultType: 'complete', content: [], isError: true } }),
      {
        resultType: 'complete',
        ...modernFields('completed', { result: { resultType: 'complete', content: [], isError: true } }),
      },
    ],
    ['failed + error', record({ status: 'failed', error: rpcError }), { resultType: 'complete', ...modernFields('failed', { error: rpcError }) }],
    [
      'failed + error, statusMessage kept',
      record({ status: 'failed', statusMessage: 'boom', error: rpcError }),
      { resultType: 'complete', ...modernFields('failed', { statusMessage: 'boom', error: rpcError }) },
    ],
    [
      'failed without error → default -32603 "Task failed"',
      record({ status: 'failed' }),
      { resultType: 'complete', ...modernFields('failed', { error: noStatus }) },
    ],
    [
      'failed without error → default carries statusMessage',
      record({ status: 'failed', statusMessage: 'Upstream gone' }),
      {
        resultType: 'complete',
        ...modernFields('failed', { statusMessage: 'Upstream gone', error: { code: -32603, message: 'Upstream gone' } }),
      },
    ],
    ['cancelled plain', record({ status: 'cancelled' }), { resultType: 'complete', ...modernFields('cancelled') }],
    ['ttlMs null kept', record({ ttlMs: null }), { resultType: 'complete', ...modernFields('working', { ttlMs: null }) }],
    // Outcome fields only for their own status; stray keys never.
    ['kitchen sink: working', kitchenSink('working'), { resultType: 'complete', ...modernFields('working') }],
    [
      'kitchen sink: input_required',
      kitchenSink('input_required'),
      { resultType: 'complete', ...modernFields('input_required', { inputRequests: { confirm } }) },
    ],
    ['kitchen sink: completed', kitchenSink('completed'), { resultType: 'complete', ...modernFields('completed', { result: callResult }) }],
    ['kitchen sink: failed', kitchenSink('failed'), { resultType: 'complete', ...modernFields('failed', { error: rpcError }) }],
    ['kitchen sink: cancelled', kitchenSink('cancelled'), { resultType: 'complete', ...modernFields('cancelled') }],
  ];
  for (const [name, r, want] of table) {
    t.test(name, async (t) => {
      const before = clone(r);
      const got = modernDetailedTask(r);
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

t.test('modernCreateTaskResult passes _meta through', async (t) => {
  const meta = { 'io.modelcontextprotocol/model-immediate-response': 'Started.', 'com.example/trace': 'abc' };
  const got = modernCreateTaskResult(record(), meta);
  t.strictSame(got, { resultType: 'task', ...modernFields('working'), _meta: meta });
  t.ok(ModernCreateTaskResultSchema.safeParse(got).success, 'valid (ext-tasks)');
  t.notOk('_meta' in modernCreateTaskResult(record(), {}), 'an empty _meta is left out');
  t.notOk('_meta' in modernCreateTaskResult(record()), 'no _meta without meta');
});

t.test('declaresTasks agrees with ext-tasks, except for settings (relaxed here)', async (t) => {
  const envelope = (caps: Json) => ({ _meta: { [K.clientCapabilities]: caps } });
  const agree: Array<[string, Json]> = [
    ['{} settings', { extensions: { [K.tasksExtension]: {} } }],
    ['fixture', clone(MODERN_TASK_WIRE.declaring) as Json],
    ['absent', { elicitation: {} }],
    ['null settings', { extensions: { [K.tasksExtension]: null } }],
    ['array settings', { extensions: { [K.tasksExtension]: [] } }],
  ];
  for (const [name, caps] of agree) t.equal(declaresTasks(caps), hasModernTaskClientCapability(envelope(caps)), `same answer: ${name}`);
  // ext-tasks wants `{}` exactly (a strictObject); a peer with settings of a later revision still supports it.
  const settings = { extensions: { [K.tasksExtension]: { foo: 1 } } };
  t.notOk(hasModernTaskClientCapability(envelope(settings)), 'ext-tasks: {foo:1} does not declare');
  t.ok(declaresTasks(settings), 'here: {foo:1} declares');
});

t.test('modernCreateTaskResult / modernDetailedTask / modernTaskStatusNotification output is what ext-tasks accepts', async (t) => {
  for (const status of STATUSES) {
    for (const [name, r] of [
      ['plain', record({ status })],
      ['kitchen sink', kitchenSink(status)],
      ['with message and poll', record({ status, statusMessage: 'm', pollIntervalMs: 5 })],
    ] as Array<[string, TaskRecord]>) {
      t.ok(ModernCreateTaskResultSchema.safeParse(modernCreateTaskResult(r)).success, `CreateTaskResult: ${status} ${name}`);
      t.ok(ModernGetTaskResultSchema.safeParse(modernDetailedTask(r)).success, `GetTaskResult: ${status} ${name}`);
      t.ok(ModernTaskStatusNotificationSchema.safeParse(modernTaskStatusNotification(r)).success, `notifications/tasks: ${status} ${name}`);
    }
  }
});

t.test('modernTaskStatusNotification: the DetailedTask of tasks/get without resultType', async (t) => {
  for (const status of STATUSES) {
    const r = kitchenSink(status);
    const n = modernTaskStatusNotification(r);
    t.equal(n.method, 'notifications/tasks');
    t.equal(n.jsonrpc, '2.0');
    const { resultType, ...rest } = modernDetailedTask(r);
    t.equal(resultType, 'complete');
    t.strictSame(n.params, rest, `${status}: same fields as tasks/get`);
    t.notOk('resultType' in n.params, `${status}: no resultType on a notification`);
  }
  t.strictSame(
    modernTaskStatusNotification(record({ status: 'completed', result: callResult })).params,
    modernFields('completed', { result: callResult }),
    'result inlined',
  );
});

t.test('readModernCreateTaskResult', async (t) => {
  t.test('the fixture, _meta and unknown keys passed through', async (t) => {
    const got = readModernCreateTaskResult(wire(MODERN_TASK_WIRE.createTaskResult));
    t.strictSame(got, MODERN_TASK_WIRE.createTaskResult);
    const extra = readModernCreateTaskResult({ ...wire(MODERN_TASK_WIRE.createTaskResult), 'com.example/shard': 7 });
    t.equal(extra?.['com.example/shard'], 7, 'unknown top-level key kept');
  });
  t.test('what the gateway itself builds reads back', async (t) => {
    const r = record({ pollIntervalMs: 1500, statusMessage: 'queued' });
    t.strictSame(readModernCreateTaskResult(modernCreateTaskResult(r)), modernCreateTaskResult(r));
    t.strictSame(readModernCreateTaskResult(clone(MODERN_TASKS.createTaskResult)), MODERN_TASKS.createTaskResult);
  });
  t.test('relaxed: no ttlMs, no timestamps (ext-tasks requires them)', async (t) => {
    const bare = { resultType: 'task', taskId: 'up-9', status: 'working' };
    t.notOk(ModernCreateTaskResultSchema.safeParse(bare).success, 'ext-tasks rejects it');
    const got = readModernCreateTaskResult(bare);
    t.strictSame(got, bare, 'read here');
    t.strictSame(got && taskSnapshotFromModern(got), { taskId: 'up-9', status: 'working', ttlMs: null }, 'snapshot: unlimited, no timestamps');
  });
  t.test('relaxed: fractional ttlMs and pollIntervalMs (ext-tasks wants integers)', async (t) => {
    const fractional = { ...wire(MODERN_TASK_WIRE.createTaskResult), ttlMs: 1500.5, pollIntervalMs: 250.4 };
    t.notOk(ModernCreateTaskResultSchema.safeParse(fractional).success, 'ext-tasks rejects it');
    const got = readModernCreateTaskResult(fractional);
    t.ok(got, 'read here');
    t.equal(got && taskSnapshotFromModern(got).ttlMs, 1501, 'normalised by the snapshot');
    t.equal(got && taskSnapshotFromModern(got).pollIntervalMs, 250);
  });
  const base = wire(MODERN_TASK_WIRE.createTaskResult);
  const rejects: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['null', null],
    ['array', [base]],
    ['a legacy nested CreateTaskResult', clone(LEGACY_WIRE.toolsCallResult)],
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
  for (const [name, v] of rejects) t.equal(readModernCreateTaskResult(v), undefined, `rejects ${name}`);
});

t.test('readModernDetailedTask', async (t) => {
  const variants = ['working', 'inputRequired', 'completed', 'completedToolError', 'failed', 'cancelled', 'unlimited', 'withExtras'] as const;
  for (const v of variants) t.strictSame(readModernDetailedTask(wire(MODERN_TASK_WIRE[v])), MODERN_TASK_WIRE[v], `fixture ${v} read whole`);
  t.strictSame(
    readModernDetailedTask(wire(MODERN_TASK_WIRE.statusNotification.params)),
    MODERN_TASK_WIRE.statusNotification.params,
    'notifications/tasks params (no resultType, _meta kept)',
  );
  const failedExtra = { ...wire(MODERN_TASK_WIRE.failed), error: { ...rpcError, 'com.example/x': 1 } };
  t.strictSame(readModernDetailedTask(failedExtra)?.error, { ...rpcError, 'com.example/x': 1 }, 'unknown keys of the error kept');
  for (const status of STATUSES) {
    const r = kitchenSink(status);
    t.strictSame(readModernDetailedTask(modernDetailedTask(r)), modernDetailedTask(r), `the gateway's own ${status} reads back`);
  }

  const base = wire(MODERN_TASK_WIRE.working);
  const rejects: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['a CreateTaskResult (resultType task)', wire(MODERN_TASK_WIRE.createTaskResult)],
    ['resultType input_required', { ...base, resultType: 'input_required' }],
    ['input_required without inputRequests', (({ inputRequests: _i, ...rest }) => rest)(wire(MODERN_TASK_WIRE.inputRequired))],
    [
      'input_required with a malformed sampling request (no maxTokens)',
      { ...wire(MODERN_TASK_WIRE.inputRequired), inputRequests: { k: { method: 'sampling/createMessage', params: { messages: [] } } } },
    ],
    ['input_required with an unknown input method', { ...wire(MODERN_TASK_WIRE.inputRequired), inputRequests: { k: { method: 'tools/call', params: {} } } }],
    ['completed without result', (({ result: _r, ...rest }) => rest)(wire(MODERN_TASK_WIRE.completed))],
    ['completed with a non-object result', { ...wire(MODERN_TASK_WIRE.completed), result: 'done' }],
    ['failed without error', (({ error: _e, ...rest }) => rest)(wire(MODERN_TASK_WIRE.failed))],
    ['failed with an error lacking a code', { ...wire(MODERN_TASK_WIRE.failed), error: { message: 'x' } }],
    ['failed with a fractional error code', { ...wire(MODERN_TASK_WIRE.failed), error: { code: 1.5, message: 'x' } }],
    ['status unknown', { ...base, status: 'done' }],
    ['legacy Task (ttl, no ttlMs)', clone(LEGACY_WIRE.notifications.taskStatus)],
    ['lastUpdatedAt a number', { ...base, lastUpdatedAt: 5 }],
  ];
  for (const [name, v] of rejects) t.equal(readModernDetailedTask(v), undefined, `rejects ${name}`);
});

t.test('taskSnapshotFromModern', async (t) => {
  const common = { taskId: 'up-1', createdAt: '2026-01-05T10:00:00Z', lastUpdatedAt: '2026-01-05T10:00:07Z', ttlMs: 120_000, pollIntervalMs: 2000 };
  const { pollIntervalMs: _dropped, ...unpolled } = common;
  // [name, wire, expected snapshot]
  const table: Array<[string, unknown, TaskSnapshot]> = [
    [
      'CreateTaskResult: _meta → meta',
      MODERN_TASK_WIRE.createTaskResult,
      { ...common, lastUpdatedAt: common.createdAt, status: 'working', meta: clone(MODERN_TASK_WIRE.createTaskResult._meta) },
    ],
    ['working', MODERN_TASK_WIRE.working, { ...common, status: 'working', statusMessage: 'step 2/5' }],
    [
      'input_required: the requests',
      MODERN_TASK_WIRE.inputRequired,
      { ...common, status: 'input_required', inputRequests: clone(MODERN_TASK_WIRE.inputRequired.inputRequests) as NonNullable<TaskSnapshot['inputRequests']> },
    ],
    ['completed: the result', MODERN_TASK_WIRE.completed, { ...common, status: 'completed', result: clone(MODERN_TASK_WIRE.completed.result) }],
    [
      'completed tool error stays completed',
      MODERN_TASK_WIRE.completedToolError,
      { ...common, status: 'completed', statusMessage: 'quota exceeded', result: clone(MODERN_TASK_WIRE.completedToolError.result) },
    ],
    [
      'failed: the error',
      MODERN_TASK_WIRE.failed,
      { ...common, status: 'failed', statusMessage: 'quota exceeded', error: clone(MODERN_TASK_WIRE.failed.error) },
    ],
    ['cancelled', MODERN_TASK_WIRE.cancelled, { ...common, status: 'cancelled' }],
    [
      'ttlMs null kept, no poll interval',
      MODERN_TASK_WIRE.unlimited,
      { taskId: 'up-2', status: 'working', createdAt: common.createdAt, lastUpdatedAt: common.createdAt, ttlMs: null },
    ],
    [
      'notification params: _meta → meta',
      MODERN_TASK_WIRE.statusNotification.params,
      {
        ...common,
        status: 'completed',
        result: clone(MODERN_TASK_WIRE.statusNotification.params.result),
        meta: clone(MODERN_TASK_WIRE.statusNotification.params._meta),
      },
    ],
    [
      'a result without resultType gets "complete"',
      { ...wire(MODERN_TASK_WIRE.completed), result: { content: [] } },
      { ...common, status: 'completed', result: { resultType: 'complete', content: [] } },
    ],
    [
      'ttlMs 0 → 1, pollIntervalMs 0 dropped',
      { ...wire(MODERN_TASK_WIRE.cancelled), ttlMs: 0, pollIntervalMs: 0 },
      { ...unpolled, ttlMs: 1, status: 'cancelled' },
    ],
    ['ttlMs negative → 1', { ...wire(MODERN_TASK_WIRE.cancelled), ttlMs: -5 }, { ...common, ttlMs: 1, status: 'cancelled' }],
  ];
  for (const [name, w, want] of table) {
    const read = readModernDetailedTask(clone(w)) ?? readModernCreateTaskResult(clone(w));
    if (!read) {
      t.fail(`${name}: not read`);
      continue;
    }
    const expected = JSON.parse(JSON.stringify(want)) as TaskSnapshot;
    t.strictSame(taskSnapshotFromModern(read), expected, name);
  }
  t.notOk(
    'result' in taskSnapshotFromModern(readModernCreateTaskResult({ ...wire(MODERN_TASK_WIRE.createTaskResult), status: 'completed', result: {} })!),
    'a CreateTaskResult carries no outcome, even when a server adds one',
  );
});
