/**
 * The test Postgres helper (test/helpers/postgres-server.ts) does what the durability and outage tests rely on: a
 * row committed before a SIGKILL of the whole server is there after `restart()` (same port, same data dir); `pause()`
 * freezes the backends of connections already open (a query times out on the client), `resume()` thaws them; after
 * `stop()` nothing accepts connections; `dispose()` removes the data. Skipped, with the reason printed, when this
 * machine cannot start a postgres of its own.
 */
import { existsSync } from 'node:fs';
import pg from 'pg';
import t, { type Test } from 'tap';
import { type PostgresServer, postgresBinaryMissing, startPostgres } from '../helpers/postgres-server.js';

const missing = postgresBinaryMissing();
if (missing) t.comment(`Postgres server helper tests skipped: ${missing}`);

/** A connected client; `query_timeout` bounds every query on the client side. Ended when `t` ends. */
async function connect(t: Test, url: string, queryTimeoutMs = 5_000): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, query_timeout: queryTimeoutMs, connectionTimeoutMillis: 5_000 });
  // A server killed under an open connection makes the client emit 'error': expected here, not a crash of the test.
  client.on('error', () => {});
  await client.connect();
  t.teardown(() => client.end().catch(() => {}));
  return client;
}

t.test('postgres server helper', { skip: missing ?? false }, async (t) => {
  const server: PostgresServer = await startPostgres();
  t.teardown(() => server.dispose());
  t.match(server.url, /^postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres$/);
  t.not(server.port, 5432);

  t.test('a committed row survives a SIGKILL and a restart', async (t) => {
    const before = await connect(t, server.url);
    await before.query('CREATE TABLE kept (id int PRIMARY KEY, v text)');
    await before.query("INSERT INTO kept VALUES (1, 'one')");
    await server.kill();
    await t.rejects(before.query('SELECT 1'), 'the connection died with the server');
    await server.restart();
    const after = await connect(t, server.url);
    const { rows } = await after.query('SELECT id, v FROM kept');
    t.same(rows, [{ id: 1, v: 'one' }]);
  });

  t.test('pause freezes open connections, resume thaws them', async (t) => {
    const client = await connect(t, server.url, 300);
    t.same((await client.query('SELECT 1 AS n')).rows, [{ n: 1 }]);
    // The backend serving this connection already exists: only a signal to the whole group freezes it.
    server.pause();
    await t.rejects(client.query('SELECT 2 AS n'), /timeout/i, 'no answer while paused');
    server.resume();
    t.same((await client.query('SELECT 3 AS n')).rows, [{ n: 3 }], 'the same connection answers again');
    const fresh = await connect(t, server.url, 300);
    t.same((await fresh.query('SELECT 4 AS n')).rows, [{ n: 4 }], 'and new ones are accepted');
  });

  t.test('after stop, connecting fails', async (t) => {
    await server.stop();
    const client = new pg.Client({ connectionString: server.url, connectionTimeoutMillis: 2_000 });
    await t.rejects(client.connect(), { code: 'ECONNREFUSED' });
  });

  t.test('dispose removes the data', async (t) => {
    t.ok(existsSync(server.dataDir), 'the data dir outlives a stop');
    await server.dispose();
    t.notOk(existsSync(server.dataDir));
    await t.rejects(server.restart(), /disposed/);
  });
});
