/**
 * A real PostgreSQL server for tests, on a free loopback port (never 5432): `initdb` into a fresh temp dir, then
 * `postgres` in the foreground as a child of the test, so that it dies with the test and leaves nothing behind.
 * Unlike the Redis one (redis-server.ts) it keeps its data: `kill()` (a crash) or `stop()` then `restart()` on the same
 * port and data directory is how the durability and outage tests take Postgres away and give it back while a store
 * keeps its address, and what was committed before is still there. Not a test file.
 *
 * Binaries: `PG_BIN_DIR` when set, else `initdb` and `postgres` on PATH, else the newest `/usr/lib/postgresql/<v>/bin`
 * (Debian's package does not put them on PATH). Postgres refuses to run as root: as root, initdb and postgres run as
 * the `postgres` OS user (which Debian's package creates), in a temp dir handed to that user.
 */
import { type ChildProcess, type SpawnOptions, spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { accessSync, chmodSync, chownSync, constants, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freePort } from './redis-server.js';

/** A running postgres this process started, with a data directory of its own. */
export interface PostgresServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication: no password). */
  url: string;
  port: number;
  /** The cluster's data directory (removed by `dispose()`). */
  dataDir: string;
  /** With `startPostgres({ tls: true })`: the server's self-signed certificate (its own CA), PEM; it also takes TLS. */
  caFile?: string;
  /** Ends it (SIGINT: a fast shutdown, open sessions are ended) and resolves once it has exited. Idempotent. */
  stop(): Promise<void>;
  /**
   * Ends it abruptly, as a crash would: SIGKILL to the postmaster and every backend at once. Resolves once they are all
   * gone. Idempotent. What was committed survives: `restart()` recovers it from the WAL.
   */
  kill(): Promise<void>;
  /** Starts it again on the same port and with the same data directory (after `stop`/`kill`, or stops it first). */
  restart(): Promise<void>;
  /**
   * Freezes it (SIGSTOP to the postmaster and all its backends): connections stay open but nothing answers, as with a
   * hung or overloaded database. `resume()` (SIGCONT) thaws it with its data and sessions intact. `stop`/`kill` resume
   * it first.
   */
  pause(): void;
  resume(): void;
  /** The final teardown: kills it and removes its temp dir, data included. Idempotent; no `restart()` after it. */
  dispose(): Promise<void>;
}

/** Bound on a start (initdb, then postgres up; or a restart, crash recovery included): not ready by then is broken. */
const START_TIMEOUT_MS = 20_000;
/** Bound on the wait for the processes of a killed server to be gone. */
const GONE_TIMEOUT_MS = 5_000;
/** What postgres logs once it accepts connections (the messages are in English: lc_messages=C). */
const READY = 'database system is ready to accept connections';

/**
 * Server settings, for speed where that costs no durability against what the tests do to it (SIGKILL of the
 * processes, never of the machine): `fsync=off` only skips flushing the OS page cache to disk, and a killed process
 * does not lose the page cache, only an OS crash or a power cut would. `synchronous_commit=on` (the default, set so
 * that no one turns it off here) is what matters: a commit is acknowledged only once its WAL record is written to the
 * kernel, so a SIGKILL right after an acknowledged commit cannot lose it. `full_page_writes` stays on (the default): a
 * process killed in the middle of writing an 8 kB page can leave it torn, and the full-page images in the WAL are what
 * crash recovery repairs that with.
 */
const SETTINGS = ['fsync=off', 'synchronous_commit=on', 'full_page_writes=on', 'lc_messages=C'];

/** Where the binaries are and whom they run as, or why this machine cannot start a server of its own. */
interface Setup {
  initdb: string;
  postgres: string;
  /** The `postgres` OS user's ids, when this process is root. */
  user?: { uid: number; gid: number };
}

let setup: Setup | string | undefined;

/** The binaries and user (computed once), or the reason there are none. */
function resolveSetup(): Setup | string {
  setup ??= findSetup();
  return setup;
}

function findSetup(): Setup | string {
  const dir = binDir();
  if ('missing' in dir) return dir.missing;
  const initdb = join(dir.dir, 'initdb');
  const postgres = join(dir.dir, 'postgres');
  const version = spawnSync(postgres, ['--version'], { encoding: 'utf8' });
  if (version.error || version.status !== 0) return `${postgres} --version failed (${version.error?.message ?? `exit ${version.status}`})`;
  if (process.getuid?.() !== 0) return { initdb, postgres };
  const uid = idOf('-u');
  const gid = idOf('-g');
  if (uid === undefined || gid === undefined) {
    return "running as root, which postgres refuses, and there is no `postgres` OS user to run it as (install Debian's postgresql package)";
  }
  const unreachable = [dir.dir, parentDir()].find((d) => !traversableByOthers(d));
  if (unreachable) return `running as root: the postgres OS user cannot reach ${unreachable} (not traversable by others)`;
  return { initdb, postgres, user: { uid, gid } };
}

