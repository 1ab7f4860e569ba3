/**
 * translate/legacy-tasks: the 2025-11-25 core tasks' wire shapes: capability, tool task support, the flat Task, the nested
 * CreateTaskResult, the tasks/result payload with related-task `_meta`, status notifications; built from a record and
 * read with the ext-tasks `core/v1` schemas, loosely (translation.md §1.1–1.11).
 */
import t from 'tap';
import {
  CancelTaskResultV1Schema as LegacyCancelTaskResultSchema,
  CreateTaskResultV1Schema as LegacyCreateTaskResultSchema,
  GetTaskResultV1Schema as LegacyGetTaskResultSchema,
  hasTaskToolCallCapabilityV1 as hasLegacyTaskToolCallCapability,
  ListTasksResultV1Schema as LegacyListTasksResultSchema,
  TaskStatusNotificationV1Schema as LegacyTaskStatusNotificationSchema,
  TaskV1Schema as LegacyTaskSchema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  legacyCreateTaskResult,
  isLegacyCreateTaskResult,
  legacySupportsToolTasks,
  legacyTasksCapability,
  readLegacyCreateTaskResult,
  readLegacyTaskMetadata,
  readLegacyTask,
  relatedTaskMeta,
  relatedTaskOf,
  legacyTaskInputParams,
  legacyTaskPayload,
  taskSnapshotFromLegacy,
  legacyTaskStatusNotification,
  legacyTask,
  toolTaskSupport,
  withLegacyTaskSupport,
  type TaskSupport,
} from '../../src/translate/legacy-tasks.js';
import type { TaskRecord, TaskSnapshot } from '../../src/translate/tasks.js';
import { clone, K, LEGACY_TASKS, MODERN_TASKS, LEGACY_WIRE, type Json } from '../fixtures/translate-wire.js';
import { callResult, kitchenSink, record, rpcError, STATUSES } from '../helpers/task-records.js';
import { LEGACY_TASK_WIRE, wire } from '../helpers/task-wire-fixtures.js';

t.test('relatedTaskMeta / relatedTaskOf', async (t) => {
  t.strictSame(relatedTaskMeta('upstream-task-1'), { [K.relatedTask]: { taskId: 'upstream-task-1' } }, 'S1 shape');
  t.strictSame(
    relatedTaskMeta('upstream-task-1'),
    { [K.relatedTask]: LEGACY_WIRE.elicitForm.params._meta[K.relatedTask] },
    'same as the related-task entry of the wire fixture',
  );

  for (const id of ['upstream-task-1', 't-9f2c', '', 'with/slash and space', 'ünïcødé-✓']) {
    t.equal(relatedTaskOf({ _meta: relatedTaskMeta(id) }), id, `round trip ${JSON.stringify(id)}`);
    t.equal(relatedTaskOf({ taskId: 'other', _meta: { ...relatedTaskMeta(id), progressToken: 3 } }), id, `round trip among other keys ${JSON.stringify(id)}`);
  }
  t.equal(relatedTaskOf(clone(LEGACY_WIRE.elicitForm.params)), 'upstream-task-1', 'legacy elicitation fixture');
  t.equal(relatedTaskOf(clone(LEGACY_WIRE.toolsCallResult)), 'upstream-task-1', 'a result carrying it');

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
    ['elicitation without it', clone(LEGACY_WIRE.elicitUrl.params)],
  ];
  for (const [name, v] of rejects) t.equal(relatedTaskOf(v), undefined, `rejects ${name}`);
});

