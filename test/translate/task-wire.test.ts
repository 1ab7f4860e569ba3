/**
 * The task wire fixtures of each era are what the published `@modelcontextprotocol/ext-tasks` schemas accept, and
 * what the gateway's readers read whole; the schemas' strictness where the gateway relaxes it is pinned here, so an
 * ext-tasks upgrade that changes it shows up (translation.md §2.12).
 */
import t from 'tap';
import {
  CallToolRequestV1Schema,
  CallToolResultV1Schema,
  CancelTaskResultV1Schema,
  CreateTaskResultV1Schema,
  GetTaskResultV1Schema,
  ServerCapabilitiesV1Schema,
  TaskStatusNotificationV1Schema,
  TaskV1Schema,
  ToolV1Schema,
} from '@modelcontextprotocol/ext-tasks/core/v1';
import {
  CancelTaskResultV2Schema,
  CreateTaskResultV2Schema,
  GetTaskResultV2Schema,
  TaskStatusNotificationV2Schema,
  TasksExtensionCapabilityV2Schema,
  UpdateTaskRequestV2Schema,
  UpdateTaskResultV2Schema,
} from '@modelcontextprotocol/ext-tasks/core/v2';
import { readCreateTaskResultV1, readTaskV1 } from '../../src/translate/tasks-v1.js';
import { declaresTasks, readCreateTaskResultV2, readDetailedTaskV2 } from '../../src/translate/tasks-v2.js';
import { TASK_WIRE_V1, TASK_WIRE_V2, TASKS_EXTENSION, wire } from '../helpers/task-wire-fixtures.js';

type Schema = { safeParse(v: unknown): { success: boolean } };

t.test('2025-11-25 fixtures are valid for ext-tasks core/v1', async (t) => {
  const checks: Array<[string, unknown, Schema]> = [
    ['working', TASK_WIRE_V1.working, GetTaskResultV1Schema],
    ['inputRequired', TASK_WIRE_V1.inputRequired, GetTaskResultV1Schema],
    ['completed', TASK_WIRE_V1.completed, GetTaskResultV1Schema],
    ['failed', TASK_WIRE_V1.failed, GetTaskResultV1Schema],
    ['cancelled', TASK_WIRE_V1.cancelled, CancelTaskResultV1Schema],
    ['unlimited', TASK_WIRE_V1.unlimited, TaskV1Schema],
    ['withExtras', TASK_WIRE_V1.withExtras, GetTaskResultV1Schema],
    ['createTaskResult', TASK_WIRE_V1.createTaskResult, CreateTaskResultV1Schema],
    ['statusNotification', TASK_WIRE_V1.statusNotification, TaskStatusNotificationV1Schema],
    ['payloadResult', TASK_WIRE_V1.payloadResult, CallToolResultV1Schema],
    ['payloadToolError', TASK_WIRE_V1.payloadToolError, CallToolResultV1Schema],
    ['serverCapabilities', TASK_WIRE_V1.serverCapabilities, ServerCapabilitiesV1Schema],
    ['callAsTask', TASK_WIRE_V1.callAsTask, CallToolRequestV1Schema],
  ];
  for (const tool of TASK_WIRE_V1.toolsList.tools) checks.push([`tool ${tool.name}`, tool, ToolV1Schema]);
  for (const [name, fixture, schema] of checks) t.ok(schema.safeParse(wire(fixture)).success, name);
});

t.test('2026-07-28 fixtures are valid for ext-tasks core/v2', async (t) => {
  const checks: Array<[string, unknown, Schema]> = [
    ['createTaskResult', TASK_WIRE_V2.createTaskResult, CreateTaskResultV2Schema],
    ['working', TASK_WIRE_V2.working, GetTaskResultV2Schema],
    ['inputRequired', TASK_WIRE_V2.inputRequired, GetTaskResultV2Schema],
    ['completed', TASK_WIRE_V2.completed, GetTaskResultV2Schema],
    ['completedToolError', TASK_WIRE_V2.completedToolError, GetTaskResultV2Schema],
    ['failed', TASK_WIRE_V2.failed, GetTaskResultV2Schema],
    ['cancelled', TASK_WIRE_V2.cancelled, GetTaskResultV2Schema],
    ['unlimited', TASK_WIRE_V2.unlimited, GetTaskResultV2Schema],
    ['withExtras', TASK_WIRE_V2.withExtras, GetTaskResultV2Schema],
    ['statusNotification', TASK_WIRE_V2.statusNotification, TaskStatusNotificationV2Schema],
    ['cancel ack', TASK_WIRE_V2.ack, CancelTaskResultV2Schema],
    ['update ack', TASK_WIRE_V2.ack, UpdateTaskResultV2Schema],
    ['update', TASK_WIRE_V2.update, UpdateTaskRequestV2Schema],
    ['declaring settings', TASK_WIRE_V2.declaring.extensions[TASKS_EXTENSION], TasksExtensionCapabilityV2Schema],
  ];
  for (const [name, fixture, schema] of checks) t.ok(schema.safeParse(wire(fixture)).success, name);
});

