/**
 * Protocol constants of both eras (2025-11-25 basic/lifecycle, 2026-07-28 basic/versioning; codes: 2026-07-28 basic
 * §Error Codes).
 */

/** The modern revision the gateway serves to clients. */
export const MODERN_VERSION = '2026-07-28';
/** The legacy revision the gateway speaks to upstreams that need `initialize`. */
export const LEGACY_VERSION = '2025-11-25';
/** Modern versions the gateway's client face accepts. */
export const SUPPORTED_MODERN_VERSIONS: readonly string[] = [MODERN_VERSION];
/**
 * Legacy versions that mark a request as belonging to the legacy era (2025-11-25 basic/transports §Protocol Version
 * Header).
 */
export const LEGACY_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07'];

/** Reserved `_meta` keys of the modern per-request envelope (2026-07-28 schema `RequestMetaObject`). */
export const META = {
  protocolVersion: 'io.modelcontextprotocol/protocolVersion',
  clientCapabilities: 'io.modelcontextprotocol/clientCapabilities',
  clientInfo: 'io.modelcontextprotocol/clientInfo',
  logLevel: 'io.modelcontextprotocol/logLevel',
  serverInfo: 'io.modelcontextprotocol/serverInfo',
  subscriptionId: 'io.modelcontextprotocol/subscriptionId',
  relatedTask: 'io.modelcontextprotocol/related-task',
} as const;

/** The tasks extension identifier (tasks extension §Capability Negotiation). */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';

/** JSON-RPC error codes the gateway emits or maps (2026-07-28 basic §Error Codes). */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** Legacy "resource not found"; MUST NOT be sent on the modern era. */
  LegacyResourceNotFound: -32002,
  /** Legacy URL elicitation required; MUST NOT be sent on the modern era. */
  LegacyUrlElicitationRequired: -32042,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const;

/** The log levels in increasing severity (2025-11-25 server/utilities/logging §Log Levels, RFC 5424). */
export const LOG_LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;

/**
 * The well-known documents of OAuth discovery the gateway passes through to an upstream (docs/deployment.md §OAuth and other
 * paths): RFC 9728 protected-resource metadata, RFC 8414 authorization-server metadata, and OpenID Connect discovery,
 * each at its root and path-suffixed forms (2025-11-25 basic/authorization §Protected Resource Metadata Discovery
 * Requirements, §Authorization Server Metadata Discovery).
 */
export const OAUTH_WELL_KNOWN = [
  '/.well-known/oauth-protected-resource',
  '/.well-known/oauth-authorization-server',
  '/.well-known/openid-configuration',
] as const;

/** Paths the gateway answers itself besides its MCP endpoints: never passed through to an upstream. */
export const GATEWAY_OWN_PATHS = ['/healthz', '/readyz', '/metrics'] as const;
