/** Task state: the store contract and its implementations. */
export { StoreUnavailableError, type SharedValues, type TaskStore } from './task-store.js';
export { MemoryTaskStore } from './memory-store.js';
export { RedisTaskStore } from './redis-store.js';
export { PostgresTaskStore } from './postgres-store.js';
export { SCHEMA_VERSION } from './postgres-schema.js';
export { observeStore } from './observed-store.js';
