/** The event queue every `UpstreamCall` is built on, whatever produces its events. */
import type { Span } from '@opentelemetry/api';
import type { CallEvent } from './client.js';
import { endClientSpan } from './tracing.js';

/**
 * Events pushed by whatever reads the upstream, pulled by the consumer with `next()`/`nextUnless()`. The final
 * event (a response, a task or a failure) ends the queue: later pushes are ignored, and it is returned again to every
 * later pull. One consumer at a time, as the `UpstreamCall` contract has it.
 */
export abstract class QueuedCall {
  private readonly queue: CallEvent[] = [];
  private waiter: ((e: CallEvent) => void) | undefined;
  private terminal: CallEvent | undefined;
  /** The call's CLIENT span (with an SDK only), ended with the final event. */
  private span: Span | undefined;

  /** Whether the final event has been produced. */
  get finished(): boolean {
    return this.terminal !== undefined;
  }

  /** Events queued and not yet taken (used to gather concurrent input requests without waiting). */
  get pending(): number {
    return this.queue.length;
  }

  /** The final event, once produced. */
  protected get finalEvent(): CallEvent | undefined {
    return this.terminal;
  }

  /** Called once, when the final event is pushed (before the consumer sees it). */
  protected onFinal(): void {}

  /** Ends `span` with this call's final event (at once if it has already been produced). */
  traceWith(span: Span | undefined): void {
    if (span === undefined) return;
    if (this.terminal) endClientSpan(span, this.terminal);
    else this.span = span;
  }

  /** Queues an event; nothing after the final one. */
  push(event: CallEvent): void {
    if (this.terminal) return;
    if (event.kind === 'response' || event.kind === 'failure' || event.kind === 'task') {
      this.terminal = event;
      this.onFinal();
      if (this.span) {
        endClientSpan(this.span, event);
        this.span = undefined;
      }
    }
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w(event);
    } else {
      this.queue.push(event);
    }
  }

  /** The next event; after the final one, the final one again. */
  next(): Promise<CallEvent> {
    return this.nextUnless(undefined, undefined) as Promise<CallEvent>;
  }

  /**
   * The next event, or `undefined` if `ms` pass or `signal` aborts first. An event that arrives later is not
   * lost: it stays queued for the next pull.
   */
  nextUnless(ms: number | undefined, signal: AbortSignal | undefined): Promise<CallEvent | undefined> {
    const e = this.queue.shift();
    if (e) return Promise.resolve(e);
    if (this.terminal) return Promise.resolve(this.terminal);
    if (signal?.aborted) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (ev: CallEvent | undefined) => {
        if (timer) clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (this.waiter === waiter) this.waiter = undefined;
        resolve(ev);
      };
      const waiter = (ev: CallEvent) => done(ev);
      const onAbort = () => done(undefined);
      this.waiter = waiter;
      if (ms !== undefined) timer = setTimeout(() => done(undefined), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
