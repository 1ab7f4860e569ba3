/**
 * Heap per stored terminal task, in this process: a gateway built from the code under test (its real runtime and
 * memory store), `greet` of a raw legacy upstream wrapped into a task (`task: always`).
 * - Through the gateway: tasks created over its HTTP face (Fastify inject, no client sockets), every one completed,
 *   then the heap after full collections, against the heap before them.
 * - At 10,000 and 100,000 tasks: creating that many through the gateway takes minutes (each costs the whole
 *   runtime), so the store is filled by replaying, with fresh task ids and freshly cloned values, the exact store
 *   calls the runtime made for one real task (recorded by a wrapper around the store). The records are the
 *   runtime's own; what only the runtime would hold per task is what the through-the-gateway figure shows.
 * Bytes per task = heap growth / tasks; "beyond its result" subtracts what the same result costs held alone
 * (measured the same way). Needs `--expose-gc`; prints one JSON line (the harness runs it as a child).
 *
 *   node --expose-gc --import tsx bench/heap.ts [--gateway 1000] [--counts 10000,100000] [--gateway-dir DIR] [--source]
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type * as AppModule from '../src/app.js';
import type * as ConfigModule from '../src/config/index.js';
import type * as StoreModule from '../src/store/index.js';
import type { TaskStore } from '../src/store/index.js';
import { startRawUpstream } from './fixtures/raw-upstreams.js';

/** One measured point. */
export interface HeapPoint {
  /** Stored terminal tasks beyond the warm-up ones. */
  tasks: number;
  /** How they were made: none (the zero point), through the gateway, or by replaying its store calls. */
  how: 'zero' | 'gateway' | 'replay';
  heapBytes: number;
  /** (heap − heap at zero) / tasks; absent at zero. */
  bytesPerTask?: number;
  /** bytesPerTask − the result's own heap cost. */
  beyondResult?: number;
}

/** What the script prints. */
export interface HeapReport {
  points: HeapPoint[];
  /** Heap bytes one `greet` result costs held alone. */
  resultHeapBytes: number;
  /** Its JSON length. */
  resultJsonBytes: number;
  /** The store calls replayed per task (method names). */
  trace: string[];
}

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS_EXT]: {} } },
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
};
const HEADERS = {
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': 'greet',
};

const gc = (globalThis as { gc?: () => void }).gc;

async function settledHeap(): Promise<number> {
  if (!gc) throw new Error('run with node --expose-gc');
  // Several full collections with turns of the event loop between them: finalizers and weak maps settle.
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  return process.memoryUsage().heapUsed;
}

/** One store call the runtime made for a task, replayable for another task id. */
interface TracedCall {
  method: string;
  args: unknown[];
}

/** Store methods that only read: not replayed. */
const READS = new Set(['get', 'list', 'activeCount', 'leaseOwner', 'getValue', 'subscribe', 'close']);

/**
 * Wraps `store` so that every mutating call naming a task (its id, or a record with it, as first argument) is
 * recorded per task id. `update(id, fn)` is recorded as the `replace` it amounted to: a function cannot be replayed.
 */
