/**
 * FakeUpstream: an in-memory FAKE of the `UpstreamClient` seam, for unit tests of the task runtime without sockets
 * (docs/architecture.md §6 "Runtime unit tests"). Not a test file. It speaks no protocol: a test scripts what the
 * upstream does, either with `handle(method, fn)` (the call answers at once) or by taking the call with `nextCall()`
 * and driving its events (`notify`, `ask`, `reply`, `fail`). Everything the runtime does to the upstream is recorded:
 * the calls and their params, answers to input requests, cancels, abandons, retains.
 */
import {
  UpstreamTaskLostError,
  type UpstreamCall,
  type UpstreamCaller,
  type UpstreamClient,
  type UpstreamListen,
  type UpstreamTask,
  type UpstreamTaskSnapshot,
} from '../../src/upstream/index.js';
import { QueuedCall } from '../../src/upstream/call-queue.js';
import type { CallOptions, UpstreamStats } from '../../src/upstream/client.js';
import type { Era, JsonObject, JsonRpcErrorObject, JsonRpcNotification, ListenFilter, RequestId, UpstreamIdentity } from '../../src/translate/index.js';

/** A test's bound on waiting for something the runtime is expected to do (a failure, never a pass). */
const WAIT_MS = 5_000;

function bounded<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`fake upstream: ${what} did not happen within ${WAIT_MS} ms`)), WAIT_MS);
    timer.unref();
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

/** One call the runtime made, driven by the test. */
export class FakeCall extends QueuedCall implements UpstreamCall {
  private nextRequestId = 1;
  private answerWaiters: Array<(a: FakeAnswer) => void> = [];
  /** Answers the runtime gave to this call's input requests, in order. */
  readonly answers: FakeAnswer[] = [];
  /** Why the runtime cancelled (`cancel`) or dropped (`abandon`) the call, if it did. */
  cancelled: string | undefined;
  abandoned: string | undefined;

  constructor(
    readonly caller: UpstreamCaller,
    readonly method: string,
    readonly params: JsonObject | undefined,
    /** How the runtime sent it (`task`: the upstream may answer with a task). */
    readonly opts: CallOptions | undefined,
  ) {
    super();
  }

  /** The test: the upstream answers by creating a task (the call's final event). */
  createTask(task: FakeTask): void {
    this.push({ kind: 'task', task });
  }

  /** The test: the upstream sends a notification on this call. */
  notify(method: string, params: JsonObject = {}): void {
    this.push({ kind: 'notification', message: { jsonrpc: '2.0', method, params } });
  }

  /** The test: the upstream asks for input on this call; returns the request id. */
  ask(method: string, params: JsonObject = {}): RequestId {
    const id = `in-${this.nextRequestId++}`;
    this.push({ kind: 'request', message: { jsonrpc: '2.0', id, method, params } });
    return id;
  }

  /** The test: the upstream answers with a result. */
  reply(result: JsonObject): void {
    this.push({ kind: 'response', message: { jsonrpc: '2.0', id: 1, result } });
  }

  /** The test: the upstream answers with a JSON-RPC error. */
  replyError(error: JsonRpcErrorObject): void {
    this.push({ kind: 'response', message: { jsonrpc: '2.0', id: 1, error } });
  }

  /** The test: the call breaks (the stream is lost). */
  fail(error: Error): void {
    this.push({ kind: 'failure', error });
  }

  /** The test: waits for the runtime's next answer to an input request of this call. */
  nextAnswer(): Promise<FakeAnswer> {
    const ready = this.answers[this.answersTaken];
    if (ready) {
      this.answersTaken++;
      return Promise.resolve(ready);
    }
    return bounded(
      new Promise<FakeAnswer>((resolve) =>
        this.answerWaiters.push((a) => {
          this.answersTaken++;
          resolve(a);
        }),
      ),
      `an answer on ${this.method}`,
    );
  }
  private answersTaken = 0;

  async respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void> {
    const answer = { id, ...payload } as FakeAnswer;
    this.answers.push(answer);
    this.answerWaiters.shift()?.(answer);
  }

  cancel(reason: string): void {
    if (this.cancelled !== undefined || this.abandoned !== undefined) return;
    this.cancelled = reason;
    this.push({ kind: 'failure', error: new Error(`cancelled: ${reason}`) });
  }

