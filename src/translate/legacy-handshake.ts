/**
 * The legacy face's handshake (2025-11-25 basic/lifecycle §Initialization; 2026-07-28 server/discover): the gateway
 * plays a 2025-11-25 server in front of a 2026-07-28 upstream. It answers `initialize` from the upstream's
 * `server/discover` identity, and turns the capabilities a legacy client declared once per session into the per-request
 * `clientCapabilities` a modern upstream reads on every request (2026-07-28 basic §Per-request metadata).
 */
import { LEGACY_VERSION, LEGACY_VERSIONS, LOG_LEVELS, TASKS_EXTENSION } from './constants.js';
import { isObject, type JsonObject } from './jsonrpc.js';
import type { UpstreamIdentity } from './results-to-modern.js';

/** What a legacy client declared in `initialize` (2025-11-25 lifecycle §Initialization). */
export interface LegacyInitializeParams {
  /** The version the client asked for. */
  protocolVersion: string;
  capabilities: JsonObject;
  clientInfo: JsonObject;
}

/** Reads `initialize` params; `undefined` when they are not usable (the client gets -32602). */
export function readInitializeParams(params: unknown): LegacyInitializeParams | undefined {
  if (!isObject(params) || typeof params.protocolVersion !== 'string' || !isObject(params.clientInfo)) return undefined;
  return {
    protocolVersion: params.protocolVersion,
    capabilities: isObject(params.capabilities) ? params.capabilities : {},
    clientInfo: params.clientInfo,
  };
}

/**
 * The version the gateway answers: the client's when it is one the legacy era knows, else the newest legacy one
 * (2025-11-25 lifecycle §Version Negotiation: the server responds with another version it supports).
 */
export function negotiateLegacyVersion(requested: string): string {
  return LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSION;
}

/**
 * Modern server capabilities → legacy ones. The legacy schema has no `extensions` slot; the tasks extension is
 * not turned into a legacy `tasks` capability, because this face does not serve `tasks/*` (a client that saw it
 * would send task-augmented calls nobody answers).
 */
export function legacyServerCapabilities(modern: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(modern)) {
    if (k === 'extensions' || k === 'tasks') continue;
    out[k] = v;
  }
  return out;
}

/** The `InitializeResult` the gateway answers from the upstream's identity (2025-11-25 schema `InitializeResult`). */
export function legacyInitializeResult(identity: UpstreamIdentity, requestedVersion: string): JsonObject {
  const result: JsonObject = {
    protocolVersion: negotiateLegacyVersion(requestedVersion),
    capabilities: legacyServerCapabilities(identity.capabilities),
    serverInfo: identity.serverInfo,
  };
  if (identity.instructions !== undefined) result.instructions = identity.instructions;
  return result;
}

/**
 * A legacy client's session capabilities → the modern per-request `clientCapabilities` (2026-07-28 schema
 * `ClientCapabilities`: experimental, roots, sampling, elicitation, extensions; there is no `tasks` key). A legacy
 * `elicitation: {}` means form mode only (2025-11-25 client/elicitation §Capabilities), said explicitly upstream.
 */
export function modernClientCapabilities(legacy: JsonObject, opts: { tasksExtension?: boolean } = {}): JsonObject {
  const out: JsonObject = {};
  if (isObject(legacy.experimental)) out.experimental = legacy.experimental;
  if (isObject(legacy.roots)) out.roots = legacy.roots;
  if (isObject(legacy.sampling)) out.sampling = legacy.sampling;
  if (isObject(legacy.elicitation)) {
    const e = legacy.elicitation;
    out.elicitation = Object.keys(e).length === 0 ? { form: {} } : e;
  }
  const extensions: JsonObject = isObject(legacy.extensions) ? { ...legacy.extensions } : {};
  if (opts.tasksExtension) extensions[TASKS_EXTENSION] = {};
  if (Object.keys(extensions).length > 0) out.extensions = extensions;
  return out;
}

/** Whether `level` names a log level (a `logging/setLevel` with another one gets -32602). */
export function isLegacyLogLevel(level: unknown): level is string {
  return typeof level === 'string' && (LOG_LEVELS as readonly string[]).includes(level);
}
