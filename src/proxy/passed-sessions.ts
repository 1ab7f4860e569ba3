/**
 * Legacy sessions passed through to a legacy upstream, bound to the principal that initialized them (2025-11-25
 * basic/transports §Session Management: the session id is the only thing tying requests to a session; a gateway in
 * front of many clients must not let one client's credentials ride on another's session). When an upstream's
 * `initialize` answer carries an `Mcp-Session-Id`, the gateway records session → principal before the client learns the
 * id; a later request carrying the id is forwarded only for that principal. Any other caller, and any id the gateway
 * never saw initialized (before a restart of a memory-store gateway, or made up), is an unknown session: 404, never
 * forwarded, so that whether the upstream knows an id cannot be probed through the gateway. The client re-initializes,
 * as on any lost session.
 *
 * Bindings live in the task store's shared values (every instance of a Redis deployment checks the same ones; they
 * survive a gateway restart there), keyed by a hash of the session id so that the store holds no usable session id,
 * and expire after an idle period. A small per-instance cache spares the store a read on most of the owner's requests;
 * it answers only "yes, the owner": every other case reads the store exactly once, so that a foreign id costs what an
 * unknown one costs.
 */
import { createHash } from 'node:crypto';
import type { SharedValues } from '../tasks/index.js';

/** Settings of the bindings of one upstream. */
export interface PassedSessionOptions {
  /** The upstream's name (bindings are per upstream). */
  upstream: string;
  /** Where bindings are kept; absent: in this instance alone (the cache is then the record). */
  store?: SharedValues;
  /** A session without requests for this long is forgotten (its client gets 404 and re-initializes). */
  idleMs: number;
  /** Most bindings cached per instance (default 10,000; the least recently used go first). */
  maxCached?: number;
  /** The clock (tests pass their own). */
  now?: () => number;
}

interface Cached {
  principal: string;
  /** When the shared copy's idle time was last restarted (or, without a store, the last request). */
  seen: number;
}

/** The store key prefix of a binding. */
const KEY_PREFIX = 'psess:';

/** Session id → principal for the sessions one legacy upstream handed out through the gateway. */
export class PassedSessions {
  private readonly cache = new Map<string, Cached>();
  private readonly maxCached: number;
  private readonly now: () => number;
  /** The owner's requests restart the shared idle time at most this often. */
  private readonly touchEveryMs: number;

  constructor(private readonly o: PassedSessionOptions) {
    this.maxCached = o.maxCached ?? 10_000;
    this.now = o.now ?? Date.now;
    this.touchEveryMs = Math.min(5_000, Math.max(1, Math.floor(o.idleMs / 10)));
  }

  /** Records a session the upstream just opened for `principal`; resolves once every instance would see it. */
  async bind(sessionId: string, principal: string): Promise<void> {
    const key = this.keyOf(sessionId);
    await this.o.store?.putValue(key, { p: principal }, this.o.idleMs);
    this.remember(key, principal);
  }

  /**
   * Whether `sessionId` is a session `principal` opened. False for another principal's and for an unknown one alike,
   * after the same work (one store read). Rejects when the store cannot be reached (except for the owner of a session
   * cached here, who is served from the cache).
   */
  async owns(sessionId: string, principal: string): Promise<boolean> {
    const key = this.keyOf(sessionId);
    const now = this.now();
    const cached = this.cache.get(key);
    const mine = cached !== undefined && cached.principal === principal;
    if (mine && now - cached.seen < this.touchEveryMs) return this.hit(key, cached, now);
    const store = this.o.store;
    if (!store) {
      // This instance is the record: idle expiry by the last request.
      if (!mine || now - cached.seen > this.o.idleMs) {
        if (mine) this.cache.delete(key);
        return false;
      }
      return this.hit(key, cached, now);
    }
    let stored: Awaited<ReturnType<typeof store.getValue>>;
    try {
      stored = await store.getValue(key);
    } catch (e) {
      if (mine) return true;
      throw e;
    }
    if (!stored) {
      this.cache.delete(key);
      return false;
    }
    if (stored.p !== principal) return false;
    // The owner: its idle time restarts everywhere (not awaited: a failed touch only shortens the session).
    void store.touchValue(key, this.o.idleMs).catch(() => {});
    this.remember(key, principal);
    return true;
  }

  /** Forgets a session (its owner ended it, or the upstream no longer knows it). */
  async unbind(sessionId: string): Promise<void> {
    const key = this.keyOf(sessionId);
    this.cache.delete(key);
    await this.o.store?.deleteValue(key);
  }

  private hit(key: string, cached: Cached, now: number): true {
    // Least recently used last out: re-inserted at the end.
    this.cache.delete(key);
    this.cache.set(key, this.o.store ? cached : { ...cached, seen: now });
    return true;
  }

  private remember(key: string, principal: string): void {
    this.cache.delete(key);
    this.cache.set(key, { principal, seen: this.now() });
    if (this.cache.size > this.maxCached) {
      const oldest = this.cache.keys().next();
      if (!oldest.done) this.cache.delete(oldest.value);
    }
  }

  private keyOf(sessionId: string): string {
    return `${KEY_PREFIX}${this.o.upstream}:${createHash('sha256').update(sessionId).digest('base64url')}`;
  }
}
