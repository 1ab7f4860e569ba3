/**
 * Legacy ⇄ modern task mappings end to end, in both directions, the way the gateway composes them: an upstream's wire shape
 * is read with its era's reader, becomes a snapshot and then a record (as the task runtime stores it), and the record
 * is written in the client's era. Fixtures of both eras are valid for ext-tasks (task-wire.test.ts), and so
 * is every output here (translation.md §4.3–4.10).
 */
import t from 'tap';
import {
  CancelTaskResultV1Schema as LegacyCancelTaskResultSchema,
  CreateTaskResultV1Schema as LegacyCreateTaskResultSchema,
  GetTaskResultV1Schema as LegacyGetTaskResultSchema,
  TaskStatusNotificationV1Schema as LegacyTaskStatusNotificationSchema,
  ToolV1Schema as LegacyToolSchema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  CreateTaskResultV2Schema as ModernCreateTaskResultSchema,
  GetTaskResultV2Schema as ModernGetTaskResultSchema,
  InputRequestV2Schema as ModernInputRequestSchema,
  InputResponseV2Schema as ModernInputResponseSchema,
  TaskStatusNotificationV2Schema as ModernTaskStatusNotificationSchema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import type { JsonObject } from '../../src/translate/jsonrpc.js';
import { modernCapabilities } from '../../src/translate/results-to-modern.js';
import { toInputRequest } from '../../src/translate/input.js';
import { inlineResult, outcomeFromPayload, withoutRelatedTask, type TaskId, type TaskRecord, type TaskSnapshot } from '../../src/translate/tasks.js';
import {
  legacyCreateTaskResult,
  legacySupportsToolTasks,
  legacyTasksCapability,
  readLegacyCreateTaskResult,
  readLegacyTask,
  relatedTaskOf,
  legacyTaskInputParams,
  legacyTaskPayload,
  taskSnapshotFromLegacy,
  legacyTaskStatusNotification,
  legacyTask,
  toolTaskSupport,
  withLegacyTaskSupport,
} from '../../src/translate/legacy-tasks.js';
import {
  modernCreateTaskResult,
  declaresTasks,
  modernDetailedTask,
  readModernCreateTaskResult,
  readModernDetailedTask,
  taskSnapshotFromModern,
  modernTaskStatusNotification,
} from '../../src/translate/modern-tasks.js';
import { IMMEDIATE, RELATED_TASK, LEGACY_TASK_WIRE, MODERN_TASK_WIRE, wire } from '../helpers/task-wire-fixtures.js';

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
function fromLegacy(task: unknown, meta?: JsonObject): TaskSnapshot {
  const read = readLegacyTask(task);
  if (!read) throw new Error('fixture not read');
  return taskSnapshotFromLegacy(read, meta);
}
function fromModern(task: unknown): TaskSnapshot {
  const read = readModernDetailedTask(task) ?? readModernCreateTaskResult(task);
  if (!read) throw new Error('fixture not read');
  return taskSnapshotFromModern(read);
}
/** The id-independent fields of a wire task. */
function sameTask(x: JsonObject): JsonObject {
  const { taskId: _id, resultType: _rt, _meta: _m, ...rest } = x;
  return rest;
}

t.test('CreateTaskResult nested (legacy) → flat (modern), _meta passed through', async (t) => {
  const created = readLegacyCreateTaskResult(wire(LEGACY_TASK_WIRE.createTaskResult));
  if (!created) return t.fail('not read');
  const snap = taskSnapshotFromLegacy(created.task, created._meta);
  const out = modernCreateTaskResult(recordOf(snap), snap.meta);
  t.ok(ModernCreateTaskResultSchema.safeParse(out).success, 'valid modern');
  t.strictSame(
    sameTask(out),
    sameTask(wire(MODERN_TASK_WIRE.createTaskResult)),
    'same task as the modern fixture (ttl → ttlMs, pollInterval → pollIntervalMs)',
  );
  t.equal(out.taskId, GW, 'under the gateway id');
  t.strictSame(out._meta, LEGACY_TASK_WIRE.createTaskResult._meta, `_meta (${IMMEDIATE} and vendor keys) passed through`);
  t.notOk('task' in out, 'flat');
});

t.test('CreateTaskResult flat (modern) → nested (legacy), _meta passed through', async (t) => {
  const created = readModernCreateTaskResult(wire(MODERN_TASK_WIRE.createTaskResult));
  if (!created) return t.fail('not read');
  const snap = taskSnapshotFromModern(created);
  const out = legacyCreateTaskResult(recordOf(snap), snap.meta);
  t.ok(LegacyCreateTaskResultSchema.safeParse(out).success, 'valid legacy');
  t.strictSame(
    sameTask(out.task as JsonObject),
    sameTask(wire(LEGACY_TASK_WIRE.createTaskResult.task)),
    'same task as the legacy fixture (ttlMs → ttl, pollIntervalMs → pollInterval)',
  );
  t.strictSame(out._meta, MODERN_TASK_WIRE.createTaskResult._meta, '_meta passed through');
  t.notOk('resultType' in out, 'no resultType on a legacy result');
  const asked = legacyCreateTaskResult(recordOf(fromModern({ ...wire(MODERN_TASK_WIRE.createTaskResult), status: 'input_required' })));
  t.equal((asked.task as JsonObject).status, 'working', 'a legacy task starts working even when the modern one asks at once');
});

t.test('Task fields legacy → modern (tasks/get) for every status the legacy Task can say by itself', async (t) => {
  for (const k of ['working', 'cancelled', 'unlimited', 'withExtras'] as const) {
    const out = modernDetailedTask(recordOf(fromLegacy(wire(LEGACY_TASK_WIRE[k]))));
    t.ok(ModernGetTaskResultSchema.safeParse(out).success, `${k}: valid modern`);
    const { 'com.example/shard': _shard, ...want } = sameTask(wire(MODERN_TASK_WIRE[k]));
    t.strictSame(sameTask(out), want, `${k}: same as the modern fixture, unknown upstream keys not forwarded`);
  }
});

t.test('Task fields modern → legacy (tasks/get, no payload)', async (t) => {
  for (const k of ['working', 'cancelled', 'unlimited', 'completed', 'failed'] as const) {
    const out = legacyTask(recordOf(fromModern(wire(MODERN_TASK_WIRE[k]))));
    t.ok(LegacyGetTaskResultSchema.safeParse(out).success, `${k}: valid legacy`);
    t.strictSame(sameTask(out), sameTask(wire(LEGACY_TASK_WIRE[k])), `${k}: same as the legacy fixture`);
    for (const key of ['result', 'error', 'inputRequests', 'ttlMs', 'pollIntervalMs', 'resultType']) t.notOk(key in out, `${k}: no ${key}`);
  }
  const asking = legacyTask(recordOf(fromModern(wire(MODERN_TASK_WIRE.inputRequired))));
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
    const up = fromLegacy({ ...wire(LEGACY_TASK_WIRE.working), ttl });
    t.equal(up.ttlMs, ttlMs, `legacy → modern: ${name}`);
    t.equal(modernDetailedTask(recordOf(up)).ttlMs, ttlMs, `legacy → modern on the wire: ${name}`);
    const down = fromModern({ ...wire(MODERN_TASK_WIRE.working), ttlMs: ttl });
    t.equal(legacyTask(recordOf(down)).ttl, ttlMs, `modern → legacy: ${name}`);
    t.ok(LegacyGetTaskResultSchema.safeParse(legacyTask(recordOf(down))).success, `modern → legacy valid: ${name}`);
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
    t.equal(modernDetailedTask(recordOf(fromLegacy({ ...wire(LEGACY_TASK_WIRE.working), pollInterval: v }))).pollIntervalMs, want, `legacy → modern: ${name}`);
    t.equal(legacyTask(recordOf(fromModern({ ...wire(MODERN_TASK_WIRE.working), pollIntervalMs: v }))).pollInterval, want, `modern → legacy: ${name}`);
  }
});

