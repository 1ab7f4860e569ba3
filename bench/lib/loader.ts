/**
 * The load generator, a child process of its own on the loader core, driven over IPC by the harness (one process
 * for the whole run: no start-up cost per leg). Two engines:
 * - `autocannon` for throughput at many connections: the fastest Node load generator, but its latency histogram
 *   counts whole milliseconds (hdr-histogram, lowest discernible value 1), useless for sub-millisecond p50s;
 * - `hrtime`: an undici Pool with one request in flight per connection, each timed with `process.hrtime.bigint()`
 *   (nanoseconds), for the one-connection latency legs.
 * Both first send one request and check its answer (status 2xx and an expected substring), so that a broken path
 * fails loudly instead of measuring fast errors. Every body may carry `__ID__`, replaced by a fresh JSON-RPC id.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { track } from './processes.js';

/** One request shape; a leg cycles through its list. */
export interface RequestShape {
  headers: Record<string, string>;
  body: string;
}

/** What to measure. */
export interface LoadSpec {
  engine: 'autocannon' | 'hrtime';
  /** Full URL (http://127.0.0.1:port/path). */
  url: string;
  connections: number;
  durationMs: number;
  requests: RequestShape[];
  /** A substring the first answer must contain. */
  expect: string;
  /**
   * `hrtime` only: send at most this many requests after the preflight, then stop (`durationMs` stays the bound); for
   * a leg that counts what a number of calls costs rather than how many fit in a time.
   */
  count?: number;
}

/** What one leg measured. */
export interface LoadResult {
  requests: number;
  seconds: number;
  /** Requests per second (2xx only). */
  rps: number;
  /** Latency percentiles in ms (whole ms under autocannon). */
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

const ID = /__ID__/g;
let nextId = 1;
const withId = (body: string): string => body.replace(ID, `b${nextId++}`);

async function preflight(spec: LoadSpec): Promise<void> {
  const shape = spec.requests[0];
  if (!shape) throw new Error('no request to send');
  const res = await fetch(spec.url, { method: 'POST', headers: shape.headers, body: withId(shape.body) });
  const text = await res.text();
  if (res.status < 200 || res.status > 299 || !text.includes(spec.expect)) {
    throw new Error(`preflight to ${spec.url} failed: HTTP ${res.status}, expected ${JSON.stringify(spec.expect)} in ${text.slice(0, 500)}`);
  }
}

interface AutocannonResult {
  duration: number;
  '2xx': number;
  non2xx: number;
  errors: number;
  timeouts: number;
  latency: { p50: number; p99: number };
}
type Autocannon = (opts: Record<string, unknown>, cb: (err: Error | null, result: AutocannonResult) => void) => unknown;

function runAutocannon(spec: LoadSpec): Promise<LoadResult> {
  const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;
  const shapes = spec.requests;
  let i = 0;
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: spec.url,
        connections: spec.connections,
        duration: spec.durationMs / 1000,
        // autocannon only notices the end of the duration on a sample tick (default every second).
        sampleInt: 50,
        method: 'POST',
        requests: [
          {
            setupRequest: (req: Record<string, unknown>) => {
              const shape = shapes[i++ % shapes.length]!;
              return { ...req, method: 'POST', headers: shape.headers, body: withId(shape.body) };
            },
          },
        ],
      },
      (err, r) => {
        if (err) return reject(err);
        resolve({
          requests: r['2xx'],
          seconds: r.duration,
          rps: r['2xx'] / r.duration,
          p50: r.latency.p50,
          p99: r.latency.p99,
          non2xx: r.non2xx,
          errors: r.errors + r.timeouts,
        });
      },
    );
  });
}

async function runHrtime(spec: LoadSpec): Promise<LoadResult> {
  const url = new URL(spec.url);
  const pool = new Pool(url.origin, { connections: spec.connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const path = url.pathname + url.search;
  const shapes = spec.requests;
  let latencies = new Float64Array(1 << 16);
  let n = 0;
  let non2xx = 0;
  let errors = 0;
  let i = 0;
  const limit = spec.count ?? Infinity;
  const deadline = performance.now() + spec.durationMs;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: spec.connections }, async () => {
      while (performance.now() < deadline && i < limit) {
        const shape = shapes[i++ % shapes.length]!;
        const t0 = process.hrtime.bigint();
        try {
          const res = await pool.request({ method: 'POST', path, headers: shape.headers, body: withId(shape.body) });
          await res.body.arrayBuffer();
          const dt = Number(process.hrtime.bigint() - t0) / 1e6;
          if (res.statusCode < 200 || res.statusCode > 299) {
            non2xx++;
            continue;
          }
          if (n === latencies.length) {
            const bigger = new Float64Array(latencies.length * 2);
            bigger.set(latencies);
            latencies = bigger;
          }
          latencies[n++] = dt;
        } catch {
          errors++;
        }
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  await pool.close();
  const sorted = latencies.subarray(0, n).sort();
  const q = (p: number) => (n ? sorted[Math.min(n - 1, Math.floor(p * n))]! : NaN);
  return { requests: n, seconds, rps: n / seconds, p50: q(0.5), p99: q(0.99), non2xx, errors };
}

/** Measures one leg in this process (the loader child calls it; so can a script that is its own loader). */
export async function measure(spec: LoadSpec): Promise<LoadResult> {
  if (spec.count !== undefined && spec.engine !== 'hrtime') throw new Error('a counted leg needs the hrtime engine');
  await preflight(spec);
  return spec.engine === 'autocannon' ? runAutocannon(spec) : runHrtime(spec);
}

/** The harness's handle on the loader child. */
export interface Loader {
  run(spec: LoadSpec): Promise<LoadResult>;
  close(): void;
}

/**
 * Forks the loader child. It inherits this process's CPU affinity: the harness pins itself to the loader core
 * before calling this.
 */
export function startLoader(): Loader {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--child'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  track(child);
  let seq = 0;
  const pending = new Map<number, { resolve(r: LoadResult): void; reject(e: Error): void }>();
  child.on('message', (m: { seq: number; result?: LoadResult; error?: string }) => {
    const p = pending.get(m.seq);
    pending.delete(m.seq);
    if (m.error !== undefined) p?.reject(new Error(m.error));
    else if (m.result) p?.resolve(m.result);
  });
  child.once('exit', (code, signal) => {
    for (const p of pending.values()) p.reject(new Error(`loader exited (${code ?? signal})`));
    pending.clear();
  });
  return {
    run(spec) {
      return new Promise((resolve, reject) => {
        const s = ++seq;
        pending.set(s, { resolve, reject });
        child.send({ seq: s, spec });
      });
    },
    close() {
      child.disconnect();
    },
  };
}

if (process.argv[2] === '--child' && process.send) {
  process.on('message', (m: { seq: number; spec: LoadSpec }) => {
    measure(m.spec).then(
      (result) => process.send?.({ seq: m.seq, result }),
      (e: Error) => process.send?.({ seq: m.seq, error: e.message }),
    );
  });
  process.on('disconnect', () => process.exit(0));
}
