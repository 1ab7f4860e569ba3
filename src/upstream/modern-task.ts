/**
 * A task a 2026-07-28 upstream runs through the `io.modelcontextprotocol/tasks` extension, behind the era-neutral
 * `UpstreamTask`. Everything about it is asked with `tasks/get` (the DetailedTask carries the result, the error or
 * the outstanding `inputRequests`, tasks extension §Task Polling), answered with `tasks/update` (§Task Update
 * Requests) and cancelled with the ack-only `tasks/cancel` (§Task Cancellation). Each of those requests declares the
 * extension and carries `Mcp-Name: <taskId>` (§Streamable HTTP: Routing Headers): both come from the modern client,
 * which builds every request's envelope and headers.
 */
import {
  ErrorCode,
  asErrorObject,
  isErrorResponse,
  isObject,
  isTerminal,
  type InputRequest,
  type JsonObject,
  type JsonRpcResponse,
  type TaskStatus,
} from '../translate/index.js';
import { drain, type UpstreamCaller, type UpstreamClient, type UpstreamTaskSnapshot } from './client.js';
import { PolledTask, type PolledTaskOptions } from './polled-task.js';

const STATUSES: ReadonlySet<string> = new Set<TaskStatus>(['working', 'input_required', 'completed', 'failed', 'cancelled']);

/** A 2026-07-28 upstream task (see the module doc). */
export class ModernUpstreamTask extends PolledTask {
  /** Keys answered: never shown again, even while the upstream still lists them (tasks/update is eventually consistent). */
  private readonly answered = new Set<string>();

  constructor(
    private readonly client: UpstreamClient,
    private readonly caller: UpstreamCaller,
    created: JsonObject,
    opts: PolledTaskOptions = {},
  ) {
    const id = typeof created.taskId === 'string' ? created.taskId : '';
    const snapshot = snapshotOf(created, new Set()) ?? { status: 'working' as const, ttlMs: null };
    // Strictly a CreateTaskResult has no `_meta` of the task's own, but the creating result's (e.g. a model hint) is kept.
    super(id, isObject(created._meta) ? { ...snapshot, meta: created._meta } : snapshot, opts);
  }

  async answer(responses: JsonObject): Promise<string[]> {
    const outstanding = this.current.inputRequests ?? {};
    const inputResponses: JsonObject = {};
    for (const key of Object.keys(outstanding)) {
      if (Object.hasOwn(responses, key) && !this.answered.has(key)) inputResponses[key] = responses[key];
    }
    const keys = Object.keys(inputResponses);
    if (keys.length === 0) return [];
    const res = await this.request('tasks/update', { taskId: this.id, inputResponses });
    if (isErrorResponse(res)) {
      if (res.error.code === ErrorCode.InvalidParams) this.loseTask(res.error);
      return [];
    }
    for (const key of keys) this.answered.add(key);
    // The ack may come before tasks/get reflects it: the keys leave the state known now.
    const left: Record<string, InputRequest> = {};
    for (const [key, req] of Object.entries(outstanding)) if (!this.answered.has(key)) left[key] = req;
    const view = inputView(this.current.status, left);
    const next: UpstreamTaskSnapshot = { ...this.current, ...view };
    if (!view.inputRequests) delete next.inputRequests;
    this.update(next);
    return keys;
  }

  /**
   * `tasks/cancel` is an ack (tasks extension §Task Cancellation): cooperative, so the task ends `cancelled` when
   * tasks/get says so, or may still complete.
   */
  async cancel(): Promise<'cancelled' | 'terminal' | 'unknown'> {
    if (isTerminal(this.current.status)) return 'terminal';
    const res = await this.request('tasks/cancel', { taskId: this.id });
    if (!isErrorResponse(res)) {
      // The ack is the same for a task that had already ended: tasks/get tells whether its outcome stands.
      await this.poll().catch(() => {});
      return this.current.status === 'completed' || this.current.status === 'failed' ? 'terminal' : 'cancelled';
    }
    if (res.error.code === ErrorCode.InvalidParams) return 'unknown';
    throw new Error(`upstream refused tasks/cancel: ${res.error.code} ${res.error.message}`);
  }

  protected onRelease(): void {
    // Nothing is held: every exchange ends with the stop signal.
  }

  protected async pollOnce(): Promise<void> {
    let res: JsonRpcResponse;
    try {
      res = await this.request('tasks/get', { taskId: this.id });
    } catch {
      return; // unreachable for now: the state known stands, the next poll asks again
    }
    if (isErrorResponse(res)) {
      // tasks extension §Protocol Errors: -32602 for an id the server does not know (expired, never existed).
      if (res.error.code === ErrorCode.InvalidParams) this.loseTask(res.error);
      return;
    }
    const s = snapshotOf(res.result, this.answered);
    if (!s) return;
    if (isTerminal(s.status)) this.settle({ ...this.current, ...s });
    else {
      const next: UpstreamTaskSnapshot = { ...this.current, ...s };
      if (!s.inputRequests) delete next.inputRequests;
      if (s.statusMessage === undefined) delete next.statusMessage;
      this.update(next);
    }
  }

  /** One request about the task, with the extension declared. */
  private async request(method: string, params: JsonObject): Promise<JsonRpcResponse> {
    return drain(await this.client.call(this.caller, method, params, this.stop.signal, { task: {} }));
  }
}

/**
 * A CreateTaskResult or DetailedTask in the neutral vocabulary; `undefined` when it is not one. Keys already
 * answered are left out; an `input_required` task with no key left is `working` to the follower.
 */
function snapshotOf(v: unknown, answered: ReadonlySet<string>): UpstreamTaskSnapshot | undefined {
  if (!isObject(v) || typeof v.status !== 'string' || !STATUSES.has(v.status)) return undefined;
  const status = v.status as TaskStatus;
  const s: UpstreamTaskSnapshot = { status, ttlMs: typeof v.ttlMs === 'number' ? v.ttlMs : null };
  if (typeof v.statusMessage === 'string') s.statusMessage = v.statusMessage;
  if (typeof v.createdAt === 'string') s.createdAt = v.createdAt;
  if (typeof v.lastUpdatedAt === 'string') s.lastUpdatedAt = v.lastUpdatedAt;
  if (typeof v.pollIntervalMs === 'number' && v.pollIntervalMs > 0) s.pollIntervalMs = v.pollIntervalMs;
  if (status === 'completed') {
    const result = isObject(v.result) ? v.result : {};
    s.result = typeof result.resultType === 'string' ? result : { ...result, resultType: 'complete' };
  }
  if (status === 'failed') s.error = asErrorObject(v.error);
  if (status === 'input_required') {
    const requests: Record<string, InputRequest> = {};
    for (const [key, entry] of Object.entries(isObject(v.inputRequests) ? v.inputRequests : {})) {
      if (answered.has(key) || !isObject(entry) || typeof entry.method !== 'string') continue;
      requests[key] = isObject(entry.params) ? { method: entry.method, params: entry.params } : { method: entry.method };
    }
    Object.assign(s, inputView(status, requests));
  }
  return s;
}

/** The status and requests that the outstanding requests make, while the task asks. */
function inputView(status: TaskStatus, requests: Record<string, InputRequest>): Pick<UpstreamTaskSnapshot, 'status' | 'inputRequests'> {
  if (status !== 'input_required' && status !== 'working') return { status };
  if (Object.keys(requests).length === 0) return { status: 'working' };
  return { status: 'input_required', inputRequests: requests };
}
