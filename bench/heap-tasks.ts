/**
 * Heap per stored terminal task (the memory store): a real TaskRuntime over a real MemoryTaskStore, in front of an
 * in-memory FAKE upstream that answers `tools/call` at once (`greet`'s small result, as the raw bench upstreams give
 * it), creates N gateway-owned tasks through the runtime (a tool rule `task: always`, the path a wrapped tool takes),
 * all completed, and measures the heap after a full GC before the runtime was made and once the N tasks are stored.
 * Every request's strings are fresh (the principal hashed from an Authorization header, the params parsed from JSON),
 * as they are in the gateway, so that duplicated strings count.
 *
 * `bytesPerTask` is the heap (V8 heap plus array buffers) per task beyond its result, over the heap of the empty store
 * and runtime (`emptyBytes`, reported apart); `resultBytes` the result's own
 * size, its JSON as the client receives it. Not part of `npm test`.
 *
 *   node --expose-gc --import tsx bench/heap-tasks.ts [10000 100000]
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { principalOf } from '../src/proxy/index.js';
import { MemoryTaskStore } from '../src/store/index.js';
import { MrtrBridge, TaskRuntime, type CallerContext } from '../src/tasks/index.js';
import type { JsonObject, UpstreamIdentity } from '../src/translate/index.js';
import { QueuedCall, type UpstreamCall, type UpstreamClient, type UpstreamListen, type UpstreamTask } from '../src/upstream/index.js';
import { routeOver } from '../test/helpers/runtime-harness.js';

/** One measurement: heap per stored terminal task beyond its result, and that result's size. */
export interface TaskHeap {
  tasks: number;
  /** Heap bytes per task beyond its result (heapUsed + arrayBuffers growth / tasks − resultBytes). */
  bytesPerTask: number;
  /** The stored result's JSON size in bytes. */
  resultBytes: number;
  /** Heap bytes per task, result included. */
  totalBytesPerTask: number;
  /** Heap of the empty store and runtime (set aside up front, whatever they hold), not counted per task. */
  emptyBytes: number;
  /** Milliseconds taken to create the tasks (creation cost grows when a store scan is linear in its size). */
  fillMs: number;
}

/** One call answered at once. */
class InstantCall extends QueuedCall implements UpstreamCall {
  async respond(): Promise<void> {}
  cancel(): void {}
  abandon(): void {}
}

/**
 * A FAKE legacy upstream that answers `tools/call` at once with `greet`'s result as the raw bench upstream words it
 * (fresh objects per call, parsed from JSON as a transport would) and keeps nothing: what stays in the heap is the
 * gateway's.
 */
class InstantUpstream implements UpstreamClient {
  readonly name = 'raw';
  readonly era = 'legacy' as const;
  readonly knownIdentity: UpstreamIdentity = {
    protocolVersion: '2025-11-25',
    capabilities: { tools: {} },
    serverInfo: { name: 'raw-legacy', version: '1.0.0' },
  } as UpstreamIdentity;
  async identity(): Promise<UpstreamIdentity> {
    return this.knownIdentity;
  }
  async call(_caller: unknown, _method: string, params: JsonObject | undefined): Promise<UpstreamCall> {
    const args = (params?.arguments ?? {}) as { name?: unknown };
    const text = `Hello, ${typeof args.name === 'string' ? args.name : 'world'}!`;
    const call = new InstantCall();
    call.push({ kind: 'response', message: JSON.parse(JSON.stringify({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text }] } })) });
    return call;
  }
  listen(): Promise<UpstreamListen> {
    throw new Error('not used');
  }
  resumeTask(): UpstreamTask {
    throw new Error('not used');
  }
  retain(): () => void {
    return () => {};
  }
  stats(): { sessions: number } {
    return { sessions: 0 };
  }
  async close(): Promise<void> {}
}

/** How many principals the tasks are spread over (each request hashes its own Authorization header). */
const PRINCIPALS = 20;

function collector(): () => void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) return g;
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
}

function heapNow(gc: () => void): number {
  for (let i = 0; i < 3; i++) gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** How many tasks a throwaway runtime runs first, so that compiled code and one-time allocations do not count. */
const WARM_UP = 500;

/**
 * Fills a fresh runtime and memory store with `tasks` completed gateway-owned tasks and returns the heap they take
 * (after a warm-up on a throwaway runtime). `onFilled` runs while the tasks are stored (e.g. to take a heap snapshot).
 */
export async function measureTaskHeap(tasks: number, opts: { onFilled?: () => void } = {}): Promise<TaskHeap> {
  const gc = collector();
  await fill(WARM_UP, gc);
  return fill(tasks, gc, opts.onFilled);
}

async function fill(tasks: number, gc: () => void, onFilled?: () => void): Promise<TaskHeap> {
  const upstream = new InstantUpstream();
  const route = routeOver(upstream, { greet: { task: 'always' } }, { url: 'memory:raw', timeoutMs: 30_000 });
  const before = heapNow(gc);
  const store = new MemoryTaskStore({ maxTasks: tasks });
  const bridge = new MrtrBridge({ stateKey: new Uint8Array(32).fill(7), holdMs: 60_000, maxHeld: 10, gatherMs: 5 });
  const runtime = new TaskRuntime({
    store,
    bridge,
    defaultTtlMs: 3_600_000,
    maxTtlMs: 86_400_000,
    defaultPollIntervalMs: 1_000,
    maxActivePerPrincipal: 100,
    toolSupportTtlMs: 600_000,
  });
  await runtime.start();
  // The empty store and runtime (what they set aside up front, e.g. the LRU's slots for `maxTasks` records).
  const empty = heapNow(gc);
  const started = performance.now();
  let resultBytes = 0;
  let lastId = '';
  for (let i = 0; i < tasks; i++) {
    const caller: CallerContext = { principal: principalOf(`Bearer token-${i % PRINCIPALS}`), capabilities: {} };
    const params = JSON.parse(`{"name":"greet","arguments":{"name":"bench"}}`) as JsonObject;
    const r = await runtime.createTask(route, params, caller, {}, new AbortController().signal);
    if (!('record' in r) || r.record.status !== 'completed') throw new Error(`task ${i} did not complete at once: ${JSON.stringify(r)}`);
    if (i === 0) resultBytes = Buffer.byteLength(JSON.stringify(r.record.result));
    lastId = r.record.taskId;
  }
  const fillMs = performance.now() - started;
  const after = heapNow(gc);
  onFilled?.();
  // Still stored (nothing was evicted or collected under the measurement).
  if (!(await store.get(lastId as never))) throw new Error('the last task is gone');
  const totalBytesPerTask = (after - empty) / tasks;
  await runtime.close();
  bridge.close();
  await store.close();
  return { tasks, bytesPerTask: Math.round(totalBytesPerTask - resultBytes), resultBytes, totalBytesPerTask: Math.round(totalBytesPerTask), fillMs: Math.round(fillMs), emptyBytes: empty - before };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const counts = process.argv.slice(2).map(Number).filter((n) => n > 0);
  for (const n of counts.length > 0 ? counts : [10_000, 100_000]) {
    const m = await measureTaskHeap(n);
    console.log(JSON.stringify(m));
  }
}
