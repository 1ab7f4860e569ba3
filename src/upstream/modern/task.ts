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
  isErrorResponse,
  isTerminal,
  logFailure,
  NO_LOG,
  readModernDetailedTask,
  taskSnapshotFromModern,
  type ModernCreateTaskResult,
  type ModernDetailedTask,
  type InputRequest,
  type JsonObject,
  type JsonRpcResponse,
  type TaskStatus,
} from '../../translate/index.js';
import { drain } from '../call-wrappers.js';
import type { UpstreamCaller, UpstreamClient, UpstreamTaskRef, UpstreamTaskSnapshot } from '../client.js';
import { PolledTask, type PolledTaskOptions } from '../polled-task.js';

/** While notifications come on a listen, polls are this many times rarer (a safety net: notifications are optional). */
const LISTENING_POLL_FACTOR = 10;
/** …and at least this far apart. */
const MIN_LISTENING_POLL_MS = 5_000;

/** A 2026-07-28 upstream task (see the module doc). */
export class ModernUpstreamTask extends PolledTask {
  /** Keys answered: never shown again, even while the upstream still lists them (tasks/update is eventually consistent). */
  private readonly answered = new Set<string>();
  /** The `subscriptions/listen` for this task: started by the first wait, ended with the task or on release. */
  private listening: 'no' | 'opening' | 'open' | 'ended' = 'no';

  /**
   * `created`: the upstream's CreateTaskResult, or a task known from a ref with its last known state (another instance
   * created it; a modern upstream is stateless, so its id and the caller's credentials reach it from anywhere).
   */
  constructor(
    private readonly client: UpstreamClient,
    private readonly caller: UpstreamCaller,
    created: ModernCreateTaskResult | { resumed: UpstreamTaskRef; created: UpstreamTaskSnapshot },
    opts: PolledTaskOptions = {},
  ) {
    super(...initial(created), opts);
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
      await this.poll().catch(logFailure(this.client.log ?? NO_LOG, 'debug', 'tasks/get after a cancel failed; the state known stands'));
      return this.current.status === 'completed' || this.current.status === 'failed' ? 'terminal' : 'cancelled';
    }
    if (res.error.code === ErrorCode.InvalidParams) return 'unknown';
    throw new Error(`upstream refused tasks/cancel: ${res.error.code} ${res.error.message}`);
  }

  protected onRelease(): void {
    // Nothing is held: every exchange and the listen end with the stop signal.
  }

  /**
   * Follows `notifications/tasks` for this task on a `subscriptions/listen` naming it (tasks extension §Task Status
   * Notifications), from the first wait on: each carries the DetailedTask, so polling slows down while it is open
   * (one poll when it opens catches what changed before).
   * Notifications are optional for a server, so a listen refused or ended leaves polling as it was.
   */
  protected override onWait(): void {
    if (this.listening !== 'no' || this.released) return;
    this.listening = 'opening';
    void (async () => {
      try {
        const listen = await this.client.listen(this.caller, { taskIds: [this.id] }, this.stop.signal);
        if (!listen.accepted.taskIds?.includes(this.id)) return;
        this.listening = 'open';
        // A notification comes with the next change: what changed before the listen opened is asked once.
        void this.poll().catch(logFailure(this.client.log ?? NO_LOG, 'debug', 'tasks/get as the listen opened failed; polling goes on'));
        for await (const n of listen.notifications) {
          if (n.method !== 'notifications/tasks') continue;
          const detailed = readModernDetailedTask(n.params);
          if (detailed?.taskId === this.id) this.apply(detailed);
          if (isTerminal(this.current.status)) return;
        }
      } catch {
        // refused or broken: polling goes on at the task's own interval
      } finally {
        this.listening = 'ended';
      }
    })();
  }

  protected override pollEveryMs(taskIntervalMs: number): number {
    return this.listening === 'open' ? Math.max(taskIntervalMs * LISTENING_POLL_FACTOR, MIN_LISTENING_POLL_MS) : taskIntervalMs;
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
    const detailed = readModernDetailedTask(res.result);
    if (detailed) this.apply(detailed); // a malformed answer leaves the state known as it is
  }

  /** A DetailedTask from tasks/get or a notification, merged into the state known. */
  private apply(detailed: ModernDetailedTask): void {
    const s = snapshotOf(detailed, this.answered);
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

/** The id and first state of a task created or resumed. */
function initial(created: ModernCreateTaskResult | { resumed: UpstreamTaskRef; created: UpstreamTaskSnapshot }): [string, UpstreamTaskSnapshot] {
  if ('resumed' in created && !('taskId' in created)) return [created.resumed.id, { ...created.created }];
  const c = created as ModernCreateTaskResult;
  return [c.taskId, snapshotOf(c, new Set())];
}

/**
 * A CreateTaskResult or DetailedTask in the neutral vocabulary (`_meta` of the creating result kept as `meta`). Keys
 * already answered are left out; an `input_required` task with no key left is `working` to the follower.
 */
function snapshotOf(task: ModernCreateTaskResult | ModernDetailedTask, answered: ReadonlySet<string>): UpstreamTaskSnapshot {
  const { taskId: _id, ...s } = taskSnapshotFromModern(task);
  if (s.status !== 'input_required') return s;
  const requests: Record<string, InputRequest> = {};
  for (const [key, req] of Object.entries(s.inputRequests ?? {})) if (!answered.has(key)) requests[key] = req;
  const view = inputView(s.status, requests);
  const out: UpstreamTaskSnapshot = { ...s, ...view };
  if (!view.inputRequests) delete out.inputRequests;
  return out;
}

/** The status and requests that the outstanding requests make, while the task asks. */
function inputView(status: TaskStatus, requests: Record<string, InputRequest>): Pick<UpstreamTaskSnapshot, 'status' | 'inputRequests'> {
  if (status !== 'input_required' && status !== 'working') return { status };
  if (Object.keys(requests).length === 0) return { status: 'working' };
  return { status: 'input_required', inputRequests: requests };
}
