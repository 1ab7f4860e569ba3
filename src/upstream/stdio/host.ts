/**
 * An stdio upstream served to the rest of the gateway as a Streamable HTTP endpoint: one supervised child per
 * upstream per gateway instance (child.ts), reached through a private loopback listener whose only route is an
 * unguessable path. Everything above this file (era probe, legacy session pool, modern client, pass-through) then
 * treats the upstream as an HTTP one.
 *
 * A 2025-11-25 stdio server is ONE session (basic/transports/stdio): the first `initialize` goes to the child, later
 * ones are answered from its result with a fresh virtual `Mcp-Session-Id` (basic/transports/streamable-http §Session
 * Management). Requests are forwarded with host-unique ids (and progress tokens), mapped back on the way out; each
 * POSTed request is answered as its own SSE stream. A 2026-07-28 stdio server is stateless: requests without a
 * session pass through the same way; `subscriptions/listen` notifications carry the listen request's id as
 * `_meta["io.modelcontextprotocol/subscriptionId"]` (basic/patterns/subscriptions), which routes them to its stream.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  catalogAnswer,
  isErrorResponse,
  isNotification,
  isObject,
  isRequest,
  isResponse,
  LEGACY_VERSION,
  META,
  readLegacyCreateTaskResult,
  sessionStartAnswer,
  type ErrorKind,
  type GatewayErrorOptions,
  type JsonObject,
  type JsonRpcRequest,
  type LayerLogger,
  type RequestId,
  withEnvelope,
} from '../../translate/index.js';
import { MAX_UPSTREAM_MESSAGE_BYTES, parseUpstreamJson } from '../http.js';
import type { EraSetting } from '../availability.js';
import { json, openSse, readBody, refuse, type SseStream } from './loopback.js';
import { childEnv, StdioChild, type ChildExit, type ChildState, type RestartPolicy } from './child.js';

/** One stdio upstream as configured. */
export interface StdioHostOptions {
  /** The upstream's name: the only identity logged (the private URL never is). */
  name: string;
  command: readonly string[];
  /** Variables set for the child over the inherited minimum (child.ts INHERITED_ENV). */
  env?: Readonly<Record<string, string>>;
  cwd?: string;
  restart: RestartPolicy;
  log: LayerLogger;
  /** Where the inherited minimum is read from (default `process.env`). */
  baseEnv?: NodeJS.ProcessEnv;
  /** Bound on stopping the child (default 5 s). */
  stopTimeoutMs?: number;
  /** The upstream's `era` setting: which handshake opens each new process (see `opening`). Default `auto`. */
  era?: EraSetting;
}

/** What other parts may watch: whether the child is up, and how often it was restarted. */
export interface StdioHostStatus {
  readonly name: string;
  /** `starting` → `running`; `restarting` while down (exited or failed to start); `closed` after close(). */
  readonly state: ChildState;
  readonly restarts: number;
}

/** The name the host gives itself in its own requests to a child. */
const GATEWAY_CLIENT = 'mcp-tasks-gateway';

/** Methods whose call may ask the client for input (elicitation, sampling, roots) while it runs. */
const INPUT_METHODS = new Set(['tools/call', 'prompts/get', 'resources/read', 'tasks/result']);

/**
 * Client capabilities the host declares to a legacy child, whoever initializes first: every input kind the gateway
 * bridges, merged with the first client's own, so that one probe's empty capabilities do not deny the others.
 */
const DECLARED_CAPABILITIES: JsonObject = { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } };

/** `attribute`'s answer for a request while no call that may ask is running. */
const NO_CALL = 'no call is running';

interface VirtualSession {
  id: string;
  getStream?: SseStream;
  inflight: Set<Pending>;
  taskIds: Set<string>;
}

interface Pending {
  hostId: string;
  origId: RequestId;
  method: string;
  session: VirtualSession | undefined;
  stream: SseStream;
  hostToken?: string;
  origToken?: string | number;
}

