/**
 * `subscriptions/listen` for a legacy upstream (SUB2; translation.md §3.7): a dedicated upstream session whose
 * GET stream carries list-changed notifications and whose `resources/subscribe` calls carry resource updates.
 * The client's stream gets the acknowledgement first, then the notifications it opted into, each tagged with
 * its subscription id. Closing the client stream ends the upstream session.
 */
import {
  META,
  TASKS_REQUIRED_CAPABILITIES,
  acceptListenFilter,
  declaresTasks,
  isNotification,
  listenAcknowledgement,
  listenClosingResult,
  listenNotification,
  readListenFilter,
  type JsonObject,
  type JsonRpcNotification,
  type ModernRequest,
} from '../translate/index.js';
import { drainToResponse, type LegacySession } from '../upstream/index.js';
import { MissingCapabilityError } from './conversation.js';
import { sessionKeyOf } from './mrtr-bridge.js';
import type { CallerContext, UpstreamRoute } from './route.js';
import type { TaskRuntime } from './task-runtime.js';

/** The client side of one listen stream. */
export interface ListenHooks {
  signal: AbortSignal;
  /** Sends one notification on the client's stream (the first call starts the stream). */
  send(n: JsonRpcNotification): void;
  /** The task runtime, for `taskIds` (X §Task Status Notifications). */
  tasks?: TaskRuntime;
}

/** Runs a listen stream until the client leaves or the upstream ends it; returns the closing result. */
export async function runListen(route: UpstreamRoute, req: ModernRequest, caller: CallerContext, hooks: ListenHooks): Promise<JsonObject> {
  const subscriptionId = req.id as string | number;
  const requested = readListenFilter(req.params);
  if (requested.taskIds && !declaresTasks(caller.capabilities)) {
    // X §Task Status Notifications: asking for task notifications needs the extension.
    throw new MissingCapabilityError(TASKS_REQUIRED_CAPABILITIES, 'notifications/tasks');
  }
  const key = sessionKeyOf(caller);
  const identity = await route.pool.getIdentity(key, hooks.signal);
  const accepted = acceptListenFilter(requested, identity.capabilities);

  // Task notifications: a full DetailedTask per change, for the caller's own tasks only (X; §4.12(h)).
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

  let session: LegacySession | undefined;
  try {
    session = await route.pool.openDedicated(key, hooks.signal);
    const stream = await session.openStream(hooks.signal);
    if (accepted.resourceSubscriptions) {
      const ok: string[] = [];
      for (const uri of accepted.resourceSubscriptions) {
        const res = await drainToResponse(await session.request('resources/subscribe', { uri }, hooks.signal));
        if (!('error' in res)) ok.push(uri);
      }
      if (ok.length > 0) accepted.resourceSubscriptions = ok;
      else delete accepted.resourceSubscriptions;
    }
    acknowledge();
    if (stream) {
      for await (const m of stream) {
        if (!isNotification(m)) continue;
        const out = listenNotification(m, accepted, subscriptionId);
        if (out) hooks.send(out);
      }
    } else {
      await untilAborted(hooks.signal);
    }
  } catch (e) {
    if (!hooks.signal.aborted) throw e;
  } finally {
    stopTasks();
    void session?.close();
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
