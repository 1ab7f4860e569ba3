/**
 * Calls built over other calls and over upstream tasks: a call whose window starts when it is sent (`callNow`), an
 * upstream task seen as a call (`taskAsCall`), and a call whose task is hidden (`hideTask`). All three are
 * era-neutral: they use only the `UpstreamClient`, `UpstreamCall` and `UpstreamTask` interfaces. Also the readers of
 * a call to its end (`drain`, `requestOnce`), which follow a task the call created.
 */
import {
  absentUserAnswer,
  errorResponse,
  INPUT_KEY_HINT,
  isObject,
  isTerminal,
  logFailure,
  NO_LOG,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcResponse,
  type LayerLogger,
  type RequestId,
  catalogError,
  taskFailure,
} from '../translate/index.js';
import { QueuedCall } from './call-queue.js';
import type { CallEvent, CallOptions, UpstreamCall, UpstreamCaller, UpstreamClient, UpstreamTask, UpstreamTaskSnapshot } from './client.js';

/** Whether an event ends a call. */
export function isFinal(e: CallEvent): boolean {
  return e.kind === 'response' || e.kind === 'failure' || e.kind === 'task';
}

/**
 * The final event a call has queued already, taken without waiting (a pull in progress is not cut off), or undefined
 * while it has none: what a wrapper stopped before its consumer took the end reads to stop what that end started.
 */
export async function queuedFinal(call: UpstreamCall): Promise<CallEvent | undefined> {
  while (call.pending > 0 || call.finished) {
    const e = await call.nextUnless(0, undefined);
    if (!e) return undefined;
    if (isFinal(e)) return e;
  }
  return undefined;
}

/**
 * The response of a call that has finished with nothing else queued (its answer was read whole), taken; `undefined`
 * when the call still has events to pump. A failure is thrown, the call stopped, as a conversation's pump would.
 */
export async function settledResponse(call: UpstreamCall): Promise<{ message: JsonRpcResponse; raw?: string } | undefined> {
  if (!call.finished || call.pending !== 1) return undefined;
  const e = await call.next();
  if (e.kind === 'response') return e;
  call.cancel('gateway error');
  if (e.kind === 'failure') throw e.error;
  throw new Error(`a plain call ended with a ${e.kind} event`);
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}

/**
 * Starts a call and returns at once: the call's window starts when the request is sent, not when the upstream's
 * headers arrive (an upstream in plain-JSON response mode sends its headers only with the result). A failure to send
 * arrives as the call's `failure` event; cancelling before the upstream answered aborts the request.
 */
export function callNow(
  client: UpstreamClient,
  caller: UpstreamCaller,
  method: string,
  params: JsonObject | undefined,
  signal?: AbortSignal,
  opts?: CallOptions,
): UpstreamCall {
  return new EagerCall((s) => client.call(caller, method, params, s, opts), signal);
}

/** A call that exists before its upstream request has been answered with headers; it forwards the request's events. */
class EagerCall extends QueuedCall implements UpstreamCall {
  private inner: UpstreamCall | undefined;
  /** Whether the consumer took a `task` event (then the task is its own). */
  private taskTaken = false;
  /** What the consumer gets instead of a task that was stopped before it was taken. */
  private withdrawn: CallEvent | undefined;
  private stopped: { how: 'cancel' | 'abandon'; reason: string } | undefined;
  /** Aborts the request while it is not answered yet (cancel before the call exists; the caller's signal). */
  private readonly controller = new AbortController();

  constructor(start: (signal: AbortSignal) => Promise<UpstreamCall>, signal: AbortSignal | undefined) {
    super();
    void this.run(start, signal);
  }

