/** The HTTP edge: Fastify app, MCP endpoints for both eras, host checks, error mapping. */
export * from './host-check.js';
export * from './principal.js';
export * from './errors.js';
export * from './response.js';
export * from './mcp-endpoint.js';
export * from './server.js';
export * from './legacy-face-sessions.js';
export * from './legacy-face.js';
