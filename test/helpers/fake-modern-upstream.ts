/**
 * FAKE: an in-memory `UpstreamClient` that behaves like the modern upstream client in front of a modern-only
 * server (input requests of MRTR rounds arrive as `request` events with call-unique ids, results in modern shape
 * with `resultType`, cache hints and `serverInfo`). It exists for what a conforming real server never does (send
 * an input kind the client did not declare) and to record what the face sends upstream. Not a test file.
 */
import type { UpstreamCall, UpstreamCaller, UpstreamClient, UpstreamListen } from '../../src/upstream/index.js';
import { QueuedCall } from '../../src/upstream/call-queue.js';
import type { JsonObject, JsonRpcErrorObject, JsonRpcNotification, ListenFilter, RequestId, UpstreamIdentity } from '../../src/translate/index.js';

const SERVER_INFO = { name: 'fake-modern', version: '9.9.9' };
const SI = 'io.modelcontextprotocol/serverInfo';

/** What a scripted method gets. */
export interface Script {
  params: JsonObject;
  caller: UpstreamCaller;
  signal: AbortSignal;
  /** Sends one input request and waits for its answer. */
  ask(method: string, params?: JsonObject): Promise<{ result: JsonObject } | { error: JsonRpcErrorObject }>;
  notify(method: string, params: JsonObject): void;
}

/** A scripted answer: a modern result, or a JSON-RPC error. */
export type Answer = { result: JsonObject } | { error: JsonRpcErrorObject };

/** FAKE: one in-flight call driven by a script. */
class FakeCall extends QueuedCall implements UpstreamCall {
  private nextId = 1;
  private readonly answers = new Map<RequestId, (a: Answer) => void>();
  readonly controller = new AbortController();
  cancelledWith: string | undefined;

  ask(method: string, params?: JsonObject): Promise<Answer> {
    const id = `in-${this.nextId++}`;
    return new Promise((resolve) => {
      this.answers.set(id, resolve);
      this.push({ kind: 'request', message: { jsonrpc: '2.0', id, method, ...(params ? { params } : {}) } });
    });
  }

  async respond(id: RequestId, payload: Answer): Promise<void> {
    const r = this.answers.get(id);
    if (!r) throw new Error(`no input request ${id}`);
    this.answers.delete(id);
    r(payload);
  }

  cancel(reason: string): void {
    if (this.cancelledWith !== undefined) return;
    this.cancelledWith = reason;
    this.controller.abort(new Error(reason));
    this.push({ kind: 'failure', error: new Error(`cancelled: ${reason}`) });
  }

  abandon(reason: string): void {
    this.cancel(reason);
  }
}

/** One call the fake saw. */
export interface SeenCall {
  method: string;
  params: JsonObject | undefined;
  caller: UpstreamCaller;
  call: FakeCall;
}

/** FAKE: a modern upstream with scripted methods. */
export class FakeModernUpstream implements UpstreamClient {
  readonly name = 'fake-modern';
  readonly era = 'modern' as const;
  knownIdentity: UpstreamIdentity | undefined;
  readonly calls: SeenCall[] = [];
  readonly listens: Array<{ filter: ListenFilter; caller: UpstreamCaller; signal: AbortSignal; push(n: JsonRpcNotification): void }> = [];
  private readonly scripts = new Map<string, (s: Script) => Promise<Answer>>();
  private readonly listenWaiters: Array<{ pred: (f: ListenFilter) => boolean; resolve: () => void }> = [];

  /** Resolves once an open listen's filter satisfies `pred` (at once if one is open already). */
  listenOpened(pred: (f: ListenFilter) => boolean): Promise<void> {
    if (this.listens.some((l) => !l.signal.aborted && pred(l.filter))) return Promise.resolve();
    return new Promise((resolve) => this.listenWaiters.push({ pred, resolve }));
  }

  readonly identityValue: UpstreamIdentity = {
    protocolVersion: '2026-07-28',
    capabilities: {
      tools: { listChanged: true },
      resources: { subscribe: true, listChanged: true },
      prompts: {},
      logging: {},
      extensions: { 'io.modelcontextprotocol/tasks': {} },
    },
    serverInfo: SERVER_INFO,
    instructions: 'fake instructions',
  };

