/**
 * The legacy face's router: what a 2025-11-25 client talks to when its upstream speaks 2026-07-28 only, or when the
 * gateway's own tasks are needed (rules that wrap tools; tasks only in a dual-era upstream's 2026-07-28 leg)
 * (docs/how-it-works.md §How the legacy face works). The gateway plays a legacy Streamable HTTP server (2025-11-25
 * basic/transports): it answers `initialize` itself from the upstream's identity, owns the session, answers `ping` and
 * `logging/setLevel`, and hands everything else to the part that serves it, on the session's route (the upstream's
 * 2026-07-28 client when it speaks that era, else its legacy sessions) with the session's capabilities, client info
 * and log level (2026-07-28 basic §Per-request metadata); tool calls go through the task runtime, so that the tool
 * rules apply. The parts, beside this file in proxy/legacy-face/: sessions held and shared (shared.ts, over the
 * registry of registry.ts), each session's identity in session.ts, calls in flight and their server→client requests
 * (calls.ts), the GET stream and subscriptions (listens.ts), tasks (tasks.ts), plain answers (replies.ts). A session's
 * live state is split the same way: each of those files makes its own part of a session and keeps its fields; the
 * session holds the parts and ends each through its own `end()`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  errorSummary,
  LEGACY_VERSIONS,
  legacyCreateTaskResult,
  declaresTasks,
  isLegacyLogLevel,
  isNotification,
  isObject,
  isRequest,
  isResponse,
  legacyError,
  legacyInitializeResult,
  legacySupportsToolTasks,
  legacyTasksCapability,
  modernClientCapabilities,
  readInitializeParams,
  requestIdOf,
  singleHeader,
  type Era,
  type JsonObject,
  type JsonRpcRequest,
  type TraceCarrier,
} from '../../translate/index.js';
import { NO_AUDIT, wrapsTools, type AuditLog, type TaskRuntime, type UpstreamRoute } from '../../tasks/index.js';
import { annotateTrace, type RequestTrace, type UpstreamCaller } from '../../upstream/index.js';
import { exceptionToEdge, inBandError, refuse, refuseWith } from '../errors.js';
import { LegacyFaceTasks } from './tasks.js';
import type { SessionStore } from './registry.js';
import { FaceCalls, SessionCalls } from './calls.js';
import { FaceListens } from './listens.js';
import { answer, failInBand, failWith, storeTrouble } from './replies.js';
import type { ClientSession } from './session.js';
import { ClientSessions } from './shared.js';
import { passToMember } from './member-pass.js';
import { stopWhenClientLeaves } from '../response.js';
import { infoEnabled, recordRequest } from '../operator-log.js';
import { CLIENT_CLOSED, errorOutcome, OK, outcomeText, SESSION_CREATED, spanErrorCode, TASK_CREATED, type RequestOutcome } from '../request-outcome.js';
import { identityOf } from '../auth.js';
import { traceRequest } from '../request-trace.js';

export { TooManySessionsError } from './shared.js';

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

/** What the operator line says of a request beyond its method: the task it names, the member it passed through to. */
interface Logged {
  taskId?: string;
  member?: string;
}

/** The legacy face of one upstream. */
export class LegacyFace {
  private readonly sessions: ClientSessions;
  private readonly tasks: LegacyFaceTasks;
  private readonly calls: FaceCalls;
  private readonly listens: FaceListens;
  /** Where warnings without a request go (set from the first request's logger). */
  private log: FastifyRequest['log'] | undefined;
  private readonly audit: AuditLog;

  constructor(
    private readonly target: LegacyFaceTarget,
    opts: LegacyFaceOptions = {},
  ) {
    this.audit = opts.audit ?? NO_AUDIT;
    const failed = (level: 'debug' | 'warn', msg: string, s: ClientSession) => this.failed(level, msg, s);
    this.tasks = new LegacyFaceTasks(target.runtime, { warn: (err, msg) => this.log?.warn({ err }, msg) });
    const keepAliveMs = opts.keepAliveMs ?? 15_000;
    this.calls = new FaceCalls({ runtime: target.runtime, keepAliveMs, inputTimeoutMs: opts.inputTimeoutMs ?? 10 * 60_000, failed });
    this.sessions = new ClientSessions({
      ...(opts.store ? { store: opts.store } : {}),
      ...(opts.maxSessions !== undefined ? { maxSessions: opts.maxSessions } : {}),
      ...(opts.maxSessionsPerPrincipal !== undefined ? { maxSessionsPerPrincipal: opts.maxSessionsPerPrincipal } : {}),
      ...(opts.idleMs !== undefined ? { idleMs: opts.idleMs } : {}),
      ...(opts.touchEveryMs !== undefined ? { touchEveryMs: opts.touchEveryMs } : {}),
      ...(opts.now ? { now: opts.now } : {}),
      routeOf: (era: Era) => target.routeOf?.(era),
      audit: this.audit,
      failed,
      // Each part of a session is made by the file that serves it, and ends with the session (ClientSession.end).
      parts: { calls: () => new SessionCalls(), stream: (s) => this.listens.open(s), tasks: (s) => this.tasks.open(s) },
    });
    this.listens = new FaceListens({
      keepAliveMs,
      maxBacklog: opts.maxBacklog ?? 64,
      maxStreamsPerPrincipal: opts.maxStreamsPerPrincipal ?? this.sessions.maxSessionsPerPrincipal,
      failed,
      streamOpened: (s) => this.tasks.streamOpened(s),
    });
  }

