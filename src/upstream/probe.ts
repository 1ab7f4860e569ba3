/**
 * The era probe: which protocol eras an upstream speaks, asked rather than guessed. `server/discover` first, for
 * 2026-07-28; an upstream that answers it as a 2026-07-28 server is not sent a bare 2025-11-25 `initialize` (a
 * 2026-07-28 client sends every request with its version header and `_meta`, 2026-07-28
 * basic/transports/streamable-http §Protocol Version Header). Whether such a server also speaks 2025-11-25 matters
 * only to 2025-11-25 clients, so it is asked when the first of them arrives (`probeLegacy`, availability.ts), with
 * the `initialize` a 2025-11-25 client sends: no 2026-07-28 `_meta`, no `Mcp-Method`, no version header. A dual-era
 * server's `supportedVersions` may list 2026-07-28 alone, and it chooses the era by how the client opens (2026-07-28
 * basic/versioning §Compatibility Matrix): an `initialize` carrying the 2026-07-28 markers is a 2026-07-28 request
 * to it, refused as such, so only the unmarked one can find its 2025-11-25 side. An upstream that does not answer
 * `server/discover` as a 2026-07-28 server is asked `initialize` next.
 */
import {
  ErrorCode,
  identityFromInitialize,
  isErrorResponse,
  isObject,
  isResponse,
  LEGACY_VERSION,
  LEGACY_VERSIONS,
  logFailure,
  MODERN_VERSION,
  modernHeaders,
  NO_LOG,
  refusedListingOurVersion,
  withEnvelope,
  type JsonObject,
  type LayerLogger,
  type UpstreamIdentity,
} from '../translate/index.js';
import { fetchFailure, refusedConnection, UpstreamNotMcpError, UpstreamTimeoutError, UpstreamUnavailableError } from './errors.js';
import { exchange, type UpstreamResponse } from './http.js';

/** What the probe learned; callers keep it so that they need not ask the upstream again. */
export interface UpstreamEras {
  /** It answered `server/discover` for 2026-07-28 (or with a modern error that says it speaks it). */
  modern: boolean;
  /** It accepted `initialize` for a 2025-era version with an `InitializeResult`. */
  legacy: boolean;
  /** The `DiscoverResult`, when it sent one. */
  discover?: JsonObject;
  /**
   * It answered `server/discover` as a 2026-07-28 server and has not been asked `initialize` yet: `legacy` is
   * unknown until a 2025-11-25 client needs it (probeLegacy).
   */
  legacyUnasked?: true;
  /** The identity of its `InitializeResult`, when it sent one. */
  identity?: UpstreamIdentity;
  /**
   * One question got no answer (timed out, connection broke) while the other did: its "no" is a guess, to be
   * asked again soon. A slow first answer is not a refusal.
   */
  incomplete?: true;
  /**
   * Both questions were refused for want of credentials (401/403: an OAuth-protected upstream, 2025-11-25
   * basic/authorization §Error Handling): it is reachable, but said nothing about its eras.
   */
  refused?: true;
}

/** Where and how to probe. */
export interface ProbeTarget {
  url: string;
  /** Static upstream headers (credentials the operator configured). */
  headers: Record<string, string>;
  /** Bound on each question, from sending to its answer. */
  timeoutMs: number;
  /** The upstream layer's log (default nowhere). */
  log?: LayerLogger;
}

const CLIENT_INFO = { name: 'mcp-tasks-gateway', version: 'probe' };

/**
 * Asks both questions. An upstream that answered at least one of them (with anything, even an error) is judged
 * by its answers; the question it did not answer counts as "no" for now (`incomplete`); both refused with 401/403
 * is `refused` (no answer about eras). Throws when neither got an answer (the upstream is down, or hangs):
 * UpstreamUnavailableError, or UpstreamTimeoutError when every failure was a timeout; and when both got answers
 * with no JSON-RPC message in either (a wrong path's 404 page): UpstreamNotMcpError, naming what it answered. `authorization` (a caller's
 * credentials for an OAuth-protected upstream) is sent with both questions and the probe session's DELETE; it
 * replaces a configured Authorization header and is never logged.
 */
