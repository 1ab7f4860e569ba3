/**
 * Legacy (2025-11-25) results and errors → modern (2026-07-28) ones, for non-task traffic (docs/how-it-works.md;
 * 2026-07-28 basic §Error Codes).
 */
import { ErrorCode, META, MODERN_VERSION, TASKS_EXTENSION } from './constants.js';
import { isObject, putOwn, type JsonObject, type JsonRpcErrorObject } from './jsonrpc.js';
import { methodPolicy } from './methods.js';
import { catalogError } from './gateway-error.js';

/** Cache hints stamped on cacheable modern results (2026-07-28 server/utilities/caching). */
export interface CacheHints {
  ttlMs: number;
  scope: 'public' | 'private';
}

/** What the upstream told the gateway about itself in `initialize`. */
export interface UpstreamIdentity {
  protocolVersion: string;
  capabilities: JsonObject;
  serverInfo: JsonObject;
  instructions?: string;
}

/** Reads an `InitializeResult` into an identity; `undefined` when it is not one. */
export function identityFromInitialize(result: unknown): UpstreamIdentity | undefined {
  if (!isObject(result) || typeof result.protocolVersion !== 'string' || !isObject(result.serverInfo)) return undefined;
  const id: UpstreamIdentity = {
    protocolVersion: result.protocolVersion,
    capabilities: isObject(result.capabilities) ? result.capabilities : {},
    serverInfo: result.serverInfo,
  };
  if (typeof result.instructions === 'string') id.instructions = result.instructions;
  return id;
}

/**
 * Legacy server capabilities → modern ones: the legacy `tasks` slot never appears (conformance
 * `tasks-extension-advertised`); the tasks extension is advertised when the gateway can serve tasks.
 */
export function modernCapabilities(legacy: JsonObject, opts: { tasksExtension: boolean }): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(legacy)) {
    if (k === 'tasks') continue;
    out[k] = v;
  }
  const extensions: JsonObject = isObject(legacy.extensions) ? { ...legacy.extensions } : {};
  if (opts.tasksExtension) extensions[TASKS_EXTENSION] = {};
  if (Object.keys(extensions).length > 0) out.extensions = extensions;
  else delete out.extensions;
  return out;
}

/**
 * Builds the `server/discover` result from the upstream's identity (2026-07-28 server/discover; 2026-07-28 schema
 * `DiscoverResult`).
 */
export function discoverResult(identity: UpstreamIdentity, opts: { tasksExtension: boolean; cache: CacheHints }): JsonObject {
  const result: JsonObject = {
    resultType: 'complete',
    supportedVersions: [MODERN_VERSION],
    capabilities: modernCapabilities(identity.capabilities, opts),
    ttlMs: opts.cache.ttlMs,
    cacheScope: opts.cache.scope,
    _meta: { [META.serverInfo]: identity.serverInfo },
  };
  if (identity.instructions !== undefined) result.instructions = identity.instructions;
  return result;
}

/** Removes the legacy `execution` field from each tool of a `tools/list` result (2026-07-28 schema `Tool` has none). */
function stripToolExecution(result: JsonObject): JsonObject {
  if (!Array.isArray(result.tools)) return result;
  return {
    ...result,
    tools: result.tools.map((tool) => {
      if (!isObject(tool) || !('execution' in tool)) return tool;
      const { execution: _execution, ...rest } = tool;
      return rest;
    }),
  };
}

/**
 * A legacy result → the modern result of the same method: `resultType:"complete"`, cache hints on cacheable
 * methods, the upstream's `serverInfo` in `_meta`, legacy-only fields removed.
 */
