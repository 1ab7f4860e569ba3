/** Configuration: schema, defaults and loader. Read at runtime only by cli.ts and app.ts. */
export {
  ConfigSchema,
  DEFAULTS,
  TASK_MODES,
  UPSTREAM_ERAS,
  ToolRuleSchema,
  UpstreamSchema,
  type GatewayConfig,
  type ToolRule,
  type UpstreamConfig,
} from './schema.js';
export { ConfigError, formatIssues, loadConfigFile, parseConfig, type ConfigOverrides } from './load.js';