  private async run(start: (signal: AbortSignal) => Promise<UpstreamCall>, signal: AbortSignal | undefined): Promise<void> {
    const onAbort = () => this.controller.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      let inner: UpstreamCall;
      try {
        inner = await start(this.controller.signal);
      } catch (e) {
        this.push({ kind: 'failure', error: asError(e) });
        return;
      }
      if (this.stopped) {
        // Stopped while it was being sent, and the upstream accepted it anyway: stop it there too.
        if (this.stopped.how === 'cancel') inner.cancel(this.stopped.reason);
        else inner.abandon(this.stopped.reason);
        return;
      }
      this.inner = inner;
      for (;;) {
        const e = await inner.next();
        this.push(e);
        if (isFinal(e)) return;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }

  override async nextUnless(ms: number | undefined, signal: AbortSignal | undefined): Promise<CallEvent | undefined> {
    if (this.withdrawn) return this.withdrawn;
    const e = await super.nextUnless(ms, signal);
    if (e?.kind !== 'task') return e;
    if (this.withdrawn) return this.withdrawn;
    this.taskTaken = true;
    return e;
  }

  respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void> {
    // A request event comes only from the inner call, so it exists by the time one is answered.
    if (!this.inner) return Promise.reject(new Error(`no open input request ${String(id)} on this call`));
    return this.inner.respond(id, payload);
  }

  cancel(reason: string): void {
    this.stop('cancel', reason);
  }

  abandon(reason: string): void {
    this.stop('abandon', reason);
  }

  private stop(how: 'cancel' | 'abandon', reason: string): void {
    if (this.stopped) return;
    this.stopped = { how, reason };
    const final = this.finalEvent;
    if (final?.kind === 'task' && !this.taskTaken) {
      // Created, but nobody took it: nobody could ever reach it.
      this.withdrawn = { kind: 'failure', error: new Error(`cancelled: ${reason}`) };
      if (how === 'cancel')
        void final.task
          .cancel()
          .catch(() => 'unknown')
          .finally(() => final.task.release());
      else final.task.release();
      return;
    }
    if (final) return;
    if (this.inner) {
      if (how === 'cancel') this.inner.cancel(reason);
      else this.inner.abandon(reason);
    } else {
      this.controller.abort(new Error(reason));
    }
    this.push({ kind: 'failure', error: new Error(`cancelled: ${reason}`) });
  }
}

/**
 * An upstream task seen as an ordinary call, for a client that gets no task (a hidden task; a task followed inside
 * the creating request): each new input request becomes a `request` event with a call-unique id, `respond()`
 * answers its key with `task.answer()`, the terminal state becomes the `response` (completed → the result, failed →
 * the error, cancelled → an error saying so), and `cancel()` cancels the task upstream.
 *
 * The task is followed only while the consumer waits for an event (`next`/`nextUnless`), so a consumer that stops
 * pulling the call may go on with `.task` itself (a task the client receives once a window has passed). The task is
 * released once the call has ended (terminal state, cancel, abandon), not before.
 */
export function taskAsCall(task: UpstreamTask, opts: TaskCallOptions = {}): UpstreamCall & { readonly task: UpstreamTask } {
  return new TaskCall(task, opts);
}

/** How a task is seen as a call. */
export interface TaskCallOptions {
  /**
   * Each new `statusMessage` of the task becomes a `notifications/progress` with this token (a hand-rolled job followed
   * inside a call: its status tool's message is the only progress there is).
   */
  progressToken?: string | number;
}

/** One input request emitted by a `TaskCall`, by its event id. */
interface AskedInput {
  key: string;
  method: string;
}

class TaskCall extends QueuedCall implements UpstreamCall {
  /** Input requests emitted and not answered yet, by event id. */
  private readonly asked = new Map<string, AskedInput>();
  /** Every input key ever emitted (a task's keys are unique for its life, tasks extension §Task Update Requests). */
  private readonly emitted = new Set<string>();
  private seq = 0;
  private stopped = false;
  private released = false;
  /** Progress notifications sent (their `progress` counts up) and the last message sent. */
  private progressed = 0;
  private lastMessage: string | undefined;

  constructor(
    readonly task: UpstreamTask,
    private readonly opts: TaskCallOptions = {},
  ) {
    super();
    this.apply(task.created);
  }

  protected override onFinal(): void {
    // A terminal state or a lost task: nothing more to follow. cancel() releases after its upstream round trip.
    if (!this.stopped) this.release();
  }

  override async nextUnless(ms: number | undefined, signal: AbortSignal | undefined): Promise<CallEvent | undefined> {
    if (this.pending > 0 || this.finished) return super.nextUnless(ms, signal);
    const pulling = new AbortController();
    void this.pull(pulling.signal);
    try {
      return await super.nextUnless(ms, signal);
    } finally {
      pulling.abort();
    }
  }