t.test('status: legacy failed → modern completed (tool error) or failed (JSON-RPC error), by the payload', async (t) => {
  const toolError = outcomeFromPayload({ result: wire(LEGACY_TASK_WIRE.payloadToolError) });
  t.equal(toolError.status, 'completed', 'a tool error completes');
  const asToolError = modernDetailedTask(recordOf(fromLegacy(wire(LEGACY_TASK_WIRE.failed)), toolError));
  t.ok(ModernGetTaskResultSchema.safeParse(asToolError).success, 'valid modern');
  t.strictSame(sameTask(asToolError), sameTask(wire(MODERN_TASK_WIRE.completedToolError)), 'the modern tool-error fixture');
  const rpc = outcomeFromPayload({ error: wire(LEGACY_TASK_WIRE.payloadError) as never });
  const asFailed = modernDetailedTask(recordOf(fromLegacy(wire(LEGACY_TASK_WIRE.failed)), rpc));
  t.strictSame(sameTask(asFailed), sameTask(wire(MODERN_TASK_WIRE.failed)), 'the modern failed fixture (error exactly)');
});

t.test('status: modern completed + isError → legacy failed; modern failed → legacy failed', async (t) => {
  const r = recordOf(fromModern(wire(MODERN_TASK_WIRE.completedToolError)));
  t.equal(r.status, 'completed', 'stored as the modern status');
  t.equal(legacyTask(r).status, 'failed', 'tasks/get says failed');
  t.equal(legacyTaskStatusNotification(r).params.status, 'failed', 'the status notification too');
  t.equal(legacyTask(recordOf(fromModern(wire(MODERN_TASK_WIRE.completed)))).status, 'completed', 'a successful result stays completed');
  t.equal(legacyTask(recordOf(fromModern(wire(MODERN_TASK_WIRE.failed)))).status, 'failed', 'a JSON-RPC failure stays failed');
});

