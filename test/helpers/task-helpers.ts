/**
 * Helpers shared by the issue #3 task tests (not a test file): the declaring capability set, a bounded
 * tasks/get poll that honours pollIntervalMs, and an incremental SSE reader whose every read is bounded.
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
export async function pollTask(
  url: string,
  taskId: string,
  until: (result: any) => boolean,
  opts: PostOptions = {},
): Promise<any[]> {
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
  if (r.status !== 200 || r.body?.result?.resultType !== 'task') throw new Error(`${name}: expected a CreateTaskResult, got HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.result;
}

/** Pulls JSON-RPC messages from a text/event-stream response one at a time; every read is bounded. */
export class SseStream {
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private readonly queued: any[] = [];
  private pending: ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']> | undefined;

  constructor(response: Response) {
    if (!response.body) throw new Error('response has no body');
    this.reader = response.body.getReader();
  }

  /** The next message, `undefined` once the stream ended; rejects if none arrives within `timeoutMs`. */
  async next(timeoutMs = BOUND_MS): Promise<any> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.queued.length > 0) return this.queued.shift();
      this.pending ??= this.reader.read();
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), Math.max(0, deadline - Date.now()));
      });
      const r = await Promise.race([this.pending, timeout]);
      clearTimeout(timer);
      if (r === 'timeout') throw new Error(`no SSE message within ${timeoutMs} ms`);
      this.pending = undefined;
      if (r.done) {
        this.parse(true);
        return this.queued.shift();
      }
      this.buffer += this.decoder.decode(r.value, { stream: true });
      this.parse(false);
    }
  }

  /** Reads until a message matches; returns it and every message read before it. */
  async until(pred: (m: any) => boolean, timeoutMs = BOUND_MS): Promise<{ match: any; before: any[] }> {
    const deadline = Date.now() + timeoutMs;
    const before: any[] = [];
    for (;;) {
      const m = await this.next(Math.max(1, deadline - Date.now()));
      if (m === undefined) throw new Error(`stream ended before a matching message; saw ${JSON.stringify(before)}`);
      if (pred(m)) return { match: m, before };
      before.push(m);
    }
  }

  /** Lets go of the stream. */
  async cancel(): Promise<void> {
    await this.reader.cancel().catch(() => {});
  }

  private parse(flush: boolean): void {
    const events = this.buffer.split(/\r?\n\r?\n/);
    this.buffer = flush ? '' : (events.pop() ?? '');
    for (const event of events) {
      const data: string[] = [];
      for (const line of event.split(/\r?\n/)) if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      if (data.length > 0) this.queued.push(JSON.parse(data.join('\n')));
    }
  }
}
