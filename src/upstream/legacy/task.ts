/**
 * A task a 2025-11-25 upstream runs, followed behind the era-neutral `UpstreamTask`. From creation on an upstream
 * `tasks/result` is kept open: a legacy server sends the task's input requests there, and its payload once the task
 * is terminal (2025-11-25 basic/utilities/tasks §Result Retrieval, §Input Required Status). `tasks/get` is polled
 * for status and status message, at the task's `pollInterval` and only while someone awaits `next()`.
 *
 * A legacy task lives in the session that created it (2025-11-25 basic/utilities/tasks §Security Considerations:
 * tasks are bound to their context), so that session is held until `release()`, and its `Mcp-Session-Id` is the
 * task's `ref.session`. A task resumed from a ref (another gateway instance created it) reaches the session joined by
 * id, and is passive until someone awaits `next()`: it opens no `tasks/result` for a single `get` or `cancel`, since
 * whoever calls `tasks/result` first takes the task's queued input requests away from the instance that follows it.
 */
import {
  asErrorObject,
  ErrorCode,
  inlineResult,
  isInputDeclared,
  isInputMethod,
  isObject,
  isTerminal,
  logFailure,
  modernError,
  NO_LOG,
  readLegacyTask,
  relatedTaskMeta,
  taskSnapshotFromLegacy,
  undeclaredInputAnswer,
  type JsonObject,
  type JsonRpcResponse,
  type LayerLogger,
  type RequestId,
  type LegacyTask,
  catalogError,
} from '../../translate/index.js';
import { drain } from '../call-wrappers.js';
import type { UpstreamCall, UpstreamCaller, UpstreamClient, UpstreamTaskRef, UpstreamTaskSnapshot } from '../client.js';
import { UpstreamTaskLostError } from '../errors.js';
import { InputLedger } from '../input-ledger.js';
import { PolledTask, type PolledTaskOptions } from '../polled-task.js';

/** How many times a `tasks/result` that broke before the end is asked again in a row. */
const MAX_RESULT_ATTEMPTS = 3;
/** How long a `tasks/get` that reports a terminal status waits for the payload on the open `tasks/result`. */
const PAYLOAD_WAIT_MS = 5_000;

/**
 * The upstream session a legacy task's requests go to: the caller's pooled session, or a session joined by id. Rejects
 * with `UpstreamTaskLostError` once the upstream no longer knows a joined session (its tasks went with it).
 */
export interface LegacyTaskSession {
  /** The session's `Mcp-Session-Id`, when the upstream gave one. */
  readonly sessionId: string | undefined;
  /** Sends one request in the session on the task's caller's behalf. */
  call(method: string, params: JsonObject, signal?: AbortSignal): Promise<UpstreamCall>;
  /** Ends the hold on the session; `runsOn`: the task was left running, so the session must outlive this hold. */
  release(runsOn: boolean): void;
}

/** A task known from a ref (another instance created it), with its last known state. */
export interface ResumedLegacyTask {
  resumed: UpstreamTaskRef;
  created: UpstreamTaskSnapshot;
}

/** How a legacy task is followed. */
export interface LegacyTaskOptions extends PolledTaskOptions {
  /** Where its requests go; default: the caller's pooled session, through `client`. */
  session?: LegacyTaskSession;
}

/** A 2025-11-25 upstream task (see the module doc). */
export class LegacyUpstreamTask extends PolledTask {
  /** Its task-scoped requests; answers name the task (2025-11-25 basic/utilities/tasks §Related Task Metadata). */
  private readonly input: InputLedger;
  private readonly log: LayerLogger;
  private readonly session: LegacyTaskSession;
  private stream: UpstreamCall | undefined;
  private following: Promise<void> | undefined;
  /** Whether `tasks/result` is kept open (from creation; for a resumed task, from the first `next()`). */
  private active: boolean;

  constructor(
    client: UpstreamClient,
    private readonly caller: UpstreamCaller,
    task: LegacyTask | ResumedLegacyTask,
    meta?: JsonObject,
    opts: LegacyTaskOptions = {},
  ) {
    const resumed = isResumed(task);
    // Modern vocabulary: `input_required` only with the requests known, and they come on tasks/result (a resumed
    // task's requests were taken by the instance that followed it: this one knows none yet).
    const created: UpstreamTaskSnapshot = resumed ? { ...task.created } : snapshotOf(task as LegacyTask);
    delete created.inputRequests;
    if (created.status === 'input_required') created.status = 'working';
    super(resumed ? task.resumed.id : (task as LegacyTask).taskId, { ...created, ...(meta ? { meta } : {}) }, opts);
    this.log = client.log ?? NO_LOG;
    this.input = new InputLedger(relatedTaskMeta(this.id), this.log);
    this.session = opts.session ?? pooledSession(client, caller);
    this.active = !resumed;
    this.follow();
  }