interface ServerRequest {
  childId: RequestId;
  stream: SseStream;
}

/** Serves one stdio upstream at a private loopback URL; see the file comment. */
export class StdioHost implements StdioHostStatus {
  readonly name: string;
  private readonly token = randomBytes(16).toString('hex');
  private readonly server: Server;
  private readonly child: StdioChild;
  private readonly log: LayerLogger;
  private port = 0;
  private seq = 0;
  private readonly pending = new Map<string, Pending>();
  private readonly tokens = new Map<string, Pending>();
  private readonly internal = new Map<string, (m: JsonObject | undefined) => void>();
  private readonly serverRequests = new Map<string, ServerRequest>();
  private readonly sessions = new Map<string, VirtualSession>();
  private readonly taskOwners = new Map<string, VirtualSession>();
  /** The child's answer to the one real `initialize` (legacy), shared by every virtual session. */
  private init: Promise<JsonObject | undefined> | undefined;
  private lastExit: ChildExit | undefined;
  private readonly era: EraSetting;
  private readonly command: readonly string[];
  /** The current process's opening exchange, settled (answered, refused, or the process gone). */
  private opened: Promise<void> = Promise.resolve();
  /** Why the current process refused the handshake of its pinned era (`opening`); `undefined` otherwise. */
  private refusal: string | undefined;
  private readonly listeners = new Set<(s: StdioHostStatus) => void>();
  private readonly openedListeners = new Set<() => void>();
  private closing: Promise<void> | undefined;

  private constructor(opts: StdioHostOptions) {
    this.name = opts.name;
    this.log = opts.log;
    this.era = opts.era ?? 'auto';
    this.command = opts.command;
    this.server = createServer((req, res) => this.serve(req, res));
    this.child = new StdioChild({
      name: opts.name,
      command: opts.command,
      env: childEnv(opts.env ?? {}, opts.baseEnv ?? process.env),
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      restart: opts.restart,
      maxLineBytes: MAX_UPSTREAM_MESSAGE_BYTES,
      stopTimeoutMs: opts.stopTimeoutMs ?? 5_000,
      log: opts.log,
      onLine: (line) => this.fromChild(line),
      onSpawn: () => this.opening(),
      onExit: (exit) => this.childExited(exit),
    });
    this.child.onState = () => {
      for (const l of [...this.listeners]) l(this);
    };
  }

  /**
   * Starts the listener and the child. Never fails for a child that cannot start (a missing command): that is
   * logged and retried with backoff, and the endpoint answers 503 meanwhile.
   */
  static async start(opts: StdioHostOptions): Promise<StdioHost> {
    const host = new StdioHost(opts);
    await new Promise<void>((resolve, reject) => {
      host.server.once('error', reject);
      host.server.listen(0, '127.0.0.1', () => {
        host.server.off('error', reject);
        resolve();
      });
    });
    host.port = (host.server.address() as AddressInfo).port;
    host.child.start();
    return host;
  }

  /** The private endpoint (a secret: whoever knows it can talk to the child; never log it). */
  get url(): string {
    return `http://127.0.0.1:${this.port}/${this.token}`;
  }

  get state(): ChildState {
    return this.child.state;
  }

  get restarts(): number {
    return this.child.restarts;
  }

  /**
   * Calls `listener` each time a process's opening exchange has settled (answered, refused, or the process could not
   * start), when `failure()` has news; returns the unsubscribe.
   */
  onOpened(listener: () => void): () => void {
    this.openedListeners.add(listener);
    return () => this.openedListeners.delete(listener);
  }

