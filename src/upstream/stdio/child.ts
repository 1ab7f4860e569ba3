/**
 * One supervised child process speaking MCP over stdio (2025-11-25 and 2026-07-28 basic/transports/stdio): messages
 * are newline-delimited JSON on stdin/stdout, stderr is the server's log (logged at info). The child is restarted when
 * it exits, each wait twice the last up to a bound, the wait reset once a child has stayed up long enough.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import type { LayerLogger } from '../../translate/index.js';

/** How a crashed child is restarted. */
export interface RestartPolicy {
  /** Wait before the first restart. */
  initialDelayMs: number;
  /** Longest wait between restarts (each failed start doubles the wait up to this). */
  maxDelayMs: number;
  /** A child that stayed up this long resets the wait to `initialDelayMs`. */
  resetAfterMs: number;
}

/** How a child ended: its exit code or signal, or why it could not be started. */
export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** The spawn error's code (ENOENT, EACCES, …) when the process never started. */
  spawnError?: string;
}

/** `starting`: spawned, not confirmed yet; `running`; `restarting`: down, a restart is due; `closed`: for good. */
export type ChildState = 'starting' | 'running' | 'restarting' | 'closed';

/** What the supervisor needs to run one child. */
export interface StdioChildOptions {
  /** The upstream's name (logged; of the command, only the program is, never its arguments). */
  name: string;
  /** The program and its arguments (no shell). */
  command: readonly string[];
  /** The child's whole environment. */
  env: Record<string, string>;
  cwd?: string;
  restart: RestartPolicy;
  /** Longest stdout line accepted; a longer one is dropped (and logged), never buffered without bound. */
  maxLineBytes: number;
  /** Bound on stopping: stdin closed, then SIGTERM after half of it, SIGKILL after the rest. */
  stopTimeoutMs: number;
  log: LayerLogger;
  /** One line the child wrote to stdout (without its newline). */
  onLine(line: string): void;
  /** A new process was created: what is sent now is the first thing it reads. */
  onSpawn(): void;
  /** The current process ended (or could not start); a restart is scheduled unless closed. */
  onExit(exit: ChildExit): void;
}

/** Longest stderr line logged (the rest of the line is cut off). */
const MAX_STDERR_LINE = 2_000;

/** Supervises the child of one stdio upstream: spawn, line framing, stderr to the log, restart with backoff. */
export class StdioChild {
  private proc: ChildProcess | undefined;
  private stateNow: ChildState = 'starting';
  private timer: NodeJS.Timeout | undefined;
  private delayMs: number;
  private startedAt = 0;
  private restartCount = 0;
  private nextStartAt = 0;
  private exited: Promise<void> = Promise.resolve();

  constructor(private readonly opts: StdioChildOptions) {
    this.delayMs = opts.restart.initialDelayMs;
  }

  /** The supervisor's state. */
  get state(): ChildState {
    return this.stateNow;
  }

  /** Restarts so far (spawns after the first). */
  get restarts(): number {
    return this.restartCount;
  }

  /** Milliseconds until the next start while down (0 otherwise). */
  get retryInMs(): number {
    return this.stateNow === 'restarting' ? Math.max(0, this.nextStartAt - Date.now()) : 0;
  }

  /** Listener of state changes (set by the host). */
  onState: (state: ChildState) => void = () => {};

  /** Spawns the first process. */
  start(): void {
    this.spawnNow();
  }

  /** Writes one message line to the child's stdin; false when no process can take it. */
  send(line: string): boolean {
    const stdin = this.proc?.stdin;
    if (!stdin?.writable || (this.stateNow !== 'running' && this.stateNow !== 'starting')) return false;
    stdin.write(`${line}\n`);
    return true;
  }

  private setState(state: ChildState): void {
    if (this.stateNow === state) return;
    this.stateNow = state;
    this.onState(state);
  }

  private spawnNow(): void {
    const { command, env, cwd, name, log } = this.opts;
    this.setState('starting');
    let proc: ChildProcess;
    try {
      proc = spawn(command[0] as string, command.slice(1), { env, ...(cwd ? { cwd } : {}), stdio: ['pipe', 'pipe', 'pipe'], windowsHide: true });
    } catch (e) {
      // Synchronous spawn errors (a bad argument type, a bad cwd on some platforms): treated like a failed start.
      this.ended(undefined, { code: null, signal: null, spawnError: (e as NodeJS.ErrnoException).code ?? 'ERR_SPAWN' });
      return;
    }
    this.proc = proc;
    let done = false;
    let resolveExited: () => void = () => {};
    this.exited = new Promise((r) => (resolveExited = r));
    const finish = (exit: ChildExit): void => {
      if (done) return;
      done = true;
      resolveExited();
      this.ended(proc, exit);
    };
    // Written before anything else can be: the child reads it first.
    this.opts.onSpawn();
    proc.on('spawn', () => {
      this.startedAt = Date.now();
      this.setState('running');
    });
    proc.on('error', (e: NodeJS.ErrnoException) => {
      // Without a pid the process never started (ENOENT, EACCES): a failed start, retried with backoff.
      if (proc.pid === undefined) finish({ code: null, signal: null, spawnError: e.code ?? e.name });
      else log.warn({ upstream: name, err: { type: e.name, message: e.message } }, 'stdio upstream: process error');
    });
    // `close` comes after stdout has ended, so every line the child wrote is read before its calls are failed.
    proc.on('close', (code, signal) => finish({ code, signal }));
    // A write to a child that just died fails asynchronously (EPIPE); its exit is what reports it.
    proc.stdin?.on('error', () => {});
    this.frame(proc);
  }

