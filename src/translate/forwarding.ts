/**
 * Pure rules for forwarding one modern request to a legacy upstream: the params it is sent with, its progress
 * token, and which upstream notifications the client may see on its request stream.
 */
import { LOG_LEVELS } from './constants.js';
import { isObject, type JsonObject, type JsonRpcNotification } from './jsonrpc.js';
import type { ModernRequest } from './modern-request.js';

/**
 * Modern params → legacy params: the envelope is already removed; a modern client's `task` is ignored (tasks extension
 * §Task Creation: the server decides).
 */
export function legacyParams(req: ModernRequest): JsonObject {
  const { task: _task, ...rest } = req.params;
  return rest;
}

/** The progress token a request carries in its `_meta`, if any. */
export function progressTokenOf(params: JsonObject): string | number | undefined {
  const meta = isObject(params._meta) ? params._meta : undefined;
  const token = meta?.progressToken;
  return typeof token === 'string' || typeof token === 'number' ? token : undefined;
}

/**
 * Whether a log message of `level` reaches a client that asked for `minimum` and above. A level outside the
 * spec's list ranks below every known one (it reaches only a client that asked with an unknown level too).
 */
export function logLevelPasses(level: string, minimum: string): boolean {
  const rank = (l: string) => (LOG_LEVELS as readonly string[]).indexOf(l);
  return rank(level) >= rank(minimum);
}

/**
 * Whether an upstream notification is relayed on a modern client's request stream: progress for the token the
 * client sent (the gateway may have added its own token upstream), and log messages at or above the level the
 * client asked for (2026-07-28 `io.modelcontextprotocol/logLevel`; none asked: none sent). Anything else has no
 * modern counterpart on a request stream (`notifications/elicitation/complete`, list changes).
 */
export function relayedOnRequestStream(n: JsonRpcNotification, client: { progressToken: string | number | undefined; logLevel: string | undefined }): boolean {
  const params = isObject(n.params) ? n.params : undefined;
  if (n.method === 'notifications/progress') return client.progressToken !== undefined && params?.progressToken === client.progressToken;
  if (n.method === 'notifications/message')
    return client.logLevel !== undefined && logLevelPasses(typeof params?.level === 'string' ? params.level : 'info', client.logLevel);
  return false;
}
