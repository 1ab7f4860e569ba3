/** Task state: the store contract and its implementations. */
export {
  StoreFullError,
  StoreUnavailableError,
  TaskIdClashError,
  updateByReplace,
  type CounterHit,
  type ExpiredLease,
  type ReplaceResult,
  type SharedValues,
  type StoreLimits,
  type TaskListQuery,
  type TaskStore,
  type UpdateFailure,
} from './task-store.js';
export { MemoryTaskStore, type MemoryStoreOptions } from './memory-store.js';
export { RedisTaskStore, type RedisStoreOptions } from './redis-store.js';
export { observeStore, type StoreErrorObserver } from './observed-store.js';
