/**
 * The legacy face: what a 2025-11-25 client talks to when its upstream speaks 2026-07-28 only, or when the gateway's
 * own tasks are needed (rules that wrap tools; tasks only in a dual-era upstream's 2026-07-28 leg) (docs/how-it-works.md §How the
 * legacy face works). The gateway plays a legacy Streamable HTTP server (2025-11-25 basic/transports): it answers
 * `initialize` itself from the upstream's identity, owns the session, answers `ping` and `logging/setLevel`, and
 * forwards everything else through the session's route (the upstream's 2026-07-28 client when it speaks that era, else
 * its legacy sessions) with the session's capabilities, client info and log level (2026-07-28 basic §Per-request
 * metadata); tool calls go through the task runtime, so that the tool rules apply.
 *
 * Input requests of a call (MRTR rounds, whatever the upstream era) become legacy server→client requests on the
 * call's own POST response stream, with gateway-minted ids; the client's POSTed responses are routed back by id.
 * The session's GET stream and `resources/subscribe` are served from an upstream `subscriptions/listen`.
 *
 * Tasks (2025-11-25 basic/utilities/tasks) are served whenever the session's route can run them: the upstream runs
 * tool tasks, or a rule wraps tools. The records live in the task runtime; legacy-face-tasks.ts serves them.
 *
 * Sessions live in the shared store (`lsess:<id>`), so that any instance serves any request of one: what the session
 * decided at `initialize` (principal, route, tasks, the client's capabilities and info, version) and its log level.
 * An instance that meets a session it does not hold reads it from there; the live parts (GET stream, requests in
 * flight, server→client requests of a call, subscriptions) stay with the instance that has them. The shared copy
 * ends with DELETE (announced to every instance) or when it has been idle for `idleMs`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  errorSummary,
  GatewayError,
  LEGACY_VERSIONS,
  asErrorObject,
  canonicalJson,
  createTaskResultV1,
  declaresTasks,
  inputAnswerProblem,
  isInputDeclared,
  isInputMethod,
  isLegacyLogLevel,
  isNotification,
  isObject,
  isRequest,
  isResponse,
  legacyError,
  legacyInitializeResult,
  legacyInputParams,
  legacyResult,
  legacySupportsToolTasks,
  legacyTasksCapability,
  modernClientCapabilities,
  modernParamsFromLegacy,
  progressTokenOf,
  readInitializeParams,
  relayedOnRequestStream,
  requestIdOf,
  requiredCapabilityFor,
  offersSubscriptions,
  sessionListenFilter,
  singleHeader,
  toolTaskSupport,
  undeclaredInputError,
  withTaskSupportV1,
  withoutSubscriptionId,
  type Era,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type RequestId,
  type TraceCarrier,
  Tally,
} from '../translate/index.js';
import { NO_AUDIT, withoutHiddenTools, wrapsTools, type AuditLog, type TaskRuntime, type UpstreamRoute } from '../tasks/index.js';
import { annotateTrace, type RequestTrace, type UpstreamCall, type UpstreamCaller, type UpstreamListen } from '../upstream/index.js';
import { channelError, exceptionToEdge, inBandError, refuse, refuseWith } from './errors.js';
import { LegacyFaceTasks, legacyTaskSupport } from './legacy-face-tasks.js';
import { LegacySessionRegistry, type SessionEndReason, type SessionEntry, type SessionStore } from './legacy-face-sessions.js';
import { infoEnabled, noteFailure, recordRequest } from './operator-log.js';
import { identityOf } from './auth.js';
import { openSse, ResponseChannel, writeSse } from './response.js';
import { answer, failInBand, failWith, storeTrouble } from './legacy-face-replies.js';
import { callerOf, contextOf, idKey, newSession, setLogLevel, type FaceSession, type SessionDecisions } from './legacy-face-session.js';

/** What the face works over. */
export interface LegacyFaceTarget {
  /** The upstream's configured name (the metrics' label of a request that failed before a route was known). */
  name?: string;
  /** The runtime that runs tool calls and keeps task records. */
  runtime: TaskRuntime;
  /**
   * The route a new session works over, decided at its `initialize`: the upstream's modern client when the upstream
   * speaks 2026-07-28, else its legacy client. Task records name the route either way. `authorization`: the
   * credentials the session forwards (an OAuth-protected upstream tells its eras only to a caller with a token).
   */
  routeFor(signal: AbortSignal, authorization?: string): Promise<UpstreamRoute>;
  /**
   * The route a session picked at its `initialize`, by the era of the upstream client it works over (a session another
   * instance minted is rebuilt with it); absent or `undefined`: such sessions are not served here.
   */
  routeOf?(era: Era): UpstreamRoute | undefined;
}

/** Legacy face settings; every one has a default. */
export interface LegacyFaceOptions {
  /** SSE keep-alive comment interval (default 15 s). */
  keepAliveMs?: number;
  /** Most sessions held at once (default 1000). */
  maxSessions?: number;
  /**
   * Sessions one principal may hold (default: `maxSessions`): past it its own least recently used idle session ends,
   * else its `initialize` is refused (503), so that one caller cannot take every session from the others.
   */
  maxSessionsPerPrincipal?: number;
  /** Open GET streams one principal may hold (default: `maxSessionsPerPrincipal`). */
  maxStreamsPerPrincipal?: number;
  /** A session without requests for this long ends; its client gets 404 and re-initializes (default 30 min). */
  idleMs?: number;
  /** How long a call waits for the client to answer a server→client request (default 10 min). */
  inputTimeoutMs?: number;
  /** Notifications kept for a session whose GET stream is not open (default 64, oldest dropped first). */
  maxBacklog?: number;
  /** The registry's clock (tests pass their own). */
  now?: () => number;
  /** Where sessions are shared with the other instances (absent: sessions live in this instance alone). */
  store?: SessionStore;
  /** Activity restarts a shared session's idle time at most this often (default `min(5 s, idleMs / 10)`). */
  touchEveryMs?: number;
  /** Where sessions opened and closed are recorded (default none). */
  audit?: AuditLog;
}

/** Methods a legacy client may send that this face does not serve (modern-only methods). */
const NOT_SERVED = new Set(['server/discover', 'subscriptions/listen']);

/** Longest wait of a GET stream's headers for its upstream listen's acknowledgement. */
const GET_LISTEN_WAIT_MS = 1_000;