  /** Follows the task until a state yields an event, or the consumer stops waiting. */
  private async pull(signal: AbortSignal): Promise<void> {
    while (!signal.aborted && !this.finished) {
      let snapshot: UpstreamTaskSnapshot | undefined;
      try {
        snapshot = await this.task.next(signal);
      } catch (e) {
        this.push({ kind: 'failure', error: asError(e) });
        return;
      }
      if (!snapshot || this.apply(snapshot)) return;
    }
  }

  /** Emits what a state brings: input requests not emitted before, then the outcome. Returns whether it emitted. */
  private apply(s: UpstreamTaskSnapshot): boolean {
    let emitted = false;
    const token = this.opts.progressToken;
    if (token !== undefined && !isTerminal(s.status) && s.statusMessage !== undefined && s.statusMessage !== this.lastMessage) {
      this.lastMessage = s.statusMessage;
      this.push({
        kind: 'notification',
        message: { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: ++this.progressed, message: s.statusMessage } },
      });
    }
    for (const [key, req] of Object.entries(s.inputRequests ?? {})) {
      if (this.emitted.has(key)) continue;
      this.emitted.add(key);
      const id = `task-input-${++this.seq}`;
      this.asked.set(id, { key, method: req.method });
      const params = req.params ?? {};
      const meta = isObject(params._meta) ? params._meta : {};
      // The key rides along as a hint, so that an MRTR bridge keeps the task's own keys.
      this.push({ kind: 'request', message: { jsonrpc: '2.0', id, method: req.method, params: { ...params, _meta: { ...meta, [INPUT_KEY_HINT]: key } } } });
      emitted = true;
    }
    if (!isTerminal(s.status)) return emitted;
    const id = this.task.id;
    if (s.status === 'completed') this.push({ kind: 'response', message: { jsonrpc: '2.0', id, result: s.result ?? {} } });
    else if (s.status === 'failed') {
      this.push({
        kind: 'response',
        message: errorResponse(id, s.error ?? taskFailure(s.statusMessage, 'GW_UPSTREAM_TASK_FAILED')),
      });
    } else {
      this.push({
        kind: 'response',
        message: errorResponse(
          id,
          s.statusMessage ? catalogError('GW_UPSTREAM_TASK_CANCELLED_BECAUSE', { args: [s.statusMessage] }) : catalogError('GW_UPSTREAM_TASK_CANCELLED'),
        ),
      });
    }
    return true;
  }

  /**
   * Answers one input request into the task. A refusal becomes the kind's own refusal where it has one (an
   * elicitation is declined); a kind without one (sampling, roots) cannot be refused inside a task, so the call
   * ends with the error and the task is cancelled rather than left waiting for an answer that will not come.
   */
  async respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void> {
    const asked = this.asked.get(String(id));
    if (!asked || this.finished) throw new Error(`no open input request ${String(id)} on this call`);
    this.asked.delete(String(id));
    if ('result' in payload) {
      await this.task.answer({ [asked.key]: payload.result });
      return;
    }
    const refusal = absentUserAnswer(asked.method);
    if ('result' in refusal) {
      await this.task.answer({ [asked.key]: refusal.result });
      return;
    }
    this.stopped = true;
    this.push({ kind: 'response', message: errorResponse(this.task.id, payload.error) });
    await this.task
      .cancel()
      .catch(() => 'unknown')
      .finally(() => this.release());
  }

  /** Cancels the task upstream, then stops following it. Idempotent. */
  cancel(reason: string): void {
    if (this.stopped || this.finished) return;
    this.stopped = true;
    this.push({ kind: 'failure', error: new Error(`cancelled: ${reason}`) });
    void this.task
      .cancel()
      .catch(() => 'unknown')
      .finally(() => this.release());
  }

  /** Stops following the task; it runs on upstream. Idempotent. */
  abandon(reason: string): void {
    if (this.stopped || this.finished) return;
    this.stopped = true;
    this.push({ kind: 'failure', error: new Error(`cancelled: ${reason}`) });
    this.release();
  }

  private release(): void {
    if (this.released) return;
    this.released = true;
    this.task.release();
  }
}

