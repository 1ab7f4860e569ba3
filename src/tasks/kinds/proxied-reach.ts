/**
 * How an instance reaches a proxied task it does not follow (another instance created it, or its follower is gone):
 * the route by name and era, the caller sealed into the record, a transient `UpstreamTask` resumed from the record's
 * ref, answers forwarded over the instance bus to the follower, and the polls such reads made.
 */
import { isObject, type JsonObject, type TaskId, type TaskRecord } from '../../translate/index.js';
import { UpstreamBusyError, type UpstreamCaller, type UpstreamTask, type UpstreamTaskRef, type UpstreamTaskSnapshot } from '../../upstream/index.js';
import { InstanceGoneError, type InstanceBus } from '../instances/instance-bus.js';
import type { CallerContext, UpstreamRoute } from '../route.js';
import type { Sealer } from '../instances/sealing.js';

/** Where a request on a task came from: the route and, when there is one, the caller that asked. */
export interface TaskAccess {
  route?: UpstreamRoute;
  caller?: CallerContext;
}

/** Who this instance is among those sharing the store, and how it resumes a job. */
export interface ProxiedReachOptions {
  /** This instance's id (the `owner` of the tasks it follows). */
  instanceId: string;
  /** Seals the caller into the record, for an instance that acts on the task without a request (a takeover). */
  sealer: Sealer;
  /** Asks the follower of a task to send answers to its upstream (absent: one instance, nobody to ask). */
  bus?: InstanceBus;
  /** A job task resumed from its record (see `ProxiedTasksOptions.jobTask`). */
  jobTask?: (record: TaskRecord, route: UpstreamRoute, caller: UpstreamCaller, snapshot: UpstreamTaskSnapshot) => UpstreamTask | undefined;
}

/** Purpose of the sealed caller in a proxied task's record (sealed values open only for their purpose). */
const SEAL_PURPOSE = 'proxied-task';

/** Bus request kind: answers for a task's upstream input, sent to the instance that follows it. */
const ANSWER_KIND = 'proxied.answer';

/** Most tasks whose last upstream poll by a non-following instance is remembered (to keep polls one per interval). */
const MAX_REMOTE_POLLS = 10_000;

/** What one instance needs to act on the proxied tasks it does not follow. */
export class ProxiedReach {
  /**
   * Routes seen, by name and the era their client speaks (one upstream is reached by a client of each era): a takeover
   * starts from a record, which names its route, and the sealed value says which era's client created the task.
   */
  private readonly routes = new Map<string, UpstreamRoute>();
  /** When this instance last polled the upstream for a task it does not follow. */
  private readonly remotePolled = new Map<TaskId, number>();

  constructor(private readonly o: ProxiedReachOptions) {}

  /** Serves the answers other instances forward to this one (the follower of the task). */
  serveAnswers(answer: (taskId: TaskId, responses: JsonObject) => Promise<string[]>): void {
    this.o.bus?.handle(ANSWER_KIND, async (payload) => {
      const taskId = typeof payload.taskId === 'string' ? (payload.taskId as TaskId) : undefined;
      const responses = isObject(payload.responses) ? payload.responses : {};
      return { sent: taskId ? await answer(taskId, responses) : [] };
    });
  }

  /** Makes a route known for takeovers (routes are otherwise seen only with requests). */
  knowRoute(route: UpstreamRoute): void {
    this.routes.set(routeKey(route.name, route.upstream.era), route);
  }

  /** The sealed value a record keeps: what another instance needs to act for the caller without a request of its own. */
  seal(caller: CallerContext, route: UpstreamRoute): string {
    return this.o.sealer.seal(SEAL_PURPOSE, { caller: upstreamCallerOf(caller), era: route.upstream.era });
  }

  /** The route of a task: the request's, unless another era's client created the task and that route is known. */
  routeOf(record: TaskRecord, given: TaskAccess): UpstreamRoute | undefined {
    // A federated endpoint's request reaches its member's task over the member's own route (docs/federation.md).
    const access = given.route?.federation ? { ...given, route: undefined } : given;
    if (access.route) this.knowRoute(access.route);
    const era = this.sealedEra(record);
    if (access.route && (era === undefined || access.route.upstream.era === era)) return access.route;
    if (era !== undefined) return this.routes.get(routeKey(record.upstream, era)) ?? access.route;
    return access.route ?? this.routes.get(routeKey(record.upstream, record.upstreamSession !== undefined ? 'legacy' : 'modern'));
  }

  /** The era of the client that created the task, as sealed at adoption. */
  private sealedEra(record: TaskRecord): 'legacy' | 'modern' | undefined {
    const era = record.sealed !== undefined ? this.o.sealer.open(SEAL_PURPOSE, record.sealed)?.era : undefined;
    return era === 'legacy' || era === 'modern' ? era : undefined;
  }

