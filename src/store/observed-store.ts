/**
 * A store that tells its failures to an observer (the metrics' store error counter) and is otherwise the store it
 * wraps: every call goes through unchanged, its result or rejection untouched. One wrapper at the composition root
 * sees every store call of every layer, so that no caller has to remember to count.
 */
import { GatewayError } from '../translate/index.js';
import { TaskIdClashError, type TaskStore } from './task-store.js';

/**
 * Told of one failed store call: the contract method (a fixed set, so a bounded label) and the failure's catalog
 * kind (`GW_STORE_UNAVAILABLE`, `GW_STORE_FULL`), or `other`.
 */
export type StoreErrorObserver = (operation: string, kind: string) => void;

/**
 * `store` with every rejected call told to `observe`. An id clash is not a store failure (a minting bug or a replay
 * the runtimes handle) and is not told.
 */
export function observeStore(store: TaskStore, observe: StoreErrorObserver): TaskStore {
  const told = (operation: string) => (e: unknown) => {
    if (!(e instanceof TaskIdClashError)) {
      try {
        observe(operation, e instanceof GatewayError ? e.kind : 'other');
      } catch {
        // An observer's fault must not change what the caller gets.
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
          const out: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
          return out instanceof Promise ? out.catch(told(name)) : out;
        };
        wrapped.set(prop, fn);
      }
      return fn;
    },
  });
}
