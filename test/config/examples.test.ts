// The shipped configuration examples stay valid against the schema, and say what the defaults are.
import { readdir } from 'node:fs/promises';
import t from 'tap';
import { DEFAULTS, loadConfigFile } from '../../src/config/index.js';

const dir = new URL('../../config/', import.meta.url);

t.test('every file in config/ loads', async (t) => {
  const files = (await readdir(dir)).filter((f) => /\.(ya?ml|json)$/.test(f));
  t.ok(files.length >= 2, 'examples exist');
  for (const f of files) {
    const cfg = await loadConfigFile(new URL(f, dir).pathname);
    const shared = { 'gateway.redis.example.yaml': 'redis', 'gateway.postgres.example.yaml': 'postgres' }[f];
    if (!shared) t.equal(cfg.server.host, DEFAULTS.host, `${f}: default host`);
    t.equal(cfg.store.kind, shared ?? 'memory', `${f}: its store`);
  }
});

t.test('the full example spells out the defaults', async (t) => {
  const cfg = await loadConfigFile(new URL('gateway.example.yaml', dir).pathname);
  t.equal(cfg.server.port, DEFAULTS.port);
  t.equal(cfg.server.bodyLimitBytes, DEFAULTS.bodyLimitBytes);
  t.equal(cfg.server.headersTimeoutMs, DEFAULTS.headersTimeoutMs);
  t.equal(cfg.server.requestTimeoutMs, DEFAULTS.requestTimeoutMs);
  t.equal(cfg.server.idleTimeoutMs, DEFAULTS.idleTimeoutMs);
  t.equal(cfg.server.maxJsonDepth, DEFAULTS.maxJsonDepth);
  t.equal(cfg.server.shutdownGraceMs, DEFAULTS.shutdownGraceMs);
  t.equal(cfg.input.holdMs, DEFAULTS.inputHoldMs);
  t.equal(cfg.tasks.defaultTtlMs, DEFAULTS.taskTtlMs);
  t.equal(cfg.tasks.maxActivePerPrincipal, DEFAULTS.maxActiveTasksPerPrincipal);
  t.equal(cfg.tasks.pollIntervalMs, DEFAULTS.pollIntervalMs);
  t.equal(cfg.tasks.adaptivePolling, DEFAULTS.adaptivePolling);
  t.equal(cfg.tasks.minPollIntervalMs, DEFAULTS.minPollIntervalMs);
  t.equal(cfg.tasks.maxPollIntervalMs, DEFAULTS.maxPollIntervalMs);
  t.equal(cfg.sessions.maxPerUpstream, DEFAULTS.maxSessionsPerUpstream);
  const [u] = cfg.upstreams;
  t.equal(u?.path, DEFAULTS.path);
  t.equal(u?.timeoutMs, DEFAULTS.upstreamTimeoutMs);
  t.same(u?.cache, { ttlMs: DEFAULTS.cacheTtlMs, scope: DEFAULTS.cacheScope });
  t.same(u?.tools, { '*': { task: 'native' } });
  t.same(u?.sessions, { scope: DEFAULTS.sessionScope, anonymousScope: DEFAULTS.anonymousSessionScope });
  t.same(u?.auth, { mode: DEFAULTS.authMode });
});

t.test('the Redis example spells out the store defaults and the secret variable', async (t) => {
  const cfg = await loadConfigFile(new URL('gateway.redis.example.yaml', dir).pathname);
  t.same(cfg.store, {
    kind: 'redis',
    urlEnv: DEFAULTS.redisUrlEnv,
    keyPrefix: DEFAULTS.redisKeyPrefix,
    commandTimeoutMs: DEFAULTS.redisCommandTimeoutMs,
    connectTimeoutMs: DEFAULTS.redisConnectTimeoutMs,
  });
  t.same(cfg.secret, { env: DEFAULTS.secretEnv });
  t.equal(cfg.tasks.leaseMs, DEFAULTS.leaseMs);
  t.equal(cfg.upstreams[0]?.tools.refresh_index?.retryOnLoss, true);
});

t.test('the Postgres example spells out the store defaults and the secret variable', async (t) => {
  const cfg = await loadConfigFile(new URL('gateway.postgres.example.yaml', dir).pathname);
  t.same(cfg.store, {
    kind: 'postgres',
    urlEnv: DEFAULTS.postgresUrlEnv,
    schema: DEFAULTS.postgresSchema,
    migrate: 'auto',
    poolSize: DEFAULTS.postgresPoolSize,
    commandTimeoutMs: DEFAULTS.postgresCommandTimeoutMs,
    connectTimeoutMs: DEFAULTS.postgresConnectTimeoutMs,
  });
  t.same(cfg.secret, { env: DEFAULTS.secretEnv });
  t.equal(cfg.upstreams[0]?.tools.refresh_index?.retryOnLoss, true);
});