t.test('toolTaskSupport', async (t) => {
  const entries = (m: Map<string, TaskSupport>) => [...m.entries()];
  t.strictSame(
    entries(toolTaskSupport(clone(LEGACY_WIRE.toolsListResult))),
    [
      ['slow', 'optional'],
      ['fast', 'forbidden'],
      ['must', 'required'],
    ],
    'fixture: optional / absent → forbidden / required',
  );

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
    [
      'junk entries skipped',
      [
        null,
        'odd',
        5,
        [],
        {},
        { description: 'no name' },
        { name: 7, execution: { taskSupport: 'required' } },
        { name: 'ok', execution: { taskSupport: 'required' } },
      ],
      [['ok', 'required']],
    ],
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

t.test('readLegacyTask', async (t) => {
  const flat = ['working', 'inputRequired', 'completed', 'failed', 'cancelled', 'unlimited', 'withExtras'] as const;
  for (const k of flat) t.strictSame(readLegacyTask(wire(LEGACY_TASK_WIRE[k])), LEGACY_TASK_WIRE[k], `fixture ${k} read whole (unknown keys kept)`);
  t.strictSame(readLegacyTask(wire(LEGACY_TASK_WIRE.createTaskResult)), LEGACY_TASK_WIRE.createTaskResult.task, 'the nested task of a CreateTaskResult');
  t.strictSame(
    readLegacyTask(wire(LEGACY_TASK_WIRE.statusNotification.params)),
    LEGACY_TASK_WIRE.statusNotification.params,
    'notifications/tasks/status params',
  );
  t.strictSame(readLegacyTask(clone(LEGACY_TASKS.task)), LEGACY_TASKS.task, 'the shared translate fixture');
  for (const status of STATUSES) t.equal(readLegacyTask({ ...wire(LEGACY_TASK_WIRE.working), status })?.status, status, `status ${status}`);

  t.test('relaxed: no ttl, no timestamps (the published schema requires them)', async (t) => {
    const bare = { taskId: 'm', status: 'working' };
    t.notOk(LegacyTaskSchema.safeParse(bare).success, 'ext-tasks rejects it');
    t.strictSame(readLegacyTask(bare), bare, 'read here');
    t.strictSame(readLegacyTask({ task: bare }), bare, 'nested too');
    t.ok(isLegacyCreateTaskResult({ task: bare }), 'a CreateTaskResult');
    const snap = taskSnapshotFromLegacy(bare as never);
    t.strictSame(snap, { taskId: 'm', status: 'working', ttlMs: null }, 'snapshot: unlimited, no timestamps');
  });

  t.test('relaxed: fractional ttl and pollInterval (TypeScript SDK 1.x types them as numbers)', async (t) => {
    const fractional = { ...wire(LEGACY_TASK_WIRE.working), ttl: 1500.5, pollInterval: 250.4 };
    t.notOk(LegacyTaskSchema.safeParse(fractional).success, 'ext-tasks rejects it');
    t.strictSame(readLegacyTask(fractional), fractional, 'read here, raw');
  });

  const base = wire(LEGACY_TASK_WIRE.working);
  const rejects: Array<[string, unknown]> = [
    ['undefined', undefined],
    ['null', null],
    ['string', 'up-1'],
    ['array', [base]],
    ['a tool result', clone(LEGACY_WIRE.toolsCallResult)],
    ['bad status', { ...base, status: 'done' }],
    ['status in the wrong case', { ...base, status: 'Working' }],
    ['taskId missing', (({ taskId: _i, ...rest }) => rest)(base)],
    ['taskId a number', { ...base, taskId: 7 }],
    ['ttl a string', { ...base, ttl: '5' }],
    ['ttl Infinity', { ...base, ttl: Infinity }],
    ['lastUpdatedAt null', { ...base, lastUpdatedAt: null }],
    ['statusMessage a number', { ...base, statusMessage: 5 }],
    ['pollInterval a string', { ...base, pollInterval: '2000' }],
    ['nested task invalid', { task: { ...base, status: 'nope' } }],
  ];
  for (const [name, v] of rejects) {
    const before = clone(v);
    t.equal(readLegacyTask(v), undefined, `rejects ${name}`);
    t.strictSame(v, before, `${name}: input not mutated`);
  }
});

t.test('readLegacyCreateTaskResult / isLegacyCreateTaskResult', async (t) => {
  t.strictSame(readLegacyCreateTaskResult(wire(LEGACY_TASK_WIRE.createTaskResult)), LEGACY_TASK_WIRE.createTaskResult, 'fixture whole, _meta kept');
  t.strictSame(readLegacyCreateTaskResult(clone(LEGACY_TASKS.createTaskResult)), LEGACY_TASKS.createTaskResult, 'shared translate fixture');
  const extra = { ...wire(LEGACY_TASK_WIRE.createTaskResult), 'com.example/x': true };
  t.equal(readLegacyCreateTaskResult(extra)?.['com.example/x'], true, 'unknown top-level key kept');
  t.ok(isLegacyCreateTaskResult(wire(LEGACY_TASK_WIRE.createTaskResult)), 'is one');

  const rejects: Array<[string, unknown]> = [
    ['flat Task', wire(LEGACY_TASK_WIRE.working)],
    ['a CallToolResult', clone(LEGACY_WIRE.toolsCallResult)],
    ['a modern flat CreateTaskResult', clone(MODERN_TASKS.createTaskResult)],
    ['task without taskId', { task: { status: 'working' } }],
    ['task null', { task: null }],
    ['task a string', { task: 'up-1' }],
    ['task an array', { task: [wire(LEGACY_TASK_WIRE.working)] }],
    ['_meta not an object', { ...wire(LEGACY_TASK_WIRE.createTaskResult), _meta: 'x' }],
    ['empty object', {}],
    ['undefined', undefined],
    ['null', null],
  ];
  for (const [name, v] of rejects) {
    t.equal(readLegacyCreateTaskResult(v), undefined, `reader rejects ${name}`);
    t.equal(isLegacyCreateTaskResult(v), false, `not one: ${name}`);
  }
});

t.test('taskSnapshotFromLegacy', async (t) => {
  const common = { taskId: 'up-1', createdAt: '2026-01-05T10:00:00Z', lastUpdatedAt: '2026-01-05T10:00:07Z', ttlMs: 120_000, pollIntervalMs: 2000 };
  const { pollIntervalMs: _dropped, ...unpolled } = common;
  const table: Array<[string, Json, Json | undefined, TaskSnapshot]> = [
    [
      'working: ttl → ttlMs, pollInterval → pollIntervalMs',
      wire(LEGACY_TASK_WIRE.working),
      undefined,
      { ...common, status: 'working', statusMessage: 'step 2/5' },
    ],
    [
      'failed stays failed (only tasks/result tells which kind)',
      wire(LEGACY_TASK_WIRE.failed),
      undefined,
      { ...common, status: 'failed', statusMessage: 'quota exceeded' },
    ],
    ['cancelled', wire(LEGACY_TASK_WIRE.cancelled), undefined, { ...common, status: 'cancelled' }],
    [
      'ttl null → ttlMs null, no poll interval',
      wire(LEGACY_TASK_WIRE.unlimited),
      undefined,
      { taskId: 'up-2', status: 'working', createdAt: common.createdAt, lastUpdatedAt: common.createdAt, ttlMs: null },
    ],
    [
      'CreateTaskResult _meta → meta',
      wire(LEGACY_TASK_WIRE.createTaskResult.task),
      wire(LEGACY_TASK_WIRE.createTaskResult._meta),
      {
        ...common,
        lastUpdatedAt: common.createdAt,
        status: 'working',
        meta: wire(LEGACY_TASK_WIRE.createTaskResult._meta),
      },
    ],
    ['empty _meta not kept', wire(LEGACY_TASK_WIRE.cancelled), {}, { ...common, status: 'cancelled' }],
    [
      'ttl 0 → 1, pollInterval 0 dropped',
      { ...wire(LEGACY_TASK_WIRE.cancelled), ttl: 0, pollInterval: 0 },
      undefined,
      { ...unpolled, ttlMs: 1, status: 'cancelled' },
    ],
    ['ttl negative → 1', { ...wire(LEGACY_TASK_WIRE.cancelled), ttl: -3 }, undefined, { ...common, ttlMs: 1, status: 'cancelled' }],
    [
      'ttl fractional rounded, pollInterval too',
      { ...wire(LEGACY_TASK_WIRE.cancelled), ttl: 1500.5, pollInterval: 99.5 },
      undefined,
      { ...common, ttlMs: 1501, pollIntervalMs: 100, status: 'cancelled' },
    ],
    [
      'unknown keys not carried into the snapshot',
      wire(LEGACY_TASK_WIRE.withExtras),
      undefined,
      { taskId: 'up-3', status: 'working', createdAt: common.createdAt, lastUpdatedAt: common.createdAt, ttlMs: 60_000 },
    ],
  ];
  for (const [name, w, meta, want] of table) {
    const read = readLegacyTask(w);
    if (!read) {
      t.fail(`${name}: not read`);
      continue;
    }
    t.strictSame(taskSnapshotFromLegacy(read, meta), JSON.parse(JSON.stringify(want)), name);
  }
});

t.test('legacySupportsToolTasks', async (t) => {
  const table: Array<[string, Json, boolean]> = [
    ['full fixture', clone(LEGACY_WIRE.initializeResult.capabilities) as Json, true],
    ['task wire fixture', wire(LEGACY_TASK_WIRE.serverCapabilities), true],
    ['minimal', { tasks: { requests: { tools: { call: {} } } } }, true],
    ['call with settings', { tasks: { requests: { tools: { call: { 'com.example/x': 1 } } } } }, true],
    ['no tasks', { tools: {} }, false],
    ['tasks without requests', { tasks: { list: {}, cancel: {} } }, false],
    ['requests without tools', { tasks: { requests: { sampling: { createMessage: {} } } } }, false],
    ['tools without call', { tasks: { requests: { tools: {} } } }, false],
    ['call true instead of object', { tasks: { requests: { tools: { call: true } } } }, false],
    ['call null', { tasks: { requests: { tools: { call: null } } } }, false],
    ['tasks array', { tasks: [] }, false],
    ['tasks null', { tasks: null }, false],
    ['the modern extension only', { extensions: { [K.tasksExtension]: {} } }, false],
  ];
  for (const [name, caps, want] of table) {
    t.equal(legacySupportsToolTasks(caps), want, name);
  }
  t.equal(hasLegacyTaskToolCallCapability(legacyTasksCapability()), true, "the gateway's own capability says tools/call (ext-tasks)");
});

t.test('legacyTasksCapability', async (t) => {
  t.strictSame(legacyTasksCapability(), { list: {}, cancel: {}, requests: { tools: { call: {} } } }, 'list, cancel and task-augmented tools/call');
  t.ok(legacySupportsToolTasks({ tasks: legacyTasksCapability() }), 'reads back as supporting tool tasks');
  t.not(legacyTasksCapability(), legacyTasksCapability(), 'a fresh object each time (callers may add to it)');
});

t.test('legacyTask: the flat legacy Task of a record', async (t) => {
  const base = { taskId: 'gw_Q2x9', createdAt: '2026-08-01T09:00:00Z', lastUpdatedAt: '2026-08-01T09:00:00Z', ttl: 600_000 };
  // [name, record, expected]
  const table: Array<[string, TaskRecord, Json]> = [
    ['working: ttlMs → ttl', record(), { ...base, status: 'working' }],
    [
      'pollIntervalMs → pollInterval, statusMessage kept',
      record({ pollIntervalMs: 1500, statusMessage: 'step 2' }),
      { ...base, status: 'working', pollInterval: 1500, statusMessage: 'step 2' },
    ],
    ['ttlMs null → ttl null', record({ ttlMs: null }), { ...base, ttl: null, status: 'working' }],
    [
      'input_required kept (legacy has the status; the requests go as server→client requests)',
      record({ status: 'input_required' }),
      { ...base, status: 'input_required' },
    ],
    ['completed, no payload', record({ status: 'completed', result: callResult }), { ...base, status: 'completed' }],
    [
      'completed + isError → failed',
      record({ status: 'completed', result: { resultType: 'complete', content: [], isError: true } }),
      { ...base, status: 'failed' },
    ],
    ['failed, no error', record({ status: 'failed', error: rpcError }), { ...base, status: 'failed' }],
    [
      'cancelled (tasks/cancel answers this)',
      record({ status: 'cancelled', statusMessage: 'by client' }),
      { ...base, status: 'cancelled', statusMessage: 'by client' },
    ],
  ];
  for (const [name, r, want] of table) {
    const before = clone(r);
    const got = legacyTask(r);
    t.strictSame(got, want, name);
    t.ok(LegacyGetTaskResultSchema.safeParse(got).success, `${name}: a valid tasks/get result (ext-tasks)`);
    t.ok(LegacyCancelTaskResultSchema.safeParse(got).success, `${name}: a valid tasks/cancel result shape (ext-tasks)`);
    t.strictSame(r, before, `${name}: record not mutated`);
  }
  for (const status of STATUSES) {
    const got = legacyTask(kitchenSink(status));
    t.strictSame(Object.keys(got).sort(), ['createdAt', 'lastUpdatedAt', 'status', 'taskId', 'ttl'], `${status}: only Task fields, no payload or modern names`);
  }
  const list = { tasks: STATUSES.map((status) => legacyTask(record({ status }))), nextCursor: 'c1' };
  t.ok(LegacyListTasksResultSchema.safeParse(list).success, 'a tasks/list page of them is valid (ext-tasks)');
});

t.test('legacyCreateTaskResult: the nested CreateTaskResult', async (t) => {
  const meta = { 'io.modelcontextprotocol/model-immediate-response': 'Started.' };
  for (const status of STATUSES) {
    const r = kitchenSink(status);
    const got = legacyCreateTaskResult(r, meta);
    t.equal((got.task as Json).status, 'working', `${status}: a legacy task starts working`);
    t.strictSame(got._meta, meta, `${status}: _meta passed through`);
    t.ok(LegacyCreateTaskResultSchema.safeParse(got).success, `${status}: valid (ext-tasks)`);
    t.strictSame(readLegacyCreateTaskResult(got), got, `${status}: reads back`);
  }
  t.strictSame(
    legacyCreateTaskResult(record({ pollIntervalMs: 2000 })),
    {
      task: {
        taskId: 'gw_Q2x9',
        status: 'working',
        createdAt: '2026-08-01T09:00:00Z',
        lastUpdatedAt: '2026-08-01T09:00:00Z',
        ttl: 600_000,
        pollInterval: 2000,
      },
    },
    'no _meta key without meta',
  );
  t.notOk('_meta' in legacyCreateTaskResult(record(), {}), 'an empty _meta is left out');
});

t.test('legacyTaskStatusNotification', async (t) => {
  for (const status of STATUSES) {
    const r = kitchenSink(status);
    const n = legacyTaskStatusNotification(r);
    t.strictSame(n, { jsonrpc: '2.0', method: 'notifications/tasks/status', params: legacyTask(r) }, `${status}: the flat Task`);
    t.ok(LegacyTaskStatusNotificationSchema.safeParse(n).success, `${status}: valid (ext-tasks)`);
    t.equal(relatedTaskOf(n.params), undefined, `${status}: no related-task _meta`);
  }
  t.equal(
    legacyTaskStatusNotification(record({ status: 'completed', result: { resultType: 'complete', content: [], isError: true } })).params.status,
    'failed',
    'a tool error is announced failed',
  );
});

t.test('legacyTaskPayload: what tasks/result answers', async (t) => {
  const ok = legacyTaskPayload(
    record({ status: 'completed', result: { resultType: 'complete', content: [{ type: 'text', text: 'done' }], _meta: { 'com.example/trace': 'abc' } } }),
  );
  t.strictSame(
    ok,
    { result: { content: [{ type: 'text', text: 'done' }], _meta: { 'com.example/trace': 'abc', [K.relatedTask]: { taskId: 'gw_Q2x9' } } } },
    'completed: the result without resultType, related-task _meta added, other _meta kept',
  );
  const isError = legacyTaskPayload(record({ status: 'completed', result: { resultType: 'complete', content: [], isError: true } }));
  t.strictSame(isError, { result: { content: [], isError: true, _meta: relatedTaskMeta('gw_Q2x9') } }, 'a tool error is a result, not an error');
  const fromModern = legacyTaskPayload(
    record({
      status: 'completed',
      result: { resultType: 'complete', content: [], _meta: { [K.serverInfo]: { name: 'up', version: '1' }, 'com.example/trace': 'abc' } },
    }),
  );
  t.strictSame(
    fromModern,
    { result: { content: [], _meta: { 'com.example/trace': 'abc', [K.relatedTask]: { taskId: 'gw_Q2x9' } } } },
    'completed: the serverInfo _meta key removed, as from a synchronous call',
  );
  const needsExt = { code: -32021, message: 'needs tasks', data: { requiredCapabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } } };
  t.match(legacyTaskPayload(record({ status: 'failed', error: needsExt })), { error: { code: -32601 } }, "failed: the error mapped as a synchronous call's is");
  t.strictSame(
    legacyTaskPayload(record({ status: 'completed' })),
    { result: { content: [], _meta: relatedTaskMeta('gw_Q2x9') } },
    'completed without a stored result: an empty tool result',
  );
  t.strictSame(legacyTaskPayload(record({ status: 'failed', error: rpcError })), { error: rpcError }, 'failed: the JSON-RPC error exactly');
  t.strictSame(legacyTaskPayload(record({ status: 'failed' })), { error: { code: -32603, message: 'Task failed' } }, 'failed without an error: -32603');
  t.strictSame(
    legacyTaskPayload(record({ status: 'failed', statusMessage: 'gone' })),
    { error: { code: -32603, message: 'gone' } },
    'failed without an error: the status message',
  );
  t.strictSame(legacyTaskPayload(record({ status: 'cancelled' })), { error: { code: -32603, message: 'Task cancelled' } }, 'cancelled: an error saying so');
  t.strictSame(
    legacyTaskPayload(record({ status: 'cancelled', statusMessage: 'by user' })),
    { error: { code: -32603, message: 'Task cancelled: by user' } },
    'cancelled: with the reason',
  );
  const r = record({ status: 'completed', result: clone(callResult) });
  const before = clone(r);
  const p = legacyTaskPayload(r);
  t.equal('result' in p && relatedTaskOf(p.result), 'gw_Q2x9', 'names the task the client knows');
  t.strictSame(r, before, 'record not mutated');
});

t.test('withLegacyTaskSupport: tools/list with execution.taskSupport', async (t) => {
  const list: Json = {
    tools: [
      { name: 'render', inputSchema: { type: 'object' } },
      { name: 'export', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional', 'com.example/x': 1 } },
      { name: 'ping', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } },
      { name: 'echo', inputSchema: { type: 'object' } },
      'junk',
      { description: 'no name' },
    ],
    nextCursor: 'p2',
  };
  const support: Record<string, TaskSupport | undefined> = { render: 'optional', export: 'required', ping: 'forbidden', echo: undefined };
  const before = clone(list);
  const got = withLegacyTaskSupport(list, (name) => support[name]);
  t.strictSame(
    got,
    {
      tools: [
        { name: 'render', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } },
        { name: 'export', inputSchema: { type: 'object' }, execution: { taskSupport: 'required', 'com.example/x': 1 } },
        { name: 'ping', inputSchema: { type: 'object' } },
        { name: 'echo', inputSchema: { type: 'object' } },
        'junk',
        { description: 'no name' },
      ],
      nextCursor: 'p2',
    },
    'optional/required set, forbidden and undefined removed, other execution keys and junk kept',
  );
  t.strictSame(list, before, 'input not mutated');
  t.strictSame(
    [...toolTaskSupport(got)],
    [
      ['render', 'optional'],
      ['export', 'required'],
      ['ping', 'forbidden'],
      ['echo', 'forbidden'],
    ],
    'reads back through toolTaskSupport',
  );
  t.strictSame(
    withLegacyTaskSupport({ content: [] }, () => 'optional'),
    { content: [] },
    'not a tools/list: unchanged',
  );
});

