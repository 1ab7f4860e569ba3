/** Configuration: schema, defaults and loader. Read at runtime only by cli.ts and app.ts. */
export {
  ConfigSchema,
  DEFAULTS,
  federatedPaths,
  principalShare,
  sharedPaths,
  redactedUrl,
  postgresUrlProblem,
  redisUrlProblem,
  wellKnownRootOwner,
  WHEN_ABSENT,
  type AuthConfig,
  type GatewayConfig,
  type ToolRule,
  type UpstreamConfig,
} from './schema.js';
export { ConfigError, loadConfigFile, parseConfig, type ConfigOverrides } from './load.js';
export { planReload } from './reload.js';
export { describeConfig } from './summary.js';