/** The directory holding `initdb` and `postgres` (absolute), or why none was found. */
function binDir(): { dir: string } | { missing: string } {
  const both = (d: string) => ['initdb', 'postgres'].every((b) => isExecutable(join(d, b)));
  const given = process.env['PG_BIN_DIR'];
  if (given) return both(given) ? { dir: resolve(given) } : { missing: `PG_BIN_DIR=${given} holds no executable initdb and postgres` };
  const onPath = (process.env['PATH'] ?? '').split(':').find((d) => d.startsWith('/') && both(d));
  if (onPath) return { dir: onPath };
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian) ? readdirSync(debian).filter((v) => /^\d+(\.\d+)?$/.test(v)) : [];
  const newest = versions
    .sort((a, b) => Number(b) - Number(a))
    .map((v) => join(debian, v, 'bin'))
    .find(both);
  if (newest) return { dir: newest };
  return { missing: `no initdb and postgres binaries (PG_BIN_DIR unset, none on PATH nor in ${debian}/*/bin); install postgresql or set PG_URL` };
}

function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** `id <flag> postgres` as a number, or `undefined` when there is no such user. */
function idOf(flag: '-u' | '-g'): number | undefined {
  const r = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  const id = Number.parseInt(r.stdout ?? '', 10);
  return r.status === 0 && Number.isInteger(id) ? id : undefined;
}

/** Where the temp dirs go: the OS temp dir (resolved once, so that a later `TMPDIR` change does not move them). */
function parentDir(): string {
  return resolve(tmpdir());
}

/** Whether `dir` and every directory above it can be traversed by any user (the others' x bit). */
function traversableByOthers(dir: string): boolean {
  for (let d = resolve(dir); ; d = dirname(d)) {
    try {
      if ((statSync(d).mode & 0o001) === 0) return false;
    } catch {
      return false;
    }
    if (d === dirname(d)) return true;
  }
}

/**
 * Why this machine cannot start its own postgres (the outage and durability tests need one even with `PG_URL`), or
 * `undefined` when it can. The reason is printed by the skipped tests.
 */
export function postgresBinaryMissing(): string | undefined {
  const s = resolveSetup();
  return typeof s === 'string' ? s : undefined;
}

/** Why the Postgres tests cannot run here (no server of their own and no `PG_URL`), or `undefined` when they can. */
export function postgresAvailable(): string | undefined {
  if (process.env['PG_URL']) return undefined;
  return postgresBinaryMissing();
}

/** Every server this process started and has not disposed of: killed, and its dir removed, if the process exits. */
const live = new Set<{ child(): ChildProcess | undefined; base: string }>();
process.once('exit', () => {
  for (const server of live) {
    const child = server.child();
    if (isRunning(child)) signalServer(child.pid!, 'SIGKILL');
    rmSync(server.base, { recursive: true, force: true, maxRetries: 5 });
  }
});

function isRunning(child: ChildProcess | undefined): child is ChildProcess {
  return child?.pid !== undefined && child.exitCode === null && child.signalCode === null;
}

/**
 * Sends `signal` to the postmaster `pid` and to every process it forked (backends, checkpointer, walwriter, ...), and
 * returns the latter. A signal to the postmaster alone would neither freeze the backends serving open connections
 * (SIGSTOP) nor end them (SIGKILL: orphaned backends keep the shared memory attached, and a restart refuses to start
 * beside them). Not a process-group signal: postgres makes each child the leader of a session of its own (setsid).
 * The postmaster is stopped first so that it forks nothing while its children are listed (SIGSTOP/SIGKILL), and
 * continued last (SIGCONT).
 */
function signalServer(pid: number, signal: NodeJS.Signals): number[] {
  if (signal !== 'SIGCONT') signalPid(pid, 'SIGSTOP');
  const children = childrenOf(pid);
  for (const c of children) signalPid(c, signal);
  signalPid(pid, signal);
  return children;
}