t.test('readLegacyTaskMetadata: a task-augmented request and its ttl', async (t) => {
  // [name, params, expected]
  const table: Array<[string, unknown, { ttlMs?: number } | undefined]> = [
    ['the fixture call', wire(LEGACY_TASK_WIRE.callAsTask).params, { ttlMs: 120_000 }],
    ['task {} (the receiver picks the ttl)', { name: 'render', task: {} }, {}],
    ['ttl fractional rounded', { task: { ttl: 1500.5 } }, { ttlMs: 1501 }],
    ['ttl 0 → 1', { task: { ttl: 0 } }, { ttlMs: 1 }],
    ['ttl negative → 1', { task: { ttl: -9 } }, { ttlMs: 1 }],
    ['ttl a string: a task, ttl ignored', { task: { ttl: '5' } }, {}],
    ['ttl null: a task, ttl ignored', { task: { ttl: null } }, {}],
    ['unknown keys in task ignored', { task: { ttl: 10, 'com.example/x': 1 } }, { ttlMs: 10 }],
    ['no task', { name: 'render', arguments: {} }, undefined],
    ['task null', { task: null }, undefined],
    ['task true', { task: true }, undefined],
    ['task an array', { task: [] }, undefined],
    ['task a number', { task: 60_000 }, undefined],
    ['params undefined', undefined, undefined],
    ['params an array', [{ task: {} }], undefined],
  ];
  for (const [name, params, want] of table) t.strictSame(readLegacyTaskMetadata(params), want, name);
});

