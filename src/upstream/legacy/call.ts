/** One in-flight request on a legacy (2025-11-25) session: its events, its answers to the server, its cancellation. */
import { logFailure, type JsonObject, type JsonRpcErrorObject, type LayerLogger, type RequestId } from '../../translate/index.js';
import { QueuedCall } from '../call-queue.js';
import type { UpstreamCall } from '../client.js';
import type { UpstreamResponse } from '../http.js';

/** What a call needs of its session: answering the server's requests, notifying it, its log. */
export interface CallSession {
  respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void>;
  notify(method: string, params: JsonObject): Promise<void>;
  readonly log: LayerLogger;
}

/** One in-flight request on a legacy session: pull its events with `next()`; `cancel()` stops it. */
export class LegacyCall extends QueuedCall implements UpstreamCall {
  private cancelled = false;

  /** The answer being read, once its headers arrived: dropping the call drops its body. */
  private response: UpstreamResponse | undefined;

  /** Aborted when the call is dropped; made only for a call whose stream is being resumed (rare). */
  private dropped: AbortController | undefined;

  constructor(
    private readonly session: CallSession,
    readonly requestId: RequestId,
    private readonly onFinish?: () => void,
  ) {
    super();
  }

  /** The answer whose body this call reads (a call is handed out only once its answer's headers arrived). */
  attach(response: UpstreamResponse): void {
    this.response = response;
    if (this.cancelled) response.cancel();
  }

  /** Aborts once the call is dropped (cancelled or abandoned): its stream's resumption stops with it. */
  get dropSignal(): AbortSignal {
    this.dropped ??= new AbortController();
    if (this.cancelled) this.dropped.abort(new Error('call dropped'));
    return this.dropped.signal;
  }

  protected override onFinal(): void {
    this.onFinish?.();
    // A resumption still under way has nothing left to bring (the response came another way).
    this.dropped?.abort(new Error('call finished'));
  }

  /** Answers a server→client request that arrived on this call's stream. */
  respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void> {
    return this.session.respond(id, payload);
  }

  /**
   * Cancels the call: `notifications/cancelled` to the upstream (2025-11-25 basic/transports: the legacy way; closing
   * the stream is not a cancellation there), then the stream is dropped. Idempotent.
   */
  cancel(reason: string): void {
    if (this.cancelled) return;
    // Unless the upstream already answered, tell it (a broken stream does not stop the work upstream).
    if (this.finalEvent?.kind !== 'response') {
      this.session
        .notify('notifications/cancelled', { requestId: this.requestId, reason })
        .catch(logFailure(this.session.log, 'debug', 'cancellation not delivered upstream'));
    }
    this.abandon(reason);
  }

  /** Drops the stream without telling the upstream (for waits that must not cancel anything). Idempotent. */
  abandon(reason: string): void {
    if (this.cancelled) return;
    this.cancelled = true;
    this.push({ kind: 'failure', error: new Error(`cancelled: ${reason}`) });
    this.response?.cancel();
    this.dropped?.abort(new Error(`cancelled: ${reason}`));
  }
}
