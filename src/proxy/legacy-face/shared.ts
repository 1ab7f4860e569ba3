/**
 * The legacy face's sessions as requests find them, shared by every instance: sessions live in the shared store
 * (`lsess:<id>`), so that any instance serves any request of one — what the session decided at `initialize`
 * (principal, route, tasks, the client's capabilities and info, version) and its log level. An instance that meets a
 * session it does not hold reads it from there; the live parts (GET stream, requests in flight, server→client
 * requests of a call, subscriptions) stay with the instance that has them. The shared copy ends with DELETE
 * (announced to every instance) or when it has been idle for `idleMs`. Each principal holds at most its share of the
 * sessions held here.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, isObject, singleHeader, type Era, type JsonObject, type RequestId } from '../../translate/index.js';
import type { AuditLog, UpstreamRoute } from '../../tasks/index.js';
import { refuse } from '../errors.js';
import { identityOf } from '../auth.js';
import { LegacySessionRegistry, type SessionEndReason, type SessionEntry, type SessionStore } from './registry.js';
import { ClientSession, type BackgroundFailure, type SessionDecisions, type SessionPartMakers } from './session.js';
import { storeTrouble } from './replies.js';

/** The store key of a session's shared copy. */
const sharedKey = (id: string): string => `lsess:${id}`;

/**
 * The topic on which an instance announces what changed in a session through it, for the instances holding a copy:
 * `{id, t: 'ended'}` (deleted) or `{id, t: 'level', level}` (logging/setLevel).
 */
const SESSION_TOPIC = 'lsess:events';

/** What a session decided at `initialize`, as its shared copy holds it. */
interface SharedSession extends SessionDecisions {
  principal: string;
  /** The upstream route's name and the era of its client the session works over. */
  upstream: string;
  era: Era;
}

function sharedOf(s: ClientSession): JsonObject {
  const v: JsonObject = {
    v: 1,
    principal: s.principal,
    upstream: s.route.name,
    era: s.route.upstream.era,
    tasks: s.tasks,
    legacyCapabilities: s.legacyCapabilities,
    clientInfo: s.clientInfo,
    protocolVersion: s.protocolVersion,
  };
  if (s.logLevel !== undefined) v.logLevel = s.logLevel;
  return v;
}

function readShared(v: JsonObject): SharedSession | undefined {
  if (
    v.v !== 1 ||
    typeof v.principal !== 'string' ||
    typeof v.upstream !== 'string' ||
    (v.era !== 'legacy' && v.era !== 'modern') ||
    typeof v.tasks !== 'boolean' ||
    !isObject(v.legacyCapabilities) ||
    !isObject(v.clientInfo) ||
    typeof v.protocolVersion !== 'string'
  ) {
    return undefined;
  }
  return {
    principal: v.principal,
    upstream: v.upstream,
    era: v.era,
    tasks: v.tasks,
    legacyCapabilities: v.legacyCapabilities,
    clientInfo: v.clientInfo,
    protocolVersion: v.protocolVersion,
    ...(typeof v.logLevel === 'string' ? { logLevel: v.logLevel } : {}),
  };
}

/** No room for another session here (every one held has a request in flight): GW_TOO_MANY_SESSIONS, 503. */
export class TooManySessionsError extends GatewayError {
  constructor() {
    super('GW_TOO_MANY_SESSIONS');
  }
}

/** A session found for a request, or the refusal already sent. */
export type SessionFound = { entry: SessionEntry<ClientSession> } | { refused: FastifyReply };

/** What the face's sessions work with; every setting has a default. */
export interface ClientSessionsOptions {
  /** Where sessions are shared with the other instances (absent: sessions live in this instance alone). */
  store?: SessionStore;
  /** Most sessions held at once (the registry's default when absent). */
  maxSessions?: number;
  /** A session without requests for this long ends (default 30 min). */
  idleMs?: number;
  /** Activity restarts a shared session's idle time at most this often (default `min(5 s, idleMs / 10)`). */
  touchEveryMs?: number;
  /** Sessions one principal may hold (default: `maxSessions`, else 1000). */
  maxSessionsPerPrincipal?: number;
  /** The registry's clock. */
  now?: () => number;
  /** Where sessions opened and closed are recorded. */
  audit: AuditLog;
  /** The route a session minted elsewhere works over, by the era it picked (absent: such sessions are not served). */
  routeOf?: (era: Era) => UpstreamRoute | undefined;
  /** Background failures of a session. */
  failed: BackgroundFailure;
  /** Where a new session's live parts are made (each ends with the session's copy here). */
  parts: SessionPartMakers;
}

