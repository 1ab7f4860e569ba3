/**
 * Helpers of postgres-instances.test.ts (not a test file): real gateway processes on one Postgres store, tasks
 * created and polled through them by raw 2026-07-28 clients, and pollers that keep polling `tasks/get` across the
 * loss of an instance or of the database while every reply (and its own round trip) is recorded.
 */
import type { Test } from 'tap';
import { startGatewayProcess, TEST_SECRET, type GatewayProcess } from '../helpers/gateway-process.js';
import type { RawReply } from '../helpers/modern.js';
import { getTask, TERMINAL } from '../helpers/task-helpers.js';

/** A short lease: a lost instance's work is claimed by another within a few seconds. */
export const LEASE_MS = 1500;
/** Every instance holds the same shared secret, as a shared store requires. */
export const ENV = { MCP_GATEWAY_STATE_SECRET: TEST_SECRET };

/** The wire form of GW_TASK_INSTANCE_LOST (docs/errors.md): in-band, JSON-RPC -32603, the catalog's message. */
export const INSTANCE_LOST = { code: -32603, message: 'The gateway instance running this task was lost; the task did not finish' };
/** The wire form of GW_STORE_UNAVAILABLE (docs/errors.md): HTTP 503, JSON-RPC -31003, a 1 s retry hint. */
export const STORE_UNAVAILABLE = { status: 503, code: -31003, message: 'The task store is unavailable; retry shortly', retryAfterMs: 1000 };

/** The store part of a gateway configuration: Postgres at `url`, in `schema`. */
export function pgStore(url: string, schema: string, commandTimeoutMs = 2000): Record<string, unknown> {
  return { kind: 'postgres', url, schema, migrate: 'auto', poolSize: 20, commandTimeoutMs, connectTimeoutMs: 2000 };
}

/** Starts gateway processes (in parallel) on one configuration; each is SIGKILLed at the end of `t` if still running. */
export async function startInstances(t: Test, names: string[], config: Record<string, unknown>): Promise<GatewayProcess[]> {
  const settled = await Promise.allSettled(names.map((name) => startGatewayProcess({ name, config, env: ENV })));
  const started = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  t.teardown(() => Promise.all(started.map((g) => (g.exit ? undefined : g.kill('SIGKILL')))));
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return started;
}

/** A reply, or a refused or reset connection as a reply with status 0 (a killed instance is reported, not thrown). */
export function safe(p: Promise<RawReply>): Promise<RawReply> {
  return p.catch((e: Error): RawReply => ({ status: 0, contentType: '', body: { fetchError: String(e.cause ?? e) }, messages: [] }));
}

export const firstText = (result: any): string | undefined => result?.content?.[0]?.text;

/** `fn` over `items`, at most `limit` at once, in order of the items. */
export async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i] as T, i);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** A task the pollers follow: its id, the path it was created on, and the last result a `tasks/get` gave. */
export interface Followed {
  taskId: string;
  /** The upstream name (the MCP endpoint the task lives on). */
  path: string;
  last?: any;
}

/** One `tasks/get` a poller sent: when, through which instance, how long its round trip took, and the reply. */
export interface Sent {
  taskId: string;
  via: string;
  startedAt: number;
  endedAt: number;
  ms: number;
  reply: RawReply;
}

/** Options of `startPollers`. */
export interface PollerOptions {
  /** How many clients poll at once. */
  workers: number;
  /** Least time between two polls of one task (a client's poll interval). */
  spacingMs: number;
  /** The instances polled, in turn (read at each poll: an instance may be taken out). */
  via(): GatewayProcess[];
  /** Whether a task needs no more polls (default: once it is terminal). */
  done?(task: Followed): boolean;
}

/**
 * Clients polling `tasks/get` of every task in `tasks` (an array that may grow meanwhile) until stopped, each poll
 * through the next instance in turn, the task polled longest ago first. Every request is kept in `sent`; a 200 with
 * a result is also the task's `last`.
 */
