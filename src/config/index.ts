/** Configuration: schema, defaults and loader. Read at runtime only by cli.ts and app.ts. */
export {
  ConfigSchema,
  DEFAULTS,
  federatedPaths,
  isFederatedPath,
  oauthCapable,
  principalShare,
  shapesItsNames,
  sharedPaths,
  redactedUrl,
  redisUrlProblem,
  wellKnownRootOwner,
  WHEN_ABSENT,
  type AccessRule,
  type AuthConfig,
  type EndpointConfig,
  type ExposeConfig,
  type GatewayConfig,
  type ToolRule,
  type UpstreamConfig,
} from './schema.js';
export { ConfigError, loadConfigFile, parseConfig, type ConfigOverrides } from './load.js';
export { planReload } from './reload.js';
export { shellWords, upstreamsFromFlags } from './upstream-flags.js';
export { describeConfig } from './summary.js';
