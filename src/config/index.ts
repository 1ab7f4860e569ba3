/** Configuration: schema, defaults and loader. Read at runtime only by cli.ts and app.ts. */
export {
  AuthSchema,
  ConfigSchema,
  JWT_ASYMMETRIC_ALGORITHMS,
  JWT_HMAC_ALGORITHMS,
  ANONYMOUS_SESSION_SCOPES,
  DEFAULTS,
  SESSION_SCOPES,
  principalShare,
  redactedUrl,
  redisUrlProblem,
  TASK_MODES,
  UPSTREAM_ERAS,
  ToolRuleSchema,
  UpstreamSchema,
  wellKnownRootOwner,
  WHEN_ABSENT,
  type AuthConfig,
  type GatewayConfig,
  type ToolRule,
  type UpstreamConfig,
} from './schema.js';
export { ConfigError, formatIssues, loadConfigFile, parseConfig, type ConfigOverrides } from './load.js';
export { LIVE_KEYS, planReload, type ReloadPlan } from './reload.js';
export { describeConfig } from './summary.js';
