/**
 * Proxied legacy tasks (until the upstream seam follows them: see ProxiedTasks): the upstream runs the task (2025-11-25 basic/utilities/tasks) and the gateway serves it to a modern
 * client as a tasks-extension task. From creation on the gateway keeps an upstream `tasks/result` open: that is where a
 * legacy server sends the task's input requests and, once terminal, its payload (2025-11-25 basic/utilities/tasks
 * §Result Retrieval; tasks extension §Task Polling). `tasks/get` refreshes the record from upstream `tasks/get`.
 */
import {
  ErrorCode,
  asErrorObject,
  createTaskResultV2,
  isObject,
  isTerminal,
  modernError,
  outcomeFromPayload,
  pollIntervalMsFromLegacy,
  readTaskV1,
  relatedTaskMeta,
  ttlMsFromLegacy,
  type JsonObject,
  type JsonRpcErrorObject,
  type JsonRpcResponse,
  type ModernRequest,
  type TaskId,
  type TaskRecord,
} from '../translate/index.js';
import { requestOnce } from '../upstream/index.js';
import { Conversation } from './conversation.js';
import type { Outcome } from './mrtr-bridge.js';
import type { CallerContext, TaskPolicy, UpstreamRoute } from './route.js';
import type { TaskEvents, TaskOutcome } from './task-events.js';
import { clampTtl, mintTaskId, nowIso, TooManyTasksError, type TaskLimits } from './task-limits.js';

interface ProxiedLive {
  route: UpstreamRoute;
  caller: CallerContext;
  /** Ends the hold on the upstream state the task lives in (a legacy session). */
  release: () => void;
  /** The open upstream `tasks/result`, once started. */
  pump?: Conversation;
  /** Settles when the pump has stored the terminal outcome (or given up). */
  pumped: Promise<void>;
  lastPolled: number;
}

/** The proxied tasks of one gateway, and their open upstream waits. */
export class LegacyProxiedTasks {
  private readonly live = new Map<TaskId, ProxiedLive>();
  private closed = false;

  constructor(
    private readonly events: TaskEvents,
    private readonly limits: TaskLimits,
  ) {}

  /** Whether this lifecycle follows the task. */
  has(taskId: TaskId): boolean {
    return this.live.has(taskId);
  }

  /** Makes an upstream `CreateTaskResult` a gateway task and starts waiting on its `tasks/result`. */
  async adopt(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, policy: TaskPolicy, created: JsonObject): Promise<Outcome> {
    const v1 = readTaskV1(created);
    if (!v1) throw new Error('malformed CreateTaskResult from upstream');
    const release = route.upstream.retain(caller);
    // Not stored, so nobody could reach it: cancel the upstream task rather than orphan it.
    const orphan = () => {
      void requestOnce(route.upstream, caller, 'tasks/cancel', { taskId: v1.taskId }).catch(() => {});
      release();
    };
    if ((await this.events.store.activeCount(caller.principal)) >= this.limits.maxActivePerPrincipal) {
      orphan();
      throw new TooManyTasksError(this.limits.maxActivePerPrincipal);
    }
    const ttlMs = clampTtl(ttlMsFromLegacy(v1.ttl), policy, this.limits.maxTtlMs);
    const now = nowIso();
    const record: TaskRecord = {
      taskId: mintTaskId(),
      principal: caller.principal,
      upstream: route.name,
      kind: 'proxied',
      origin: 'modern',
      upstreamTaskId: v1.taskId,
      tool: typeof req.params.name === 'string' ? req.params.name : '',
      status: v1.status === 'input_required' ? 'working' : v1.status,
      ...(v1.statusMessage !== undefined ? { statusMessage: v1.statusMessage } : {}),
      createdAt: v1.createdAt ?? now,
      lastUpdatedAt: v1.lastUpdatedAt ?? now,
      ttlMs,
      pollIntervalMs: pollIntervalMsFromLegacy(v1.pollInterval) ?? policy.pollIntervalMs ?? this.limits.defaultPollIntervalMs,
      version: 0,
    };
    try {
      await this.events.store.create(record, ttlMs);
    } catch (e) {
      orphan();
      throw e;
    }
    let settle!: () => void;
    const live: ProxiedLive = { route, caller, release, pumped: new Promise<void>((r) => (settle = r)), lastPolled: Date.now() };
    this.live.set(record.taskId, live);
    void this.pump(record.taskId, v1.taskId, live).finally(settle);
    return { kind: 'result', result: createTaskResultV2(record) };
  }

  /** The open upstream `tasks/result` of a live task, for `tasks/update`. */
  conversation(taskId: TaskId): Conversation | undefined {
    return this.live.get(taskId)?.pump;
  }

  /** Refreshes a task from upstream `tasks/get` (at most once per half poll interval). */
  async refresh(record: TaskRecord): Promise<TaskRecord> {
    const live = this.live.get(record.taskId);
    if (!live || isTerminal(record.status)) return record;
    const minGap = Math.floor((record.pollIntervalMs ?? this.limits.defaultPollIntervalMs) / 2);
    if (Date.now() - live.lastPolled < minGap) return record;
    live.lastPolled = Date.now();
    let res: JsonRpcResponse;
    try {
      res = await requestOnce(live.route.upstream, live.caller, 'tasks/get', { taskId: record.upstreamTaskId });
    } catch {
      return record; // the upstream is unreachable now: report what is known
    }
    if ('error' in res) {
      const error: JsonRpcErrorObject = { code: ErrorCode.InternalError, message: 'The upstream no longer knows this task' };
      return (await this.finish(record.taskId, { status: 'failed', error }, error.message)) ?? record;
    }
    const v1 = readTaskV1(res.result);
    if (!v1) return record;
    if (isTerminal(v1.status)) {
      if (v1.status === 'cancelled') return (await this.finish(record.taskId, { status: 'cancelled' })) ?? record;
      // The payload arrives on the open tasks/result; wait for it briefly (it is being sent).
      await Promise.race([live.pumped, new Promise((r) => setTimeout(r, 5_000).unref())]);
      return (await this.events.store.get(record.taskId)) ?? record;
    }
    return (
      (await this.events.change(record.taskId, (t) => {
        if (isTerminal(t.status)) return undefined;
        // Report input_required only once an input request is actually known (tasks extension §Task Polling: an
        // `input_required` task carries `inputRequests`).
        const status = v1.status === 'input_required' && !t.inputRequests ? 'working' : v1.status === 'working' && t.inputRequests ? 'input_required' : v1.status;
        if (status === t.status && v1.statusMessage === t.statusMessage) return undefined;
        return { ...t, status, ...(v1.statusMessage !== undefined ? { statusMessage: v1.statusMessage } : {}), lastUpdatedAt: nowIso() };
      })) ?? record
    );
  }

