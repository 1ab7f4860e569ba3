/** Waits for a task record's next change (a version above one known, or its end), from change events and the store. */
import { isTerminal, type TaskId, type TaskRecord } from '../../translate/index.js';
import type { TaskStore } from '../../store/index.js';
import type { TaskEvents } from './task-events.js';

/** How often a `changed` wait looks whether its record expired (an expiry sends no change). */
const CHANGE_RECHECK_MS = 10_000;

/**
 * Waits until the task's record has a version above `afterVersion` (or is terminal, or `signal` aborts) and
 * returns the record then; `undefined` if it expired.
 */
export async function waitForChange(
  store: TaskStore,
  events: TaskEvents,
  taskId: string,
  afterVersion: number,
  signal: AbortSignal,
): Promise<TaskRecord | undefined> {
  const id = taskId as TaskId;
  const ready = (r: TaskRecord) => r.version > afterVersion || isTerminal(r.status);
  const now = await store.get(id);
  if (!now || ready(now) || signal.aborted) return now;
  return new Promise<TaskRecord | undefined>((resolve) => {
    let settled = false;
    const done = (r: TaskRecord | undefined) => {
      if (settled) return;
      settled = true;
      off();
      clearInterval(expiry);
      signal.removeEventListener('abort', onAbort);
      resolve(r);
    };
    const off = events.on((t) => {
      if (t.taskId === id && ready(t)) done(t);
    });
    const check = (final: boolean) =>
      void store.get(id).then(
        (r) => (!r || ready(r) || final ? done(r) : undefined),
        () => done(undefined),
      );
    const onAbort = () => check(true);
    // A record expires without a change event: look for that now and then.
    const expiry = setInterval(() => check(false), CHANGE_RECHECK_MS);
    expiry.unref();
    signal.addEventListener('abort', onAbort, { once: true });
    check(false); // a change between the first read and the listener
  });
}
