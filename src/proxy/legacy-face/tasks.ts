/**
 * The legacy face's tasks (2025-11-25 basic/utilities/tasks): the task records live in the runtime; this module
 * serves them to 2025-11-25 clients. It answers `tasks/get`, `tasks/list`, `tasks/cancel` and the blocking
 * `tasks/result`, delivers each outstanding input request of a task once as a server→client request (on an open
 * `tasks/result` stream of the task, else on its creating session's GET stream), routes the client's answers back by
 * the ids it minted, and sends `notifications/tasks/status` to the creating session when a task's status changes.
 *
 * Those ids name the task and the input key they ask for, so that the client's answer is taken on whichever
 * instance it reaches: checked there against the caller's task (a foreign principal or session sees no task) and its
 * outstanding input requests, not against a map only the sending instance holds.
 */
import type { ServerResponse } from 'node:http';
import {
  GatewayError,
  inputAnswerProblem,
  isInputDeclared,
  isObject,
  isTerminal,
  legacyTaskInputParams,
  legacyTaskPayload,
  legacyTaskStatusNotification,
  legacyTask,
  undeclaredInputAnswer,
  withoutRelatedTask,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcMessage,
  type JsonRpcNotification,
  type TaskRecord,
} from '../../translate/index.js';
import { StoreUnavailableError, type CallerContext, type TaskRuntime, type UpstreamRoute } from '../../tasks/index.js';
import { channelError } from '../errors.js';
import { CLIENT_CLOSED, EXPIRED, taskResultOutcome, type RequestOutcome } from '../request-outcome.js';
import type { ResponseChannel } from '../response.js';

/** An open stream to send server→client messages on, while it stays open. */
export interface StreamSink {
  alive(): boolean;
  send(m: JsonRpcMessage): void;
}

/** What the task relay needs of a face session. */
export interface TaskSessionView {
  readonly id: string;
  /** What the client declared in `initialize` (decides which input kinds it may be sent). */
  readonly legacyCapabilities: JsonObject;
  /** The session's open GET stream, if any. */
  openStream(): StreamSink | undefined;
  /** Sends a notification on the session's GET stream (or keeps it for it). */
  notify(n: JsonRpcNotification): void;
}

/** Where one input request went: a `tasks/result` stream or a GET stream. */
interface Target {
  session: TaskSessionView;
  caller: CallerContext;
  alive(): boolean;
  send(m: JsonRpcMessage): void;
}

/** What the relay knows of one task a client of the face can see. */
interface Tracked {
  route: UpstreamRoute;
  /** The session that created it (status notifications, input on its GET stream) and its caller. */
  owner: { session: TaskSessionView; caller: CallerContext } | undefined;
  last: TaskRecord;
  /** The 2025-11-25 status the owner last heard of. */
  notified: string;
  /** Input keys sent, with whether the stream each went out on is still open. */
  sent: Map<string, () => boolean>;
  /** Input keys answered (never answered twice). */
  answered: Set<string>;
  /** Open `tasks/result` streams that can carry requests. */
  waiters: Set<Target>;
  /** Ids minted for this task's input requests (dropped with it). */
  gids: Set<string>;
}

/** A server→client request sent for a task's input, waiting for the client's POSTed response. */
interface TaskOutbound {
  taskId: string;
  key: string;
  method: string;
  /** The request's params: the client's answer is checked against them before it reaches the task. */
  params: JsonObject | undefined;
  session: string;
  caller: CallerContext;
}

/** Relay settings. */
export interface LegacyFaceTasksOptions {
  /** Logs a failure the client cannot be told about. */
  warn(err: unknown, msg: string): void;
  /** Most tasks followed at once (default 10 000; the oldest is forgotten first). */
  maxTracked?: number;
}

/** The prefix of the ids of task input requests: `gwt-in.<taskId>.<base64url key>.<n>`. */
const INPUT_ID_PREFIX = 'gwt-in.';

/** The id of one task input request sent to a client: self-describing, unique per send. */
function inputRequestId(taskId: string, key: string, n: number): string {
  return `${INPUT_ID_PREFIX}${taskId}.${Buffer.from(key, 'utf8').toString('base64url')}.${n}`;
}

/** The task and key an input request id names, or `undefined` for an id this relay did not mint. */
export function readInputRequestId(id: string): { taskId: string; key: string } | undefined {
  if (!id.startsWith(INPUT_ID_PREFIX) || id.length > 1024) return undefined;
  const parts = id.slice(INPUT_ID_PREFIX.length).split('.');
  if (parts.length !== 3) return undefined;
  const [taskId, key64] = parts as [string, string, string];
  if (!/^[A-Za-z0-9_-]+$/.test(taskId) || !/^[A-Za-z0-9_-]+$/.test(key64)) return undefined;
  const key = Buffer.from(key64, 'base64url').toString('utf8');
  return key ? { taskId, key } : undefined;
}

