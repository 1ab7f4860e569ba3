/**
 * The benchmark's child processes: every server (raw upstreams, the plain proxy, gateways, Redis) is a process of its
 * own, pinned to the server core when the machine has two, its output going to a log file (not a pipe the harness
 * would have to drain on the loader's core). Every child is registered and killed when the harness exits, however
 * it exits: a benchmark must leave no process behind.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { cpus } from 'node:os';

/** Which cores the loader and the servers run on, or why nothing is pinned. */
export interface Pinning {
  /** `taskset -c <n>` prefix for servers ([] when not pinned). */
  server: string[];
  /** Human-readable description for the results. */
  describe: string;
  pinned: boolean;
}

/**
 * Pins this process (the harness and the loader it forks) to core 0 and decides that servers go on core 1, when the
 * machine has two cores or more and `taskset` exists; otherwise nothing is pinned and the results say so.
 */
export function pinCores(): Pinning {
  const n = cpus().length;
  if (n < 2) return { server: [], pinned: false, describe: `not pinned: ${n} core` };
  const probe = spawnSync('taskset', ['-p', '-c', '0', String(process.pid)], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return { server: [], pinned: false, describe: `not pinned: taskset unavailable (${probe.error?.message ?? probe.stderr.trim()})` };
  return { server: ['taskset', '-c', '1'], pinned: true, describe: 'loader (and harness) on core 0, every server process on core 1 (taskset)' };
}

const running = new Set<ChildProcess>();

function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
}
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killAll();
    process.stderr.write(`\nbench: ${signal}, child processes killed\n`);
    process.exit(130);
  });
}

/** Registers a child the harness started some other way (the loader), so that it dies with the harness. */
export function track(child: ChildProcess): void {
  running.add(child);
  child.once('exit', () => running.delete(child));
}

/** A server process that is running and has said where it listens. */
export interface ServerProcess {
  name: string;
  pid: number;
  /** The first capture group of the ready pattern (the URL it serves). */
  url: string;
  logFile: string;
  /** Its output so far. */
  log(): string;
  /** SIGTERM, then SIGKILL after a bound; resolves once it has exited. */
  stop(): Promise<void>;
}

/** A free loopback port (for a server that does not report the port it took, e.g. a gateway logging at warn). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** Starting a server gives up after this long: it is broken then, not slow. */
const START_BOUND_MS = 60_000;

/**
 * Spawns `argv` (with the pinning prefix) writing to `logFile`, and resolves once its output matches `ready` (the
 * first group is the URL), or, when `ready` is a port and URL, once that port accepts connections. Rejects with
 * the output when it exits first or does not get ready within the bound.
 */
export async function startServer(
  name: string,
  argv: string[],
  opts: { pinning: Pinning; logFile: string; ready: RegExp | { port: number; url: string }; env?: NodeJS.ProcessEnv },
): Promise<ServerProcess> {
  const fd = openSync(opts.logFile, 'w');
  const full = [...opts.pinning.server, ...argv];
  const child = spawn(full[0]!, full.slice(1), { stdio: ['ignore', fd, fd], env: opts.env ?? process.env });
  closeSync(fd);
  track(child);
  const log = () => {
    try {
      return readFileSync(opts.logFile, 'utf8');
    } catch {
      return '';
    }
  };
  let exited = child.exitCode !== null;
  const exit = new Promise<void>((resolve) =>
    child.once('exit', () => {
      exited = true;
      resolve();
    }),
  );
  child.once('error', () => undefined);
  // The log is a file: polled until the ready line appears (startup only, never while measuring).
  const url = await new Promise<string>((resolve, reject) => {
    const started = Date.now();
    let probing = false;
    const timer = setInterval(() => {
      const ready = opts.ready;
      const m = ready instanceof RegExp ? ready.exec(log()) : undefined;
      if (m) {
        clearInterval(timer);
        resolve(m[1] ?? '');
      } else if (!(ready instanceof RegExp) && !probing && !exited) {
        probing = true;
        void accepts(ready.port).then((ok) => {
          probing = false;
          if (ok && !exited) {
            clearInterval(timer);
            resolve(ready.url);
          }
        });
      } else if (exited || Date.now() - started > START_BOUND_MS) {
        clearInterval(timer);
        child.kill('SIGKILL');
        reject(new Error(`${name} ${exited ? `exited (${child.exitCode ?? child.signalCode})` : `not ready within ${START_BOUND_MS} ms`}: ${full.join(' ')}\n${log().slice(-3000)}`));
      }
    }, 25);
  });
  return {
    name,
    pid: child.pid ?? 0,
    url: url.replace('://0.0.0.0:', '://127.0.0.1:'),
    logFile: opts.logFile,
    log,
    async stop() {
      if (exited) return;
      child.kill('SIGTERM');
      const bound = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exit;
      clearTimeout(bound);
    },
  };
}
