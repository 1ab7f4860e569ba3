#!/usr/bin/env node
/**
 * Process entry: flags, configuration, start, reload on SIGHUP, graceful shutdown on SIGTERM/SIGINT. The only file that
 * exits.
 */
import { writeSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { pino, type DestinationStream } from 'pino';
import { buildGateway, DEFAULT_LOGGER, type Gateway } from './app.js';
import { migrateStore, StoreStartError } from './store-setup.js';
import { ConfigError, DEFAULTS, describeConfig, loadConfigFile, parseConfig, type ConfigOverrides, type GatewayConfig } from './config/index.js';
import { GATEWAY_NAME, GATEWAY_VERSION } from './version.js';

/** The exit code when the task store cannot be reached at start (configuration errors exit 2, other failures 1). */
const EXIT_STORE_UNREACHABLE = 3;

/** The exit code when the listen address cannot be taken: the port in use or privileged, the host not this machine's. */
const EXIT_CANNOT_LISTEN = 4;

/** After the grace, how long closing (sessions, store) may take before the process exits anyway. */
const CLOSE_BOUND_MS = 10_000;

/** Log characters gathered before they are handed to the writer, and the longest a line waits for company. */
const LOG_BATCH_CHARS = 12 * 1024;
const LOG_FLUSH_MS = 100;

/** At an exit, the longest the operator log's last lines may take to be written before the process exits anyway. */
const LOG_FLUSH_BOUND_MS = 500;

/** The operator log's destination, and a bounded flush of what it still holds. */
interface LogOutput extends DestinationStream {
  /** Writes what is buffered, resolving when written, when the output is gone, or after `boundMs`, whichever is first. */
  flush(boundMs: number): Promise<void>;
}

/**
 * Standard output for the operator log, written off the main thread in batches instead of one synchronous write per
 * line: at one line per MCP request, one write per line showed as 8–17% of the gateway's CPU in profiles (the write
 * itself is the cost, synchronous or not). Lines are gathered here and handed to pino's sonic-boom (asynchronous) as
 * one string per LOG_BATCH_CHARS, or whatever arrived within LOG_FLUSH_MS: sonic-boom's own batching appends each line
 * to a growing string and measures its byte length again per line, which showed in the hot path's profile. Whatever is
 * still buffered is written at an exit through `exit()`, within a bound and never synchronously: a write to a full pipe
 * would block, and sonic-boom's synchronous flush retries a closed pipe (EPIPE) for ever. A direct `process.exit` (a
 * second signal) cannot wait: what is left is written synchronously then, as pino's own exit listener does. Once the
 * output fails (its reader is gone), the log is dropped: nothing is buffered for nobody.
 */
function logStream(): LogOutput {
  let lines: string[] = [];
  let chars = 0;
  let timer: NodeJS.Timeout | undefined;
  // minLength 1: each batch is written at once, and `flush` still waits for what is being written (at 0 it would not).
  const out = pino.destination({ dest: 1, sync: false, minLength: 1 } as Parameters<typeof pino.destination>[0]);
  let gone = false;
  out.on('error', () => {
    gone = true;
  });
  // An exit without `flush` (a second signal's process.exit): pino's own exit listener, registered with the destination
  // above, writes what sonic-boom holds synchronously; the lines gathered here since, newer, are written after it the
  // same way (nothing asynchronous completes at an exit).
  process.on('exit', () => {
    if (timer) clearTimeout(timer);
    if (gone || lines.length === 0) return;
    try {
      writeSync(1, lines.join(''));
    } catch {
      // the output is gone
    }
    lines = [];
  });
  const hand = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (lines.length === 0) return;
    const batch = lines.length === 1 ? (lines[0] as string) : lines.join('');
    lines = [];
    chars = 0;
    if (!gone) out.write(batch);
  };
  return {
    write(line: string) {
      if (gone) return;
      lines.push(line);
      chars += line.length;
      if (chars >= LOG_BATCH_CHARS) hand();
      else if (!timer) {
        timer = setTimeout(hand, LOG_FLUSH_MS);
        timer.unref();
      }
    },
    flush(boundMs) {
      hand();
      if (gone) return Promise.resolve();
      return new Promise((resolve) => {
        setTimeout(resolve, boundMs).unref();
        try {
          out.flush(() => resolve());
        } catch {
          resolve();
        }
      });
    },
  };
}

