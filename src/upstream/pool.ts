/**
 * The legacy session pool of one upstream. Requests whose credentials (the Authorization header, hashed) differ never
 * share a session (README §How the modern face works, Upstream sessions). Every session declares each input kind the
 * gateway can bridge, so declared client capabilities do not split sessions: they are checked per request when the
 * upstream asks. Bounded: at most `max` sessions; idle ones are closed after `idleMs`; an expired session (404) is
 * re-initialized once.
 */
import { createHash } from 'node:crypto';
import { BRIDGED_INPUT_CAPABILITIES, LEGACY_VERSION, LEGACY_VERSIONS, type UpstreamIdentity } from '../translate/index.js';
import { SessionExpiredError, UpstreamBusyError, UpstreamUnavailableError } from './errors.js';
import { LegacySession } from './legacy-session.js';

/** Options of one upstream's pool. */
export interface PoolOptions {
  url: string;
  staticHeaders: Record<string, string>;
  timeoutMs: number;
  max: number;
  idleMs: number;
  clientInfo: { name: string; version: string };
}

/** Who a session is for: the caller's credentials. */
export interface SessionKey {
  authorization?: string;
}

interface Entry {
  session: Promise<LegacySession>;
  lastUsed: number;
  inUse: number;
}

interface Joined {
  session: LegacySession;
  refs: number;
}

/** A bounded pool of initialized legacy sessions. */
export class LegacySessionPool {
  private readonly entries = new Map<string, Entry>();
  /**
   * Sessions joined by id (another instance initialized them), apart from the caller-keyed entries so that pooling
   * stays one session per credential; keyed by credential and session id, refcounted, bounded by `max` too.
   */
  private readonly joined = new Map<string, Joined>();
  private readonly sweeper: NodeJS.Timeout;
  private latestIdentity: UpstreamIdentity | undefined;
  private closed = false;

  constructor(private readonly opts: PoolOptions) {
    this.sweeper = setInterval(() => this.sweep(), Math.max(1_000, Math.floor(opts.idleMs / 2)));
    this.sweeper.unref();
  }

  /** The upstream's identity from the most recent `initialize`, if any. */
  get identity(): UpstreamIdentity | undefined {
    return this.latestIdentity;
  }

  /** Number of sessions held, joined ones included (reported by /healthz). */
  get size(): number {
    return this.entries.size + this.joined.size;
  }

  /** Keys already computed, by credential (the same header arrives on every call of a client; bounded). */
  private readonly keys = new Map<string, string>();

