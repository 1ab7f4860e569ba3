/**
 * One PostgreSQL for a whole test file, as the Redis variants of the multi-instance tests share one redis-server: `PG_URL`
 * when set, otherwise a server of its own (postgres-server.ts), started on the first `url()` (a file whose Postgres
 * tests are all skipped or filtered out starts none) and disposed of, data dir included, by `dispose()` (the file's
 * `t.teardown`). Each pair of instances gets a schema of its own (`schemaFor`), as the Redis ones get a key prefix:
 * two schemas share nothing. Not a test file.
 */
import { randomBytes } from 'node:crypto';
import { POSTGRES_SCHEMA_NAME } from '../../src/config/schema-parts.js';
import { startPostgres, type PostgresServer } from './postgres-server.js';

export interface FilePostgres {
  /** The database's URL; the first call starts the server (unless `PG_URL` is set). */
  url(): Promise<string>;
  /** Disposes of the server if one was started (a failed start included); idempotent. */
  dispose(): Promise<void>;
}

export function filePostgres(): FilePostgres {
  let started: Promise<PostgresServer> | undefined;
  return {
    async url() {
      const given = process.env['PG_URL'];
      if (given) return given;
      started ??= startPostgres();
      return (await started).url;
    },
    async dispose() {
      const server = await started?.catch(() => undefined);
      await server?.dispose();
    },
  };
}

/** A fresh schema name: `tag` (lower case, digits, `_`) and 10 random hex digits, e.g. `mrt_3f9a0c1b2d`. */
export function schemaFor(tag: string): string {
  const schema = `${tag}_${randomBytes(5).toString('hex')}`;
  if (!POSTGRES_SCHEMA_NAME.test(schema)) throw new Error(`not a Postgres schema name the store takes: ${schema}`);
  return schema;
}
