/**
 * Real gateway processes for the multi-instance tests: `node --import tsx src/cli.ts -c <config.json>` on loopback
 * port 0 (one process, so that SIGKILL kills the gateway itself, not a wrapper), its port learnt from the
 * `serving MCP endpoint` log lines (pino JSON on stdout). Redis for them: `redis-server.ts`. Not a test file.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const cli = join(root, 'src/cli.ts');

/** The shared secret every test instance holds (at least 32 characters). */
export const TEST_SECRET = 'multi-instance-test-secret-0123456789abcdef';

/** Starting a process gives up after this long (a failed test, never a pass); generous: a cold tsx cache on a loaded machine. */
const START_BOUND_MS = 90_000;

/** Resolves when `ready()` holds (checked on each chunk of output); rejects, with `text()`, on exit or after the bound. */
function waitForOutput(child: ChildProcess, text: () => string, ready: () => boolean, what: string, boundMs = START_BOUND_MS): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (ready()) {
        done();
        resolve();
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      done();
      reject(new Error(`${what} exited (code ${code}, signal ${signal}) before it was ready:\n${text().slice(-4000)}`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`${what} not ready within ${boundMs} ms:\n${text().slice(-4000)}`));
    }, boundMs);
    const done = () => {
      clearTimeout(timer);
      child.stdout?.off('data', check);
      child.stderr?.off('data', check);
      child.off('close', onExit);
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    // 'close', not 'exit': the output is complete then.
    child.on('close', onExit);
    check();
  });
}

/** How a gateway process ended. */
export interface ProcessExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A running gateway process. */
export interface GatewayProcess {
  /** The label given at start (A, B, …), used in failure messages. */
  name: string;
  pid: number;
  port: number;
  /** The MCP endpoint of each configured upstream, by upstream name (from the log). */
  endpoints: Record<string, string>;
  /** The MCP endpoint of one upstream (throws when it was not configured). */
  url(upstream: string): string;
  /** Everything written to stdout (pino JSON lines) and stderr so far. */
  output(): string;
  /** Resolves when the process has exited. */
  exited: Promise<ProcessExit>;
  /** How it ended, if it has (a crash shows here with the output that led to it). */
  readonly exit: ProcessExit | undefined;
  /** Sends `signal` and waits for the exit. */
  kill(signal: NodeJS.Signals): Promise<ProcessExit>;
  /** Sends `signal` without waiting (SIGHUP, or a SIGTERM whose drain the test watches). */
  signal(signal: NodeJS.Signals): void;
  /** The configuration file it was started with (a reload reads it again). */
  configFile: string;
  /** Rewrites the configuration file: an object as JSON (`server.port` defaults to 0), a string as it is. */
  rewriteConfig(config: Record<string, unknown> | string): Promise<void>;
  /** The pino lines logged so far, parsed (other output skipped). */
  logs(): Array<Record<string, any>>;
  /** Resolves with the first log line from index `since` on that `match` accepts; rejects on exit or after `boundMs`. */
  waitForLog(match: (entry: Record<string, any>) => boolean, since?: number, boundMs?: number): Promise<Record<string, any>>;
}

/** What to start a gateway process with. */
export interface GatewayProcessOptions {
  name: string;
  /** The configuration file's content (written as JSON); `server.port` defaults to 0. */
  config: Record<string, unknown>;
  /** Extra environment (e.g. MCP_GATEWAY_STATE_SECRET, MCP_GATEWAY_REDIS_URL); a value `undefined` removes the variable. */
  env?: Record<string, string | undefined>;
  /** The file's format (default json; yaml writes the same JSON, which is YAML, to a .yaml file). */
  format?: 'json' | 'yaml';
  /** Command-line flags instead of `-c <file>` (the file is still written, and not read). */
  flags?: string[];
}

/** Every gateway process started here, killed if the test process exits without stopping them (a crashed test). */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

