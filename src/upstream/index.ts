/** Clients of upstream MCP servers: era probe, legacy sessions and their pool. */
export * from './errors.js';
export * from './messages.js';
export * from './legacy-session.js';
export * from './pool.js';
export * from './probe.js';
export * from './client.js';
export * from './legacy-client.js';
