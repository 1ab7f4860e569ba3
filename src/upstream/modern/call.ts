/**
 * One call to a 2026-07-28 upstream as its consumer sees it: the queue of its events, the input requests of its open
 * MRTR round and their answers, the reading of an exchange's stream up to its response, and how its abort reads as an
 * error (client.ts drives it).
 */
import {
  errorResponse,
  GatewayError,
  INPUT_KEY_HINT,
  isErrorResponse,
  isNotification,
  isObject,
  isResponse,
  type InputRequest,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcResponse,
  type RequestId,
} from '../../translate/index.js';
import { QueuedCall } from '../call-queue.js';
import type { UpstreamCall } from '../client.js';
import { UpstreamTimeoutError, UpstreamUnavailableError } from '../errors.js';
import { ExchangeStop } from '../http.js';

/**
 * What stops one call: undici takes it as its exchanges' signal (an EventEmitter that emits `abort`), and an
 * `AbortSignal` is made only for whoever needs one (a tool schema read again mid-call). Node 20's AbortController costs
 * 3-6 us to create, and one per call (beside the caller's own) showed in the translated path's profile.
 */
export class CallStop extends ExchangeStop {
  private controller: AbortController | undefined;

  get signal(): AbortSignal {
    if (this.controller === undefined) {
      const c = new AbortController();
      this.controller = c;
      if (this.aborted) c.abort(this.reason);
      else this.once('abort', () => c.abort(this.reason));
    }
    return this.controller.signal;
  }
}

/** One call to a modern upstream: a queue of events, and the answers of the current MRTR round. */
export class ModernCall extends QueuedCall implements UpstreamCall {
  private stopped = false;
  /** The open round: event id → the upstream's key and, once given, the answer. */
  private round: Map<string, { key: string; answer?: JsonObject }> | undefined;
  private roundDone: (() => void) | undefined;

  constructor(
    readonly requestId: RequestId,
    readonly stop: CallStop,
  ) {
    super();
  }

  protected override onFinal(): void {
    this.roundDone?.();
  }

  /**
   * @internal Emits a round's input requests and resolves with the answers by the upstream's keys once all are
   * given; `undefined` when the call ends first. Waits as long as the consumer does: its budget bounds it.
   */
  async ask(round: number, requests: Record<string, InputRequest>): Promise<JsonObject | undefined> {
    if (this.finished) return undefined;
    if (this.stop.aborted) {
      // Aborted between the upstream's answer and this round: the abort event has fired already.
      this.push({ kind: 'failure', error: abortReason(this.stop) });
      return undefined;
    }
    const slots = new Map<string, { key: string; answer?: JsonObject }>();
    for (const key of Object.keys(requests)) slots.set(`${round}:${key}`, { key });
    if (slots.size === 0) return {}; // a round of requestState only: retried at once (MRTR §Client Requirements)
    const done = new Promise<void>((resolve) => {
      this.roundDone = resolve;
    });
    this.round = slots;
    for (const [eventId, { key }] of slots) {
      const req = requests[key] as InputRequest;
      const meta = isObject(req.params?._meta) ? req.params._meta : {};
      this.push({
        kind: 'request',
        message: { jsonrpc: '2.0', id: eventId, method: req.method, params: { ...(req.params ?? {}), _meta: { ...meta, [INPUT_KEY_HINT]: key } } },
      });
    }
    const onAbort = () => this.roundDone?.();
    this.stop.once('abort', onAbort);
    try {
      await done;
    } finally {
      this.stop.off('abort', onAbort);
      this.round = undefined;
      this.roundDone = undefined;
    }
    if (this.finished || this.stop.aborted) {
      if (!this.finished) this.push({ kind: 'failure', error: abortReason(this.stop) });
      return undefined;
    }
    const answers: JsonObject = {};
    for (const { key, answer } of slots.values()) answers[key] = answer;
    return answers;
  }

  /** Answers an input request of the current round; a JSON-RPC error ends the call with it (see the module doc). */
  async respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void> {
    const slot = this.round?.get(String(id));
    if (!slot || slot.answer !== undefined) throw new Error(`no open input request ${String(id)} on this call`);
    if ('error' in payload) {
      this.push({ kind: 'response', message: errorResponse(this.requestId, payload.error) });
      return;
    }
    slot.answer = payload.result;
    if ([...(this.round?.values() ?? [])].every((s) => s.answer !== undefined)) this.roundDone?.();
  }

  /** Cancels the call: the in-flight POST is aborted, which a 2026-07-28 server takes as cancellation. */
  cancel(reason: string): void {
    this.abandon(reason);
  }

  /** Same as `cancel()`: closing the stream is the only way to leave a 2026-07-28 request (see the module doc). */
  abandon(reason: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.push({ kind: 'failure', error: new Error(`cancelled: ${reason}`) });
    this.stop.abort(new Error(reason));
  }
}

/**
 * Reads messages until the response to `id`, queueing notifications on the call. A server→client request is
 * skipped: a 2026-07-28 server MUST NOT send one (§Receiving Messages) and a client has no way to answer it.
 */
export async function readResponse(
  call: ModernCall,
  messages: AsyncIterable<unknown> | Iterable<unknown>,
  id: RequestId,
): Promise<JsonRpcResponse | undefined> {
  try {
    for await (const m of messages) {
      if (isResponse(m)) {
        if (m.id === id || (m.id === null && isErrorResponse(m))) return m;
        continue;
      }
      if (isNotification(m)) call.push({ kind: 'notification', message: m });
    }
  } catch (cause) {
    if (call.finished) return undefined;
    if (call.stop.aborted) throw abortReason(call.stop, cause);
    // A message refused as unusable (nested too deep) says so; anything else broke the stream.
    if (cause instanceof GatewayError) throw cause;
    throw new UpstreamUnavailableError('upstream stream broke', { cause });
  }
  return undefined;
}

/** The error a call ends with when its signal aborted: a timeout (with its cause), or the abort reason. */
export function abortReason(signal: { readonly reason: unknown }, cause?: unknown): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof UpstreamTimeoutError) return new UpstreamTimeoutError(reason.detail, { cause: cause ?? reason });
  return reason instanceof Error ? reason : new Error('aborted', { cause });
}

/** Resolves with `p`, or rejects with the signal's reason when it aborts first. */
export async function raceSignal<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) throw abortReason(signal);
  let onAbort: (() => void) | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        onAbort = () => reject(abortReason(signal));
        signal.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}
