/** Loads configuration: file (YAML or JSON) → flag overrides → strict validation → one frozen object. */
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import type { ZodError } from 'zod';
import { ConfigSchema, type GatewayConfig } from './schema.js';
import { UpstreamFlagError, upstreamsFromFlags } from './upstream-flags.js';

/** A configuration that failed validation; `problems` names each key path. */
export class ConfigError extends Error {
  constructor(
    readonly problems: string[],
    options?: { cause?: unknown },
  ) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`, options);
    this.name = 'ConfigError';
  }
}

/** Overrides from the command line. */
export interface ConfigOverrides {
  host?: string;
  port?: number;
  /** `--upstream` values in order (config/upstream-flags.ts); they replace the file's upstreams. */
  upstream?: string | readonly string[];
  /** The command line after a standalone `--`: the command of the `--upstream NAME=--` upstream. */
  upstreamCommand?: readonly string[];
}

/** Formats zod issues as `key.path: message` lines. */
function formatIssues(error: ZodError): string[] {
  return error.issues.map((issue) => {
    const path = issue.path.map(String).join('.') || '(root)';
    return `${path}: ${issue.message}`;
  });
}

/** Validates a raw configuration object (after overrides). Throws ConfigError listing every problem. */
export function parseConfig(raw: unknown, overrides: ConfigOverrides = {}): Readonly<GatewayConfig> {
  const base: Record<string, unknown> = raw && typeof raw === 'object' && !Array.isArray(raw) ? { ...(raw as Record<string, unknown>) } : {};
  if (raw !== undefined && raw !== null && (typeof raw !== 'object' || Array.isArray(raw))) {
    throw new ConfigError(['(root): the configuration must be a mapping']);
  }
  if (overrides.host !== undefined || overrides.port !== undefined) {
    const server = base.server && typeof base.server === 'object' ? { ...(base.server as Record<string, unknown>) } : {};
    if (overrides.host !== undefined) server.host = overrides.host;
    if (overrides.port !== undefined) server.port = overrides.port;
    base.server = server;
  }
  const flagged = overrides.upstream !== undefined || overrides.upstreamCommand !== undefined;
  if (flagged) {
    const values = typeof overrides.upstream === 'string' ? [overrides.upstream] : (overrides.upstream ?? []);
    try {
      base.upstreams = upstreamsFromFlags(values, overrides.upstreamCommand);
    } catch (e) {
      if (!(e instanceof UpstreamFlagError)) throw e;
      throw new ConfigError([`${e.index === undefined ? 'upstreams' : `upstreams.${e.index}`} (--upstream): ${e.message}`], { cause: e });
    }
  }
  const parsed = ConfigSchema.safeParse(base);
  if (!parsed.success) {
    // The upstreams `--upstream` gave are named by the flag too: the file the operator may look at does not hold them.
    const problems = formatIssues(parsed.error).map((p) => (flagged ? p.replace(/^(upstreams\.[^:]*):/, '$1 (--upstream):') : p));
    throw new ConfigError(problems, { cause: parsed.error });
  }
  return deepFreeze(parsed.data);
}

/** Reads and validates a configuration file (`.json` as JSON, anything else as YAML, which includes JSON). */
export async function loadConfigFile(file: string, overrides: ConfigOverrides = {}): Promise<Readonly<GatewayConfig>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new ConfigError([`(file): cannot read ${file}: ${(cause as Error).message}`], { cause });
  }
  let raw: unknown;
  try {
    raw = file.endsWith('.json') ? JSON.parse(text) : parseYaml(text);
  } catch (cause) {
    throw new ConfigError([`(file): ${file} is not valid ${file.endsWith('.json') ? 'JSON' : 'YAML'}: ${(cause as Error).message}`], { cause });
  }
  return parseConfig(raw ?? {}, overrides);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}