/** `process.kill`, where a process already gone is not an error. */
function signalPid(pid: number, signal: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** `pid (comm) state ppid ...` of a Linux process, as [state, ppid], or undefined once it is gone. */
function procStat(pid: number | string): [string, number] | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm may hold spaces and parentheses: the fields that follow it start after its last ')'.
  const [state = '', ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return [state, Number(ppid)];
}

/** The ids of the live processes whose parent is `pid` (from /proc on Linux, `pgrep -P` elsewhere). */
function childrenOf(pid: number): number[] {
  if (process.platform !== 'linux') {
    const r = spawnSync('pgrep', ['-P', String(pid)], { encoding: 'utf8' });
    return (r.stdout ?? '').split('\n').filter(Boolean).map(Number);
  }
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && procStat(entry)?.[1] === pid)
    .map(Number);
}

/**
 * Whether process `pid` is still alive. A zombie (dead, not yet reaped: the backends of a killed postmaster are reaped
 * by whatever adopts them, which may never do it) counts as gone: it holds no shared memory and serves nothing.
 */
function isAlive(pid: number): boolean {
  if (!signalPid(pid, 0)) return false;
  return process.platform !== 'linux' || (procStat(pid)?.[0] ?? 'Z') !== 'Z';
}

/**
 * Resolves once none of `pids` is alive. The postmaster's own exit is an event (it is our child); its children are not
 * ours, and nothing reports their end, so this polls, briefly: SIGKILLed processes are gone within milliseconds.
 */
async function allGone(pids: number[]): Promise<void> {
  const deadline = Date.now() + GONE_TIMEOUT_MS;
  for (let left = pids.filter(isAlive); left.length > 0; left = left.filter(isAlive)) {
    if (Date.now() > deadline) throw new Error(`postgres processes ${left.join(', ')} still alive ${GONE_TIMEOUT_MS} ms after the kill`);
    await sleep(5);
  }
}

/**
 * Ends `child`, resolving once it and all it forked are gone: SIGINT is a fast shutdown, the postmaster's to run (it
 * ends its children, sessions included, and exits after them; SIGTERM would be a smart shutdown, waiting for every
 * client to disconnect, which a pool never does); SIGKILL goes to all of them at once.
 */
async function end(child: ChildProcess | undefined, signal: 'SIGINT' | 'SIGKILL'): Promise<void> {
  if (!isRunning(child)) return;
  const exited = once(child, 'exit');
  if (signal === 'SIGINT') {
    child.kill('SIGINT');
    await exited;
    return;
  }
  const children = signalServer(child.pid!, 'SIGKILL');
  await exited;
  await allGone(children);
}

/** Spawn options for a postgres binary: in `cwd`, C locale, and as the postgres user when this process is root. */
function spawnOptions(s: Setup, cwd: string): SpawnOptions {
  return {
    cwd,
    env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
    stdio: ['ignore', 'pipe', 'pipe'],
    ...(s.user ? { uid: s.user.uid, gid: s.user.gid } : {}),
  };
}

