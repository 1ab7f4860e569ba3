/**
 * The Redis task store (several gateway instances share one Redis): see `task-store.ts` for the contract, which
 * `memory-store.ts` implements as the reference.
 *
 * Data layout (every key and channel starts with `keyPrefix`; every key has a TTL):
 * - `<prefix>t:<taskId>`: the record, a hash {v: version, f: "1" when terminal else "0", r: record JSON (its
 *   `version` equal to v), lo: lease owner, lu: lease expiry (server ms)}; PX = min(retention, maxTtlMs) set by
 *   `create`, never changed after (HSET keeps the TTL), so the retention stays counted from creation and a task's
 *   lease goes with its record.
 * - `<prefix>i:<h(principal, upstream)>`: the inventory of one principal on one upstream, a sorted set with every
 *   score 0 and members `<createdAt>\0<taskId>`, so that ZRANGEBYLEX pages in (createdAt, taskId) order. Members of
 *   expired records are removed lazily by `list`; the key's TTL is raised to its longest-living member's on create.
 * - `<prefix>a:<h(principal)>`: a principal's live tasks, a sorted set of task ids scored by their record's expiry
 *   (server ms): `activeCount` drops the expired ones then counts; a terminal `replace` removes its task. TTL as the
 *   inventory's.
 * - `<prefix>leases`: every lease, a sorted set of task ids scored by the lease's expiry (server ms; a handover
 *   scores 0), for `claimExpiredLeases`, which so takes handed-over leases first, then the longest lapsed; the owner
 *   is in the record's hash. Members of expired records are dropped by the claim; the key's TTL is raised to the
 *   longest-living record holding a lease.
 * - `<prefix>v:<key>`: a shared value, its JSON, with its own TTL.
 * - `<prefix>c:<key>`: a `hit` counter (INCR), its TTL the rest of its window (PEXPIRE on the first hit).
 * - channel `<prefix>ev:<topic>`: events, JSON messages, on a second (subscriber) connection.
 * `h(…)` is a SHA-256 (base64url) of the principal (and upstream): principals may hold any character.
 *
 * Transitions are Lua scripts (atomic on the server, loaded once per connection by ioredis `defineCommand`: EVALSHA
 * with an EVAL fallback), and times that decide leases and the active count come from the Redis server's clock
 * (TIME), so that instances with skewed clocks agree. An outage is a fast `StoreUnavailableError`: no offline queue,
 * no resent commands, every command bounded by `commandTimeoutMs`, while the connections keep reconnecting in the
 * background so the store recovers when Redis comes back. One Redis (standalone or behind Sentinel), not a Redis
 * Cluster: the lease claim reaches record keys it derives from the lease set.
 */
import { createHash } from 'node:crypto';
import { Redis, ReplyError } from 'ioredis';
import { isTerminal, type JsonObject, type TaskId, type TaskRecord } from '../translate/index.js';
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

/** Redis store options (from `store: { kind: redis, … }`). */
export interface RedisStoreOptions {
  url: string;
  /** Prefix of every key and channel. */
  keyPrefix: string;
  /** No record is retained longer than this. */
  maxTtlMs: number;
  /** Bound on each command (no offline queue: an outage is an error after at most this long). */
  commandTimeoutMs: number;
  connectTimeoutMs: number;
}

/** The server's clock in ms, and raising a key's TTL to at least `ms` (never lowering it). */
const LUA_HELPERS = `
local function nowms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function extend(key, ms)
  local p = redis.call('PTTL', key)
  if p < ms then redis.call('PEXPIRE', key, ms) end
end
`;

/**
 * The scripts, each called with its number of keys first. Returns are arrays of strings or integers (a Lua `nil`
 * would end an array early, so a missing value is '').
 */