/** Refuses (400, -32602) an answer that does not fit the input request it answers. */
function refuseInvalid(id: string, method: string, params: JsonObject | undefined, answer: JsonObject): void {
  const problem = inputAnswerProblem(method, params, answer);
  if (problem !== undefined)
    throw new GatewayError('GW_INVALID_INPUT_RESPONSE', { args: [JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id), problem] });
}

/** A response id as text. */
function inputRequestIdText(id: unknown): string {
  return typeof id === 'string' ? id : String(id);
}

/** A client's answer as the runtime takes it: the bare result, without the legacy related-task `_meta`. */
function bareAnswer(method: string, body: JsonObject): JsonObject | undefined {
  if ('error' in body) {
    // An input request the client refused with an error has no modern answer but for elicitation, where cancelling is
    // how a client says it will not answer (2025-11-25 client/elicitation §Response Actions).
    return method === 'elicitation/create' ? { action: 'cancel' } : undefined;
  }
  return withoutRelatedTask(isObject(body.result) ? body.result : {});
}

/** The legacy face's task relay, shared by the face's sessions. */
export class LegacyFaceTasks {
  private readonly tracked = new Map<string, Tracked>();
  private readonly outbound = new Map<string, TaskOutbound>();
  private readonly watches = new Map<string, () => void>();
  private readonly maxTracked: number;
  private nextId = 0;

  constructor(
    private readonly runtime: TaskRuntime,
    private readonly o: LegacyFaceTasksOptions,
  ) {
    this.maxTracked = o.maxTracked ?? 10_000;
  }

  /**
   * A task-augmented `tools/call` (`params.task` already removed): the runtime makes it a task, which this relay
   * follows for its creating session; or the JSON-RPC error of a call that failed at once.
   */
  async create(
    session: TaskSessionView,
    route: UpstreamRoute,
    caller: CallerContext,
    params: JsonObject,
    ttl: unknown,
    signal: AbortSignal,
  ): Promise<{ record: TaskRecord; meta?: JsonObject } | { error: JsonRpcErrorObject }> {
    // Watching starts before the task exists, so that no change after its creation is missed.
    this.watchFor(session, route, caller);
    // 2025-11-25 basic/utilities/tasks §TTL and Resource Management: the receiver may override the requested ttl; a
    // non-positive one is taken as none asked (the gateway's default), not as a task gone at once.
    const opts = typeof ttl === 'number' && Number.isFinite(ttl) && ttl >= 1 ? { ttlMs: Math.round(ttl) } : {};
    const created = await this.runtime.createTask(route, params, caller, opts, signal);
    if ('error' in created) return created;
    const record = created.record;
    const t = this.track(record, route);
    t.owner = { session, caller };
    t.notified = 'working';
    // The record may have moved on while the answer was on its way; the latest one decides what happens next.
    void this.runtime.task(route, record.taskId, caller).then(
      (r) => this.observe(r),
      () => {},
    );
    return created;
  }

  /** `tasks/get`: the flat 2025-11-25 `Task` (2025-11-25 basic/utilities/tasks §Getting Tasks). */
  async get(route: UpstreamRoute, caller: CallerContext, taskId: string): Promise<JsonObject> {
    // A status poll: the poll limit applies (tasks/result blocks instead, and is not polling).
    const r = await this.runtime.poll(route, taskId, caller);
    this.observe(r);
    return legacyTask(r);
  }

  /** `tasks/list`: a page of the caller's tasks (2025-11-25 basic/utilities/tasks §Listing Tasks). */
  async list(route: UpstreamRoute, caller: CallerContext, cursor: string | undefined): Promise<JsonObject> {
    const page = await this.runtime.list(route, caller, cursor);
    const out: JsonObject = { tasks: page.tasks.map(legacyTask) };
    if (page.nextCursor !== undefined) out.nextCursor = page.nextCursor;
    return out;
  }

  /** `tasks/cancel`: the task as cancelled (2025-11-25 basic/utilities/tasks §Cancelling Tasks). */
  async cancel(route: UpstreamRoute, caller: CallerContext, taskId: string): Promise<JsonObject> {
    const r = await this.runtime.cancelTask(route, taskId, caller);
    this.observe(r);
    return legacyTask(r);
  }

