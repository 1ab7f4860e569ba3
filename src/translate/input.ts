/**
 * Input requests: legacy server→client requests (elicitation, sampling, roots) ⇄ modern `inputRequests` entries and
 * `inputResponses` (2026-07-28 basic/patterns/mrtr §Server Requirements; 2025-11-25 client/elicitation,
 * client/sampling, client/roots).
 */
import { META } from './constants.js';
import { inputAnswerProblem } from './input-answers.js';
import { isObject, type JsonObject, type JsonRpcErrorObject } from './jsonrpc.js';
import { catalogError } from './gateway-error.js';

/** Server→client request methods that become modern input requests. */
export const INPUT_METHODS: readonly string[] = ['elicitation/create', 'sampling/createMessage', 'roots/list'];

/** One modern input request (2026-07-28 schema `InputRequest`). */
export interface InputRequest {
  method: string;
  /** As read by the wire schemas, whose optional keys may hold `undefined`. */
  params?: JsonObject | undefined;
}

/** True when `method` is an input kind the modern era expresses as an input request. */
export function isInputMethod(method: string): boolean {
  return INPUT_METHODS.includes(method);
}

/**
 * Whether the client declared the capability this input request needs (2026-07-28 basic/patterns/mrtr: a server MUST
 * NOT send input request types the client did not declare). An empty `elicitation` object means form mode (2025-11-25
 * schema `ClientCapabilities`).
 */
export function isInputDeclared(method: string, params: JsonObject | undefined, caps: JsonObject): boolean {
  switch (method) {
    case 'elicitation/create': {
      const e = caps.elicitation;
      if (!isObject(e)) return false;
      const mode = params?.mode === 'url' ? 'url' : 'form';
      if (mode === 'url') return isObject(e.url);
      return Object.keys(e).length === 0 || isObject(e.form);
    }
    case 'sampling/createMessage': {
      const s = caps.sampling;
      if (!isObject(s)) return false;
      if (params && (params.tools !== undefined || params.toolChoice !== undefined)) return isObject(s.tools);
      return true;
    }
    case 'roots/list':
      return isObject(caps.roots);
    default:
      return false;
  }
}

/**
 * A legacy server→client request → a modern input request: legacy-only fields removed (`_meta`, `task`,
 * `elicitationId`: 2026-07-28 basic/patterns/mrtr).
 */
export function toInputRequest(method: string, params: JsonObject | undefined): InputRequest {
  if (!params) return { method };
  const clean: JsonObject = {};
  for (const [k, v] of Object.entries(params)) {
    if (k === 'task' || k === 'elicitationId') continue;
    // Legacy `_meta` (related-task, the key hint) has no place in a modern input request; the 2026-07-28 schema forbids
    // it on some.
    if (k === '_meta') continue;
    clean[k] = v;
  }
  return Object.keys(clean).length > 0 ? { method, params: clean } : { method };
}

/** A modern input response → the legacy result for the upstream's pending request (`resultType` removed). */
export function toLegacyInputResult(response: unknown): JsonObject | undefined {
  if (!isObject(response)) return undefined;
  const { resultType: _rt, ...rest } = response;
  return rest;
}

/**
 * Whether an input response fits its request (see `inputAnswerProblem`: the result shape for its method and, given the
 * request's params, an accepted elicitation's content against the requested schema), so that a malformed answer is
 * refused or re-asked rather than forwarded (2026-07-28 basic/patterns/mrtr §Server Requirements).
 */
export function isValidInputResponse(method: string, response: unknown, params?: JsonObject): boolean {
  return inputAnswerProblem(method, params, response) === undefined;
}

/**
 * What the gateway answers an upstream itself for an input request its caller cannot take (not declared, or its call
 * was cancelled): what a client without the capability answers, method not found (2025-11-25 basic: a request for a
 * method the receiver does not offer).
 */
export function undeclaredInputAnswer(method: string): { error: JsonRpcErrorObject } {
  return { error: catalogError('GW_CLIENT_LACKS_INPUT', { args: [method] }) };
}

/**
 * What the gateway answers an upstream itself for an input request nobody is there to answer (the caller went away, or
 * no call holds the session): an elicitation is declined, as a user may (2025-11-25 client/elicitation §User
 * Interaction Model), so the tool goes on; anything else is refused.
 */
