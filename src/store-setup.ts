/**
 * The task store the configuration names, opened: memory, Redis or Postgres, its URL read from the file or the
 * environment and checked, connected (a Postgres schema migrated or checked), with a failure to reach it named
 * without its password (`StoreStartError`, exit 3). Also `--migrate`. The composition root (app.ts) and the command
 * line use it; no layer below knows the configuration.
 */
import { ConfigError, postgresUrlProblem, redactedUrl, redisUrlProblem, type GatewayConfig } from './config/index.js';
import { MemoryTaskStore, PostgresTaskStore, RedisTaskStore, SCHEMA_VERSION, type TaskStore } from './store/index.js';

type SharedStoreConfig = Exclude<GatewayConfig['store'], { kind: 'memory' }>;

/** A shared store's name, as messages say it. */
const STORE_NAME: Record<SharedStoreConfig['kind'], string> = { redis: 'Redis', postgres: 'Postgres' };

/** The configured task store, connected. */
export async function openStore(config: Readonly<GatewayConfig>, env: NodeJS.ProcessEnv): Promise<TaskStore> {
  const s = config.store;
  if (s.kind === 'memory') return new MemoryTaskStore({ maxTasks: config.tasks.maxTasks, maxTtlMs: config.tasks.maxTtlMs });
  const url = storeUrlOf(s, env);
  const store =
    s.kind === 'redis'
      ? new RedisTaskStore({
          url,
          keyPrefix: s.keyPrefix,
          maxTtlMs: config.tasks.maxTtlMs,
          commandTimeoutMs: s.commandTimeoutMs,
          connectTimeoutMs: s.connectTimeoutMs,
        })
      : postgresStoreOf(s, config.tasks.maxTtlMs, url);
  try {
    await store.connect();
  } catch (e) {
    await store.close().catch(() => {});
    const cause = e instanceof Error && e.cause instanceof Error ? e.cause : e;
    const where = s.url !== undefined ? 'store.url' : s.urlEnv;
    throw new StoreStartError(
      `cannot reach the ${STORE_NAME[s.kind]} store at ${redactedUrl(url)} (${where}): ${cause instanceof Error ? cause.message : String(cause)}`,
      {
        cause: e,
      },
    );
  }
  return store;
}

/** A shared store's URL: `store.url`, else the variable `store.urlEnv` names (checked only now, as building reads it). */
function storeUrlOf(s: SharedStoreConfig, env: NodeJS.ProcessEnv): string {
  const url = s.url ?? env[s.urlEnv];
  if (!url) throw new ConfigError([`store.url: the ${STORE_NAME[s.kind]} store needs a URL: set ${s.urlEnv} or store.url`]);
  // store.url was checked with the file; the variable's value only now.
  const problem = s.kind === 'redis' ? redisUrlProblem(url) : postgresUrlProblem(url);
  if (problem) throw new ConfigError([`store.url: ${s.urlEnv} (store.urlEnv) must hold ${problem}`]);
  return url;
}

/** The Postgres store `store` configures (not connected). */
function postgresStoreOf(s: Extract<SharedStoreConfig, { kind: 'postgres' }>, maxTtlMs: number, url: string): PostgresTaskStore {
  return new PostgresTaskStore({
    url,
    schema: s.schema,
    maxTtlMs,
    commandTimeoutMs: s.commandTimeoutMs,
    connectTimeoutMs: s.connectTimeoutMs,
    poolSize: s.poolSize,
    migrate: s.migrate,
    ...(s.tls ? { tls: s.tls } : {}),
  });
}

/**
 * `--migrate`: brings the configured Postgres store's schema to this gateway's version and says what it did. Throws
 * `ConfigError` when the store is not Postgres, `StoreStartError` when it cannot be reached.
 */
export async function migrateStore(config: Readonly<GatewayConfig>, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const s = config.store;
  if (s.kind !== 'postgres') throw new ConfigError([`--migrate: the store is ${s.kind}; only a postgres store has a schema to migrate`]);
  const url = storeUrlOf(s, env);
  const store = postgresStoreOf(s, config.tasks.maxTtlMs, url);
  try {
    const applied = await store.migrate();
    return applied.length === 0
      ? `postgres store at ${redactedUrl(url)}, schema ${s.schema}: already at version ${SCHEMA_VERSION}, nothing to do`
      : `postgres store at ${redactedUrl(url)}, schema ${s.schema}: applied ${applied.length > 1 ? 'versions' : 'version'} ` +
          `${applied.join(', ')}; now at ${SCHEMA_VERSION}`;
  } catch (e) {
    const cause = e instanceof Error && e.cause instanceof Error ? e.cause : e;
    throw new StoreStartError(`cannot migrate the Postgres store at ${redactedUrl(url)}: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause: e,
    });
  } finally {
    await store.close();
  }
}

/** The configured task store could not be reached at start; the message names its URL (without a password) and why. */
export class StoreStartError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreStartError';
  }
}
