/**
 * The benchmark's child processes: every server (raw upstreams, the plain proxy, gateways, Redis) is a process of its
 * own, pinned to the server core when the machine has two, its output going to a log file (not a pipe the harness
 * would have to drain on the loader's core). Every child is registered and killed when the harness exits, however
 * it exits: a benchmark must leave no process behind.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { cpus } from 'node:os';

/** Which cores the loader and the servers run on, or why nothing is pinned. */
export interface Pinning {
  /** `taskset -c <n>` prefix for a server that cannot be pinned after it starts ([] when not pinned). */
  server: string[];
  /** `taskset -c <all cores>` prefix: a server starts on every core (a cold start is CPU-heavy), then is pinned. */
  start: string[];
  /** Pins a running process (all its threads) to the server core. */
  pin(pid: number): void;
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
  const none = (why: string): Pinning => ({ server: [], start: [], pin: () => undefined, pinned: false, describe: `not pinned: ${why}` });
  if (n < 2) return none(`${n} core`);
  const probe = spawnSync('taskset', ['-a', '-p', '-c', '0', String(process.pid)], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) return none(`taskset unavailable (${probe.error?.message ?? probe.stderr.trim()})`);
  return {
    server: ['taskset', '-c', '1'],
    start: ['taskset', '-c', `0-${n - 1}`],
    pin(pid) {
      const r = spawnSync('taskset', ['-a', '-p', '-c', '1', String(pid)], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`taskset could not pin process ${pid}: ${r.stderr.trim()}`);
    },
    pinned: true,
    describe: 'loader (and harness) on core 0, every server process on core 1 once started (taskset)',
  };
}

const running = new Set<ChildProcess>();

/**
 * A detached watchdog for the one case the handlers below cannot cover, the harness itself killed with SIGKILL: it
 * reads child pids on its stdin and, when that pipe closes without a final `done`, kills them.
 */
let watchdog: ChildProcess | undefined;
const WATCHDOG = `let pids=[],buf='',done=false;process.stdin.on('data',d=>{buf+=d;const l=buf.split('\\n');buf=l.pop();for(const x of l){if(x==='done')done=true;else pids.push(+x)}});process.stdin.on('end',()=>{if(!done)for(const p of pids){try{process.kill(p,'SIGKILL')}catch{}}process.exit(0)})`;
function watch(pid: number | undefined): void {
  if (!pid) return;
  if (!watchdog) {
    watchdog = spawn(process.execPath, ['-e', WATCHDOG], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    watchdog.unref();
  }
  watchdog.stdin?.write(`${pid}\n`);
}

function killAll(): void {
  for (const child of running) child.kill('SIGKILL');
  watchdog?.stdin?.end('done\n');
}
process.once('exit', killAll);
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
  process.once(signal, () => {
    killAll();
    process.stderr.write(`\nbench: ${signal}, child processes killed\n`);
    process.exit(130);
  });
}

// Orphaned (the parent that started the harness died: a killed test run, a closed terminal): stop, with every child.
const parent = process.ppid;
setInterval(() => {
  if (process.ppid !== parent) {
    killAll();
    process.exit(130);
  }
}, 500).unref();

/** Registers a child the harness started some other way (the loader), so that it dies with the harness. */
export function track(child: ChildProcess): void {
  running.add(child);
  watch(child.pid);
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
export { freePort } from '../../test/helpers/redis-server.js';

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
  opts: { pinning: Pinning; logFile: string; ready: RegExp | { port: number; url: string }; env?: NodeJS.ProcessEnv | undefined },
): Promise<ServerProcess> {
  const fd = openSync(opts.logFile, 'w');
  const full = [...opts.pinning.start, ...argv];
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
        reject(
          new Error(
            `${name} ${exited ? `exited (${child.exitCode ?? child.signalCode})` : `not ready within ${START_BOUND_MS} ms`}: ${full.join(' ')}\n${log().slice(-3000)}`,
          ),
        );
      }
    }, 25);
  });
  opts.pinning.pin(child.pid ?? 0);
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