export function modernResult(method: string, legacy: JsonObject, opts: { serverInfo?: JsonObject; cache: CacheHints }): JsonObject {
  // Copied member by member, `_meta` set aside: no `delete` on the copy (an object a member was deleted from is slower
  // to read and to serialize, and this result is serialized next).
  let result: JsonObject = {};
  for (const k in legacy) if (k !== '_meta' && Object.hasOwn(legacy, k)) putOwn(result, k, legacy[k]);
  if (method === 'tools/list') result = stripToolExecution(result);
  result.resultType = 'complete';
  if (methodPolicy(method).cacheable) {
    if (typeof result.ttlMs !== 'number') result.ttlMs = opts.cache.ttlMs;
    if (result.cacheScope !== 'public' && result.cacheScope !== 'private') result.cacheScope = opts.cache.scope;
  }
  const meta: JsonObject = {};
  let metaMembers = 0;
  if (isObject(legacy._meta)) {
    for (const k in legacy._meta) {
      if (k === META.relatedTask || !Object.hasOwn(legacy._meta, k)) continue;
      putOwn(meta, k, legacy._meta[k]);
      metaMembers++;
    }
  }
  if (opts.serverInfo && meta[META.serverInfo] === undefined) {
    meta[META.serverInfo] = opts.serverInfo;
    metaMembers++;
  }
  if (metaMembers > 0) result._meta = meta;
  return result;
}

/**
 * Whether a legacy error to `resources/read` says the resource does not exist. Servers differ in the code they
 * use: -32002 (2025-11-25 server/resources §Error Handling), -32602 (the SDK's `McpServer`), -32603 (a handler
 * that throws a plain Error), 0 or an application code (other SDKs); so, -32002 aside, the message decides.
 * Codes that speak of the request or method itself (parse error, invalid request, method not found) never do.
 */
export function saysResourceNotFound(error: JsonRpcErrorObject): boolean {
  if (error.code === ErrorCode.LegacyResourceNotFound) return true;
  if (NOT_A_MISSING_RESOURCE.has(error.code)) return false;
  return RESOURCE_NOT_FOUND_TEXT.test(error.message);
}

const NOT_A_MISSING_RESOURCE = new Set<number>([
  ErrorCode.ParseError,
  ErrorCode.InvalidRequest,
  ErrorCode.MethodNotFound,
  ErrorCode.LegacyUrlElicitationRequired,
  ErrorCode.MissingRequiredClientCapability,
  ErrorCode.UnsupportedProtocolVersion,
  ErrorCode.HeaderMismatch,
]);

const RESOURCE_NOT_FOUND_TEXT = /\bnot found\b|\bunknown resource\b|\bno such resource\b|\bdoes ?n[o']t exist\b/i;

/**
 * A legacy JSON-RPC error → one the modern era may carry (2026-07-28 basic §Error Codes: -32002 and -32042 MUST NOT be
 * sent). A missing resource on `resources/read` becomes -32602 with `data.uri` whatever code the server used
 * (2026-07-28 server/resources §Error Handling, SEP-2164); when the code changes from one other than -32002, the
 * server's own code stays in `data.upstreamCode`.
 */
export function modernError(error: JsonRpcErrorObject, request: { method?: string; uri?: string } = {}): JsonRpcErrorObject {
  const legacyNotFound = error.code === ErrorCode.LegacyResourceNotFound;
  if (legacyNotFound || (request.method === 'resources/read' && saysResourceNotFound(error))) {
    const data: JsonObject = isObject(error.data) ? { ...error.data } : {};
    if (typeof data.uri !== 'string' && request.uri !== undefined) data.uri = request.uri;
    if (!legacyNotFound && error.code !== ErrorCode.InvalidParams && data.upstreamCode === undefined) data.upstreamCode = error.code;
    return withData({ code: ErrorCode.InvalidParams, message: error.message }, Object.keys(data).length > 0 ? data : error.data);
  }
  if (error.code === ErrorCode.LegacyUrlElicitationRequired) {
    return { code: ErrorCode.InternalError, message: error.message, data: { upstreamCode: error.code, upstreamData: error.data } };
  }
  return error;
}

function withData(e: JsonRpcErrorObject, data: unknown): JsonRpcErrorObject {
  return data === undefined ? e : { ...e, data };
}

/** Reads an upstream error object defensively. */
export function asErrorObject(value: unknown): JsonRpcErrorObject {
  // JSON-RPC 2.0 §5.1: the code MUST be an integer; a fraction (or -5e-324) is no error code a client can read.
  if (isObject(value) && typeof value.code === 'number' && Number.isInteger(value.code)) {
    const e: JsonRpcErrorObject = { code: value.code, message: typeof value.message === 'string' ? value.message : 'Upstream error' };
    if ('data' in value) e.data = value.data;
    return e;
  }
  return catalogError('GW_UPSTREAM_MALFORMED_ERROR');
}
