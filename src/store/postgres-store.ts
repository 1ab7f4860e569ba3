/**
 * The Postgres task store (durable tasks; several gateway instances share one database): see `task-store.ts` for the
 * contract, which `memory-store.ts` implements as the reference, and `postgres-schema.ts` for the tables.
 *
 * Every transition is one SQL statement (atomic on the server; autocommit, so that a `create` resolves only once its
 * row is committed: durable creation, tasks extension §Task Creation). Times that decide expiry, leases and counters
 * come from the database's clock (`now()`), so that instances with skewed clocks agree. A compare-and-set is an
 * UPDATE guarded by the version it expects (READ COMMITTED re-checks the guard on the row a concurrent writer left,
 * so exactly one of several writers wins). Lapsed leases are claimed with `FOR UPDATE SKIP LOCKED`: each goes to one
 * claimer however many ask. Expired rows are invisible to every read and deleted by a periodic reaper on each instance.
 *
 * The instance bus is LISTEN/NOTIFY on one channel per schema (`<schema>_events`), on a connection of its own that
 * reconnects by itself; a message is `{"t": topic, "m": message}`, and one too large for a NOTIFY payload is stored
 * in `events` and notified by its id (read, then delivered in order).
 *
 * An outage is a fast `StoreUnavailableError`: each statement bounded by `commandTimeoutMs` (client and server side),
 * each new connection by `connectTimeoutMs`; the pool opens new connections as they are needed, so the store recovers
 * by itself when the database returns. The password in the URL is never logged (errors name the host only).
 */
import { readFileSync } from 'node:fs';
import { LRUCache } from 'lru-cache';
import pg from 'pg';
import { isTerminal, type JsonObject, type TaskId, type TaskRecord } from '../translate/index.js';
import { migrate, quoted, SCHEMA_VERSION, schemaVersionOf } from './postgres-schema.js';
import {
  openOnce,
  StoreUnavailableError,
  TaskIdClashError,
  updateByReplace,
  type CounterHit,
  type ExpiredLease,
  type ReplaceResult,
  type TaskListQuery,
  type TaskStore,
} from './task-store.js';

/** TLS to the database (`store.tls`); absent: as the URL's `sslmode` says. */
export interface PostgresTls {
  /** `require`: encrypted, the server's certificate not checked; `verify`: checked against `caFile` (or the system's CAs) and the host name. */
  mode: 'disable' | 'require' | 'verify';
  caFile?: string | undefined;
  /** A client certificate and its key (PEM files), for servers that authenticate clients by certificate. */
  certFile?: string | undefined;
  keyFile?: string | undefined;
}

/** Postgres store options (from `store: { kind: postgres, … }`). */
export interface PostgresStoreOptions {
  url: string;
  /** The schema holding the tables (several deployments can share one database). */
  schema: string;
  /** No record is retained longer than this. */
  maxTtlMs: number;
  /** Bound on each statement (an outage is an error after at most this long). */
  commandTimeoutMs: number;
  /** Bound on opening a connection (and on waiting for a free one in the pool). */
  connectTimeoutMs: number;
  /** Most connections in the pool. */
  poolSize: number;
  /** `auto`: `connect()` migrates the schema; `off`: it only checks that the schema is at the version this gateway needs. */
  migrate: 'auto' | 'off';
  tls?: PostgresTls;
  /** How often this instance deletes expired rows (default 30 s). */
  reapEveryMs?: number;
}

/** How often expired rows are deleted, by default. */
const REAP_MS = 30_000;
/** Rows one reaper statement deletes at most (a long backlog is deleted in several). */
const REAP_BATCH = 1_000;
/** How long a large bus message's body is kept for its listeners to read. */
const EVENT_BODY_KEEP_MS = 60_000;
/** The largest NOTIFY payload sent as it is (Postgres takes under 8,000 bytes); larger goes through `events`. */
const NOTIFY_MAX_BYTES = 7_000;

