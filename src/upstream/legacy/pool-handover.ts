/**
 * The reset of a pooled legacy session when it passes from one caller to another (2025-11-25 client/roots §List Changed
 * Notification, server/utilities/logging): roots asked again of the new holder, and its log level set.
 */
import { isObject } from '../../translate/index.js';
import type { LegacySession } from './session.js';

/** What a checkout sets up for its caller on a session that another caller held. */
export interface Handover {
  /** The lowest log level the caller wants (`logging/setLevel` when the server logs). */
  logLevel?: string;
  /** The call may outlive its request: it waits for a session within its budget (`timeoutMs`), not `acquireTimeoutMs`. */
  patient?: boolean;
}

/** What a handover reads and updates of a pooled session's slot. */
export interface HandedSlot {
  readonly session: LegacySession;
  /** Who held it last (`undefined`: nobody but the pool). */
  holder: string | undefined;
  /** The log level last set on it. */
  logLevel: string | undefined;
}

/**
 * Resets what 2025-11-25 lets a client reset when a session passes to `holder` from someone else: a server that
 * asked for roots gets `notifications/roots/list_changed` (it asks again, and the question goes to the new holder),
 * and the holder's log level is set when it differs from the session's. Returns what to wait for, if anything.
 */
export function handOver(slot: HandedSlot, holder: string, handover: Handover | undefined): Promise<unknown> | undefined {
  const s = slot.session;
  const previous = slot.holder;
  slot.holder = holder;
  const steps: Array<Promise<void>> = [];
  if (s.rootsAsked && previous !== holder) {
    s.rootsAsked = false;
    steps.push(s.notify('notifications/roots/list_changed', {}));
  }
  const level = handover?.logLevel;
  if (level !== undefined && slot.logLevel !== level && isObject(s.identity?.capabilities?.logging)) {
    slot.logLevel = level;
    steps.push(s.setLogLevel(level));
  }
  // Nothing to wait for, most checkouts: no promise (the checkout goes on in the same turn).
  return steps.length > 0 ? Promise.all(steps) : undefined;
}
