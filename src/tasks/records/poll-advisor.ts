/**
 * The poll advisor: the `pollIntervalMs` a task read suggests (tasks extension §Task Polling; 2025-11-25
 * basic/utilities/tasks §Task Status: `pollInterval` is the receiver's suggestion, and a requestor SHOULD respect it).
 * A fixed interval is wrong for most tools: a call that ends in 50 ms is seen a second late, one that runs a minute is
 * polled sixty times. The advisor learns each tool's durations (per upstream and tool name) from the tasks it has
 * seen end and, from those longer than this task's age, picks the next poll where the delay it adds for the tasks
 * ending before it and the polls still needed by those running past it cost least (one poll is worth half the
 * interval the task would suggest unlearned, of delay: what a client polling at that interval waits on average). A tool whose calls all
 * take about as long is polled once, just after they end; one whose calls vary widely (by their arguments) is polled
 * at each group of durations in turn. Each read aims again; a task that outlives everything seen backs off
 * geometrically.
 *
 * Memory is bounded: the last `WINDOW` durations per tool, for the `MAX_TOOLS` tools that ended a task most recently.
 * Several instances sharing a store each learn on their own, from every task change they hear (their own and, over
 * the store's `task` topic, the other instances'), so their suggestions agree closely without sharing any state.
 */
import { isTerminal, type TaskRecord } from '../../translate/index.js';
import type { TaskPolicy } from '../route.js';

/** Durations kept per tool (the most recent ones: a tool that gets slower is followed within a window). */
const WINDOW = 64;
/** Tools remembered at most (the ones that ended a task least recently are forgotten first). */
const MAX_TOOLS = 1_024;
/** Durations a tool needs before its suggestions are learned ones (until then: the configured interval). */
const MIN_SAMPLES = 3;
/** Tasks remembered as having asked for input (their durations include the client's answer time). */
const MAX_ASKED = 10_000;
/**
 * What one poll fewer is worth in delay, as a share of the interval the task would suggest unlearned (the configured
 * one; a proxied task's upstream's): a client polling at a fixed interval sees a task end half an interval late on
 * average, so whoever chose that interval accepts about that much.
 */
const POLL_WORTH = 0.5;
/** A task that outlived every duration seen is polled again after this share of its age (geometric back-off). */
const OUTLIVED_FACTOR = 0.5;

/** How suggestions are bounded (config `tasks.pollIntervalMs`, `tasks.adaptivePolling`, `tasks.min/maxPollIntervalMs`). */
export interface PollAdviceOptions {
  /** Whether suggestions are learned at all (off: every task suggests its stored interval, as configured). */
  enabled: boolean;
  /** Shortest interval suggested (never above the configured default: the bounds never exclude it). */
  minMs: number;
  /** Longest interval suggested (never below the configured default). */
  maxMs: number;
}

/** Learned suggestions between 100 ms and 30 s (the config's defaults, for a runtime built without them). */
export const DEFAULT_POLL_ADVICE: PollAdviceOptions = { enabled: true, minMs: 100, maxMs: 30_000 };

/** The durations of one tool's tasks, newest last in a ring, with a sorted copy made on demand. */
class ToolDurations {
  private readonly ring: number[] = [];
  private next = 0;
  private sorted: number[] | undefined;

  add(ms: number): void {
    if (this.ring.length < WINDOW) this.ring.push(ms);
    else this.ring[this.next] = ms;
    this.next = (this.next + 1) % WINDOW;
    this.sorted = undefined;
  }

  get count(): number {
    return this.ring.length;
  }

  /** The durations, ascending (cached until the next one is added). */
  ascending(): readonly number[] {
    this.sorted ??= [...this.ring].sort((a, b) => a - b);
    return this.sorted;
  }
}

/** Learns tools' task durations and suggests each task's poll interval from them. */
export class PollAdvisor {
  private readonly tools = new Map<string, ToolDurations>();
  /** Tasks seen in `input_required`: their durations say how long a person took to answer, not how long the tool runs. */
  private readonly asked = new Set<string>();
  private minMs = 0;
  private maxMs = 0;

  constructor(
    private o: PollAdviceOptions,
    /** The configured interval (`tasks.pollIntervalMs`): unknown tools get it, and the bounds never exclude it. */
    private defaultMs: number,
  ) {
    this.configure(o, defaultMs);
  }

  /** Replaces the options and the configured interval (a reload); what was learned so far stays. */
  configure(o: PollAdviceOptions, defaultMs: number): void {
    this.o = o;
    this.defaultMs = defaultMs;
    this.minMs = Math.min(o.minMs, defaultMs);
    this.maxMs = Math.max(o.maxMs, defaultMs);
  }