/**
 * Bytes of finished records each store object keeps in memory. A terminal record never changes (the contract), so a
 * copy read once answers every later `get` until the row expires: polls of a finished task (a client reading its
 * result, again and again) cost no round trip. Bounded by the records' JSON size; the least recently read go first.
 */
const FINISHED_CACHE_BYTES = 32 * 1024 * 1024;

/** Listener reconnect backoff: quick at first, at most 2 s apart, forever. */
const backoff = (times: number): number => Math.min(100 * 2 ** Math.max(0, times - 1), 2000);

/**
 * A string as a column holds it: Postgres text cannot hold NUL, and principals may hold any character. Injective
 * (backslashes doubled, NUL as `\0`), and the identity on strings with neither; columns are compared, never read back
 * (the record's JSON keeps the real values).
 */
const col = (s: string): string => (s.includes('\\') || s.includes('\u0000') ? s.replaceAll('\\', '\\\\').replaceAll('\u0000', '\\0') : s);

/** The statements, named so that each connection parses and plans each once. */
function statements(s: string) {
  const ms = (n: number) => `now() + $${n}::int * interval '1 millisecond'`;
  // How long a row has left, in whole ms (rounded down: a cached copy never outlives the row).
  const leftMs = 'floor(extract(epoch FROM (expires_at - now())) * 1000)::float8';
  const t = `${s}.tasks`;
  return {
    create: `INSERT INTO ${t} AS x (task_id, principal, upstream, session, created_at, version, terminal, record, expires_at, lease_owner, lease_until)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, ${ms(9)}, $10, CASE WHEN $10::text IS NULL THEN NULL ELSE ${ms(11)} END)
      ON CONFLICT (task_id) DO UPDATE SET principal = EXCLUDED.principal, upstream = EXCLUDED.upstream, session = EXCLUDED.session,
        created_at = EXCLUDED.created_at, version = EXCLUDED.version, terminal = EXCLUDED.terminal, record = EXCLUDED.record,
        expires_at = EXCLUDED.expires_at, lease_owner = EXCLUDED.lease_owner, lease_until = EXCLUDED.lease_until
      WHERE x.expires_at <= now()`,
    get: `SELECT record, terminal, ${leftMs} AS left_ms FROM ${t} WHERE task_id = $1 AND expires_at > now()`,
    replace: `UPDATE ${t} SET version = version + 1, terminal = $3, record = $4
      WHERE task_id = $1 AND version = $2 AND NOT terminal AND expires_at > now() RETURNING ${leftMs} AS left_ms`,
    current: `SELECT terminal, record FROM ${t} WHERE task_id = $1 AND expires_at > now()`,
    list: `SELECT record FROM ${t} WHERE principal = $1 AND upstream = $2 AND expires_at > now() AND ($3::text IS NULL OR session = $3)
      ORDER BY created_at, task_id LIMIT $4`,
    listAfter: `SELECT record FROM ${t} WHERE principal = $1 AND upstream = $2 AND expires_at > now() AND ($3::text IS NULL OR session = $3)
      AND (created_at, task_id) > ($5, $6) ORDER BY created_at, task_id LIMIT $4`,
    active: `SELECT count(*)::int AS n FROM ${t} WHERE principal = $1 AND NOT terminal AND expires_at > now()`,
    acquire: `UPDATE ${t} SET lease_owner = $2, lease_until = ${ms(3)}
      WHERE task_id = $1 AND expires_at > now() AND (lease_owner IS NULL OR lease_owner = $2 OR lease_until <= now())`,
    renew: `UPDATE ${t} SET lease_until = ${ms(3)} WHERE task_id = ANY($1::text[]) AND lease_owner = $2 AND expires_at > now() RETURNING task_id`,
    drop: `UPDATE ${t} SET lease_owner = NULL, lease_until = NULL WHERE task_id = $1 AND lease_owner = $2`,
    handover: `UPDATE ${t} SET lease_until = '-infinity' WHERE task_id = $1 AND lease_owner = $2`,
    claim: `UPDATE ${t} x SET lease_owner = $1, lease_until = ${ms(2)}
      FROM (SELECT task_id, lease_owner FROM ${t} WHERE lease_owner IS NOT NULL AND lease_until <= now() AND expires_at > now()
            ORDER BY lease_until LIMIT $3 FOR UPDATE SKIP LOCKED) old
      WHERE x.task_id = old.task_id RETURNING x.task_id, old.lease_owner AS previous`,
    leaseOwner: `SELECT lease_owner FROM ${t} WHERE task_id = $1 AND lease_until > now() AND expires_at > now()`,
    hit: `INSERT INTO ${s}.counters AS c (key, count, window_end) VALUES ($1, 1, ${ms(2)})
      ON CONFLICT (key) DO UPDATE SET
        count = CASE WHEN c.window_end <= now() THEN 1 ELSE c.count + 1 END,
        window_end = CASE WHEN c.window_end <= now() THEN ${ms(2)} ELSE c.window_end END
      RETURNING count, GREATEST(1, ceil(extract(epoch FROM (window_end - now())) * 1000))::int AS left_ms`,
    put: `INSERT INTO ${s}.shared_values (key, value, expires_at) VALUES ($1, $2, ${ms(3)})
      ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at`,
    putIfAbsent: `INSERT INTO ${s}.shared_values AS v (key, value, expires_at) VALUES ($1, $2, ${ms(3)})
      ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at WHERE v.expires_at <= now()`,
    getValue: `SELECT value FROM ${s}.shared_values WHERE key = $1 AND expires_at > now()`,
    touch: `UPDATE ${s}.shared_values SET expires_at = ${ms(2)} WHERE key = $1 AND expires_at > now()`,
    deleteValue: `DELETE FROM ${s}.shared_values WHERE key = $1 AND expires_at > now()`,
    notify: 'SELECT pg_notify($1, $2)',
    notifyStored: `WITH e AS (INSERT INTO ${s}.events (body) VALUES ($2) RETURNING id) SELECT pg_notify($1, '#' || e.id) FROM e`,
    eventBody: `SELECT body FROM ${s}.events WHERE id = $1`,
  } as const;
}

