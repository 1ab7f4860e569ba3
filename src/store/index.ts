/** Task state: the store contract and its implementations. */
export { StoreUnavailableError, type SharedValues, type TaskStore } from './task-store.js';
export { MemoryTaskStore } from './memory-store.js';
export { RedisTaskStore } from './redis-store.js';
export { observeStore } from './observed-store.js';