t.test('tasks/result payload (legacy) → inlined result (modern) and back, with related-task meta', async (t) => {
  const outcome = outcomeFromPayload({ result: wire(LEGACY_TASK_WIRE.payloadResult) });
  const inlined = modernDetailedTask(recordOf(fromLegacy(wire(LEGACY_TASK_WIRE.completed)), outcome));
  t.ok(ModernGetTaskResultSchema.safeParse(inlined).success, 'valid modern');
  t.strictSame(
    inlined.result,
    MODERN_TASK_WIRE.completed.result,
    "the modern fixture's inlined result: resultType added, related-task _meta gone, vendor _meta kept",
  );
  t.strictSame(inlineResult(wire(LEGACY_TASK_WIRE.payloadResult)), MODERN_TASK_WIRE.completed.result, 'inlineResult alone does it');

  const payload = legacyTaskPayload(recordOf(fromModern(wire(MODERN_TASK_WIRE.completed))));
  if (!('result' in payload)) return t.fail('a result');
  t.strictSame(
    payload.result,
    { ...wire(LEGACY_TASK_WIRE.payloadResult), _meta: { 'com.example/trace': 'abc', [RELATED_TASK]: { taskId: GW } } },
    'modern → legacy: resultType gone, related-task _meta names the gateway id',
  );
  t.equal(relatedTaskOf(payload.result), GW);
  t.strictSame(
    legacyTaskPayload(recordOf(fromModern(wire(MODERN_TASK_WIRE.failed)))),
    { error: MODERN_TASK_WIRE.failed.error },
    'modern failed → the same JSON-RPC error',
  );
  const toolErr = legacyTaskPayload(recordOf(fromModern(wire(MODERN_TASK_WIRE.completedToolError))));
  t.ok('result' in toolErr && toolErr.result.isError === true, 'modern tool error → a result with isError (the legacy Task says failed)');
});

t.test('tasks/cancel: legacy answers the cancelled Task; modern acknowledges only', async (t) => {
  const cancelled = recordOf(fromModern(wire(MODERN_TASK_WIRE.working)), { status: 'cancelled', lastUpdatedAt: '2026-01-05T10:00:09Z' });
  const legacy = legacyTask(cancelled);
  t.ok(LegacyCancelTaskResultSchema.safeParse(legacy).success, 'legacy: a valid CancelTaskResult');
  t.equal(legacy.status, 'cancelled');
  t.equal(
    legacyTask({ ...cancelled, result: { resultType: 'complete', content: [], isError: true } }).status,
    'cancelled',
    'stays cancelled whatever arrives later',
  );
  t.strictSame(
    sameTask(legacy),
    { ...sameTask(wire(LEGACY_TASK_WIRE.cancelled)), statusMessage: 'step 2/5', lastUpdatedAt: '2026-01-05T10:00:09Z' },
    'the legacy cancelled fixture, statusMessage carried',
  );
  t.strictSame(readLegacyTask(wire(LEGACY_TASK_WIRE.cancelled))?.status, 'cancelled', 'an upstream legacy cancel result reads as cancelled');
  t.ok(ModernGetTaskResultSchema.safeParse(modernDetailedTask(cancelled)).success, 'modern: tasks/get then reports the cancelled task');
  t.equal(modernDetailedTask(cancelled).status, 'cancelled');
  t.ok('error' in legacyTaskPayload(cancelled), 'legacy tasks/result of a cancelled task is an error');
});