t.test("legacyTaskInputParams: a task's input request as a legacy server→client request", async (t) => {
  const form = { method: 'elicitation/create', params: { mode: 'form', message: 'Which region?', requestedSchema: { type: 'object' } } };
  t.strictSame(
    legacyTaskInputParams('gw_1', form, 'el-1'),
    { ...form.params, _meta: relatedTaskMeta('gw_1') },
    'form: related-task _meta added, no elicitationId',
  );
  const url = { method: 'elicitation/create', params: { mode: 'url', message: 'Sign in', url: 'https://auth.example/' } };
  t.strictSame(
    legacyTaskInputParams('gw_1', url, 'el-1'),
    { ...url.params, elicitationId: 'el-1', _meta: relatedTaskMeta('gw_1') },
    'url: the minted elicitationId too',
  );
  t.strictSame(legacyTaskInputParams('gw_1', { method: 'roots/list' }, 'el-1'), { _meta: relatedTaskMeta('gw_1') }, 'no params: only the _meta');
  const withMeta = {
    method: 'sampling/createMessage',
    params: { messages: [], maxTokens: 5, _meta: { 'com.example/x': 1, [K.relatedTask]: { taskId: 'upstream-id' } } },
  };
  const before = clone(withMeta);
  t.strictSame(
    legacyTaskInputParams('gw_1', withMeta, 'el-1')._meta,
    { 'com.example/x': 1, ...relatedTaskMeta('gw_1') },
    'other _meta kept; the related task is the one the client knows',
  );
  t.strictSame(withMeta, before, 'request not mutated');
  t.equal(relatedTaskOf(legacyTaskInputParams('t', form, 'e')), 't', 'reads back with relatedTaskOf');
});