export function startPollers(tasks: Followed[], opts: PollerOptions): { sent: Sent[]; stop(): Promise<void> } {
  const sent: Sent[] = [];
  const lastPolled = new Map<string, number>();
  const done = opts.done ?? ((f: Followed) => TERMINAL.includes(f.last?.status));
  let stopped = false;
  let turn = 0;
  const worker = async () => {
    while (!stopped) {
      const now = Date.now();
      let task: Followed | undefined;
      for (const f of tasks) {
        const at = lastPolled.get(f.taskId) ?? 0;
        if (!done(f) && at + opts.spacingMs <= now && (!task || at < (lastPolled.get(task.taskId) ?? 0))) task = f;
      }
      if (!task) {
        // Nothing due (none yet, or all done or polled just now): a client's idle moment, until stopped.
        await new Promise((r) => setTimeout(r, opts.spacingMs / 4));
        continue;
      }
      lastPolled.set(task.taskId, Date.now());
      const gateways = opts.via();
      const g = gateways[turn++ % gateways.length] as GatewayProcess;
      const startedAt = Date.now();
      const reply = await safe(getTask(g.url(task.path), task.taskId));
      const endedAt = Date.now();
      sent.push({ taskId: task.taskId, via: g.name, startedAt, endedAt, ms: endedAt - startedAt, reply });
      if (reply.status === 200 && reply.body?.result?.taskId === task.taskId) task.last = reply.body.result;
    }
  };
  const running = Promise.all(Array.from({ length: opts.workers }, worker));
  return {
    sent,
    async stop() {
      stopped = true;
      await running;
    },
  };
}

/** Resolves once `cond()` holds, checked every `everyMs`; throws, with `what` and `detail()`, after `boundMs`. */
export async function waitUntil(cond: () => boolean, what: string, boundMs: number, detail: () => unknown = () => '', everyMs = 20): Promise<number> {
  const started = Date.now();
  while (!cond()) {
    if (Date.now() - started > boundMs) throw new Error(`${what}: not within ${boundMs} ms; ${JSON.stringify(detail()).slice(0, 3000)}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return Date.now() - started;
}

/** Polls `/readyz` of `g` until it answers `status`; returns how long that took. Throws with the last answer after `boundMs`. */
export async function readyzBecomes(g: GatewayProcess, status: number, boundMs: number): Promise<{ ms: number; body: unknown }> {
  const started = Date.now();
  let last: { status: number; text: string } = { status: 0, text: '' };
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${g.port}/readyz`);
      last = { status: res.status, text: await res.text() };
    } catch (e) {
      last = { status: 0, text: String((e as Error).cause ?? e) };
    }
    if (last.status === status) return { ms: Date.now() - started, body: JSON.parse(last.text) };
    if (Date.now() - started > boundMs) throw new Error(`/readyz of ${g.name} not ${status} within ${boundMs} ms; last: ${last.status} ${last.text}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether a poll was answered with its task (HTTP 200, the task's own id). */
export const answered = (s: Sent): boolean => s.reply.status === 200 && s.reply.body?.result?.taskId === s.taskId;

/** Whether a reply is the catalogued GW_STORE_UNAVAILABLE answer. */
export function isStoreUnavailable(r: RawReply): boolean {
  const e = r.body?.error;
  return (
    r.status === STORE_UNAVAILABLE.status &&
    e?.code === STORE_UNAVAILABLE.code &&
    e?.message === STORE_UNAVAILABLE.message &&
    e?.data?.retryAfterMs === STORE_UNAVAILABLE.retryAfterMs
  );
}

/** Counts of `values`, as an object (for failure messages and the report). */
export function tally(values: string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

/** The end of a process's output (what led to a crash). */
export const lastLines = (text: string, n = 15): string => text.split('\n').slice(-n).join('\n');