  /** The task's id and the session it lives in (another instance joins it there). */
  override get ref(): UpstreamTaskRef {
    const session = this.session.sessionId;
    return session !== undefined ? { id: this.id, session } : { id: this.id };
  }

  /** A resumed task starts following its `tasks/result` once someone waits for its states. */
  protected override onWait(): void {
    if (this.active) return;
    this.active = true;
    this.follow();
  }

  async answer(responses: JsonObject): Promise<string[]> {
    const sent = await this.input.answer(responses);
    if (sent.length > 0) this.inputChanged();
    return sent;
  }

  async cancel(): Promise<'cancelled' | 'terminal' | 'unknown'> {
    let res: JsonRpcResponse;
    try {
      res = await this.request('tasks/cancel', { taskId: this.id });
    } catch (e) {
      if (e instanceof UpstreamTaskLostError) return 'unknown';
      throw e;
    }
    if (!('error' in res)) {
      const task = readLegacyTask(res.result);
      this.settle({ ...this.current, ...(task ? snapshotOf(task) : {}), status: 'cancelled' });
      return 'cancelled';
    }
    // 2025-11-25 basic/utilities/tasks §Task Cancellation: -32602 for a terminal task and an unknown one alike.
    const status = await this.upstreamStatus();
    return status !== 'unknown' && isTerminal(status) ? 'terminal' : 'unknown';
  }

  protected onRelease(): void {
    this.stream?.abandon('task released');
    this.session.release(!isTerminal(this.current.status) && !this.lost);
  }

  /** One request about the task in its session, read to its response; a lost session loses the task. */
  private async request(method: string, params: JsonObject, signal?: AbortSignal): Promise<JsonRpcResponse> {
    try {
      return await drain(await this.session.call(method, params, signal));
    } catch (e) {
      if (e instanceof UpstreamTaskLostError) {
        this.lost ??= e;
        this.wake();
      }
      throw e;
    }
  }

  /**
   * Keeps an upstream `tasks/result` open until the task's payload arrives (asked again when it breaks, bounded).
   * `ended`: the upstream said the task is terminal, so its `tasks/result` answers at once (no input to take).
   */
  private follow(ended = false): void {
    if (!this.active && !ended) return;
    if (this.following || this.released || this.lost || isTerminal(this.current.status)) return;
    this.following = (async () => {
      for (let attempt = 0; attempt < MAX_RESULT_ATTEMPTS && !this.released && !this.lost && !isTerminal(this.current.status); attempt++) {
        let call: UpstreamCall;
        try {
          call = await this.session.call('tasks/result', { taskId: this.id }, this.stop.signal);
        } catch (e) {
          if (e instanceof UpstreamTaskLostError) {
            this.lost ??= e;
            this.wake();
            return;
          }
          continue;
        }
        // Dropped, never cancelled: notifications/cancelled on tasks/result would not be a task cancellation
        // (2025-11-25 basic/utilities/tasks §Task Cancellation), and the task runs on for others.
        if (this.released) {
          call.abandon('task released');
          return;
        }
        this.stream = call;
        try {
          if (await this.read(call)) return;
        } catch {
          // the stream broke before the task ended: ask again, since its input and payload come only there
        }
      }
    })().finally(() => {
      this.following = undefined;
    });
  }

  /** Reads one `tasks/result` stream; returns whether it delivered the outcome. */
  private async read(call: UpstreamCall): Promise<boolean> {
    for (;;) {
      const e = await call.next();
      switch (e.kind) {
        case 'request':
          await this.ask(call, e.message.id, e.message.method, isObject(e.message.params) ? e.message.params : undefined);
          break;
        case 'response':
          await this.outcome(e.message);
          return true;
        case 'failure':
          throw e.error;
        default:
          break; // progress and logs are not carried by tasks (tasks extension §Task Status Notifications)
      }
    }
  }

  /** A task-scoped request: kept under a minted key, or refused when the caller cannot answer it. */
  private async ask(call: UpstreamCall, id: RequestId, method: string, params: JsonObject | undefined): Promise<void> {
    if (!isInputMethod(method)) {
      await call
        .respond(id, { error: catalogError('GW_METHOD_NOT_SERVED', { args: [method] }) })
        .catch(logFailure(this.log, 'debug', 'refusal of a task request not delivered', { method }));
      return;
    }
    if (!isInputDeclared(method, params, this.caller.capabilities)) {
      // 2026-07-28 basic/patterns/mrtr §Server Requirements: a caller is never asked for a kind it did not declare.
      await call
        .respond(id, undeclaredInputAnswer(method))
        .catch(logFailure(this.log, 'debug', 'refusal of an undeclared input request not delivered', { method }));
      return;
    }
    this.input.hold(this.input.keys.mint(method, params), call, id, method, params);
    this.inputChanged();
  }

