/**
 * `subscriptions/listen` (2026-07-28 basic/patterns/subscriptions) ⇄ the legacy GET stream and `resources/subscribe`.
 */
import { META } from './constants.js';
import { isObject, type JsonObject, type JsonRpcNotification, type RequestId } from './jsonrpc.js';

/** The notification filter of a listen request (2026-07-28 schema `SubscriptionsListenRequest`). */
export interface ListenFilter {
  toolsListChanged?: boolean;
  promptsListChanged?: boolean;
  resourcesListChanged?: boolean;
  resourceSubscriptions?: string[];
  taskIds?: string[];
}

/** Reads the requested filter; unknown keys are dropped (the server MUST NOT send types not opted into). */
export function readListenFilter(params: JsonObject): ListenFilter {
  const n = isObject(params.notifications) ? params.notifications : {};
  const f: ListenFilter = {};
  if (n.toolsListChanged === true) f.toolsListChanged = true;
  if (n.promptsListChanged === true) f.promptsListChanged = true;
  if (n.resourcesListChanged === true) f.resourcesListChanged = true;
  if (Array.isArray(n.resourceSubscriptions)) {
    const uris = n.resourceSubscriptions.filter((u): u is string => typeof u === 'string');
    if (uris.length > 0) f.resourceSubscriptions = [...new Set(uris)];
  }
  if (Array.isArray(n.taskIds)) {
    const ids = n.taskIds.filter((u): u is string => typeof u === 'string');
    if (ids.length > 0) f.taskIds = [...new Set(ids)];
  }
  return f;
}

/** The subset of a requested filter that the upstream can serve, judged by its legacy capabilities. */
export function acceptListenFilter(requested: ListenFilter, upstreamCaps: JsonObject): ListenFilter {
  const listChanged = (k: string) => isObject(upstreamCaps[k]) && (upstreamCaps[k] as JsonObject).listChanged === true;
  const resources = isObject(upstreamCaps.resources) ? upstreamCaps.resources : undefined;
  const out: ListenFilter = {};
  if (requested.toolsListChanged && listChanged('tools')) out.toolsListChanged = true;
  if (requested.promptsListChanged && listChanged('prompts')) out.promptsListChanged = true;
  if (requested.resourcesListChanged && listChanged('resources')) out.resourcesListChanged = true;
  if (requested.resourceSubscriptions && resources?.subscribe === true) out.resourceSubscriptions = requested.resourceSubscriptions;
  return out;
}

/** The first message on a listen stream (2026-07-28 basic/patterns/subscriptions). */
export function listenAcknowledgement(subscriptionId: RequestId, accepted: ListenFilter): JsonRpcNotification {
  return {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { ...accepted }, _meta: { [META.subscriptionId]: subscriptionId } },
  };
}

/**
 * A legacy notification from the upstream's GET stream → the modern notification for this listen stream, or
 * `undefined` when the filter did not opt into it.
 */
export function listenNotification(legacy: JsonRpcNotification, accepted: ListenFilter, subscriptionId: RequestId): JsonRpcNotification | undefined {
  const params = isObject(legacy.params) ? legacy.params : {};
  switch (legacy.method) {
    case 'notifications/tools/list_changed':
      if (!accepted.toolsListChanged) return undefined;
      break;
    case 'notifications/prompts/list_changed':
      if (!accepted.promptsListChanged) return undefined;
      break;
    case 'notifications/resources/list_changed':
      if (!accepted.resourcesListChanged) return undefined;
      break;
    case 'notifications/resources/updated':
      if (typeof params.uri !== 'string' || !accepted.resourceSubscriptions?.includes(params.uri)) return undefined;
      break;
    default:
      return undefined;
  }
  const meta = isObject(params._meta) ? { ...params._meta } : {};
  meta[META.subscriptionId] = subscriptionId;
  return { jsonrpc: '2.0', method: legacy.method, params: { ...params, _meta: meta } };
}

/**
 * The final result of a listen stream that the gateway closes gracefully (2026-07-28 basic/patterns/subscriptions
 * §Graceful Closure).
 */
export function listenClosingResult(subscriptionId: RequestId): JsonObject {
  return { resultType: 'complete', _meta: { [META.subscriptionId]: subscriptionId } };
}
