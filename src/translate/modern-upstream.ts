/**
 * What the gateway, as a 2026-07-28 client, puts on a request to a modern upstream and reads from its answers:
 * the per-request `_meta` envelope, the standard and custom request headers (2026-07-28 basic/transports
 * Streamable HTTP §Request Metadata, §Custom Headers from Tool Parameters), `InputRequiredResult` and its retry
 * (2026-07-28 basic/patterns/mrtr), `server/discover` (2026-07-28 server/discover) and the listen stream's `_meta`.
 */
import { ErrorCode, META, MODERN_VERSION } from './constants.js';
import { encodeHeaderValue } from './headers.js';
import { isObject, putOwn, type JsonObject, type JsonRpcNotification } from './jsonrpc.js';
import type { InputRequest } from './input.js';
import { methodPolicy } from './methods.js';
import { TRACEPARENT, TRACESTATE, type TraceCarrier } from './trace-context.js';
import type { UpstreamIdentity } from './results-to-modern.js';

/** The schema keyword that marks a tool argument to be mirrored into an `Mcp-Param-{Name}` header. */
export const X_MCP_HEADER = 'x-mcp-header';

/** One tool argument mirrored into a header: where it sits in `arguments`, and the header's name part. */
export interface HeaderParam {
  /** The chain of `properties` keys from the schema root to the argument. */
  path: string[];
  /** The `x-mcp-header` value; the header is `Mcp-Param-{header}`. */
  header: string;
}

/** RFC 9110 §5.1 token (`1*tchar`): what an `x-mcp-header` value must be. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** The primitive types an `x-mcp-header` argument may have (`number` is excluded by the spec). */
const HEADER_TYPES = new Set(['string', 'integer', 'boolean']);
/**
 * Schema keywords whose subschemas are not "statically reachable" through a chain of `properties` keys; an
 * `x-mcp-header` anywhere under them makes the tool definition invalid (§Schema Extension).
 */
const UNREACHABLE_SINGLE = [
  'items',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
];
const UNREACHABLE_LIST = ['prefixItems', 'oneOf', 'anyOf', 'allOf'];
const UNREACHABLE_MAP = ['patternProperties', 'dependentSchemas', '$defs', 'definitions'];
/** Depth bound of the schema walk: a hostile schema cannot exhaust the stack. */
const MAX_SCHEMA_DEPTH = 32;

/**
 * Reads the `x-mcp-header` declarations of a tool's `inputSchema` and checks every constraint of 2026-07-28
 * Streamable HTTP §Schema Extension: non-empty token, primitive type (string, integer, boolean), reachable only
 * through `properties` keys, case-insensitively unique. A violation makes the whole tool definition invalid.
 */
export function headerParamsOf(inputSchema: unknown): { ok: true; params: HeaderParam[] } | { ok: false; reason: string } {
  const params: HeaderParam[] = [];
  const seen = new Set<string>();
  const visit = (node: unknown, path: string[], reachable: boolean, depth: number): string | undefined => {
    if (!isObject(node)) return undefined;
    if (depth > MAX_SCHEMA_DEPTH) return 'schema nesting too deep to check x-mcp-header';
    const where = path.length === 0 ? '<root>' : path.join('.');
    if (Object.hasOwn(node, X_MCP_HEADER)) {
      const name = node[X_MCP_HEADER];
      if (!reachable || path.length === 0) return `${where}: x-mcp-header is allowed only on properties reached through "properties" keys`;
      if (typeof name !== 'string' || name === '') return `${where}: x-mcp-header must be a non-empty string`;
      if (!TOKEN.test(name)) return `${where}: x-mcp-header "${name}" is not an HTTP token`;
      if (typeof node.type !== 'string' || !HEADER_TYPES.has(node.type)) {
        return `${where}: x-mcp-header is allowed only on string, integer or boolean properties`;
      }
      if (seen.has(name.toLowerCase())) return `${where}: x-mcp-header "${name}" is not case-insensitively unique`;
      seen.add(name.toLowerCase());
      params.push({ path, header: name });
    }
    if (isObject(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        const fault = visit(child, [...path, key], reachable, depth + 1);
        if (fault) return fault;
      }
    }
    const unreachable: unknown[] = [];
    for (const k of UNREACHABLE_SINGLE) if (node[k] !== undefined) unreachable.push(node[k]);
    for (const k of UNREACHABLE_LIST) if (Array.isArray(node[k])) unreachable.push(...(node[k] as unknown[]));
    for (const k of UNREACHABLE_MAP) if (isObject(node[k])) unreachable.push(...Object.values(node[k] as JsonObject));
    for (const child of unreachable) {
      const fault = visit(child, [...path, '*'], false, depth + 1);
      if (fault) return fault;
    }
    return undefined;
  };
  const fault = visit(inputSchema, [], true, 0);
  return fault ? { ok: false, reason: fault } : { ok: true, params };
}

