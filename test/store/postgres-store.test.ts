/**
 * The Postgres store against a real PostgreSQL on a loopback port: the TaskStore contract suite (two store objects on
 * one database and schema are two gateway instances; two schemas share nothing), then what only Postgres has: the
 * schema migrated once however many instances start together, or checked and refused when migrating is off; expired
 * rows deleted by the reaper; bus messages too large for a NOTIFY payload; a stopped, killed or frozen database makes
 * every method fail fast with StoreUnavailableError, and the same store object works again, with every committed
 * record, once it is back; a create that resolved survives a crash of the database right after it; a finished record
 * read once is answered from the store's copy (even while the database is away) until its row expires. Skipped, with the
 * reason printed, only when there is no PostgreSQL server binary (and no PG_URL); the outage and durability tests
 * take a server of their own away and back, so they need the binary even with PG_URL. Last, `store.tls` against a
 * server that takes TLS: verified, required, refused by another CA.
 */
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import pg from 'pg';
import t, { type Test } from 'tap';
import { PostgresTaskStore, SCHEMA_VERSION, StoreUnavailableError } from '../../src/store/index.js';
import { quoted } from '../../src/store/postgres-schema.js';
import type { PostgresStoreOptions } from '../../src/store/postgres-store.js';
import type { JsonObject, TaskRecord } from '../../src/translate/index.js';
import { schemaFor } from '../helpers/file-postgres.js';
import { postgresAvailable, postgresBinaryMissing, postgresForTest, selfSigned, startPostgres } from '../helpers/postgres-server.js';
import { eventually, everyMethod, rec, rejectsUnavailable, storeContract } from '../helpers/store-contract.js';

const DEFAULTS = { maxTtlMs: 86_400_000, commandTimeoutMs: 1_000, connectTimeoutMs: 1_000, poolSize: 4, migrate: 'auto' as const };

async function connected(opts: Partial<PostgresStoreOptions> & { url: string }): Promise<PostgresTaskStore> {
  const store = new PostgresTaskStore({ schema: schemaFor('t'), ...DEFAULTS, ...opts });
  await store.connect();
  return store;
}

const LONG_MS = 600_000;
/** The versions a fresh schema gets: 1 to SCHEMA_VERSION. */
const VERSIONS = Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1);

/** A raw client on `url` (no store in between), ended when `t` ends. */
async function rawClient(t: Test, url: string): Promise<pg.Client> {
  const client = new pg.Client({ connectionString: url, query_timeout: 5_000, connectionTimeoutMillis: 5_000 });
  client.on('error', () => {});
  await client.connect();
  t.teardown(() => client.end().catch(() => {}));
  return client;
}

