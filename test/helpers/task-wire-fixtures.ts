/**
 * Task wire fixtures per era, for the translate unit tests: `LEGACY_TASK_WIRE` = 2025-11-25 core tasks, `MODERN_TASK_WIRE` =
 * the 2026-07-28 `io.modelcontextprotocol/tasks` extension. Each is the same task (ids aside) at the same moment, so
 * a test can map one era's fixture and compare with the other's. Every fixture is accepted by the published
 * `@modelcontextprotocol/ext-tasks` schema named in `SCHEMA_CHECKS` (test/translate/task-wire.test.ts proves
 * it). Plain data; never run as a test.
 */
import type { JsonObject } from '../../src/translate/jsonrpc.js';

export const RELATED_TASK = 'io.modelcontextprotocol/related-task';
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
export const IMMEDIATE = 'io.modelcontextprotocol/model-immediate-response';
export const SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId';

const CREATED = '2026-01-05T10:00:00Z';
const UPDATED = '2026-01-05T10:00:07Z';

const elicitForm = {
  method: 'elicitation/create',
  params: { mode: 'form', message: 'Which region?', requestedSchema: { type: 'object', properties: { region: { type: 'string' } }, required: ['region'] } },
};
const sampling = {
  method: 'sampling/createMessage',
  params: { messages: [{ role: 'user', content: { type: 'text', text: 'Summarise' } }], maxTokens: 64 },
};
const toolResult = { content: [{ type: 'text', text: 'done' }], structuredContent: { rows: 3 }, isError: false };
const toolError = { content: [{ type: 'text', text: 'quota exceeded' }], isError: true };
const rpcError = { code: -32603, message: 'backend exploded', data: { retryable: false } };

/** 2025-11-25 core tasks (basic/utilities/tasks), as a legacy server sends them. */
export const LEGACY_TASK_WIRE = {
  /** `tasks/get` result: the flat Task. */
  working: { taskId: 'up-1', status: 'working', statusMessage: 'step 2/5', createdAt: CREATED, lastUpdatedAt: UPDATED, ttl: 120_000, pollInterval: 2000 },
  inputRequired: { taskId: 'up-1', status: 'input_required', createdAt: CREATED, lastUpdatedAt: UPDATED, ttl: 120_000, pollInterval: 2000 },
  completed: { taskId: 'up-1', status: 'completed', createdAt: CREATED, lastUpdatedAt: UPDATED, ttl: 120_000, pollInterval: 2000 },
  /** A tool error or a JSON-RPC error: the legacy Task does not say which (its tasks/result does). */
  failed: { taskId: 'up-1', status: 'failed', statusMessage: 'quota exceeded', createdAt: CREATED, lastUpdatedAt: UPDATED, ttl: 120_000, pollInterval: 2000 },
  /** `tasks/cancel` result: the Task after cancellation. */
  cancelled: { taskId: 'up-1', status: 'cancelled', createdAt: CREATED, lastUpdatedAt: UPDATED, ttl: 120_000, pollInterval: 2000 },
  /** Unlimited retention (2025-11-25 basic/utilities/tasks §TTL and Resource Management). */
  unlimited: { taskId: 'up-2', status: 'working', createdAt: CREATED, lastUpdatedAt: CREATED, ttl: null },
  /** Unknown keys a newer server adds, at every level. */
  withExtras: {
    taskId: 'up-3',
    status: 'working',
    createdAt: CREATED,
    lastUpdatedAt: CREATED,
    ttl: 60_000,
    'com.example/shard': 7,
    _meta: { 'com.example/trace': 'abc' },
  },
  /** The nested `CreateTaskResult` with the host hint in `_meta` (§Creating Tasks). */
  createTaskResult: {
    task: { taskId: 'up-1', status: 'working', createdAt: CREATED, lastUpdatedAt: CREATED, ttl: 120_000, pollInterval: 2000 },
    _meta: { [IMMEDIATE]: 'Rendering started.', 'com.example/trace': 'abc' },
  },
  /** `notifications/tasks/status` (no related-task `_meta`, §Task Status Notification). */
  statusNotification: {
    jsonrpc: '2.0',
    method: 'notifications/tasks/status',
    params: { taskId: 'up-1', status: 'completed', createdAt: CREATED, lastUpdatedAt: UPDATED, ttl: 120_000, pollInterval: 2000 },
  },
  /** `tasks/result` payloads (§Result Retrieval): the tool result with the related-task `_meta`, or the JSON-RPC error. */
  payloadResult: { ...toolResult, _meta: { [RELATED_TASK]: { taskId: 'up-1' }, 'com.example/trace': 'abc' } },
  payloadToolError: { ...toolError, _meta: { [RELATED_TASK]: { taskId: 'up-1' } } },
  payloadError: rpcError,
  /** A task-scoped server→client request on the tasks/result stream (§Input Required Status). */
  elicitRequest: {
    jsonrpc: '2.0',
    id: 'srv-41',
    method: 'elicitation/create',
    params: { ...elicitForm.params, _meta: { [RELATED_TASK]: { taskId: 'up-1' } } },
  },
  /** `tools/list` with each kind of task support (2025-11-25 server/tools §Tool). */
  toolsList: {
    tools: [
      { name: 'render', inputSchema: { type: 'object' }, execution: { taskSupport: 'optional' } },
      { name: 'export', inputSchema: { type: 'object' }, execution: { taskSupport: 'required' } },
      { name: 'ping', inputSchema: { type: 'object' }, execution: { taskSupport: 'forbidden' } },
      { name: 'echo', inputSchema: { type: 'object' } },
    ],
  },
  /** The server `tasks` capability (§Server Capabilities). */
  serverCapabilities: { tools: { listChanged: true }, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
  /** A task-augmented `tools/call` (§Creating Tasks). */
  callAsTask: { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'render', arguments: { doc: 'a' }, task: { ttl: 120_000 } } },
} as const;

