/**
 * Task records for the translate unit tests: a base stored record, builders, and a "kitchen sink" record carrying
 * every outcome field plus stray keys a careless store might leave. Plain data; never run as a test.
 */
import type { InputRequest } from '../../src/translate/input.js';
import type { JsonRpcErrorObject } from '../../src/translate/jsonrpc.js';
import type { TaskId, TaskRecord, TaskStatus } from '../../src/translate/tasks.js';
import { clone, type Json } from '../fixtures/translate-wire.js';

/** The five statuses, in lifecycle order. */
export const STATUSES: TaskStatus[] = ['working', 'input_required', 'completed', 'failed', 'cancelled'];

/** A stored record; gateway-internal fields (principal, upstream, kind, tool, version…) must never reach the wire. */
export const baseRecord: TaskRecord = {
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
/** `baseRecord` with some fields replaced (a fresh copy). */
export function record(over: Partial<TaskRecord> = {}): TaskRecord {
  return { ...clone(baseRecord), ...over };
}
/** The base modern task fields of `baseRecord` with a given status. */
export function modernFields(status: TaskStatus, extra: Json = {}): Json {
  return {
    taskId: 'gw_Q2x9',
    status,
    createdAt: '2026-08-01T09:00:00Z',
    lastUpdatedAt: '2026-08-01T09:00:00Z',
    ttlMs: 600_000,
    ...extra,
  };
}

/** An elicitation input request. */
export const confirm: InputRequest = { method: 'elicitation/create', params: { mode: 'form', message: 'Delete?', requestedSchema: { type: 'object' } } };
/** A roots input request (no params). */
export const roots: InputRequest = { method: 'roots/list' };
/** A modern tool result as stored in a record. */
export const callResult: Json = { resultType: 'complete', content: [{ type: 'text', text: 'done' }], isError: false };
/** A JSON-RPC error as stored in a record. */
export const rpcError: JsonRpcErrorObject = { code: -32000, message: 'upstream blew up', data: { at: 'step 2' } };

/** A record carrying every optional outcome field, plus keys a record must not have but a careless store might. */
export function kitchenSink(status: TaskStatus): TaskRecord {
  return {
    ...record({ status, result: clone(callResult), error: clone(rpcError), inputRequests: { confirm: clone(confirm) } }),
    requestState: 'opaque',
    ttl: 5,
    pollInterval: 7,
    task: { taskId: 'nested' },
  } as TaskRecord;
}