/** Resolves when `p` settles or `ms` have passed, whichever is first; never rejects. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.then(noop, noop), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

function noop(): void {}

/** The 2025-11-25 task methods, served only to a session that was advertised tasks. */
const TASK_METHODS = new Set(['tasks/get', 'tasks/result', 'tasks/list', 'tasks/cancel']);

/**
 * Whether a route can run tool tasks for a legacy client: the upstream runs them (a modern one declares the tasks
 * extension, a legacy one `tasks.requests.tools.call`), or a rule wraps tools.
 */
function runsTasks(route: UpstreamRoute, upstreamCaps: JsonObject): boolean {
  if (wrapsTools(route)) return true;
  return route.upstream.era === 'modern' ? declaresTasks(upstreamCaps) : legacySupportsToolTasks(upstreamCaps);
}

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

function sharedOf(s: FaceSession): JsonObject {
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
    v.v !== 1 || typeof v.principal !== 'string' || typeof v.upstream !== 'string' || (v.era !== 'legacy' && v.era !== 'modern') ||
    typeof v.tasks !== 'boolean' || !isObject(v.legacyCapabilities) || !isObject(v.clientInfo) || typeof v.protocolVersion !== 'string'
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

/** The legacy face of one upstream. */
export class LegacyFace {
  private readonly sessions: LegacySessionRegistry<FaceSession>;
  private readonly runtime: TaskRuntime;
  private readonly tasks: LegacyFaceTasks;
  /** Where warnings without a request go (set from the first request's logger). */
  private log: FastifyRequest['log'] | undefined;
  private readonly keepAliveMs: number;
  private readonly inputTimeoutMs: number;
  private readonly maxBacklog: number;
  private readonly store: SessionStore | undefined;
  private readonly idleMs: number;
  private readonly touchEveryMs: number;
  /** The subscription to session changes announced by other instances (made at the first session). */
  private sessionTopic: Promise<() => void> | undefined;
  /** Sessions being read from the store, so that concurrent requests of one rebuild it once. */
  private readonly loading = new Map<string, Promise<SessionEntry<FaceSession> | undefined>>();
  private readonly keepShared: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly audit: AuditLog;
  /** Session ids held here per principal (entries removed when empty), for the principal's share. */
  private readonly sessionsOf = new Map<string, Set<string>>();
  /** Open GET streams per principal (entries removed at zero). */
  private readonly streamsOf = new Tally();
  /** GET streams open (all principals), for the metrics. */
  private openStreams = 0;
  private readonly maxSessionsPerPrincipal: number;
  private readonly maxStreamsPerPrincipal: number;

  constructor(
    private readonly target: LegacyFaceTarget,
    opts: LegacyFaceOptions = {},
  ) {
    this.runtime = target.runtime;
    this.audit = opts.audit ?? NO_AUDIT;
    this.tasks = new LegacyFaceTasks(target.runtime, {
      notify: (s, n) => this.deliver(s as FaceSession, n),
      warn: (err, msg) => this.log?.warn({ err }, msg),
    });
    this.keepAliveMs = opts.keepAliveMs ?? 15_000;
    this.maxSessionsPerPrincipal = opts.maxSessionsPerPrincipal ?? opts.maxSessions ?? 1000;
    this.maxStreamsPerPrincipal = opts.maxStreamsPerPrincipal ?? this.maxSessionsPerPrincipal;
    this.inputTimeoutMs = opts.inputTimeoutMs ?? 10 * 60_000;
    this.maxBacklog = opts.maxBacklog ?? 64;
    this.store = opts.store;
    this.idleMs = opts.idleMs ?? 30 * 60_000;
    this.touchEveryMs = opts.touchEveryMs ?? Math.min(5_000, Math.floor(this.idleMs / 10));
    if (this.store) {
      // A request in flight keeps its session alive however long it runs: its shared copy too.
      this.keepShared = setInterval(() => this.keepBusyShared(), Math.max(1_000, Math.min(Math.floor(this.idleMs / 2), 60_000)));
      this.keepShared.unref();
    }
    this.sessions = new LegacySessionRegistry<FaceSession>({
      ...(opts.maxSessions !== undefined ? { maxSessions: opts.maxSessions } : {}),
      ...(opts.idleMs !== undefined ? { idleMs: opts.idleMs } : {}),
      ...(opts.now ? { now: opts.now } : {}),
      onEnd: (s, reason) => this.onEnd(s, reason),
    });
  }

  /** GET streams open here (an operator gauge). */
  get streamCount(): number {
    return this.openStreams;
  }

  /** Sessions held here (for /healthz and the metrics). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Ends every session (on shutdown). Idempotent. */
  close(): void {
    this.closed = true;
    if (this.keepShared) clearInterval(this.keepShared);
    // The shared copies stay: other instances go on serving the sessions.
    this.sessions.close();
    this.tasks.close();
    void this.sessionTopic?.then((off) => off(), () => {});
  }

  /** Serves one POST: `initialize`, a request, a notification or a response of the client. */
  async post(request: FastifyRequest, reply: FastifyReply, traced?: RequestTrace): Promise<FastifyReply> {
    const body = request.body;
    this.log ??= request.log;
    // Who the caller is, as the endpoint's authentication hook found it (and the credential to forward, if any).
    const { principal, authorization } = identityOf(request);
    if (!isObject(body) || body.jsonrpc !== '2.0') {
      // 2025-06-18 removed JSON-RPC batching; anything else is not one message either.
      return refuse(reply, 'GW_NOT_ONE_MESSAGE', requestIdOf(body));
    }
    if (isRequest(body) && body.method === 'initialize') return this.initialize(request, reply, body, authorization, principal);

    const pending = this.sessionOf(request, reply, requestIdOf(body), principal);
    // A session held here whose shared copy needs no touch is found without a turn of the event loop.
    const found = pending instanceof Promise ? await pending : pending;
    if ('refused' in found) return found.refused;
    const entry = found.entry;
    const version = singleHeader(request.headers, 'mcp-protocol-version');
    if (version && !LEGACY_VERSIONS.includes(version)) {
      return refuse(reply, 'GW_LEGACY_UNSUPPORTED_VERSION', requestIdOf(body), { args: [version] });
    }
    const s = entry.data;

    if (isResponse(body)) {
      this.sessions.touch(entry);
      try {
        if (!(await this.tasks.response(s, body as JsonObject, s.route, contextOf(s)))) await this.routeResponse(s, body as JsonObject);
      } catch (e) {
        // The answer could not be taken (the store is unavailable): the client may send it again.
        return storeTrouble(request, reply, null, e);
      }
      return reply.code(202).send();
    }
    if (isNotification(body)) {
      this.sessions.touch(entry);
      this.onNotification(s, body);
      return reply.code(202).send();
    }
    if (!isRequest(body)) return refuse(reply, 'GW_NOT_A_REQUEST', requestIdOf(body));

    const release = this.sessions.acquire(entry);
    // The operator line is built only when it is written (a logger at `warn` drops it anyway).
    const logs = infoEnabled(request);
    const started = Date.now();
    let outcome = 'ok';
    // The operator line names the task of task traffic (README: logs); a created task's id is learned on the way.
    const logged: { taskId?: string } = isObject(body.params) && typeof body.params.taskId === 'string' ? { taskId: body.params.taskId } : {};
    try {
      outcome = await this.serve(request, reply, s, body, logged, traced?.carrier);
    } finally {
      release();
      const ms = Date.now() - started;
      if (traced) annotateTrace(traced, { ...logged, ...errorCodeOf(outcome) });
      if (logs) request.log.info({ method: body.method, era: 'legacy-face', upstream: s.route.name, ...logged, outcome, ms, ...(traced ? { traceId: traced.traceId } : {}) }, 'mcp request');
      recordRequest(request, { upstream: s.route.name, method: body.method, clientEra: 'legacy', upstreamEra: s.route.upstream.era, mode: 'gateway', outcome, ms });
    }
    return reply;
  }

  /** Serves the session's GET stream (2025-11-25 basic/transports §Listening for Messages from the Server). */
  async get(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const found = await this.sessionOf(request, reply, null);
    if ('refused' in found) return found.refused;
    const entry = found.entry;
    if (!(singleHeader(request.headers, 'accept') ?? '').includes('text/event-stream')) {
      return refuse(reply, 'GW_STREAM_NOT_ACCEPTABLE', null);
    }
    const s = entry.data;
    if (s.stream || s.streamWanted) return refuse(reply, 'GW_STREAM_CONFLICT', null);
    // The principal's share of streams (each also holds an upstream listen), checked before that listen is opened.
    const open = this.streamsOf.of(s.principal);
    if (open >= this.maxStreamsPerPrincipal) {
      return refuse(reply, 'GW_PRINCIPAL_SHARE_EXHAUSTED', null, { args: ['open GET streams', this.maxStreamsPerPrincipal] });
    }
    this.streamsOf.add(s.principal);
    this.openStreams++;
    this.sessions.touch(entry);

    reply.hijack();
    const raw = reply.raw;
    let keepAlive: NodeJS.Timeout | undefined;
    raw.once('close', () => {
      this.streamsOf.remove(s.principal);
      this.openStreams--;
      if (keepAlive) clearInterval(keepAlive);
      if (s.stream === raw) s.stream = undefined;
      s.streamWanted = false;
      if (!s.ended.signal.aborted) void this.refreshListen(s).catch(this.failed('debug', 'listen not refreshed as the GET stream closed', s));
    });
    // The upstream listen is normally in place before the stream's headers go out, so a client that sees its GET
    // stream open misses no list change after that. An upstream slow to acknowledge holds the headers no longer than
    // GET_LISTEN_WAIT_MS: the stream opens and the listen attaches when it is acknowledged.
    s.streamWanted = true;
    const listening = this.refreshListen(s);
    listening.catch((e: unknown) => this.failed(s.ended.signal.aborted || raw.destroyed ? 'debug' : 'warn', 'upstream listen failed', s)(e));
    await settledWithin(listening, GET_LISTEN_WAIT_MS);
    if (raw.destroyed || s.ended.signal.aborted) {
      if (!raw.destroyed) raw.end();
      return reply;
    }
    keepAlive = openSse(raw, this.keepAliveMs);
    s.stream = raw;
    for (const n of s.backlog.splice(0)) writeSse(raw, n);
    // Task input that waited for a stream (2025-11-25 basic/utilities/tasks §Input Required Status: any SSE stream).
    this.tasks.streamOpened(s);
    return reply;
  }

  /**
   * Ends the session (2025-11-25 basic/transports §Session Management: the client SHOULD send DELETE when it leaves).
   */
  async delete(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const found = await this.sessionOf(request, reply, null);
    if ('refused' in found) return found.refused;
    const entry = found.entry;
    if (this.store) {
      try {
        await this.store.deleteValue(sharedKey(entry.id));
        // Instances holding a copy end theirs (its GET stream, its calls) at once.
        await this.store.publish(SESSION_TOPIC, { id: entry.id, t: 'ended' });
      } catch (e) {
        return storeTrouble(request, reply, null, e);
      }
    }
    this.sessions.end(entry.id, 'deleted');
    this.audit.record('session.closed', { principal: entry.principal, upstream: entry.data.route.name, era: 'legacy', reason: 'deleted' });
    return reply.code(200).send();
  }

  /**
   * The caller's session, or the refusal already sent (2025-11-25 basic/transports §Session Management: without the
   * session id, 400; for an unknown or ended one, or one of another principal, 404 so that the client initializes).
   */
  private sessionOf(
    request: FastifyRequest,
    reply: FastifyReply,
    id: RequestId | null,
    principal = identityOf(request).principal,
  ): SessionFound | Promise<SessionFound> {
    const sid = singleHeader(request.headers, 'mcp-session-id');
    if (!sid) return { refused: refuse(reply, 'GW_SESSION_ID_REQUIRED', id) };
    const held = this.sessions.lookup(sid, principal);
    // Held here, and its shared copy's idle time restarted recently enough (or sessions are not shared): no store.
    if (held && (!this.store || this.sessions.clock - held.data.sharedAt < this.touchEveryMs)) return { entry: held };
    return this.sessionFromStore(request, reply, id, principal, sid, held);
  }

  /** sessionOf when the store has a say: the shared copy of a held session is touched, an unknown one is read. */
  private async sessionFromStore(
    request: FastifyRequest,
    reply: FastifyReply,
    id: RequestId | null,
    principal: string,
    sid: string,
    held: SessionEntry<FaceSession> | undefined,
  ): Promise<SessionFound> {
    let entry: SessionEntry<FaceSession> | undefined;
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
  private async stillShared(entry: SessionEntry<FaceSession>, request: FastifyRequest): Promise<SessionEntry<FaceSession> | undefined> {
    const s = entry.data;
    const now = this.sessions.clock;
    if (!this.store || now - s.sharedAt < this.touchEveryMs) return entry;
    let alive: boolean;
    try {
      alive = await this.store.touchValue(sharedKey(s.id), this.idleMs);
    } catch (e) {
      request.log.warn({ err: e }, 'legacy face: the shared session could not be touched; serving the copy held here');
      return entry;
    }
    if (alive) {
      s.sharedAt = now;
      return entry;
    }
    this.sessions.end(s.id, 'ended-elsewhere');
    return undefined;
  }

  /**
   * Rebuilds a session another instance minted from its shared copy: only for the principal that initialized it (any
   * other is told 404, as for an unknown id) and on the route it picked. Concurrent requests rebuild it once.
   */
  private load(sid: string, principal: string, authorization: string | undefined): Promise<SessionEntry<FaceSession> | undefined> {
    const pending = this.loading.get(sid);
    if (pending) return pending.then((e) => (e && e.principal === principal ? e : undefined));
    const store = this.store as SessionStore;
    const loaded = (async () => {
      const v = await store.getValue(sharedKey(sid));
      const shared = v ? readShared(v) : undefined;
      if (!shared || shared.principal !== principal || this.closed) return undefined;
      const route = this.target.routeOf?.(shared.era);
      if (!route || route.name !== shared.upstream) return undefined;
      await this.listenForChanges();
      const at = this.sessions.clock;
      // Reading it is activity: its idle time restarts everywhere.
      if (!(await store.touchValue(sharedKey(sid), this.idleMs))) return undefined;
      const adopted = this.sessions.adopt(sid, principal, (id) => newSession(id, principal, authorization, route, shared, at));
      if (!adopted) throw new TooManySessionsError();
      const entry = this.counted(adopted);
      // What the session's answers read of the upstream (task support in tools/list, what a listen may ask for) this
      // instance learns now if it never met the upstream; a failure shows on the request that needs it.
      if (!route.upstream.knownIdentity) {
        await route.upstream.identity(callerOf(entry.data)).catch(this.failed('debug', 'upstream identity not learned for a rebuilt session', entry.data));
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
      if (m.t === 'ended') this.sessions.end(m.id, 'ended-elsewhere');
      else if (m.t === 'level' && typeof m.level === 'string') {
        const held = this.sessions.peek(m.id);
        if (held) setLogLevel(held.data, m.level);
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
    const now = this.sessions.clock;
    for (const e of this.sessions.busy()) {
      if (now - e.data.sharedAt < this.touchEveryMs) continue;
      e.data.sharedAt = now;
      void store.touchValue(sharedKey(e.id), this.idleMs).catch(this.failed('warn', 'shared session not kept alive; it may expire elsewhere', e.data));
    }
  }

  /**
   * Makes room for one more session of `principal` within its share: its own least recently used idle session ends
   * (its client re-initializes on 404); `false` when every session it holds is busy.
   */
  private roomFor(principal: string): boolean {
    const mine = this.sessionsOf.get(principal);
    if (!mine || mine.size < this.maxSessionsPerPrincipal) return true;
    let oldest: SessionEntry<FaceSession> | undefined;
    for (const id of mine) {
      const e = this.sessions.peek(id);
      if (e && e.busy === 0 && (!oldest || e.lastSeen < oldest.lastSeen)) oldest = e;
    }
    if (!oldest) return false;
    this.sessions.end(oldest.id, 'evicted');
    return true;
  }

  /** Counts a session held here against its principal's share. */
  private counted(entry: SessionEntry<FaceSession>): SessionEntry<FaceSession> {
    let mine = this.sessionsOf.get(entry.principal);
    if (!mine) this.sessionsOf.set(entry.principal, (mine = new Set()));
    mine.add(entry.id);
    return entry;
  }

  private async initialize(request: FastifyRequest, reply: FastifyReply, body: JsonRpcRequest, authorization: string | undefined, principal: string): Promise<FastifyReply> {
    const started = Date.now();
    const init = readInitializeParams(body.params);
    if (!init) return refuse(reply, 'GW_INITIALIZE_PARAMS', body.id);
    if (this.closed) return refuse(reply, 'GW_SHUTTING_DOWN', body.id);
    // The principal's share, before the upstream is asked anything.
    if (!this.roomFor(principal)) {
      return refuse(reply, 'GW_PRINCIPAL_SHARE_EXHAUSTED', body.id, { args: ['sessions', this.maxSessionsPerPrincipal] });
    }
    const capabilities = modernClientCapabilities(init.capabilities);
    const caller: UpstreamCaller = { principal, capabilities, clientInfo: init.clientInfo, ...(authorization ? { authorization } : {}) };
    const aborter = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) aborter.abort(new Error('client closed the request'));
    };
    reply.raw.on('close', onClose);
    let identity;
    let route: UpstreamRoute;
    try {
      route = await this.target.routeFor(aborter.signal, authorization);
      identity = await route.upstream.identity(caller, aborter.signal);
    } catch (e) {
      const edge = exceptionToEdge(e);
      if (edge.fault) request.log.error({ err: e }, 'legacy face: upstream identity failed');
      // Counted (an upstream failing the handshake is an upstream error by kind); its era is not known here.
      noteFailure(request, e);
      recordRequest(request, { upstream: this.target.name ?? 'unknown', method: 'initialize', clientEra: 'legacy', upstreamEra: 'unknown', mode: 'gateway', outcome: 'error', ms: Date.now() - started });
      return refuseWith(reply, edge, body.id);
    } finally {
      reply.raw.off('close', onClose);
    }
    const tasks = runsTasks(route, identity.capabilities);
    const decided = { tasks, legacyCapabilities: init.capabilities, clientInfo: init.clientInfo, protocolVersion: init.protocolVersion };
    const at = this.sessions.clock;
    // Another initialize of the same principal may have taken the room while the upstream was asked.
    if (!this.roomFor(principal)) {
      return refuse(reply, 'GW_PRINCIPAL_SHARE_EXHAUSTED', body.id, { args: ['sessions', this.maxSessionsPerPrincipal] });
    }
    const created = this.sessions.create(principal, (id) => newSession(id, principal, authorization, route, decided, at));
    if (!created) return storeTrouble(request, reply, body.id, new TooManySessionsError());
    const entry = this.counted(created);
    // Never the session id: it is a bearer credential of the session.
    this.audit.record('session.opened', { principal, upstream: route.name, era: 'legacy' });
    if (this.store) {
      try {
        await this.listenForChanges();
        // Stored before the client learns the id: its next request may reach any instance.
        await this.store.putValue(sharedKey(entry.id), sharedOf(entry.data), this.idleMs);
      } catch (e) {
        this.sessions.end(entry.id, 'closed');
        return storeTrouble(request, reply, body.id, e);
      }
    }
    request.log.info({ method: 'initialize', era: 'legacy-face', upstream: route.name, outcome: 'session created' }, 'mcp request');
    recordRequest(request, { upstream: route.name, method: 'initialize', clientEra: 'legacy', upstreamEra: route.upstream.era, mode: 'gateway', outcome: 'ok', ms: Date.now() - started });
    const result = legacyInitializeResult(identity, init.protocolVersion);
    // 2025-11-25 basic/utilities/tasks §Server Capabilities: list, cancel and task-augmented tools/call.
    if (tasks && isObject(result.capabilities)) result.capabilities = { ...result.capabilities, tasks: legacyTasksCapability() };
    return reply
      .code(200)
      .header('mcp-session-id', entry.id)
      .header('content-type', 'application/json')
      .send({ jsonrpc: '2.0', id: body.id, result });
  }

  /** Serves one client request; returns what the operator log says about it. */
  private async serve(request: FastifyRequest, reply: FastifyReply, s: FaceSession, req: JsonRpcRequest, logged: { taskId?: string }, trace: TraceCarrier | undefined): Promise<string> {
    const params: JsonObject = isObject(req.params) ? req.params : {};
    switch (req.method) {
      case 'ping':
        // 2025-11-25 basic/utilities/ping; 2026-07-28 removed it, so it is answered here.
        return answer(reply, req.id, {});
      case 'logging/setLevel':
        // The level travels upstream as `io.modelcontextprotocol/logLevel` on each later request of the session.
        if (!isLegacyLogLevel(params.level)) return failInBand(reply, req.id, inBandError('GW_UNKNOWN_LOG_LEVEL'));
        setLogLevel(s, params.level);
        if (this.store) {
          try {
            await this.store.putValue(sharedKey(s.id), sharedOf(s), this.idleMs);
            s.sharedAt = this.sessions.clock;
            await this.store.publish(SESSION_TOPIC, { id: s.id, t: 'level', level: params.level });
          } catch (e) {
            return failWith(request, reply, s.route.name, req, e);
          }
        }
        return answer(reply, req.id, {});
      case 'resources/subscribe':
      case 'resources/unsubscribe': {
        // An upstream that does not offer subscriptions is not asked (the face does not advertise them either).
        if (!offersSubscriptions(s.route.upstream.knownIdentity?.capabilities ?? {})) {
          return failInBand(reply, req.id, inBandError('GW_METHOD_NOT_SERVED', { args: [req.method] }));
        }
        if (typeof params.uri !== 'string') return failInBand(reply, req.id, inBandError('GW_URI_REQUIRED'));
        const uri = params.uri;
        const had = s.subscriptions.has(uri);
        if (req.method === 'resources/subscribe') s.subscriptions.add(uri);
        else s.subscriptions.delete(uri);
        let failed = false;
        // A repeated subscribe to a URI already held is not the client's only claim to it: giving it up drops nothing.
        const watched = req.method === 'resources/subscribe' && !had ? this.dropWhenGone(s, reply, req.id, uri) : undefined;
        try {
          // Answered once the upstream listen carries the new filter, so that no update after the answer is lost.
          await this.refreshListen(s);
        } catch (e) {
          failed = true;
          this.failed(s.ended.signal.aborted || watched?.signal.aborted ? 'debug' : 'warn', 'upstream listen failed', s)(e);
        } finally {
          watched?.done();
        }
        // Success only for a URI the upstream's acknowledgement granted.
        if (req.method === 'resources/subscribe' && (failed || !s.listenAccepted?.resourceSubscriptions?.includes(uri))) {
          s.subscriptions.delete(uri);
          return failInBand(reply, req.id, inBandError('GW_SUBSCRIBE_FAILED'));
        }
        return answer(reply, req.id, {});
      }
      case 'tools/call':
        // 2025-11-25 basic/utilities/tasks §Behavior Requirements #1: a receiver that did not declare task support
        // processes the request normally and ignores `task`.
        if (s.tasks && isObject(params.task)) return this.createTask(request, reply, s, req, params, logged, trace);
        return this.forward(request, reply, s, req, trace);
      default:
        if (NOT_SERVED.has(req.method) || (TASK_METHODS.has(req.method) && !s.tasks)) return failInBand(reply, req.id, inBandError('GW_METHOD_NOT_SERVED', { args: [req.method] }));
        if (TASK_METHODS.has(req.method)) return this.serveTask(request, reply, s, req, params, trace);
        return this.forward(request, reply, s, req, trace);
    }
  }

  /** A task-augmented tools/call: a task in the runtime, answered with the nested CreateTaskResult. */
  private async createTask(
    request: FastifyRequest,
    reply: FastifyReply,
    s: FaceSession,
    req: JsonRpcRequest,
    params: JsonObject,
    logged: { taskId?: string },
    trace: TraceCarrier | undefined,
  ): Promise<string> {
    const { task, ...rest } = params;
    const aborter = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) aborter.abort(new Error('client closed the request'));
    };
    reply.raw.on('close', onClose);
    try {
      const created = await this.tasks.create(s, s.route, contextOf(s, trace), rest, isObject(task) ? task.ttl : undefined, aborter.signal);
      if ('error' in created) return failInBand(reply, req.id, legacyError(created.error));
      logged.taskId = created.record.taskId;
      void reply.code(200).header('content-type', 'application/json').send({ jsonrpc: '2.0', id: req.id, result: createTaskResultV1(created.record, created.meta) });
      return 'task created';
    } catch (e) {
      return failWith(request, reply, s.route.name, req, e);
    } finally {
      reply.raw.off('close', onClose);
    }
  }

  /** tasks/get, tasks/list, tasks/cancel and the blocking tasks/result. */
  private async serveTask(
    request: FastifyRequest,
    reply: FastifyReply,
    s: FaceSession,
    req: JsonRpcRequest,
    params: JsonObject,
    trace: TraceCarrier | undefined,
  ): Promise<string> {
    const caller = contextOf(s, trace);
    const taskId = typeof params.taskId === 'string' ? params.taskId : undefined;
    if (req.method !== 'tasks/list' && taskId === undefined) return failInBand(reply, req.id, inBandError('GW_TASK_ID_REQUIRED'));
    try {
      switch (req.method) {
        case 'tasks/get':
          return answer(reply, req.id, await this.tasks.get(s.route, caller, taskId as string));
        case 'tasks/cancel':
          return answer(reply, req.id, await this.tasks.cancel(s.route, caller, taskId as string));
        case 'tasks/list':
          return answer(reply, req.id, await this.tasks.list(s.route, caller, typeof params.cursor === 'string' ? params.cursor : undefined));
        default:
          return await this.taskResult(request, reply, s, req, taskId as string);
      }
    } catch (e) {
      return failWith(request, reply, s.route.name, req, e);
    }
  }

  /** tasks/result: an SSE response that stays open until the task is terminal (2025-11-25 §Result Retrieval). */
  private taskResult(request: FastifyRequest, reply: FastifyReply, s: FaceSession, req: JsonRpcRequest, taskId: string): Promise<string> {
    // A disconnect is not a cancellation (2025-11-25 basic/transports): the task runs on; only this wait ends.
    return this.streamed(
      request,
      reply,
      s,
      req,
      async ({ channel, canStream, signal }) => {
        const outcome = await this.tasks.result(s, s.route, contextOf(s), taskId, req.id, channel, reply.raw, canStream, signal);
        if (signal.aborted) channel.abandon();
        return outcome;
      },
      (channel) => {
        channel.abandon();
        return 'client closed';
      },
    );
  }

  /** Forwards a request upstream and streams what its call produces back to the client. */
  private forward(request: FastifyRequest, reply: FastifyReply, s: FaceSession, req: JsonRpcRequest, trace: TraceCarrier | undefined): Promise<string> {
    // 2025-11-25 basic/transports says a disconnect is not a cancellation, but this face keeps no resumable streams:
    // nothing could reach the client any more, so the upstream work is stopped.
    return this.streamed(
      request,
      reply,
      s,
      req,
      async ({ channel, canStream, signal, key }) => {
        let call: UpstreamCall | undefined;
        try {
          // A tools/call goes through the runtime: its rules apply, and a task the upstream insists on is hidden.
          call = req.method === 'tools/call'
            ? await this.runtime.callToolPlain(s.route, modernParamsFromLegacy(isObject(req.params) ? req.params : {}) ?? {}, contextOf(s, trace), signal)
            : await s.route.upstream.call(callerOf(s, trace), req.method, modernParamsFromLegacy(req.params), signal);
          return await this.pump(s, req, key, call, channel, canStream, signal);
        } catch (e) {
          call?.cancel('gateway error');
          throw e;
        }
      },
      (channel) => this.endCancelled(req, channel),
    );
  }

  /**
   * Serves a client request whose answer may stream (SSE when the client accepts it): the request is cancellable (its
   * `notifications/cancelled`, or the connection closing, aborts `signal`), a failure is answered through the one
   * error table, and what the request left behind (its in-flight entry, its server→client requests) is dropped.
   */
  private async streamed(
    request: FastifyRequest,
    reply: FastifyReply,
    s: FaceSession,
    req: JsonRpcRequest,
    run: (io: { channel: ResponseChannel; canStream: boolean; signal: AbortSignal; key: string }) => Promise<string>,
    cancelled: (channel: ResponseChannel) => string,
  ): Promise<string> {
    const accept = singleHeader(request.headers, 'accept') ?? '';
    const canStream = accept.includes('text/event-stream') || accept.includes('*/*');
    const channel = new ResponseChannel(reply, canStream, this.keepAliveMs);
    const key = idKey(req.id);
    const aborter = new AbortController();
    s.inflight.set(key, aborter);
    const onClose = () => {
      if (!reply.raw.writableFinished) aborter.abort(new Error('client closed the request'));
    };
    reply.raw.on('close', onClose);
    try {
      return await run({ channel, canStream, signal: aborter.signal, key });
    } catch (e) {
      if (aborter.signal.aborted) return cancelled(channel);
      const edge = exceptionToEdge(e);
      noteFailure(request, e);
      if (edge.fault) request.log.error({ err: e, method: req.method, upstream: s.route.name }, 'legacy face: request failed');
      // An upstream's 401/403 challenge goes on the reply before the channel ends it (Retry-After is the channel's).
      if (edge.challenge !== undefined) void reply.header('www-authenticate', edge.challenge);
      channel.error(req.id, edge.error, edge.status, edge.retryAfterSeconds);
      return `error ${edge.error.code}`;
    } finally {
      reply.raw.off('close', onClose);
      if (s.inflight.get(key) === aborter) s.inflight.delete(key);
      if (s.outbound.size > 0) for (const [gid, o] of s.outbound) if (o.owner === key) s.outbound.delete(gid);
    }
  }

  /**
   * Reads a call's events: notifications are relayed (progress for the client's token, log messages at its
   * level), input requests go to the client on this request's stream, the outcome ends the response.
   */
  private async pump(s: FaceSession, req: JsonRpcRequest, key: string, call: UpstreamCall, channel: ResponseChannel, canStream: boolean, signal: AbortSignal): Promise<string> {
    const token = progressTokenOf(isObject(req.params) ? req.params : {});
    for (;;) {
      const waiting = s.outbound.size > 0 && [...s.outbound.values()].some((o) => o.owner === key);
      const e = await call.nextUnless(waiting ? this.inputTimeoutMs : undefined, signal);
      if (e === undefined) {
        if (signal.aborted) {
          call.cancel(String((signal.reason as Error | undefined)?.message ?? 'cancelled'));
          return this.endCancelled(req, channel);
        }
        call.cancel('the client did not answer the input request in time');
        channelError(channel, req.id, 'GW_CLIENT_ANSWER_TIMEOUT');
        return 'input timeout';
      }
      switch (e.kind) {
        case 'notification':
          // Progress for the client's own token, log messages at its level (the 2026-07-28 request-stream rule holds
          // for a legacy POST stream too); list changes reach the session through its listen, not this stream.
          if (relayedOnRequestStream(e.message, { progressToken: token, logLevel: s.logLevel })) channel.notify(e.message);
          break;
        case 'request': {
          const refused = this.ask(s, key, call, e.message, channel, canStream);
          if (refused) {
            call.cancel(refused.message);
            channel.error(req.id, refused, 200);
            return `error ${refused.code}`;
          }
          break;
        }
        case 'response': {
          const m = e.message;
          if ('error' in m) {
            const error = legacyError(asErrorObject(m.error));
            channel.error(req.id, error, 200);
            return `upstream error ${error.code}`;
          }
          const r = legacyResult(req.method, isObject(m.result) ? m.result : {});
          if (!r.ok) {
            channelError(channel, req.id, 'GW_UNSUPPORTED_RESULT_TYPE', { args: [r.failure.resultType] });
            return 'unsupported result type';
          }
          // A tools/list without the tools job rules hide (docs/jobs.md), with each tool's task support.
          channel.result(req.id, req.method === 'tools/list' ? withoutHiddenTools(s.route, s.tasks ? this.withTaskSupport(s, m.result, r.value) : r.value) : r.value);
          return 'ok';
        }
        case 'failure':
          throw e.error;
      }
    }
  }

  /** A tools/list result with each tool's 2025-11-25 `execution.taskSupport` (legacyTaskSupport). */
  private withTaskSupport(s: FaceSession, upstreamResult: unknown, result: JsonObject): JsonObject {
    const route = s.route;
    const era = route.upstream.era;
    const extension = declaresTasks(route.upstream.knownIdentity?.capabilities ?? {});
    const own = era === 'legacy' ? toolTaskSupport(upstreamResult) : undefined;
    return withTaskSupportV1(result, (name) =>
      legacyTaskSupport(this.runtime.policyFor(route, name).task, era === 'modern' ? { era, extension } : { era: 'legacy', support: own?.get(name) }),
    );
  }

  /**
   * Sends one input request of a call to the client as a legacy server→client request, or says why it cannot be
   * sent: an input kind the client did not declare is never sent (2026-07-28 basic/patterns/mrtr §Server
   * Requirements; the upstream would answer -32021 itself).
   */
  private ask(s: FaceSession, owner: string, call: UpstreamCall, m: JsonRpcRequest, channel: ResponseChannel, canStream: boolean): JsonRpcErrorObject | undefined {
    const params = isObject(m.params) ? m.params : undefined;
    if (!isInputMethod(m.method)) {
      void call
        .respond(m.id, { error: inBandError('GW_METHOD_NOT_SERVED', { args: [m.method] }) })
        .catch(this.failed('debug', 'refusal of an upstream request not delivered; its call ended', s));
      return undefined;
    }
    if (!isInputDeclared(m.method, params, s.legacyCapabilities)) return undeclaredInputError(m.method, requiredCapabilityFor(m.method, params));
    if (!canStream) return inBandError('GW_NEEDS_STREAM', { args: [m.method] });
    const gid = `gw-${++s.nextOutbound}`;
    s.outbound.set(gid, { call, upstreamId: m.id, owner, method: m.method, params });
    const out: JsonRpcMessage = { jsonrpc: '2.0', id: gid, method: m.method };
    const p = legacyInputParams(m.method, params, `${s.id.slice(0, 8)}-${gid}`);
    if (p) out.params = p;
    channel.notify(out);
    return undefined;
  }

  /** A client's POSTed response to a server→client request, routed to the waiting call. */
  private async routeResponse(s: FaceSession, body: JsonObject): Promise<void> {
    const id = body.id;
    if (typeof id !== 'string') return;
    const o = s.outbound.get(id);
    if (!o) return;
    if (!('error' in body)) {
      // An answer that does not fit the question is refused (400, -32602) before it reaches the upstream; the request
      // stays outstanding, so the client can send a correct one (2025-11-25 basic/transports §Sending Messages).
      const problem = inputAnswerProblem(o.method, o.params, body.result);
      if (problem !== undefined) throw new GatewayError('GW_INVALID_INPUT_RESPONSE', { args: [JSON.stringify(id), problem] });
    }
    s.outbound.delete(id);
    const payload = 'error' in body ? { error: asErrorObject(body.error) } : { result: body.result as JsonObject };
    await o.call.respond(o.upstreamId, payload).catch(() => {
      // The call ended meanwhile; its request's response says so.
    });
  }

  private onNotification(s: FaceSession, n: JsonRpcNotification): void {
    if (n.method !== 'notifications/cancelled') return;
    // 2025-11-25 basic/utilities/cancellation → the upstream call is aborted (2026-07-28: the stream is closed).
    const p = isObject(n.params) ? n.params : {};
    const rid = p.requestId;
    if (typeof rid !== 'string' && typeof rid !== 'number') return;
    s.inflight.get(idKey(rid))?.abort(new Error(typeof p.reason === 'string' ? p.reason : 'cancelled by the client'));
  }

  /** A cancelled request gets no response (2025-11-25 cancellation: SHOULD NOT); a JSON reply still needs a body. */
  private endCancelled(req: JsonRpcRequest, channel: ResponseChannel): string {
    if (channel.isStreaming) channel.abandon();
    else channelError(channel, req.id, 'GW_REQUEST_CANCELLED');
    return 'cancelled';
  }

  /**
   * A subscribe whose client closes the request or cancels it (notifications/cancelled) before it is answered: the
   * subscription is dropped (the client never learned it succeeded) and a newer listen change supersedes the pending
   * setup. With no other request waiting on that setup, it is simply aborted (the session's filter is the established
   * one again); others waiting are answered from the listen of the session's state without the dropped URI.
   */
  private dropWhenGone(s: FaceSession, reply: FastifyReply, id: JsonRpcRequest['id'], uri: string): { signal: AbortSignal; done(): void } {
    const key = idKey(id);
    const gone = new AbortController();
    const onClose = () => {
      if (!reply.raw.writableFinished) gone.abort(new Error('client closed the request'));
    };
    const onGone = () => {
      s.subscriptions.delete(uri);
      void this.refreshListen(s).catch(this.failed('debug', 'listen not refreshed as a subscribe was given up', s));
    };
    s.inflight.set(key, gone);
    reply.raw.on('close', onClose);
    gone.signal.addEventListener('abort', onGone, { once: true });
    return {
      signal: gone.signal,
      done: () => {
        reply.raw.off('close', onClose);
        gone.signal.removeEventListener('abort', onGone);
        if (s.inflight.get(key) === gone) s.inflight.delete(key);
      },
    };
  }

  /**
   * Makes the session's upstream listen match what the session needs: list changes while its GET stream is open,
   * and its resource subscriptions. The new listen is opened before the old one is closed, so nothing is missed; the
   * old one stays in place if the new one fails. A change still waiting for its acknowledgement is superseded by a
   * newer one (whose filter, computed from the session's state when it runs, covers the older wish): the older setup
   * is aborted and its caller is answered by the newer change, so one stuck setup holds up nobody.
   */
  private refreshListen(s: FaceSession): Promise<void> {
    s.listenSetup?.abort(new Error('superseded by a newer listen change'));
    const setup = new AbortController();
    s.listenSetup = setup;
    const run = s.listenChain.then(async () => {
      if (setup.signal.aborted) throw setup.signal.reason;
      if (s.ended.signal.aborted) return;
      const caps = s.route.upstream.knownIdentity?.capabilities ?? {};
      const filter = sessionListenFilter(caps, { lists: s.streamWanted, resources: [...s.subscriptions] });
      const key = filter ? canonicalJson(filter) : '';
      if (key === s.listenKey) return;
      const old = s.listen;
      if (!filter) {
        s.listen = undefined;
        s.listenKey = '';
        s.listenAccepted = undefined;
        old?.abort();
        return;
      }
      const controller = new AbortController();
      const stop = (e: Event) => controller.abort((e.target as AbortSignal).reason);
      // Only while it sets up: once acknowledged, the listen is the session's, whoever asked for it.
      setup.signal.addEventListener('abort', stop, { once: true });
      let l: UpstreamListen;
      try {
        l = await s.route.upstream.listen(callerOf(s), filter, AbortSignal.any([controller.signal, s.ended.signal]));
      } finally {
        setup.signal.removeEventListener('abort', stop);
      }
      s.listen = controller;
      s.listenKey = key;
      s.listenAccepted = l.accepted;
      void this.readListen(s, l, controller);
      old?.abort();
    });
    const done = () => {
      if (s.listenSetup === setup) s.listenSetup = undefined;
    };
    const next: Promise<void> = run.then(done, (e: unknown) => {
      done();
      // Superseded: the newer change answers for it (and its failure is the newer caller's to report).
      if (setup.signal.aborted && !s.ended.signal.aborted && s.listenLatest !== next) return s.listenLatest;
      throw e;
    });
    s.listenLatest = next;
    // The chain only orders the changes (on the work itself, never on a caller's wait): a failure is the caller's.
    const logged = this.failed('debug', 'listen change failed', s);
    s.listenChain = run.catch((e: unknown) => {
      if (!setup.signal.aborted) logged(e);
    });
    return next;
  }

  private async readListen(s: FaceSession, l: UpstreamListen, controller: AbortController): Promise<void> {
    try {
      for await (const n of l.notifications) {
        if (controller.signal.aborted) break;
        s.listenFailures = 0;
        // A listen stream's tag means nothing to a legacy client (the upstream client may have removed it already).
        this.deliver(s, withoutSubscriptionId(n));
      }
    } catch {
      // the upstream ended the stream; handled below
    }
    if (controller.signal.aborted || s.ended.signal.aborted || s.listen !== controller) return;
    // The upstream ended a listen the session still needs: open it again, a bounded number of times in a row.
    s.listen = undefined;
    s.listenKey = '';
    if (++s.listenFailures > 5) return;
    const timer = setTimeout(() => void this.refreshListen(s).catch(this.failed('debug', 'listen retry failed', s)), 500 * s.listenFailures);
    timer.unref();
  }

  /** A listen notification → the session's GET stream, or its bounded backlog while none is open. */
  private deliver(s: FaceSession, n: JsonRpcNotification): void {
    if (n.method === 'notifications/resources/updated') {
      const uri = isObject(n.params) ? n.params.uri : undefined;
      if (typeof uri !== 'string' || !s.subscriptions.has(uri)) return;
    }
    if (s.stream && !s.stream.destroyed) {
      writeSse(s.stream, n);
      return;
    }
    s.backlog.push(n);
    if (s.backlog.length > this.maxBacklog) s.backlog.shift();
  }

  /**
   * A rejection handler for background work of a session: logged (to the first request's logger) with the upstream
   * and the error's name and message, never the session id.
   */
  private failed(level: 'debug' | 'warn', msg: string, s: FaceSession): (e: unknown) => void {
    return (e) => this.log?.[level]({ upstream: s.route.name, err: errorSummary(e) }, `legacy face: ${msg}`);
  }

  private onEnd(s: FaceSession, reason: SessionEndReason): void {
    // The session ends for its client when evicted, or when it expires or closes with no other instance to serve it;
    // a DELETE is recorded where it was served (its announcement may end this copy first), an end announced by
    // another instance there.
    if (reason === 'evicted' || (!this.store && (reason === 'expired' || reason === 'closed'))) {
      this.audit.record('session.closed', { principal: s.principal, upstream: s.route.name, era: 'legacy', reason });
    }
    const mine = this.sessionsOf.get(s.principal);
    if (mine?.delete(s.id) && mine.size === 0) this.sessionsOf.delete(s.principal);
    // An evicted session ends everywhere (its client re-initializes on 404), as it did with one instance; one that
    // expired here, or closed with this instance, lives on in the store for the other instances.
    if (reason === 'evicted' && this.store) {
      const store = this.store;
      void store
        .deleteValue(sharedKey(s.id))
        .then(() => store.publish(SESSION_TOPIC, { id: s.id, t: 'ended' }))
        .catch(this.failed('warn', 'evicted session not ended in the shared store; it expires there', s));
    }
    s.ended.abort();
    this.tasks.sessionEnded(s);
    for (const c of s.inflight.values()) c.abort(new Error('session ended'));
    s.inflight.clear();
    s.outbound.clear();
    s.listen?.abort();
    if (s.stream && !s.stream.writableEnded) s.stream.end();
    s.stream = undefined;
  }
}

/** A session found for a request, or the refusal already sent. */
type SessionFound = { entry: SessionEntry<FaceSession> } | { refused: FastifyReply };

/** No room for another session here (every one held has a request in flight): GW_TOO_MANY_SESSIONS, 503. */
export class TooManySessionsError extends GatewayError {
  constructor() {
    super('GW_TOO_MANY_SESSIONS');
  }
}

/** The JSON-RPC error code an operator-log outcome names (`error -32602`, `upstream error -32603`), for the span. */
function errorCodeOf(outcome: string): { errorCode?: number } {
  const m = /error (-?\d+)$/.exec(outcome);
  return m ? { errorCode: Number(m[1]) } : {};
}