  /** GET streams open here (an operator gauge). */
  get streamCount(): number {
    return this.listens.streamCount;
  }

  /** Sessions held here (for /healthz and the metrics). */
  get sessionCount(): number {
    return this.sessions.size;
  }

  /** Ends every session (on shutdown). Idempotent. */
  close(): void {
    // The shared copies stay: other instances go on serving the sessions.
    this.sessions.close();
    this.tasks.close();
  }

  /**
   * Serves one request of the face's path, traced under `upstream`'s name: a GET (the session's stream), a DELETE (its
   * end) or a POST.
   */
  handle(request: FastifyRequest, reply: FastifyReply, upstream: string): Promise<FastifyReply> {
    const traced = traceRequest(request, reply, 'legacy-face', 'legacy', upstream);
    return request.method === 'GET' ? this.get(request, reply) : request.method === 'DELETE' ? this.delete(request, reply) : this.post(request, reply, traced);
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

    const pending = this.sessions.find(request, reply, requestIdOf(body), principal);
    // A session held here whose shared copy needs no touch is found without a turn of the event loop.
    const found = pending instanceof Promise ? await pending : pending;
    if ('refused' in found) return found.refused;
    const entry = found.entry;
    const version = singleHeader(request.headers, 'mcp-protocol-version');
    if (version && !LEGACY_VERSIONS.includes(version)) {
      return refuse(reply, 'GW_LEGACY_UNSUPPORTED_VERSION', requestIdOf(body), { args: [version] });
    }
    const s = entry.data;
    // Access rules read who the caller is now (its token's claims may change while its principal stays).
    s.useSubject(identityOf(request).subject);

    if (isResponse(body)) {
      this.sessions.touch(entry);
      try {
        if (!(await this.tasks.response(s, body as JsonObject, s.route, s.contextOf()))) await s.calls.answer(body as JsonObject);
      } catch (e) {
        // The answer could not be taken (the store is unavailable): the client may send it again.
        return storeTrouble(request, reply, null, e);
      }
      return reply.code(202).send();
    }
    if (isNotification(body)) {
      this.sessions.touch(entry);
      this.calls.onNotification(s, body);
      return reply.code(202).send();
    }
    if (!isRequest(body)) return refuse(reply, 'GW_NOT_A_REQUEST', requestIdOf(body));

    const release = this.sessions.acquire(entry);
    // The operator line is built only when it is written (a logger at `warn` drops it anyway).
    const logs = infoEnabled(request);
    const started = Date.now();
    let outcome: RequestOutcome = OK;
    // The operator line names the task of task traffic (README: logs); a created task's id is learned on the way.
    const logged: Logged = isObject(body.params) && typeof body.params.taskId === 'string' ? { taskId: body.params.taskId } : {};
    try {
      outcome = await this.serve(request, reply, s, body, logged, traced?.carrier);
    } finally {
      release();
      const ms = Date.now() - started;
      if (traced) annotateTrace(traced, { ...logged, errorCode: spanErrorCode(outcome) });
      if (logs) {
        // Member by member, as the modern face's line: no conditional objects spread in.
        const line: Record<string, unknown> = {
          method: body.method,
          era: logged.member ? 'pass-through' : 'legacy-face',
          upstream: logged.member ?? s.route.name,
        };
        if (logged.taskId) line.taskId = logged.taskId;
        line.outcome = outcomeText(outcome);
        line.ms = ms;
        if (traced) line.traceId = traced.traceId;
        request.log.info(line, 'mcp request');
      }
      recordRequest(request, {
        upstream: logged.member ?? s.route.name,
        method: body.method,
        clientEra: 'legacy',
        upstreamEra: logged.member ? 'legacy' : s.route.upstream.era,
        mode: logged.member ? 'passthrough' : 'gateway',
        outcome,
        ms,
      });
    }
    return reply;
  }

