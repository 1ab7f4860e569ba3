/** The runtime: forwarding with the MRTR bridge, listen streams, the call decision and the task lifecycles. */
export * from './route.js';
export * from './conversation.js';
export * from './call-decision.js';
export * from './mrtr-bridge.js';
export * from './listen-bridge.js';
export * from './task-limits.js';
export * from './task-events.js';
export * from './owned-tasks.js';
export * from './proxied-tasks.js';
export * from './task-service.js';
export * from './task-runtime.js';
/** Store errors the edge maps, re-exported so the edge depends on the runtime only. */
export { StoreFullError } from '../store/index.js';