  /**
   * A transient handle on a task this instance does not follow, resumed from the record's ref on behalf of the caller
   * that asked (the same principal, so its credentials work upstream) or the sealed one; release it after one use.
   */
  transient(record: TaskRecord, route: UpstreamRoute, caller?: UpstreamCaller): UpstreamTask | undefined {
    if (record.upstreamTaskId === undefined) return undefined;
    const who = caller ? upstreamCallerOf(caller) : this.sealedCaller(record);
    if (!who) return undefined;
    const ref: UpstreamTaskRef =
      record.upstreamSession !== undefined ? { id: record.upstreamTaskId, session: record.upstreamSession } : { id: record.upstreamTaskId };
    try {
      if (record.job) return this.o.jobTask?.(record, route, who, snapshotOf(record));
      return route.upstream.resumeTask(who, ref, snapshotOf(record));
    } catch {
      return undefined; // no room for another joined session now: report what the record knows
    }
  }

  /** The caller sealed into the record at adoption, or `undefined` (none, or sealed with another secret). */
  sealedCaller(record: TaskRecord): UpstreamCaller | undefined {
    if (record.sealed === undefined) return undefined;
    const opened = this.o.sealer.open(SEAL_PURPOSE, record.sealed);
    const c = opened && isObject(opened.caller) ? opened.caller : undefined;
    if (!c || !isObject(c.capabilities)) return undefined;
    return {
      capabilities: c.capabilities,
      ...(typeof c.authorization === 'string' ? { authorization: c.authorization } : {}),
      ...(isObject(c.clientInfo) ? { clientInfo: c.clientInfo } : {}),
      ...(typeof c.logLevel === 'string' ? { logLevel: c.logLevel } : {}),
    };
  }

  /**
   * Answers for a legacy upstream's questions, sent by the instance that follows the task (it holds the stream they
   * came on). Resolves with the keys it sent; nothing when no instance follows the task now.
   */
  async forwardAnswer(record: TaskRecord, responses: JsonObject): Promise<string[]> {
    const bus = this.o.bus;
    if (!bus || record.owner === undefined || record.owner === this.o.instanceId) return [];
    let reply: JsonObject;
    try {
      reply = await bus.request(record.owner, ANSWER_KIND, { taskId: record.taskId, responses });
    } catch (e) {
      // Transient: within the lease time another instance takes the task over, and says then what became of its input.
      if (e instanceof InstanceGoneError)
        throw new UpstreamBusyError('the gateway instance following this task is gone; another instance takes it over shortly', { cause: e });
      throw e;
    }
    return Array.isArray(reply.sent) ? reply.sent.filter((k): k is string => typeof k === 'string') : [];
  }

  /** Whether this instance polled the upstream for a task it does not follow less than `minGap` ms ago. */
  polledWithin(taskId: TaskId, minGap: number): boolean {
    const last = this.remotePolled.get(taskId);
    return last !== undefined && Date.now() - last < minGap;
  }

  /** Remembers a poll of a task this instance does not follow (the oldest forgotten past the bound). */
  notePoll(taskId: TaskId): void {
    this.remotePolled.delete(taskId);
    if (this.remotePolled.size >= MAX_REMOTE_POLLS) {
      const oldest = this.remotePolled.keys().next();
      if (!oldest.done) this.remotePolled.delete(oldest.value);
    }
    this.remotePolled.set(taskId, Date.now());
  }

  /** Lets go of the polls remembered from before `cutoff` (tasks no longer polled). */
  forgetPollsBefore(cutoff: number): void {
    for (const [id, at] of this.remotePolled) if (at < cutoff) this.remotePolled.delete(id);
  }
}

function routeKey(name: string, era: string): string {
  return `${era}:${name}`;
}

/** What an upstream sees of a caller: its credentials, capabilities, identity and log level (no principal or session). */
function upstreamCallerOf(c: UpstreamCaller): UpstreamCaller {
  return {
    capabilities: c.capabilities,
    ...(c.authorization !== undefined ? { authorization: c.authorization } : {}),
    ...(c.clientInfo !== undefined ? { clientInfo: c.clientInfo } : {}),
    ...(c.logLevel !== undefined ? { logLevel: c.logLevel } : {}),
  };
}

/** The record's view of its upstream task: the last known state a resumed task starts from. */
function snapshotOf(r: TaskRecord): UpstreamTaskSnapshot {
  return {
    status: r.status,
    ttlMs: r.ttlMs,
    createdAt: r.createdAt,
    lastUpdatedAt: r.lastUpdatedAt,
    ...(r.statusMessage !== undefined ? { statusMessage: r.statusMessage } : {}),
    ...(r.pollIntervalMs !== undefined ? { pollIntervalMs: r.pollIntervalMs } : {}),
    ...(r.inputRequests ? { inputRequests: r.inputRequests } : {}),
    ...(r.result ? { result: r.result } : {}),
    ...(r.error ? { error: r.error } : {}),
  };
}
