/**
 * The legacy session pool of one upstream: 2025-11-25 sessions treated like database connections. A session carries
 * state on the upstream (roots it asked for and cached, its log level, tasks: 2025-11-25 basic/transports §Session
 * Management), and a server→client request that names no call (an SDK server's `server.elicitInput()` goes out on the
 * session's GET stream) can only be tied to a call if one call alone uses the session. So (docs/security.md §Upstream session
 * isolation):
 * - **Exclusive checkout.** A call checks out one idle session and holds it alone until it ends, with everything tied
 *   to it (its MRTR rounds, a task it creates and follows); then the session returns to the pool. Any server→client
 *   request on a session belongs to the one call holding it.
 * - **Keyed by isolation key**: the principal (scope `principal`; callers without credentials share one key, unless
 *   `anonymousScope: request`) and the caller's input capabilities, normalised to the kinds a 2025-11-25 server can ask
 *   for (`sessionInputCapabilities`). Each session declares exactly that set at `initialize`, so the server asks
 *   only for what its caller can answer, as it would with that client directly.
 * - **Reset on handover**: when a session passes to another caller (for anonymous callers, every checkout), a server
 *   that asked for roots on it gets `notifications/roots/list_changed` so that it asks the new caller again
 *   (2025-11-25 client/roots §List Changed Notification), and the new caller's log level is set
 *   (2025-11-25 server/utilities/logging).
 * - **Session-start traffic is the pool's**: what a server asks on a session no call holds (during warm-up, or between
 *   calls) is answered by the session itself as a client with nobody to ask would (`roots/list`: no roots;
 *   elicitation: declined; anything else refused), never attached to a call.
 * - scope `request` (and a caller whose principal is not known) gets a fresh session per request, ended (DELETE) once
 *   the request and whatever it left running are done: the opt-in for servers with other per-session state.
 * - Listen streams and resource subscriptions never ride call sessions: listens of one key share a session of their
 *   own, and hear the list changes the key's call sessions receive too (a per-session server notifies only the
 *   session that made the change).
 *
 * Bounded: at most `max` sessions (warming, listen and joined ones included); at most `maxPerPrincipal` of them for one
 * principal. Past a bound, the least recently used idle session (the principal's own, for its share) is closed, else
 * the request is refused before anything is sent upstream. Idle sessions are closed after `idleMs`; `warmIdle` idle
 * sessions are kept ready per key that has demand, so that no call waits for an `initialize` in steady state. A
 * session that breaks, or that the upstream forgets (404, or 400 "no valid session"), is dropped and replaced, never
 * reused. Written here rather than on a pool library: the bounds cross keys (one share per principal over its
 * capability sets, one bound over all) and sessions are handed over with a reset, which single-key pools
 * (generic-pool, tarn) do not model.
 */
import {
  GatewayError,
  LEGACY_VERSION,
  LEGACY_VERSIONS,
  type JsonObject,
  type JsonRpcNotification,
  type LayerLogger,
  type UpstreamIdentity,
  raceAbort,
} from '../../translate/index.js';
import { SessionExpiredError, UpstreamBusyError, UpstreamUnavailableError } from '../errors.js';
import { LegacySession } from './session.js';
import { ANONYMOUS, groupOf, ownerOf, placeOf, type AnonymousSessionScope, type SessionKey, type SessionScope } from './pool-keys.js';
import { WaitQueue } from './pool-waiters.js';
import { handOver, type Handover } from './pool-handover.js';

export type { AnonymousSessionScope, SessionKey, SessionScope } from './pool-keys.js';
export type { Handover } from './pool-handover.js';

/** Idle sessions kept ready per key with demand, by default. */
const DEFAULT_WARM_IDLE = 2;
/** How long a checkout waits for a session when the bounds are full, by default. */
const DEFAULT_ACQUIRE_TIMEOUT_MS = 5_000;