/** The operator log of this process (set once the gateway is being built). */
let logOutput: LogOutput | undefined;

/**
 * Ends the process with `code` once the log's last lines are written, or at once when they cannot be: a closed or
 * full standard output never keeps the process.
 */
async function exit(code: number): Promise<never> {
  await logOutput?.flush(LOG_FLUSH_BOUND_MS);
  process.exit(code);
}

// A reader of standard output or error that went away (EPIPE) is no reason to crash, nor to stay.
for (const stream of [process.stdout, process.stderr]) stream.on('error', () => {});

const HELP = `${GATEWAY_NAME} ${GATEWAY_VERSION}
A gateway between MCP eras: 2026-07-28 clients use 2025-11-25 servers and 2025-11-25 clients use 2026-07-28
servers, tasks included; traffic an upstream speaks itself (dual-era servers included) passes through, except
where rules wrap tools into tasks (for clients of both eras).

Usage: mcp-tasks-gateway [options]

Options:
  -c, --config FILE   configuration file (YAML or JSON); see config/gateway.example.yaml
  -u, --upstream URL  one Streamable HTTP upstream, mounted at /mcp (replaces the file's upstreams). Repeatable:
                      several make one federated endpoint at /mcp, the union of their tools and prompts. Forms:
                        URL            an HTTP upstream (http:// or https://), named upstream (then upstream2, …)
                        NAME=URL       an HTTP upstream named NAME
                        NAME=COMMAND   an stdio upstream; COMMAND is split into words as a shell would ('…', "…",
                                       \\ escapes; no variables, no globbing)
                        NAME=--        an stdio upstream whose command is the rest of the command line (a
                                       standalone -- first is skipped); only the last --upstream
                      With several, each NAME prefixes its tools and prompts (NAME_tool); bare URLs keep theirs.
                      e.g. --upstream a=http://127.0.0.1:3001/mcp --upstream b=-- npx -y @modelcontextprotocol/server-everything
      --host HOST     listen address (default ${DEFAULTS.host}); 0.0.0.0 listens on every interface, and then
                      the Host/Origin checks admit anything unless server.allowedHosts is set
  -p, --port PORT     listen port (default ${DEFAULTS.port}; 0 picks a free port)
      --check         validate the configuration (the file with the other flags) and print what would be served:
                      upstreams, paths, tool rules in order, store; exit 0 when valid, 2 when not (each problem by
                      its key path). Listens nowhere and contacts no upstream and no store
      --migrate       bring the Postgres store's schema (store.kind: postgres) to this version and exit: 0 when
                      done or nothing to do, 2 when the store is not Postgres, 3 when it cannot be reached. For
                      operators who migrate separately (store.migrate: off); with auto, the gateway does it at start
      --demo          after starting, run the bundled modern demo client against the gateway once
                      (logs only warnings then, unless LOG_LEVEL is set)
  -h, --help          show this help
  -v, --version       show the version

With no upstream configured, the gateway starts its bundled demo upstream (a 2025-11-25 server without task
support) and mounts it at /mcp, wrapping its slow_report tool into a task when a call runs over a second.

Signals:
  SIGHUP             re-read the configuration file (with the same flags): tool rules, upstream headers and limits
                     change live without dropping connections; an invalid file is rejected (its errors logged) and
                     the running configuration stays; changes that need a restart are logged, not applied
  SIGTERM, SIGINT    graceful shutdown: new connections are refused and requests arriving on connections already
                     open get 503 (Connection: close); requests in flight and wrapped tasks running here get up to
                     server.shutdownGraceMs (default ${DEFAULTS.shutdownGraceMs} ms) to finish, then running tasks are
                     handed to another instance (Redis, Postgres) or fail with GW_TASK_SHUT_DOWN (memory); exit 0.
                     A second signal exits at once (exit 1). The exit never waits on standard output: a log
                     reader that went away (a closed or full pipe) does not keep the process

Exit codes:
  0  a clean stop (or --check of a valid configuration, --help, --version)
  1  an unexpected failure, a second signal, or a close that hung past the grace
  2  a configuration error (each problem printed with its key path: the file, a flag, an environment variable)
  3  the task store could not be reached at start (its URL, password removed, and the cause: ECONNREFUSED, …),
     or a Postgres schema is older than this version with store.migrate: off (run --migrate)
  4  the listen address could not be taken: the port is in use or needs privileges (pass --port), or the host is
     no address of this machine (pass --host); one line says which

Environment:
  LOG_LEVEL                  log level (default info)
  MCP_GATEWAY_STATE_SECRET   the deployment's shared secret (HMAC key of principals and MRTR request states,
                             key of sealed values), at least 32 characters. Random per process when unset with the memory
                             store; REQUIRED with a shared store, Redis or Postgres (every instance must hold the same one)
  MCP_GATEWAY_REDIS_URL      the Redis URL (redis:// or rediss://) of "store: {kind: redis}" when the file
                             gives no store.url (store.urlEnv names another variable)
  MCP_GATEWAY_POSTGRES_URL   the Postgres URL (postgres://…) of "store: {kind: postgres}", likewise

Several instances share tasks, MRTR rounds and legacy sessions through one Redis or one Postgres (durable tasks):
see config/gateway.redis.example.yaml, config/gateway.postgres.example.yaml and docs/several-instances.md.
`;