  /** Calls `listener` on every state change; returns the unsubscribe. */
  onChange(listener: (s: StdioHostStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Stops the child (stdin closed, SIGTERM, SIGKILL after a bound) and the listener. Idempotent. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.child.close();
      this.listeners.clear();
      this.openedListeners.clear();
      this.failAll('GW_SHUTTING_DOWN', {});
      this.server.closeAllConnections();
      await new Promise<void>((r) => this.server.close(() => r()));
    })();
    return this.closing;
  }

  /**
   * Why this upstream cannot serve now, for readiness and `/healthz` (never an address, never the command's
   * arguments): its command could not be started, its process exited and waits for a restart, or it refused the
   * handshake of its pinned era; `undefined` when it serves. Waits for the current process's opening exchange.
   */
  async failure(): Promise<string | undefined> {
    await this.opened;
    const state = this.child.state;
    if (state === 'restarting' || state === 'closed') return this.lastExit ? exitReason(this.command, this.lastExit) : `process ${state}`;
    return this.refusal;
  }

  /**
   * The first message every new process reads: the handshake of the era the upstream is pinned to (`era: legacy`:
   * `initialize`, 2025-11-25 basic/lifecycle §Initialization), else `server/discover` (2026-07-28
   * basic/transports/stdio §Backward Compatibility: the client probes with it). A server that serves both eras pins
   * its era on the opening exchange (the Python SDK 2.x refuses a later `initialize` with -32022), so the opening
   * decides which era this process serves, and the gateway's own probe (which asks `server/discover` and
   * `initialize` at once) does not race it. The opening `initialize` is the one real session every virtual session
   * shares (see `initialize`). A pinned era refused is remembered for `failure()`; with `auto` a refusal only tells
   * the probe, through this endpoint, what the process does not speak.
   */
  private opening(): void {
    this.refusal = undefined;
    const legacy = this.era === 'legacy';
    const method = legacy ? 'initialize' : 'server/discover';
    const clientInfo = { name: GATEWAY_CLIENT, version: 'stdio' };
    const asked = legacy
      ? (this.init = this.ask(method, { protocolVersion: LEGACY_VERSION, capabilities: DECLARED_CAPABILITIES, clientInfo }))
      : this.ask(method, withEnvelope(undefined, { capabilities: {}, clientInfo }));
    this.opened = asked.then(async (answer) => {
      const refused = answer === undefined ? undefined : refusalOf(method, answer);
      if (legacy && answer !== undefined) {
        if (refused) this.init = undefined;
        else this.child.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
      }
      if (refused && this.era !== 'auto') {
        this.refusal = refused;
        this.log.error(
          { upstream: this.name, era: this.era, reason: refused },
          `stdio upstream: the process refused the handshake of its pinned era (${refused})`,
        );
      } else
        this.log.debug({ upstream: this.name, opening: method, answer: answer === undefined ? 'none' : (refused ?? 'accepted') }, 'stdio upstream: opened');
      // A process that never started has its failure reported by the supervisor a moment later: wait for it.
      if (answer === undefined && this.child.state === 'starting') await this.nextChange();
      for (const l of [...this.openedListeners]) l();
    });
  }

  /** Resolves at the next change of the child's state. */
  private nextChange(): Promise<void> {
    return new Promise((resolve) => {
      const off = this.onChange(() => {
        off();
        resolve();
      });
    });
  }

  // ── child → host ──

  private fromChild(line: string): void {
    let m: unknown;
    try {
      m = parseUpstreamJson(line);
    } catch {
      this.log.warn({ upstream: this.name }, 'stdio upstream: a stdout line that is not JSON-RPC was dropped');
      return;
    }
    if (isResponse(m)) return this.childResponse(m as unknown as JsonObject & { id: RequestId });
    if (isRequest(m)) return this.childRequest(m);
    if (isNotification(m)) return this.childNotification(m as unknown as JsonObject & { method: string; params?: JsonObject });
    this.log.warn({ upstream: this.name }, 'stdio upstream: a message that is not JSON-RPC was dropped');
  }

  private childResponse(m: JsonObject & { id: RequestId }): void {
    const key = String(m.id);
    const own = this.internal.get(key);
    if (own) {
      this.internal.delete(key);
      own(m);
      return;
    }
    const p = this.pending.get(key);
    if (!p) return; // cancelled or its client went away: nothing waits for it
    // A task created in a virtual session: its later requests (elicitation, sampling) belong to that session.
    if (p.session && 'result' in m) {
      const created = readLegacyCreateTaskResult(m.result);
      if (created) {
        this.taskOwners.set(created.task.taskId, p.session);
        p.session.taskIds.add(created.task.taskId);
      }
    }
    p.stream.send({ ...m, id: p.origId });
    this.finish(p);
  }

  private childRequest(m: JsonRpcRequest): void {
    if (m.method === 'ping') {
      this.child.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: {} }));
      return;
    }
    const target = this.attribute(m);
    if (target === NO_CALL) {
      // Session-start traffic (server-everything asks roots/list once initialized): answered as a client with nobody
      // to ask would, like the HTTP session pool (legacy/pool.ts): no roots, elicitation declined, the rest refused.
      this.log.debug({ upstream: this.name, method: m.method }, 'stdio upstream: a request outside any call was answered for the absent user');
      this.child.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, ...sessionStartAnswer(m.method) }));
      return;
    }
    if (typeof target === 'string') {
      this.log.warn({ upstream: this.name, method: m.method, why: target }, 'stdio upstream: a request tied to no call was refused');
      const { error } = catalogAnswer('GW_UPSTREAM_REQUEST_UNATTRIBUTED', { args: [m.method, target] });
      this.child.send(JSON.stringify({ jsonrpc: '2.0', id: m.id, error }));
      return;
    }
    const hostId = `gws-${++this.seq}`;
    this.serverRequests.set(hostId, { childId: m.id, stream: target });
    target.send({ ...m, id: hostId });
  }

  /**
   * Where a server→client request goes: the session of the task it names (its one call that may ask, else its GET
   * stream), else the one call in flight that may ask; otherwise why not (stdio carries no request context).
   */
  private attribute(m: JsonRpcRequest): SseStream | string {
    const related = relatedTaskId(m.params);
    const owner = related !== undefined ? this.taskOwners.get(related) : undefined;
    if (owner) {
      const asking = [...owner.inflight].filter((p) => INPUT_METHODS.has(p.method));
      if (asking.length === 1) return (asking[0] as Pending).stream;
      if (owner.getStream && !owner.getStream.ended) return owner.getStream;
      return 'the session of its task has no stream open';
    }
    const asking = [...this.pending.values()].filter((p) => INPUT_METHODS.has(p.method));
    if (asking.length === 1) return (asking[0] as Pending).stream;
    return asking.length === 0 ? NO_CALL : 'several calls are running';
  }

  private childNotification(m: JsonObject & { method: string; params?: JsonObject }): void {
    const params = isObject(m.params) ? m.params : undefined;
    if (m.method === 'notifications/progress' && params) {
      const p = this.tokens.get(String(params.progressToken));
      if (p) p.stream.send({ ...m, params: { ...params, progressToken: p.origToken } });
      return;
    }
    if (m.method === 'notifications/cancelled' && params) {
      const key = String(params.requestId);
      const sr = this.serverRequests.get(key);
      if (sr) {
        // The child withdrew a request it sent: the client learns it under the id it saw.
        this.serverRequests.delete(key);
        sr.stream.send(m);
        return;
      }
      const p = this.pending.get(key);
      if (p) {
        // The child ended a request itself (a listen torn down on stdio): on HTTP its stream ends.
        p.stream.send({ ...m, params: { ...params, requestId: p.origId } });
        this.finish(p);
      }
      return;
    }
    // A subscription's notification names the listen request (basic/patterns/subscriptions): to that stream only.
    const meta = params && isObject(params._meta) ? params._meta : undefined;
    const sub = meta?.[META.subscriptionId];
    if (sub !== undefined) {
      const p = this.pending.get(String(sub));
      if (p) p.stream.send({ ...m, params: { ...params, _meta: { ...meta, [META.subscriptionId]: p.origId } } });
      return;
    }
    const related = relatedTaskId(params);
    const owner = related !== undefined ? this.taskOwners.get(related) : undefined;
    if (owner) {
      owner.getStream?.send(m);
      return;
    }
    // list_changed, resources/updated, logging: every virtual session hears what the one real session heard.
    for (const s of this.sessions.values()) s.getStream?.send(m);
  }

  /** The child is gone: every call in flight fails clearly, every virtual session ends (their ids now 404). */
  private childExited(exit: ChildExit): void {
    this.lastExit = exit;
    if (this.child.state === 'closed') return;
    this.failAll('GW_UPSTREAM_PROCESS_EXITED', { args: [this.name, describeExit(exit)] });
  }

  private failAll(kind: ErrorKind, opts: GatewayErrorOptions): void {
    const { error } = catalogAnswer(kind, opts);
    for (const p of [...this.pending.values()]) {
      p.stream.send({ jsonrpc: '2.0', id: p.origId, error });
      this.finish(p);
    }
    for (const resolve of this.internal.values()) resolve(undefined);
    this.internal.clear();
    for (const s of this.sessions.values()) s.getStream?.end();
    this.sessions.clear();
    this.taskOwners.clear();
    this.serverRequests.clear();
    this.init = undefined;
  }

  /** A request is over: its stream ends and it is forgotten. */
  private finish(p: Pending): void {
    this.pending.delete(p.hostId);
    if (p.hostToken !== undefined) this.tokens.delete(p.hostToken);
    p.session?.inflight.delete(p);
    p.stream.end();
  }

  // ── client → host (HTTP) ──

  private serve(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '').split('?')[0];
    if (path !== `/${this.token}`) {
      res.writeHead(404).end();
      return;
    }
    const sid = req.headers['mcp-session-id'];
    const sessionId = typeof sid === 'string' && sid !== '' ? sid : undefined;
    if (req.method === 'POST') {
      void this.post(req, res, sessionId).catch((e: unknown) => {
        this.log.warn({ upstream: this.name, err: { type: (e as Error)?.name, message: (e as Error)?.message } }, 'stdio upstream: a request failed');
        if (!res.headersSent) refuse(res, 'GW_INTERNAL', {}, undefined);
        else res.end();
      });
      return;
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      req.resume();
      // Without a session these are legacy-only verbs a stateless (2026-07-28) server does not serve.
      if (!sessionId) return void res.writeHead(405, { allow: 'POST' }).end();
      const s = this.sessions.get(sessionId);
      if (!s) return refuse(res, 'GW_SESSION_NOT_FOUND', {}, undefined);
      if (req.method === 'DELETE') {
        this.dropSession(s);
        return void res.writeHead(200).end();
      }
      s.getStream?.end();
      s.getStream = openSse(res, { 'mcp-session-id': s.id }, () => {});
      return;
    }
    req.resume();
    res.writeHead(405, { allow: 'GET, POST, DELETE' }).end();
  }

  private async post(req: IncomingMessage, res: ServerResponse, sessionId: string | undefined): Promise<void> {
    const text = await readBody(req);
    if (text === undefined) return refuse(res, 'GW_BODY_TOO_LARGE', {}, undefined);
    let m: unknown;
    try {
      m = parseUpstreamJson(text);
    } catch {
      return refuse(res, 'GW_PARSE_ERROR', {}, undefined);
    }
    if (!isObject(m) || m.jsonrpc !== '2.0') return refuse(res, 'GW_BAD_REQUEST', { args: ['not a JSON-RPC message'] }, undefined);
    const id = isRequest(m) ? m.id : undefined;
    if (this.child.state !== 'running' && this.child.state !== 'starting') {
      const retry = Math.max(1, Math.ceil(this.child.retryInMs / 1000));
      return refuse(res, 'GW_UPSTREAM_DOWN', { args: [this.name, retry], retryAfterSeconds: retry }, id);
    }
    let session: VirtualSession | undefined;
    if (sessionId) {
      session = this.sessions.get(sessionId);
      if (!session) return refuse(res, 'GW_SESSION_NOT_FOUND', {}, id);
    }
    if (isRequest(m)) {
      if (m.method === 'initialize') {
        if (session) return refuse(res, 'GW_BAD_REQUEST', { args: ['initialize inside a session'] }, id);
        return this.initialize(m, res);
      }
      return this.forward(m, session, res);
    }
    if (isNotification(m)) {
      const n = m as unknown as { method: string; params?: JsonObject };
      // The child was told once, when the real session opened.
      if (n.method !== 'notifications/initialized') this.clientNotification(n, session);
      return void res.writeHead(202).end();
    }
    if (isResponse(m)) {
      const sr = this.serverRequests.get(String(m.id));
      if (sr) {
        this.serverRequests.delete(String(m.id));
        this.child.send(JSON.stringify({ ...m, id: sr.childId }));
      }
      return void res.writeHead(202).end();
    }
    return refuse(res, 'GW_BAD_REQUEST', { args: ['not a JSON-RPC message'] }, undefined);
  }

  /**
   * `initialize`: the child's first answer (or the opening's, `era: legacy`), else the cached one, each with a fresh
   * virtual session.
   */
  private async initialize(m: JsonRpcRequest, res: ServerResponse): Promise<void> {
    const params = isObject(m.params) ? m.params : {};
    const first = this.init === undefined;
    const init = (this.init ??= this.ask('initialize', {
      ...params,
      capabilities: { ...DECLARED_CAPABILITIES, ...(isObject(params.capabilities) ? params.capabilities : {}) },
    }));
    const answer = await init;
    if (!answer) {
      if (this.init === init) this.init = undefined;
      const exit = this.lastExit ? describeExit(this.lastExit) : 'unknown';
      return refuse(res, 'GW_UPSTREAM_PROCESS_EXITED', { args: [this.name, exit] }, m.id);
    }
    if (isErrorResponse(answer)) {
      // Refused (a 2026-07-28-only server): not cached, and no session opened.
      if (this.init === init) this.init = undefined;
      return void json(res, 200, { jsonrpc: '2.0', id: m.id, error: answer.error });
    }
    if (first) this.child.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    const s: VirtualSession = { id: randomBytes(16).toString('hex'), inflight: new Set(), taskIds: new Set() };
    this.sessions.set(s.id, s);
    json(res, 200, { jsonrpc: '2.0', id: m.id, result: answer.result }, { 'mcp-session-id': s.id });
  }

  /** A request of the host's own to the child (the real `initialize`); `undefined` when the child went away. */
  private ask(method: string, params: JsonObject): Promise<JsonObject | undefined> {
    const hostId = `gwh-${++this.seq}`;
    return new Promise((resolve) => {
      this.internal.set(hostId, resolve);
      if (!this.child.send(JSON.stringify({ jsonrpc: '2.0', id: hostId, method, params }))) {
        this.internal.delete(hostId);
        resolve(undefined);
      }
    });
  }

  /** A request of a client: to the child under a host-unique id; answered on its own SSE stream. */
  private forward(m: JsonRpcRequest, session: VirtualSession | undefined, res: ServerResponse): void {
    const hostId = `gw-${++this.seq}`;
    let params = isObject(m.params) ? m.params : undefined;
    const p: Pending = {
      hostId,
      origId: m.id,
      method: m.method,
      session,
      stream: openSse(res, session ? { 'mcp-session-id': session.id } : {}, () => {
        // The client went away before the answer: the child is told (2025-11-25 basic/utilities/cancellation; on
        // stdio that is how a 2026-07-28 listen ends too), since nothing could carry the answer any more.
        if (!this.pending.has(hostId)) return;
        this.finish(p);
        this.child.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: hostId, reason: 'the client went away' } }));
        this.log.debug({ upstream: this.name, method: p.method }, 'stdio upstream: a request whose client went away was cancelled');
      }),
    };
    const meta = params && isObject(params._meta) ? params._meta : undefined;
    const token = meta?.progressToken;
    if (params && meta && (typeof token === 'string' || typeof token === 'number')) {
      p.hostToken = `gwp-${this.seq}`;
      p.origToken = token;
      params = { ...params, _meta: { ...meta, progressToken: p.hostToken } };
      this.tokens.set(p.hostToken, p);
    }
    this.pending.set(hostId, p);
    session?.inflight.add(p);
    const sent = { ...m, id: hostId, ...(params !== undefined ? { params } : {}) };
    if (!this.child.send(JSON.stringify(sent))) {
      const { error } = catalogAnswer('GW_UPSTREAM_PROCESS_EXITED', { args: [this.name, this.lastExit ? describeExit(this.lastExit) : 'unknown'] });
      p.stream.send({ jsonrpc: '2.0', id: m.id, error });
      this.finish(p);
    }
  }

  /** A client notification: a cancel names the host id of the request it cancels; others go as they are. */
  private clientNotification(n: { method: string; params?: JsonObject }, session: VirtualSession | undefined): void {
    if (n.method === 'notifications/cancelled' && isObject(n.params)) {
      const requestId = n.params.requestId;
      const candidates = session ? [...session.inflight] : [...this.pending.values()].filter((p) => p.session === undefined);
      const p = candidates.find((c) => c.origId === requestId);
      if (!p) return; // already answered, or never ours: nothing to cancel
      this.finish(p);
      this.child.send(JSON.stringify({ ...n, params: { ...n.params, requestId: p.hostId } }));
      return;
    }
    this.child.send(JSON.stringify({ jsonrpc: '2.0', ...n }));
  }

  /** DELETE: the virtual session ends; what it had in flight is cancelled at the child. */
  private dropSession(s: VirtualSession): void {
    this.sessions.delete(s.id);
    for (const p of [...s.inflight]) {
      this.finish(p);
      this.child.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: p.hostId, reason: 'session ended' } }));
    }
    for (const t of s.taskIds) if (this.taskOwners.get(t) === s) this.taskOwners.delete(t);
    s.getStream?.end();
  }
}