  abandon(reason: string): void {
    if (this.cancelled !== undefined || this.abandoned !== undefined) return;
    this.abandoned = reason;
    this.push({ kind: 'failure', error: new Error(`abandoned: ${reason}`) });
  }
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * A FAKE `UpstreamTask`, scripted by the test: `emit` is a state change the runtime sees on `next()` (and on `get()`),
 * `set` one only `get()` sees (the upstream moved on, nobody was told), `lose` the upstream forgetting the task.
 * Records what the runtime did to it: answers, cancels, release.
 */
export class FakeTask implements UpstreamTask {
  /** The state `get()` reports. */
  state: UpstreamTaskSnapshot;
  /** Every `answer()` the runtime made, in order. */
  readonly answers: JsonObject[] = [];
  /** How many times the runtime asked to cancel, and what `cancel()` resolves to. */
  cancels = 0;
  cancelAnswer: 'cancelled' | 'terminal' | 'unknown' = 'cancelled';
  released = false;
  private readonly queue: Array<UpstreamTaskSnapshot | Error> = [];

  get ref(): { id: string } {
    return { id: this.id };
  }
  private wake: (() => void) | undefined;
  private answerWaiters: Array<() => void> = [];

  constructor(
    readonly id: string,
    readonly created: UpstreamTaskSnapshot,
  ) {
    this.state = created;
  }

  /** The test: the upstream task changes, and the runtime's follow loop sees it. */
  emit(change: Partial<UpstreamTaskSnapshot>): void {
    this.state = { ...this.state, ...change };
    this.queue.push(this.state);
    this.wake?.();
  }

  /** The test: the upstream task changes, and only a `get()` sees it. */
  set(change: Partial<UpstreamTaskSnapshot>): void {
    this.state = { ...this.state, ...change };
  }

  /** The test: the upstream no longer knows the task. */
  lose(): void {
    this.queue.push(new UpstreamTaskLostError(this.id));
    this.wake?.();
  }

  /** The test: waits for the runtime's next `answer()`. */
  nextAnswer(): Promise<JsonObject> {
    const taken = this.answersTaken;
    if (this.answers.length > taken) {
      this.answersTaken++;
      return Promise.resolve(this.answers[taken] as JsonObject);
    }
    return bounded(
      new Promise<JsonObject>((resolve) =>
        this.answerWaiters.push(() => {
          this.answersTaken++;
          resolve(this.answers[taken] as JsonObject);
        }),
      ),
      `an answer to task ${this.id}`,
    );
  }
  private answersTaken = 0;

