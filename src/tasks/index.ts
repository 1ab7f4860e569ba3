/** The runtime: forwarding with the MRTR bridge, listen streams (and, with the task issues, tasks). */
export * from './route.js';
export * from './conversation.js';
export * from './mrtr-bridge.js';
export * from './listen-bridge.js';
export * from './task-runtime.js';
