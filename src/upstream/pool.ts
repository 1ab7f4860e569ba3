/**
 * The legacy session pool of one upstream. A 2025-11-25 session carries state on the upstream (roots it asked for and
 * cached, subscriptions, tasks: 2025-11-25 basic/transports §Session Management), so who shares a session is a
 * security decision, made explicit here (README §Upstream session isolation):
 * - scope `principal`: one pooled session per principal (the edge's keyed fingerprint of the caller's credentials),
 *   never shared across principals;
 * - scope `request`: a fresh session per request, ended (DELETE) once the request and whatever it left running (an
 *   MRTR round, a task, a listen stream) are done;
 * - callers without credentials (principal `anonymous`) cannot be told apart: `anonymousScope` `request` (the default)
 *   gives each request its own session, `shared` lets them share one;
 * - a caller whose principal is not known gets a session of its own, as in scope `request`.
 * Every session declares each input kind the gateway can bridge, so declared client capabilities do not split sessions
 * (they are checked per request when the upstream asks): varying them never initializes another session.
 *
 * Bounded: at most `max` sessions (joined ones included); at most `maxPerPrincipal` of them for one principal, so that
 * no caller can take every session from the others (past its share, the principal's own least recently used idle
 * session is closed, else its request is refused before anything is sent upstream). Idle pooled sessions are closed
 * after `idleMs`; an expired session (404) is re-initialized once.
 */
import { BRIDGED_INPUT_CAPABILITIES, GatewayError, LEGACY_VERSION, LEGACY_VERSIONS, type LayerLogger, type UpstreamIdentity } from '../translate/index.js';
import { SessionExpiredError, UpstreamBusyError, UpstreamUnavailableError } from './errors.js';
import { LegacySession } from './legacy-session.js';

/** Who shares a session among callers with credentials (see the module comment). */
export type SessionScope = 'principal' | 'request';
/** Who shares a session among callers without credentials. */
export type AnonymousSessionScope = 'request' | 'shared';

/** Options of one upstream's pool. */
export interface PoolOptions {
  url: string;
  staticHeaders: Record<string, string>;
  timeoutMs: number;
  max: number;
  /** Sessions one principal may hold at once (default: `max`). */
  maxPerPrincipal?: number;
  idleMs: number;
  clientInfo: { name: string; version: string };
  /** The upstream layer's log (default nowhere). */
  log?: LayerLogger;
  /** Who shares a session (default `principal`). */
  scope?: SessionScope;
  /** Who shares a session among callers without credentials (default `request`). */
  anonymousScope?: AnonymousSessionScope;
}

/** Who a session is for: the caller's principal, and the credentials sent upstream on its behalf. */
export interface SessionKey {
  /** The edge's principal (`anonymous` without credentials); absent: not known, never shared. */
  principal?: string;
  authorization?: string;
}

/** The principal of callers without credentials (the edge's `ANONYMOUS`, proxy/principal.ts). */
const ANONYMOUS = 'anonymous';

interface Entry {
  /** The key it is pooled under; `undefined` for a session of one request. */
  key: string | undefined;
  /** Whose share it counts against. */
  owner: string;
  session: Promise<LegacySession>;
  lastUsed: number;
  inUse: number;
  /** Taken out of the pool (closed, evicted, or failed): holds still running finish on it. */
  gone: boolean;
}

interface Joined {
  owner: string;
  session: LegacySession;
  refs: number;
}

/**
 * A hold on one session: it is neither idle-closed nor evicted (nor, for a session of one request, ended) until
 * released. `retain()` takes another hold on the same session (a task made by a call outlives the call).
 */
export interface SessionHold {
  readonly session: LegacySession;
  retain(): SessionHold;
  /** Idempotent. */
  release(): void;
}

/** A bounded pool of initialized legacy sessions. */
export class LegacySessionPool {
  /** Pooled sessions by key, and sessions of one request (under no key). */
  private readonly entries = new Set<Entry>();
  private readonly pooled = new Map<string, Entry>();
  /** Sessions held (pooled, of one request, joined) per principal: its share of `max`. */
  private readonly perOwner = new Map<string, number>();
  /**
   * Sessions joined by id (another instance initialized them), apart from the pooled entries so that pooling stays one
   * session per principal; keyed by principal and session id, refcounted, bounded by `max` and the share too.
   */
  private readonly joined = new Map<string, Joined>();
  private sweeper: NodeJS.Timeout;
  private maxPerPrincipal: number;
  private latestIdentity: UpstreamIdentity | undefined;
  private closed = false;