  /**
   * Cancels a task upstream and locally; a task that already ended upstream keeps its outcome (2025-11-25
   * basic/utilities/tasks §Task Cancellation).
   */
  async cancel(record: TaskRecord): Promise<void> {
    const live = this.live.get(record.taskId);
    if (live) {
      let refused = false;
      try {
        const res = await requestOnce(live.route.upstream, live.caller, 'tasks/cancel', { taskId: record.upstreamTaskId });
        refused = 'error' in res;
      } catch {
        // cooperative (tasks extension §Cancellation): the local record still ends cancelled
      }
      if (refused) {
        const status = await this.upstreamStatus(live, record.taskId);
        if (status === 'completed' || status === 'failed') {
          await Promise.race([live.pumped, new Promise((r) => setTimeout(r, 5_000).unref())]);
          return;
        }
      }
      live.pump?.abandon('task cancelled');
    }
    await this.finish(record.taskId, { status: 'cancelled' }, 'Cancelled by the client');
  }

  /** Drops the waits of tasks whose record has expired: nobody can ask for them any more. */
  async sweep(): Promise<void> {
    for (const id of [...this.live.keys()]) {
      if (!(await this.events.store.get(id))) this.drop(id, 'task expired');
    }
  }

  /** Drops every wait (on shutdown; the upstream tasks run on). */
  close(): void {
    this.closed = true;
    for (const id of [...this.live.keys()]) this.drop(id, 'gateway shutting down');
  }

  private drop(taskId: TaskId, reason: string): void {
    const live = this.live.get(taskId);
    if (!live) return;
    this.live.delete(taskId);
    live.pump?.abandon(reason);
    live.release();
  }

  /** A terminal task needs its upstream state no more. */
  private finish(taskId: TaskId, outcome: TaskOutcome, statusMessage?: string): Promise<TaskRecord | undefined> {
    const live = this.live.get(taskId);
    if (live) {
      live.release();
      this.live.delete(taskId);
    }
    return this.events.finish(taskId, outcome, statusMessage);
  }

  /**
   * Keeps an upstream tasks/result open: input requests arrive on it, and finally the payload (2025-11-25
   * basic/utilities/tasks §Result Retrieval).
   */
  private async pump(taskId: TaskId, upstreamTaskId: string, live: ProxiedLive): Promise<void> {
    for (let attempt = 0; attempt < 3 && !this.closed; attempt++) {
      let conv: Conversation;
      try {
        conv = new Conversation(await live.route.upstream.call(live.caller, 'tasks/result', { taskId: upstreamTaskId }), relatedTaskMeta(upstreamTaskId));
      } catch {
        continue;
      }
      live.pump = conv;
      try {
        for (;;) {
          const r = await conv.pump({
            signal: new AbortController().signal,
            capabilities: live.caller.capabilities,
            inputAllowed: true,
            onUndeclared: 'refuse',
            gatherMs: this.limits.gatherMs,
            notify: () => {},
          });
          if (r.kind === 'input') {
            await this.events.change(taskId, (t) => (isTerminal(t.status) ? undefined : { ...t, status: 'input_required', inputRequests: conv.inputRequests(), lastUpdatedAt: nowIso() }));
            continue;
          }
          if (r.kind !== 'response') return;
          await this.settle(taskId, live, r.message);
          return;
        }
      } catch {
        // the stream broke before the task ended: ask again, since the task's input and payload come only on that
        // stream
        const current = await this.events.store.get(taskId);
        if (!current || isTerminal(current.status)) return;
      }
    }
  }

  /** Stores a task's terminal outcome from its tasks/result response. */
  private async settle(taskId: TaskId, live: ProxiedLive, m: JsonRpcResponse): Promise<void> {
    if ('error' in m) {
      // A cancelled task has no payload; its status comes from tasks/get.
      if ((await this.upstreamStatus(live, taskId)) === 'cancelled') {
        await this.finish(taskId, { status: 'cancelled' });
        return;
      }
      const error = modernError(asErrorObject(m.error));
      await this.finish(taskId, { status: 'failed', error }, error.message);
      return;
    }
    await this.finish(taskId, outcomeFromPayload({ result: isObject(m.result) ? m.result : {} }));
  }

  private async upstreamStatus(live: ProxiedLive, taskId: TaskId): Promise<TaskRecord['status'] | 'unknown'> {
    const record = await this.events.store.get(taskId);
    if (!record?.upstreamTaskId) return 'unknown';
    try {
      const res = await requestOnce(live.route.upstream, live.caller, 'tasks/get', { taskId: record.upstreamTaskId });
      if ('error' in res) return 'unknown';
      return readTaskV1(res.result)?.status ?? 'unknown';
    } catch {
      return 'unknown';
    }
  }
}