function spawnGateway(opts: GatewayProcessOptions, file: string): ChildProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: 'info' };
  // Never inherit the variables the tests decide on.
  delete env.MCP_GATEWAY_STATE_SECRET;
  delete env.MCP_GATEWAY_REDIS_URL;
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...(opts.flags ?? ['-c', file])], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], env });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** A configuration as the file holds it: `server.port` 0 unless it says otherwise. */
function configText(config: Record<string, unknown>): string {
  const server = { port: 0, ...((config.server as object | undefined) ?? {}) };
  return JSON.stringify({ ...config, server }, null, 2);
}

async function writeConfig(opts: GatewayProcessOptions): Promise<{ file: string; cleanup(): Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), `gw-${opts.name}-`));
  const file = join(dir, `config.${opts.format ?? 'json'}`);
  await writeFile(file, configText(opts.config));
  return { file, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** The pino JSON lines of a process's output, parsed (a partial last line and other output skipped). */
function parseLogs(out: string): Array<Record<string, any>> {
  const entries: Array<Record<string, any>> = [];
  for (const line of out.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      entries.push(JSON.parse(line) as Record<string, any>);
    } catch {
      // a partial line: the next chunk completes it
    }
  }
  return entries;
}

/**
 * Starts a gateway process and resolves once every configured upstream's endpoint was logged (the server is
 * listening then). Rejects, with the process output, when it exits first.
 */
export async function startGatewayProcess(opts: GatewayProcessOptions): Promise<GatewayProcess> {
  const { file, cleanup } = await writeConfig(opts);
  const child = spawnGateway(opts, file);
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  let exit: ProcessExit | undefined;
  const exited = new Promise<ProcessExit>((resolve) => {
    child.once('close', (code, signal) => {
      void cleanup();
      exit = { code, signal };
      resolve(exit);
    });
  });
  const upstreams = (opts.config.upstreams as Array<{ name: string }> | undefined) ?? [];
  const expected = Math.max(1, upstreams.length);
  const endpoints: Record<string, string> = {};
  const serving = () => {
    for (const line of out.split('\n')) {
      if (!line.startsWith('{')) continue;
      try {
        const entry = JSON.parse(line) as { msg?: string; upstream?: string; endpoint?: string };
        if (entry.msg === 'serving MCP endpoint' && entry.upstream && entry.endpoint) endpoints[entry.upstream] = entry.endpoint;
      } catch {
        // a partial line: the next chunk completes it
      }
    }
    return Object.keys(endpoints).length >= expected;
  };
  try {
    await waitForOutput(child, () => out, serving, `gateway ${opts.name}`);
  } catch (e) {
    if (child.exitCode === null) child.kill('SIGKILL');
    throw e;
  }
  const first = Object.values(endpoints)[0] ?? '';
  return {
    name: opts.name,
    pid: child.pid ?? 0,
    port: Number(new URL(first).port),
    endpoints,
    url(upstream) {
      const u = endpoints[upstream];
      if (!u) throw new Error(`gateway ${opts.name} serves no upstream ${upstream}`);
      return u;
    },
    output: () => out,
    exited,
    get exit() {
      return exit;
    },
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
    signal(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
    configFile: file,
    async rewriteConfig(config) {
      await writeFile(file, typeof config === 'string' ? config : configText(config));
    },
    logs: () => parseLogs(out),
    async waitForLog(match, since = 0, boundMs = START_BOUND_MS) {
      let found: Record<string, any> | undefined;
      const look = () => {
        found = parseLogs(out).slice(since).find(match);
        return found !== undefined;
      };
      await waitForOutput(child, () => out, look, `gateway ${opts.name} (waiting for a log line)`, boundMs);
      return found as Record<string, any>;
    },
  };
}

/** Runs a gateway process that is expected to refuse to start: its exit and output. */
export async function runGatewayToExit(opts: GatewayProcessOptions): Promise<ProcessExit & { output: string }> {
  const { file, cleanup } = await writeConfig(opts);
  const child = spawnGateway(opts, file);
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), START_BOUND_MS);
  const [code, signal] = (await once(child, 'close')) as [number | null, NodeJS.Signals | null];
  clearTimeout(timer);
  await cleanup();
  return { code, signal, output: out };
}
