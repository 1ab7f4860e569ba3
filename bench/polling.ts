/**
 * Adaptive polling against a fixed interval, on a workload of mixed durations: how many `tasks/get` a client makes per
 * completed task, how long after a task ended the client sees it (median and p90), and, for tasks an upstream runs,
 * how many `tasks/get` the upstream receives per task.
 *
 * Each workload runs at the same time against two gateways (one with `tasks.adaptivePolling` on, one off with the
 * default `tasks.pollIntervalMs`), each gateway with its own fixture, so that both modes see the same machine. Four
 * tools run ~50 ms, ~300 ms, ~2 s and ~5 s (±15 % jitter); each is the fixtures' `slow_compute` behind a route of its
 * own (the gateway learns per upstream and tool, so four routes are four tools), or all four behind one route (one
 * tool whose duration its arguments decide):
 *  - wrapped: a synchronous upstream tool (the legacy fixture, SDK 1.32.2) under an `always` rule: gateway-owned
 *    tasks; a task ended when its record did (its terminal `lastUpdatedAt`).
 *  - wrapped, one tool: the same, the four durations through one route.
 *  - proxied: the modern fixture's own tasks (tasks extension, the upstream suggesting `pollIntervalMs`
 *    `UPSTREAM_POLL_MS`), served by the gateway under its own ids (a `native` rule with `afterMs`); a task ended at
 *    its upstream creation plus its duration (the fixture sleeps that long).
 * `clients` modern clients per gateway loop over the durations: create a task, then poll `tasks/get` waiting exactly
 * the `pollIntervalMs` each answer suggests, until it is terminal. Tasks created in the first `warmupMs` are not
 * counted (the adaptive gateway learns then; the fixed one does not need to). Not part of `npm test`.
 *
 * Few clients by default: gateways, fixtures and clients share one process, and a loaded event loop delays every
 * timer, which would measure the machine instead of the polling (the table reports the loop's lag). A full run takes
 * about `seconds` + 15 s.
 *
 *   node --import tsx bench/polling.ts [--seconds 40] [--clients 4]
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import type { Gateway } from '../src/app.js';
import { startLegacyFixture } from '../test/fixtures/legacy-server.js';
import { startModernFixture } from '../test/fixtures/modern-server.js';
import { startGateway } from '../test/helpers/gateway.js';
import { createTask, getTask, TERMINAL } from '../test/helpers/task-helpers.js';

/** Base durations of the workload's tools (ms); each task gets one ±JITTER. */
const DURATIONS_MS = [50, 300, 2_000, 5_000];
const JITTER = 0.15;
/** The proxied workload's upstream suggests this `pollIntervalMs`. */
const UPSTREAM_POLL_MS = 250;

/** What `runPollingBench` takes. */
export interface PollingBenchOptions {
  /** How long clients start tasks, after the warm-up (s). */
  seconds?: number;
  /** Clients per gateway. */
  clients?: number;
  /** Tasks created in this first stretch are not counted (ms). */
  warmupMs?: number;
}

/** One workload in one mode. */
export interface PollingRow {
  workload: 'wrapped' | 'wrapped, one tool' | 'proxied';
  mode: 'adaptive' | 'fixed';
  tasks: number;
  pollsPerTask: number;
  delayP50Ms: number;
  delayP90Ms: number;
  /** Upstream `tasks/get` per task (proxied only). */
  upstreamGetsPerTask?: number;
  /** Polls per task and median delay per base duration. */
  byDuration: Record<number, { tasks: number; pollsPerTask: number; delayP50Ms: number }>;
}

/** The results, and the markdown table bench/RESULTS.md shows. */
export interface PollingBenchResult {
  rows: PollingRow[];
  markdown: string;
}

interface Sample {
  base: number;
  polls: number;
  delayMs: number;
}

interface Leg {
  workload: PollingRow['workload'];
  mode: PollingRow['mode'];
  /** The endpoint a task of each base duration is created at. */
  url(base: number): string;
  upstreamGets?: () => number;
  /** When a task ended, given its CreateTaskResult, its terminal tasks/get result and its planned duration. */
  endedAt(created: any, terminal: any, plannedMs: number): number;
  close(): Promise<void>;
}