const SCRIPTS = {
  // KEYS: record, inventory, active, leases. ARGV: version, final (1|0), record JSON, ttlMs, inventory member, taskId,
  // lease owner ('' = none), lease ttlMs. 0 = the id is taken.
  gwCreate: `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
local ttl = tonumber(ARGV[4])
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'f', ARGV[2], 'r', ARGV[3])
if ARGV[7] ~= '' then
  local exp = nowms() + tonumber(ARGV[8])
  redis.call('HSET', KEYS[1], 'lo', ARGV[7], 'lu', exp)
  redis.call('ZADD', KEYS[4], exp, ARGV[6])
end
redis.call('PEXPIRE', KEYS[1], ttl)
if ARGV[7] ~= '' then extend(KEYS[4], ttl) end
redis.call('ZADD', KEYS[2], 0, ARGV[5])
extend(KEYS[2], ttl)
if ARGV[2] == '0' then
  redis.call('ZADD', KEYS[3], nowms() + ttl, ARGV[6])
  extend(KEYS[3], ttl)
end
return 1`,
  // KEYS: record, active. ARGV: expected version, final (1|0), next record JSON, taskId.
  // {'ok'} | {'not-found'} | {'conflict'|'terminal', current JSON}.
  gwReplace: `
local cur = redis.call('HMGET', KEYS[1], 'v', 'f', 'r')
if not cur[1] then return {'not-found'} end
if tonumber(cur[1]) ~= tonumber(ARGV[1]) then return {'conflict', cur[3]} end
if cur[2] == '1' then return {'terminal', cur[3]} end
redis.call('HSET', KEYS[1], 'v', tonumber(ARGV[1]) + 1, 'f', ARGV[2], 'r', ARGV[3])
if ARGV[2] == '1' then redis.call('ZREM', KEYS[2], ARGV[4]) end
return {'ok'}`,
  // KEYS: records. The record JSON of each, '' when gone.
  gwRecords: `
local out = {}
for i, k in ipairs(KEYS) do out[i] = redis.call('HGET', k, 'r') or '' end
return out`,
  // KEYS: active.
  gwActive: `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', nowms())
return redis.call('ZCARD', KEYS[1])`,
  // KEYS: record, leases. ARGV: taskId, owner, ttlMs. 1 = held by owner now.
  gwAcquire: `
local l = redis.call('HMGET', KEYS[1], 'v', 'lo', 'lu')
if not l[1] then return 0 end
local now = nowms()
if l[2] and l[2] ~= ARGV[2] and tonumber(l[3]) > now then return 0 end
local exp = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'lo', ARGV[2], 'lu', exp)
redis.call('ZADD', KEYS[2], exp, ARGV[1])
extend(KEYS[2], redis.call('PTTL', KEYS[1]))
return 1`,
  // KEYS: leases, records…. ARGV: owner, ttlMs, taskIds… (in the records' order). The ids still held.
  // A lapsed lease nobody has claimed is still its owner's to renew (as in the memory store).
  gwRenew: `
local now = nowms()
local held = {}
for i = 2, #KEYS do
  if redis.call('HGET', KEYS[i], 'lo') == ARGV[1] then
    local exp = now + tonumber(ARGV[2])
    local id = ARGV[i + 1]
    redis.call('HSET', KEYS[i], 'lu', exp)
    redis.call('ZADD', KEYS[1], exp, id)
    held[#held + 1] = id
  end
end
return held`,
  // KEYS: record, leases. ARGV: taskId, owner, mode (drop|handover).
  gwRelease: `
if redis.call('HGET', KEYS[1], 'lo') ~= ARGV[2] then return 0 end
if ARGV[3] == 'drop' then
  redis.call('HDEL', KEYS[1], 'lo', 'lu')
  redis.call('ZREM', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[1], 'lu', 0)
  redis.call('ZADD', KEYS[2], 0, ARGV[1])
end
return 1`,
  // KEYS: leases. ARGV: owner, ttlMs, limit, record key prefix. {taskId, previous owner, …}. Atomic: each lapsed
  // lease goes to one claimer. The record keys are derived here (a standalone Redis, not a cluster).
  gwClaim: `
local now = nowms()
local limit = tonumber(ARGV[3])
local out = {}
local n = 0
local budget = 1000
while n < limit and budget > 0 do
  local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, limit - n)
  if #ids == 0 then break end
  for _, id in ipairs(ids) do
    budget = budget - 1
    local k = ARGV[4] .. id
    local lo = redis.call('HGET', k, 'lo')
    if lo then
      local exp = now + tonumber(ARGV[2])
      redis.call('HSET', k, 'lo', ARGV[1], 'lu', exp)
      redis.call('ZADD', KEYS[1], exp, id)
      out[#out + 1] = id
      out[#out + 1] = lo
      n = n + 1
    else
      redis.call('ZREM', KEYS[1], id)
    end
  end
end
return out`,
  // KEYS: counter. ARGV: window ms. {count, ms until the window has ended}. The first hit starts the window; a counter
  // somehow left without a TTL gets one (never a counter that lives for ever). Redis drops a key only once its expiry
  // time has passed, so the key lives one millisecond past its PTTL: it is set to the window less one, and the wait
  // named is its PTTL plus one (a hit after that wait starts a new window, never one more refusal).
  gwHit: `
local c = redis.call('INCR', KEYS[1])
local left = redis.call('PTTL', KEYS[1])
if c == 1 or left < 0 then
  left = math.max(1, tonumber(ARGV[1]) - 1)
  redis.call('PEXPIRE', KEYS[1], left)
end
return {c, left + 1}`,
  // KEYS: record. The owner of an unexpired lease, or ''.
  gwLeaseOwner: `
local l = redis.call('HMGET', KEYS[1], 'lo', 'lu')
if l[1] and tonumber(l[2]) > nowms() then return l[1] end
return ''`,
} as const;

