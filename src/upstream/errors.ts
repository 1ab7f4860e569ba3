/**
 * Upstream failures, each keeping its cause (undici/fetch errors, HTTP statuses). Those a client can get are
 * `GatewayError`s naming their catalog entry (src/translate/error-catalog.ts); `detail` keeps what the operator log
 * needs beyond the catalog's message.
 */
import { GatewayError } from '../translate/index.js';

/**
 * The upstream could not be reached, or broke the connection (GW_UPSTREAM_UNAVAILABLE, 502). `reason`, when given, is
 * what an operator may be shown of it (`/healthz`): no address, no URL.
 */
export class UpstreamUnavailableError extends GatewayError {
  readonly reason: string | undefined;
  constructor(
    readonly detail: string,
    options?: { cause?: unknown; reason?: string },
  ) {
    super('GW_UPSTREAM_UNAVAILABLE', { args: [detail], cause: options?.cause });
    this.reason = options?.reason;
  }
}

/**
 * The upstream answered both era questions, and neither answer was MCP JSON-RPC (a wrong path's 404 page, a web
 * server's HTML): something listens there, but not an MCP server (GW_UPSTREAM_UNAVAILABLE, 502). `reason` says what it
 * answered, e.g. "HTTP 404 text/html to server/discover and initialize".
 */
export class UpstreamNotMcpError extends UpstreamUnavailableError {
  constructor(reason: string) {
    super(`no MCP answer: ${reason}`, { reason });
  }
}

/** Why an upstream is down, for operators (`/healthz`, the log): what it answered, or how it failed; never an address. */
export function downReason(e: unknown): string {
  if (e instanceof UpstreamUnavailableError && e.reason !== undefined) return e.reason;
  if (e instanceof UpstreamTimeoutError) return 'no answer in time';
  if (refusedConnection(e)) return 'connection refused';
  return 'unreachable';
}

/** The upstream did not answer within its budget (GW_UPSTREAM_TIMEOUT, 504). */
export class UpstreamTimeoutError extends GatewayError {
  constructor(
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super('GW_UPSTREAM_TIMEOUT', { cause: options?.cause });
  }
}

/** An upstream's `WWW-Authenticate` as it arrived: one value, or several when the header was repeated. */
export type Challenge = string | string[];

/**
 * The upstream answered with an HTTP status that carries no JSON-RPC message (GW_UPSTREAM_HTTP, 502). A 401 or 403 is
 * the upstream judging the caller's credentials, not an upstream failure: GW_UPSTREAM_UNAUTHORIZED (401) or
 * GW_UPSTREAM_FORBIDDEN (403), whose data carries the upstream's `WWW-Authenticate` unchanged (`challenge`), so that
 * the edge answers the client with the very challenge the upstream sent (2025-11-25 basic/authorization
 * §Authorization Server Discovery: the client reads `resource_metadata` from it).
 */
export class UpstreamHttpError extends GatewayError {
  readonly challenge: Challenge | undefined;
  constructor(
    readonly status: number,
    readonly bodyText: string,
    options?: { cause?: unknown; challenge?: Challenge | undefined },
  ) {
    const auth = status === 401 ? 'GW_UPSTREAM_UNAUTHORIZED' : status === 403 ? 'GW_UPSTREAM_FORBIDDEN' : undefined;
    const challenge = options?.challenge;
    super(
      auth ?? 'GW_UPSTREAM_HTTP',
      auth
        ? { data: { status, ...(challenge !== undefined ? { wwwAuthenticate: challenge } : {}) }, cause: options?.cause }
        : { args: [status], cause: options?.cause },
    );
    this.challenge = challenge;
  }

  /** Whether the upstream refused the caller's credentials (401/403) rather than failed. */
  get refusedCredentials(): boolean {
    return this.status === 401 || this.status === 403;
  }
}

/**
 * The upstream no longer knows our session (HTTP 404 with a session id, 2025-11-25 basic/transports §Session
 * Management): re-initialize and retry. Internal: the pool retries on it and it never reaches a client as itself
 * (so a plain Error, not a catalog entry; one that escaped would be GW_INTERNAL).
 */
export class SessionExpiredError extends Error {
  constructor() {
    super('upstream session expired');
    this.name = 'SessionExpiredError';
  }
}

/** The gateway's own bound on upstream sessions is reached (GW_UPSTREAM_BUSY, 503). */
export class UpstreamBusyError extends GatewayError {
  constructor(
    readonly detail: string,
    options?: { cause?: unknown },
  ) {
    super('GW_UPSTREAM_BUSY', { args: [detail], cause: options?.cause });
  }
}

/**
 * The upstream no longer knows a task it created (expired, or lost with its session). The task runtimes turn it into
 * a failed task; one that reaches a client is an unknown task (GW_TASK_UNKNOWN: 2025-11-25 basic/utilities/tasks
 * §Protocol Errors, tasks extension §Protocol Errors: -32602 for an unknown id).
 */
export class UpstreamTaskLostError extends GatewayError {
  constructor(
    readonly upstreamTaskId: string,
    options?: { cause?: unknown },
  ) {
    super('GW_TASK_UNKNOWN', { cause: options?.cause });
  }
}

/** Maps a failed exchange to the right upstream error, given the signals that may have fired. */
export function fetchFailure(cause: unknown, caller?: { readonly aborted: boolean; readonly reason: unknown }, timeout?: AbortSignal): Error {
  if (caller?.aborted) return caller.reason instanceof Error ? caller.reason : new Error('aborted', { cause });
  // undici's own headers deadline (`headersTimeoutMs` of an exchange) is a timeout like the caller's.
  if (timeout?.aborted || (cause as { code?: unknown } | undefined)?.code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new UpstreamTimeoutError('upstream did not answer in time', { cause });
  }
  return new UpstreamUnavailableError(`upstream unreachable: ${withoutAddress(cause)}`, { cause });
}

/**
 * What a connection failure says without where it went (docs/errors.md: the client is never told the upstream's
 * address): its code (`ECONNREFUSED`, `ENOTFOUND`, `UND_ERR_SOCKET`, …) as the socket layer names it, else its message
 * with any host:port taken out.
 */
function withoutAddress(cause: unknown): string {
  for (let e = cause, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== '') return `connect ${code}`;
  }
  const text = cause instanceof Error ? cause.message : String(cause);
  return text.replace(/\s*(?:\[[0-9a-fA-F:.]+\]|[\w.-]+):\d+/g, '');
}

/** Whether a failure found nobody listening (connection refused): the upstream process is gone, not slow. */
export function refusedConnection(e: unknown): e is UpstreamUnavailableError {
  return e instanceof UpstreamUnavailableError && (e.cause as { code?: unknown } | undefined)?.code === 'ECONNREFUSED';
}
