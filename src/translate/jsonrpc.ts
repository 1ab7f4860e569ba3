/** JSON-RPC 2.0 message shapes and guards, era-neutral. Wire objects keep unknown keys. */

export type JsonObject = { [key: string]: unknown };
export type RequestId = string | number;

export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: RequestId;
  method: string;
  params?: JsonObject;
}
export interface JsonRpcNotification {
  jsonrpc: '2.0';
  method: string;
  params?: JsonObject;
}
export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}
export interface JsonRpcResultResponse {
  jsonrpc: '2.0';
  id: RequestId;
  result: JsonObject;
}
export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: RequestId | null;
  error: JsonRpcErrorObject;
}
export type JsonRpcResponse = JsonRpcResultResponse | JsonRpcErrorResponse;
export type JsonRpcMessage = JsonRpcRequest | JsonRpcNotification | JsonRpcResponse;

/** True for a plain (non-array, non-null) object. */
export function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Sets `o[k] = v` as an object spread or `JSON.parse` would: an own member, `__proto__` included (a plain assignment of
 * that key would set the prototype). For copies built member by member instead of by spread and `delete`.
 */
export function putOwn(o: JsonObject, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, enumerable: true, writable: true, configurable: true });
  else o[k] = v as JsonObject[string];
}

function isId(value: unknown): value is RequestId {
  return typeof value === 'string' || (typeof value === 'number' && Number.isFinite(value));
}

/** A request: has a method and an id. */
export function isRequest(m: unknown): m is JsonRpcRequest {
  return isObject(m) && typeof m.method === 'string' && 'id' in m && isId(m.id);
}
/** A notification: a method without an id. */
export function isNotification(m: unknown): m is JsonRpcNotification {
  return isObject(m) && typeof m.method === 'string' && !('id' in m);
}
/** A response (result or error). */
export function isResponse(m: unknown): m is JsonRpcResponse {
  return isObject(m) && !('method' in m) && ('result' in m || 'error' in m);
}
/** An error response. */
export function isErrorResponse(m: unknown): m is JsonRpcErrorResponse {
  return isResponse(m) && 'error' in m && isObject(m.error);
}

/** Builds an error response. */
export function errorResponse(id: RequestId | null, error: JsonRpcErrorObject): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error };
}
/** Builds a result response. */
export function resultResponse(id: RequestId, result: JsonObject): JsonRpcResultResponse {
  return { jsonrpc: '2.0', id, result };
}
/** The id of a request body if it has a usable one (string or finite number), else `null` (for error replies). */
export function requestIdOf(body: unknown): RequestId | null {
  if (!isObject(body)) return null;
  return isId(body.id) ? body.id : null;
}

/** Reads `params` as an object (absent → empty). */
export function paramsOf(m: { params?: unknown }): JsonObject {
  return isObject(m.params) ? m.params : {};
}
