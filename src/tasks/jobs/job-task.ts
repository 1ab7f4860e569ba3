/**
 * A hand-rolled async job seen as an upstream task (docs/jobs.md): the era-neutral `UpstreamTask` over the server's
 * own tools, so that everything that follows, serves, hides and takes over an upstream task (kinds/proxied-tasks.ts, the
 * MRTR bridge, `taskAsCall`) does so for a job too. A poll is one call of the rule's status tool (shared by every
 * reader and at most one per interval, `PolledTask`), the outcome comes from the result tool or the final status, a
 * cancel calls the cancel tool. A job asks no input.
 *
 * `startAsJob` turns the start tool's call into a call that ends with the job as its `task` event, so that a job is
 * created exactly where an upstream task would be.
 */
import {
  catalogAnswer,
  GatewayError,
  isErrorResponse,
  isObject,
  isTerminal,
  logFailure,
  NO_LOG,
  type JsonObject,
  type JsonRpcResponse,
  type LayerLogger,
  type RequestId,
  type JsonRpcErrorObject,
  catalogError,
} from '../../translate/index.js';
import {
  isFinal,
  PolledTask,
  queuedFinal,
  requestOnce,
  type CallEvent,
  type PolledTaskOptions,
  type UpstreamCall,
  type UpstreamCaller,
  type UpstreamClient,
  type UpstreamTask,
  type UpstreamTaskSnapshot,
} from '../../upstream/index.js';
import { contentText, isToolError, withStructuredContent, type JobRule, type JobToolCall } from './job-rule.js';

/** Status-tool errors in a row (a JSON-RPC error or `isError`) after which the job is reported failed. */
const STATUS_ERRORS = 3;

/** How a job task is followed. */
export interface JobTaskOptions extends PolledTaskOptions {
  /** The poll interval to keep now (the poll advisor's suggestion for this task); absent: the task's own. */
  intervalMs?: () => number | undefined;
  log?: LayerLogger;
}

/** A job as an upstream task (see the module doc). */
export class JobTask extends PolledTask {
  private statusErrors = 0;
  private readonly log: LayerLogger;

  constructor(
    private readonly client: UpstreamClient,
    private readonly caller: UpstreamCaller,
    readonly rule: JobRule,
    readonly handle: unknown,
    created: UpstreamTaskSnapshot,
    private readonly opts: JobTaskOptions = {},
  ) {
    super(typeof handle === 'string' ? handle : JSON.stringify(handle), created, opts);
    this.log = opts.log ?? NO_LOG;
  }

  /** What a record keeps to drive the job from any instance. */
  get job(): { handle: unknown; rule: JsonObject } {
    return { handle: this.handle, rule: this.rule.spec as unknown as JsonObject };
  }

  /** A job asks no input. */
  async answer(): Promise<string[]> {
    return [];
  }

  /**
   * Calls the cancel tool (none configured: the job runs on upstream, and the task stops being followed). `terminal`
   * when the status read right after says the job had already ended.
   */
  async cancel(): Promise<'cancelled' | 'terminal' | 'unknown'> {
    if (isTerminal(this.current.status)) return 'terminal';
    const call = this.rule.spec.cancel;
    if (!call) return 'cancelled';
    const res = await this.callTool(call);
    await this.poll().catch(logFailure(this.log, 'debug', 'job status after its cancel not read; the state known stands'));
    if (this.current.status === 'completed' || this.current.status === 'failed') return 'terminal';
    if (isErrorResponse(res) || (isObject(res.result) && isToolError(res.result))) {
      throw new Error(`the job's cancel tool ${call.tool} refused: ${failureText(res)}`);
    }
    return 'cancelled';
  }

  protected onRelease(): void {
    // Nothing is held: each call of the job's tools ends with the stop signal.
  }

  protected override intervalMs(): number {
    return Math.max(this.minPollMs, this.opts.intervalMs?.() ?? super.intervalMs());
  }

  /** One call of the status tool, its state applied (and the result tool called once it completed). */
  protected async pollOnce(): Promise<void> {
    let res: JsonRpcResponse;
    try {
      res = await this.callTool(this.rule.spec.status);
    } catch {
      return; // the upstream is unreachable for now: the state known stands, the next poll asks again
    }
    if (isErrorResponse(res) || !isObject(res.result) || isToolError(res.result)) {
      // A status tool that keeps failing (an unknown handle, a broken server) ends the task rather than polling forever.
      if (++this.statusErrors >= STATUS_ERRORS)
        this.fail(`the job's status tool ${this.rule.spec.status.tool} failed ${STATUS_ERRORS} times in a row: ${failureText(res)}`);
      return;
    }
    this.statusErrors = 0;
    const result = res.result;
    const state = this.rule.read(result);
    const now = new Date().toISOString();
    switch (state.status) {
      case 'unknown': {
        const error = catalogAnswer('GW_JOB_UNKNOWN_STATE', { args: [this.rule.tool, state.read] }).error;
        this.settle({ ...this.current, status: 'failed', error, statusMessage: error.message, lastUpdatedAt: now });
        return;
      }
      case 'working': {
        const next: UpstreamTaskSnapshot = { ...this.current, status: 'working', lastUpdatedAt: now };
        if (state.message !== undefined) next.statusMessage = state.message;
        else delete next.statusMessage;
        this.update(next);
        return;
      }
      case 'failed':
        this.fail(state.message);
        return;
      case 'cancelled':
        this.settle(this.ended('cancelled', state.message, now));
        return;
      case 'completed': {
        const outcome = this.rule.spec.result ? await this.resultOf(this.rule.spec.result) : { result };
        if ('error' in outcome) this.fail(outcome.error);
        else this.settle({ ...this.ended('completed', state.message, now), result: withStructuredContent(outcome.result) });
        return;
      }
    }
  }

