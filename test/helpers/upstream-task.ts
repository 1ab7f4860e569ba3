/**
 * Helpers for tests that follow an `UpstreamTask` of either era (not a test file): read its states with `next()`
 * until a terminal one, or until a given status.
 */
import type { UpstreamTask, UpstreamTaskSnapshot } from '../../src/upstream/index.js';

/** Follows a task to its terminal state, collecting every state seen. */
export async function toEnd(task: UpstreamTask): Promise<UpstreamTaskSnapshot[]> {
  const seen: UpstreamTaskSnapshot[] = [];
  const signal = new AbortController().signal;
  for (;;) {
    const s = await task.next(signal);
    if (!s) throw new Error('next() ended without a state');
    seen.push(s);
    if (s.status === 'completed' || s.status === 'failed' || s.status === 'cancelled') return seen;
  }
}

/** The first state of the task with `status` (states before it are skipped). */
export async function nextWith(task: UpstreamTask, status: string): Promise<UpstreamTaskSnapshot> {
  const signal = new AbortController().signal;
  for (;;) {
    const s = await task.next(signal);
    if (!s) throw new Error('next() ended');
    if (s.status === status) return s;
  }
}
