/**
 * The task wire fixtures of each era are what the published `@modelcontextprotocol/ext-tasks` schemas accept, and
 * what the gateway's readers read whole; the schemas' strictness where the gateway relaxes it is pinned here, so an
 * ext-tasks upgrade that changes it shows up (translation.md §2.12).
 */
import t from 'tap';
import {
  CallToolRequestV1Schema as LegacyCallToolRequestSchema,
  CallToolResultV1Schema as LegacyCallToolResultSchema,
  CancelTaskResultV1Schema as LegacyCancelTaskResultSchema,
  CreateTaskResultV1Schema as LegacyCreateTaskResultSchema,
  GetTaskResultV1Schema as LegacyGetTaskResultSchema,
  ServerCapabilitiesV1Schema as LegacyServerCapabilitiesSchema,
  TaskStatusNotificationV1Schema as LegacyTaskStatusNotificationSchema,
  TaskV1Schema as LegacyTaskSchema,
  ToolV1Schema as LegacyToolSchema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  CancelTaskResultV2Schema as ModernCancelTaskResultSchema,
  CreateTaskResultV2Schema as ModernCreateTaskResultSchema,
  GetTaskResultV2Schema as ModernGetTaskResultSchema,
  TaskStatusNotificationV2Schema as ModernTaskStatusNotificationSchema,
  TasksExtensionCapabilityV2Schema as ModernTasksExtensionCapabilitySchema,
  UpdateTaskRequestV2Schema as ModernUpdateTaskRequestSchema,
  UpdateTaskResultV2Schema as ModernUpdateTaskResultSchema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import { readLegacyCreateTaskResult, readLegacyTask } from '../../src/translate/legacy-tasks.js';
import { declaresTasks, readModernCreateTaskResult, readModernDetailedTask } from '../../src/translate/modern-tasks.js';
import { LEGACY_TASK_WIRE, MODERN_TASK_WIRE, TASKS_EXTENSION, wire } from '../helpers/task-wire-fixtures.js';

type Schema = { safeParse(v: unknown): { success: boolean } };

t.test('2025-11-25 fixtures are valid for ext-tasks core/v1', async (t) => {
  const checks: Array<[string, unknown, Schema]> = [
    ['working', LEGACY_TASK_WIRE.working, LegacyGetTaskResultSchema],
    ['inputRequired', LEGACY_TASK_WIRE.inputRequired, LegacyGetTaskResultSchema],
    ['completed', LEGACY_TASK_WIRE.completed, LegacyGetTaskResultSchema],
    ['failed', LEGACY_TASK_WIRE.failed, LegacyGetTaskResultSchema],
    ['cancelled', LEGACY_TASK_WIRE.cancelled, LegacyCancelTaskResultSchema],
    ['unlimited', LEGACY_TASK_WIRE.unlimited, LegacyTaskSchema],
    ['withExtras', LEGACY_TASK_WIRE.withExtras, LegacyGetTaskResultSchema],
    ['createTaskResult', LEGACY_TASK_WIRE.createTaskResult, LegacyCreateTaskResultSchema],
    ['statusNotification', LEGACY_TASK_WIRE.statusNotification, LegacyTaskStatusNotificationSchema],
    ['payloadResult', LEGACY_TASK_WIRE.payloadResult, LegacyCallToolResultSchema],
    ['payloadToolError', LEGACY_TASK_WIRE.payloadToolError, LegacyCallToolResultSchema],
    ['serverCapabilities', LEGACY_TASK_WIRE.serverCapabilities, LegacyServerCapabilitiesSchema],
    ['callAsTask', LEGACY_TASK_WIRE.callAsTask, LegacyCallToolRequestSchema],
  ];
  for (const tool of LEGACY_TASK_WIRE.toolsList.tools) checks.push([`tool ${tool.name}`, tool, LegacyToolSchema]);
  for (const [name, fixture, schema] of checks) t.ok(schema.safeParse(wire(fixture)).success, name);
});

t.test('2026-07-28 fixtures are valid for ext-tasks core/v2', async (t) => {
  const checks: Array<[string, unknown, Schema]> = [
    ['createTaskResult', MODERN_TASK_WIRE.createTaskResult, ModernCreateTaskResultSchema],
    ['working', MODERN_TASK_WIRE.working, ModernGetTaskResultSchema],
    ['inputRequired', MODERN_TASK_WIRE.inputRequired, ModernGetTaskResultSchema],
    ['completed', MODERN_TASK_WIRE.completed, ModernGetTaskResultSchema],
    ['completedToolError', MODERN_TASK_WIRE.completedToolError, ModernGetTaskResultSchema],
    ['failed', MODERN_TASK_WIRE.failed, ModernGetTaskResultSchema],
    ['cancelled', MODERN_TASK_WIRE.cancelled, ModernGetTaskResultSchema],
    ['unlimited', MODERN_TASK_WIRE.unlimited, ModernGetTaskResultSchema],
    ['withExtras', MODERN_TASK_WIRE.withExtras, ModernGetTaskResultSchema],
    ['statusNotification', MODERN_TASK_WIRE.statusNotification, ModernTaskStatusNotificationSchema],
    ['cancel ack', MODERN_TASK_WIRE.ack, ModernCancelTaskResultSchema],
    ['update ack', MODERN_TASK_WIRE.ack, ModernUpdateTaskResultSchema],
    ['update', MODERN_TASK_WIRE.update, ModernUpdateTaskRequestSchema],
    ['declaring settings', MODERN_TASK_WIRE.declaring.extensions[TASKS_EXTENSION], ModernTasksExtensionCapabilitySchema],
  ];
  for (const [name, fixture, schema] of checks) t.ok(schema.safeParse(wire(fixture)).success, name);
});

t.test('the readers read every fixture of their era whole', async (t) => {
  for (const k of ['working', 'inputRequired', 'completed', 'failed', 'cancelled', 'unlimited', 'withExtras'] as const) {
    t.strictSame(readLegacyTask(wire(LEGACY_TASK_WIRE[k])), LEGACY_TASK_WIRE[k], `legacy ${k}`);
    t.strictSame(readModernDetailedTask(wire(MODERN_TASK_WIRE[k])), MODERN_TASK_WIRE[k], `modern ${k}`);
  }
  t.strictSame(readLegacyCreateTaskResult(wire(LEGACY_TASK_WIRE.createTaskResult)), LEGACY_TASK_WIRE.createTaskResult, 'legacy createTaskResult');
  t.strictSame(readModernCreateTaskResult(wire(MODERN_TASK_WIRE.createTaskResult)), MODERN_TASK_WIRE.createTaskResult, 'modern createTaskResult');
  t.ok(declaresTasks(wire(MODERN_TASK_WIRE.declaring)), 'modern declaring capabilities');
});

t.test('each era is not the other: a CreateTaskResult is nested or flat', async (t) => {
  t.equal(readLegacyCreateTaskResult(wire(MODERN_TASK_WIRE.createTaskResult)), undefined, 'flat is not nested');
  t.equal(readModernCreateTaskResult(wire(LEGACY_TASK_WIRE.createTaskResult)), undefined, 'nested is not flat');
});

t.test('where the published schemas are stricter than the readers (pinned, so an ext-tasks upgrade shows)', async (t) => {
  const fractionalLegacyTask = { ...wire(LEGACY_TASK_WIRE.working), ttl: 1500.5 };
  t.notOk(LegacyTaskSchema.safeParse(fractionalLegacyTask).success, 'LegacyTaskSchema: integer ttl only');
  t.ok(readLegacyTask(fractionalLegacyTask), 'readLegacyTask reads it');
  const fractionalModernTask = { ...wire(MODERN_TASK_WIRE.working), pollIntervalMs: 0.5 };
  t.notOk(ModernGetTaskResultSchema.safeParse(fractionalModernTask).success, 'ModernGetTaskResultSchema: integer pollIntervalMs only');
  t.ok(readModernDetailedTask(fractionalModernTask), 'readModernDetailedTask reads it');
  t.notOk(ModernTasksExtensionCapabilitySchema.safeParse({ foo: 1 }).success, 'ModernTasksExtensionCapabilitySchema: {} only');
  t.ok(declaresTasks({ extensions: { [TASKS_EXTENSION]: { foo: 1 } } }), 'declaresTasks counts settings');
  const noResultType = (({ resultType: _r, ...rest }) => rest)(wire(MODERN_TASK_WIRE.working));
  t.notOk(ModernGetTaskResultSchema.safeParse(noResultType).success, 'ModernGetTaskResultSchema: resultType required');
  t.ok(readModernDetailedTask(noResultType), 'readModernDetailedTask: a missing resultType means complete');
  t.ok(LegacyTaskSchema.safeParse(wire(LEGACY_TASK_WIRE.unlimited)).success, 'LegacyTaskSchema already allows ttl null (unlimited)');
  const bare = { taskId: 'up-9', status: 'working' };
  t.notOk(LegacyTaskSchema.safeParse(bare).success, 'LegacyTaskSchema: ttl and timestamps required');
  t.ok(readLegacyTask(bare), 'readLegacyTask reads a Task without them');
  t.notOk(ModernGetTaskResultSchema.safeParse({ ...bare, resultType: 'complete' }).success, 'ModernGetTaskResultSchema: ttlMs and timestamps required');
  t.ok(readModernDetailedTask(bare), 'readModernDetailedTask reads a task without them');
});
