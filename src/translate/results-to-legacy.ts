/**
 * Modern (2026-07-28) results, errors and notifications → what a strict 2025-11-25 client accepts, for the legacy
 * face (docs/how-it-works.md §How the legacy face works). Fields the legacy schema has no place for are dropped; everything else
 * is kept (the 2025-11-25 schema `Result` has an index signature, so unknown keys of other extensions pass).
 */
import { ErrorCode, META } from './constants.js';
import { isObject, type JsonObject, type JsonRpcErrorObject } from './jsonrpc.js';
import type { ListenFilter } from './listen.js';
import { declaresTasks } from './modern-tasks.js';
import { catalogError } from './gateway-error.js';

/** Methods whose modern results are `CacheableResult`s (2026-07-28 server/caching): `ttlMs`/`cacheScope` are cache hints there. */
const CACHEABLE = new Set(['tools/list', 'prompts/list', 'resources/list', 'resources/templates/list', 'resources/read', 'server/discover']);

/** Why a modern result cannot be given to a legacy client. */
export type LegacyResultFailure = { reason: 'unsupported-result-type'; resultType: string };

/**
 * A modern result → the legacy result of the same method: `resultType` removed (the 2025-11-25 schema has none), cache
 * hints removed where they are cache hints, the `serverInfo` `_meta` key removed (a legacy client learned it in
 * `initialize`). Only a complete result can be given: `input_required` is consumed by the upstream client's MRTR
 * rounds, and a task is never asked for by this face.
 */
export function legacyResult(method: string, modern: JsonObject): { ok: true; value: JsonObject } | { ok: false; failure: LegacyResultFailure } {
  const { resultType, ...rest } = modern;
  if (resultType !== undefined && resultType !== 'complete') {
    return { ok: false, failure: { reason: 'unsupported-result-type', resultType: String(resultType) } };
  }
  let result: JsonObject = rest;
  if (CACHEABLE.has(method)) {
    delete result.ttlMs;
    delete result.cacheScope;
  }
  if (isObject(result._meta)) {
    const meta = { ...result._meta };
    delete meta[META.serverInfo];
    if (Object.keys(meta).length > 0) result._meta = meta;
    else delete result._meta;
  }
  if (method === 'tools/list') result = legacyToolList(result);
  if (method === 'tools/call') result = legacyCallToolResult(result);
  return { ok: true, value: result };
}

/**
 * 2026-07-28 tools take any JSON Schema 2020-12; the 2025-11-25 schema `Tool` requires `inputSchema.type:"object"` and
 * an `outputSchema` of type object, and a strict client refuses the whole list over one tool. An input schema without a
 * `type` gets `"object"` (arguments are an object on the wire anyway); an output schema of another type is dropped (its
 * non-object `structuredContent` is dropped too, see legacyCallToolResult).
 */
function legacyToolList(result: JsonObject): JsonObject {
  if (!Array.isArray(result.tools)) return result;
  return {
    ...result,
    tools: result.tools.map((tool) => {
      if (!isObject(tool)) return tool;
      const out: JsonObject = { ...tool };
      if (isObject(out.inputSchema) && out.inputSchema.type === undefined) out.inputSchema = { type: 'object', ...out.inputSchema };
      if (out.outputSchema !== undefined && !(isObject(out.outputSchema) && out.outputSchema.type === 'object')) delete out.outputSchema;
      return out;
    }),
  };
}

/**
 * The 2025-11-25 schema's `CallToolResult.structuredContent` is an object; a modern non-object one is dropped
 * (`content` carries it as text, SHOULD per the 2026-07-28 schema).
 */
function legacyCallToolResult(result: JsonObject): JsonObject {
  if (result.structuredContent === undefined || isObject(result.structuredContent)) return result;
  const { structuredContent: _sc, ...rest } = result;
  return rest;
}

