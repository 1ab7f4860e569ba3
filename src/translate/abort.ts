/** Waiting on shared work with a caller's own abort signal. */

/**
 * `p`, or a rejection with the signal's reason when it aborts first. The work behind `p` goes on for whoever else
 * awaits it: a shared request (one for a burst of callers) is not ended by one caller going away.
 */
export function raceAbort<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  const reasonOf = () => (signal.reason instanceof Error ? signal.reason : new Error('aborted'));
  if (signal.aborted) return Promise.reject(reasonOf());
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(reasonOf());
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}