type Statement = keyof ReturnType<typeof statements>;

/** The deletions of the reaper, each bounded to a batch (`$1`: how long an event body is kept). */
function reapers(s: string): string[] {
  const batch = (table: string, expired: string) =>
    `DELETE FROM ${s}.${table} WHERE ctid = ANY(ARRAY(SELECT ctid FROM ${s}.${table} WHERE ${expired} LIMIT ${REAP_BATCH}))`;
  return [
    batch('tasks', 'expires_at < now()'),
    batch('shared_values', 'expires_at < now()'),
    batch('counters', 'window_end < now()'),
    batch('events', `at < now() - interval '${EVENT_BODY_KEEP_MS} milliseconds'`),
  ];
}

/** The `pg` TLS option for `tls`, or `undefined` to leave it to the URL. */
function sslOf(tls: PostgresTls | undefined): pg.ClientConfig['ssl'] {
  if (!tls) return undefined;
  if (tls.mode === 'disable') return false;
  const read = (f: string | undefined) => (f === undefined ? undefined : readFileSync(f, 'utf8'));
  return { rejectUnauthorized: tls.mode === 'verify', ca: read(tls.caFile), cert: read(tls.certFile), key: read(tls.keyFile) };
}

interface Topic {
  listeners: Set<(message: JsonObject) => void>;
}