/** The sessions held here, their shared copies, the announcements between instances and each principal's share. */
export class ClientSessions {
  readonly maxSessionsPerPrincipal: number;
  private readonly registry: LegacySessionRegistry<ClientSession>;
  private readonly store: SessionStore | undefined;
  private readonly idleMs: number;
  private readonly touchEveryMs: number;
  private readonly audit: AuditLog;
  private readonly routeOf: ((era: Era) => UpstreamRoute | undefined) | undefined;
  private readonly failed: BackgroundFailure;
  private readonly parts: SessionPartMakers;
  /** The subscription to session changes announced by other instances (made at the first session). */
  private sessionTopic: Promise<() => void> | undefined;
  /** Sessions being read from the store, so that concurrent requests of one rebuild it once. */
  private readonly loading = new Map<string, Promise<SessionEntry<ClientSession> | undefined>>();
  private readonly keepShared: NodeJS.Timeout | undefined;
  private closing = false;
  /** Session ids held here per principal (entries removed when empty), for the principal's share. */
  private readonly sessionsOf = new Map<string, Set<string>>();
  /** When each held session's shared copy last had its idle time restarted (the registry's clock), by session id. */
  private readonly sharedAt = new Map<string, number>();

  constructor(opts: ClientSessionsOptions) {
    this.audit = opts.audit;
    this.routeOf = opts.routeOf;
    this.failed = opts.failed;
    this.parts = opts.parts;
    this.maxSessionsPerPrincipal = opts.maxSessionsPerPrincipal ?? opts.maxSessions ?? 1000;
    this.store = opts.store;
    this.idleMs = opts.idleMs ?? 30 * 60_000;
    this.touchEveryMs = opts.touchEveryMs ?? Math.min(5_000, Math.floor(this.idleMs / 10));
    if (this.store) {
      // A request in flight keeps its session alive however long it runs: its shared copy too.
      this.keepShared = setInterval(() => this.keepBusyShared(), Math.max(1_000, Math.min(Math.floor(this.idleMs / 2), 60_000)));
      this.keepShared.unref();
    }
    this.registry = new LegacySessionRegistry<ClientSession>({
      ...(opts.maxSessions !== undefined ? { maxSessions: opts.maxSessions } : {}),
      ...(opts.idleMs !== undefined ? { idleMs: opts.idleMs } : {}),
      ...(opts.now ? { now: opts.now } : {}),
      onEnd: (s, reason) => this.onEnd(s, reason),
    });
  }

  /** Sessions held here. */
  get size(): number {
    return this.registry.size;
  }

  /** Whether the face is shutting down (no session is made or rebuilt any more). */
  get closed(): boolean {
    return this.closing;
  }

  /** Ends every session held here (on shutdown); the shared copies stay for the other instances. Idempotent. */
  close(): void {
    this.closing = true;
    if (this.keepShared) clearInterval(this.keepShared);
    this.registry.close();
    void this.sessionTopic?.then(
      (off) => off(),
      () => {},
    );
  }

  /** Notes activity that is not a request in flight (a notification, a POSTed response, a GET stream opening). */
  touch(entry: SessionEntry<ClientSession>): void {
    this.registry.touch(entry);
  }

  /** Marks a request of the session in flight; the returned function marks it done. */
  acquire(entry: SessionEntry<ClientSession>): () => void {
    return this.registry.acquire(entry);
  }

  /**
   * The caller's session, or the refusal already sent (2025-11-25 basic/transports §Session Management: without the
   * session id, 400; for an unknown or ended one, or one of another principal, 404 so that the client initializes).
   */
  find(request: FastifyRequest, reply: FastifyReply, id: RequestId | null, principal = identityOf(request).principal): SessionFound | Promise<SessionFound> {
    const sid = singleHeader(request.headers, 'mcp-session-id');
    if (!sid) return { refused: refuse(reply, 'GW_SESSION_ID_REQUIRED', id) };
    const held = this.registry.lookup(sid, principal);
    // Held here, and its shared copy's idle time restarted recently enough (or sessions are not shared): no store.
    if (held && (!this.store || this.fresh(held.id, this.registry.clock))) return { entry: held };
    return this.fromStore(request, reply, id, principal, sid, held);
  }

  /**
   * Makes a session for `principal` on `route` within its share, recorded as opened and stored before the client
   * learns its id (its next request may reach any instance); the refusal already sent when there is no room or the
   * store fails.
   */
  async create(
    request: FastifyRequest,
    reply: FastifyReply,
    id: RequestId,
    principal: string,
    authorization: string | undefined,
    route: UpstreamRoute,
    decided: SessionDecisions,
  ): Promise<SessionFound> {
    const at = this.registry.clock;
    // Another initialize of the same principal may have taken the room while the upstream was asked.
    if (!this.roomFor(principal)) {
      return { refused: refuse(reply, 'GW_PRINCIPAL_SHARE_EXHAUSTED', id, { args: ['sessions', this.maxSessionsPerPrincipal] }) };
    }
    const created = this.registry.create(principal, (sid) => this.make(sid, principal, authorization, route, decided, at));
    if (!created) return { refused: storeTrouble(request, reply, id, new TooManySessionsError()) };
    const entry = this.counted(created);
    // Never the session id: it is a bearer credential of the session.
    this.audit.record('session.opened', { principal, upstream: route.name, era: 'legacy' });
    if (this.store) {
      try {
        await this.listenForChanges();
        await this.store.putValue(sharedKey(entry.id), sharedOf(entry.data), this.idleMs);
      } catch (e) {
        this.registry.end(entry.id, 'closed');
        return { refused: storeTrouble(request, reply, id, e) };
      }
    }
    return { entry };
  }