/** A `tools/list` result screened for `x-mcp-header` validity. */
export interface ScreenedToolsList {
  /** The result without the tools whose header declarations are invalid. */
  result: JsonObject;
  /** The header parameters of every valid tool, by tool name (empty for a tool without declarations). */
  headers: Map<string, HeaderParam[]>;
  /** The tools left out, and why. */
  rejected: Array<{ name: string; reason: string }>;
}

/**
 * Screens a `tools/list` result: a client on Streamable HTTP MUST exclude a tool whose `x-mcp-header`
 * declarations are invalid from the `tools/list` result (§Schema Extension), and learns the others' header
 * parameters.
 */
export function screenToolsList(result: JsonObject): ScreenedToolsList {
  const headers = new Map<string, HeaderParam[]>();
  const rejected: Array<{ name: string; reason: string }> = [];
  if (!Array.isArray(result.tools)) return { result, headers, rejected };
  const kept: unknown[] = [];
  for (const tool of result.tools) {
    if (!isObject(tool) || typeof tool.name !== 'string') {
      kept.push(tool);
      continue;
    }
    const read = headerParamsOf(tool.inputSchema);
    if (read.ok) {
      headers.set(tool.name, read.params);
      kept.push(tool);
    } else {
      rejected.push({ name: tool.name, reason: read.reason });
    }
  }
  return { result: rejected.length > 0 ? { ...result, tools: kept } : result, headers, rejected };
}

/** The string form of an argument for its header (§Value Encoding, type conversion); `undefined` = no header. */
function headerString(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  // Integers beyond the JavaScript safe range are not representable (§Schema Extension): the header is omitted.
  if (typeof value === 'number' && Number.isFinite(value) && (!Number.isInteger(value) || Number.isSafeInteger(value))) return String(value);
  return undefined;
}

/**
 * The `Mcp-Param-{Name}` headers of one `tools/call`: the value at each declared path of `arguments`, converted
 * and sentinel-encoded where needed; omitted when the value is absent or null (§Server Behavior for Custom
 * Headers table). Header names are lower-case (HTTP names are case-insensitive, §Case Sensitivity).
 */
export function paramHeaders(params: readonly HeaderParam[], args: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  for (const p of params) {
    let node: unknown = args;
    for (const key of p.path) node = isObject(node) ? node[key] : undefined;
    const text = headerString(node);
    if (text !== undefined) out[`mcp-param-${p.header.toLowerCase()}`] = encodeHeaderValue(text);
  }
  return out;
}

/**
 * Whether an error is -32022 (UnsupportedProtocolVersion) whose `data.supported` lists the one 2026-07-28 version the
 * gateway speaks: the server speaks it, and a request it refused may be asked again with it (2026-07-28
 * basic/versioning). A list without it leaves nothing to send.
 */
export function refusedListingOurVersion(error: { code: number; data?: unknown }): boolean {
  if (error.code !== ErrorCode.UnsupportedProtocolVersion || !isObject(error.data)) return false;
  const supported = error.data.supported;
  return Array.isArray(supported) && supported.includes(MODERN_VERSION);
}

/**
 * The standard headers of a modern request: `MCP-Protocol-Version`, `Mcp-Method`, and `Mcp-Name` mirroring
 * `params.name` / `params.uri` / `params.taskId` for the methods that route by name (§Standard Request Headers;
 * the tasks extension for `tasks/*`). Values are sentinel-encoded where needed.
 */
export function modernHeaders(method: string, params: JsonObject | undefined): Record<string, string> {
  const out: Record<string, string> = {
    'mcp-protocol-version': MODERN_VERSION,
    'mcp-method': encodeHeaderValue(method),
  };
  const nameParam = methodPolicy(method).nameParam;
  const name = nameParam && params ? params[nameParam] : undefined;
  if (typeof name === 'string') out['mcp-name'] = encodeHeaderValue(name);
  return out;
}

/** On whose behalf a modern request is made: the per-request envelope values (2026-07-28 basic §_meta). */
export interface ModernEnvelope {
  capabilities: JsonObject;
  clientInfo: JsonObject;
  logLevel?: string;
  /** The trace context the request carries (2026-07-28 basic §General fields › `_meta` › OpenTelemetry trace context). */
  trace?: TraceCarrier;
}

/** The `_meta` keys `withEnvelope` sets itself (a caller's own values are dropped). */
const ENVELOPE_KEYS = new Set<string>([META.protocolVersion, META.clientCapabilities, META.clientInfo, META.logLevel, TRACEPARENT, TRACESTATE]);

/**
 * Params with the per-request envelope in `_meta`. The caller's other `_meta` keys (`progressToken`, `baggage`,
 * extension keys) are kept; the reserved envelope keys are always the gateway's, so that the body agrees with the
 * `MCP-Protocol-Version` header it sends, and so are `traceparent`/`tracestate`: the envelope's, or none (a client's
 * own value was read at the edge, and a malformed one is not carried on).
 */