type ScriptName = keyof typeof SCRIPTS;
type ScriptFn = (...args: (string | number)[]) => Promise<unknown>;

/** Scripts that only read (may run on a replica). */
const READ_ONLY: ReadonlySet<ScriptName> = new Set(['gwRecords', 'gwLeaseOwner']);

/** How many inventory entries `list` reads per round trip. */
const LIST_BATCH = 100;

/** A name part for any string (principals may hold ':' or anything else). */
const h = (...parts: string[]): string => createHash('sha256').update(JSON.stringify(parts)).digest('base64url');

/** An inventory member: sorts as (createdAt, taskId) under ZRANGEBYLEX (ids and timestamps hold no NUL). */
const member = (createdAt: string, taskId: string): string => `${createdAt}\u0000${taskId}`;

/** A TTL Redis takes (a positive integer of ms). */
const pxOf = (ms: number): number => Math.max(1, Math.ceil(ms));

/** Reconnect backoff: quick at first, at most 2 s apart, forever (the store recovers without being recreated). */
const retryStrategy = (times: number): number => Math.min(100 * 2 ** Math.max(0, times - 1), 2000);

interface Topic {
  listeners: Set<(message: JsonObject) => void>;
  /** The SUBSCRIBE, acknowledged. */
  subscribed: Promise<void>;
}

/** A `TaskStore` on Redis. */
export class RedisTaskStore implements TaskStore {
  readonly scope = 'shared' as const;
  private readonly redis: Redis;
  /** Pub/sub needs its own connection (a subscribed RESP2 connection takes no other command). */
  private readonly sub: Redis;
  private readonly topics = new Map<string, Topic>();
  private readonly opening = openOnce(() => this.open());
  /** The last error a connection reported (why a start failed). */
  private lastError: Error | undefined;
  private closing: Promise<void> | undefined;

  constructor(readonly opts: RedisStoreOptions) {
    this.redis = new Redis(opts.url, {
      lazyConnect: true,
      // A Redis outage is a fast, clear error, never a hang: nothing waits for a reconnect, nothing is resent
      // (a resent create could report its own write as an id clash).
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: opts.commandTimeoutMs,
      connectTimeout: opts.connectTimeoutMs,
      retryStrategy,
      autoResubscribe: true,
    });
    for (const [name, lua] of Object.entries(SCRIPTS)) {
      this.redis.defineCommand(name, { lua: LUA_HELPERS + lua, readOnly: READ_ONLY.has(name as ScriptName) });
    }
    this.sub = this.redis.duplicate();
    // An unhandled 'error' event would crash the process; the failures reach callers as rejected commands. The last
    // one is kept: a failed start names it (ECONNREFUSED, ENOTFOUND, WRONGPASS…), not the "Connection is closed." after it.
    const kept = (err: Error) => (this.lastError = err);
    this.redis.on('error', kept);
    this.sub.on('error', kept);
    this.sub.on('message', (channel: string, raw: string) => this.deliver(channel, raw));
  }