  /** Ends a session its client deleted, everywhere: the shared copy goes first (a store failure is thrown). */
  async delete(entry: SessionEntry<ClientSession>): Promise<void> {
    if (this.store) {
      await this.store.deleteValue(sharedKey(entry.id));
      // Instances holding a copy end theirs (its GET stream, its calls) at once.
      await this.store.publish(SESSION_TOPIC, { id: entry.id, t: 'ended' });
    }
    this.registry.end(entry.id, 'deleted');
    this.audit.record('session.closed', { principal: entry.principal, upstream: entry.data.route.name, era: 'legacy', reason: 'deleted' });
  }

  /** Changes a session's log level, in its shared copy and in the copies other instances hold (a store failure is thrown). */
  async setLevel(s: ClientSession, level: string): Promise<void> {
    s.setLogLevel(level);
    if (!this.store) return;
    await this.store.putValue(sharedKey(s.id), sharedOf(s), this.idleMs);
    this.restarted(s.id, this.registry.clock);
    await this.store.publish(SESSION_TOPIC, { id: s.id, t: 'level', level });
  }

  /**
   * Makes room for one more session of `principal` within its share: its own least recently used idle session ends
   * (its client re-initializes on 404); `false` when every session it holds is busy.
   */
  roomFor(principal: string): boolean {
    const mine = this.sessionsOf.get(principal);
    if (!mine || mine.size < this.maxSessionsPerPrincipal) return true;
    let oldest: SessionEntry<ClientSession> | undefined;
    for (const id of mine) {
      const e = this.registry.peek(id);
      if (e && e.busy === 0 && (!oldest || e.lastSeen < oldest.lastSeen)) oldest = e;
    }
    if (!oldest) return false;
    this.registry.end(oldest.id, 'evicted');
    return true;
  }

  /** find when the store has a say: the shared copy of a held session is touched, an unknown one is read. */
  private async fromStore(
    request: FastifyRequest,
    reply: FastifyReply,
    id: RequestId | null,
    principal: string,
    sid: string,
    held: SessionEntry<ClientSession> | undefined,
  ): Promise<SessionFound> {
    let entry: SessionEntry<ClientSession> | undefined;
    try {
      entry = held;
      if (entry) entry = await this.stillShared(entry, request);
      else if (this.store) entry = await this.load(sid, principal, identityOf(request).authorization);
    } catch (e) {
      return { refused: storeTrouble(request, reply, id, e) };
    }
    if (!entry) return { refused: refuse(reply, 'GW_SESSION_NOT_FOUND', id) };
    return { entry };
  }

  /**
   * A session held here, after restarting its shared copy's idle time when that is due; `undefined` when the shared
   * copy is gone (deleted through another instance, or idle too long everywhere). A store that cannot be reached does
   * not end a session held here.
   */
  private async stillShared(entry: SessionEntry<ClientSession>, request: FastifyRequest): Promise<SessionEntry<ClientSession> | undefined> {
    const s = entry.data;
    const now = this.registry.clock;
    if (!this.store || this.fresh(s.id, now)) return entry;
    let alive: boolean;
    try {
      alive = await this.store.touchValue(sharedKey(s.id), this.idleMs);
    } catch (e) {
      request.log.warn({ err: e }, 'legacy face: the shared session could not be touched; serving the copy held here');
      return entry;
    }
    if (alive) {
      this.restarted(s.id, now);
      return entry;
    }
    this.registry.end(s.id, 'ended-elsewhere');
    return undefined;
  }