/** Runs both workloads in both modes at once; resolves with the rows and the markdown table. */
export async function runPollingBench(opts: PollingBenchOptions = {}): Promise<PollingBenchResult> {
  const seconds = Math.max(1, Math.min(opts.seconds ?? 40, 120));
  const clients = Math.max(1, Math.min(opts.clients ?? 4, 64));
  const warmupMs = opts.warmupMs ?? 6_000;
  const legs = await Promise.all([
    wrappedLeg('adaptive', false),
    wrappedLeg('fixed', false),
    wrappedLeg('adaptive', true),
    wrappedLeg('fixed', true),
    proxiedLeg('adaptive'),
    proxiedLeg('fixed'),
  ]);
  // Everything runs in this process: its event-loop lag says how much of a delay is the machine's, not the polling's.
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  try {
    const rows = await Promise.all(legs.map((leg) => runLeg(leg, clients, warmupMs, warmupMs + seconds * 1_000)));
    lag.disable();
    const lagMs = { p50: lag.percentile(50) / 1e6, p99: lag.percentile(99) / 1e6 };
    return { rows, markdown: table(rows, { seconds, clients, warmupMs, lagMs }) };
  } finally {
    lag.disable();
    await Promise.all(legs.map((l) => l.close().catch(() => {})));
  }
}

/** A gateway with one route per base duration (`/d<ms>`), or one route `/one` for all. */
async function gateway(
  mode: PollingRow['mode'],
  upstreamUrl: string,
  tools: Record<string, unknown>,
  oneTool: boolean,
): Promise<{ gateway: Gateway; url(base: number): string }> {
  const paths = oneTool ? ['/one'] : DURATIONS_MS.map((d) => `/d${d}`);
  const upstreams = paths.map((path) => ({ name: path.slice(1), path, url: upstreamUrl, tools }));
  const { gateway: gw, origin } = await startGateway({ tasks: { adaptivePolling: mode === 'adaptive' }, upstreams });
  return { gateway: gw, url: (d) => `${origin}${oneTool ? '/one' : `/d${d}`}` };
}

async function wrappedLeg(mode: PollingRow['mode'], oneTool: boolean): Promise<Leg> {
  const fixture = await startLegacyFixture({ tasks: 'sync' });
  const { gateway: gw, url } = await gateway(mode, fixture.url, { slow_compute: { task: 'always' } }, oneTool);
  return {
    workload: oneTool ? 'wrapped, one tool' : 'wrapped',
    mode,
    url,
    // The gateway's own record: it ended when its outcome was stored.
    endedAt: (_created, terminal) => Date.parse(terminal.lastUpdatedAt),
    async close() {
      await gw.close();
      await fixture.close();
    },
  };
}

async function proxiedLeg(mode: PollingRow['mode']): Promise<Leg> {
  const fixture = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: UPSTREAM_POLL_MS, taskTtlMs: 600_000 });
  // Without a rule a modern client's tasks/get of a modern upstream's task passes through untouched; `afterMs` makes
  // the gateway serve the task (its id, its record, its polling).
  const { gateway: gw, url } = await gateway(mode, fixture.url, { slow_compute: { task: 'native', afterMs: 10 } }, false);
  return {
    workload: 'proxied',
    mode,
    url,
    upstreamGets: () => fixture.stats().methods['tasks/get'] ?? 0,
    // The upstream's task started at its creation and slept its duration.
    endedAt: (created, _terminal, plannedMs) => Date.parse(created.createdAt) + plannedMs,
    async close() {
      await gw.close();
      await fixture.close();
    },
  };
}