/** Options of one upstream's pool. */
export interface PoolOptions {
  url: string;
  staticHeaders: Record<string, string>;
  timeoutMs: number;
  max: number;
  /** Sessions one principal may hold at once (default: `max`). */
  maxPerPrincipal?: number;
  idleMs: number;
  /** Idle sessions kept ready per key with demand (default `DEFAULT_WARM_IDLE`; 0: none). */
  warmIdle?: number;
  /**
   * How long a checkout waits for a session to come free when the bounds are full (default
   * `DEFAULT_ACQUIRE_TIMEOUT_MS`), before it is refused; nothing is sent upstream meanwhile.
   */
  acquireTimeoutMs?: number;
  clientInfo: { name: string; version: string };
  /** The upstream layer's log (default nowhere). */
  log?: LayerLogger;
  /** Who shares sessions (default `principal`). */
  scope?: SessionScope;
  /** Who shares sessions among callers without credentials (default `shared`). */
  anonymousScope?: AnonymousSessionScope;
}

interface Slot {
  /** The pool key; `undefined` for a session of one request. */
  key: string | undefined;
  /** The key's principal part, for the list changes its listens hear (`undefined`: none). */
  group: string | undefined;
  /** Whose share it counts against. */
  owner: string;
  session: LegacySession;
  ready: Promise<LegacySession>;
  /** `warming`: initializing, nobody's yet; `idle`: in the pool; `busy`: checked out (or a listen session). */
  state: 'warming' | 'idle' | 'busy';
  holds: number;
  lastUsed: number;
  /** Who held it last (`undefined`: nobody but the pool). */
  holder: string | undefined;
  /** The log level last set on it. */
  logLevel: string | undefined;
  /** Released broken: dropped, not reused. */
  broken: boolean;
  /** A listen session: never checked out for a call; idle between listens until swept. */
  listen: boolean;
  gone: boolean;
}

/** What a checkout waiting for a session wants: the bounds were full when it came. */
interface Want {
  k: SessionKey;
  key: string | undefined;
  group: string | undefined;
  capabilities: JsonObject;
}

interface Joined {
  owner: string;
  session: LegacySession;
  refs: number;
}

/**
 * A hold on one checked-out session: nobody else gets it, and it is neither idle-closed nor evicted, until released.
 * `retain()` takes another hold on the same checkout (a task made by a call outlives the call).
 */
export interface SessionHold {
  readonly session: LegacySession;
  retain(): SessionHold;
  /** Idempotent. `broken`: the session is not to be reused (its stream broke). */
  release(broken?: boolean): void;
}

