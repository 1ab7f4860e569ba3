/**
 * Validation of a modern (2026-07-28) request as it arrives at the gateway: JSON-RPC shape, the standard headers
 * (2026-07-28 basic/transports/streamable-http §Server Validation), the per-request `_meta` envelope (2026-07-28
 * basic), supported versions (2026-07-28 basic/versioning). Expected failures are values; the proxy maps each `reason`
 * to an HTTP status and JSON-RPC code.
 */
import { LOG_LEVELS, META, SUPPORTED_MODERN_VERSIONS } from './constants.js';
import { ERROR_CATALOG, type ErrorKind } from './error-catalog.js';
import { formatMessage } from './gateway-error.js';
import { decodeHeaderValue } from './headers.js';
import { isObject, requestIdOf, type JsonObject, type RequestId } from './jsonrpc.js';
import { methodPolicy, type MethodPolicy } from './methods.js';

/** Why a modern request was refused. */
export type RequestFailureReason =
  | 'invalid-request'
  | 'header-mismatch'
  | 'unsupported-version'
  | 'missing-envelope'
  | 'invalid-meta'
  | 'method-removed'
  | 'invalid-request-state';

/** A refused request: the reason, a message for the client, optional error data, and the id if known. */
export interface RequestFailure {
  reason: RequestFailureReason;
  message: string;
  data?: unknown;
  id: RequestId | null;
}

/** The client-declared context of one modern request. */
export interface RequestEnvelope {
  protocolVersion: string;
  clientCapabilities: JsonObject;
  clientInfo?: JsonObject;
  logLevel?: string;
}

/** A validated modern request. `params` has the reserved envelope keys and MRTR material removed. */
export interface ModernRequest {
  /** Absent for notifications. */
  id?: RequestId;
  method: string;
  policy: MethodPolicy;
  params: JsonObject;
  envelope: RequestEnvelope;
  /** MRTR retry material (2026-07-28 basic/patterns/mrtr), lifted out of params. */
  inputResponses?: JsonObject;
  requestState?: string;
}

/** The headers the validator reads (lower-case names, already de-duplicated; `undefined` = absent, `null` = repeated). */
export interface ModernHeaders {
  'mcp-protocol-version'?: string | null | undefined;
  'mcp-method'?: string | null | undefined;
  'mcp-name'?: string | null | undefined;
}

const RESERVED_META = new Set<string>([META.protocolVersion, META.clientCapabilities, META.clientInfo, META.logLevel]);

/** Capability keys whose value is an object of settings (2026-07-28 schema `ClientCapabilities`). */
const OBJECT_CAPABILITIES = ['experimental', 'roots', 'sampling', 'elicitation', 'extensions', 'tasks'] as const;

/**
 * The first `_meta` value of a known key with the wrong type, as `[where, what it must be]` (2026-07-28 schema
 * `RequestMetaObject`, `ClientCapabilities`, `Implementation`, `LoggingLevel`, `ProgressToken`). A wrong-typed value
 * is refused here rather than read as absent or passed to an upstream as it is. Other keys belong to their senders.
 */
function metaTypeProblem(meta: JsonObject): [string, string] | undefined {
  const at = (key: string) => `_meta[${JSON.stringify(key)}]`;
  const has = (key: string) => Object.hasOwn(meta, key);
  // A `_meta`, protocolVersion or clientCapabilities of the wrong type is an incomplete envelope (refused next, -32602).
  const caps = meta[META.clientCapabilities];
  if (isObject(caps)) {
    for (const k of OBJECT_CAPABILITIES) {
      if (Object.hasOwn(caps, k) && !isObject(caps[k])) return [`${at(META.clientCapabilities)}.${k}`, 'an object'];
    }
  }
  if (has(META.clientInfo)) {
    const info = meta[META.clientInfo];
    if (!isObject(info)) return [at(META.clientInfo), 'an object'];
    for (const k of ['name', 'version', 'title'] as const) {
      if (Object.hasOwn(info, k) && typeof info[k] !== 'string') return [`${at(META.clientInfo)}.${k}`, 'a string'];
    }
  }
  if (has(META.logLevel) && !(LOG_LEVELS as readonly unknown[]).includes(meta[META.logLevel])) return [at(META.logLevel), `one of ${LOG_LEVELS.join(', ')}`];
  if (has('progressToken')) {
    const token = meta.progressToken;
    if (typeof token !== 'string' && !(typeof token === 'number' && Number.isFinite(token))) return [at('progressToken'), 'a string or a number'];
  }
  return undefined;
}