/** A `TaskStore` on Postgres. */
export class PostgresTaskStore implements TaskStore {
  readonly scope = 'shared' as const;
  private readonly pool: pg.Pool;
  private readonly sql: ReturnType<typeof statements>;
  /** The reaper's deletions, for this schema. */
  private readonly reaping: readonly string[];
  private readonly channel: string;
  private readonly topics = new Map<string, Topic>();
  /** Terminal records by id, each until its row expires (see FINISHED_CACHE_BYTES). */
  private readonly finished = new LRUCache<string, TaskRecord>({ maxSize: FINISHED_CACHE_BYTES, ttlAutopurge: false });
  private readonly connection: pg.ClientConfig;
  /** The LISTEN connection, once listening. */
  private listener: pg.Client | undefined;
  /** Opening the LISTEN connection (one attempt at a time). */
  private listening: Promise<void> | undefined;
  private reconnectTimer: NodeJS.Timeout | undefined;
  private reconnects = 0;
  /** Deliveries in order: a large message's body is read before the messages after it are delivered. */
  private delivering: Promise<void> = Promise.resolve();
  private pendingReads = 0;
  private reaper: NodeJS.Timeout | undefined;
  private readonly opening = openOnce(() => this.open());
  private closing: Promise<void> | undefined;

  constructor(readonly opts: PostgresStoreOptions) {
    const s = quoted(opts.schema);
    this.sql = statements(s);
    this.reaping = reapers(s);
    this.channel = `${opts.schema}_events`;
    const ssl = sslOf(opts.tls);
    this.connection = {
      connectionString: opts.url,
      connectionTimeoutMillis: opts.connectTimeoutMs,
      query_timeout: opts.commandTimeoutMs,
      statement_timeout: opts.commandTimeoutMs,
      lock_timeout: opts.commandTimeoutMs,
      idle_in_transaction_session_timeout: Math.max(10_000, opts.commandTimeoutMs * 5),
      keepAlive: true,
      application_name: 'mcp-tasks-gateway',
      ...(ssl !== undefined ? { ssl } : {}),
    };
    this.pool = new pg.Pool({ ...this.connection, max: opts.poolSize, idleTimeoutMillis: 30_000 });
    // An idle connection's error (the server gone) would crash the process unhandled; the pool drops that connection
    // and the next statement opens a new one (or fails fast, to its caller).
    this.pool.on('error', () => {});
  }

  /**
   * Connects, migrates the schema (or checks its version, `migrate: off`), starts listening and reaping; rejects with
   * `StoreUnavailableError` when the database cannot be reached within `connectTimeoutMs`. Called again while
   * connected, it resolves at once; after a failure it tries again.
   */
  connect(): Promise<void> {
    if (this.closing) return Promise.reject(new StoreUnavailableError('connect: the store is closed'));
    return this.opening();
  }

  private async open(): Promise<void> {
    try {
      if (this.opts.migrate === 'auto') await migrate(this.pool, this.opts.schema);
      else {
        const at = await schemaVersionOf(this.pool, this.opts.schema);
        if (at < SCHEMA_VERSION) {
          throw new SchemaVersionError(
            `the schema "${this.opts.schema}" is at version ${at}, this gateway needs ${SCHEMA_VERSION}: ` +
              'run mcp-tasks-gateway --migrate (or set store.migrate: auto)',
          );
        }
      }
      await this.listen();
    } catch (err) {
      if (err instanceof SchemaVersionError) throw new StoreUnavailableError(err.message, { cause: err });
      throw new StoreUnavailableError(`cannot reach Postgres: ${(err as Error).message}`, { cause: err });
    }
    // A store closed while it was opening starts no reaper (close() has already cleared it).
    if (this.closing) return;
    this.reaper ??= setInterval(() => void this.reap().catch(() => {}), this.opts.reapEveryMs ?? REAP_MS);
    this.reaper.unref();
  }

  /** Brings the schema to this gateway's version (`--migrate`); resolves to the versions applied. */
  async migrate(): Promise<number[]> {
    return this.command('migrate', () => migrate(this.pool, this.opts.schema));
  }

  async create(record: TaskRecord, retentionMs: number, lease?: { owner: string; ttlMs: number }): Promise<void> {
    const ttl = Math.max(1, Math.ceil(Math.min(retentionMs, this.opts.maxTtlMs)));
    const r = await this.run('create', [
      record.taskId,
      col(record.principal),
      col(record.upstream),
      record.session === undefined ? null : col(record.session),
      record.createdAt,
      record.version,
      isTerminal(record.status),
      JSON.stringify(record),
      ttl,
      lease?.owner ?? null,
      lease ? Math.max(1, Math.ceil(lease.ttlMs)) : 0,
    ]);
    if (r.rowCount === 0) throw new TaskIdClashError(record.taskId);
  }