export function withEnvelope(params: JsonObject | undefined, envelope: ModernEnvelope): JsonObject {
  // The caller's keys copied but for those the envelope sets (no `delete`: the params are serialized next).
  const meta: JsonObject = {};
  const theirs = params?._meta;
  if (isObject(theirs)) for (const k in theirs) if (Object.hasOwn(theirs, k) && !ENVELOPE_KEYS.has(k)) putOwn(meta, k, theirs[k]);
  meta[META.protocolVersion] = MODERN_VERSION;
  meta[META.clientCapabilities] = envelope.capabilities;
  meta[META.clientInfo] = envelope.clientInfo;
  if (envelope.logLevel !== undefined) meta[META.logLevel] = envelope.logLevel;
  if (envelope.trace !== undefined) {
    meta[TRACEPARENT] = envelope.trace.traceparent;
    if (envelope.trace.tracestate !== undefined) meta[TRACESTATE] = envelope.trace.tracestate;
  }
  return { ...(params ?? {}), _meta: meta };
}

/** The methods on which a server may answer `InputRequiredResult` (2026-07-28 basic/patterns/mrtr §Supported Requests). */
export const MRTR_METHODS: readonly string[] = ['tools/call', 'prompts/get', 'resources/read'];

/** A parsed `InputRequiredResult`: the round's input requests by the server's keys, and its opaque state. */
export interface InputRequired {
  inputRequests: Record<string, InputRequest>;
  requestState?: string;
}

/**
 * Reads a result as an `InputRequiredResult`: `undefined` when it is another kind of result, a failure when it
 * is malformed (neither `inputRequests` nor `requestState`, an entry without a method: MRTR §Server Requirements).
 */
export function readInputRequired(result: unknown): { ok: true; value: InputRequired } | { ok: false; message: string } | undefined {
  if (!isObject(result) || result.resultType !== 'input_required') return undefined;
  const rawRequests = result.inputRequests;
  const state = result.requestState;
  if (rawRequests !== undefined && !isObject(rawRequests)) return { ok: false, message: 'inputRequests is not an object' };
  if (state !== undefined && typeof state !== 'string') return { ok: false, message: 'requestState is not a string' };
  if (rawRequests === undefined && state === undefined) return { ok: false, message: 'InputRequiredResult carries neither inputRequests nor requestState' };
  const inputRequests: Record<string, InputRequest> = {};
  for (const [key, entry] of Object.entries(rawRequests ?? {})) {
    if (!isObject(entry) || typeof entry.method !== 'string') return { ok: false, message: `input request "${key}" has no method` };
    if (entry.params !== undefined && !isObject(entry.params)) return { ok: false, message: `input request "${key}" has malformed params` };
    inputRequests[key] = entry.params === undefined ? { method: entry.method } : { method: entry.method, params: entry.params };
  }
  const value: InputRequired = { inputRequests };
  if (typeof state === 'string') value.requestState = state;
  return { ok: true, value };
}

/**
 * The params of an MRTR retry: the original params, the answers by the server's keys, and the exact
 * `requestState` only if the server sent one (MRTR §Client Requirements).
 */
export function retryParams(original: JsonObject | undefined, inputResponses: JsonObject, requestState: string | undefined): JsonObject {
  const { inputResponses: _r, requestState: _s, ...rest } = original ?? {};
  const out: JsonObject = { ...rest };
  if (Object.keys(inputResponses).length > 0) out.inputResponses = inputResponses;
  if (requestState !== undefined) out.requestState = requestState;
  return out;
}

/**
 * Reads a `DiscoverResult` into the upstream's identity (2026-07-28 server/discover): capabilities as sent, the
 * server's identity from `_meta["io.modelcontextprotocol/serverInfo"]` (`fallbackInfo` when absent, as it is only a
 * SHOULD). `undefined` when the result does not list 2026-07-28 among its supported versions.
 */
export function identityFromDiscover(result: unknown, fallbackInfo: JsonObject): UpstreamIdentity | undefined {
  if (!isObject(result) || !Array.isArray(result.supportedVersions) || !result.supportedVersions.includes(MODERN_VERSION)) return undefined;
  const meta = isObject(result._meta) ? result._meta : {};
  const identity: UpstreamIdentity = {
    protocolVersion: MODERN_VERSION,
    capabilities: isObject(result.capabilities) ? result.capabilities : {},
    serverInfo: isObject(meta[META.serverInfo]) ? (meta[META.serverInfo] as JsonObject) : fallbackInfo,
  };
  if (typeof result.instructions === 'string') identity.instructions = result.instructions;
  return identity;
}

/** A notification from a listen stream without the stream's `subscriptionId` (`_meta` dropped when it empties). */
export function withoutSubscriptionId(notification: JsonRpcNotification): JsonRpcNotification {
  const params = notification.params;
  if (!params || !isObject(params._meta) || !Object.hasOwn(params._meta, META.subscriptionId)) return notification;
  const { [META.subscriptionId]: _id, ...meta } = params._meta;
  const { _meta: _old, ...rest } = params;
  return { ...notification, params: Object.keys(meta).length > 0 ? { ...rest, _meta: meta } : rest };
}