  /** The result tool's answer: its result, or why there is none. */
  private async resultOf(call: JobToolCall): Promise<{ result: JsonObject } | { error: string }> {
    let res: JsonRpcResponse;
    try {
      res = await this.callTool(call);
    } catch (e) {
      return { error: `the job's result tool ${call.tool} could not be reached: ${e instanceof Error ? e.message : String(e)}` };
    }
    if (isErrorResponse(res) || !isObject(res.result)) return { error: `the job's result tool ${call.tool} failed: ${failureText(res)}` };
    return { result: res.result };
  }

  /**
   * The snapshot of a job that ended `status`: its message is the final status's (a number read as its text), or none —
   * never the progress of an earlier poll, which would describe a job still running.
   */
  private ended(status: 'completed' | 'cancelled', message: string | undefined, now: string): UpstreamTaskSnapshot {
    const { statusMessage: _progress, ...rest } = this.current;
    return { ...rest, status, ...(message !== undefined ? { statusMessage: message } : {}), lastUpdatedAt: now };
  }

  private fail(message: string): void {
    const error = catalogError('GW_TASK_FAILED_BECAUSE', { args: [message] });
    this.settle({ ...this.current, status: 'failed', error, statusMessage: message, lastUpdatedAt: new Date().toISOString() });
  }

  /** One call of one of the job's tools, for the caller the job runs for. */
  private callTool(call: JobToolCall): Promise<JsonRpcResponse> {
    const params = { name: call.tool, arguments: this.rule.argumentsFor(call, this.handle) };
    return requestOnce(this.client, this.caller, 'tools/call', params, this.stop.signal);
  }
}

/** Why a tool call failed: the JSON-RPC error's message or the tool error's text. */
function failureText(res: JsonRpcResponse): string {
  if (isErrorResponse(res)) return res.error.message;
  return (isObject(res.result) && contentText(res.result)) || 'no reason given';
}

/**
 * The start tool's call, ending with the job as its `task` event once the tool answers with a handle. A JSON-RPC
 * error or a tool error (`isError`) is the call's answer as it is (nothing started); an answer without a handle
 * fails the call with `GW_JOB_NO_HANDLE` naming the rule (never a task that polls forever).
 */
export function startAsJob(call: UpstreamCall, rule: JobRule, makeTask: (handle: unknown) => UpstreamTask, log: LayerLogger = NO_LOG): UpstreamCall {
  return new JobStartCall(call, rule, makeTask, log);
}

class JobStartCall implements UpstreamCall {
  private final: CallEvent | undefined;

  constructor(
    private readonly inner: UpstreamCall,
    private readonly rule: JobRule,
    private readonly makeTask: (handle: unknown) => UpstreamTask,
    private readonly log: LayerLogger,
  ) {}

  get finished(): boolean {
    return this.final !== undefined || this.inner.finished;
  }

  get pending(): number {
    return this.final ? 0 : this.inner.pending;
  }

  async next(): Promise<CallEvent> {
    return (await this.nextUnless(undefined, undefined)) as CallEvent;
  }

  async nextUnless(ms: number | undefined, signal: AbortSignal | undefined): Promise<CallEvent | undefined> {
    if (this.final) return this.final;
    const e = await this.inner.nextUnless(ms, signal);
    if (!e) return e;
    if (this.final) return this.final;
    if (e.kind === 'response') this.final = this.started(e.message);
    else if (isFinal(e)) this.final = e;
    return this.final ?? e;
  }

  respond(id: RequestId, payload: { result: JsonObject } | { error: JsonRpcErrorObject }): Promise<void> {
    return this.inner.respond(id, payload);
  }

  cancel(reason: string): void {
    this.stop(reason, () => this.inner.cancel(reason));
  }

  abandon(reason: string): void {
    this.stop(reason, () => this.inner.abandon(reason));
  }

  /** What the start tool's answer makes: the job's task event, or the answer itself. */
  private started(m: JsonRpcResponse): CallEvent {
    if (isErrorResponse(m) || !isObject(m.result) || isToolError(m.result)) return { kind: 'response', message: m };
    const handle = this.rule.handle(m.result);
    if (handle === undefined) return { kind: 'failure', error: new GatewayError('GW_JOB_NO_HANDLE', { args: [this.rule.tool, this.rule.spec.id] }) };
    return { kind: 'task', task: this.makeTask(handle) };
  }

  /**
   * Stops the call. A start tool that answered already started a job nobody will reach: it is cancelled with the
   * rule's cancel tool.
   */
  private stop(reason: string, stopInner: () => void): void {
    if (this.final) return;
    const stopped: CallEvent = { kind: 'failure', error: new Error(`cancelled: ${reason}`) };
    this.final = stopped;
    if (!this.inner.finished) return stopInner();
    void (async () => {
      const e = await queuedFinal(this.inner);
      if (e?.kind !== 'response') return;
      const ended = this.started(e.message);
      if (ended.kind === 'task') await ended.task.cancel().finally(() => ended.task.release());
    })().catch(logFailure(this.log, 'debug', 'a job whose start was cancelled was not cancelled upstream'));
  }
}
