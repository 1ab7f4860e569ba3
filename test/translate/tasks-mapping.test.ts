/**
 * V1 ⇄ V2 task mappings end to end, in both directions, the way the gateway composes them: an upstream's wire shape
 * is read with its era's reader, becomes a snapshot and then a record (as the task runtime stores it), and the record
 * is written in the client's era. Fixtures of both eras are valid for ext-tasks (task-wire.test.ts), and so
 * is every output here (translation.md §4.3–4.10).
 */
import t from 'tap';
import {
  CancelTaskResultV1Schema,
  CreateTaskResultV1Schema,
  GetTaskResultV1Schema,
  TaskStatusNotificationV1Schema,
  ToolV1Schema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  InputRequestV2Schema,
  InputResponseV2Schema,
  TaskStatusNotificationV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import type { JsonObject } from '../../src/translate/jsonrpc.js';
import { modernCapabilities } from '../../src/translate/results.js';
import { toInputRequest } from '../../src/translate/input.js';
import { inlineResult, outcomeFromPayload, withoutRelatedTask, type TaskId, type TaskRecord, type TaskSnapshot } from '../../src/translate/tasks.js';
import {
  createTaskResultV1,
  legacySupportsToolTasks,
  legacyTasksCapability,
  readCreateTaskResultV1,
  readTaskV1,
  relatedTaskOf,
  taskInputParamsV1,
  taskPayloadV1,
  taskSnapshotFromV1,
  taskStatusNotificationV1,
  taskV1,
  toolTaskSupport,
  withTaskSupportV1,
} from '../../src/translate/tasks-v1.js';
import {
  createTaskResultV2,
  declaresTasks,
  detailedTaskV2,
  readCreateTaskResultV2,
  readDetailedTaskV2,
  taskSnapshotFromV2,
  taskStatusNotificationV2,
} from '../../src/translate/tasks-v2.js';
import { IMMEDIATE, RELATED_TASK, TASK_WIRE_V1, TASK_WIRE_V2, wire } from '../helpers/task-wire-fixtures.js';

const GW = 'gw_7Yk' as TaskId;

/** A record as the task runtime makes one from an upstream snapshot (gateway id, the upstream's id kept). */
function recordOf(s: TaskSnapshot, over: Partial<TaskRecord> = {}): TaskRecord {
  const r: TaskRecord = {
    taskId: GW,
    principal: 'p',
    upstream: 'u',
    kind: 'proxied',
    upstreamTaskId: s.taskId,
    tool: 'render',
    status: s.status,
    createdAt: s.createdAt ?? 'never',
    lastUpdatedAt: s.lastUpdatedAt ?? 'never',
    ttlMs: s.ttlMs,
    version: 0,
  };
  if (s.statusMessage !== undefined) r.statusMessage = s.statusMessage;
  if (s.pollIntervalMs !== undefined) r.pollIntervalMs = s.pollIntervalMs;
  if (s.result) r.result = s.result;
  if (s.error) r.error = s.error;
  if (s.inputRequests) r.inputRequests = s.inputRequests;
  return { ...r, ...over };
}
function fromV1(task: unknown, meta?: JsonObject): TaskSnapshot {
  const read = readTaskV1(task);
  if (!read) throw new Error('fixture not read');
  return taskSnapshotFromV1(read, meta);
}
function fromV2(task: unknown): TaskSnapshot {
  const read = readDetailedTaskV2(task) ?? readCreateTaskResultV2(task);
  if (!read) throw new Error('fixture not read');
  return taskSnapshotFromV2(read);
}
/** The id-independent fields of a wire task. */
function sameTask(x: JsonObject): JsonObject {
  const { taskId: _id, resultType: _rt, _meta: _m, ...rest } = x;
  return rest;
}

t.test('CreateTaskResult nested (V1) → flat (V2), _meta passed through', async (t) => {
  const created = readCreateTaskResultV1(wire(TASK_WIRE_V1.createTaskResult));
  if (!created) return t.fail('not read');
  const snap = taskSnapshotFromV1(created.task, created._meta);
  const out = createTaskResultV2(recordOf(snap), snap.meta);
  t.ok(CreateTaskResultV2Schema.safeParse(out).success, 'valid V2');
  t.strictSame(sameTask(out), sameTask(wire(TASK_WIRE_V2.createTaskResult)), 'same task as the V2 fixture (ttl → ttlMs, pollInterval → pollIntervalMs)');
  t.equal(out.taskId, GW, 'under the gateway id');
  t.strictSame(out._meta, TASK_WIRE_V1.createTaskResult._meta, `_meta (${IMMEDIATE} and vendor keys) passed through`);
  t.notOk('task' in out, 'flat');
});

t.test('CreateTaskResult flat (V2) → nested (V1), _meta passed through', async (t) => {
  const created = readCreateTaskResultV2(wire(TASK_WIRE_V2.createTaskResult));
  if (!created) return t.fail('not read');
  const snap = taskSnapshotFromV2(created);
  const out = createTaskResultV1(recordOf(snap), snap.meta);
  t.ok(CreateTaskResultV1Schema.safeParse(out).success, 'valid V1');
  t.strictSame(
    sameTask(out.task as JsonObject),
    sameTask(wire(TASK_WIRE_V1.createTaskResult.task)),
    'same task as the V1 fixture (ttlMs → ttl, pollIntervalMs → pollInterval)',
  );
  t.strictSame(out._meta, TASK_WIRE_V2.createTaskResult._meta, '_meta passed through');
  t.notOk('resultType' in out, 'no resultType on a legacy result');
  const asked = createTaskResultV1(recordOf(fromV2({ ...wire(TASK_WIRE_V2.createTaskResult), status: 'input_required' })));
  t.equal((asked.task as JsonObject).status, 'working', 'a legacy task starts working even when the modern one asks at once');
});

t.test('Task fields V1 → V2 (tasks/get) for every status the legacy Task can say by itself', async (t) => {
  for (const k of ['working', 'cancelled', 'unlimited', 'withExtras'] as const) {
    const out = detailedTaskV2(recordOf(fromV1(wire(TASK_WIRE_V1[k]))));
    t.ok(GetTaskResultV2Schema.safeParse(out).success, `${k}: valid V2`);
    const { 'com.example/shard': _shard, ...want } = sameTask(wire(TASK_WIRE_V2[k]));
    t.strictSame(sameTask(out), want, `${k}: same as the V2 fixture, unknown upstream keys not forwarded`);
  }
});

t.test('Task fields V2 → V1 (tasks/get, no payload)', async (t) => {
  for (const k of ['working', 'cancelled', 'unlimited', 'completed', 'failed'] as const) {
    const out = taskV1(recordOf(fromV2(wire(TASK_WIRE_V2[k]))));
    t.ok(GetTaskResultV1Schema.safeParse(out).success, `${k}: valid V1`);
    t.strictSame(sameTask(out), sameTask(wire(TASK_WIRE_V1[k])), `${k}: same as the V1 fixture`);
    for (const key of ['result', 'error', 'inputRequests', 'ttlMs', 'pollIntervalMs', 'resultType']) t.notOk(key in out, `${k}: no ${key}`);
  }
  const asking = taskV1(recordOf(fromV2(wire(TASK_WIRE_V2.inputRequired))));
  t.equal(asking.status, 'input_required', 'input_required kept, its requests not in the Task');
});

t.test('ttl ⇄ ttlMs and pollInterval ⇄ pollIntervalMs, odd values', async (t) => {
  // [name, legacy ttl, modern ttlMs]
  const ttls: Array<[string, number | null, number | null]> = [
    ['null (unlimited) both ways', null, null],
    ['integer', 120_000, 120_000],
    ['0 → 1 (ttlMs must be positive or null)', 0, 1],
    ['negative → 1', -50, 1],
    ['fractional rounded', 1500.5, 1501],
  ];
  for (const [name, ttl, ttlMs] of ttls) {
    const up = fromV1({ ...wire(TASK_WIRE_V1.working), ttl });
    t.equal(up.ttlMs, ttlMs, `V1 → V2: ${name}`);
    t.equal(detailedTaskV2(recordOf(up)).ttlMs, ttlMs, `V1 → V2 on the wire: ${name}`);
    const down = fromV2({ ...wire(TASK_WIRE_V2.working), ttlMs: ttl });
    t.equal(taskV1(recordOf(down)).ttl, ttlMs, `V2 → V1: ${name}`);
    t.ok(GetTaskResultV1Schema.safeParse(taskV1(recordOf(down))).success, `V2 → V1 valid: ${name}`);
  }
  // [name, wire value, gateway value (undefined: left out)]
  const polls: Array<[string, number, number | undefined]> = [
    ['integer', 2000, 2000],
    ['0 dropped', 0, undefined],
    ['negative dropped', -1, undefined],
    ['fraction rounded', 250.5, 251],
    ['under half rounds to 0: dropped', 0.4, undefined],
  ];
  for (const [name, v, want] of polls) {
    t.equal(detailedTaskV2(recordOf(fromV1({ ...wire(TASK_WIRE_V1.working), pollInterval: v }))).pollIntervalMs, want, `V1 → V2: ${name}`);
    t.equal(taskV1(recordOf(fromV2({ ...wire(TASK_WIRE_V2.working), pollIntervalMs: v }))).pollInterval, want, `V2 → V1: ${name}`);
  }
});

t.test('status: legacy failed → modern completed (tool error) or failed (JSON-RPC error), by the payload', async (t) => {
  const toolError = outcomeFromPayload({ result: wire(TASK_WIRE_V1.payloadToolError) });
  t.equal(toolError.status, 'completed', 'a tool error completes');
  const asToolError = detailedTaskV2(recordOf(fromV1(wire(TASK_WIRE_V1.failed)), toolError));
  t.ok(GetTaskResultV2Schema.safeParse(asToolError).success, 'valid V2');
  t.strictSame(sameTask(asToolError), sameTask(wire(TASK_WIRE_V2.completedToolError)), 'the V2 tool-error fixture');
  const rpc = outcomeFromPayload({ error: wire(TASK_WIRE_V1.payloadError) as never });
  const asFailed = detailedTaskV2(recordOf(fromV1(wire(TASK_WIRE_V1.failed)), rpc));
  t.strictSame(sameTask(asFailed), sameTask(wire(TASK_WIRE_V2.failed)), 'the V2 failed fixture (error exactly)');
});

t.test('status: modern completed + isError → legacy failed; modern failed → legacy failed', async (t) => {
  const r = recordOf(fromV2(wire(TASK_WIRE_V2.completedToolError)));
  t.equal(r.status, 'completed', 'stored as the modern status');
  t.equal(taskV1(r).status, 'failed', 'tasks/get says failed');
  t.equal(taskStatusNotificationV1(r).params.status, 'failed', 'the status notification too');
  t.equal(taskV1(recordOf(fromV2(wire(TASK_WIRE_V2.completed)))).status, 'completed', 'a successful result stays completed');
  t.equal(taskV1(recordOf(fromV2(wire(TASK_WIRE_V2.failed)))).status, 'failed', 'a JSON-RPC failure stays failed');
});

t.test('tasks/result payload (V1) → inlined result (V2) and back, with related-task meta', async (t) => {
  const outcome = outcomeFromPayload({ result: wire(TASK_WIRE_V1.payloadResult) });
  const inlined = detailedTaskV2(recordOf(fromV1(wire(TASK_WIRE_V1.completed)), outcome));
  t.ok(GetTaskResultV2Schema.safeParse(inlined).success, 'valid V2');
  t.strictSame(inlined.result, TASK_WIRE_V2.completed.result, "the V2 fixture's inlined result: resultType added, related-task _meta gone, vendor _meta kept");
  t.strictSame(inlineResult(wire(TASK_WIRE_V1.payloadResult)), TASK_WIRE_V2.completed.result, 'inlineResult alone does it');

  const payload = taskPayloadV1(recordOf(fromV2(wire(TASK_WIRE_V2.completed))));
  if (!('result' in payload)) return t.fail('a result');
  t.strictSame(
    payload.result,
    { ...wire(TASK_WIRE_V1.payloadResult), _meta: { 'com.example/trace': 'abc', [RELATED_TASK]: { taskId: GW } } },
    'V2 → V1: resultType gone, related-task _meta names the gateway id',
  );
  t.equal(relatedTaskOf(payload.result), GW);
  t.strictSame(taskPayloadV1(recordOf(fromV2(wire(TASK_WIRE_V2.failed)))), { error: TASK_WIRE_V2.failed.error }, 'V2 failed → the same JSON-RPC error');
  const toolErr = taskPayloadV1(recordOf(fromV2(wire(TASK_WIRE_V2.completedToolError))));
  t.ok('result' in toolErr && toolErr.result.isError === true, 'V2 tool error → a result with isError (the legacy Task says failed)');
});

t.test('tasks/cancel: V1 answers the cancelled Task; V2 acknowledges only', async (t) => {
  const cancelled = recordOf(fromV2(wire(TASK_WIRE_V2.working)), { status: 'cancelled', lastUpdatedAt: '2026-01-05T10:00:09Z' });
  const v1 = taskV1(cancelled);
  t.ok(CancelTaskResultV1Schema.safeParse(v1).success, 'V1: a valid CancelTaskResult');
  t.equal(v1.status, 'cancelled');
  t.equal(
    taskV1({ ...cancelled, result: { resultType: 'complete', content: [], isError: true } }).status,
    'cancelled',
    'stays cancelled whatever arrives later',
  );
  t.strictSame(
    sameTask(v1),
    { ...sameTask(wire(TASK_WIRE_V1.cancelled)), statusMessage: 'step 2/5', lastUpdatedAt: '2026-01-05T10:00:09Z' },
    'the V1 cancelled fixture, statusMessage carried',
  );
  t.strictSame(readTaskV1(wire(TASK_WIRE_V1.cancelled))?.status, 'cancelled', 'an upstream V1 cancel result reads as cancelled');
  t.ok(GetTaskResultV2Schema.safeParse(detailedTaskV2(cancelled)).success, 'V2: tasks/get then reports the cancelled task');
  t.equal(detailedTaskV2(cancelled).status, 'cancelled');
  t.ok('error' in taskPayloadV1(cancelled), 'V1 tasks/result of a cancelled task is an error');
});

t.test('status notification: notifications/tasks/status (V1) ⇄ notifications/tasks (V2)', async (t) => {
  const up = fromV1(wire(TASK_WIRE_V1.statusNotification.params));
  const outcome = outcomeFromPayload({ result: { ...wire(TASK_WIRE_V1.payloadResult), _meta: { [RELATED_TASK]: { taskId: 'up-1' } } } });
  const v2 = taskStatusNotificationV2(recordOf(up, outcome));
  t.ok(TaskStatusNotificationV2Schema.safeParse(v2).success, 'V1 → V2 valid');
  t.strictSame(
    sameTask(v2.params),
    sameTask(wire(TASK_WIRE_V2.statusNotification.params)),
    "V1 → V2: the V2 fixture (subscription _meta is the listen stream's to add)",
  );
  const down = readDetailedTaskV2(wire(TASK_WIRE_V2.statusNotification.params));
  if (!down) return t.fail('not read');
  const v1 = taskStatusNotificationV1(recordOf(taskSnapshotFromV2(down)));
  t.ok(TaskStatusNotificationV1Schema.safeParse(v1).success, 'V2 → V1 valid');
  t.strictSame(sameTask(v1.params), sameTask(wire(TASK_WIRE_V1.statusNotification.params)), 'V2 → V1: the V1 fixture, no payload');
});

t.test('tools/list taskSupport and capabilities', async (t) => {
  const support = toolTaskSupport(wire(TASK_WIRE_V1.toolsList));
  t.strictSame(
    [...support],
    [
      ['render', 'optional'],
      ['export', 'required'],
      ['ping', 'forbidden'],
      ['echo', 'forbidden'],
    ],
    'V1 tools/list read',
  );
  // V2 → V1: a modern upstream's tools (no execution) offered to a legacy client, task support as the route decides.
  const modernList = {
    tools: [
      { name: 'render', inputSchema: { type: 'object' } },
      { name: 'export', inputSchema: { type: 'object' } },
      { name: 'ping', inputSchema: { type: 'object' } },
      { name: 'echo', inputSchema: { type: 'object' } },
    ],
  };
  const legacy = withTaskSupportV1(modernList, (name) => support.get(name));
  t.strictSame(
    legacy,
    {
      tools: [
        { name: 'render', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } },
        { name: 'export', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } },
        { name: 'ping', inputSchema: { type: 'object' } },
        { name: 'echo', inputSchema: { type: 'object' } },
      ],
    },
    "each tool's execution.taskSupport, forbidden left out (absent means forbidden)",
  );
  for (const tool of legacy.tools as JsonObject[]) t.ok(ToolV1Schema.safeParse(tool).success, `${String(tool.name)}: a valid V1 tool`);
  t.ok(legacySupportsToolTasks(wire(TASK_WIRE_V1.serverCapabilities)), 'V1 capability read');
  t.ok(declaresTasks(modernCapabilities(wire(TASK_WIRE_V1.serverCapabilities), { tasksExtension: true })), 'V1 tasks capability → the V2 extension');
  t.notOk('tasks' in modernCapabilities(wire(TASK_WIRE_V1.serverCapabilities), { tasksExtension: true }), 'no legacy tasks slot in V2');
  t.ok(declaresTasks(wire(TASK_WIRE_V2.declaring)), 'V2 extension read');
  t.ok(legacySupportsToolTasks({ tasks: legacyTasksCapability() }), 'V2 extension → the V1 tasks capability the gateway advertises');
});