  /** Scripts `method` (for tools/call: `tools/call:<name>`). */
  on(method: string, script: (s: Script) => Promise<Answer>): this {
    this.scripts.set(method, script);
    return this;
  }

  async identity(): Promise<UpstreamIdentity> {
    this.knownIdentity = this.identityValue;
    return this.identityValue;
  }

  async call(caller: UpstreamCaller, method: string, params: JsonObject | undefined, signal?: AbortSignal): Promise<UpstreamCall> {
    const call = new FakeCall();
    this.calls.push({ method, params, caller, call });
    const key = method === 'tools/call' ? `tools/call:${String(params?.name)}` : method;
    const script = this.scripts.get(key);
    const onAbort = () => call.cancel('signal aborted');
    signal?.addEventListener('abort', onAbort, { once: true });
    const s: Script = {
      params: params ?? {},
      caller,
      signal: call.controller.signal,
      ask: (m, p) => call.ask(m, p),
      notify: (m, p) => call.push({ kind: 'notification', message: { jsonrpc: '2.0', method: m, params: p } }),
    };
    void (async () => {
      const answer: Answer = script ? await script(s) : { error: { code: -32601, message: `Method not found: ${method}` } };
      call.push({ kind: 'response', message: { jsonrpc: '2.0', id: 1, ...answer } });
    })()
      .catch((error: Error) => call.push({ kind: 'failure', error }))
      .finally(() => signal?.removeEventListener('abort', onAbort));
    return call;
  }

  async listen(caller: UpstreamCaller, filter: ListenFilter, signal: AbortSignal): Promise<UpstreamListen> {
    const queue: JsonRpcNotification[] = [];
    let wake: (() => void) | undefined;
    const entry = {
      filter,
      caller,
      signal,
      push: (n: JsonRpcNotification) => {
        queue.push(n);
        wake?.();
      },
    };
    this.listens.push(entry);
    for (const w of [...this.listenWaiters]) {
      if (!w.pred(filter)) continue;
      this.listenWaiters.splice(this.listenWaiters.indexOf(w), 1);
      w.resolve();
    }
    signal.addEventListener('abort', () => wake?.(), { once: true });
    async function* notifications(): AsyncGenerator<JsonRpcNotification> {
      while (!signal.aborted) {
        const n = queue.shift();
        if (n) {
          yield n;
          continue;
        }
        await new Promise<void>((r) => (wake = r));
        wake = undefined;
      }
    }
    return { accepted: filter, notifications: notifications() };
  }

  /** Sends a notification to every open listen whose filter takes it (tagged as a modern listen stream tags it). */
  emit(method: string, params: JsonObject = {}): number {
    let sent = 0;
    for (const l of this.listens) {
      if (l.signal.aborted) continue;
      const f = l.filter;
      const takes =
        (method === 'notifications/tools/list_changed' && f.toolsListChanged) ||
        (method === 'notifications/resources/list_changed' && f.resourcesListChanged) ||
        (method === 'notifications/resources/updated' && typeof params.uri === 'string' && f.resourceSubscriptions?.includes(params.uri));
      if (!takes) continue;
      l.push({ jsonrpc: '2.0', method, params: { ...params, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub' } } });
      sent++;
    }
    return sent;
  }

  /** Open listens. */
  get openListens(): number {
    return this.listens.filter((l) => !l.signal.aborted).length;
  }

  resumeTask(): never {
    throw new Error('FakeModernUpstream: resumeTask is not scripted');
  }

  retain(): () => void {
    return () => {};
  }
  stats() {
    return { sessions: 0 };
  }
  async close(): Promise<void> {}
}

/** A modern complete result as a modern server sends it. */
export function complete(result: JsonObject, cacheable = false): Answer {
  return { result: { resultType: 'complete', ...result, ...(cacheable ? { ttlMs: 0, cacheScope: 'private' } : {}), _meta: { [SI]: SERVER_INFO } } };
}