/** Validates one modern request; see the module doc for the order of checks. */
export function validateModernRequest(headers: ModernHeaders, body: unknown): { ok: true; value: ModernRequest } | { ok: false; failure: RequestFailure } {
  const fail = (reason: RequestFailureReason, message: string, id: RequestId | null, data?: unknown) => ({
    ok: false as const,
    failure: data === undefined ? { reason, message, id } : { reason, message, id, data },
  });

  if (!isObject(body) || body.jsonrpc !== '2.0' || typeof body.method !== 'string') {
    return fail('invalid-request', 'Invalid Request: expected one JSON-RPC 2.0 request or notification', requestIdOf(body));
  }
  const id = requestIdOf(body);
  if ('id' in body && id === null) return fail('invalid-request', 'Invalid Request: id must be a string or number', null);
  if (body.params !== undefined && !isObject(body.params)) return fail('invalid-request', 'Invalid Request: params must be an object', id);
  const method = body.method;
  const params: JsonObject = isObject(body.params) ? body.params : {};

  // Order (conformance server-stateless): header present → envelope complete (-32602) → header and body
  // versions agree (-32020) → version supported (-32022) → Mcp-Method → Mcp-Name.
  const rawVersion = headers['mcp-protocol-version'];
  if (rawVersion === null) return fail('header-mismatch', 'MCP-Protocol-Version header must not be repeated', id);
  if (rawVersion === undefined || rawVersion === '') {
    return fail('header-mismatch', 'Bad Request: the required MCP-Protocol-Version header is absent', id);
  }
  const version = decodeHeaderValue(rawVersion);
  if (!version.ok) return fail('header-mismatch', `Bad Request: MCP-Protocol-Version: ${version.message}`, id);

  const meta = isObject(params._meta) ? params._meta : undefined;
  const wrong = meta ? metaTypeProblem(meta) : undefined;
  if (wrong) return fail('invalid-meta', formatMessage(ERROR_CATALOG.GW_INVALID_META.message, wrong), id);
  const missing: string[] = [];
  if (!meta || typeof meta[META.protocolVersion] !== 'string') missing.push(META.protocolVersion);
  if (!meta || !isObject(meta[META.clientCapabilities])) missing.push(META.clientCapabilities);
  if (!meta || missing.length > 0) {
    return fail('missing-envelope', `Invalid params: the request is missing the required per-request envelope key(s): ${missing.join(', ')}`, id);
  }
  const metaVersion = meta[META.protocolVersion] as string;
  if (metaVersion !== version.value) {
    return fail('header-mismatch', `Bad Request: MCP-Protocol-Version header (${version.value}) does not match _meta protocolVersion (${metaVersion})`, id);
  }
  if (!SUPPORTED_MODERN_VERSIONS.includes(version.value)) {
    return fail('unsupported-version', `Unsupported protocol version: ${version.value}`, id, {
      supported: [...SUPPORTED_MODERN_VERSIONS],
      requested: version.value,
    });
  }

  // 3. Mcp-Method must mirror the body's method.
  const rawMethod = headers['mcp-method'];
  if (rawMethod === null) return fail('header-mismatch', 'Mcp-Method header must not be repeated', id);
  if (rawMethod === undefined) return fail('header-mismatch', `Bad Request: body carries method "${method}" but the required Mcp-Method header is absent`, id);
  const headerMethod = decodeHeaderValue(rawMethod);
  if (!headerMethod.ok) return fail('header-mismatch', `Bad Request: Mcp-Method: ${headerMethod.message}`, id);
  if (headerMethod.value !== method) {
    return fail('header-mismatch', `Bad Request: Mcp-Method header "${headerMethod.value}" does not match body method "${method}"`, id);
  }

  // 4. Mcp-Name must mirror params.name / params.uri / params.taskId for the methods that route by name.
  const policy = methodPolicy(method);
  const rawName = headers['mcp-name'];
  if (rawName === null) return fail('header-mismatch', 'Mcp-Name header must not be repeated', id);
  if (policy.nameParam) {
    const bodyName = params[policy.nameParam];
    if (typeof bodyName === 'string') {
      if (rawName === undefined) {
        return fail('header-mismatch', `Bad Request: body carries params.${policy.nameParam}="${bodyName}" but the required Mcp-Name header is absent`, id);
      }
      const name = decodeHeaderValue(rawName);
      if (!name.ok) return fail('header-mismatch', `Bad Request: Mcp-Name: ${name.message}`, id);
      if (name.value !== bodyName) {
        return fail('header-mismatch', `Bad Request: Mcp-Name header "${name.value}" does not match params.${policy.nameParam} "${bodyName}"`, id);
      }
    }
  }

  // 5. Methods removed from the modern era.
  if (policy.kind === 'removed') return fail('method-removed', formatMessage(ERROR_CATALOG.GW_METHOD_NOT_FOUND.message, [method]), id);

  // 6. A `requestState` is the string the server issued (2026-07-28 basic/patterns/mrtr); any other value is an invalid
  // state like a forged one, with the same answer, never a new call without it.
  if ('requestState' in params && typeof params.requestState !== 'string')
    return fail('invalid-request-state', ERROR_CATALOG.GW_INVALID_REQUEST_STATE.message, id);

  // Likewise `inputResponses` is an object of answers (2026-07-28 basic/patterns/mrtr): any other value is refused, not
  // dropped (dropped, the retry would run as if nothing were answered).
  if ('inputResponses' in params && !isObject(params.inputResponses)) {
    return fail('invalid-meta', formatMessage(ERROR_CATALOG.GW_INVALID_META.message, ['params.inputResponses', 'an object']), id);
  }

  const envelope: RequestEnvelope = {
    protocolVersion: metaVersion,
    clientCapabilities: meta[META.clientCapabilities] as JsonObject,
  };
  if (isObject(meta[META.clientInfo])) envelope.clientInfo = meta[META.clientInfo] as JsonObject;
  if (typeof meta[META.logLevel] === 'string') envelope.logLevel = meta[META.logLevel] as string;

  const rest: JsonObject = {};
  for (const [k, v] of Object.entries(meta)) if (!RESERVED_META.has(k)) rest[k] = v;
  const cleanParams: JsonObject = {};
  for (const [k, v] of Object.entries(params)) {
    if (k === '_meta' || k === 'inputResponses' || k === 'requestState') continue;
    cleanParams[k] = v;
  }
  if (Object.keys(rest).length > 0) cleanParams._meta = rest;

  const value: ModernRequest = { method, policy, params: cleanParams, envelope };
  if (id !== null) value.id = id;
  if (isObject(params.inputResponses)) value.inputResponses = params.inputResponses;
  if (typeof params.requestState === 'string') value.requestState = params.requestState;
  return { ok: true, value };
}