  /**
   * `tasks/result`: blocks until the task is terminal, then answers what the underlying request would have
   * (2025-11-25 basic/utilities/tasks §Result Retrieval); meanwhile the task's input requests go out on this stream.
   * Returns the request's outcome.
   */
  async result(
    session: TaskSessionView,
    route: UpstreamRoute,
    caller: CallerContext,
    taskId: string,
    id: string | number,
    channel: ResponseChannel,
    raw: ServerResponse,
    canStream: boolean,
    signal: AbortSignal,
  ): Promise<RequestOutcome> {
    let record = await this.runtime.task(route, taskId, caller);
    let t = this.track(record, route);
    const waiter: Target = {
      session,
      caller,
      alive: () => !raw.destroyed && !raw.writableEnded,
      send: (m) => channel.notify(m),
    };
    // A client that accepts no SSE gets the payload as JSON at the end; its input goes on its GET stream.
    if (canStream) t.waiters.add(waiter);
    try {
      for (;;) {
        this.observe(record);
        if (isTerminal(record.status)) break;
        const next = await this.runtime.changed(taskId, record.version, signal);
        if (signal.aborted) return CLIENT_CLOSED;
        if (!next) {
          channelError(channel, id, 'GW_TASK_EXPIRED');
          return EXPIRED;
        }
        record = next;
        t = this.tracked.get(taskId) ?? t;
      }
    } finally {
      t.waiters.delete(waiter);
      const latest = this.tracked.get(taskId);
      if (latest && latest.waiters.size === 0 && (!latest.owner || isTerminal(latest.last.status))) this.forget(taskId);
      // Keys that went out on this stream and were not answered go out again elsewhere (its stream died).
      else if (latest) this.offer(taskId, latest);
    }
    const payload = legacyTaskPayload(record);
    if ('error' in payload) {
      channel.error(id, payload.error, 200);
      return taskResultOutcome(record.status);
    }
    channel.result(id, payload.result);
    return taskResultOutcome(record.status);
  }

  /**
   * A client's POSTed response to an input request of a task (2025-11-25 basic/transports §Sending Messages: responses
   * get 202), on the session `caller` speaks for: answered into the task once. An id another instance minted is
   * checked against the caller's task and its outstanding keys. False when the id is not a task input request's.
   */
  async response(session: TaskSessionView, body: JsonObject, route: UpstreamRoute, caller: CallerContext): Promise<boolean> {
    const id = body.id;
    if (typeof id !== 'string') return false;
    const named = readInputRequestId(id);
    if (!named) return false;
    const o = this.outbound.get(id);
    if (!o || o.session !== session.id) {
      await this.foreignResponse(route, caller, named, body);
      return true;
    }
    const t = this.tracked.get(o.taskId);
    const answer = bareAnswer(o.method, body);
    // Refused before anything reaches the task; the request stays outstanding for a correct answer.
    if (t && !t.answered.has(o.key) && answer !== undefined) refuseInvalid(id, o.method, o.params, answer);
    this.outbound.delete(id);
    if (!t || t.answered.has(o.key)) return true;
    t.gids.delete(id);
    if (answer === undefined) return true;
    t.answered.add(o.key);
    try {
      await this.runtime.answer(t.route, o.taskId, o.caller, { [o.key]: answer });
    } catch (e) {
      this.o.warn(e, 'legacy face: a task input answer was not accepted');
    }
    return true;
  }

  /** An answer to an input request this instance did not send (or no longer follows): the task decides. */
  private async foreignResponse(route: UpstreamRoute, caller: CallerContext, named: { taskId: string; key: string }, body: JsonObject): Promise<void> {
    try {
      // Only the caller's own task (another principal's, or another credential-less session's, is unknown to it).
      const record = await this.runtime.task(route, named.taskId, caller);
      const request = record.status === 'input_required' ? record.inputRequests?.[named.key] : undefined;
      if (!request) return; // answered already, or never asked: nothing to take
      const answer = bareAnswer(request.method, body);
      if (answer === undefined) return;
      refuseInvalid(inputRequestIdText(body.id), request.method, request.params, answer);
      this.tracked.get(named.taskId)?.answered.add(named.key);
      await this.runtime.answer(route, named.taskId, caller, { [named.key]: answer });
    } catch (e) {
      // A store that cannot be reached is the client's to hear of (it may send the answer again); a task that is not
      // the caller's, or no longer takes the answer, is not.
      if (e instanceof StoreUnavailableError || (e instanceof GatewayError && e.kind === 'GW_INVALID_INPUT_RESPONSE')) throw e;
      this.o.warn(e, 'legacy face: a task input answer was not accepted');
    }
  }

  /** The session's GET stream opened: input waiting for one goes out on it. */
  streamOpened(session: TaskSessionView): void {
    for (const [taskId, t] of this.tracked) if (t.owner?.session === session) this.offer(taskId, t);
  }

  /** A new session's part of the relay: ending it stops the relay's following of the session. */
  open(session: TaskSessionView): { end(): void } {
    return { end: () => this.sessionEnded(session) };
  }

