/**
 * `subscriptions/listen` (2026-07-28 basic/patterns/subscriptions) over the upstream's notification stream (`listen()`
 * of the upstream seam: for a legacy upstream, the GET stream of the caller's own session and its resource
 * subscriptions). The client's stream gets the acknowledgement first, then the notifications it opted into, each tagged
 * with its subscription id. Closing the client stream ends the upstream listen.
 */
import {
  META,
  TASKS_REQUIRED_CAPABILITIES,
  acceptListenFilter,
  declaresTasks,
  listenAcknowledgement,
  listenClosingResult,
  listenNotification,
  readListenFilter,
  type JsonObject,
  type JsonRpcNotification,
  type ModernRequest,
} from '../../translate/index.js';
import { MissingCapabilityError } from './conversation.js';
import type { CallerContext, UpstreamRoute } from '../route.js';
import type { TaskRuntime } from '../task-runtime.js';

/** The client side of one listen stream. */
export interface ListenHooks {
  signal: AbortSignal;
  /** Sends one notification on the client's stream (the first call starts the stream). */
  send(n: JsonRpcNotification): void;
  /** The task runtime, for `taskIds` (tasks extension §Task Status Notifications). */
  tasks?: TaskRuntime;
}

/** Runs a listen stream until the client leaves or the upstream ends it; returns the closing result. */
export async function runListen(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ListenHooks): Promise<JsonObject> {
  const subscriptionId = req.id as string | number;
  const requested = readListenFilter(req.params);
  if (requested.taskIds && !declaresTasks(caller.capabilities)) {
    // tasks extension §Task Status Notifications: asking for task notifications needs the extension.
    throw new MissingCapabilityError(TASKS_REQUIRED_CAPABILITIES, 'notifications/tasks');
  }
  const identity = await route.upstream.identity(caller, hooks.signal);
  let accepted = acceptListenFilter(requested, identity.capabilities);

  // Task notifications: a full DetailedTask per change, for the caller's own tasks only (tasks extension §Task Status
  // Notifications, §Security Considerations).
  let stopTasks = () => {};
  const pendingTaskNotes: JsonRpcNotification[] = [];
  let acknowledged = false;
  if (requested.taskIds && hooks.tasks) {
    const sub = await hooks.tasks.subscribe(route, caller.principal, requested.taskIds, (task) => {
      const note: JsonRpcNotification = {
        jsonrpc: '2.0',
        method: 'notifications/tasks',
        params: { ...withoutResultType(task), _meta: { [META.subscriptionId]: subscriptionId } },
      };
      if (acknowledged) hooks.send(note);
      else pendingTaskNotes.push(note);
    });
    stopTasks = sub.stop;
    if (sub.accepted.length > 0) accepted.taskIds = sub.accepted;
  }
  const acknowledge = () => {
    hooks.send(listenAcknowledgement(subscriptionId, accepted));
    acknowledged = true;
    for (const n of pendingTaskNotes.splice(0)) hooks.send(n);
  };

  const wantsUpstream = accepted.toolsListChanged || accepted.promptsListChanged || accepted.resourcesListChanged || accepted.resourceSubscriptions;
  if (!wantsUpstream) {
    acknowledge();
    await untilAborted(hooks.signal);
    stopTasks();
    return listenClosingResult(subscriptionId);
  }

  try {
    // Task ids are the gateway's own; the upstream says which of the rest it serves (a refused subscription drops out).
    const { taskIds, ...upstreamFilter } = accepted;
    const upstream = await route.upstream.listen(caller, upstreamFilter, hooks.signal);
    accepted = { ...upstream.accepted, ...(taskIds ? { taskIds } : {}) };
    acknowledge();
    for await (const m of upstream.notifications) {
      const out = listenNotification(m, accepted, subscriptionId);
      if (out) hooks.send(out);
    }
    // The upstream ended its stream: the client's stream closes gracefully.
  } catch (e) {
    if (!hooks.signal.aborted) throw e;
  } finally {
    stopTasks();
  }
  return listenClosingResult(subscriptionId);
}

/** Resolves when the client closes its stream. */
function untilAborted(signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}

function withoutResultType(task: JsonObject): JsonObject {
  const { resultType: _rt, ...rest } = task;
  return rest;
}