/** The flags as parsed. */
interface Flags {
  config?: string | undefined;
  upstream?: string[] | undefined;
  host?: string | undefined;
  port?: string | undefined;
  check?: boolean | undefined;
  migrate?: boolean | undefined;
  demo?: boolean | undefined;
  help?: boolean | undefined;
  version?: boolean | undefined;
}

/** The bundled demo upstream, when the configuration names none. */
type DemoUpstream = { url: string; close(): Promise<void> } | undefined;

/** The flags and the configuration overrides they make, or the exit code (help, version, a bad flag). */
function readFlags(argv: string[]): { args: Flags; overrides: ConfigOverrides } | number {
  // Everything after `--upstream NAME=--` (or after a standalone `--`) is that upstream's command, never flags of the gateway.
  const cut = commandCut(argv);
  const rest = cut === undefined ? undefined : argv.slice(cut.rest);
  let args: Flags;
  try {
    args = parseArgs({
      args: cut === undefined ? argv : argv.slice(0, cut.flags),
      options: {
        config: { type: 'string', short: 'c' },
        upstream: { type: 'string', short: 'u', multiple: true },
        host: { type: 'string' },
        port: { type: 'string', short: 'p' },
        check: { type: 'boolean' },
        migrate: { type: 'boolean' },
        demo: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n\n${HELP}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (args.version) {
    process.stdout.write(`${GATEWAY_VERSION}\n`);
    return 0;
  }

  const overrides: ConfigOverrides = {};
  if (args.host !== undefined) overrides.host = args.host;
  if (args.port !== undefined) {
    const port = Number(args.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      process.stderr.write(`invalid configuration:\n  - server.port: --port must be an integer from 0 to 65535, got "${args.port}"\n`);
      return 2;
    }
    overrides.port = port;
  }
  if (args.upstream !== undefined) overrides.upstream = args.upstream;
  if (rest !== undefined) overrides.upstreamCommand = rest;
  return { args, overrides };
}

/**
 * Where the gateway's flags end and the command of `--upstream NAME=--` begins: after that flag's value (a standalone
 * `--` right after it is skipped), else after a standalone `--`; undefined when the command line has neither.
 */
function commandCut(argv: readonly string[]): { flags: number; rest: number } | undefined {
  const tail = /^[^=]+=--$/;
  const after = (end: number) => ({ flags: end, rest: argv[end] === '--' ? end + 1 : end });
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--') return { flags: i, rest: i + 1 };
    const joined = /^(?:--upstream=|-u)(.+)$/.exec(a)?.[1];
    if (joined !== undefined && tail.test(joined)) return after(i + 1);
    if ((a === '--upstream' || a === '-u') && tail.test(argv[i + 1] ?? '')) return after(i + 2);
    // A flag's value is never a flag: skip it.
    if (a === '--upstream' || a === '-u' || a === '--config' || a === '-c' || a === '--host' || a === '--port' || a === '-p') i++;
  }
  return undefined;
}

/** A configuration without upstreams runs in front of the demo upstream (at start, and again at each reload). */
function withDemo(c: Readonly<GatewayConfig>, demoUpstream: DemoUpstream): Readonly<GatewayConfig> {
  if (c.upstreams.length > 0 || !demoUpstream) return c;
  // The demo's slow tool is wrapped: a task-capable client gets a task when it runs longer than a second.
  const tools = { slow_report: { task: 'auto', afterMs: 1000 }, '*': { task: 'native' } };
  return parseConfig({ ...structuredClone(c), upstreams: [{ name: 'demo', path: DEFAULTS.path, url: demoUpstream.url, tools }] });
}

/** `--migrate`: the Postgres store's schema brought to this gateway's version; 0, or the exit code of what failed. */
async function migrateOrExit(config: Readonly<GatewayConfig>): Promise<number> {
  try {
    process.stdout.write(`${await migrateStore(config)}\n`);
    return 0;
  } catch (e) {
    if (!(e instanceof ConfigError) && !(e instanceof StoreStartError)) throw e;
    process.stderr.write(`${e.message}\n`);
    return e instanceof ConfigError ? 2 : EXIT_STORE_UNREACHABLE;
  }
}

/** The gateway built, or the exit code of what only building can check (the store, the shared secret). */
async function buildOrExit(config: Readonly<GatewayConfig>, demo: boolean | undefined, demoUpstream: DemoUpstream): Promise<Gateway | number> {
  // In --demo the transcript is the point: operator logs drop to warnings unless LOG_LEVEL says otherwise.
  logOutput = logStream();
  const logger = { ...DEFAULT_LOGGER, ...(demo && !process.env.LOG_LEVEL ? { level: 'warn' } : {}), stream: logOutput };
  try {
    return await buildGateway(config, { logger });
  } catch (e) {
    // What only building can check (the shared secret a Redis store needs, its URL) is a configuration error too.
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      await demoUpstream?.close();
      return 2;
    }
    // A store that cannot be reached is no bug of the gateway: its URL and cause, without a stack trace.
    if (e instanceof StoreStartError) {
      process.stderr.write(`${e.message}\n`);
      await demoUpstream?.close();
      return EXIT_STORE_UNREACHABLE;
    }
    throw e;
  }
}

async function main(argv: string[]): Promise<number> {
  const flags = readFlags(argv);
  if (typeof flags === 'number') return flags;
  const { args, overrides } = flags;

  // SIGHUP's default action ends the process: until the gateway serves (and reloads), one is ignored.
  const hupBeforeReady = () => process.stderr.write('SIGHUP before the gateway was ready: ignored\n');
  process.on('SIGHUP', hupBeforeReady);

  let config: Readonly<GatewayConfig>;
  try {
    config = args.config ? await loadConfigFile(args.config, overrides) : parseConfig({}, overrides);
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      return 2;
    }
    throw e;
  }
  if (args.check) {
    const source = args.config ?? (args.upstream !== undefined ? '--upstream' : 'the defaults');
    process.stdout.write(`configuration valid (${source}):\n${describeConfig(config, process.env).join('\n')}\n`);
    return 0;
  }
  if (args.migrate) return migrateOrExit(config);

  let demoUpstream: DemoUpstream;
  if (config.upstreams.length === 0) {
    const { startDemoUpstream } = await import('./demo/demo-server.js');
    demoUpstream = await startDemoUpstream();
    config = withDemo(config, demoUpstream);
  }

  const gateway = await buildOrExit(config, args.demo, demoUpstream);
  if (typeof gateway === 'number') return gateway;
  const log = gateway.app.log;
  try {
    await gateway.app.listen({ host: config.server.host, port: config.server.port });
  } catch (e) {
    const problem = listenProblem(e, config.server.host, config.server.port);
    // An address that cannot be taken is the operator's to fix: one line saying how, without a stack trace.
    if (problem) process.stderr.write(`${problem}\n`);
    else log.error({ err: e }, 'cannot listen');
    await gateway.close();
    await demoUpstream?.close();
    return problem ? EXIT_CANNOT_LISTEN : 1;
  }
  const address = gateway.app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.server.port;
  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
  for (const u of config.upstreams) {
    log.info({ upstream: u.name, endpoint: `http://${host}:${port}${u.path}`, demo: demoUpstream !== undefined }, 'serving MCP endpoint');
  }

  const stopping = onStopSignals(gateway, demoUpstream);
  onReloadSignal(gateway, args.config, overrides, demoUpstream, stopping);
  process.off('SIGHUP', hupBeforeReady);

  if (args.demo) {
    const { runDemoClient } = await import('./demo/demo-client.js');
    const first = config.upstreams[0];
    if (first) {
      await runDemoClient(`http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}${first.path}`, (line) => process.stdout.write(`${line}\n`));
      process.stdout.write(`\nThe gateway keeps serving at http://${host}:${port}${first.path}; press Ctrl-C to stop.\n`);
    }
  }
  return -1; // keep running
}

/** What the operator can do about a listen that failed, in one line, or undefined when it is no matter of the address. */
function listenProblem(e: unknown, host: string, port: number): string | undefined {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  switch (code) {
    case 'EADDRINUSE':
      return `cannot listen on ${where}: port ${port} is in use (EADDRINUSE): pass --port (or set server.port) to use another`;
    case 'EACCES':
      return `cannot listen on ${where}: port ${port} needs privileges (EACCES): pass --port (or set server.port) with a port above 1023`;
    case 'EADDRNOTAVAIL':
      return `cannot listen on ${where}: ${host} is not an address of this machine (EADDRNOTAVAIL): pass --host (or set server.host)`;
    default:
      return undefined;
  }
}

/**
 * SIGTERM and SIGINT: a graceful shutdown, bounded; a second signal exits at once. Returns whether one has begun
 * (a reload then does nothing).
 */
function onStopSignals(gateway: Gateway, demoUpstream: DemoUpstream): () => boolean {
  const log = gateway.app.log;
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      // A second signal during the drain: the operator wants out now.
      log.warn({ signal }, 'second signal during shutdown: exiting now');
      process.exit(1);
    }
    stopping = true;
    const graceMs = gateway.config.server.shutdownGraceMs;
    log.info({ signal, graceMs }, 'shutting down: refusing new requests, letting those in flight finish');
    // Whatever hangs after the grace (a store or an upstream that does not answer its close) does not keep the process.
    setTimeout(() => {
      log.error({ boundMs: graceMs + CLOSE_BOUND_MS }, 'shutdown did not finish in time: exiting');
      process.exit(1);
    }, graceMs + CLOSE_BOUND_MS).unref();
    await gateway.shutdown(graceMs);
    await demoUpstream?.close();
    log.info({ signal }, 'shut down');
    await exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  return () => stopping;
}

