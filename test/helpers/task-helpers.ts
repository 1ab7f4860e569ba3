/**
 * Helpers shared by the task tests (not a test file): the declaring capability set and a bounded tasks/get
 * poll that honours pollIntervalMs.
 */
import { post, type RawReply } from './modern.js';

/** The tasks extension label (X §Capability Negotiation). */
export const TASKS_EXT = 'io.modelcontextprotocol/tasks';

/** Per-request capabilities of a client that declares the tasks extension and elicitation. */
export const DECLARING = { extensions: { [TASKS_EXT]: {} }, elicitation: {} };

/** Terminal task statuses. */
export const TERMINAL = ['completed', 'failed', 'cancelled'];

/** Fixture-side waits and polls give up after this long (a failed test, never a pass). */
export const BOUND_MS = 15_000;

/** Options for one modern request (as `post()` takes them). */
export type PostOptions = NonNullable<Parameters<typeof post>[3]>;

/** tasks/get for `taskId` as a declaring client. */
export function getTask(url: string, taskId: string, opts: PostOptions = {}): Promise<RawReply> {
  return post(url, 'tasks/get', { taskId }, { capabilities: DECLARING, ...opts });
}

/**
 * Polls tasks/get until `until(result)` holds, waiting the task's own pollIntervalMs between polls; fails after
 * `BOUND_MS`. Returns every reply's result (the last one satisfies `until`).
 */
export async function pollTask(url: string, taskId: string, until: (result: any) => boolean, opts: PostOptions = {}): Promise<any[]> {
  const seen: any[] = [];
  const deadline = Date.now() + BOUND_MS;
  for (;;) {
    const r = await getTask(url, taskId, opts);
    if (r.status !== 200 || !r.body?.result) throw new Error(`tasks/get failed: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    const result = r.body.result;
    seen.push(result);
    if (until(result)) return seen;
    if (Date.now() > deadline) throw new Error(`task ${taskId} did not reach the expected state; last: ${JSON.stringify(result)}`);
    const interval = typeof result.pollIntervalMs === 'number' && result.pollIntervalMs > 0 ? result.pollIntervalMs : 100;
    await new Promise((r) => setTimeout(r, interval));
  }
}

/** Polls until the task is terminal. */
export function pollToEnd(url: string, taskId: string, opts: PostOptions = {}): Promise<any[]> {
  return pollTask(url, taskId, (r) => TERMINAL.includes(r.status), opts);
}

/** Creates a task through tools/call as a declaring client; throws unless the reply is a CreateTaskResult. */
export async function createTask(url: string, name: string, args: Record<string, unknown>, opts: PostOptions = {}): Promise<any> {
  const r = await post(url, 'tools/call', { name, arguments: args }, { capabilities: DECLARING, ...opts });
  if (r.status !== 200 || r.body?.result?.resultType !== 'task')
    throw new Error(`${name}: expected a CreateTaskResult, got HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.result;
}