  async next(signal: AbortSignal): Promise<UpstreamTaskSnapshot | undefined> {
    for (;;) {
      if (signal.aborted || this.released) return undefined;
      const item = this.queue.shift();
      if (item instanceof Error) throw item;
      if (item) return item;
      if (TERMINAL.has(this.state.status) && this.state !== this.created) return this.state;
      await new Promise<void>((resolve) => {
        const done = () => {
          signal.removeEventListener('abort', done);
          this.wake = undefined;
          resolve();
        };
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }

  async get(): Promise<UpstreamTaskSnapshot> {
    this.lastGet = Date.now();
    return this.state;
  }

  /** Due once its interval passed since the creation or the last `get()` (as a polled task's is). */
  pollDue(): boolean {
    return Date.now() - this.lastGet >= (this.state.pollIntervalMs ?? 1_000);
  }
  private lastGet = Date.now();

  async answer(responses: JsonObject): Promise<string[]> {
    this.answers.push(responses);
    this.answerWaiters.shift()?.();
    const outstanding = { ...(this.state.inputRequests ?? {}) };
    const sent = Object.keys(responses).filter((k) => Object.hasOwn(outstanding, k));
    // An answered request is no longer outstanding upstream (tasks extension §Task Update Requests).
    for (const k of sent) delete outstanding[k];
    if (sent.length > 0)
      this.state = {
        ...this.state,
        inputRequests: outstanding,
        ...(Object.keys(outstanding).length === 0 && this.state.status === 'input_required' ? { status: 'working' as const } : {}),
      };
    return sent;
  }

  async cancel(): Promise<'cancelled' | 'terminal' | 'unknown'> {
    this.cancels++;
    return this.cancelAnswer;
  }

  release(): void {
    this.released = true;
    this.wake?.();
  }
}

/** The runtime's answer to one input request. */
export type FakeAnswer = { id: RequestId } & ({ result: JsonObject } | { error: JsonRpcErrorObject });

/** A FAKE upstream: `UpstreamClient` in memory, scripted by the test. */
export class FakeUpstream implements UpstreamClient {
  /** Every call the runtime made, in order. */
  readonly calls: FakeCall[] = [];
  private readonly handlers = new Map<string, (params: JsonObject | undefined, call: FakeCall) => JsonObject | undefined>();
  private readonly callWaiters: Array<{ method: string | undefined; resolve: (c: FakeCall) => void }> = [];
  private taken = new Set<FakeCall>();
  private retained = 0;
  private readonly listeners = new Set<(n: JsonRpcNotification) => void>();
  /** While set, `call()` resolves only once it settles: an upstream that has not sent its response headers yet. */
  headers: Promise<void> | undefined;

  constructor(
    readonly name: string,
    readonly knownIdentity: UpstreamIdentity,
    /** The era the fake pretends to speak (what the runtime's task support reads). */
    readonly era: Era = 'legacy',
  ) {}

  /** Answers every call of `method` at once with `fn`'s result (`undefined`: leave it to the test). */
  handle(method: string, fn: (params: JsonObject | undefined, call: FakeCall) => JsonObject | undefined): this {
    this.handlers.set(method, fn);
    return this;
  }

  /** The next call (of `method`, if given) that the test has not taken yet. */
  nextCall(method?: string): Promise<FakeCall> {
    const ready = this.calls.find((c) => !this.taken.has(c) && (method === undefined || c.method === method));
    if (ready) {
      this.taken.add(ready);
      return Promise.resolve(ready);
    }
    return bounded(new Promise<FakeCall>((resolve) => this.callWaiters.push({ method, resolve })), `a ${method ?? 'any'} call`);
  }

  /** Holds taken by `retain()` and not yet released. */
  get retainedCount(): number {
    return this.retained;
  }

  async identity(): Promise<UpstreamIdentity> {
    return this.knownIdentity;
  }

  async call(caller: UpstreamCaller, method: string, params: JsonObject | undefined, _signal?: AbortSignal, opts?: CallOptions): Promise<UpstreamCall> {
    const call = new FakeCall(caller, method, params, opts);
    this.calls.push(call);
    const handler = this.handlers.get(method);
    const result = handler?.(params, call);
    if (result !== undefined) {
      call.reply(result);
      this.taken.add(call);
      return call;
    }
    const i = this.callWaiters.findIndex((w) => w.method === undefined || w.method === method);
    const waiter = i >= 0 ? this.callWaiters.splice(i, 1)[0] : undefined;
    if (waiter) {
      this.taken.add(call);
      waiter.resolve(call);
    }
    // The test already holds the call; the runtime gets it once the headers "arrive".
    if (this.headers) await this.headers;
    return call;
  }

  /** Sends a notification to every open listen. */
  broadcast(method: string, params: JsonObject = {}): void {
    for (const l of this.listeners) l({ jsonrpc: '2.0', method, params });
  }

  async listen(_caller: UpstreamCaller, filter: ListenFilter, signal: AbortSignal): Promise<UpstreamListen> {
    const queue: JsonRpcNotification[] = [];
    let wake: (() => void) | undefined;
    const listener = (n: JsonRpcNotification) => {
      queue.push(n);
      wake?.();
    };
    this.listeners.add(listener);
    const onAbort = () => wake?.();
    signal.addEventListener('abort', onAbort, { once: true });
    const listeners = this.listeners;
    async function* notifications(): AsyncGenerator<JsonRpcNotification> {
      try {
        for (;;) {
          const n = queue.shift();
          if (n) yield n;
          else if (signal.aborted) return;
          else await new Promise<void>((r) => (wake = r));
        }
      } finally {
        listeners.delete(listener);
        signal.removeEventListener('abort', onAbort);
      }
    }
    return { accepted: { ...filter }, notifications: notifications() };
  }

  resumeTask(): UpstreamTask {
    throw new Error('FakeUpstream: resumeTask is not scripted');
  }

  retain(): () => void {
    this.retained++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.retained--;
    };
  }

  stats(): UpstreamStats {
    return { sessions: 0 };
  }

  async close(): Promise<void> {}
}