  constructor(private readonly opts: PoolOptions) {
    this.maxPerPrincipal = Math.min(opts.maxPerPrincipal ?? opts.max, opts.max);
    this.sweeper = setInterval(() => this.sweep(), Math.max(1_000, Math.floor(opts.idleMs / 2)));
    this.sweeper.unref();
  }

  /**
   * The operator's new static headers (a reload): sessions opened from now on carry them, and the sessions open now
   * send their later requests with them (the sessions themselves stay).
   */
  useStaticHeaders(next: Record<string, string>): void {
    const previous = this.opts.staticHeaders;
    this.opts.staticHeaders = { ...next };
    for (const e of this.entries) void e.session.then((s) => s.useStaticHeaders(next, previous), () => {});
    for (const j of this.joined.values()) j.session.useStaticHeaders(next, previous);
  }

  /**
   * New bounds (a reload): later sessions are admitted under them; sessions over a lowered bound are not closed, they
   * end as they go idle. A new idle time applies from the next sweep.
   */
  setBounds(next: { max: number; maxPerPrincipal?: number; idleMs: number }): void {
    const idleChanged = next.idleMs !== this.opts.idleMs;
    this.opts.max = next.max;
    if (next.maxPerPrincipal === undefined) delete this.opts.maxPerPrincipal;
    else this.opts.maxPerPrincipal = next.maxPerPrincipal;
    this.opts.idleMs = next.idleMs;
    this.maxPerPrincipal = Math.min(next.maxPerPrincipal ?? next.max, next.max);
    if (idleChanged && !this.closed) {
      clearInterval(this.sweeper);
      this.sweeper = setInterval(() => this.sweep(), Math.max(1_000, Math.floor(next.idleMs / 2)));
      this.sweeper.unref();
    }
  }

  /** The upstream's identity from the most recent `initialize`, if any. */
  get identity(): UpstreamIdentity | undefined {
    return this.latestIdentity;
  }

  /** Number of sessions held, joined ones included (reported by /healthz). */
  get size(): number {
    return this.entries.size + this.joined.size;
  }

  /** The pool key of a caller's session, or `undefined` when the caller gets a session of its own. */
  private keyOf(k: SessionKey): string | undefined {
    if (k.principal === undefined) return undefined;
    if (k.principal === ANONYMOUS) {
      if ((this.opts.anonymousScope ?? 'request') !== 'shared') return undefined;
      // Shared, but never across credentials: with `auth.mode: none` anonymous callers may still send (and forward)
      // different ones, and a session carries the credentials it was opened with.
      return `a:${k.authorization ?? ''}`;
    }
    return (this.opts.scope ?? 'principal') === 'principal' ? `p:${k.principal}` : undefined;
  }

  /** Whose share a caller's sessions count against (callers not known share one). */
  private ownerOf(k: SessionKey): string {
    return k.principal ?? '';
  }

  private sessionFor(k: SessionKey, join?: { sessionId: string; protocolVersion: string }): LegacySession {
    const headers = { ...this.opts.staticHeaders };
    if (k.authorization) headers.authorization = k.authorization;
    return new LegacySession({
      url: this.opts.url,
      headers,
      capabilities: { ...BRIDGED_INPUT_CAPABILITIES },
      clientInfo: this.opts.clientInfo,
      timeoutMs: this.opts.timeoutMs,
      ...(this.opts.log ? { log: this.opts.log } : {}),
      // A joined session reads no GET stream: its initializer may hold it (servers allow one per session).
      watchStrays: !join,
      ...(join ? { join } : {}),
    });
  }

  private count(owner: string, delta: number): void {
    const n = (this.perOwner.get(owner) ?? 0) + delta;
    if (n > 0) this.perOwner.set(owner, n);
    else this.perOwner.delete(owner);
  }