t.test('status notification: notifications/tasks/status (legacy) ⇄ notifications/tasks (modern)', async (t) => {
  const up = fromLegacy(wire(LEGACY_TASK_WIRE.statusNotification.params));
  const outcome = outcomeFromPayload({ result: { ...wire(LEGACY_TASK_WIRE.payloadResult), _meta: { [RELATED_TASK]: { taskId: 'up-1' } } } });
  const modern = modernTaskStatusNotification(recordOf(up, outcome));
  t.ok(ModernTaskStatusNotificationSchema.safeParse(modern).success, 'legacy → modern valid');
  t.strictSame(
    sameTask(modern.params),
    sameTask(wire(MODERN_TASK_WIRE.statusNotification.params)),
    "legacy → modern: the modern fixture (subscription _meta is the listen stream's to add)",
  );
  const down = readModernDetailedTask(wire(MODERN_TASK_WIRE.statusNotification.params));
  if (!down) return t.fail('not read');
  const legacy = legacyTaskStatusNotification(recordOf(taskSnapshotFromModern(down)));
  t.ok(LegacyTaskStatusNotificationSchema.safeParse(legacy).success, 'modern → legacy valid');
  t.strictSame(sameTask(legacy.params), sameTask(wire(LEGACY_TASK_WIRE.statusNotification.params)), 'modern → legacy: the legacy fixture, no payload');
});

t.test('tools/list taskSupport and capabilities', async (t) => {
  const support = toolTaskSupport(wire(LEGACY_TASK_WIRE.toolsList));
  t.strictSame(
    [...support],
    [
      ['render', 'optional'],
      ['export', 'required'],
      ['ping', 'forbidden'],
      ['echo', 'forbidden'],
    ],
    'legacy tools/list read',
  );
  // Modern → legacy: a modern upstream's tools (no execution) offered to a legacy client, task support as the route decides.
  const modernList = {
    tools: [
      { name: 'render', inputSchema: { type: 'object' } },
      { name: 'export', inputSchema: { type: 'object' } },
      { name: 'ping', inputSchema: { type: 'object' } },
      { name: 'echo', inputSchema: { type: 'object' } },
    ],
  };
  const legacy = withLegacyTaskSupport(modernList, (name) => support.get(name));
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
  for (const tool of legacy.tools as JsonObject[]) t.ok(LegacyToolSchema.safeParse(tool).success, `${String(tool.name)}: a valid legacy tool`);
  t.ok(legacySupportsToolTasks(wire(LEGACY_TASK_WIRE.serverCapabilities)), 'legacy capability read');
  t.ok(
    declaresTasks(modernCapabilities(wire(LEGACY_TASK_WIRE.serverCapabilities), { tasksExtension: true })),
    'legacy tasks capability → the modern extension',
  );
  t.notOk('tasks' in modernCapabilities(wire(LEGACY_TASK_WIRE.serverCapabilities), { tasksExtension: true }), 'no legacy tasks slot in modern');
  t.ok(declaresTasks(wire(MODERN_TASK_WIRE.declaring)), 'modern extension read');
  t.ok(legacySupportsToolTasks({ tasks: legacyTasksCapability() }), 'modern extension → the legacy tasks capability the gateway advertises');
});

t.test('input exchange: task-scoped server→client request (legacy) ⇄ inputRequests entry (modern), answer ⇄ input response', async (t) => {
  const legacy = wire(LEGACY_TASK_WIRE.elicitRequest);
  const asModern = toInputRequest(legacy.method as string, legacy.params as JsonObject);
  t.ok(ModernInputRequestSchema.safeParse(asModern).success, 'legacy → modern: a valid input request');
  t.strictSame(asModern, MODERN_TASK_WIRE.inputRequired.inputRequests['in-1'], 'legacy → modern: the modern fixture entry (related-task _meta gone)');
  const back = legacyTaskInputParams('up-1', wire(MODERN_TASK_WIRE.inputRequired.inputRequests['in-1']) as never, 'el-1');
  t.strictSame(back, legacy.params, 'modern → legacy: the legacy fixture params, related-task _meta added');
  const answer = { action: 'accept', content: { region: 'eu-west-1' }, _meta: { [RELATED_TASK]: { taskId: 'up-1' } } };
  const response = withoutRelatedTask(answer);
  t.ok(ModernInputResponseSchema.safeParse(response).success, "the client's answer → a valid modern input response");
  t.strictSame(response, MODERN_TASK_WIRE.update.params.inputResponses['in-1'], 'the modern tasks/update fixture value');
});