export async function probeUpstream(target: ProbeTarget, signal?: AbortSignal, authorization?: string): Promise<UpstreamEras> {
  if (authorization) target = { ...target, headers: withAuthorization(target.headers, authorization) };
  const [discover] = await Promise.allSettled([askDiscover(target, signal)]);
  if (discover.status === 'fulfilled' && discover.value.modern) {
    // Modern: its 2025-11-25 side is asked when a 2025-11-25 client needs to know (probeLegacy).
    const eras: UpstreamEras = { modern: true, legacy: false, legacyUnasked: true };
    if (discover.value.result) eras.discover = discover.value.result;
    return eras;
  }
  // Nobody listening: the upstream is down, and asking initialize too would only delay saying so.
  if (discover.status === 'rejected' && refusedConnection(discover.reason)) throw discover.reason;
  const [initialize] = await Promise.allSettled([askInitialize(target, signal)]);
  if (discover.status === 'rejected' && initialize.status === 'rejected') {
    const errors = [discover.reason, initialize.reason];
    throw errors.find((e) => !(e instanceof UpstreamTimeoutError)) ?? errors[0];
  }
  const eras: UpstreamEras = { modern: false, legacy: false };
  if (initialize.status === 'fulfilled' && initialize.value.identity) {
    eras.legacy = true;
    eras.identity = initialize.value.identity;
  }
  if (discover.status === 'rejected' || initialize.status === 'rejected') eras.incomplete = true;
  // An OAuth-protected upstream refuses questions without a user's token (2025-11-25 basic/authorization): its "no" to
  // both is no answer about its eras; the caller learns them later with a token (availability.ts).
  const refused = (r: PromiseSettledResult<Heard>) => r.status === 'fulfilled' && refusedCredentials(r.value);
  if (!eras.legacy && refused(discover) && refused(initialize)) eras.refused = true;
  if (discover.status === 'fulfilled' && initialize.status === 'fulfilled') {
    const reason = notMcp(discover.value, initialize.value);
    if (reason) throw new UpstreamNotMcpError(reason);
  }
  return eras;
}

/** What one probe question got back, beside what it meant: the status, the media type, and whether JSON-RPC came. */
interface Heard {
  status: number;
  contentType: string | undefined;
  jsonRpc: boolean;
}

function refusedCredentials(h: Heard): boolean {
  return h.status === 401 || h.status === 403;
}

/**
 * Why two answers say no MCP server listens there, or `undefined`: neither carried a JSON-RPC message, and neither
 * was a refusal for want of credentials (an OAuth-protected server may say that without JSON-RPC). An upstream that
 * answered JSON-RPC at all, even an error, speaks JSON-RPC and is judged by its eras.
 */
function notMcp(discover: Heard, initialize: Heard): string | undefined {
  if (discover.jsonRpc || initialize.jsonRpc || refusedCredentials(discover) || refusedCredentials(initialize)) return undefined;
  const said = (h: Heard) => `HTTP ${h.status}${h.contentType ? ` ${h.contentType}` : ''}`;
  const a = said(discover);
  const b = said(initialize);
  return a === b ? `${a} to server/discover and initialize` : `${a} to server/discover, ${b} to initialize`;
}

/**
 * The 2025-11-25 side of an upstream that answered `server/discover` (`legacyUnasked`): one `initialize` exactly as a
 * 2025-11-25 client sends it (2025-11-25 basic/lifecycle §Initialization: no `_meta`, no `Mcp-Method`, no
 * `MCP-Protocol-Version` before a version is negotiated). A dual-era server routes a request by those markers (the
 * conformance reference server sends any POST with 2026-07-28 `_meta` to its 2026-07-28 handler, which refuses
 * `initialize` with -32022), so a marked `initialize` would hide its 2025-11-25 side; a modern-only server refuses the
 * unmarked one too (400, -32022 or -32602), which is still "no". Resolves with what it learned (`legacy`,
 * `identity`); throws as `probeUpstream` does when no answer came.
 */
export async function probeLegacy(target: ProbeTarget, signal?: AbortSignal, authorization?: string): Promise<Pick<UpstreamEras, 'legacy' | 'identity'>> {
  if (authorization) target = { ...target, headers: withAuthorization(target.headers, authorization) };
  const answer = await askInitialize(target, signal);
  return answer.identity ? { legacy: true, identity: answer.identity } : { legacy: false };
}

/**
 * `server/discover` with the full modern envelope and headers (2026-07-28 basic/transports/streamable-http
 * §Sending Messages). A `DiscoverResult` listing 2026-07-28 means modern, and so does a recognised modern error:
 * the server spoke 2026-07-28 and only refused this request (same page, §Backward Compatibility; the fallback
 * must not hang on one code). Any other answer (a legacy server's 400 "no valid session", 404, 405) means not.
 */
async function askDiscover(target: ProbeTarget, signal?: AbortSignal, retried = false): Promise<Heard & { modern: boolean; result?: JsonObject }> {
  const answer = await ask(
    target,
    modernHeaders('server/discover', undefined),
    {
      jsonrpc: '2.0',
      id: retried ? 'gateway-probe-discover-2' : 'gateway-probe-discover',
      method: 'server/discover',
      params: withEnvelope(undefined, { capabilities: {}, clientInfo: CLIENT_INFO }),
    },
    signal,
  );
  const message = answer.message;
  const heard = heardOf(answer);
  if (isErrorResponse(message)) {
    const modern = speaksModern(message.error.code, message.error.data);
    // -32022 listing our version among those it supports (2026-07-28 basic/versioning §Negotiation): asked again once
    // with that version, the best (the only 2026-07-28 version) of the list, so that its DiscoverResult is learned.
    if (!retried && refusedListingOurVersion(message.error)) return askDiscover(target, signal, true);
    return { modern, ...heard };
  }
  if (!isResponse(message) || !answer.ok || !('result' in message) || !isObject(message.result)) return { modern: false, ...heard };
  const versions = message.result.supportedVersions;
  return Array.isArray(versions) && versions.includes(MODERN_VERSION) ? { modern: true, result: message.result, ...heard } : { modern: false, ...heard };
}