function recording(store: TaskStore): { store: TaskStore; traces: Map<string, TracedCall[]>; stop(): void } {
  const traces = new Map<string, TracedCall[]>();
  let on = true;
  const taskIdOf = (a: unknown): string | undefined =>
    typeof a === 'string'
      ? a
      : a && typeof a === 'object' && typeof (a as { taskId?: unknown }).taskId === 'string'
        ? (a as { taskId: string }).taskId
        : undefined;
  const note = (id: string, call: TracedCall) => {
    let list = traces.get(id);
    if (!list) traces.set(id, (list = []));
    list.push(call);
  };
  const wrapped = new Proxy(store, {
    get(target, prop, receiver) {
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function' || typeof prop !== 'string' || READS.has(prop)) return typeof v === 'function' ? v.bind(target) : v;
      return async (...args: unknown[]) => {
        const id = on ? taskIdOf(args[0]) : undefined;
        if (prop === 'update' && id !== undefined) {
          const before = await target.get(id as never);
          const after = (await (v as (...a: unknown[]) => Promise<unknown>).apply(target, args)) as { version: number } | undefined;
          if (after && before && after.version !== before.version) note(id, { method: 'replace', args: [after, before.version] });
          return after;
        }
        if (id !== undefined) note(id, { method: prop, args });
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return {
    store: wrapped,
    traces,
    stop: () => {
      on = false;
    },
  };
}

/** A task id in the gateway's own format (a prefix and 24 base64url characters), fresh. */
function freshId(like: string): string {
  const prefix = /^[a-z]+_/.exec(like)?.[0] ?? '';
  return prefix + randomBytes(18).toString('base64url');
}

/**
 * A copy of a traced value as the runtime would build it for another task: objects copied, strings shared (the
 * runtime's principal, upstream, tool and owner strings are the same few for every task), except what is made per
 * task: timestamps (a fresh `toISOString()`) and the outcome (`result`/`error`: parsed off the wire, fresh strings).
 */
function asNewTask(v: unknown, key = ''): unknown {
  if (key === 'result' || key === 'error') return JSON.parse(JSON.stringify(v)) as unknown;
  if ((key === 'createdAt' || key === 'lastUpdatedAt') && typeof v === 'string') return new Date(Date.parse(v)).toISOString();
  if (Array.isArray(v)) return v.map((x) => asNewTask(x));
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, asNewTask(x, k)]));
  return v;
}

/** Replays `trace` for a new task id. */
async function replay(store: TaskStore, trace: TracedCall[]): Promise<string> {
  const first = trace[0]?.args[0] as { taskId: string };
  const id = freshId(first.taskId);
  for (const call of trace) {
    const args = call.args.map((a) => asNewTask(a));
    if (typeof args[0] === 'string') args[0] = id;
    else (args[0] as { taskId: string }).taskId = id;
    await (store as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>)[call.method]!(...args);
  }
  return id;
}

/** Measures the heap per task; `dir` is the checkout whose gateway is measured. */
export async function measureHeap(opts: { gateway: number; counts: number[]; dir: string; source: boolean }): Promise<HeapReport> {
  const mod = (rel: string) => resolve(opts.dir, opts.source ? `src/${rel}.ts` : `dist/${rel}.js`);
  if (!existsSync(mod('app'))) throw new Error(`${mod('app')} not found${opts.source ? '' : `: run \`npm run build\` in ${opts.dir}`}`);
  const load = <T>(rel: string): Promise<T> => import(pathToFileURL(mod(rel)).href) as Promise<T>;
  const { buildGateway } = await load<typeof AppModule>('app');
  const { parseConfig } = await load<typeof ConfigModule>('config/index');
  const { MemoryTaskStore } = await load<typeof StoreModule>('store/index');

  const counts = [...opts.counts].sort((a, b) => a - b);
  const max = Math.max(opts.gateway, counts.at(-1) ?? 0);
  // Warm-up long enough that JIT code is mostly compiled before the zero point (it would count as per-task heap).
  const WARM = Math.max(200, Math.min(1_000, opts.gateway));
  const upstream = await startRawUpstream('legacy');
  // Room for every task, none evicted, none expiring during the run.
  const tasks = { maxTasks: max + WARM + 100, maxActivePerPrincipal: 100_000, defaultTtlMs: 86_400_000 };
  const real = new MemoryTaskStore({ maxTasks: tasks.maxTasks });
  const { store, traces, stop: stopRecording } = recording(real);
  const gateway = await buildGateway(
    // Anonymous callers in one shared upstream session, as before session scopes: what is measured is the task records'
    // heap, not a session per task (which the anonymous principal's share of sessions would also bound).
    parseConfig({
      server: { port: 0 },
      tasks,
      upstreams: [{ name: 'raw', url: upstream.url, tools: { greet: { task: 'always' } }, sessions: { anonymousScope: 'shared' } }],
    }),
    { store, logger: false },
  );
  await gateway.app.ready();
  let id = 0;
  const created: string[] = [];
  const createOne = async () => {
    const r = await gateway.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: HEADERS,
      payload: JSON.stringify({ jsonrpc: '2.0', id: ++id, method: 'tools/call', params: { name: 'greet', arguments: { name: 'bench' }, _meta: META } }),
    });
    const body = r.json() as { result?: { resultType?: string; task?: { taskId?: string }; taskId?: string } };
    const taskId = body.result?.task?.taskId ?? body.result?.taskId;
    if (r.statusCode !== 200 || body.result?.resultType !== 'task' || !taskId)
      throw new Error(`expected a task, got HTTP ${r.statusCode} ${r.body.slice(0, 300)}`);
    created.push(taskId);
  };
  const completed = async (taskId: string) => {
    for (let tries = 0; ; tries++) {
      const r = await real.get(taskId as never);
      if (r?.status === 'completed') return;
      if (r && ['failed', 'cancelled'].includes(r.status)) throw new Error(`task ${taskId} ended ${r.status}: ${JSON.stringify(r).slice(0, 600)}`);
      if (tries > 10_000) throw new Error(`task ${taskId} did not finish: ${JSON.stringify(r)}`);
      await new Promise((res) => setTimeout(res, 1));
    }
  };
  const viaGateway = async (n: number) => {
    const target = created.length + n;
    let started = created.length;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (started < target) {
          started++;
          await createOne();
        }
      }),
    );
    for (const taskId of created) await completed(taskId);
  };

  try {
    // Warm-up (JIT, pools, the upstream session) before the zero point; these tasks stay in every measurement.
    await viaGateway(WARM);
    const traced = created[0]!;
    const trace = traces.get(traced) ?? [];
    const sample = await real.get(traced as never);
    const result = sample?.result;
    if (!result) throw new Error('a completed task holds no result');
    // Recording ends here: it would otherwise hold every later call's arguments.
    stopRecording();
    traces.clear();
    const heap0 = await settledHeap();
    const points: HeapPoint[] = [{ tasks: 0, how: 'zero', heapBytes: heap0 }];
    const point = async (n: number, how: HeapPoint['how']) => {
      const heap = await settledHeap();
      points.push({ tasks: n, how, heapBytes: heap, bytesPerTask: (heap - heap0) / n });
    };
    await viaGateway(opts.gateway);
    await point(opts.gateway, 'gateway');
    // Beyond those, the store filled by replaying one real task's store calls.
    let stored = opts.gateway;
    for (const n of counts) {
      if (n <= stored) continue;
      for (; stored < n; stored++) {
        const copy = await replay(real, trace);
        if (stored === n - 1 && (await real.get(copy as never))?.status !== 'completed') {
          throw new Error(`replaying the store calls ${trace.map((c) => c.method).join(', ')} did not store a completed task`);
        }
      }
      await point(n, 'replay');
    }
    // The result alone, as many copies as the largest count, each parsed as off the wire.
    const before = await settledHeap();
    const json = JSON.stringify(result);
    const copies = Array.from({ length: max }, () => JSON.parse(json) as unknown);
    const resultHeapBytes = ((await settledHeap()) - before) / copies.length;
    copies.length = 0;
    for (const p of points) if (p.bytesPerTask !== undefined) p.beyondResult = p.bytesPerTask - resultHeapBytes;
    return { points, resultHeapBytes, resultJsonBytes: JSON.stringify(result).length, trace: trace.map((c) => c.method) };
  } finally {
    await gateway.close();
    await real.close();
    await upstream.close();
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      gateway: { type: 'string', default: '1000' },
      counts: { type: 'string', default: '10000,100000' },
      'gateway-dir': { type: 'string', default: resolve(fileURLToPath(import.meta.url), '../..') },
      source: { type: 'boolean', default: false },
    },
  });
  const counts = values.counts.split(',').map(Number);
  if (counts.some((n) => !Number.isInteger(n) || n <= 0 || n > 1_000_000)) throw new Error('--counts: positive integers up to 1,000,000');
  measureHeap({ gateway: Number(values.gateway), counts, dir: resolve(values['gateway-dir']), source: values.source }).then(
    (r) => {
      process.stdout.write(`${JSON.stringify(r)}\n`);
      process.exit(0);
    },
    (e: Error) => {
      process.stderr.write(`${e.stack ?? e.message}\n`);
      process.exit(1);
    },
  );
}