/** The related-task id a message's `_meta` names (2025-11-25 basic/utilities/tasks §Related Task Metadata). */
function relatedTaskId(params: unknown): string | undefined {
  const meta = isObject(params) && isObject(params._meta) ? params._meta : undefined;
  const related = meta?.[META.relatedTask];
  return isObject(related) && typeof related.taskId === 'string' ? related.taskId : undefined;
}

/** Why a process cannot serve after `exit`, for operators: the program (never its arguments) and the OS error or exit. */
function exitReason(command: readonly string[], exit: ChildExit): string {
  if (exit.spawnError) return `command ${JSON.stringify(command[0])} could not be started (${exit.spawnError})`;
  return `process exited (${describeExit(exit)}); restarting`;
}

/** Why an answer to the opening `method` is a refusal (its JSON-RPC error, bounded), or `undefined`. */
function refusalOf(method: string, answer: JsonObject): string | undefined {
  if (!isErrorResponse(answer)) return undefined;
  const error = answer.error as { code: unknown; message: unknown };
  return `${method} refused (${String(error.code)}: ${String(error.message).slice(0, 200)})`;
}

/** An exit as an error message names it: no paths, no environment. */
function describeExit(exit: ChildExit): string {
  if (exit.spawnError) return `could not start: ${exit.spawnError}`;
  if (exit.signal) return `signal ${exit.signal}`;
  return `code ${exit.code ?? 'unknown'}`;
}
