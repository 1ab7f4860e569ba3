/**
 * Helpers for tests that follow an `UpstreamTask` of either era (not a test file): read its states with `next()`
 * until a terminal one, or until a given status.
 */
import type { UpstreamCaller, UpstreamClient, UpstreamTask, UpstreamTaskSnapshot } from '../../src/upstream/index.js';

/**
 * Starts a task-augmented `tools/call` on `client` and returns the task the upstream created (throws on any other
 * answer). With `t`, the task is released when that test ends.
 */
export async function startUpstreamTask(
  client: UpstreamClient,
  caller: UpstreamCaller,
  tool: string,
  args: Record<string, unknown>,
  opts: { ttlMs?: number; t?: { teardown(fn: () => void): void } } = {},
): Promise<UpstreamTask> {
  const call = await client.call(caller, 'tools/call', { name: tool, arguments: args }, undefined, {
    task: opts.ttlMs === undefined ? {} : { ttlMs: opts.ttlMs },
  });
  const e = await call.next();
  if (e.kind !== 'task') throw new Error(`expected a task, got ${JSON.stringify(e.kind === 'response' ? e.message : e)}`);
  opts.t?.teardown(() => e.task.release());
  return e.task;
}

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
