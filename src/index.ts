/**
 * The package entry (`import … from 'mcp-tasks-gateway'`): build a gateway in your own process. Parse a configuration
 * (from a file with `loadConfigFile`, or an object with `parseConfig`: the same strict schema and defaults as the
 * command line), then `buildGateway(config)` returns a Fastify app that is not yet listening and an ordered `close`.
 * The command line (`mcp-tasks-gateway`, dist/cli.js) is not part of this entry: importing it starts nothing.
 */
export {
  buildGateway,
  ConfigError,
  DEFAULT_LOGGER,
  DEFAULTS,
  loadConfigFile,
  parseConfig,
  type AuthConfig,
  type ConfigOverrides,
  type Gateway,
  type GatewayConfig,
  type GatewayDeps,
  type ToolRule,
  type UpstreamConfig,
} from './app.js';
export { GATEWAY_NAME, GATEWAY_VERSION } from './version.js';