/** Runs `initdb` for a new cluster in `dataDir` (trust authentication, superuser `postgres`, no fsync of its files). */
async function initdb(s: Setup, base: string, dataDir: string, timeoutMs: number): Promise<void> {
  const args = ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale=C'];
  const child = spawn(s.initdb, args, spawnOptions(s, base));
  let log = '';
  child.stdout?.on('data', (d: Buffer) => void (log += d.toString()));
  child.stderr?.on('data', (d: Buffer) => void (log += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  try {
    const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
    if (code !== 0) throw new Error(`initdb failed (${code ?? signal}${signal === 'SIGKILL' ? `, after ${timeoutMs} ms?` : ''}):\n${log}`);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A self-signed certificate for 127.0.0.1 and localhost, and its key, in `base` (the key readable by the server's user
 * only, as postgres demands), and the settings that make the server take TLS with them.
 */
function serverCertificate(s: Setup, base: string): string[] {
  const [crt, key] = [join(base, 'server.crt'), join(base, 'server.key')];
  selfSigned(crt, key, '127.0.0.1');
  if (s.user) {
    chownSync(crt, s.user.uid, s.user.gid);
    chownSync(key, s.user.uid, s.user.gid);
  }
  return ['ssl=on', `ssl_cert_file=${crt}`, `ssl_key_file=${key}`];
}

/** Writes a self-signed certificate for `host` (an IP address, and localhost) and its key (mode 0600), with openssl. */
export function selfSigned(crtFile: string, keyFile: string, host: string): void {
  const r = spawnSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=${host}`,
      '-addext',
      `subjectAltName=IP:${host},DNS:localhost`,
      '-keyout',
      keyFile,
      '-out',
      crtFile,
    ],
    { encoding: 'utf8' },
  );
  if (r.error || r.status !== 0) throw new Error(`openssl could not make a certificate: ${r.error?.message ?? r.stderr}`);
  chmodSync(keyFile, 0o600);
}

/** Spawns postgres on `port` for `dataDir` and resolves once it logs that it accepts connections. */
function spawnOn(s: Setup, base: string, dataDir: string, port: number, timeoutMs: number, extra: readonly string[] = []): Promise<ChildProcess> {
  // -k: its Unix socket (and the socket's lock file) in the temp dir, not the distribution's /var/run/postgresql.
  const settings = [...SETTINGS, ...extra];
  const args = ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-k', base, ...settings.flatMap((c) => ['-c', c])];
  const child = spawn(s.postgres, args, spawnOptions(s, base));
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => fail(new Error(`postgres on port ${port} not ready after ${timeoutMs} ms:\n${log}`)), timeoutMs);
    const onData = (d: Buffer) => {
      log += d.toString();
      if (log.includes(READY)) {
        cleanup();
        // Keep draining its output so that a full pipe never blocks the server.
        child.stdout?.resume();
        child.stderr?.resume();
        resolve(child);
      }
    };
    const onExit = (code: number | null, signal: string | null) =>
      fail(new Error(`postgres on port ${port} exited (${code ?? signal}) before it was ready:\n${log}`));
    const onError = (err: Error) => fail(err);
    function cleanup() {
      clearTimeout(timer);
      child.stdout?.off('data', onData);
      child.stderr?.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    }
    function fail(err: Error) {
      cleanup();
      // Whatever it forked goes too, and all must be gone before a retry or a restart uses the data dir.
      end(child, 'SIGKILL').then(
        () => reject(err),
        () => reject(err),
      );
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/**
 * Starts a postgres of its own: a new cluster (initdb) in a fresh temp dir, served on a free loopback port (retried on
 * a new port if another process took it meanwhile). Throws with the reason when `postgresBinaryMissing()` has one.
 */
export async function startPostgres(opts: { tls?: boolean } = {}): Promise<PostgresServer> {
  const s = resolveSetup();
  if (typeof s === 'string') throw new Error(`cannot start postgres: ${s}`);
  const deadline = Date.now() + START_TIMEOUT_MS;
  const base = mkdtempSync(join(parentDir(), 'mcpgw-pg-'));
  const dataDir = join(base, 'data');
  let child: ChildProcess | undefined;
  let disposed = false;
  const entry = { child: () => child, base };
  live.add(entry);
  let port = 0;
  const extra: string[] = [];
  try {
    // As root: the postgres user owns the temp dir (initdb creates the data dir in it, postgres its socket).
    if (s.user) chownSync(base, s.user.uid, s.user.gid);
    await initdb(s, base, dataDir, deadline - Date.now());
    if (opts.tls) extra.push(...serverCertificate(s, base));
    for (let attempt = 1; !child; attempt++) {
      port = await freePort();
      try {
        child = await spawnOn(s, base, dataDir, port, Math.max(deadline - Date.now(), 1), extra);
      } catch (err) {
        if (attempt >= 3 || Date.now() >= deadline) throw err;
      }
    }
  } catch (err) {
    live.delete(entry);
    rmSync(base, { recursive: true, force: true });
    throw err;
  }
  const server: PostgresServer = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    ...(opts.tls ? { caFile: join(base, 'server.crt') } : {}),
    stop: () => {
      server.resume();
      return end(child, 'SIGINT');
    },
    kill: () => {
      server.resume();
      return end(child, 'SIGKILL');
    },
    async restart() {
      if (disposed) throw new Error('postgres server disposed of: it cannot be restarted');
      await server.stop();
      child = undefined;
      child = await spawnOn(s, base, dataDir, port, START_TIMEOUT_MS, extra);
    },
    pause: () => {
      if (isRunning(child)) signalServer(child.pid!, 'SIGSTOP');
    },
    resume: () => {
      if (isRunning(child)) signalServer(child.pid!, 'SIGCONT');
    },
    async dispose() {
      disposed = true;
      // Nothing is kept, so no shutdown checkpoint to wait for.
      await server.kill();
      live.delete(entry);
      rmSync(base, { recursive: true, force: true, maxRetries: 5 });
    },
  };
  return server;
}

/**
 * The Postgres a test runs against: `PG_URL` when set, otherwise a postgres of its own, disposed of (data dir
 * included) when `t` ends. Resolves to its URL.
 */
export async function postgresForTest(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const given = process.env['PG_URL'];
  if (given) return given;
  const own = await startPostgres();
  t.teardown(() => own.dispose());
  return own.url;
}