export function absentUserAnswer(method: string): { result: JsonObject } | { error: JsonRpcErrorObject } {
  if (method === 'elicitation/create') return { result: { action: 'decline' } };
  return undeclaredInputAnswer(method);
}

/**
 * What the gateway answers an upstream itself for a request on a session no call holds (session-start traffic, or
 * between calls): `roots/list` gets no roots (2025-11-25 client/roots), so nobody's are given away; the rest as for an
 * absent user. The HTTP session pool and the stdio host answer alike.
 */
export function sessionStartAnswer(method: string): { result: JsonObject } | { error: JsonRpcErrorObject } {
  return method === 'roots/list' ? { result: { roots: [] } } : absentUserAnswer(method);
}

/**
 * The input kinds a 2025-11-25 server can ask its client for, as one caller declared them (either era's shape: an empty
 * `elicitation` object means form mode, 2025-11-25 schema `ClientCapabilities`), normalised: the capabilities an
 * upstream session for that caller declares at `initialize`, and a short stable key naming the set. A server then
 * asks only for what the caller can answer (2025-11-25 client/elicitation, client/sampling, client/roots: a server
 * MUST NOT send what its client did not declare), and callers that declared the same kinds can share sessions: five
 * flags, so a handful of sets in practice. `roots.listChanged` is declared because the session pool sends
 * `notifications/roots/list_changed` when a session passes to another caller (2025-11-25 client/roots §List Changed
 * Notification).
 */
export function sessionInputCapabilities(caps: JsonObject): { capabilities: JsonObject; key: string } {
  const capabilities: JsonObject = {};
  let key = '';
  const e = caps.elicitation;
  if (isObject(e)) {
    const form = Object.keys(e).length === 0 || isObject(e.form);
    const url = isObject(e.url);
    if (form || url) {
      capabilities.elicitation = { ...(form ? { form: {} } : {}), ...(url ? { url: {} } : {}) };
      key += (form ? 'f' : '') + (url ? 'u' : '');
    }
  }
  const s = caps.sampling;
  if (isObject(s)) {
    capabilities.sampling = isObject(s.tools) ? { tools: {} } : {};
    key += isObject(s.tools) ? 'S' : 's';
  }
  if (isObject(caps.roots)) {
    capabilities.roots = { listChanged: true };
    key += 'r';
  }
  return { capabilities, key };
}

/**
 * Params for a legacy upstream request that carry the caller's own declared capabilities in `_meta`, under the
 * 2026-07-28 envelope key (capabilities are per request: 2026-07-28 schema `RequestMetaObject`; 2026-07-28 basic
 * "Per-request protocol fields"). The session declares every kind the gateway can bridge; a server that adapts what it
 * asks to its client (as a modern server must) reads this request's truth here rather than the session's union. A
 * legacy server ignores the key.
 */
export function withCallerCapabilities(params: JsonObject | undefined, capabilities: JsonObject): JsonObject {
  const meta = params && isObject(params._meta) ? params._meta : {};
  return { ...params, _meta: { ...meta, [META.clientCapabilities]: capabilities } };
}

/** Stable JSON text (sorted keys) for keying sessions by capability sets. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (isObject(value)) {
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(value[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * The `_meta` key by which an upstream may suggest the MRTR key for one of its server→client requests (a
 * migrating server keeps the key names its modern clients already know). Used when unique in the round.
 */
export const INPUT_KEY_HINT = 'mcp-tasks-gateway/inputKey';

/** The key an upstream suggested for this request, if it is a usable key. */
export function hintedInputKey(params: JsonObject | undefined): string | undefined {
  const meta = params && isObject(params._meta) ? params._meta : undefined;
  const hint = meta?.[INPUT_KEY_HINT];
  return typeof hint === 'string' && /^[A-Za-z0-9_.:-]{1,64}$/.test(hint) ? hint : undefined;
}

/**
 * The capability a client must declare for an input request (the data of -32021, 2026-07-28 schema
 * `requiredCapabilities`).
 */
export function requiredCapabilityFor(method: string, params: JsonObject | undefined): JsonObject {
  switch (method) {
    case 'elicitation/create':
      return { elicitation: params?.mode === 'url' ? { url: {} } : {} };
    case 'sampling/createMessage':
      return { sampling: params && (params.tools !== undefined || params.toolChoice !== undefined) ? { tools: {} } : {} };
    case 'roots/list':
      return { roots: {} };
    default:
      return {};
  }
}