  private keyOf(k: SessionKey): string {
    if (!k.authorization) return '-';
    let key = this.keys.get(k.authorization);
    if (key === undefined) {
      key = createHash('sha256').update(k.authorization).digest('base64url');
      if (this.keys.size >= 1024) this.keys.clear();
      this.keys.set(k.authorization, key);
    }
    return key;
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
      // A joined session reads no GET stream: its initializer may hold it (servers allow one per session).
      watchStrays: !join,
      ...(join ? { join } : {}),
    });
  }

  /**
   * A session another client initialized, joined by its id for `k`'s credentials (no `initialize`: the id alone names
   * it, 2025-11-25 basic/transports §Session Management), held until `release()`. Joins of the same session by the
   * same credentials share one object; the last release forgets it locally, never with DELETE (the session is not
   * this gateway's to end: other instances and the tasks in it live on). `UpstreamBusyError` past `max` joined.
   */
  join(k: SessionKey, sessionId: string): { session: LegacySession; release: () => void } {
    if (this.closed) throw new UpstreamBusyError('gateway is shutting down');
    const key = `${this.keyOf(k)}:${sessionId}`;
    let j = this.joined.get(key);
    if (!j) {
      if (this.joined.size >= this.opts.max) throw new UpstreamBusyError(`all ${this.opts.max} joined upstream sessions are busy`);
      const known = this.latestIdentity?.protocolVersion;
      const protocolVersion = known !== undefined && LEGACY_VERSIONS.includes(known) ? known : LEGACY_VERSION;
      const session = this.sessionFor(k, { sessionId, protocolVersion });
      session.keepUpstream = true;
      j = { session, refs: 0 };
      this.joined.set(key, j);
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
        void held.session.close();
      },
    };
  }

  private acquire(k: SessionKey, signal?: AbortSignal): { key: string; entry: Entry } {
    if (this.closed) throw new UpstreamBusyError('gateway is shutting down');
    const key = this.keyOf(k);
    let entry = this.entries.get(key);
    if (!entry) {
      if (this.entries.size >= this.opts.max && !this.evictOneIdle()) {
        throw new UpstreamBusyError(`all ${this.opts.max} upstream sessions are busy`);
      }
      const session = this.sessionFor(k);
      const ready = session.initialize(signal).then((identity) => {
        this.latestIdentity = identity;
        return session;
      });
      entry = { session: ready, lastUsed: Date.now(), inUse: 0 };
      this.entries.set(key, entry);
      const created = entry;
      ready.catch(() => {
        if (this.entries.get(key) === created) this.entries.delete(key);
      });
    }
    entry.lastUsed = Date.now();
    return { key, entry };
  }

  /**
   * Runs `fn` with the session for `k`. If the upstream forgot the session (404), the session is replaced and
   * `fn` runs once more: a 404 means the upstream did not process the request.
   */
  async withSession<T>(k: SessionKey, fn: (s: LegacySession) => Promise<T>, signal?: AbortSignal): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const { key, entry } = this.acquire(k, signal);
      entry.inUse++;
      try {
        const session = await entry.session;
        return await fn(session);
      } catch (e) {
        if (e instanceof SessionExpiredError) {
          if (this.entries.get(key) === entry) this.entries.delete(key);
          if (attempt === 0) continue;
          // A fresh session forgotten at once: the upstream is broken, not the gateway (502, not a gateway fault).
          throw new UpstreamUnavailableError('the upstream forgot a session it had just initialized');
        }
        throw e;
      } finally {
        entry.inUse--;
        entry.lastUsed = Date.now();
      }
    }
  }

  /** The session for `k`, held (never idle-closed or evicted) until `release()`: a listen stream lives on it. */
  async lease(k: SessionKey, signal?: AbortSignal): Promise<{ session: LegacySession; release: () => void }> {
    return this.withSession(k, async (session) => ({ session, release: this.hold(k) }), signal);
  }

  /** Marks a session as used by a long-lived holder (a running call, a task) until `release()`. */
  hold(k: SessionKey): () => void {
    const key = this.keyOf(k);
    const entry = this.entries.get(key);
    if (!entry) return () => {};
    entry.inUse++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.inUse--;
      entry.lastUsed = Date.now();
    };
  }

  /** The identity of the upstream, initializing the caller's session if none exists yet. */
  async getIdentity(k: SessionKey, signal?: AbortSignal): Promise<UpstreamIdentity> {
    if (this.latestIdentity) return this.latestIdentity;
    return this.withSession(k, async (s) => s.identity as UpstreamIdentity, signal);
  }

  private evictOneIdle(): boolean {
    let oldest: [string, Entry] | undefined;
    for (const e of this.entries) if (e[1].inUse === 0 && (!oldest || e[1].lastUsed < oldest[1].lastUsed)) oldest = e;
    if (!oldest) return false;
    this.entries.delete(oldest[0]);
    void oldest[1].session.then((s) => s.close(), () => {});
    return true;
  }

  private sweep(): void {
    const cutoff = Date.now() - this.opts.idleMs;
    for (const [key, e] of this.entries) {
      if (e.inUse === 0 && e.lastUsed < cutoff) {
        this.entries.delete(key);
        void e.session.then((s) => s.close(), () => {});
      }
    }
  }

  /** Closes every session (DELETE upstream). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.entries.values()];
    this.entries.clear();
    const joined = [...this.joined.values()];
    this.joined.clear();
    await Promise.all([...all.map((e) => e.session.then((s) => s.close(), () => {})), ...joined.map((j) => j.session.close())]);
  }
}