/** `headers` with `authorization` as their one Authorization header (whatever the case of a configured one). */
function withAuthorization(headers: Record<string, string>, authorization: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== 'authorization') out[k] = v;
  out.authorization = authorization;
  return out;
}

/** Whether a JSON-RPC error to `server/discover` comes from a server that speaks 2026-07-28. */
function speaksModern(code: number, data: unknown): boolean {
  if (code === ErrorCode.HeaderMismatch || code === ErrorCode.MissingRequiredClientCapability) return true;
  // -32022 names the versions it does speak: modern, but of use only if ours is among them.
  return refusedListingOurVersion({ code, data });
}

/**
 * `initialize` for 2025-11-25 as a 2025-11-25 client sends it (2025-11-25 basic/lifecycle §Initialization): the
 * params alone, no 2026-07-28 marker in body or headers. An `InitializeResult` for a 2025-era version means legacy;
 * the session it opened is ended at once with DELETE (best effort: the upstream expires idle sessions itself).
 */
async function askInitialize(target: ProbeTarget, signal: AbortSignal | undefined): Promise<Heard & { identity?: UpstreamIdentity }> {
  const params: JsonObject = { protocolVersion: LEGACY_VERSION, capabilities: {}, clientInfo: CLIENT_INFO };
  const answer = await ask(target, {}, { jsonrpc: '2.0', id: 'gateway-probe-initialize', method: 'initialize', params }, signal);
  if (answer.sessionId) endSession(target, answer.sessionId, answer.message);
  const message = answer.message;
  const heard = heardOf(answer);
  if (!answer.ok || !isResponse(message) || !('result' in message)) return heard;
  const identity = identityFromInitialize(message.result);
  return identity && LEGACY_VERSIONS.includes(identity.protocolVersion) ? { identity, ...heard } : heard;
}

/** DELETE for the probe's session (2025-11-25 basic/transports §Session Management), not awaited. */
function endSession(target: ProbeTarget, sessionId: string, message: unknown): void {
  const result = isResponse(message) && 'result' in message && isObject(message.result) ? message.result : undefined;
  const version = typeof result?.protocolVersion === 'string' ? result.protocolVersion : LEGACY_VERSION;
  exchange(target.url, {
    method: 'DELETE',
    headers: { ...target.headers, 'mcp-session-id': sessionId, 'mcp-protocol-version': version },
    signal: AbortSignal.timeout(5_000),
  })
    .then((res) => res.discard())
    .catch(logFailure(target.log ?? NO_LOG, 'debug', "DELETE of the probe's session failed; the upstream expires it"));
}

/** One probe exchange's answer: its first JSON-RPC response (JSON or SSE), status, media type and session id. */
interface Asked {
  ok: boolean;
  status: number;
  contentType: string | undefined;
  sessionId: string | undefined;
  message: unknown;
}

/** What an answer was, as `Heard`: the media type without parameters, bounded (it is shown to operators). */
function heardOf(answer: Asked): Heard {
  const type = answer.contentType?.split(';')[0]?.trim().toLowerCase().slice(0, 100);
  return { status: answer.status, contentType: type || undefined, jsonRpc: answer.message !== undefined };
}

/** One probe exchange. */
async function ask(target: ProbeTarget, headers: Record<string, string>, body: JsonObject, signal: AbortSignal | undefined): Promise<Asked> {
  const timeout = AbortSignal.timeout(target.timeoutMs);
  const both = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let res: UpstreamResponse;
  try {
    res = await exchange(target.url, {
      method: 'POST',
      headers: { ...target.headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
      signal: both,
    });
  } catch (cause) {
    throw fetchFailure(cause, signal, timeout);
  }
  if (res.status === 503) {
    // Temporarily unavailable (RFC 9110 §15.6.4; an stdio upstream whose process is restarting): no answer about
    // eras, so the probe fails and is retried, rather than learning that the upstream speaks neither.
    await res.discard();
    throw new UpstreamUnavailableError('upstream answered HTTP 503', { reason: 'HTTP 503' });
  }
  const sessionId = res.header('mcp-session-id');
  const contentType = res.header('content-type');
  let message: unknown;
  try {
    // The first response ends the read: an SSE answer need not close its stream for the probe to go on.
    for await (const m of res.messages()) {
      if (isResponse(m)) {
        message = m;
        break;
      }
    }
  } catch (cause) {
    // An unreadable body (not JSON, broken stream) is still an answer; only a timeout is not.
    if (timeout.aborted || signal?.aborted) throw fetchFailure(cause, signal, timeout);
  } finally {
    await res.discard();
  }
  return { ok: res.ok, status: res.status, contentType, sessionId, message };
}