t.test('input exchange: task-scoped server→client request (V1) ⇄ inputRequests entry (V2), answer ⇄ input response', async (t) => {
  const legacy = wire(TASK_WIRE_V1.elicitRequest);
  const asV2 = toInputRequest(legacy.method as string, legacy.params as JsonObject);
  t.ok(InputRequestV2Schema.safeParse(asV2).success, 'V1 → V2: a valid input request');
  t.strictSame(asV2, TASK_WIRE_V2.inputRequired.inputRequests['in-1'], 'V1 → V2: the V2 fixture entry (related-task _meta gone)');
  const back = taskInputParamsV1('up-1', wire(TASK_WIRE_V2.inputRequired.inputRequests['in-1']) as never, 'el-1');
  t.strictSame(back, legacy.params, 'V2 → V1: the V1 fixture params, related-task _meta added');
  const answer = { action: 'accept', content: { region: 'eu-west-1' }, _meta: { [RELATED_TASK]: { taskId: 'up-1' } } };
  const response = withoutRelatedTask(answer);
  t.ok(InputResponseV2Schema.safeParse(response).success, "the client's answer → a valid V2 input response");
  t.strictSame(response, TASK_WIRE_V2.update.params.inputResponses['in-1'], 'the V2 tasks/update fixture value');
});