  /** The session ended: its watch stops, its tasks are no longer followed for it (they run on). */
  private sessionEnded(session: TaskSessionView): void {
    this.watches.get(session.id)?.();
    this.watches.delete(session.id);
    for (const [gid, o] of this.outbound) if (o.session === session.id) this.outbound.delete(gid);
    for (const [taskId, t] of this.tracked) {
      if (t.owner?.session !== session) continue;
      t.owner = undefined;
      if (t.waiters.size === 0) this.forget(taskId);
    }
  }

  /** Stops every watch (on shutdown). */
  close(): void {
    for (const stop of this.watches.values()) stop();
    this.watches.clear();
    this.tracked.clear();
    this.outbound.clear();
  }

  /** One watch per session that created a task, for its status notifications and GET-stream input. */
  private watchFor(session: TaskSessionView, route: UpstreamRoute, caller: CallerContext): void {
    if (this.watches.has(session.id)) return;
    const stop = this.runtime.watch(route, caller.principal, (r) => {
      const t = this.tracked.get(r.taskId);
      if (t?.owner?.session === session) this.observe(r);
    });
    this.watches.set(session.id, stop);
  }

  private track(record: TaskRecord, route: UpstreamRoute): Tracked {
    let t = this.tracked.get(record.taskId);
    if (t) return t;
    t = {
      route,
      owner: undefined,
      last: record,
      notified: legacyTask(record).status as string,
      sent: new Map(),
      answered: new Set(),
      waiters: new Set(),
      gids: new Set(),
    };
    this.tracked.set(record.taskId, t);
    if (this.tracked.size > this.maxTracked) {
      const oldest = this.tracked.keys().next().value;
      if (oldest !== undefined && oldest !== record.taskId) this.forget(oldest);
    }
    return t;
  }

  private forget(taskId: string): void {
    const t = this.tracked.get(taskId);
    if (!t) return;
    for (const gid of t.gids) this.outbound.delete(gid);
    this.tracked.delete(taskId);
  }

  /** A record seen (from the runtime's watch, a tasks/result wait, or a request): notify, deliver input, tidy. */
  private observe(r: TaskRecord): void {
    const t = this.tracked.get(r.taskId);
    if (!t || r.version < t.last.version) return;
    t.last = r;
    const status = legacyTask(r).status as string;
    if (t.owner && status !== t.notified) {
      t.notified = status;
      // 2025-11-25 basic/utilities/tasks §Task Status Notification: the full task, no payload, no related-task _meta.
      t.owner.session.notify(legacyTaskStatusNotification(r));
    }
    if (isTerminal(r.status)) {
      if (t.waiters.size === 0) this.forget(r.taskId);
      else t.sent.clear();
      return;
    }
    this.offer(r.taskId, t);
  }

  /**
   * Sends each outstanding input request not yet sent (or sent on a stream that has died since) as a server→client
   * request: on an open `tasks/result` stream of the task, else on the creating session's GET stream (2025-11-25
   * basic/utilities/tasks §Input Required Status: clients SHOULD expect messages on any SSE stream).
   */
  private offer(taskId: string, t: Tracked): void {
    const r = t.last;
    const requests = r.status === 'input_required' ? (r.inputRequests ?? {}) : {};
    for (const key of t.sent.keys()) if (!(key in requests)) t.sent.delete(key);
    for (const [key, request] of Object.entries(requests)) {
      if (t.answered.has(key)) continue;
      if (t.sent.get(key)?.()) continue;
      const target = this.targetOf(t);
      if (!target) return;
      if (!isInputDeclared(request.method, request.params, target.session.legacyCapabilities)) {
        // Never sent to a client that did not declare the kind; the task gets the answer a client without it implies.
        const a = undeclaredInputAnswer(request.method);
        t.answered.add(key);
        if ('result' in a)
          void this.runtime
            .answer(t.route, taskId, target.caller, { [key]: a.result })
            .catch((e) => this.o.warn(e, 'legacy face: declining an input request failed'));
        continue;
      }
      const gid = inputRequestId(taskId, key, ++this.nextId);
      this.outbound.set(gid, { taskId, key, method: request.method, params: request.params, session: target.session.id, caller: target.caller });
      t.gids.add(gid);
      const params = legacyTaskInputParams(taskId, request, `${taskId.slice(-12)}-${key}`);
      target.send({ jsonrpc: '2.0', id: gid, method: request.method, params });
      t.sent.set(key, target.alive);
    }
  }

  private targetOf(t: Tracked): Target | undefined {
    for (const w of t.waiters) if (w.alive()) return w;
    const owner = t.owner;
    const sink = owner?.session.openStream();
    if (!owner || !sink) return undefined;
    return { session: owner.session, caller: owner.caller, alive: sink.alive, send: sink.send };
  }
}
