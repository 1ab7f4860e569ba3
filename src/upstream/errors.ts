/** Upstream failures, each keeping its cause (undici/fetch errors, HTTP statuses). */

/** The upstream could not be reached, or broke the connection (→ 502). */
export class UpstreamUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpstreamUnavailableError';
  }
}

/** The upstream did not answer within its budget (→ 504). */
export class UpstreamTimeoutError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpstreamTimeoutError';
  }
}

/** The upstream answered with an HTTP status that carries no JSON-RPC message (→ 502). */
export class UpstreamHttpError extends Error {
  constructor(readonly status: number, readonly bodyText: string, options?: { cause?: unknown }) {
    super(`upstream answered HTTP ${status}`, options);
    this.name = 'UpstreamHttpError';
  }
}

/**
 * The upstream no longer knows our session (HTTP 404 with a session id, 2025-11-25 basic/transports §Session
 * Management): re-initialize and retry.
 */
export class SessionExpiredError extends Error {
  constructor() {
    super('upstream session expired');
    this.name = 'SessionExpiredError';
  }
}

/** The gateway's own bound on upstream sessions is reached (→ 503). */
export class UpstreamBusyError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UpstreamBusyError';
  }
}

/**
 * The upstream no longer knows a task it created (expired, or lost with its session; 2025-11-25
 * basic/utilities/tasks §Protocol Errors, tasks extension §Protocol Errors: -32602 for an unknown id).
 */
export class UpstreamTaskLostError extends Error {
  constructor(readonly upstreamTaskId: string, options?: { cause?: unknown }) {
    super(`the upstream no longer knows task ${upstreamTaskId}`, options);
    this.name = 'UpstreamTaskLostError';
  }
}

/** Maps a failed exchange to the right upstream error, given the signals that may have fired. */
export function fetchFailure(cause: unknown, caller?: AbortSignal, timeout?: AbortSignal): Error {
  if (caller?.aborted) return caller.reason instanceof Error ? caller.reason : new Error('aborted', { cause });
  // undici's own headers deadline (`headersTimeoutMs` of an exchange) is a timeout like the caller's.
  if (timeout?.aborted || (cause as { code?: unknown } | undefined)?.code === 'UND_ERR_HEADERS_TIMEOUT') {
    return new UpstreamTimeoutError('upstream did not answer in time', { cause });
  }
  return new UpstreamUnavailableError(`upstream unreachable: ${(cause as Error)?.message ?? String(cause)}`, { cause });
}
