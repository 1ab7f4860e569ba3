/**
 * The task service: `tasks/get`, `tasks/update` and `tasks/cancel` (tasks extension §Task Polling, §Input,
 * §Cancellation) for the tasks this gateway created, and task subscriptions for listen streams.
 */
import {
  logFailure,
  TASKS_REQUIRED_CAPABILITIES,
  checkInputAnswers,
  declaresTasks,
  modernDetailedTask,
  isObject,
  isTerminal,
  type JsonObject,
  type ModernRequest,
  type TaskId,
  type TaskRecord,
} from '../../translate/index.js';
import { MissingCapabilityError } from '../calls/conversation.js';
import type { OwnedTasks } from '../kinds/owned-tasks.js';
import type { ProxiedTasks, TaskAccess } from '../kinds/proxied-tasks.js';
import { servesUpstream, type CallerContext, type UpstreamRoute } from '../route.js';
import type { TaskEvents } from './task-events.js';
import { UnknownTaskError } from './task-limits.js';

/** Serves the task methods over every lifecycle, for both faces. */
export class TaskService {
  constructor(
    private readonly events: TaskEvents,
    private readonly owned: OwnedTasks,
    private readonly proxied: ProxiedTasks,
    /** The configured poll interval (read per subscription: a reload may change it). */
    private readonly pollIntervalMs: () => number,
    /** A record as a read shows it (its poll interval suggested now). */
    private readonly shown: (route: UpstreamRoute, record: TaskRecord) => TaskRecord = (_r, t) => t,
    /** The poll limit: rejects a status poll of the caller's own task that comes too soon (`GW_POLL_TOO_FAST`). */
    private readonly pollChecked: (route: UpstreamRoute, record: TaskRecord) => Promise<void> = async () => {},
  ) {}

  /** tasks/get → the DetailedTask (tasks extension §Task Polling), after the poll limit. */
  async get(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    const record = await this.own(route, req, caller);
    await this.pollChecked(route, record);
    return modernDetailedTask(this.shown(route, await this.refresh(record, { route, caller })));
  }

  /** tasks/update → answers outstanding input requests; the ack follows the record change (read-your-writes). */
  async update(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    const record = await this.own(route, req, caller);
    await this.answer(record, isObject(req.inputResponses) ? req.inputResponses : {}, { route, caller });
    return { resultType: 'complete' };
  }

  /** tasks/cancel → an empty ack; idempotent on terminal tasks (conformance). */
  async cancel(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<JsonObject> {
    const record = await this.own(route, req, caller);
    if (isTerminal(record.status)) return { resultType: 'complete' };
    if (record.kind === 'owned') await this.owned.cancel(record);
    else await this.proxied.cancel(record, { route, caller });
    return { resultType: 'complete' };
  }

  /**
   * The caller's task by id, for either face: `UnknownTaskError` for an unknown, expired or foreign one (another
   * principal's, another route's, or, for a caller without credentials, another session's).
   */
  async lookup(route: UpstreamRoute, taskId: unknown, caller: CallerContext): Promise<TaskRecord> {
    if (typeof taskId !== 'string') throw new UnknownTaskError();
    const record = await this.events.store.get(taskId as TaskId);
    // A foreign task is indistinguishable from an unknown one (tasks extension §Security Considerations;
    // 2025-11-25 basic/utilities/tasks §Security Considerations).
    if (!record || record.principal !== caller.principal || !servesUpstream(route, record.upstream)) throw new UnknownTaskError();
    if (caller.session !== undefined && record.session !== undefined && record.session !== caller.session) throw new UnknownTaskError();
    return record;
  }

  /**
   * The record, refreshed from the upstream when the upstream runs the task. `access`: the route and caller of the
   * request, so that an instance that does not follow the task reaches the upstream on the caller's behalf.
   */
  refresh(record: TaskRecord, access: TaskAccess & { force?: boolean } = {}): Promise<TaskRecord> {
    const { force = false, ...rest } = access;
    return record.kind === 'owned' ? Promise.resolve(record) : this.proxied.refresh(record, force, rest);
  }

  /** Answers a task's outstanding input requests by key (on the caller's behalf, see `refresh`); returns the keys answered. */
  async answer(record: TaskRecord, responses: JsonObject, access: TaskAccess = {}): Promise<string[]> {
    // Each answer to an outstanding request must fit it before any goes upstream (-32602, the request stays open);
    // keys not outstanding are ignored (tasks extension §Task Update Requests).
    const outstanding = record.inputRequests ?? {};
    checkInputAnswers(responses, (key) => (Object.hasOwn(outstanding, key) ? outstanding[key] : 'answered'), 'ignore');
    const answered = record.kind === 'owned' ? await this.owned.answer(record, responses) : await this.proxied.answer(record, responses, access);
    this.events.answered(record, answered);
    return answered;
  }

  /**
   * Subscribes to task changes for a listen stream: returns the ids accepted (existing tasks of this principal on
   * this route) and a function that ends the subscription.
   */
  async subscribe(
    route: UpstreamRoute,
    principal: string,
    taskIds: string[],
    listener: (t: JsonObject) => void,
  ): Promise<{ accepted: string[]; stop: () => void }> {
    const accepted: string[] = [];
    for (const id of taskIds) {
      const r = await this.events.store.get(id as TaskId);
      if (r && r.principal === principal && servesUpstream(route, r.upstream)) accepted.push(id);
    }
    const wanted = new Set(accepted);
    const off = this.events.on((t) => {
      if (wanted.has(t.taskId)) listener(modernDetailedTask(t));
    });
    // Proxied tasks change upstream: poll them while someone listens.
    const timer = setInterval(() => {
      for (const id of wanted) {
        void this.events.store
          .get(id as TaskId)
          .then((r) => (r ? this.refresh(r, { route }) : undefined))
          .catch(logFailure(this.events.log, 'debug', 'listened task not refreshed; the next poll asks again', { taskId: id }));
      }
    }, this.pollIntervalMs());
    timer.unref();
    return {
      accepted,
      stop: () => {
        clearInterval(timer);
        off();
      },
    };
  }

  private async own(route: UpstreamRoute, req: ModernRequest, caller: CallerContext): Promise<TaskRecord> {
    // Tasks extension §Protocol Errors: the capability is checked before the id is looked up.
    if (!declaresTasks(caller.capabilities)) throw new MissingCapabilityError(TASKS_REQUIRED_CAPABILITIES, req.method);
    return this.lookup(route, req.params.taskId, caller);
  }
}