  /** The `tasks/result` response is the terminal state (2025-11-25 basic/utilities/tasks §Result Retrieval). */
  private async outcome(m: JsonRpcResponse): Promise<void> {
    this.input.clear();
    if (!('error' in m)) {
      // A tool error stays `completed` with `isError` (tasks extension §Task Status).
      this.settle({ ...this.current, status: 'completed', result: inlineResult(isObject(m.result) ? m.result : {}) });
      return;
    }
    // A cancelled task has no payload: its tasks/result answers with an error, and tasks/get tells why.
    const status = await this.upstreamStatus();
    if (this.lost) return;
    if (status === 'cancelled') {
      this.settle({ ...this.current, status: 'cancelled' });
      return;
    }
    const error = modernError(asErrorObject(m.error));
    this.settle({ ...this.current, status: 'failed', error, statusMessage: this.current.statusMessage ?? error.message });
  }

  protected async pollOnce(): Promise<void> {
    let res: JsonRpcResponse;
    try {
      res = await this.request('tasks/get', { taskId: this.id }, this.stop.signal);
    } catch {
      return; // unreachable for now: the state known stands, the next poll asks again (a lost task is marked)
    }
    if (isTerminal(this.current.status)) return;
    if ('error' in res) {
      if (res.error.code === ErrorCode.InvalidParams) this.loseTask(res.error);
      return;
    }
    const task = readLegacyTask(res.result);
    if (!task) return;
    if (task.status === 'cancelled') {
      this.settle({ ...this.current, ...snapshotOf(task) });
      return;
    }
    // A tasks/result given up on (broken too often) is asked again: input and payload come only there.
    this.follow(isTerminal(task.status));
    if (isTerminal(task.status)) {
      // The payload is being sent on tasks/result: wait for it there (bounded).
      await this.changeOrTimeout(PAYLOAD_WAIT_MS, this.stop.signal, () => isTerminal(this.current.status));
      return;
    }
    // In modern vocabulary an `input_required` task carries its requests (tasks extension §Task Polling), which
    // arrive only on tasks/result: `input_required` once they are known, and while they are outstanding.
    const next: UpstreamTaskSnapshot = { ...this.current, ...snapshotOf(task), ...this.inputView() };
    if (task.statusMessage === undefined) delete next.statusMessage;
    this.update(next);
  }

  /** Asks `tasks/get` for the upstream's own status (no merge); `unknown` when it does not know the task. */
  private async upstreamStatus(): Promise<UpstreamTaskSnapshot['status'] | 'unknown'> {
    try {
      const res = await this.request('tasks/get', { taskId: this.id }, this.stop.signal);
      if ('error' in res) {
        if (res.error.code === ErrorCode.InvalidParams) this.loseTask(res.error);
        return 'unknown';
      }
      return readLegacyTask(res.result)?.status ?? 'unknown';
    } catch {
      return 'unknown';
    }
  }

  /** The outstanding requests changed: the status follows them while the task runs. */
  private inputChanged(): void {
    const next: UpstreamTaskSnapshot = { ...this.current, ...this.inputView() };
    if (this.input.size === 0) delete next.inputRequests;
    this.update(next);
  }

  /** The status and requests the outstanding requests make (modern vocabulary). */
  private inputView(): Pick<UpstreamTaskSnapshot, 'status' | 'inputRequests'> {
    if (this.input.size === 0) return { status: 'working' };
    return { status: 'input_required', inputRequests: this.input.inputRequests() };
  }
}

function isResumed(task: LegacyTask | ResumedLegacyTask): task is ResumedLegacyTask {
  return !('taskId' in task) && 'resumed' in task;
}

/** The caller's pooled session, held for the task's life (the client's `call` finds it by the caller's credentials). */
function pooledSession(client: UpstreamClient, caller: UpstreamCaller): LegacyTaskSession {
  const release = client.retain(caller);
  return {
    sessionId: undefined,
    call: (method, params, signal) => client.call(caller, method, params, signal),
    release: () => release(),
  };
}

/** A legacy Task in the neutral vocabulary (2025-11-25 `ttl`/`pollInterval` → `ttlMs`/`pollIntervalMs`). */
function snapshotOf(task: LegacyTask): UpstreamTaskSnapshot {
  const { taskId: _id, ...s } = taskSnapshotFromLegacy(task);
  return s;
}