/**
 * A modern error → the legacy one (2025-11-25 basic/utilities/tasks §Tool-Level Negotiation). -32021 for a tool that
 * needs the tasks extension is a legacy -32601 (the 2025-11-25 answer to a `required` tool called without a task);
 * -32021 for an input kind stays (it tells the client what to declare). -32020/-32022 concern the gateway's own
 * upstream requests, so a legacy client gets an internal error that keeps the original in `data`. Everything else is
 * unchanged.
 */
export function legacyError(error: JsonRpcErrorObject): JsonRpcErrorObject {
  if (error.code === ErrorCode.MissingRequiredClientCapability && needsTasksExtension(error.data)) {
    return withData({ code: ErrorCode.MethodNotFound, message: error.message }, error.data);
  }
  if (error.code === ErrorCode.HeaderMismatch || error.code === ErrorCode.UnsupportedProtocolVersion) {
    return catalogError('GW_UPSTREAM_REFUSED_GATEWAY', { args: [error.message], data: { upstreamCode: error.code, upstreamData: error.data } });
  }
  return error;
}

function needsTasksExtension(data: unknown): boolean {
  return isObject(data) && isObject(data.requiredCapabilities) && declaresTasks(data.requiredCapabilities);
}

function withData(e: JsonRpcErrorObject, data: unknown): JsonRpcErrorObject {
  return data === undefined ? e : { ...e, data };
}

/**
 * The error the upstream would give for an input request the client did not declare (2026-07-28 schema -32021
 * `requiredCapabilities`).
 */
export function undeclaredInputError(method: string, requiredCapabilities: JsonObject): JsonRpcErrorObject {
  return catalogError('GW_UNDECLARED_INPUT', { args: [method], data: { requiredCapabilities } });
}

/**
 * Legacy request params → modern ones: the legacy `task` opt-in removed (the face does not serve tasks, and
 * 2026-07-28 says `params.task` MUST be ignored).
 */
export function modernParamsFromLegacy(params: JsonObject | undefined): JsonObject | undefined {
  if (!params || !('task' in params)) return params;
  const { task: _task, ...rest } = params;
  return rest;
}

/**
 * The `subscriptions/listen` filter that serves one legacy session (2026-07-28 basic/patterns/subscriptions): the list
 * changes the upstream announces, and the resources the session subscribed to; `undefined` when there is nothing to
 * listen for.
 */
export function sessionListenFilter(upstreamCaps: JsonObject, opts: { lists: boolean; resources: readonly string[] }): ListenFilter | undefined {
  const listChanged = (k: string) => isObject(upstreamCaps[k]) && (upstreamCaps[k] as JsonObject).listChanged === true;
  const f: ListenFilter = {};
  if (opts.lists) {
    if (listChanged('tools')) f.toolsListChanged = true;
    if (listChanged('prompts')) f.promptsListChanged = true;
    if (listChanged('resources')) f.resourcesListChanged = true;
  }
  // Only an upstream that offers subscriptions is asked for them (2026-07-28 server/resources §Capabilities).
  if (opts.resources.length > 0 && offersSubscriptions(upstreamCaps)) f.resourceSubscriptions = [...opts.resources];
  return Object.keys(f).length > 0 ? f : undefined;
}

/** Whether an upstream's capabilities offer resource subscriptions (`resources.subscribe`). */
export function offersSubscriptions(upstreamCaps: JsonObject): boolean {
  return isObject(upstreamCaps.resources) && (upstreamCaps.resources as JsonObject).subscribe === true;
}

/**
 * URL-mode elicitation needs an `elicitationId` on the legacy wire (2025-11-25 schema `ElicitRequestURLParams`), which
 * the modern input request has not (2026-07-28 removed it); the gateway supplies one it minted.
 */
export function legacyInputParams(method: string, params: JsonObject | undefined, elicitationId: string): JsonObject | undefined {
  if (method !== 'elicitation/create' || params?.mode !== 'url' || typeof params.elicitationId === 'string') return params;
  return { ...params, elicitationId };
}
