/**
 * What both eras' upstream tasks share: the state known now, what `next()` last returned, polling only while
 * someone awaits `next()` (at the task's poll interval, bounded below), and the wait for a change.
 *
 * The upstream's `pollInterval(Ms)` is its suggestion for how often to ask (2025-11-25 basic/utilities/tasks §Task
 * Status; tasks extension §Task Polling): the follow loop and the reads clients cause share one clock (`lastPollAt`),
 * so that `tasks/get` is asked at most once per interval whoever asks; only `get()` (an explicit fresh read: a cancel
 * checking the outcome) skips it.
 */
import { isTerminal, type JsonObject, type JsonRpcErrorObject } from '../translate/index.js';
import type { UpstreamTask, UpstreamTaskRef, UpstreamTaskSnapshot } from './client.js';
import { UpstreamTaskLostError } from './errors.js';

/** Shortest poll interval honoured (a task may ask for less; the gateway does not poll faster). */
const MIN_POLL_MS = 50;
/** Poll interval when the task names none. */
const DEFAULT_POLL_MS = 1_000;

/** Bounds of following a task (tests lower them). */
export interface PolledTaskOptions {
  /** Shortest poll interval honoured, ms (default 50). */
  minPollMs?: number;
}

/** An upstream task known by polling (and, per era, by whatever else brings news of it). */
export abstract class PolledTask implements UpstreamTask {
  protected current: UpstreamTaskSnapshot;
  private lastReturned: UpstreamTaskSnapshot;
  /** Set once the upstream no longer knows the task. */
  protected lost: UpstreamTaskLostError | undefined;
  /** Who waits for the state to change. */
  private readonly wakers = new Set<() => void>();
  private polling: Promise<void> | undefined;
  protected released = false;
  /** Aborted on release: every upstream exchange of the task ends with it. */
  protected readonly stop = new AbortController();
  protected readonly minPollMs: number;
  /** When the last poll was started (the creation counts: the upstream has just said the state). */
  private lastPollAt = Date.now();

  constructor(
    readonly id: string,
    readonly created: UpstreamTaskSnapshot,
    opts: PolledTaskOptions = {},
  ) {
    this.current = created;
    this.lastReturned = created;
    this.minPollMs = opts.minPollMs ?? MIN_POLL_MS;
  }

  /** Where the task lives (a legacy task adds its session). */
  get ref(): UpstreamTaskRef {
    return { id: this.id };
  }

  async next(signal: AbortSignal): Promise<UpstreamTaskSnapshot | undefined> {
    for (;;) {
      if (this.lost) throw this.lost;
      if (signal.aborted || this.released) return undefined;
      if (isTerminal(this.current.status) || differs(this.current, this.lastReturned)) {
        this.lastReturned = this.current;
        return this.current;
      }
      // Wait for news (an era may bring some unasked), or until the poll interval has passed since the last poll
      // (whoever asked), then poll.
      this.onWait();
      const dueAt = this.lastPollAt + this.pollEveryMs(this.intervalMs());
      const woken = await this.changeOrTimeout(Math.max(0, dueAt - Date.now()), signal);
      if (!woken && !signal.aborted && !this.released && this.pollDue()) await this.poll(signal);
    }
  }

  /** Whether the upstream's poll interval has passed since it was last asked (a poll now honours its suggestion). */
  pollDue(): boolean {
    return Date.now() - this.lastPollAt >= this.intervalMs();
  }

  /** The upstream's poll interval (its own suggestion, else the default), bounded below. */
  protected intervalMs(): number {
    return Math.max(this.minPollMs, this.current.pollIntervalMs ?? DEFAULT_POLL_MS);
  }

  async get(signal?: AbortSignal): Promise<UpstreamTaskSnapshot> {
    if (this.lost) throw this.lost;
    if (!isTerminal(this.current.status)) await this.poll(signal);
    if (this.lost) throw this.lost;
    return this.current;
  }

  abstract answer(responses: JsonObject): Promise<string[]>;
  abstract cancel(): Promise<'cancelled' | 'terminal' | 'unknown'>;

  /** Stops following the task; the upstream task runs on. Idempotent. */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.stop.abort(new Error('task released'));
    this.onRelease();
    this.wake();
  }

  /** Called each time `next()` is about to wait: an era may start following the task another way. */
  protected onWait(): void {}

  /** How long to wait between polls, given the task's own interval (longer while news comes otherwise). */
  protected pollEveryMs(taskIntervalMs: number): number {
    return taskIntervalMs;
  }

  /** What an era lets go of on release (a stream, a session hold). */
  protected abstract onRelease(): void;

  /** Asks the upstream once and merges what it says into `current`. */
  protected abstract pollOnce(): Promise<void>;

  /** One poll, shared by concurrent callers; `signal` stops waiting for it, not the poll itself. */
  protected poll(signal?: AbortSignal): Promise<void> {
    if (!this.polling) this.lastPollAt = Date.now();
    this.polling ??= this.pollOnce().finally(() => {
      this.polling = undefined;
    });
    return signal ? raceAbort(this.polling, signal) : this.polling;
  }

  /** A new non-terminal state (ignored once terminal: an outcome stands). */
  protected update(s: UpstreamTaskSnapshot): void {
    if (isTerminal(this.current.status)) return;
    this.current = s;
    this.wake();
  }

  /** The terminal state; later news is ignored. */
  protected settle(s: UpstreamTaskSnapshot): void {
    if (isTerminal(this.current.status)) return;
    const terminal: UpstreamTaskSnapshot = { ...s };
    delete terminal.inputRequests;
    this.current = terminal;
    this.wake();
  }

  /** The upstream no longer knows the task (-32602 on `tasks/get`). */
  protected loseTask(error: JsonRpcErrorObject): void {
    this.lost ??= new UpstreamTaskLostError(this.id, { cause: error });
    this.wake();
  }

  protected wake(): void {
    for (const w of [...this.wakers]) w();
  }

  /**
   * Waits until the state changes (and `until` holds, if given), `ms` pass or `signal` aborts. Resolves `true` when
   * woken by a change.
   */
  protected changeOrTimeout(ms: number, signal: AbortSignal, until?: () => boolean): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (woken: boolean) => {
        clearTimeout(timer);
        this.wakers.delete(onChange);
        signal.removeEventListener('abort', onAbort);
        resolve(woken);
      };
      const onChange = () => {
        if (!until || until() || this.released || this.lost) done(true);
      };
      const onAbort = () => done(false);
      const timer = setTimeout(() => done(false), ms);
      timer.unref();
      this.wakers.add(onChange);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

/** Whether two states differ in what a follower reacts to: status, status message, the set of input keys. */
function differs(a: UpstreamTaskSnapshot, b: UpstreamTaskSnapshot): boolean {
  if (a.status !== b.status || a.statusMessage !== b.statusMessage) return true;
  const ka = Object.keys(a.inputRequests ?? {}).sort();
  const kb = Object.keys(b.inputRequests ?? {}).sort();
  return ka.length !== kb.length || ka.some((k, i) => k !== kb[i]);
}

/** Resolves with `p`, or when `signal` aborts (then `p` runs on for whoever shares it). */
function raceAbort(p: Promise<void>, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<void>((resolve) => {
    onAbort = () => resolve();
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return Promise.race([p, aborted]).finally(() => {
    if (onAbort) signal.removeEventListener('abort', onAbort);
  });
}