  async get(taskId: TaskId): Promise<TaskRecord | undefined> {
    const held = this.finished.get(taskId);
    if (held) return held;
    const r = await this.run<{ record: string; terminal: boolean; left_ms: number }>('get', [taskId]);
    const row = r.rows[0];
    if (!row) return undefined;
    const record = JSON.parse(row.record) as TaskRecord;
    if (row.terminal) this.keepFinished(record, row.record.length, row.left_ms);
    return record;
  }

  async replace(next: TaskRecord, expectedVersion: number): Promise<ReplaceResult> {
    const stored: TaskRecord = { ...next, version: expectedVersion + 1 };
    const json = JSON.stringify(stored);
    const terminal = isTerminal(next.status);
    const r = await this.run<{ left_ms: number }>('replace', [next.taskId, expectedVersion, terminal, json]);
    if (r.rowCount === 1) {
      if (terminal) this.keepFinished(stored, json.length, r.rows[0]!.left_ms);
      return { ok: true, record: stored };
    }
    // Why it did not apply, from the row as it is now.
    const now = await this.run<{ terminal: boolean; record: string }>('current', [next.taskId]);
    const row = now.rows[0];
    if (!row) return { ok: false, reason: 'not-found' };
    const current = JSON.parse(row.record) as TaskRecord;
    return { ok: false, reason: current.version !== expectedVersion ? 'conflict' : 'terminal', current };
  }

  update(taskId: TaskId, change: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    return updateByReplace(this, taskId, change);
  }

  async list(q: TaskListQuery): Promise<{ tasks: TaskRecord[]; more: boolean }> {
    const args: unknown[] = [col(q.principal), col(q.upstream), q.session === undefined ? null : col(q.session), q.limit + 1];
    const r = q.after
      ? await this.run<{ record: string }>('listAfter', [...args, q.after.createdAt, q.after.taskId])
      : await this.run<{ record: string }>('list', args);
    const tasks = r.rows.map((row) => JSON.parse(row.record) as TaskRecord);
    return { tasks: tasks.slice(0, q.limit), more: tasks.length > q.limit };
  }

  async activeCount(principal: string): Promise<number> {
    const r = await this.run<{ n: number }>('active', [col(principal)]);
    return r.rows[0]?.n ?? 0;
  }

  async ensureRoom(): Promise<void> {
    // Bounded by retention (maxTtlMs) and the per-principal limit, as the Redis store: there is always room.
  }

  async hit(key: string, windowMs: number): Promise<CounterHit> {
    const r = await this.run<{ count: number; left_ms: number }>('hit', [col(key), Math.max(1, Math.ceil(windowMs))]);
    const row = r.rows[0]!;
    return { count: row.count, resetInMs: Math.max(1, row.left_ms) };
  }

  async acquireLease(taskId: TaskId, owner: string, ttlMs: number): Promise<boolean> {
    return (await this.run('acquire', [taskId, owner, Math.max(1, Math.ceil(ttlMs))])).rowCount === 1;
  }

  async renewLeases(owner: string, taskIds: readonly TaskId[], ttlMs: number): Promise<TaskId[]> {
    if (taskIds.length === 0) return [];
    const r = await this.run<{ task_id: string }>('renew', [taskIds, owner, Math.max(1, Math.ceil(ttlMs))]);
    const held = new Set(r.rows.map((row) => row.task_id));
    return taskIds.filter((id) => held.has(id));
  }

  async releaseLease(taskId: TaskId, owner: string, mode: 'drop' | 'handover'): Promise<void> {
    await this.run(mode, [taskId, owner]);
  }