/** A bounded pool of initialized legacy sessions, checked out one caller at a time. */
export class LegacySessionPool {
  private readonly slots = new Set<Slot>();
  /** Idle sessions per key, most recently used last. */
  private readonly idle = new Map<string, Slot[]>();
  /** The listen session of each key. */
  private readonly listens = new Map<string, Slot>();
  /** Sessions held per principal: its share of `max`. */
  private readonly perOwner = new Map<string, number>();
  /** Sessions joined by id (another instance initialized them), keyed by principal and session id, refcounted. */
  private readonly joined = new Map<string, Joined>();
  /** Who hears the list changes of a key group's call sessions (listens). */
  private readonly groupListeners = new Map<string, Set<(n: JsonRpcNotification) => void>>();
  private sweeper: NodeJS.Timeout;
  private maxPerPrincipal: number;
  private latestIdentity: UpstreamIdentity | undefined;
  /** The identity being asked (getIdentity), shared by the callers waiting for it. */
  private identityAsked: Promise<UpstreamIdentity> | undefined;
  private anonymousCheckouts = 0;
  /** Checkouts waiting for room, first come first served. */
  private readonly waiters = new WaitQueue<Slot, Want>();
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
    for (const s of this.slots) s.session.useStaticHeaders(next, previous);
    for (const j of this.joined.values()) j.session.useStaticHeaders(next, previous);
  }

  /**
   * New bounds (a reload): later sessions are admitted under them; sessions over a lowered bound are not closed, they
   * end as they go idle. A new idle time applies from the next sweep.
   */
  setBounds(next: { max: number; maxPerPrincipal?: number; idleMs: number; warmIdle?: number; acquireTimeoutMs?: number }): void {
    if (next.acquireTimeoutMs !== undefined) this.opts.acquireTimeoutMs = next.acquireTimeoutMs;
    const idleChanged = next.idleMs !== this.opts.idleMs;
    this.opts.max = next.max;
    if (next.maxPerPrincipal === undefined) delete this.opts.maxPerPrincipal;
    else this.opts.maxPerPrincipal = next.maxPerPrincipal;
    this.opts.idleMs = next.idleMs;
    if (next.warmIdle !== undefined) this.opts.warmIdle = next.warmIdle;
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

  /** Number of sessions held (warming, idle, checked out, listen and joined ones). */
  get size(): number {
    return this.slots.size + this.joined.size;
  }

  private sessionFor(k: SessionKey, capabilities: JsonObject, join?: { sessionId: string; protocolVersion: string }): LegacySession {
    const headers = { ...this.opts.staticHeaders };
    if (k.authorization) headers.authorization = k.authorization;
    return new LegacySession({
      url: this.opts.url,
      headers,
      capabilities,
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

  /** Whether one more session of `owner` fits without closing any (warming never closes another's session). */
  private hasRoom(owner: string): boolean {
    if (this.maxPerPrincipal < this.opts.max && (this.perOwner.get(owner) ?? 0) >= this.maxPerPrincipal) return false;
    return this.size < this.opts.max;
  }

  /**
   * Makes room for one more session of `owner` if it can: past its share its own least recently used idle session is
   * closed, past `max` anyone's. Whether there is room now.
   */
  private tryRoom(owner: string): boolean {
    const shared = this.maxPerPrincipal < this.opts.max;
    if (shared && (this.perOwner.get(owner) ?? 0) >= this.maxPerPrincipal && !this.evictOneIdle(owner)) return false;
    return this.size < this.opts.max || this.evictOneIdle();
  }

  /** Why `owner` has no room: its share (`GW_PRINCIPAL_SHARE_EXHAUSTED`) or the bound (`UpstreamBusyError`). */
  private noRoom(owner: string): Error {
    if (this.maxPerPrincipal < this.opts.max && (this.perOwner.get(owner) ?? 0) >= this.maxPerPrincipal) {
      return new GatewayError('GW_PRINCIPAL_SHARE_EXHAUSTED', { args: ['upstream sessions', this.maxPerPrincipal] });
    }
    return new UpstreamBusyError(`all ${this.opts.max} upstream sessions are busy`);
  }

  /** Makes room for one more session of `owner` at once, before anything is sent upstream, or throws why not. */
  private makeRoom(owner: string): void {
    if (!this.tryRoom(owner)) throw this.noRoom(owner);
  }

  /**
   * Waits for a session for `w` (one of its key coming back, or room for a new one), at most `acquireTimeoutMs` and
   * while `signal` lets it; then refused as `makeRoom` would. A `patient` call (one that may outlive its request as a
   * gateway-owned task) waits within its own budget (`timeoutMs`) instead, so that a burst of tasks queues rather than
   * fails. Nothing is sent upstream meanwhile.
   */
  private waitForSlot(w: Want, signal: AbortSignal | undefined, patient: boolean): Promise<Slot> {
    const owner = ownerOf(w.k);
    const bound = patient ? this.opts.timeoutMs : (this.opts.acquireTimeoutMs ?? DEFAULT_ACQUIRE_TIMEOUT_MS);
    return this.waiters.wait(w, signal, bound, () => this.noRoom(owner));
  }

  /**
   * Gives freed sessions, or the room they left, to the checkouts waiting, first come first served. Not reentered: a
   * session it closes to make room frees nothing the loop does not already see.
   */
  private serveWaiters(): void {
    this.waiters.serve(
      (w) => {
        const slot = w.key === undefined ? undefined : this.takeIdle(w.key);
        if (slot) return slot;
        return this.tryRoom(ownerOf(w.k)) ? this.open(w.k, w.key, w.group, w.capabilities, 'busy') : undefined;
      },
      () => this.closed,
    );
  }

  /** Opens a session (initializing in the background) under `key`; the caller has made room. */
  private open(k: SessionKey, key: string | undefined, group: string | undefined, capabilities: JsonObject, state: Slot['state'], signal?: AbortSignal): Slot {
    const owner = ownerOf(k);
    const session = this.sessionFor(k, capabilities);
    const slot: Slot = {
      key,
      group,
      owner,
      session,
      ready: undefined as unknown as Promise<LegacySession>,
      state,
      holds: state === 'busy' ? 1 : 0,
      lastUsed: Date.now(),
      holder: undefined,
      logLevel: undefined,
      broken: false,
      listen: false,
      gone: false,
    };
    slot.ready = session.initialize(signal).then((identity) => {
      this.latestIdentity = identity;
      return session;
    });
    this.slots.add(slot);
    this.count(owner, 1);
    if (group !== undefined) {
      // The list changes this call session receives reach the listens of its group.
      session.onStreamNotification((n) => {
        if (n) for (const l of [...(this.groupListeners.get(group) ?? [])]) l(n);
      });
    }
    // A session that failed to initialize leaves the pool (and is not DELETEd: it may have no id).
    slot.ready.catch(() => this.drop(slot, false));
    return slot;
  }

  /** Takes a slot out of the pool (once), closing its session (DELETE upstream) unless `close` is false. */
  private drop(slot: Slot, close = true): void {
    if (slot.gone) return;
    slot.gone = true;
    this.slots.delete(slot);
    if (slot.key !== undefined) {
      const idle = this.idle.get(slot.key);
      const at = idle?.indexOf(slot) ?? -1;
      if (idle && at >= 0) {
        idle.splice(at, 1);
        if (idle.length === 0) this.idle.delete(slot.key);
      }
      if (this.listens.get(slot.key) === slot) this.listens.delete(slot.key);
    }
    this.count(slot.owner, -1);
    if (close)
      void slot.ready.then(
        (s) => s.close(),
        () => {},
      );
    if (this.waiters.length > 0) this.serveWaiters();
  }

  private holdOn(slot: Slot): SessionHold {
    let released = false;
    return {
      session: slot.session,
      retain: () => {
        slot.holds++;
        return this.holdOn(slot);
      },
      release: (broken) => {
        if (released) return;
        released = true;
        if (broken) slot.broken = true;
        this.unhold(slot);
      },
    };
  }

  /** Ends one hold; the last one returns the session to the pool, or ends it (of one request, broken, left to a task). */
  private unhold(slot: Slot): void {
    if (--slot.holds > 0 || slot.gone) return;
    slot.lastUsed = Date.now();
    // A task left running (handed to another instance) keeps the session upstream: forget it, never DELETE or reuse it.
    if (slot.session.keepUpstream) return this.drop(slot, false);
    if (slot.key === undefined || slot.broken || slot.session.isClosed || this.closed) return this.drop(slot);
    slot.state = 'idle';
    // A listen session waits for the next listen of its key (its unsubscribes still go out on it), never for a call.
    if (!slot.listen) {
      slot.session.held = false;
      const idle = this.idle.get(slot.key);
      if (idle) idle.push(slot);
      else this.idle.set(slot.key, [slot]);
    }
    if (this.waiters.length > 0) this.serveWaiters();
  }

  /** An idle (or warming, unclaimed) session of `key`, now checked out; `undefined` if none. */
  private takeIdle(key: string): Slot | undefined {
    const idle = this.idle.get(key);
    const slot = idle?.pop();
    if (idle && idle.length === 0) this.idle.delete(key);
    if (slot) {
      slot.state = 'busy';
      slot.holds = 1;
      return slot;
    }
    for (const s of this.slots) {
      if (s.key === key && s.state === 'warming') {
        s.state = 'busy';
        s.holds = 1;
        return s;
      }
    }
    return undefined;
  }

  /** Starts one more idle session of `key` when fewer than `warmIdle` are ready or on their way, within the bounds. */
  private warm(k: SessionKey, key: string, group: string | undefined, capabilities: JsonObject): void {
    const want = this.opts.warmIdle ?? DEFAULT_WARM_IDLE;
    if (want <= 0 || this.closed) return;
    let ready = this.idle.get(key)?.length ?? 0;
    if (ready >= want) return;
    for (const s of this.slots) if (s.key === key && s.state === 'warming') ready++;
    if (ready >= want || !this.hasRoom(ownerOf(k))) return;
    const slot = this.open(k, key, group, capabilities, 'warming');
    void slot.ready.then(
      () => {
        if (slot.state !== 'warming' || slot.gone) return;
        slot.state = 'idle';
        slot.lastUsed = Date.now();
        const idle = this.idle.get(key);
        if (idle) idle.unshift(slot);
        else this.idle.set(key, [slot]);
        if (this.waiters.length > 0) this.serveWaiters();
      },
      () => {},
    );
  }

  /**
   * Checks out a session for `k`: an idle one of its key, a warming one, or a new one (room made first, before anything
   * is sent upstream). It is handed over (see `handOver`) before it is returned; a session forgotten upstream on the
   * way is dropped and another checked out, once.
   */
  async checkout(k: SessionKey, signal?: AbortSignal, handover?: Handover, fresh = false): Promise<SessionHold> {
    if (this.closed) throw new UpstreamBusyError('gateway is shutting down');
    const { group, key, capabilities } = placeOf(k, this.opts);
    const holder = k.principal === ANONYMOUS || group === undefined ? `#${++this.anonymousCheckouts}` : group;
    for (let attempt = 0; ; attempt++) {
      let slot = key === undefined || fresh ? undefined : this.takeIdle(key);
      if (!slot) {
        // A new session, else wait for one. (Those waiting were given what came free already: what room there is now,
        // they cannot use.)
        if (this.tryRoom(ownerOf(k))) slot = this.open(k, key, group, capabilities, 'busy', signal);
        else slot = await this.waitForSlot({ k, key, group, capabilities }, signal, handover?.patient === true);
      }
      if (key !== undefined) this.warm(k, key, group, capabilities);
      slot.session.held = true;
      const hold = this.holdOn(slot);
      try {
        const session = await slot.ready;
        // The same principal may present renewed credentials (a refreshed token): the session goes on with the newest.
        if (k.authorization && k.principal !== ANONYMOUS) session.useAuthorization(k.authorization);
        await handOver(slot, holder, handover);
        return hold;
      } catch (e) {
        hold.release(true);
        if (e instanceof SessionExpiredError) {
          if (attempt === 0) {
            this.forgotten(key);
            fresh = true;
            continue;
          }
          throw new UpstreamUnavailableError('the upstream forgot a session it had just initialized');
        }
        throw e;
      }
    }
  }

  /**
   * Runs `fn` with a session checked out for `k` and keeps it checked out once `fn` succeeded (released by the
   * caller). If the upstream forgot the session (404), the session is replaced and `fn` runs once more: a 404 means the
   * upstream did not process the request. A session whose request failed otherwise than in-band is not reused.
   */
  async withHeldSession<T>(
    k: SessionKey,
    fn: (s: LegacySession) => Promise<T>,
    signal?: AbortSignal,
    handover?: Handover,
  ): Promise<{ value: T; hold: SessionHold }> {
    for (let attempt = 0; ; attempt++) {
      const hold = await this.checkout(k, signal, handover, attempt > 0);
      try {
        return { value: await fn(hold.session), hold };
      } catch (e) {
        // An HTTP answer (a 401, a 500) leaves the session as it was; a broken exchange or a forgotten session does not.
        hold.release(e instanceof SessionExpiredError || e instanceof UpstreamUnavailableError || !(e instanceof GatewayError));
        if (e instanceof SessionExpiredError) {
          if (attempt === 0) {
            this.forgotten(placeOf(k, this.opts).key);
            continue;
          }
          // A fresh session forgotten at once: the upstream is broken, not the gateway (502, not a gateway fault).
          throw new UpstreamUnavailableError('the upstream forgot a session it had just initialized');
        }
        throw e;
      }
    }
  }

  /** Runs `fn` with a session checked out for `k`, returned once `fn` is done. See `withHeldSession`. */
  async withSession<T>(k: SessionKey, fn: (s: LegacySession) => Promise<T>, signal?: AbortSignal): Promise<T> {
    const { value, hold } = await this.withHeldSession(k, fn, signal);
    hold.release();
    return value;
  }

  /**
   * The listen session of `k`'s key, held until `release()`: shared by the key's listens (each of one request, when
   * the caller has no key), declaring no input kind (nothing is asked on it), never a call session. `onGroupChange`
   * hears the notifications of the key's call sessions' GET streams meanwhile.
   */
  async listenSession(
    k: SessionKey,
    signal: AbortSignal,
    onGroupChange: (n: JsonRpcNotification) => void,
  ): Promise<{ session: LegacySession; release: () => void }> {
    if (this.closed) throw new UpstreamBusyError('gateway is shutting down');
    const group = groupOf(k, this.opts);
    const key = group === undefined ? undefined : `${group}|listen`;
    let slot = key === undefined ? undefined : this.listens.get(key);
    if (slot) {
      slot.holds++;
      slot.state = 'busy';
    } else {
      this.makeRoom(ownerOf(k));
      slot = this.open(k, key, undefined, {}, 'busy', signal);
      slot.listen = true;
      if (key !== undefined) this.listens.set(key, slot);
    }
    const hold = this.holdOn(slot);
    let listeners: Set<(n: JsonRpcNotification) => void> | undefined;
    if (group !== undefined) {
      listeners = this.groupListeners.get(group) ?? new Set();
      this.groupListeners.set(group, listeners);
      listeners.add(onGroupChange);
    }
    const release = () => {
      if (listeners && group !== undefined) {
        listeners.delete(onGroupChange);
        if (listeners.size === 0 && this.groupListeners.get(group) === listeners) this.groupListeners.delete(group);
      }
      hold.release();
    };
    try {
      const session = await slot.ready;
      return { session, release };
    } catch (e) {
      release();
      throw e;
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
    const owner = ownerOf(k);
    const key = `${owner}:${sessionId}`;
    let j = this.joined.get(key);
    if (!j) {
      this.makeRoom(owner);
      const known = this.latestIdentity?.protocolVersion;
      const protocolVersion = known !== undefined && LEGACY_VERSIONS.includes(known) ? known : LEGACY_VERSION;
      const session = this.sessionFor(k, {}, { sessionId, protocolVersion });
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

  /** The identity of the upstream, initializing a session for the caller if none has been made yet. */
  async getIdentity(k: SessionKey, signal?: AbortSignal): Promise<UpstreamIdentity> {
    if (this.latestIdentity) return this.latestIdentity;
    // One initialize answers every caller waiting for the identity: a burst of first calls must not each take a
    // session for it (past the caller's share, all but the first few would be refused for a question already asked).
    // Patient: it is asked on behalf of calls that may wait within their budget.
    this.identityAsked ??= this.withHeldSession(k, async (s) => s.identity as UpstreamIdentity, AbortSignal.timeout(this.opts.timeoutMs), { patient: true })
      .then(({ value, hold }) => {
        hold.release();
        return value;
      })
      .finally(() => {
        this.identityAsked = undefined;
      });
    return raceAbort(this.identityAsked, signal);
  }

  /**
   * The upstream forgot a session of `key`: it most likely forgot its other idle ones too (it restarted, or expires
   * sessions by age), so they are dropped, unDELETEd, rather than tried one by one.
   */
  private forgotten(key: string | undefined): void {
    if (key === undefined) return;
    for (const s of [...(this.idle.get(key) ?? [])]) this.drop(s, false);
  }

  /** Idle sessions: the pool's, and listen sessions no listen holds. */
  private *idleSlots(): Generator<Slot> {
    for (const idle of this.idle.values()) yield* idle;
    for (const s of this.listens.values()) if (s.holds === 0) yield s;
  }

  /** Closes the least recently used idle session (of `owner` only, when given); whether there was one. */
  private evictOneIdle(owner?: string): boolean {
    let oldest: Slot | undefined;
    for (const s of this.idleSlots()) if ((owner === undefined || s.owner === owner) && (!oldest || s.lastUsed < oldest.lastUsed)) oldest = s;
    if (!oldest) return false;
    this.drop(oldest);
    return true;
  }

  private sweep(): void {
    const cutoff = Date.now() - this.opts.idleMs;
    for (const s of [...this.idleSlots()]) if (s.lastUsed < cutoff) this.drop(s);
  }

  /** Closes every session (DELETE upstream). Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.sweeper);
    const all = [...this.slots];
    for (const s of all) this.drop(s, false);
    const joined = [...this.joined.values()];
    this.joined.clear();
    this.perOwner.clear();
    this.groupListeners.clear();
    this.waiters.failAll(new UpstreamBusyError('gateway is shutting down'));
    await Promise.all([
      ...all.map((s) =>
        s.ready.then(
          (x) => x.close(),
          () => {},
        ),
      ),
      ...joined.map((j) => j.session.close()),
    ]);
  }
}
