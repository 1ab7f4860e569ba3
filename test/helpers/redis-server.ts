/**
 * A real `redis-server` for tests, on a free loopback port (never 6379): no persistence, no daemon, so that it dies
 * with the test and leaves nothing behind. `stop()`/`kill()` then `restart()` on the same port is how the outage
 * tests take Redis away and give it back while a store keeps its address. Not a test file.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A running redis-server this process started. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Ends it (SIGTERM) and resolves once it has exited. Idempotent. */
  stop(): Promise<void>;
  /** Ends it abruptly (SIGKILL), as a crash would, and resolves once it has exited. Idempotent. */
  kill(): Promise<void>;
  /** Starts it again on the same port (after `stop`/`kill`; empty, since nothing is persisted). */
  restart(): Promise<void>;
  /**
   * Freezes it (SIGSTOP): connections stay open but nothing answers, as with a hung or overloaded Redis. `resume()`
   * (SIGCONT) thaws it with its data intact. `stop`/`kill` resume it first.
   */
  pause(): void;
  resume(): void;
}

const BINARY = process.env['REDIS_SERVER_BIN'] ?? 'redis-server';
/** Bound on a start: a server that is not ready by then is broken, not slow. */
const START_TIMEOUT_MS = 10_000;

/**
 * Why the Redis tests cannot run here (no `redis-server` binary and no `REDIS_URL`), or `undefined` when they can.
 * The reason is printed by the skipped tests.
 */
export function redisAvailable(): string | undefined {
  if (process.env['REDIS_URL']) return undefined;
  return serverBinaryMissing();
}

/** Why this machine cannot start its own redis-server (outage tests need one even with `REDIS_URL`). */
export function serverBinaryMissing(): string | undefined {
  const r = spawnSync(BINARY, ['--version'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return `no ${BINARY} binary found (${r.error?.message ?? `exit ${r.status}`}); install redis-server or set REDIS_URL`;
  return undefined;
}

/** Every server this process started, killed if the process exits without stopping them (a crashed test). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A free loopback port (bound and released at once). */
export async function freePort(): Promise<number> {
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

/** Spawns redis-server on `port` and resolves once it logs that it accepts connections. */
function spawnOn(port: number): Promise<ChildProcess> {
  const child = spawn(
    BINARY,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--protected-mode', 'yes'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  running.add(child);
  child.once('exit', () => running.delete(child));
  return new Promise((resolve, reject) => {
    let log = '';
    const timer = setTimeout(() => fail(new Error(`redis-server on port ${port} not ready after ${START_TIMEOUT_MS} ms:\n${log}`)), START_TIMEOUT_MS);
    const onData = (d: Buffer) => {
      log += d.toString();
      if (log.includes('Ready to accept connections')) {
        cleanup();
        // Keep draining its output so that a full pipe never blocks the server.
        child.stdout?.resume();
        child.stderr?.resume();
        resolve(child);
      }
    };
    const onExit = (code: number | null, signal: string | null) =>
      fail(new Error(`redis-server on port ${port} exited (${code ?? signal}) before it was ready:\n${log}`));
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
      child.kill('SIGKILL');
      reject(err);
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

function end(child: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill(signal);
  });
}

/** Starts a redis-server on a free loopback port (retried on a new port if another process took it meanwhile). */
export async function startRedis(): Promise<RedisServer> {
  let port = 0;
  let child: ChildProcess | undefined;
  for (let attempt = 1; !child; attempt++) {
    port = await freePort();
    try {
      child = await spawnOn(port);
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
  const server: RedisServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: () => {
      server.resume();
      return end(child, 'SIGTERM');
    },
    kill: () => end(child, 'SIGKILL'),
    async restart() {
      await server.stop();
      child = await spawnOn(port);
    },
    pause: () => void child?.kill('SIGSTOP'),
    resume: () => void child?.kill('SIGCONT'),
  };
  return server;
}

/**
 * The Redis a test runs against: `REDIS_URL` when set, otherwise a redis-server of its own, stopped when `t` ends.
 * Resolves to its URL.
 */
export async function redisForTest(t: { teardown(fn: () => unknown): void }): Promise<string> {
  const given = process.env['REDIS_URL'];
  if (given) return given;
  const own = await startRedis();
  t.teardown(() => own.stop());
  return own.url;
}