  /**
   * Connects and loads the scripts; rejects with `StoreUnavailableError` when Redis cannot be reached within
   * `connectTimeoutMs`. Called again while connected, it resolves at once; after a failure it tries again.
   */
  connect(): Promise<void> {
    if (this.closing) return Promise.reject(new StoreUnavailableError('connect: the store is closed'));
    return this.opening();
  }

  private async open(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no connection within ${this.opts.connectTimeoutMs} ms`)), this.opts.connectTimeoutMs);
    });
    this.lastError = undefined;
    try {
      await Promise.race([Promise.all([this.redis.connect(), this.sub.connect()]), deadline]);
      await Promise.race([Promise.all(Object.values(SCRIPTS).map((lua) => this.redis.script('LOAD', LUA_HELPERS + lua))), deadline]);
    } catch (err) {
      // No background reconnecting for a store that failed to start.
      this.redis.disconnect();
      this.sub.disconnect();
      // A reply error (NOAUTH on the script load) is the cause itself; a connection closed names what closed it.
      const cause = err instanceof ReplyError ? err : (this.lastError ?? err);
      throw new StoreUnavailableError(`cannot reach Redis: ${(cause as Error).message}`, { cause });
    } finally {
      clearTimeout(timer);
    }
  }

  async create(record: TaskRecord, retentionMs: number, lease?: { owner: string; ttlMs: number }): Promise<void> {
    const ttl = pxOf(Math.min(retentionMs, this.opts.maxTtlMs));
    const keys = [this.recordKey(record.taskId), this.inventoryKey(record.principal, record.upstream), this.activeKey(record.principal), this.leasesKey()];
    const created = await this.call('create', 'gwCreate', keys, [
      record.version,
      isTerminal(record.status) ? 1 : 0,
      JSON.stringify(record),
      ttl,
      member(record.createdAt, record.taskId),
      record.taskId,
      lease?.owner ?? '',
      lease ? pxOf(lease.ttlMs) : 0,
    ]);
    if (created === 0) throw new TaskIdClashError(record.taskId);
  }

  async get(taskId: TaskId): Promise<TaskRecord | undefined> {
    const r = await this.command('get', () => this.redis.hget(this.recordKey(taskId), 'r'));
    return r ? (JSON.parse(r) as TaskRecord) : undefined;
  }

  async replace(next: TaskRecord, expectedVersion: number): Promise<ReplaceResult> {
    const stored: TaskRecord = { ...next, version: expectedVersion + 1 };
    const out = (await this.call(
      'replace',
      'gwReplace',
      [this.recordKey(next.taskId), this.activeKey(next.principal)],
      [expectedVersion, isTerminal(next.status) ? 1 : 0, JSON.stringify(stored), next.taskId],
    )) as [string, string?];
    const [status, current] = out;
    if (status === 'ok') return { ok: true, record: stored };
    if (status === 'conflict' || status === 'terminal') {
      return current ? { ok: false, reason: status, current: JSON.parse(current) as TaskRecord } : { ok: false, reason: status };
    }
    return { ok: false, reason: 'not-found' };
  }

  update(taskId: TaskId, change: (current: TaskRecord) => TaskRecord | undefined): Promise<TaskRecord | undefined> {
    return updateByReplace(this, taskId, change);
  }

  async list(q: TaskListQuery): Promise<{ tasks: TaskRecord[]; more: boolean }> {
    const inv = this.inventoryKey(q.principal, q.upstream);
    const found: TaskRecord[] = [];
    let start = q.after ? `(${member(q.after.createdAt, q.after.taskId)}` : '-';
    // Read pages until one more than asked is found (so `more` is exact) or the inventory ends; a session narrows
    // the tasks while paging, so a page may take several reads.
    while (found.length <= q.limit) {
      const batch = Math.max(LIST_BATCH, q.limit + 1);
      const members = await this.command('list', () => this.redis.zrangebylex(inv, start, '+', 'LIMIT', 0, batch));
      if (members.length === 0) break;
      const ids = members.map((m) => m.slice(m.indexOf('\u0000') + 1));
      const raws = (await this.call(
        'list',
        'gwRecords',
        ids.map((id) => this.recordKey(id as TaskId)),
        [],
      )) as string[];
      const gone: string[] = [];
      raws.forEach((raw, i) => {
        if (!raw) {
          gone.push(members[i]!);
          return;
        }
        const r = JSON.parse(raw) as TaskRecord;
        if (r.principal === q.principal && r.upstream === q.upstream && (q.session === undefined || r.session === q.session)) found.push(r);
      });
      // Entries of expired records leave lazily (the inventory's own TTL bounds what is never read).
      if (gone.length > 0) await this.command('list', () => this.redis.zrem(inv, ...gone));
      if (members.length < batch) break;
      start = `(${members[members.length - 1]!}`;
    }
    return { tasks: found.slice(0, q.limit), more: found.length > q.limit };
  }

  async ensureRoom(): Promise<void> {
    // Bounded by key TTLs, not a count: there is always room.
  }

  async hit(key: string, windowMs: number): Promise<CounterHit> {
    const [count, left] = (await this.call('hit', 'gwHit', [this.counterKey(key)], [pxOf(windowMs)])) as [number, number];
    return { count: Number(count), resetInMs: Math.max(1, Number(left)) };
  }

  async activeCount(principal: string): Promise<number> {
    return Number(await this.call('activeCount', 'gwActive', [this.activeKey(principal)], []));
  }

  async acquireLease(taskId: TaskId, owner: string, ttlMs: number): Promise<boolean> {
    const r = await this.call('acquireLease', 'gwAcquire', [this.recordKey(taskId), this.leasesKey()], [taskId, owner, pxOf(ttlMs)]);
    return r === 1;
  }

  async renewLeases(owner: string, taskIds: readonly TaskId[], ttlMs: number): Promise<TaskId[]> {
    if (taskIds.length === 0) return [];
    const keys = [this.leasesKey(), ...taskIds.map((id) => this.recordKey(id))];
    return (await this.call('renewLeases', 'gwRenew', keys, [owner, pxOf(ttlMs), ...taskIds])) as TaskId[];
  }

  async releaseLease(taskId: TaskId, owner: string, mode: 'drop' | 'handover'): Promise<void> {
    await this.call('releaseLease', 'gwRelease', [this.recordKey(taskId), this.leasesKey()], [taskId, owner, mode]);
  }

  async claimExpiredLeases(owner: string, ttlMs: number, limit: number): Promise<ExpiredLease[]> {
    if (limit <= 0) return [];
    const flat = (await this.call(
      'claimExpiredLeases',
      'gwClaim',
      [this.leasesKey()],
      [owner, pxOf(ttlMs), Math.floor(limit), this.recordKey('')],
    )) as string[];
    const claimed: ExpiredLease[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) claimed.push({ taskId: flat[i] as TaskId, previousOwner: flat[i + 1]! });
    return claimed;
  }

  async leaseOwner(taskId: TaskId): Promise<string | undefined> {
    const owner = await this.call('leaseOwner', 'gwLeaseOwner', [this.recordKey(taskId)], []);
    return typeof owner === 'string' && owner !== '' ? owner : undefined;
  }

  async putValue(key: string, value: JsonObject, ttlMs: number, opts: { ifAbsent?: boolean } = {}): Promise<boolean> {
    const k = this.valueKey(key);
    const json = JSON.stringify(value);
    const px = pxOf(ttlMs);
    const r = await this.command('putValue', () => (opts.ifAbsent ? this.redis.set(k, json, 'PX', px, 'NX') : this.redis.set(k, json, 'PX', px)));
    return r === 'OK';
  }

  async getValue(key: string): Promise<JsonObject | undefined> {
    const raw = await this.command('getValue', () => this.redis.get(this.valueKey(key)));
    return raw === null ? undefined : (JSON.parse(raw) as JsonObject);
  }

  async touchValue(key: string, ttlMs: number): Promise<boolean> {
    return (await this.command('touchValue', () => this.redis.pexpire(this.valueKey(key), pxOf(ttlMs)))) === 1;
  }

  async deleteValue(key: string): Promise<boolean> {
    return (await this.command('deleteValue', () => this.redis.del(this.valueKey(key)))) > 0;
  }

  async publish(topic: string, message: JsonObject): Promise<void> {
    await this.command('publish', () => this.redis.publish(this.channel(topic), JSON.stringify(message)));
  }

  async subscribe(topic: string, listener: (message: JsonObject) => void): Promise<() => void> {
    const channel = this.channel(topic);
    let t = this.topics.get(channel);
    if (!t) {
      // Several listeners share one Redis subscription; ioredis resubscribes it after a reconnect (autoResubscribe).
      const subscribed = this.command('subscribe', async () => {
        await this.sub.subscribe(channel);
      });
      t = { listeners: new Set(), subscribed };
      this.topics.set(channel, t);
      const entry = t;
      subscribed.catch(() => {
        if (this.topics.get(channel) !== entry) return;
        this.topics.delete(channel);
        // A SUBSCRIBE that timed out may still be applied late: take it back (a later SUBSCRIBE is sent after this).
        if (!this.closing) this.sub.unsubscribe(channel).catch(() => {});
      });
    }
    const entry = t;
    entry.listeners.add(listener);
    try {
      await entry.subscribed;
    } catch (err) {
      entry.listeners.delete(listener);
      throw err;
    }
    let removed = false;
    return () => {
      if (removed) return;
      removed = true;
      entry.listeners.delete(listener);
      if (entry.listeners.size === 0 && this.topics.get(channel) === entry) {
        this.topics.delete(channel);
        // Best effort: a failed UNSUBSCRIBE (Redis down) leaves a subscription whose messages find no listener.
        this.sub.unsubscribe(channel).catch(() => {});
      }
    };
  }

  /** A PING on the command connection: bounded by `commandTimeoutMs`, failing at once while disconnected. */
  async ping(): Promise<void> {
    await this.command('ping', () => this.redis.ping());
  }

  /** Releases resources (Redis: `quit`). Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.topics.clear();
      await Promise.all([quit(this.redis), quit(this.sub)]);
    })();
    return this.closing;
  }

  private deliver(channel: string, raw: string): void {
    const t = this.topics.get(channel);
    if (!t) return;
    let message: JsonObject;
    try {
      message = JSON.parse(raw) as JsonObject;
    } catch {
      return; // not ours: every message this store publishes is JSON
    }
    for (const listener of [...t.listeners]) {
      try {
        listener(message);
      } catch {
        // One listener's failure is its own; the others still hear the event.
      }
    }
  }

  /** Runs one command, any failure (connection closed, timeout, not writeable) → `StoreUnavailableError`. */
  private async command<T>(what: string, op: () => Promise<T>): Promise<T> {
    if (this.closing) throw new StoreUnavailableError(`${what}: the store is closed`);
    try {
      return await op();
    } catch (err) {
      throw new StoreUnavailableError(`${what}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Runs one of the scripts (its number of keys first, as `defineCommand` without `numberOfKeys` expects). */
  private call(what: string, name: ScriptName, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
    const fn = (this.redis as unknown as Record<ScriptName, ScriptFn>)[name];
    return this.command(what, () => fn.call(this.redis, keys.length, ...keys, ...args));
  }

  private recordKey(taskId: string): string {
    return `${this.opts.keyPrefix}t:${taskId}`;
  }
  private inventoryKey(principal: string, upstream: string): string {
    return `${this.opts.keyPrefix}i:${h(principal, upstream)}`;
  }
  private activeKey(principal: string): string {
    return `${this.opts.keyPrefix}a:${h(principal)}`;
  }
  private leasesKey(): string {
    return `${this.opts.keyPrefix}leases`;
  }
  private counterKey(key: string): string {
    return `${this.opts.keyPrefix}c:${key}`;
  }
  private valueKey(key: string): string {
    return `${this.opts.keyPrefix}v:${key}`;
  }
  private channel(topic: string): string {
    return `${this.opts.keyPrefix}ev:${topic}`;
  }
}

/** `quit` (replies flushed first), else drop the connection; either way no reconnecting after. */
async function quit(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    try {
      await client.quit();
      return;
    } catch {
      // fall through: the connection is gone or not answering
    }
  }
  client.disconnect();
}