t.test('the readers read every fixture of their era whole', async (t) => {
  for (const k of ['working', 'inputRequired', 'completed', 'failed', 'cancelled', 'unlimited', 'withExtras'] as const) {
    t.strictSame(readTaskV1(wire(TASK_WIRE_V1[k])), TASK_WIRE_V1[k], `V1 ${k}`);
    t.strictSame(readDetailedTaskV2(wire(TASK_WIRE_V2[k])), TASK_WIRE_V2[k], `V2 ${k}`);
  }
  t.strictSame(readCreateTaskResultV1(wire(TASK_WIRE_V1.createTaskResult)), TASK_WIRE_V1.createTaskResult, 'V1 createTaskResult');
  t.strictSame(readCreateTaskResultV2(wire(TASK_WIRE_V2.createTaskResult)), TASK_WIRE_V2.createTaskResult, 'V2 createTaskResult');
  t.ok(declaresTasks(wire(TASK_WIRE_V2.declaring)), 'V2 declaring capabilities');
});

t.test('each era is not the other: a CreateTaskResult is nested or flat', async (t) => {
  t.equal(readCreateTaskResultV1(wire(TASK_WIRE_V2.createTaskResult)), undefined, 'flat is not nested');
  t.equal(readCreateTaskResultV2(wire(TASK_WIRE_V1.createTaskResult)), undefined, 'nested is not flat');
});

t.test('where the published schemas are stricter than the readers (pinned, so an ext-tasks upgrade shows)', async (t) => {
  const fractionalV1 = { ...wire(TASK_WIRE_V1.working), ttl: 1500.5 };
  t.notOk(TaskV1Schema.safeParse(fractionalV1).success, 'TaskV1Schema: integer ttl only');
  t.ok(readTaskV1(fractionalV1), 'readTaskV1 reads it');
  const fractionalV2 = { ...wire(TASK_WIRE_V2.working), pollIntervalMs: 0.5 };
  t.notOk(GetTaskResultV2Schema.safeParse(fractionalV2).success, 'GetTaskResultV2Schema: integer pollIntervalMs only');
  t.ok(readDetailedTaskV2(fractionalV2), 'readDetailedTaskV2 reads it');
  t.notOk(TasksExtensionCapabilityV2Schema.safeParse({ foo: 1 }).success, 'TasksExtensionCapabilityV2Schema: {} only');
  t.ok(declaresTasks({ extensions: { [TASKS_EXTENSION]: { foo: 1 } } }), 'declaresTasks counts settings');
  const noResultType = (({ resultType: _r, ...rest }) => rest)(wire(TASK_WIRE_V2.working));
  t.notOk(GetTaskResultV2Schema.safeParse(noResultType).success, 'GetTaskResultV2Schema: resultType required');
  t.ok(readDetailedTaskV2(noResultType), 'readDetailedTaskV2: a missing resultType means complete');
  t.ok(TaskV1Schema.safeParse(wire(TASK_WIRE_V1.unlimited)).success, 'TaskV1Schema already allows ttl null (unlimited)');
  const bare = { taskId: 'up-9', status: 'working' };
  t.notOk(TaskV1Schema.safeParse(bare).success, 'TaskV1Schema: ttl and timestamps required');
  t.ok(readTaskV1(bare), 'readTaskV1 reads a Task without them');
  t.notOk(GetTaskResultV2Schema.safeParse({ ...bare, resultType: 'complete' }).success, 'GetTaskResultV2Schema: ttlMs and timestamps required');
  t.ok(readDetailedTaskV2(bare), 'readDetailedTaskV2 reads a task without them');
});
