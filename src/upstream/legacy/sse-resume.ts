/**
 * Resuming an SSE stream a 2025-11-25 server closed before it was done (2025-11-25 basic/transports §Sending Messages
 * to the Server, item 6, and §Resumability and Redelivery): after an event with an id, the server may close the
 * connection without ending the stream, and the client reconnects with GET and `Last-Event-ID`, waiting the `retry`
 * the server last gave. This applies to a POST's answer stream (a call, a `tasks/result`) and to the session's GET
 * stream alike; the resumed stream carries the rest of the disconnected one.
 */
import { refusedConnection, UpstreamUnavailableError } from '../errors.js';
import type { SseCursor, UpstreamResponse } from '../http.js';

/** Reconnection delay when the server gave no `retry` (the SSE default is the client's choice; kept small). */
const DEFAULT_RESUME_DELAY_MS = 1_000;

/** Reconnections in a row that may bring no event (failed, refused for a passing reason, or ended empty). */
export const MAX_RESUME_ATTEMPTS = 3;

/**
 * Statuses of a transient refusal: the attempt counts, the next one may succeed (409: the server still holds the
 * previous connection of the stream). Any other 4xx refuses resumption for good (405: the server offers no GET
 * stream; 404: it forgot the session or the stream; 400: it cannot place the event id).
 */
const TRANSIENT = new Set([408, 409, 425, 429]);

/** What a resumption needs from its session. */
export interface ResumeTarget {
  /** Sends the GET with `Last-Event-ID: lastEventId`; resolves with the answer once its headers arrived. */
  reconnect(lastEventId: string, signal: AbortSignal): Promise<UpstreamResponse>;
  /** Aborts the waits and the reconnections (the call was dropped, the session closed). */
  signal: AbortSignal;
  /** Longest wait before a reconnection, whatever `retry` asks (the call's budget). */
  maxDelayMs: number;
  /** What ended, for the failure's message, e.g. "upstream closed the stream before answering". */
  what: string;
}

/**
 * Follows one logical stream across its connections: `cursor` is read by whoever reads the messages of each
 * connection, `next()` gives the following connection once one ended.
 */
export class SseResumption {
  /** Connections in a row that brought no event, counted from the last one that did. */
  private idle = 0;
  /** `cursor.events` when the current connection was opened. */
  private eventsAtOpen = 0;

  /** `cursor`: the stream's, as its reader moves it (the connection that ended included). */
  constructor(
    readonly cursor: SseCursor,
    private readonly target: ResumeTarget,
  ) {}

  /**
   * The next connection of the stream, once the current one ended (closed or broke): reconnects after `retry`, up to
   * MAX_RESUME_ATTEMPTS times in a row without an event. Throws UpstreamUnavailableError saying why resumption failed
   * (none possible, refused, nobody listening, or attempts spent), or the signal's reason once it aborted.
   */
  async next(): Promise<UpstreamResponse> {
    for (;;) {
      const lastEventId = this.cursor.lastEventId;
      if (lastEventId === undefined) throw new UpstreamUnavailableError(this.target.what);
      this.idle = this.cursor.events > this.eventsAtOpen ? 1 : this.idle + 1;
      if (this.idle > MAX_RESUME_ATTEMPTS) {
        throw new UpstreamUnavailableError(`${this.target.what}; resuming it (Last-Event-ID ${lastEventId}) failed ${MAX_RESUME_ATTEMPTS} times in a row`);
      }
      await this.pause();
      this.eventsAtOpen = this.cursor.events;
      let res: UpstreamResponse;
      try {
        res = await this.target.reconnect(lastEventId, this.target.signal);
      } catch (e) {
        if (this.target.signal.aborted) throw e;
        // Nobody listens any more: the server is gone, not polling us (a broken connection is an attempt spent).
        if (refusedConnection(e)) throw new UpstreamUnavailableError(`${this.target.what}; resuming it failed: ${e.detail}`, { cause: e });
        continue;
      }
      if (res.ok) return res;
      await res.discard();
      if (res.status < 500 && !TRANSIENT.has(res.status)) {
        throw new UpstreamUnavailableError(`${this.target.what}; the upstream refused to resume it (HTTP ${res.status} to GET with Last-Event-ID)`);
      }
    }
  }

  /** Waits the server's `retry` (2025-11-25 basic/transports: the client MUST respect it), bounded by the budget. */
  private pause(): Promise<void> {
    const ms = Math.min(this.cursor.retryMs ?? DEFAULT_RESUME_DELAY_MS, this.target.maxDelayMs);
    const signal = this.target.signal;
    return new Promise<void>((resolve, reject) => {
      if (signal.aborted) {
        reject(signal.reason);
        return;
      }
      const onAbort = () => {
        clearTimeout(timer);
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
