/** Task state: the store contract and its implementations. */
export * from './task-store.js';
export * from './memory-store.js';