/** 2026-07-28 tasks extension, as a modern server sends it (tasks extension §Tasks, §Task Polling). */
export const MODERN_TASK_WIRE = {
  /** The flat `CreateTaskResult` (§Task Creation). */
  createTaskResult: {
    resultType: 'task',
    taskId: 'up-1',
    status: 'working',
    createdAt: CREATED,
    lastUpdatedAt: CREATED,
    ttlMs: 120_000,
    pollIntervalMs: 2000,
    _meta: { [IMMEDIATE]: 'Rendering started.', 'com.example/trace': 'abc' },
  },
  /** `tasks/get` results, one per `DetailedTask` variant. */
  working: {
    resultType: 'complete',
    taskId: 'up-1',
    status: 'working',
    statusMessage: 'step 2/5',
    createdAt: CREATED,
    lastUpdatedAt: UPDATED,
    ttlMs: 120_000,
    pollIntervalMs: 2000,
  },
  inputRequired: {
    resultType: 'complete',
    taskId: 'up-1',
    status: 'input_required',
    createdAt: CREATED,
    lastUpdatedAt: UPDATED,
    ttlMs: 120_000,
    pollIntervalMs: 2000,
    inputRequests: { 'in-1': elicitForm, 'in-2': sampling },
  },
  completed: {
    resultType: 'complete',
    taskId: 'up-1',
    status: 'completed',
    createdAt: CREATED,
    lastUpdatedAt: UPDATED,
    ttlMs: 120_000,
    pollIntervalMs: 2000,
    result: { resultType: 'complete', ...toolResult, _meta: { 'com.example/trace': 'abc' } },
  },
  /** A tool error stays `completed` (§Task Execution Errors). */
  completedToolError: {
    resultType: 'complete',
    taskId: 'up-1',
    status: 'completed',
    statusMessage: 'quota exceeded',
    createdAt: CREATED,
    lastUpdatedAt: UPDATED,
    ttlMs: 120_000,
    pollIntervalMs: 2000,
    result: { resultType: 'complete', ...toolError },
  },
  failed: {
    resultType: 'complete',
    taskId: 'up-1',
    status: 'failed',
    statusMessage: 'quota exceeded',
    createdAt: CREATED,
    lastUpdatedAt: UPDATED,
    ttlMs: 120_000,
    pollIntervalMs: 2000,
    error: rpcError,
  },
  cancelled: { resultType: 'complete', taskId: 'up-1', status: 'cancelled', createdAt: CREATED, lastUpdatedAt: UPDATED, ttlMs: 120_000, pollIntervalMs: 2000 },
  unlimited: { resultType: 'complete', taskId: 'up-2', status: 'working', createdAt: CREATED, lastUpdatedAt: CREATED, ttlMs: null },
  withExtras: {
    resultType: 'complete',
    taskId: 'up-3',
    status: 'working',
    createdAt: CREATED,
    lastUpdatedAt: CREATED,
    ttlMs: 60_000,
    'com.example/shard': 7,
    _meta: { 'com.example/trace': 'abc' },
  },
  /** `notifications/tasks` on a listen stream: the DetailedTask plus the subscription id (§Task Status Notifications). */
  statusNotification: {
    jsonrpc: '2.0',
    method: 'notifications/tasks',
    params: {
      taskId: 'up-1',
      status: 'completed',
      createdAt: CREATED,
      lastUpdatedAt: UPDATED,
      ttlMs: 120_000,
      pollIntervalMs: 2000,
      result: { resultType: 'complete', ...toolResult },
      _meta: { [SUBSCRIPTION_ID]: 'sub-1' },
    },
  },
  /** `tasks/cancel` and `tasks/update` acknowledgements (§Task Cancellation, §Task Update Requests). */
  ack: { resultType: 'complete' },
  /** `tasks/update` answering the elicitation of `inputRequired`. */
  update: {
    jsonrpc: '2.0',
    id: 12,
    method: 'tasks/update',
    params: { taskId: 'up-1', inputResponses: { 'in-1': { action: 'accept', content: { region: 'eu-west-1' } } } },
  },
  /** A request's client capabilities declaring the extension (§Capability Negotiation). */
  declaring: { elicitation: {}, extensions: { [TASKS_EXTENSION]: {} } },
} as const;

/** A mutable deep copy of a fixture, typed as a JSON object. */
export function wire<T>(fixture: T): JsonObject {
  return structuredClone(fixture) as unknown as JsonObject;
}
