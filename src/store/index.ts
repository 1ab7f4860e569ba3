/** Task state: the store contract and its implementations. */
export { StoreFullError, type TaskListQuery, type TaskStore, type UpdateFailure } from './task-store.js';
export { MemoryTaskStore, type MemoryStoreOptions } from './memory-store.js';
