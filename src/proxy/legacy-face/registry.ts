/**
 * The legacy face's session registry (2025-11-25 basic/transports §Session Management): gateway-minted
 * `Mcp-Session-Id`s (128 random bits, URL-safe, visible ASCII as 2025-11-25 basic/transports §Session Management
 * requires), each bound to the principal that initialized it, expired after an idle period and bounded in number. A
 * session is idle when no request of it is in flight; an open GET stream alone does not keep it alive (2025-11-25
 * basic/transports §Session Management: the server MAY terminate a session at any time, and the client then
 * re-initializes on 404).
 */
import { randomBytes } from 'node:crypto';
import type { SharedValues } from '../../tasks/index.js';

/** One session as the registry holds it; `data` is the face's per-session state. */
export interface SessionEntry<T> {
  readonly id: string;
  readonly principal: string;
  readonly data: T;
  /** When a request of the session last started or ended (the registry's clock). */
  lastSeen: number;
  /** Requests of the session in flight; a busy session never expires. */
  busy: number;
}

/**
 * Why a session's copy here ended (for the operator log and the shared copy): `deleted` by its client, `expired` idle
 * here, `evicted` to make room, `closed` with the gateway, `ended-elsewhere` (deleted through another instance, or gone
 * from the shared store).
 */
export type SessionEndReason = 'deleted' | 'expired' | 'evicted' | 'closed' | 'ended-elsewhere';

/**
 * The shared values a session store keeps (the task store's value space): gateway-minted sessions live there so that
 * every instance serves them, and their end is announced on a topic.
 */
export type SessionStore = SharedValues;

/** Registry settings; every one has a default. */
export interface SessionRegistryOptions<T> {
  /** Most sessions held at once (default 1000). */
  maxSessions?: number;
  /** A session without requests for this long ends (default 30 minutes). */
  idleMs?: number;
  /** The clock (tests pass their own). */
  now?: () => number;
  /** Called once when a session ends, whatever the reason. */
  onEnd?: (data: T, reason: SessionEndReason) => void;
}

/** Session ids, principals, idle expiry and the bound on their number. */
export class LegacySessionRegistry<T> {
  private readonly sessions = new Map<string, SessionEntry<T>>();
  private readonly maxSessions: number;
  private readonly idleMs: number;
  private readonly now: () => number;
  private readonly onEnd: (data: T, reason: SessionEndReason) => void;
  private readonly sweeper: NodeJS.Timeout;

  constructor(opts: SessionRegistryOptions<T> = {}) {
    this.maxSessions = opts.maxSessions ?? 1000;
    this.idleMs = opts.idleMs ?? 30 * 60_000;
    this.now = opts.now ?? Date.now;
    this.onEnd = opts.onEnd ?? (() => {});
    // Expiry is also checked on every lookup; the sweep only frees what nobody asks for any more.
    this.sweeper = setInterval(() => this.sweep(), Math.max(1_000, Math.min(this.idleMs, 60_000)));
    this.sweeper.unref();
  }

  /** Sessions held. */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * Creates a session for `principal`; `undefined` when the registry is full of busy sessions. When full, expired
   * sessions go first, then the least recently used idle one (its client re-initializes on 404).
   */
  create(principal: string, make: (id: string) => T): SessionEntry<T> | undefined {
    return this.adopt(randomBytes(16).toString('base64url'), principal, make);
  }

  /**
   * Holds a session minted elsewhere (another instance; its shared copy was read from the store) under its own id, as
   * `create` makes room; the copy already held when there is one; `undefined` when full of busy sessions.
   */
  adopt(id: string, principal: string, make: (id: string) => T): SessionEntry<T> | undefined {
    const held = this.sessions.get(id);
    if (held) return held.principal === principal ? held : undefined;
    if (this.sessions.size >= this.maxSessions) this.sweep();
    if (this.sessions.size >= this.maxSessions) {
      const victim = [...this.sessions.values()].filter((s) => s.busy === 0).sort((a, b) => a.lastSeen - b.lastSeen)[0];
      if (!victim) return undefined;
      this.end(victim.id, 'evicted');
    }
    const entry: SessionEntry<T> = { id, principal, data: make(id), lastSeen: this.now(), busy: 0 };
    this.sessions.set(id, entry);
    return entry;
  }

  /** The session held under `id`, whoever its principal (for changes announced by other instances). */
  peek(id: string): SessionEntry<T> | undefined {
    return this.sessions.get(id);
  }

  /** The sessions with a request in flight. */
  busy(): SessionEntry<T>[] {
    return [...this.sessions.values()].filter((s) => s.busy > 0);
  }

  /** The registry's clock. */
  get clock(): number {
    return this.now();
  }

  /**
   * The live session `id` names for `principal`. Another principal's session is reported exactly like an unknown
   * one (404), so that an id seen elsewhere reveals nothing; an expired one ends here.
   */
  lookup(id: string | undefined, principal: string): SessionEntry<T> | undefined {
    if (id === undefined) return undefined;
    const entry = this.sessions.get(id);
    if (!entry || entry.principal !== principal) return undefined;
    if (this.expired(entry)) {
      this.end(id, 'expired');
      return undefined;
    }
    return entry;
  }

  /** Marks a request of the session in flight; the returned function (idempotent) marks it done. */
  acquire(entry: SessionEntry<T>): () => void {
    entry.busy++;
    entry.lastSeen = this.now();
    let released = false;
    return () => {
      if (released) return;
      released = true;
      entry.busy--;
      entry.lastSeen = this.now();
    };
  }

  /** Notes activity that is not a request in flight (a notification, a POSTed response). */
  touch(entry: SessionEntry<T>): void {
    entry.lastSeen = this.now();
  }

  /** Ends a session; false when there was none. */
  end(id: string, reason: SessionEndReason): boolean {
    const entry = this.sessions.get(id);
    if (!entry) return false;
    this.sessions.delete(id);
    this.onEnd(entry.data, reason);
    return true;
  }

  /** Ends every expired session. */
  sweep(): void {
    for (const entry of [...this.sessions.values()]) if (this.expired(entry)) this.end(entry.id, 'expired');
  }

  /** Ends every session and stops the sweep. Idempotent. */
  close(): void {
    clearInterval(this.sweeper);
    for (const id of [...this.sessions.keys()]) this.end(id, 'closed');
  }

  private expired(entry: SessionEntry<T>): boolean {
    return entry.busy === 0 && this.now() - entry.lastSeen > this.idleMs;
  }
}