  /**
   * Makes room for one more session of `owner`, before anything is sent upstream: past its share its own least recently
   * used idle session is closed, else `GW_PRINCIPAL_SHARE_EXHAUSTED`; past `max` anyone's, else `UpstreamBusyError`.
   */
  private makeRoom(owner: string): void {
    // A share as large as the bound is no share: the bound's own answer then.
    const shared = this.maxPerPrincipal < this.opts.max;
    if (shared && (this.perOwner.get(owner) ?? 0) >= this.maxPerPrincipal && !this.evictOneIdle(owner)) {
      throw new GatewayError('GW_PRINCIPAL_SHARE_EXHAUSTED', { args: ['upstream sessions', this.maxPerPrincipal] });
    }
    if (this.size >= this.opts.max && !this.evictOneIdle()) {
      throw new UpstreamBusyError(`all ${this.opts.max} upstream sessions are busy`);
    }
  }

  /**
   * A session another client initialized, joined by its id for `k`'s principal (no `initialize`: the id alone names
   * it, 2025-11-25 basic/transports §Session Management), held until `release()`. Joins of the same session by the
   * same principal share one object; the last release forgets it locally, never with DELETE (the session is not this
   * gateway's to end: other instances and the tasks in it live on). Refused past `max` or the principal's share.
   */
  join(k: SessionKey, sessionId: string): { session: LegacySession; release: () => void } {
    if (this.closed) throw new UpstreamBusyError('gateway is shutting down');
    const owner = this.ownerOf(k);
    const key = `${owner}:${sessionId}`;
    let j = this.joined.get(key);
    if (!j) {
      this.makeRoom(owner);
      const known = this.latestIdentity?.protocolVersion;
      const protocolVersion = known !== undefined && LEGACY_VERSIONS.includes(known) ? known : LEGACY_VERSION;
      const session = this.sessionFor(k, { sessionId, protocolVersion });
      session.keepUpstream = true;
      j = { owner, session, refs: 0 };
      this.joined.set(key, j);
      this.count(owner, 1);
    }
    j.refs++;
    const held = j;
    let released = false;
    return {
      session: held.session,
      release: () => {
        if (released) return;
        released = true;
        if (--held.refs > 0 || this.joined.get(key) !== held) return;
        this.joined.delete(key);
        this.count(held.owner, -1);
        void held.session.close();
      },
    };
  }

  /** The caller's pooled session, or a new one (pooled under its key, or of one request). */
  private acquire(k: SessionKey, signal?: AbortSignal): Entry {
    if (this.closed) throw new UpstreamBusyError('gateway is shutting down');
    const key = this.keyOf(k);
    const existing = key === undefined ? undefined : this.pooled.get(key);
    if (existing) {
      existing.lastUsed = Date.now();
      // The same principal may present renewed credentials (a refreshed token): the session goes on with the newest.
      if (k.authorization && k.principal !== ANONYMOUS) void existing.session.then((s) => s.useAuthorization(k.authorization), () => {});
      return existing;
    }
    const owner = this.ownerOf(k);
    this.makeRoom(owner);
    const session = this.sessionFor(k);
    const ready = session.initialize(signal).then((identity) => {
      this.latestIdentity = identity;
      return session;
    });
    const entry: Entry = { key, owner, session: ready, lastUsed: Date.now(), inUse: 0, gone: false };
    this.entries.add(entry);
    if (key !== undefined) this.pooled.set(key, entry);
    this.count(owner, 1);
    // A session that failed to initialize leaves the pool (and is not DELETEd: it may have no id).
    ready.catch(() => this.drop(entry, false));
    return entry;
  }

  /** Takes an entry out of the pool (once), closing its session (DELETE upstream) unless `close` is false. */
  private drop(entry: Entry, close = true): void {
    if (entry.gone) return;
    entry.gone = true;
    this.entries.delete(entry);
    if (entry.key !== undefined && this.pooled.get(entry.key) === entry) this.pooled.delete(entry.key);
    this.count(entry.owner, -1);
    if (close) void entry.session.then((s) => s.close(), () => {});
  }