/** How many rows of `table` in `schema` have their `column` in `keys`. */
async function rowsOf(raw: pg.Client, schema: string, table: string, column: string, keys: readonly string[]): Promise<number> {
  const r = await raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoted(schema)}.${table} WHERE ${column} = ANY($1::text[])`, [keys]);
  return r.rows[0]?.n ?? -1;
}

const missing = postgresAvailable();
if (missing) t.comment(`Postgres store tests skipped: ${missing}`);

t.test('postgres store', { skip: missing ?? false }, async (t) => {
  const url = await postgresForTest(t);

  storeContract(t, 'postgres', async ({ maxTtlMs }) => {
    const opts = { url, schema: schemaFor('t'), ...(maxTtlMs !== undefined ? { maxTtlMs } : {}) };
    return {
      store: await connected(opts),
      // Another gateway instance: its own store object (own pool and LISTEN connection) on the same schema.
      peer: () => connected(opts),
      isolated: () => connected({ ...opts, schema: schemaFor('t') }),
    };
  });

  t.test('migrations: five instances starting together on a fresh schema apply each version exactly once', async (t) => {
    const schema = schemaFor('t');
    const stores = Array.from({ length: 5 }, () => new PostgresTaskStore({ url, schema, ...DEFAULTS }));
    t.teardown(() => Promise.all(stores.map((s) => s.close())));
    const outcomes = await Promise.allSettled(stores.map((s) => s.connect()));
    t.same(
      outcomes.map((o) => o.status),
      stores.map(() => 'fulfilled'),
      'every connect() succeeds',
      { found: outcomes.map((o) => (o.status === 'rejected' ? String((o.reason as StoreUnavailableError).detail ?? o.reason) : 'ok')) },
    );
    const raw = await rawClient(t, url);
    const versions = await raw.query<{ version: number; n: number }>(
      `SELECT version, count(*)::int AS n FROM ${quoted(schema)}.schema_migrations GROUP BY version ORDER BY version`,
    );
    t.same(
      versions.rows,
      VERSIONS.map((version) => ({ version, n: 1 })),
      'schema_migrations holds each version once',
    );
    const tables = await raw.query<{ name: string }>(
      'SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [schema],
    );
    t.same(
      tables.rows.map((r) => r.name),
      ['counters', 'events', 'schema_migrations', 'shared_values', 'tasks'],
      'the tables exist',
    );
    // They are instances of one deployment: what one creates, another reads.
    const r = rec();
    await stores[0]!.create(r, LONG_MS);
    t.same(await stores[4]!.get(r.taskId), r, 'one schema for all');

    // Five operators running --migrate together: each version is applied by exactly one of them.
    const other = schemaFor('t');
    const operators = Array.from({ length: 5 }, () => new PostgresTaskStore({ url, schema: other, ...DEFAULTS, migrate: 'off' }));
    t.teardown(() => Promise.all(operators.map((s) => s.close())));
    const applied = await Promise.all(operators.map((s) => s.migrate()));
    t.same(
      applied.flat().sort((a, b) => a - b),
      VERSIONS,
      'concurrent migrate() calls: each version applied by one',
      { found: applied },
    );
  });

  t.test('migrations: with migrate off, an unmigrated schema is refused until --migrate has run', async (t) => {
    const schema = schemaFor('t');
    const off = new PostgresTaskStore({ url, schema, ...DEFAULTS, migrate: 'off' });
    t.teardown(() => off.close());
    const err = await off.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    t.ok(err instanceof StoreUnavailableError, 'connect() rejects with StoreUnavailableError', { found: String(err) });
    // The operator's message is the error's detail (its `message` is the client-facing catalog text).
    t.match((err as StoreUnavailableError).detail, /version 0.*needs \d+.*run mcp-tasks-gateway --migrate/, 'the detail says to run --migrate');
    t.match(String(((err as Error).cause as Error | undefined)?.message), /--migrate/, 'and so does the cause (what the start prints)');
    const raw = await rawClient(t, url);
    const created = await raw.query<{ n: number }>('SELECT count(*)::int AS n FROM information_schema.schemata WHERE schema_name = $1', [schema]);
    t.equal(created.rows[0]?.n, 0, 'checking the version created nothing');

    const operator = new PostgresTaskStore({ url, schema, ...DEFAULTS, migrate: 'off' });
    t.teardown(() => operator.close());
    t.same(await operator.migrate(), VERSIONS, 'migrate() on another store object (never connected) applies every version');
    t.same(await operator.migrate(), [], 'migrate() again applies nothing');
    await off.connect();
    t.pass('the store refused before connects now (the same object)');
    const r = rec();
    await off.create(r, LONG_MS);
    t.same(await off.get(r.taskId), r, 'and works');
    const versions = await raw.query<{ version: number }>(`SELECT version FROM ${quoted(schema)}.schema_migrations ORDER BY version`);
    t.same(
      versions.rows.map((x) => x.version),
      VERSIONS,
      'each version recorded once',
    );
  });

  t.test('migrations: migrate() on a schema a migrate:auto store already migrated applies nothing', async (t) => {
    const auto = await connected({ url });
    t.teardown(() => auto.close());
    const again = new PostgresTaskStore({ url, schema: auto.opts.schema, ...DEFAULTS });
    t.teardown(() => again.close());
    t.same(await again.migrate(), [], 'nothing to apply');
    t.same(await again.migrate(), [], 'still nothing');
    const off = await connected({ url, schema: auto.opts.schema, migrate: 'off' });
    t.teardown(() => off.close());
    t.pass('a migrate:off store connects to it');
  });

  t.test('migrations: a statement of the migration may wait longer than commandTimeoutMs (its own 60 s bound)', async (t) => {
    const schema = schemaFor('t');
    // An operator creating the schema by hand in a transaction still open: CREATE SCHEMA IF NOT EXISTS waits for it.
    const holder = await rawClient(t, url);
    await holder.query('BEGIN');
    await holder.query(`CREATE SCHEMA ${quoted(schema)}`);
    const store = new PostgresTaskStore({ url, schema, ...DEFAULTS, commandTimeoutMs: 300 });
    t.teardown(() => store.close());
    let settled = false;
    const migrating = store
      .migrate()
      .then(
        (applied) => ({ applied }),
        (err: unknown) => ({ err: String((err as StoreUnavailableError).detail ?? err) }),
      )
      .finally(() => {
        settled = true;
      });
    // Another client (outside any transaction: pg_stat_activity is read once per transaction) sees it wait.
    const watcher = await rawClient(t, url);
    await eventually('the migration waits for the holder’s transaction (or has given up)', async () => {
      const r = await watcher.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'mcp-tasks-gateway' AND wait_event_type = 'Lock' AND query LIKE 'CREATE SCHEMA%'",
      );
      return settled || (r.rows[0]?.n ?? 0) > 0;
    });
    // The holder keeps its transaction longer than commandTimeoutMs (this is about a duration), far shorter than 60 s.
    await Promise.race([migrating, new Promise((r) => setTimeout(r, 1_000))]);
    await holder.query('ROLLBACK');
    t.same(await migrating, { applied: VERSIONS }, 'migrate() waits for the open transaction, then applies every version');
  });

  t.test('reaper: expired records, values and counters are invisible at once, and reap() deletes their rows', async (t) => {
    const SHORT_MS = 200;
    // The periodic reaper is out of the way: rows are deleted only by the reap() this test calls.
    const store = await connected({ url, reapEveryMs: LONG_MS });
    t.teardown(() => store.close());
    const schema = store.opts.schema;
    const raw = await rawClient(t, url);

    const expiring = [rec({ principal: 'reap' }), rec({ principal: 'reap', status: 'completed' }), rec({ principal: 'reap' })];
    const kept = [rec({ principal: 'reap' }), rec({ principal: 'reap', status: 'completed', createdAt: '2026-08-01T09:00:01.000Z' })];
    await store.create(expiring[0]!, SHORT_MS);
    await store.create(expiring[1]!, SHORT_MS);
    // A lease longer than the record's life does not keep it.
    await store.create(expiring[2]!, SHORT_MS, { owner: 'inst-a', ttlMs: LONG_MS });
    await store.create(kept[0]!, LONG_MS, { owner: 'inst-a', ttlMs: LONG_MS });
    await store.create(kept[1]!, LONG_MS);
    await store.putValue('gone:1', { a: 1 }, SHORT_MS);
    await store.putValue('gone:2', { a: 2 }, SHORT_MS, { ifAbsent: true });
    await store.putValue('kept:1', { a: 3 }, LONG_MS);
    await store.hit('gone', SHORT_MS);
    await store.hit('kept', LONG_MS);
    t.equal(await store.activeCount('reap'), 3, 'live before expiry');

    const expiredIds = expiring.map((r) => r.taskId);
    const keptIds = kept.map((r) => r.taskId);
    await eventually('the short-lived records and values have expired', async () => {
      const records = await Promise.all(expiredIds.map((id) => store.get(id)));
      const values = await Promise.all(['gone:1', 'gone:2'].map((k) => store.getValue(k)));
      return [...records, ...values].every((x) => x === undefined);
    });
    await eventually('the short counter window has ended (database clock)', async () => {
      const r = await raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${quoted(schema)}.counters WHERE key = 'gone' AND window_end > now()`);
      return r.rows[0]?.n === 0;
    });
    // Invisible to every read while their rows are still there.
    t.equal(await rowsOf(raw, schema, 'tasks', 'task_id', expiredIds), 3, 'the expired records’ rows are still there before reaping');
    t.equal(await rowsOf(raw, schema, 'shared_values', 'key', ['gone:1', 'gone:2']), 2, 'so are the values’');
    t.same(await store.list({ principal: 'reap', upstream: 'up-1', limit: 10 }), { tasks: kept, more: false }, 'list shows only the live records');
    t.equal(await store.activeCount('reap'), 1, 'activeCount counts only the live one');
    t.equal(await store.leaseOwner(expiring[2]!.taskId), undefined, 'an expired record has no lease owner');
    t.equal(await store.acquireLease(expiring[0]!.taskId, 'inst-b', LONG_MS), false, 'nor can one be acquired');
    t.equal(await store.touchValue('gone:1', LONG_MS), false, 'an expired value cannot be touched back to life');
    t.equal(await store.deleteValue('gone:2'), false, 'nor deleted (it is not there)');
    t.equal(await store.leaseOwner(kept[0]!.taskId), 'inst-a', 'the live lease stays');

    t.equal(await store.reap(), 3 + 2 + 1, 'reap() deletes the three records, two values and one counter');
    t.equal(await rowsOf(raw, schema, 'tasks', 'task_id', expiredIds), 0, 'no expired record row left');
    t.equal(await rowsOf(raw, schema, 'tasks', 'task_id', keptIds), 2, 'the live records kept');
    t.equal(await rowsOf(raw, schema, 'shared_values', 'key', ['gone:1', 'gone:2']), 0, 'no expired value row left');
    t.equal(await rowsOf(raw, schema, 'shared_values', 'key', ['kept:1']), 1, 'the live value kept');
    t.equal(await rowsOf(raw, schema, 'counters', 'key', ['gone']), 0, 'no ended counter row left');
    t.equal(await rowsOf(raw, schema, 'counters', 'key', ['kept']), 1, 'the running counter kept');
    t.same(await store.get(kept[0]!.taskId), kept[0], 'the live records read as before');
    t.same(await store.getValue('kept:1'), { a: 3 });
    t.equal((await store.hit('kept', LONG_MS)).count, 2, 'the running counter counts on');
    t.equal(await store.reap(), 0, 'a second reap() finds nothing');
    // Expired rows do not block their keys meanwhile: a new record with an expired one's id is a new record.
    const reborn = { ...expiring[0]!, statusMessage: 'again' };
    await store.create(reborn, LONG_MS);
    t.same(await store.get(reborn.taskId), reborn, 'an id is free again once its record expired');
  });

  t.test('reaper: a backlog larger than one batch is deleted by one reap()', async (t) => {
    const store = await connected({ url, reapEveryMs: LONG_MS });
    t.teardown(() => store.close());
    const raw = await rawClient(t, url);
    const s = quoted(store.opts.schema);
    await raw.query(
      `INSERT INTO ${s}.shared_values (key, value, expires_at) SELECT 'old:' || i, '{}', now() - interval '1 second' FROM generate_series(1, 2500) i`,
    );
    await store.putValue('live', { v: 1 }, LONG_MS);
    t.equal(await store.reap(), 2500, 'every expired row, in several batches');
    const left = await raw.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${s}.shared_values`);
    t.equal(left.rows[0]?.n, 1, 'only the live value is left');
  });

  t.test('bus: messages too large for a NOTIFY payload reach every instance, the publisher’s own included, in order', async (t) => {
    const store = await connected({ url });
    const peer = await connected({ url, schema: store.opts.schema });
    t.teardown(async () => {
      await store.close();
      await peer.close();
    });
    const heard = { own: [] as JsonObject[], peer: [] as JsonObject[] };
    await store.subscribe('big', (m) => heard.own.push(m));
    await peer.subscribe('big', (m) => heard.peer.push(m));

    const big = [
      { n: 1, body: 'x'.repeat(20_000) },
      { n: 2, body: 'y'.repeat(200_000), nested: { list: Array.from({ length: 100 }, (_, i) => ({ i, s: 'z'.repeat(50) })) } },
      // 4,000 characters but 8,000 bytes: too large for a NOTIFY payload in bytes, not in characters.
      { n: 3, body: 'é'.repeat(4_000) },
      // 3,400 characters, 6,800 bytes: just small enough to go as it is.
      { n: 4, body: 'é'.repeat(3_400) },
    ];
    for (const m of big) await store.publish('big', m);
    await eventually('both instances heard the large messages', () => heard.own.length >= big.length && heard.peer.length >= big.length);
    t.same(heard.peer, big, 'the peer got them whole, in order');
    t.same(heard.own, big, 'so did the publisher’s own subscription');

    heard.own.length = 0;
    heard.peer.length = 0;
    const mixed = Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? { seq: i, body: String(i % 10).repeat(20_000) } : { seq: i, body: 'small' }));
    for (const m of mixed) await store.publish('big', m);
    await eventually('both instances heard the 20 messages', () => heard.own.length >= 20 && heard.peer.length >= 20);
    t.same(
      heard.peer.map((m) => m['seq']),
      mixed.map((m) => m.seq),
      'the peer got them in the order published (large and small alternating)',
    );
    t.same(heard.peer, mixed, 'each one whole');
    t.same(heard.own, mixed, 'the publisher’s own subscription too');
  });
});

/** Whether `store` answers now (a StoreUnavailableError is "not yet"; any other error fails the test). */
async function answers(store: PostgresTaskStore, r: TaskRecord): Promise<boolean> {
  try {
    return (await store.get(r.taskId)) !== undefined;
  } catch (err) {
    if (!(err instanceof StoreUnavailableError)) throw err;
    return false;
  }
}

const ownServer = postgresBinaryMissing();
if (ownServer) t.comment(`Postgres outage and durability tests skipped: ${ownServer}`);

t.test('postgres outage', { skip: ownServer ?? false }, async (t) => {
  const COMMAND_MS = 300;
  // Generous: the outcome asserted is "rejects, and does not hang", not a duration.
  const BOUND_MS = 5 * (COMMAND_MS + 200);

  for (const how of ['stop', 'kill'] as const) {
    t.test(`Postgres ${how === 'stop' ? 'stopped' : 'killed'}: every method fails fast; restarted: the same store works again, data intact`, async (t) => {
      const server = await startPostgres();
      t.teardown(() => server.dispose());
      const opts = { url: server.url, commandTimeoutMs: COMMAND_MS, connectTimeoutMs: COMMAND_MS };
      const store = await connected(opts);
      t.teardown(() => store.close());
      const heard: JsonObject[] = [];
      await store.subscribe('events', (m) => heard.push(m));
      const r = rec({ principal: 'kept', upstream: 'kept' });
      await store.create(r, LONG_MS, { owner: 'inst-a', ttlMs: LONG_MS });
      await store.putValue('v', { a: 1 }, LONG_MS);

      await server[how]();
      const calls = everyMethod(store, r);
      // Twice: as the connections drop, and again while the store keeps trying to reconnect.
      for (const round of ['at once', 'while reconnecting']) {
        await Promise.all(calls.map(([name, call]) => rejectsUnavailable(t, `${name} (${round})`, call(), BOUND_MS)));
      }
      const fresh = new PostgresTaskStore({ schema: store.opts.schema, ...DEFAULTS, ...opts });
      await rejectsUnavailable(t, 'connect() of a new store', fresh.connect(), BOUND_MS);
      await fresh.close();

      await server.restart();
      await eventually('the same store object answers again', () => answers(store, r), 15_000);
      t.same(await store.get(r.taskId), r, 'the record committed before the outage is still there (durable)');
      t.equal(await store.leaseOwner(r.taskId), 'inst-a', 'with its lease');
      t.same(await store.list({ principal: 'kept', upstream: 'kept', limit: 10 }), { tasks: [r], more: false }, 'listed');
      t.equal(await store.activeCount('kept'), 1, 'and counted');
      t.same(await store.getValue('v'), { a: 1 }, 'the value too');
      const after = rec();
      await store.create(after, LONG_MS);
      t.same(await store.get(after.taskId), after, 'create and get work again');
      const other = await connected({ ...opts, schema: store.opts.schema, migrate: 'off' });
      t.teardown(() => other.close());
      // At most once: a message published while the LISTEN connection is being restored may be lost, so publish
      // until one arrives (bounded).
      let n = 0;
      await eventually(
        'the subscription made before the outage hears events again',
        async () => {
          await other.publish('events', { n: ++n });
          return heard.length > 0;
        },
        15_000,
      );
      t.ok(
        heard.every((m) => typeof m['n'] === 'number' && m['n'] > 0),
        'only messages published after the restart',
      );
    });
  }

  t.test('Postgres hangs (SIGSTOP): every method fails fast; thawed: the same store works again, data intact', async (t) => {
    const server = await startPostgres();
    t.teardown(() => server.dispose());
    const opts = { url: server.url, commandTimeoutMs: COMMAND_MS, connectTimeoutMs: COMMAND_MS };
    const store = await connected(opts);
    t.teardown(() => store.close());
    const heard: JsonObject[] = [];
    await store.subscribe('events', (m) => heard.push(m));
    const r = rec({ principal: 'kept', upstream: 'kept' });
    await store.create(r, LONG_MS, { owner: 'inst-a', ttlMs: LONG_MS });
    // The calls made while Postgres hangs are about another record: a timed-out write may still apply once it thaws.
    const victim = rec();
    await store.create(victim, LONG_MS);

    server.pause();
    // Connections stay open and nothing answers: only the statement and connection bounds end each call.
    await Promise.all(everyMethod(store, victim).map(([name, call]) => rejectsUnavailable(t, `${name} (hung)`, call(), BOUND_MS)));
    const err = await store.getValue('k').catch((e: unknown) => e);
    t.ok(err instanceof StoreUnavailableError && err.cause instanceof Error, 'the low-level cause is kept', { found: String(err) });
    server.resume();

    await eventually('the same store object answers again', () => answers(store, r), 15_000);
    t.same(await store.get(r.taskId), r, 'the record is intact');
    t.equal(await store.leaseOwner(r.taskId), 'inst-a', 'with its lease');
    t.equal(await store.activeCount('kept'), 1);
    t.same(await store.list({ principal: 'kept', upstream: 'kept', limit: 10 }), { tasks: [r], more: false });
    let n = 0;
    await eventually(
      'the subscription made before the hang hears events again',
      async () => {
        await store.publish('events', { n: ++n });
        return heard.length > 0;
      },
      15_000,
    );
    t.pass('events flow again');
  });
});

t.test(
  'a create that resolved is durable: 50 records, the server killed right after the last, all there after restart',
  { skip: ownServer ?? false },
  async (t) => {
    const server = await startPostgres();
    t.teardown(() => server.dispose());
    const store = await connected({ url: server.url });
    t.teardown(() => store.close());
    const records = Array.from({ length: 50 }, (_, i) =>
      rec({ principal: 'durable', createdAt: new Date(Date.UTC(2026, 7, 1, 9, 0, i)).toISOString(), lastUpdatedAt: '2026-08-01T09:00:00.000Z' }),
    );
    for (const r of records) await store.create(r, LONG_MS);
    // A crash at the first moment after the last acknowledgement: no shutdown checkpoint, only the WAL.
    await server.kill();
    await server.restart();
    const after = await connected({ url: server.url, schema: store.opts.schema });
    t.teardown(() => after.close());
    const found = await Promise.all(records.map((r) => after.get(r.taskId)));
    t.equal(found.filter((x) => x !== undefined).length, 50, 'all 50 are there');
    t.same(found, records, 'each as it was created');
    t.same(await after.list({ principal: 'durable', upstream: 'up-1', limit: 100 }), { tasks: records, more: false }, 'and listed in order');
  },
);

t.test(
  'finished records: a copy read once answers later gets, even while the database is away, and goes with its row',
  { skip: ownServer ?? false },
  async (t) => {
    const server = await startPostgres();
    t.teardown(() => server.dispose());
    const store = await connected({ url: server.url, commandTimeoutMs: 300, connectTimeoutMs: 300 });
    t.teardown(() => store.close());
    const finished = rec({ status: 'completed' });
    const running = rec();
    await store.create(finished, LONG_MS);
    await store.create(running, LONG_MS);
    const ended = rec();
    await store.create(ended, LONG_MS);
    const r = await store.replace({ ...ended, status: 'failed' }, 0);
    t.ok(r.ok, 'a record ended by this store');
    t.same(await store.get(finished.taskId), finished, 'read once');
    const short = rec({ status: 'cancelled' });
    await store.create(short, 300);
    t.same(await store.get(short.taskId), short, 'a short-lived finished record, read once');

    await server.stop();
    t.same(await store.get(finished.taskId), finished, 'a finished record read before answers while the database is away');
    t.equal((await store.get(ended.taskId))?.status, 'failed', 'so does one this store ended');
    await t.rejects(store.get(running.taskId), StoreUnavailableError, 'a running one needs the database');
    await t.rejects(store.replace({ ...finished, status: 'failed' }, 1), StoreUnavailableError, 'and every write does');
    await eventually(
      'the short-lived copy goes when its row expires',
      async () => (await store.get(short.taskId).catch(() => 'unavailable')) === 'unavailable',
    );
    await server.restart();
    await eventually('the database answers again', () => answers(store, running));
    t.equal(await store.get(short.taskId), undefined, 'the expired one is gone there too');
  },
);

// Debian's postgresql brings openssl (ssl-cert); elsewhere it may be missing.
const noOpenssl = spawnSync('openssl', ['version']).status === 0 ? undefined : 'no openssl to make a certificate with';

t.test('TLS (store.tls): verified against its CA, encrypted without verifying, refused by another CA', { skip: ownServer ?? noOpenssl ?? false }, async (t) => {
  const server = await startPostgres({ tls: true });
  t.teardown(() => server.dispose());
  const caFile = server.caFile as string;
  const raw = new pg.Client({ connectionString: server.url });
  await raw.connect();
  t.teardown(() => raw.end());
  /** Whether each connection of the gateway's stores (by their application name) is encrypted. */
  const encrypted = async (): Promise<boolean[]> =>
    (
      await raw.query<{ ssl: boolean }>("SELECT s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'mcp-tasks-gateway'")
    ).rows.map((x) => x.ssl);

  const verified = await connected({ url: server.url, tls: { mode: 'verify', caFile } });
  const r = rec();
  await verified.create(r, LONG_MS);
  t.same(await verified.get(r.taskId), r, 'verify against the server’s CA: the store works');
  let conns = await encrypted();
  t.ok(conns.length >= 2 && conns.every(Boolean), `every connection of it is TLS (${conns.length}: the pool’s and the LISTEN one)`);
  await verified.close();

  const required = await connected({ url: server.url, tls: { mode: 'require' } });
  await required.ping();
  conns = await encrypted();
  t.ok(conns.length >= 1 && conns.every(Boolean), 'require: encrypted, the certificate not checked');
  await required.close();

  const [otherCrt, otherKey] = [join(dirname(caFile), 'other.crt'), join(dirname(caFile), 'other.key')];
  selfSigned(otherCrt, otherKey, '127.0.0.1');
  const wrong = new PostgresTaskStore({ schema: schemaFor('t'), ...DEFAULTS, url: server.url, tls: { mode: 'verify', caFile: otherCrt } });
  const err = await wrong.connect().catch((e: unknown) => e);
  t.ok(err instanceof StoreUnavailableError, 'verify against another CA: refused, as the store being unavailable', { found: String(err) });
  t.match((err as StoreUnavailableError).detail, /certificate/i, 'the operator’s detail names the certificate');
  await wrong.close();
});