  async claimExpiredLeases(owner: string, ttlMs: number, limit: number): Promise<ExpiredLease[]> {
    if (limit <= 0) return [];
    const r = await this.run<{ task_id: string; previous: string }>('claim', [owner, Math.max(1, Math.ceil(ttlMs)), Math.floor(limit)]);
    return r.rows.map((row) => ({ taskId: row.task_id as TaskId, previousOwner: row.previous }));
  }

  async leaseOwner(taskId: TaskId): Promise<string | undefined> {
    const r = await this.run<{ lease_owner: string }>('leaseOwner', [taskId]);
    return r.rows[0]?.lease_owner ?? undefined;
  }

  async putValue(key: string, value: JsonObject, ttlMs: number, opts: { ifAbsent?: boolean } = {}): Promise<boolean> {
    const r = await this.run(opts.ifAbsent ? 'putIfAbsent' : 'put', [col(key), JSON.stringify(value), Math.max(1, Math.ceil(ttlMs))]);
    return r.rowCount === 1;
  }

  async getValue(key: string): Promise<JsonObject | undefined> {
    const r = await this.run<{ value: string }>('getValue', [col(key)]);
    const row = r.rows[0];
    return row ? (JSON.parse(row.value) as JsonObject) : undefined;
  }

  async touchValue(key: string, ttlMs: number): Promise<boolean> {
    return (await this.run('touch', [col(key), Math.max(1, Math.ceil(ttlMs))])).rowCount === 1;
  }

  async deleteValue(key: string): Promise<boolean> {
    return ((await this.run('deleteValue', [col(key)])).rowCount ?? 0) > 0;
  }

  async publish(topic: string, message: JsonObject): Promise<void> {
    const payload = `{"t":${JSON.stringify(topic)},"m":${JSON.stringify(message)}}`;
    await this.run(Buffer.byteLength(payload) <= NOTIFY_MAX_BYTES ? 'notify' : 'notifyStored', [this.channel, payload]);
  }