  /** Ends one use of an entry; a session of one request ends with its last use. */
  private unuse(entry: Entry): void {
    entry.inUse--;
    entry.lastUsed = Date.now();
    if (entry.inUse === 0 && entry.key === undefined) this.drop(entry);
  }

  private holdOn(entry: Entry, session: LegacySession): SessionHold {
    entry.inUse++;
    let released = false;
    return {
      session,
      retain: () => this.holdOn(entry, session),
      release: () => {
        if (released) return;
        released = true;
        this.unuse(entry);
      },
    };
  }

  /**
   * Runs `fn` with the session for `k` and keeps a hold on that session once `fn` succeeded (released by the caller).
   * If the upstream forgot the session (404), the session is replaced and `fn` runs once more: a 404 means the
   * upstream did not process the request.
   */
  async withHeldSession<T>(k: SessionKey, fn: (s: LegacySession) => Promise<T>, signal?: AbortSignal): Promise<{ value: T; hold: SessionHold }> {
    for (let attempt = 0; ; attempt++) {
      const entry = this.acquire(k, signal);
      entry.inUse++;
      try {
        const session = await entry.session;
        const value = await fn(session);
        // The hold taken now, before this use ends, so that a session of one request does not end in between.
        const hold = this.holdOn(entry, session);
        return { value, hold };
      } catch (e) {
        if (e instanceof SessionExpiredError) {
          // Forgotten upstream: nothing to DELETE.
          this.drop(entry, false);
          if (attempt === 0) continue;
          // A fresh session forgotten at once: the upstream is broken, not the gateway (502, not a gateway fault).
          throw new UpstreamUnavailableError('the upstream forgot a session it had just initialized');
        }
        throw e;
      } finally {
        this.unuse(entry);
      }
    }
  }

  /** Runs `fn` with the session for `k` (held while `fn` runs). See `withHeldSession`. */
  async withSession<T>(k: SessionKey, fn: (s: LegacySession) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const { value, hold } = await this.withHeldSession(k, fn, signal);
    hold.release();
    return value;
  }

  /** The session for `k`, held until `release()`: a listen stream lives on it. */
  async lease(k: SessionKey, signal?: AbortSignal): Promise<{ session: LegacySession; release: () => void }> {
    const { hold } = await this.withHeldSession(k, async () => undefined, signal);
    return { session: hold.session, release: () => hold.release() };
  }

  /**
   * Holds `k`'s pooled session (if there is one) for a long-lived holder until `release()`. A caller whose requests
   * each get a session of their own has nothing pooled to hold: its holders hold their own sessions.
   */
  hold(k: SessionKey): () => void {
    const key = this.keyOf(k);
    const entry = key === undefined ? undefined : this.pooled.get(key);
    if (!entry) return () => {};
    entry.inUse++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.unuse(entry);
    };
  }

  /** The identity of the upstream, initializing the caller's session if none exists yet. */
  async getIdentity(k: SessionKey, signal?: AbortSignal): Promise<UpstreamIdentity> {
    if (this.latestIdentity) return this.latestIdentity;
    return this.withSession(k, async (s) => s.identity as UpstreamIdentity, signal);
  }

  /** Closes the least recently used idle pooled session (of `owner` only, when given); whether there was one. */
  private evictOneIdle(owner?: string): boolean {
    let oldest: Entry | undefined;
    for (const e of this.pooled.values()) {
      if (e.inUse === 0 && (owner === undefined || e.owner === owner) && (!oldest || e.lastUsed < oldest.lastUsed)) oldest = e;
    }
    if (!oldest) return false;
    this.drop(oldest);
    return true;
  }

  private sweep(): void {
    const cutoff = Date.now() - this.opts.idleMs;
    for (const e of [...this.pooled.values()]) if (e.inUse === 0 && e.lastUsed < cutoff) this.drop(e);
  }

  /** Closes every session (DELETE upstream). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.entries];
    for (const e of all) this.drop(e, false);
    const joined = [...this.joined.values()];
    this.joined.clear();
    this.perOwner.clear();
    await Promise.all([...all.map((e) => e.session.then((s) => s.close(), () => {})), ...joined.map((j) => j.session.close())]);
  }
}
