/**
 * The Postgres store's schema, versioned: each migration is plain SQL applied once, in order, in one transaction with
 * the version it brings, under an advisory lock, so that several instances starting together apply each exactly once
 * and a migration that fails leaves the schema as it was. The gateway applies them at start (`store.migrate: auto`)
 * or an operator does, with `mcp-tasks-gateway --migrate` (docs/several-instances.md § Postgres).
 *
 * Tables (in the configured schema, `mcpgw` by default):
 * - `tasks`: one row per task record: the record's JSON as stored (`record`, its `version` equal to the column's),
 *   the columns the store filters and orders on, its expiry, and its lease. Text columns are `COLLATE "C"`: lists page
 *   in (created_at, task_id) order as JavaScript compares strings.
 * - `shared_values`: shared values with a TTL (gateway-minted sessions, instance heartbeats).
 * - `counters` (UNLOGGED: rate-limit windows are worth nothing after a crash, and need no WAL on every poll).
 * - `events` (UNLOGGED): bodies of bus messages too large for a NOTIFY payload, read once by id and reaped.
 */
import type pg from 'pg';

/** A migration: its version (from 1, consecutive) and the SQL it runs, given the quoted schema name. */
interface Migration {
  version: number;
  name: string;
  sql: (s: string) => string;
}

const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'tasks, shared values, counters, events',
    sql: (s) => `
CREATE TABLE ${s}.tasks (
  task_id text COLLATE "C" PRIMARY KEY,
  principal text COLLATE "C" NOT NULL,
  upstream text COLLATE "C" NOT NULL,
  session text COLLATE "C",
  created_at text COLLATE "C" NOT NULL,
  version integer NOT NULL,
  terminal boolean NOT NULL,
  record text NOT NULL,
  expires_at timestamptz NOT NULL,
  lease_owner text COLLATE "C",
  lease_until timestamptz
);
CREATE INDEX tasks_inventory ON ${s}.tasks (principal, upstream, created_at, task_id);
CREATE INDEX tasks_live ON ${s}.tasks (principal) WHERE NOT terminal;
CREATE INDEX tasks_leases ON ${s}.tasks (lease_until) WHERE lease_owner IS NOT NULL;
CREATE INDEX tasks_expiry ON ${s}.tasks (expires_at);
CREATE TABLE ${s}.shared_values (
  key text COLLATE "C" PRIMARY KEY,
  value text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX shared_values_expiry ON ${s}.shared_values (expires_at);
CREATE UNLOGGED TABLE ${s}.counters (
  key text COLLATE "C" PRIMARY KEY,
  count integer NOT NULL,
  window_end timestamptz NOT NULL
);
CREATE INDEX counters_expiry ON ${s}.counters (window_end);
CREATE UNLOGGED TABLE ${s}.events (
  id bigserial PRIMARY KEY,
  body text NOT NULL,
  at timestamptz NOT NULL DEFAULT now()
);`,
  },
];

/** The bound on each statement of a migration (the lock wait included). */
const MIGRATION_STATEMENT_MS = 60_000;

/** The schema version this gateway needs. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/** `name` quoted as an identifier (the configuration takes plain lower-case names only; quoting keeps it safe anyway). */
export const quoted = (name: string): string => `"${name.replaceAll('"', '""')}"`;

/** The versions applied to `schema`, ascending; empty when it has no migrations table yet. */
async function appliedVersions(q: pg.ClientBase | pg.Pool, schema: string): Promise<number[]> {
  const exists = await q.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [`${quoted(schema)}.schema_migrations`]);
  if (!exists.rows[0]?.t) return [];
  const r = await q.query<{ version: number }>(`SELECT version FROM ${quoted(schema)}.schema_migrations ORDER BY version`);
  return r.rows.map((x) => x.version);
}

/** The highest version applied to `schema` (0: none). */
export async function schemaVersionOf(pool: pg.Pool, schema: string): Promise<number> {
  const v = await appliedVersions(pool, schema);
  return v.length === 0 ? 0 : v[v.length - 1]!;
}

/**
 * Brings `schema` to SCHEMA_VERSION: creates it if absent, then applies every migration not yet applied, all in one
 * transaction holding an advisory lock named after the schema (a second instance waits, then finds nothing to do).
 * Resolves to the versions this call applied.
 */
export async function migrate(pool: pg.Pool, schema: string): Promise<number[]> {
  const s = quoted(schema);
  const client = await pool.connect();
  // Another instance migrating holds the lock for as long as its DDL takes, and a DDL statement may wait for a
  // transaction that holds a table: each statement here waits longer than an ordinary statement's bound.
  const q = (text: string, values?: unknown[]) => client.query({ text, values, query_timeout: MIGRATION_STATEMENT_MS } as pg.QueryConfig);
  let failed: unknown;
  try {
    await q('BEGIN');
    await q(`SET LOCAL lock_timeout = ${MIGRATION_STATEMENT_MS}; SET LOCAL statement_timeout = ${MIGRATION_STATEMENT_MS}`);
    await q('SELECT pg_advisory_xact_lock(hashtext($1))', [`mcp-tasks-gateway:migrate:${schema}`]);
    await q(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await q(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = new Set(await appliedVersions(client, schema));
    const applied: number[] = [];
    for (const m of MIGRATIONS) {
      if (done.has(m.version)) continue;
      await q(m.sql(s));
      await q(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
      applied.push(m.version);
    }
    await q('COMMIT');
    return applied;
  } catch (err) {
    failed = err;
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  } finally {
    client.release(failed instanceof Error ? failed : undefined);
  }
}