/**
 * The same call with a created task hidden: if the call ends with a `task` event, the events of `taskAsCall(task)`
 * follow instead (input requests, then the task's outcome as the response), and `cancel()` cancels the task.
 */
export function hideTask(call: UpstreamCall, log: LayerLogger = NO_LOG, opts: TaskCallOptions = {}): UpstreamCall {
  return new HiddenTaskCall(call, log, opts);
}

class HiddenTaskCall implements UpstreamCall {
  private current: UpstreamCall;
  private swapped = false;
  /** The final event taken from the original call when it was not a task. */
  private ended = false;
  /** Set by cancel/abandon before the task was taken over: every later pull gets it. */
  private stopped: CallEvent | undefined;

  constructor(
    private readonly original: UpstreamCall,
    private readonly log: LayerLogger,
    private readonly opts: TaskCallOptions,
  ) {
    this.current = original;
  }

  /** Once the original call ended with a task, the task's call decides; before, only a final event taken counts. */
  get finished(): boolean {
    if (this.stopped) return true;
    return this.swapped ? this.current.finished : this.ended;
  }

  get pending(): number {
    return this.stopped ? 0 : this.current.pending;
  }

  async next(): Promise<CallEvent> {
    return (await this.nextUnless(undefined, undefined)) as CallEvent;
  }

  async nextUnless(ms: number | undefined, signal: AbortSignal | undefined): Promise<CallEvent | undefined> {
    const until = ms === undefined ? undefined : Date.now() + ms;
    for (;;) {
      if (this.stopped) return this.stopped;
      const left = until === undefined ? undefined : Math.max(0, until - Date.now());
      const e = await this.current.nextUnless(left, signal);
      if (this.stopped) return this.stopped;
      if (e?.kind !== 'task' || this.swapped) {
        if (e && isFinal(e)) this.ended = true;
        return e;
      }
      this.current = taskAsCall(e.task, this.opts);
      this.swapped = true;
    }
  }

  respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void> {
    return this.current.respond(id, payload);
  }

  cancel(reason: string): void {
    this.stop(
      reason,
      (c) => c.cancel(reason),
      (t) =>
        void t
          .cancel()
          .catch(() => 'unknown')
          .finally(() => t.release()),
    );
  }

  abandon(reason: string): void {
    this.stop(
      reason,
      (c) => c.abandon(reason),
      (t) => t.release(),
    );
  }

  /**
   * Stops the call. Before the task was taken over, what the original call has queued is taken first: a task it
   * created is stopped here (nobody could reach it again); if it has not answered yet, it is stopped itself.
   */
  private stop(reason: string, stopCall: (c: UpstreamCall) => void, stopTask: (t: UpstreamTask) => void): void {
    if (this.swapped || this.ended) return stopCall(this.current);
    if (this.stopped) return;
    this.stopped = { kind: 'failure', error: new Error(`cancelled: ${reason}`) };
    void (async () => {
      const e = await queuedFinal(this.original);
      if (e?.kind === 'task') return stopTask(e.task);
      if (!e) stopCall(this.original);
    })().catch(logFailure(this.log, 'debug', 'a hidden task was not stopped; its call ended meanwhile'));
  }
}

/** Sends one request and reads it to its response, refusing any input request on the way (handshakes, lists, tasks/*). */
export async function requestOnce(
  client: UpstreamClient,
  caller: UpstreamCaller,
  method: string,
  params: JsonObject | undefined,
  signal?: AbortSignal,
): Promise<JsonRpcResponse> {
  return drain(await client.call(caller, method, params, signal), client.log);
}

/** Reads a call to its response, refusing any input request on the way; a task it created is followed to its end. */
export async function drain(call: UpstreamCall, log: LayerLogger = NO_LOG): Promise<JsonRpcResponse> {
  for (;;) {
    const e = await call.next();
    if (e.kind === 'response') return e.message;
    if (e.kind === 'failure') throw e.error;
    if (e.kind === 'task') return drain(taskAsCall(e.task), log);
    if (e.kind === 'request') {
      await call
        .respond(e.message.id, { error: catalogError('GW_UPSTREAM_REQUEST_NOT_RELAYED') })
        .catch(logFailure(log, 'debug', 'refusal of an upstream request not delivered', { method: e.message.method }));
    }
  }
}
