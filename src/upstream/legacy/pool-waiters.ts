/**
 * The checkouts waiting for a pooled session while the pool's bounds are full: first come first served, each bounded
 * in time and by its signal, and given what comes free (a session, or the room for one) as the pool offers it.
 */

/** One waiting checkout: what it wants, and how it is settled. */
interface Waiter<T, W> {
  want: W;
  take(value: T): void;
  fail(e: Error): void;
}

/** A first-come-first-served queue of checkouts waiting for a `T`, each wanting a `W`. */
export class WaitQueue<T, W> {
  private readonly waiters: Array<Waiter<T, W>> = [];
  private serving = false;

  /** How many checkouts wait. */
  get length(): number {
    return this.waiters.length;
  }

  /**
   * Waits to be given a `T` for `want` (by `serve`), at most `boundMs` and while `signal` lets it; refused with
   * `refusal()` (asked when the time is up) or the signal's reason.
   */
  wait(want: W, signal: AbortSignal | undefined, boundMs: number, refusal: () => Error): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
      };
      const waiter: Waiter<T, W> = {
        want,
        take: (value) => {
          done();
          resolve(value);
        },
        fail: (e) => {
          done();
          reject(e);
        },
      };
      const onAbort = () => waiter.fail(signal?.reason instanceof Error ? signal.reason : new Error('aborted'));
      const timer = setTimeout(() => waiter.fail(refusal()), boundMs);
      timer.unref();
      signal?.addEventListener('abort', onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /**
   * Offers each waiting checkout, first come first served, what `give` has for it (`undefined`: nothing now), until
   * `stopped()`. Not reentered: what `give` frees on the way, the loop already sees.
   */
  serve(give: (want: W) => T | undefined, stopped: () => boolean): void {
    if (this.serving) return;
    this.serving = true;
    try {
      for (const w of [...this.waiters]) {
        if (stopped()) return;
        const value = give(w.want);
        if (value !== undefined) w.take(value);
      }
    } finally {
      this.serving = false;
    }
  }

  /** Refuses every waiting checkout with `e`. */
  failAll(e: Error): void {
    for (const w of [...this.waiters]) w.fail(e);
  }
}