  async subscribe(topic: string, listener: (message: JsonObject) => void): Promise<() => void> {
    // Every topic shares the one LISTEN: subscribing is being registered while it listens, once it answers now (a
    // server just gone may not have been noticed yet). Subscriptions are few and made at start: a round trip is cheap.
    await this.command('subscribe', async () => {
      await this.listen();
      await this.listener?.query('SELECT 1');
    });
    let t = this.topics.get(topic);
    if (!t) this.topics.set(topic, (t = { listeners: new Set() }));
    const entry = t;
    entry.listeners.add(listener);
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      entry.listeners.delete(listener);
      if (entry.listeners.size === 0 && this.topics.get(topic) === entry) this.topics.delete(topic);
    };
  }

  /** A `SELECT 1`: bounded by `commandTimeoutMs`, failing at once while the database refuses connections. */
  async ping(): Promise<void> {
    await this.command('ping', () => this.pool.query('SELECT 1'));
  }

  /**
   * Deletes expired rows (records, values, counters, old event bodies), a batch at a time; every instance runs it
   * every `reapEveryMs`. Expired rows are already invisible: this only gives their room back.
   */
  async reap(): Promise<number> {
    let deleted = 0;
    for (const statement of this.reaping) {
      for (let round = 0; round < 100; round++) {
        const r = await this.command('reap', () => this.pool.query(statement));
        deleted += r.rowCount ?? 0;
        if ((r.rowCount ?? 0) < REAP_BATCH) break;
      }
    }
    return deleted;
  }

  /** Releases the pool and the LISTEN connection. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      clearInterval(this.reaper);
      clearTimeout(this.reconnectTimer);
      this.topics.clear();
      const l = this.listener;
      this.listener = undefined;
      await Promise.all([l?.end().catch(() => {}), this.pool.end().catch(() => {})]);
    })();
    return this.closing;
  }

  /** Keeps a terminal record for the `leftMs` its row has left (frozen: every reader shares it, as the memory store's). */
  private keepFinished(record: TaskRecord, size: number, leftMs: number): void {
    if (leftMs < 1 || size > FINISHED_CACHE_BYTES / 16) return;
    this.finished.set(record.taskId, Object.freeze(record), { ttl: Math.floor(leftMs), size: Math.max(1, size) });
  }

  /** Opens the LISTEN connection if it is not open (one attempt at a time); rejects when the database cannot be reached. */
  private listen(): Promise<void> {
    if (this.closing) return Promise.reject(new Error('the store is closed'));
    if (this.listener) return Promise.resolve();
    this.listening ??= this.openListener().finally(() => (this.listening = undefined));
    return this.listening;
  }

  private async openListener(): Promise<void> {
    const client = new pg.Client(this.connection);
    let lost = false;
    const onLost = () => {
      if (lost) return;
      lost = true;
      if (this.listener === client) this.listener = undefined;
      client.end().catch(() => {});
      this.scheduleReconnect();
    };
    client.on('error', onLost);
    client.on('end', onLost);
    client.on('notification', (n) => {
      if (n.channel === this.channel && n.payload !== undefined) this.received(n.payload);
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${quoted(this.channel)}`);
    } catch (err) {
      lost = true;
      client.end().catch(() => {});
      throw err;
    }
    if (this.closing) {
      await client.end().catch(() => {});
      throw new Error('the store is closed');
    }
    this.listener = client;
    this.reconnects = 0;
  }

  /** After the LISTEN connection is lost, it is opened again, with backoff, until it is or the store closes. */
  private scheduleReconnect(): void {
    if (this.closing || this.reconnectTimer) return;
    this.reconnectTimer = setTimeout(
      () => {
        this.reconnectTimer = undefined;
        if (this.closing || this.listener) return;
        this.listen().catch(() => this.scheduleReconnect());
      },
      backoff(++this.reconnects),
    );
    this.reconnectTimer.unref();
  }

  /** A notification: delivered at once, unless a large message before it is still being read (order is kept). */
  private received(payload: string): void {
    if (!payload.startsWith('#') && this.pendingReads === 0) {
      this.deliver(payload);
      return;
    }
    this.pendingReads++;
    this.delivering = this.delivering
      .then(async () => {
        if (!payload.startsWith('#')) return this.deliver(payload);
        const r = await this.run<{ body: string }>('eventBody', [payload.slice(1)]).catch(() => undefined);
        const body = r?.rows[0]?.body;
        // A body that could not be read (database gone, reaped) is a message lost: the bus is at most once.
        if (body !== undefined) this.deliver(body);
      })
      .finally(() => this.pendingReads--);
  }

  private deliver(payload: string): void {
    let parsed: { t?: unknown; m?: unknown };
    try {
      parsed = JSON.parse(payload) as { t?: unknown; m?: unknown };
    } catch {
      return; // not ours: every message this store publishes is JSON
    }
    if (typeof parsed.t !== 'string' || typeof parsed.m !== 'object' || parsed.m === null) return;
    const t = this.topics.get(parsed.t);
    if (!t) return;
    for (const listener of [...t.listeners]) {
      try {
        listener(parsed.m as JsonObject);
      } catch {
        // One listener's failure is its own; the others still hear the event.
      }
    }
  }

  /** Runs one named statement; any failure (connection refused or lost, timeout, server shut down) → `StoreUnavailableError`. */
  private run<R extends pg.QueryResultRow = pg.QueryResultRow>(name: Statement, values: unknown[]): Promise<pg.QueryResult<R>> {
    return this.command(name, () => this.pool.query<R>({ name, text: this.sql[name], values }));
  }

  private async command<T>(what: string, op: () => Promise<T>): Promise<T> {
    if (this.closing) throw new StoreUnavailableError(`${what}: the store is closed`);
    try {
      return await op();
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      throw new StoreUnavailableError(`${what}: ${(err as Error).message}${typeof code === 'string' ? ` (${code})` : ''}`, { cause: err });
    }
  }
}

/** The schema is older than this gateway needs and migrating at start is off. */
class SchemaVersionError extends Error {}
