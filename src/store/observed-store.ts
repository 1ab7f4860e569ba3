/**
 * A store that tells how long each call took and which failed to an observer (the metrics' store latency histogram and
 * error counter) and is otherwise the store it wraps: every call goes through unchanged, its result or rejection
 * untouched. One wrapper at the composition root sees every store call of every layer, so that no caller has to
 * remember to count.
 */
import { GatewayError } from '../translate/index.js';
import { TaskIdClashError, type TaskStore } from './task-store.js';

/**
 * Told of one failed store call: the contract method (a fixed set, so a bounded label) and the failure's catalog
 * kind (`GW_STORE_UNAVAILABLE`, `GW_STORE_FULL`), or `other`.
 */
export interface StoreObserver {
  /** One failed call, by contract method (a fixed set, so a bounded label) and catalog kind, or `other`. */
  error(operation: string, kind: string): void;
  /** One settled call (resolved or rejected) and how long it took, in seconds. */
  duration(operation: string, seconds: number): void;
}

/**
 * `store` with every call's duration and every rejected call told to `observe`. An id clash is not a store failure (a
 * minting bug or a replay the runtimes handle) and is not told as one.
 */
export function observeStore(store: TaskStore, observe: StoreObserver): TaskStore {
  const timed = (operation: string, start: number) => {
    try {
      observe.duration(operation, (performance.now() - start) / 1000);
    } catch {
      // An observer's fault must not change what the caller gets.
    }
  };
  const told = (operation: string, start: number) => (e: unknown) => {
    timed(operation, start);
    if (!(e instanceof TaskIdClashError)) {
      try {
        observe.error(operation, e instanceof GatewayError ? e.kind : 'other');
      } catch {
        // As above.
      }
    }
    throw e;
  };
  const wrapped = new Map<PropertyKey, unknown>();
  return new Proxy(store, {
    get(target, prop) {
      const value: unknown = Reflect.get(target, prop, target);
      if (typeof value !== 'function' || prop === 'constructor') return value;
      let fn = wrapped.get(prop);
      if (!fn) {
        const name = String(prop);
        fn = (...args: unknown[]) => {
          const start = performance.now();
          const out: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
          if (!(out instanceof Promise)) return out;
          return out.then(
            (v: unknown) => {
              timed(name, start);
              return v;
            },
            told(name, start),
          );
        };
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
}
