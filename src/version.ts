/** The gateway's name and version, as it introduces itself upstream. */
export const GATEWAY_NAME = 'mcp-tasks-gateway';
export const GATEWAY_VERSION = '0.1.0';