  /** Serves the session's GET stream (2025-11-25 basic/transports §Listening for Messages from the Server). */
  async get(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const found = await this.sessions.find(request, reply, null);
    if ('refused' in found) return found.refused;
    const entry = found.entry;
    return this.listens.serveStream(request, reply, entry.data, () => this.sessions.touch(entry));
  }

  /**
   * Ends the session (2025-11-25 basic/transports §Session Management: the client SHOULD send DELETE when it leaves).
   */
  async delete(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> {
    const found = await this.sessions.find(request, reply, null);
    if ('refused' in found) return found.refused;
    try {
      await this.sessions.delete(found.entry);
    } catch (e) {
      return storeTrouble(request, reply, null, e);
    }
    return reply.code(200).send();
  }

  private async initialize(
    request: FastifyRequest,
    reply: FastifyReply,
    body: JsonRpcRequest,
    authorization: string | undefined,
    principal: string,
  ): Promise<FastifyReply> {
    const started = Date.now();
    const init = readInitializeParams(body.params);
    if (!init) return refuse(reply, 'GW_INITIALIZE_PARAMS', body.id);
    if (this.sessions.closed) return refuse(reply, 'GW_SHUTTING_DOWN', body.id);
    // The principal's share, before the upstream is asked anything.
    if (!this.sessions.roomFor(principal)) {
      return refuse(reply, 'GW_PRINCIPAL_SHARE_EXHAUSTED', body.id, { args: ['sessions', this.sessions.maxSessionsPerPrincipal] });
    }
    const capabilities = modernClientCapabilities(init.capabilities);
    const caller: UpstreamCaller = { clientEra: 'legacy', principal, capabilities, clientInfo: init.clientInfo, ...(authorization ? { authorization } : {}) };
    const aborter = new AbortController();
    const unwatch = stopWhenClientLeaves(reply, aborter);
    let identity: Awaited<ReturnType<UpstreamRoute['upstream']['identity']>>;
    let route: UpstreamRoute;
    try {
      route = await this.target.routeFor(aborter.signal, authorization);
      identity = await route.upstream.identity(caller, aborter.signal);
    } catch (e) {
      const edge = exceptionToEdge(e);
      if (edge.fault) request.log.error({ err: e }, 'legacy face: upstream identity failed');
      // Counted (an upstream failing the handshake is an upstream error by kind); its era is not known here.
      recordRequest(request, {
        upstream: this.target.name ?? 'unknown',
        method: 'initialize',
        clientEra: 'legacy',
        upstreamEra: 'unknown',
        mode: 'gateway',
        outcome: errorOutcome(undefined, e),
        ms: Date.now() - started,
      });
      return refuseWith(reply, edge, body.id);
    } finally {
      unwatch();
    }
    const tasks = runsTasks(route, identity.capabilities);
    const decided = { tasks, legacyCapabilities: init.capabilities, clientInfo: init.clientInfo, protocolVersion: init.protocolVersion };
    const created = await this.sessions.create(request, reply, body.id, principal, authorization, route, decided);
    if ('refused' in created) return created.refused;
    request.log.info({ method: 'initialize', era: 'legacy-face', upstream: route.name, outcome: outcomeText(SESSION_CREATED) }, 'mcp request');
    recordRequest(request, {
      upstream: route.name,
      method: 'initialize',
      clientEra: 'legacy',
      upstreamEra: route.upstream.era,
      mode: 'gateway',
      outcome: SESSION_CREATED,
      ms: Date.now() - started,
    });
    const result = legacyInitializeResult(identity, init.protocolVersion);
    // 2025-11-25 basic/utilities/tasks §Server Capabilities: list, cancel and task-augmented tools/call.
    if (tasks && isObject(result.capabilities)) result.capabilities = { ...result.capabilities, tasks: legacyTasksCapability() };
    return reply.code(200).header('mcp-session-id', created.entry.id).header('content-type', 'application/json').send({ jsonrpc: '2.0', id: body.id, result });
  }

  /** Serves one client request; returns its outcome. */
  private async serve(
    request: FastifyRequest,
    reply: FastifyReply,
    s: ClientSession,
    req: JsonRpcRequest,
    logged: Logged,
    trace: TraceCarrier | undefined,
  ): Promise<RequestOutcome> {
    const params: JsonObject = isObject(req.params) ? req.params : {};
    switch (req.method) {
      case 'ping':
        // 2025-11-25 basic/utilities/ping; 2026-07-28 removed it, so it is answered here.
        return answer(reply, req.id, {});
      case 'logging/setLevel':
        // The level travels upstream as `io.modelcontextprotocol/logLevel` on each later request of the session.
        if (!isLegacyLogLevel(params.level)) return failInBand(reply, req.id, inBandError('GW_UNKNOWN_LOG_LEVEL'));
        try {
          await this.sessions.setLevel(s, params.level);
        } catch (e) {
          return failWith(request, reply, s.route.name, req, e);
        }
        return answer(reply, req.id, {});
      case 'resources/subscribe':
      case 'resources/unsubscribe':
        return this.listens.subscription(reply, s, req, params);
      case 'tools/call':
        // 2025-11-25 basic/utilities/tasks §Behavior Requirements #1: a receiver that did not declare task support
        // processes the request normally and ignores `task`.
        if (s.tasks && isObject(params.task)) return this.createTask(request, reply, s, req, params, logged, trace);
        if (s.route.federation) {
          // A federated call its member serves itself in this era passes through to it (member-pass.ts).
          const passed = await passToMember(this.target.runtime, request, reply, s, req, params, trace);
          if (passed) {
            logged.member = passed.member;
            return passed.outcome;
          }
        }
        return this.calls.forward(request, reply, s, req, trace);
      default:
        if (NOT_SERVED.has(req.method) || (TASK_METHODS.has(req.method) && !s.tasks))
          return failInBand(reply, req.id, inBandError('GW_METHOD_NOT_SERVED', { args: [req.method] }));
        if (TASK_METHODS.has(req.method)) return this.serveTask(request, reply, s, req, params, trace);
        return this.calls.forward(request, reply, s, req, trace);
    }
  }

  /** A task-augmented tools/call: a task in the runtime, answered with the nested CreateTaskResult. */
  private async createTask(
    request: FastifyRequest,
    reply: FastifyReply,
    s: ClientSession,
    req: JsonRpcRequest,
    params: JsonObject,
    logged: Logged,
    trace: TraceCarrier | undefined,
  ): Promise<RequestOutcome> {
    const { task, ...rest } = params;
    const aborter = new AbortController();
    const unwatch = stopWhenClientLeaves(reply, aborter);
    try {
      const created = await this.tasks.create(s, s.route, s.contextOf(trace), rest, isObject(task) ? task.ttl : undefined, aborter.signal);
      if ('error' in created) return failInBand(reply, req.id, legacyError(created.error));
      logged.taskId = created.record.taskId;
      void reply
        .code(200)
        .header('content-type', 'application/json')
        .send({ jsonrpc: '2.0', id: req.id, result: legacyCreateTaskResult(created.record, created.meta) });
      return TASK_CREATED;
    } catch (e) {
      return failWith(request, reply, s.route.name, req, e);
    } finally {
      unwatch();
    }
  }

  /** tasks/get, tasks/list, tasks/cancel and the blocking tasks/result. */
  private async serveTask(
    request: FastifyRequest,
    reply: FastifyReply,
    s: ClientSession,
    req: JsonRpcRequest,
    params: JsonObject,
    trace: TraceCarrier | undefined,
  ): Promise<RequestOutcome> {
    const caller = s.contextOf(trace);
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
  private taskResult(request: FastifyRequest, reply: FastifyReply, s: ClientSession, req: JsonRpcRequest, taskId: string): Promise<RequestOutcome> {
    // A disconnect is not a cancellation (2025-11-25 basic/transports): the task runs on; only this wait ends.
    return this.calls.streamed(
      request,
      reply,
      s,
      req,
      async ({ channel, canStream, signal }) => {
        const outcome = await this.tasks.result(s, s.route, s.contextOf(), taskId, req.id, channel, reply.raw, canStream, signal);
        if (signal.aborted) channel.abandon();
        return outcome;
      },
      (channel) => {
        channel.abandon();
        return CLIENT_CLOSED;
      },
    );
  }

  /**
   * A rejection handler for background work of a session: logged (to the first request's logger) with the upstream
   * and the error's name and message, never the session id.
   */
  private failed(level: 'debug' | 'warn', msg: string, s: ClientSession): (e: unknown) => void {
    return (e) => this.log?.[level]({ upstream: s.route.name, err: errorSummary(e) }, `legacy face: ${msg}`);
  }
}