/** SIGHUP: the same file again, with the same flags. Reloads run one at a time, in the order the signals came. */
function onReloadSignal(gateway: Gateway, file: string | undefined, overrides: ConfigOverrides, demoUpstream: DemoUpstream, stopping: () => boolean): void {
  const log = gateway.app.log;
  let reloading: Promise<void> = Promise.resolve();
  const reload = async () => {
    if (stopping()) return;
    if (!file) {
      log.info('SIGHUP: nothing to reload (no configuration file; flags are read at start only)');
      return;
    }
    let next: Readonly<GatewayConfig>;
    try {
      next = withDemo(await loadConfigFile(file, overrides), demoUpstream);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      log.error({ file, problems: e.problems }, 'reload rejected: invalid configuration; the running configuration stays');
      return;
    }
    const { applied, needsRestart } = gateway.reload(next);
    log.info({ file, applied, needsRestart }, applied.length > 0 ? 'configuration reloaded' : 'configuration reloaded: nothing to apply live');
    if (needsRestart.length > 0) log.warn({ needsRestart }, 'configuration changes that need a restart were not applied');
  };
  process.on('SIGHUP', () => {
    reloading = reloading.then(reload).catch((e: unknown) => log.error({ err: e }, 'reload failed; the running configuration stays'));
  });
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) void exit(code);
  },
  (e: unknown) => {
    process.stderr.write(`fatal: ${(e as Error)?.stack ?? String(e)}\n`);
    void exit(1);
  },
);