  /**
   * Rebuilds a session another instance minted from its shared copy: only for the principal that initialized it (any
   * other is told 404, as for an unknown id) and on the route it picked. Concurrent requests rebuild it once.
   */
  private load(sid: string, principal: string, authorization: string | undefined): Promise<SessionEntry<ClientSession> | undefined> {
    const pending = this.loading.get(sid);
    if (pending) return pending.then((e) => (e && e.principal === principal ? e : undefined));
    const store = this.store as SessionStore;
    const loaded = (async () => {
      const v = await store.getValue(sharedKey(sid));
      const shared = v ? readShared(v) : undefined;
      if (!shared || shared.principal !== principal || this.closing) return undefined;
      const route = this.routeOf?.(shared.era);
      if (!route || route.name !== shared.upstream) return undefined;
      await this.listenForChanges();
      const at = this.registry.clock;
      // Reading it is activity: its idle time restarts everywhere.
      if (!(await store.touchValue(sharedKey(sid), this.idleMs))) return undefined;
      const adopted = this.registry.adopt(sid, principal, (id) => this.make(id, principal, authorization, route, shared, at));
      if (!adopted) throw new TooManySessionsError();
      const entry = this.counted(adopted);
      // What the session's answers read of the upstream (task support in tools/list, what a listen may ask for) this
      // instance learns now if it never met the upstream; a failure shows on the request that needs it.
      if (!route.upstream.knownIdentity) {
        await route.upstream.identity(entry.data.callerOf()).catch(this.failed('debug', 'upstream identity not learned for a rebuilt session', entry.data));
      }
      return entry;
    })();
    this.loading.set(sid, loaded);
    return loaded.finally(() => this.loading.delete(sid));
  }

  /** Subscribes (once) to what other instances change in sessions, so that the copies held here follow. */
  private listenForChanges(): Promise<unknown> {
    if (!this.store) return Promise.resolve();
    this.sessionTopic ??= this.store.subscribe(SESSION_TOPIC, (m) => {
      if (typeof m.id !== 'string') return;
      if (m.t === 'ended') this.registry.end(m.id, 'ended-elsewhere');
      else if (m.t === 'level' && typeof m.level === 'string') {
        const held = this.registry.peek(m.id);
        if (held) held.data.setLogLevel(m.level);
      }
    });
    // A failed subscription is tried again by the next session.
    return this.sessionTopic.catch((e: unknown) => {
      this.sessionTopic = undefined;
      throw e;
    });
  }

  /** Sessions with a request in flight stay alive in the store however long the request runs. */
  private keepBusyShared(): void {
    const store = this.store;
    if (!store) return;
    const now = this.registry.clock;
    for (const e of this.registry.busy()) {
      if (this.fresh(e.id, now)) continue;
      this.restarted(e.id, now);
      void store.touchValue(sharedKey(e.id), this.idleMs).catch(this.failed('warn', 'shared session not kept alive; it may expire elsewhere', e.data));
    }
  }

  /**
   * A session's copy here, fresh: what it decided at initialize, its shared copy's idle time restarted at `at`, its
   * live parts made (nothing live in them yet).
   */
  private make(id: string, principal: string, authorization: string | undefined, route: UpstreamRoute, d: SessionDecisions, at: number): ClientSession {
    this.sharedAt.set(id, at);
    return new ClientSession(id, principal, authorization, route, d, this.parts);
  }

  /** Whether the shared copy's idle time restarted recently enough that it needs no touch at `now`. */
  private fresh(id: string, now: number): boolean {
    return now - (this.sharedAt.get(id) ?? Number.NEGATIVE_INFINITY) < this.touchEveryMs;
  }

  /** Notes that a held session's shared copy had its idle time restarted at `now` (a session that ended meanwhile stays gone). */
  private restarted(id: string, now: number): void {
    if (this.sharedAt.has(id)) this.sharedAt.set(id, now);
  }

  /** Counts a session held here against its principal's share. */
  private counted(entry: SessionEntry<ClientSession>): SessionEntry<ClientSession> {
    let mine = this.sessionsOf.get(entry.principal);
    if (!mine) this.sessionsOf.set(entry.principal, (mine = new Set()));
    mine.add(entry.id);
    return entry;
  }

  private onEnd(s: ClientSession, reason: SessionEndReason): void {
    // The session ends for its client when evicted, or when it expires or closes with no other instance to serve it;
    // a DELETE is recorded where it was served (its announcement may end this copy first), an end announced by
    // another instance there.
    if (reason === 'evicted' || (!this.store && (reason === 'expired' || reason === 'closed'))) {
      this.audit.record('session.closed', { principal: s.principal, upstream: s.route.name, era: 'legacy', reason });
    }
    const mine = this.sessionsOf.get(s.principal);
    if (mine?.delete(s.id) && mine.size === 0) this.sessionsOf.delete(s.principal);
    this.sharedAt.delete(s.id);
    // An evicted session ends everywhere (its client re-initializes on 404), as it did with one instance; one that
    // expired here, or closed with this instance, lives on in the store for the other instances.
    if (reason === 'evicted' && this.store) {
      const store = this.store;
      void store
        .deleteValue(sharedKey(s.id))
        .then(() => store.publish(SESSION_TOPIC, { id: s.id, t: 'ended' }))
        .catch(this.failed('warn', 'evicted session not ended in the shared store; it expires there', s));
    }
    s.end();
  }
}