  /** Splits stdout into lines (bounded) and logs stderr line by line (bounded). */
  private frame(proc: ChildProcess): void {
    const { maxLineBytes, name, log } = this.opts;
    let out = '';
    let skipping = false;
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (chunk: string) => {
      let text = chunk;
      for (;;) {
        const nl = text.indexOf('\n');
        if (nl < 0) break;
        const line = out + text.slice(0, nl);
        out = '';
        text = text.slice(nl + 1);
        if (skipping) skipping = false;
        else if (line.trim() !== '') this.opts.onLine(line.endsWith('\r') ? line.slice(0, -1) : line);
      }
      if (skipping) return;
      out += text;
      if (out.length > maxLineBytes) {
        log.warn({ upstream: name, maxLineBytes }, 'stdio upstream: a message longer than the bound was dropped');
        out = '';
        skipping = true;
      }
    });
    let err = '';
    proc.stderr?.setEncoding('utf8');
    const logLine = (line: string): void => {
      if (line.trim() === '') return;
      // The server's log, of any level (2025-11-25 basic/transports §stdio: the client SHOULD NOT take stderr output for
      // an error condition): at info, so that a server's start banner is not a warning of the gateway's.
      const fields = { upstream: name, stderr: line.length > MAX_STDERR_LINE ? `${line.slice(0, MAX_STDERR_LINE)}…` : line };
      if (log.info) log.info(fields, 'stdio upstream stderr');
      else log.debug(fields, 'stdio upstream stderr');
    };
    proc.stderr?.on('data', (chunk: string) => {
      err += chunk;
      let nl: number;
      while ((nl = err.indexOf('\n')) >= 0) {
        logLine(err.slice(0, nl));
        err = err.slice(nl + 1);
      }
      if (err.length > MAX_STDERR_LINE) {
        logLine(err);
        err = '';
      }
    });
    proc.stderr?.on('end', () => logLine(err));
  }

  /** The current process is gone: report it, then restart after the backoff (unless closed). */
  private ended(proc: ChildProcess | undefined, exit: ChildExit): void {
    if (proc !== undefined && proc !== this.proc) return;
    this.proc = undefined;
    const { name, log, restart } = this.opts;
    if (this.stateNow === 'closed') {
      this.opts.onExit(exit);
      return;
    }
    // A child that stayed up long enough starts the backoff over; one that keeps failing waits longer each time.
    if (this.startedAt > 0 && Date.now() - this.startedAt >= restart.resetAfterMs) this.delayMs = restart.initialDelayMs;
    const wait = this.delayMs;
    this.delayMs = Math.min(this.delayMs * 2, restart.maxDelayMs);
    this.startedAt = 0;
    this.nextStartAt = Date.now() + wait;
    if (exit.spawnError) {
      // The program and the directory it was looked for from (ENOENT: either may be wrong); never the arguments,
      // which may hold credentials.
      const [program] = this.opts.command;
      const cwd = this.opts.cwd ?? process.cwd();
      log.error(
        { upstream: name, error: exit.spawnError, program, cwd, retryInMs: wait },
        `stdio upstream: the command ${JSON.stringify(program)} could not be started (${exit.spawnError}) in ${cwd}`,
      );
    } else log.warn({ upstream: name, code: exit.code, signal: exit.signal, retryInMs: wait }, 'stdio upstream: the process exited');
    this.setState('restarting');
    this.opts.onExit(exit);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      if (this.stateNow === 'closed') return;
      this.restartCount += 1;
      this.spawnNow();
    }, wait);
    this.timer.unref();
  }

  /** Stops for good: stdin closed, SIGTERM after half the bound, SIGKILL after the rest. Idempotent. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const proc = this.proc;
    this.setState('closed');
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = this.exited;
    const within = (ms: number): Promise<boolean> =>
      Promise.race([exited.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
    // 2025-11-25 basic/lifecycle §Shutdown (stdio): close the child's input, then SIGTERM, then SIGKILL.
    proc.stdin?.end();
    if (await within(this.opts.stopTimeoutMs / 2)) return;
    proc.kill('SIGTERM');
    if (await within(this.opts.stopTimeoutMs / 2)) return;
    proc.kill('SIGKILL');
    await within(this.opts.stopTimeoutMs);
  }
}

/** Variables a child inherits from the gateway's environment (nothing else: the gateway's secrets stay its own). */
export const INHERITED_ENV = [
  'PATH',
  'HOME',
  'USER',
  'LOGNAME',
  'SHELL',
  'TERM',
  'LANG',
  'LC_ALL',
  'LC_CTYPE',
  'TZ',
  'TMPDIR',
  'TEMP',
  'TMP',
  'SYSTEMROOT',
  'COMSPEC',
  'PATHEXT',
  'USERPROFILE',
  'APPDATA',
  'LOCALAPPDATA',
] as const;

/** The child's environment: the inherited minimum, with the configured `env` over it. */
export function childEnv(configured: Readonly<Record<string, string>>, base: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of INHERITED_ENV) {
    const v = base[k];
    if (v !== undefined) env[k] = v;
  }
  return { ...env, ...configured };
}