  /** Learns from a task record change: a task that ended completed or failed adds its duration to its tool's. */
  observe(t: TaskRecord): void {
    if (!this.o.enabled) return;
    if (t.status === 'input_required') {
      this.asked.add(t.taskId);
      if (this.asked.size > MAX_ASKED) {
        const oldest = this.asked.values().next();
        if (!oldest.done) this.asked.delete(oldest.value);
      }
      return;
    }
    if (!isTerminal(t.status)) return;
    if (this.asked.delete(t.taskId) || t.status === 'cancelled') return;
    // The time from the task's creation to its outcome being readable: what a client polling from creation waits.
    const ms = Date.parse(t.lastUpdatedAt) - Date.parse(t.createdAt);
    if (!Number.isFinite(ms) || ms < 0) return;
    this.record(toolKey(t.upstream, t.tool), ms);
  }

  /**
   * The interval a read of this task suggests. A rule's own `pollIntervalMs` wins (as stored in the record), and so
   * does the stored interval while the task waits for input (the client acts next, not the tool) and once it has ended.
   * A proxied task is never told to poll faster than its stored interval: that is the upstream's own suggestion (or the
   * rule's, or the default), and the gateway does not ask the upstream more often, so a faster poll could not see more;
   * except a job, whose status tool the gateway calls at this same suggestion.
   */
  suggest(t: Pick<TaskRecord, 'pollIntervalMs' | 'status' | 'upstream' | 'tool' | 'createdAt' | 'kind' | 'job'>, policy: TaskPolicy, now = Date.now()): number {
    const stored = t.pollIntervalMs ?? this.defaultMs;
    if (!this.o.enabled || policy.pollIntervalMs !== undefined || t.status !== 'working') return stored;
    const learned = this.tools.get(toolKey(t.upstream, t.tool));
    if (!learned || learned.count < MIN_SAMPLES) return stored;
    const age = Math.max(0, now - Date.parse(t.createdAt));
    const ms = Number.isFinite(age) ? clamp(nextPollIn(learned.ascending(), age, stored * POLL_WORTH), this.minMs, this.maxMs) : stored;
    // A job's status tool is the gateway's to call when it likes (jobs/job-task.ts asks this same suggestion): learned.
    return t.kind === 'proxied' && t.job === undefined ? Math.max(ms, stored) : ms;
  }

  /** The record as a read shows it: `pollIntervalMs` as suggested now (the same object when that is what it holds). */
  advise(t: TaskRecord, policy: TaskPolicy, now = Date.now()): TaskRecord {
    const ms = this.suggest(t, policy, now);
    return ms === t.pollIntervalMs ? t : { ...t, pollIntervalMs: ms };
  }

  /** How many tools are remembered (bounded by `MAX_TOOLS`). */
  get size(): number {
    return this.tools.size;
  }

  private record(key: string, ms: number): void {
    let d = this.tools.get(key);
    if (d)
      this.tools.delete(key); // re-inserted last: the map's order is the order of last news
    else d = new ToolDurations();
    d.add(ms);
    this.tools.set(key, d);
    if (this.tools.size > MAX_TOOLS) {
      const oldest = this.tools.keys().next();
      if (!oldest.done) this.tools.delete(oldest.value);
    }
  }
}

/**
 * How long until the next poll of a task of this age: at the duration ahead of it that costs least (see below); when
 * the task has outlived them all, a share of its age (polls back off geometrically instead of hammering a task that
 * hangs).
 */
function nextPollIn(ascending: readonly number[], age: number, pollWorthMs: number): number {
  // First duration above the age (binary search over the sorted window).
  let lo = 0;
  let hi = ascending.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((ascending[mid] as number) <= age) lo = mid + 1;
    else hi = mid;
  }
  const left = ascending.length - lo;
  if (left === 0) return age * OUTLIVED_FACTOR;
  // Poll next at the duration T (one of those still ahead) that costs least: the mean delay it adds for the tasks that
  // end before T, plus `pollWorthMs` for each task still running at T (it needs another poll). Over the k-th of the m
  // durations ahead: (k·T − Σ_{j≤k} d_j + pollWorthMs·(m − k)) / m, i.e. the least k·T − Σ_{j≤k} d_j − pollWorthMs·k.
  let best = lo;
  let bestCost = Infinity;
  let sum = 0;
  for (let i = lo; i < ascending.length; i++) {
    const d = ascending[i] as number;
    sum += d;
    const k = i - lo + 1;
    const cost = k * d - sum - pollWorthMs * k;
    if (cost < bestCost) {
      bestCost = cost;
      best = i;
    }
  }
  return (ascending[best] as number) - age;
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.round(Math.min(hi, Math.max(lo, v)));
}

function toolKey(upstream: string, tool: string): string {
  return `${upstream}\u0000${tool}`;
}