/**
 * The error catalog's entry for each refusal reason (2026-07-28 basic §Error Codes; 2026-07-28
 * basic/transports/streamable-http): the status and JSON-RPC code come from the catalog, the message from the failure.
 */
export const REQUEST_FAILURE_KIND: Readonly<Record<RequestFailureReason, ErrorKind>> = {
  'invalid-request': 'GW_INVALID_REQUEST',
  'header-mismatch': 'GW_HEADER_MISMATCH',
  'unsupported-version': 'GW_UNSUPPORTED_VERSION',
  'missing-envelope': 'GW_MISSING_ENVELOPE',
  'invalid-meta': 'GW_INVALID_META',
  'method-removed': 'GW_METHOD_REMOVED',
  // 2026-07-28 basic/patterns/mrtr §Server Requirements: a state of the wrong type is an invalid state.
  'invalid-request-state': 'GW_INVALID_REQUEST_STATE',
};

/** HTTP status and JSON-RPC code for each refusal reason, as the catalog has them. */
export const REQUEST_FAILURE_STATUS: Readonly<Record<RequestFailureReason, { status: number; code: number }>> = Object.fromEntries(
  Object.entries(REQUEST_FAILURE_KIND).map(([reason, kind]) => [reason, { status: ERROR_CATALOG[kind].status, code: ERROR_CATALOG[kind].rpc }]),
) as Record<RequestFailureReason, { status: number; code: number }>;