async function runLeg(leg: Leg, clients: number, warmupMs: number, untilMs: number): Promise<PollingRow> {
  const start = Date.now();
  const samples: Sample[] = [];
  const getsBefore = { at: 0, value: 0, taken: false };
  let measuredTasks = 0;
  const client = async (c: number) => {
    for (let i = c; Date.now() - start < untilMs; i++) {
      const base = DURATIONS_MS[i % DURATIONS_MS.length] as number;
      const planned = Math.round(base * (1 - JITTER + 2 * JITTER * Math.random()));
      const counted = Date.now() - start >= warmupMs;
      if (counted && !getsBefore.taken && leg.upstreamGets) {
        getsBefore.taken = true;
        getsBefore.value = leg.upstreamGets();
      }
      const created = await createTask(leg.url(base), 'slow_compute', { seconds: planned / 1_000 });
      let polls = 0;
      let wait = created.pollIntervalMs as number;
      let terminal: any;
      for (;;) {
        await new Promise((r) => setTimeout(r, wait));
        const r = (await getTask(leg.url(base), created.taskId)).body.result;
        polls++;
        if (TERMINAL.includes(r.status)) {
          terminal = r;
          break;
        }
        wait = r.pollIntervalMs;
      }
      const seenAt = Date.now();
      if (counted) {
        measuredTasks++;
        samples.push({ base, polls, delayMs: Math.max(0, seenAt - leg.endedAt(created, terminal, planned)) });
      }
    }
  };
  await Promise.all(Array.from({ length: clients }, (_, c) => client(c)));
  const upstreamGets = leg.upstreamGets ? leg.upstreamGets() - getsBefore.value : undefined;
  const byDuration: PollingRow['byDuration'] = {};
  for (const base of DURATIONS_MS) {
    const s = samples.filter((x) => x.base === base);
    byDuration[base] = {
      tasks: s.length,
      pollsPerTask: mean(s.map((x) => x.polls)),
      delayP50Ms: quantile(
        s.map((x) => x.delayMs),
        0.5,
      ),
    };
  }
  return {
    workload: leg.workload,
    mode: leg.mode,
    tasks: measuredTasks,
    pollsPerTask: mean(samples.map((x) => x.polls)),
    delayP50Ms: quantile(
      samples.map((x) => x.delayMs),
      0.5,
    ),
    delayP90Ms: quantile(
      samples.map((x) => x.delayMs),
      0.9,
    ),
    // Upstream reads while counted tasks ran, over the counted tasks (tasks created in the warm-up overlap a little).
    ...(upstreamGets !== undefined ? { upstreamGetsPerTask: measuredTasks > 0 ? upstreamGets / measuredTasks : 0 } : {}),
    byDuration,
  };
}

function mean(xs: number[]): number {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

function quantile(xs: number[], q: number): number {
  if (xs.length === 0) return 0;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] as number;
}

function table(rows: PollingRow[], o: { seconds: number; clients: number; warmupMs: number; lagMs: { p50: number; p99: number } }): string {
  const f1 = (n: number) => n.toFixed(2);
  const f0 = (n: number) => n.toFixed(0);
  const lines = [
    `Mixed durations (~${DURATIONS_MS.join(' / ')} ms, ±${JITTER * 100} %), ${o.clients} clients per gateway following each suggested ` +
      `pollIntervalMs, ${o.seconds} s after a ${o.warmupMs / 1_000} s warm-up; fixed = \`tasks.adaptivePolling: false\` ` +
      `(wrapped: \`tasks.pollIntervalMs\` 1000; proxied: the upstream's ${UPSTREAM_POLL_MS} ms). Gateways, fixtures and ` +
      `clients share one process: its event-loop lag was p50 ${o.lagMs.p50.toFixed(0)} ms, p99 ${o.lagMs.p99.toFixed(0)} ms.`,
    '',
    '| workload | mode | tasks | polls/task | seen after end p50 | p90 | upstream tasks/get per task |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.workload} | ${r.mode} | ${r.tasks} | ${f1(r.pollsPerTask)} | ${f0(r.delayP50Ms)} ms | ${f0(r.delayP90Ms)} ms | ${r.upstreamGetsPerTask !== undefined ? f1(r.upstreamGetsPerTask) : '—'} |`,
    ),
    '',
    `| workload | mode | ${DURATIONS_MS.map((d) => `~${d} ms: polls/task, p50 seen after end`).join(' | ')} |`,
    `|---|---|${DURATIONS_MS.map(() => '---').join('|')}|`,
    ...rows.map(
      (r) =>
        `| ${r.workload} | ${r.mode} | ${DURATIONS_MS.map((d) => {
          const b = r.byDuration[d];
          return b && b.tasks > 0 ? `${f1(b.pollsPerTask)}, ${f0(b.delayP50Ms)} ms` : '—';
        }).join(' | ')} |`,
    ),
  ];
  return lines.join('\n');
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const { values } = parseArgs({ options: { seconds: { type: 'string', default: '40' }, clients: { type: 'string', default: '4' } } });
  const started = Date.now();
  const result = await runPollingBench({ seconds: Number(values.seconds), clients: Number(values.clients) });
  console.log(result.markdown);
  console.log(`\n(${((Date.now() - started) / 1_000).toFixed(0)} s)`);
  process.exit(0);
}
