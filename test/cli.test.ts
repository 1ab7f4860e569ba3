// The command line: --help, configuration errors, the embedded default (bundled demo upstream), shutdown.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { DEFAULTS } from '../src/config/index.js';
import { SCHEMA_VERSION } from '../src/store/index.js';
import { post } from './helpers/modern.js';
import { postgresBinaryMissing, startPostgres } from './helpers/postgres-server.js';
import { freePort } from './helpers/redis-server.js';

const root = new URL('..', import.meta.url).pathname;
const cli = join(root, 'src/cli.ts');

// About twenty CLI processes, one after another, each loading the sources through tsx: on a loaded two-core machine
// the file outgrew the suite's default 120 s (126 s in a clean-clone run beside other work). A longer bound, still a
// bound.
t.setTimeout(300_000);

// Node itself runs the CLI with tsx's loader (not the tsx wrapper process): the wrapper relays a signal and, when the
// child has not confirmed it within 30 ms (a loaded machine), kills it with SIGKILL and exits 143.
function runCli(args: string[], env: NodeJS.ProcessEnv = {}) {
  const child = spawn(process.execPath, ['--import', 'tsx', cli, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const exited = once(child, 'exit').then(([code]) => code as number);
  return { child, exited, out: () => stdout, err: () => stderr };
}

t.test('--help lists every flag and exits 0', async (t) => {
  const p = runCli(['--help']);
  t.equal(await p.exited, 0);
  for (const flag of ['--config', '--upstream', '--host', '--port', '--check', '--migrate', '--demo', '--help', '--version']) t.match(p.out(), flag);
  t.match(p.out(), /MCP_GATEWAY_REDIS_URL/, 'names the Redis URL variable');
  t.match(p.out(), /MCP_GATEWAY_POSTGRES_URL/, 'names the Postgres URL variable');
  // The exit codes a supervisor or script acts on (docs/operations.md § Exit codes).
  t.match(
    p.out(),
    /^Exit codes:\n {2}0 .*\n {2}1 .*\n {2}2 {2}a configuration error.*\n {2}3 {2}the task store could not be reached at start.*\n(?: {5}.*\n)* {2}4 {2}the listen address/m,
    'lists exit codes 0 to 4',
  );
  t.match(p.out(), /MCP_GATEWAY_STATE_SECRET[^]*REQUIRED with a shared store, Redis or Postgres/, 'says the secret is required with a shared store');
});

t.test('--help names files that exist, sections that are in them, and the drain as docs/operations.md says it', async (t) => {
  const p = runCli(['--help']);
  t.equal(await p.exited, 0);
  const help = p.out().replace(/\n\s+/g, ' ');
  const files = [...help.matchAll(/\b((?:config|docs)\/[\w./-]+\.(?:ya?ml|md))\b/g)].map((m) => m[1] as string);
  t.ok(files.includes('docs/several-instances.md'), `names docs/several-instances.md (${files.join(', ')})`);
  for (const file of files) {
    const text = await readFile(join(root, file), 'utf8');
    t.pass(`${file} exists`);
    // A section named beside a document, as `doc.md ("Title")`, is one of its headings.
    const section = new RegExp(`${file.replace(/[.]/g, '\\.')} \\("([^"]+)"\\)`).exec(help)?.[1];
    if (section) t.match(text, new RegExp(`^#+ ${section.replace(/[()]/g, '\\$&')}$`, 'm'), `${file} has the section "${section}"`);
  }
  t.notMatch(help, /README's/, 'no README section is named: the README is a front page');
  const operations = await readFile(join(root, 'docs/operations.md'), 'utf8');
  t.match(operations, /stops accepting connections, answers requests arriving on open\s+keep-alive connections with 503/, 'operations.md says so');
  t.match(help, /graceful shutdown: new connections are refused and requests arriving on connections already open get 503/, '--help says the same');
});

t.test('a listen port in use: one line naming the port and --port, no stack trace, exit 4', async (t) => {
  const holder = createServer();
  holder.listen(0, '127.0.0.1');
  await once(holder, 'listening');
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const port = (holder.address() as AddressInfo).port;
  const p = runCli(['--port', String(port), '--host', '127.0.0.1']);
  t.equal(await p.exited, 4, 'the documented exit code');
  t.equal(
    p.err(),
    `cannot listen on 127.0.0.1:${port}: port ${port} is in use (EADDRINUSE): pass --port (or set server.port) to use another\n`,
    'one line on standard error',
  );
  t.notMatch(p.out(), /cannot listen|EADDRINUSE|"stack"/, 'no log line with a stack trace');
});

t.test('an unknown flag exits 2 with the usage', async (t) => {
  const p = runCli(['--bogus']);
  t.equal(await p.exited, 2);
  t.match(p.err(), /bogus/);
  t.match(p.err(), /Usage:/);
});

t.test('a bad config fails at start, listing every problem by key path', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'bad.yaml');
  await writeFile(file, 'server:\n  prot: 1\nupstreams:\n  - name: a\n    url: notaurl\n    tools:\n      "*": { task: auto }\n');
  const p = runCli(['--config', file]);
  t.equal(await p.exited, 2);
  const err = p.err();
  t.match(err, /server: .*prot/);
  t.match(err, /upstreams\.0\.url/);
  t.match(err, /upstreams\.0\.tools\.\*\.afterMs/);
});

t.test('--check on every file in config/ exits 0 and prints the upstreams, paths, tool rules and store', async (t) => {
  const dir = join(root, 'config');
  for (const f of (await readdir(dir)).filter((n) => /\.ya?ml$/.test(n))) {
    const p = runCli(['--check', '--config', join(dir, f)]);
    t.equal(await p.exited, 0, `${f}: valid (${p.err()})`);
    const out = p.out();
    t.match(out, `configuration valid (${join(dir, f)})`, `${f}: says so`);
    t.match(out, /^store: (memory|redis|postgres)/m, `${f}: the store`);
    t.match(
      out,
      /^upstreams:\n {2}(- [\w.-]+: (url https?:\/\/\S+|command \[.*\]), path \/\S*, era \w+|\(none: the bundled demo upstream)/m,
      `${f}: the upstreams`,
    );
    t.match(out, /^paths:\n {2}\/mcp +(federated )?MCP endpoint of /m, `${f}: the paths`);
    t.match(out, /^tool rules \(per upstream, first match wins\):\n/m, `${f}: the rules`);
    t.notMatch(out, /"level"/, `${f}: nothing started (no log lines)`);
  }
  const p = runCli(['--check', '--config', join(dir, 'wrapping.example.yaml')]);
  t.equal(await p.exited, 0);
  t.match(p.out(), /1\. build_\*: task auto, afterMs 2000[^]*2\. export_all: task required[^]*5\. \*: task native/, 'the rules in the order they match');
});

t.test('--check on a broken file exits 2, naming the key path of each problem', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'bad.yaml');
  await writeFile(
    file,
    'server:\n  prot: 1\nstore:\n  kind: redsi\nupstreams:\n  - name: a\n    url: http://127.0.0.1:1/mcp\n    tools:\n      "*": { task: nativ }\n',
  );
  const p = runCli(['--check', '--config', file]);
  t.equal(await p.exited, 2);
  t.match(p.err(), /^invalid configuration:/);
  t.match(p.err(), /server: .*prot/);
  t.match(p.err(), /store\.kind/);
  t.match(p.err(), /upstreams\.0\.tools\.\*\.task/);
  t.equal(p.out(), '', 'nothing printed as valid');
});

t.test('--check notes an stdio command that is not found (on PATH, or from its cwd), and exits 0: it may run elsewhere', async (t) => {
  const dir = t.testdir({});
  const file = join(dir, 'stdio.yaml');
  await writeFile(
    file,
    [
      'upstreams:',
      '  - { name: missing, path: /a, command: [mcp-server-not-on-this-path, --stdio] }',
      '  - { name: relative, path: /b, command: [./bin/not-there], cwd: /tmp }',
      `  - { name: present, path: /c, command: [node, server.js] }`,
      `  - { name: absolute, path: /d, command: [${JSON.stringify(process.execPath)}] }`,
    ].join('\n'),
  );
  const p = runCli(['--check', '--config', file]);
  t.equal(await p.exited, 0, p.err());
  const notes = p
    .out()
    .split('\n')
    .filter((l) => l.startsWith('note: '));
  t.same(notes, [
    'note: upstream missing: its command "mcp-server-not-on-this-path" is not found on PATH here: the start would fail (ENOENT) and retry',
    'note: upstream relative: its command "./bin/not-there" is not found from /tmp here: the start would fail (ENOENT) and retry',
  ]);
});

t.test('--check listens nowhere and contacts no upstream and no Redis; it works with --upstream', async (t) => {
  // One local server stands for the upstream and Redis, and holds the port the gateway would listen on.
  const connections: string[] = [];
  const server = createServer((socket) => {
    connections.push('connection');
    socket.destroy();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  const dir = t.testdir({});
  const file = join(dir, 'redis.yaml');
  await writeFile(
    file,
    `store:\n  kind: redis\n  url: redis://user:hunter2hunter2@127.0.0.1:${port}/0\nupstreams:\n  - name: a\n    url: http://127.0.0.1:${port}/mcp\n`,
  );
  const p = runCli(['--check', '--config', file, '--port', String(port)], { MCP_GATEWAY_STATE_SECRET: '' });
  t.equal(await p.exited, 0, p.err());
  t.match(p.out(), `listen: http://127.0.0.1:${port}`);
  t.match(p.out(), `store: redis at redis://user:***@127.0.0.1:${port}/0`, 'the Redis URL without its password');
  t.notMatch(p.out(), /hunter2/);
  t.match(p.out(), /note: MCP_GATEWAY_STATE_SECRET is not set here/, 'what only the start checks is a note');

  const u = runCli(['--check', '--upstream', `http://127.0.0.1:${port}/mcp`]);
  t.equal(await u.exited, 0, u.err());
  t.match(u.out(), 'configuration valid (--upstream)');
  t.match(u.out(), `  - upstream: url http://127.0.0.1:${port}/mcp, path /mcp, era auto`);
  t.same(connections, [], 'no connection to the upstream or Redis');
});

t.test('--upstream is repeatable: NAME=URL, NAME=COMMAND and NAME=-- with the rest of the command line make one federated /mcp', async (t) => {
  const p = runCli([
    '--check',
    '--upstream',
    'a=http://127.0.0.1:9/mcp',
    '-u',
    "ev=node 'my server.js' --flag",
    '--upstream',
    'b=--',
    'npx',
    '-y',
    '@modelcontextprotocol/server-everything',
    '--port',
    '1',
  ]);
  t.equal(await p.exited, 0, p.err());
  t.match(p.out(), 'listen: http://127.0.0.1:8080', "--port after NAME=-- is the command's, not the gateway's");
  t.match(p.out(), '  - a: url http://127.0.0.1:9/mcp, path /mcp, era auto');
  t.match(p.out(), '  - ev: command ["node","my server.js","--flag"], path /mcp, era auto');
  t.match(p.out(), '  - b: command ["npx","-y","@modelcontextprotocol/server-everything","--port","1"], path /mcp, era auto');
  t.match(p.out(), /^ {2}\/mcp +federated MCP endpoint of a, ev, b$/m);

  const dashes = runCli(['--check', '--upstream', 'b=--', '--', 'node', '--inspect']);
  t.equal(await dashes.exited, 0, dashes.err());
  t.match(dashes.out(), '  - b: command ["node","--inspect"], path /mcp', 'a standalone -- after NAME=-- is skipped');

  const stray = runCli(['--check', '--upstream', 'http://127.0.0.1:9/mcp', '--', 'node']);
  t.equal(await stray.exited, 2);
  t.match(stray.err(), 'upstreams (--upstream): arguments after -- ("node") are the command of an --upstream NAME=--, and none is given');
});

t.test('--port must be a port number', async (t) => {
  const p = runCli(['--port', 'http']);
  t.equal(await p.exited, 2);
  t.match(p.err(), /server\.port/);
});

t.test('with no upstream it serves the bundled demo upstream, and stops on SIGTERM', async (t) => {
  const p = runCli(['--port', '0']);
  let endpoint: string | undefined;
  for await (const chunk of p.child.stdout) {
    const m = /"endpoint":"([^"]+)"/.exec(String(chunk)) ?? /"endpoint":"([^"]+)"/.exec(p.out());
    if (m) {
      endpoint = m[1];
      break;
    }
  }
  t.ok(endpoint, 'endpoint logged');
  const r = await post(
    endpoint as string,
    'tools/call',
    { name: 'greet', arguments: { name: 'CLI' } },
    { headers: { authorization: 'Bearer secret-token-xyz' } },
  );
  t.equal(r.body.result.content[0].text, 'Hello, CLI!');
  const d = await post(endpoint as string, 'server/discover');
  t.equal(d.body.result._meta['io.modelcontextprotocol/serverInfo'].name, 'demo-legacy-server');
  t.notMatch(p.out() + p.err(), /secret-token-xyz/, 'no credentials in the log');
  p.child.kill('SIGTERM');
  t.equal(await p.exited, 0);
});

t.test('--help names exactly the flags the CLI parses, each with its short form and its value', async (t) => {
  // The parser's option table, read from the source (cli.ts runs when imported, so it cannot be imported here).
  const source = await readFile(cli, 'utf8');
  const table = /parseArgs\(\{[^]*?options: \{([^]*?)\n\s*\},\n\s*strict/.exec(source)?.[1] ?? '';
  const parsed = [...table.matchAll(/^\s*['"]?([\w-]+)['"]?: \{ type: '(string|boolean)'(?:, short: '(\w)')?(?:, multiple: true)? \}/gm)].map((m) => ({
    long: m[1],
    short: m[3],
    value: m[2] === 'string',
  }));
  t.ok(parsed.length >= 7, `the option table is read (${parsed.map((o) => o.long).join(', ')})`);
  const p = runCli(['--help']);
  t.equal(await p.exited, 0);
  const options = /\nOptions:\n([^]*?)\n\n/.exec(p.out())?.[1] ?? '';
  const documented = [...options.matchAll(/^\s+(?:-(\w), )?--([\w-]+)( [A-Z]+)?/gm)].map((m) => ({ long: m[2], short: m[1], value: m[3] !== undefined }));
  const byName = (list: typeof parsed) => [...list].sort((a, b) => String(a.long).localeCompare(String(b.long)));
  t.same(byName(documented), byName(parsed), 'every parsed flag is in --help (short form and value included), and --help lists no other');

  // The environment: every variable the sources read by name, and the defaults of the configurable ones.
  const read = new Set<string>([DEFAULTS.secretEnv, DEFAULTS.redisUrlEnv, DEFAULTS.postgresUrlEnv]);
  for (const file of await srcFiles(join(root, 'src'))) {
    for (const m of (await readFile(file, 'utf8')).matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)) read.add(m[1] as string);
  }
  const environment = /\nEnvironment:\n([^]*?)\n\n/.exec(p.out())?.[1] ?? '';
  const listed = [...environment.matchAll(/^ {2}([A-Z][A-Z0-9_]*)\s/gm)].map((m) => m[1]);
  t.same(listed.sort(), [...read].sort(), 'the Environment section lists exactly the variables the gateway reads');
});

async function srcFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) out.push(...(await srcFiles(join(dir, e.name))));
    else if (e.name.endsWith('.ts')) out.push(join(dir, e.name));
  }
  return out;
}

t.test('--host given twice: the later one wins (the image entry point sets one; a flag after the image name replaces it)', async (t) => {
  const p = runCli(['--host', '0.0.0.0', '--host', '127.0.0.5', '--check']);
  t.equal(await p.exited, 0, p.err());
  t.match(p.out(), /^listen: http:\/\/127\.0\.0\.5:8080$/m);
});

t.test('SIGTERM exits within the grace when the reader of its output went away (EPIPE on stdout and stderr)', async (t) => {
  const graceMs = 2_000;
  const dir = t.testdir({ 'gw.json': JSON.stringify({ server: { port: 0, shutdownGraceMs: graceMs } }) });
  const p = runCli(['--config', join(dir, 'gw.json')]);
  // As `gateway 2>&1 | head -1`: the first line is read, then the reader is gone.
  await new Promise<void>((resolve) => p.child.stdout.once('data', () => resolve()));
  await Promise.all(
    [p.child.stdout, p.child.stderr].map((s) => {
      s.destroy();
      return once(s, 'close');
    }),
  );
  p.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const bound = new Promise<'still running'>((resolve) => (timer = setTimeout(() => resolve('still running'), graceMs + 1_000)));
  const ended = await Promise.race([p.exited, bound]);
  clearTimeout(timer);
  if (ended === 'still running') p.child.kill('SIGKILL');
  t.equal(ended, 0, `exited 0 within the grace and a second (${ended})`);
});

const SECRET = { MCP_GATEWAY_STATE_SECRET: 'cli-test-secret-0123456789abcdefghijkl' };

t.test('a Redis URL of another scheme is a configuration error naming store.url and the value (exit 2)', async (t) => {
  const dir = t.testdir({
    'file.json': JSON.stringify({ store: { kind: 'redis', url: 'http://cache:6379' } }),
    'env.json': JSON.stringify({ store: { kind: 'redis' } }),
  });
  const inFile = runCli(['--config', join(dir, 'file.json'), '--port', '0'], SECRET);
  t.equal(await inFile.exited, 2, 'in the file: exit 2');
  t.match(inFile.err(), /store\.url: a redis:\/\/ or rediss:\/\/ URL, got "http:\/\/cache:6379"/);
  const inEnv = runCli(['--config', join(dir, 'env.json'), '--port', '0'], { ...SECRET, MCP_GATEWAY_REDIS_URL: 'http://user:hunter2@cache:6379' });
  t.equal(await inEnv.exited, 2, 'in the variable: exit 2');
  t.match(
    inEnv.err(),
    /store\.url: MCP_GATEWAY_REDIS_URL \(store\.urlEnv\) must hold a redis:\/\/ or rediss:\/\/ URL, got "http:\/\/user:\*\*\*@cache:6379\/?"/,
  );
  t.notMatch(inEnv.err(), /hunter2/, 'the password is not shown');
  t.notMatch(inEnv.err(), /^\s+at /m, 'no stack trace');
});

t.test('a Redis store that cannot be reached at start: its URL without the password, the cause, no stack trace (exit 3)', async (t) => {
  const port = await freePort();
  const dir = t.testdir({ 'gw.json': JSON.stringify({ store: { kind: 'redis' } }) });
  const p = runCli(['--config', join(dir, 'gw.json'), '--port', '0'], { ...SECRET, MCP_GATEWAY_REDIS_URL: `redis://gw:hunter2@127.0.0.1:${port}/0` });
  t.equal(await p.exited, 3);
  const err = p.err();
  t.match(err, `cannot reach the Redis store at redis://gw:***@127.0.0.1:${port}/0 (MCP_GATEWAY_REDIS_URL)`);
  t.match(err, /ECONNREFUSED/, 'names the cause');
  t.notMatch(err + p.out(), /hunter2/, 'the password is not shown');
  t.notMatch(err, /^\s+at /m, 'no stack trace');
});

t.test('--upstream without a scheme names the flag and the value (exit 2)', async (t) => {
  const p = runCli(['--upstream', 'localhost:3000/mcp', '--port', '0']);
  t.equal(await p.exited, 2);
  t.match(p.err(), 'upstreams.0.url (--upstream): an http:// or https:// URL, got "localhost:3000/mcp"');
});

t.test('an stdio command that cannot start is logged with its program and working directory', async (t) => {
  const dir = t.testdir({});
  await writeFile(
    join(dir, 'gw.json'),
    JSON.stringify({ upstreams: [{ name: 'broken', command: ['no-such-program-xyz', '--token', 'sekrit-arg'], cwd: dir }] }),
  );
  const p = runCli(['--config', join(dir, 'gw.json'), '--port', '0']);
  const found = () =>
    p
      .out()
      .split('\n')
      .filter((l) => l.includes('could not be started'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)[0];
  // Checked on each chunk and once at the start: the line may have come before this test listened.
  const line = await new Promise<Record<string, unknown> | undefined>((resolve) => {
    const check = () => {
      const l = found();
      if (l) {
        p.child.stdout.off('data', check);
        p.child.off('exit', check);
        resolve(l);
      }
    };
    p.child.stdout.on('data', check);
    p.child.once('exit', () => resolve(found()));
    check();
  });
  p.child.kill('SIGTERM');
  await p.exited;
  t.equal(line?.program, 'no-such-program-xyz', 'the program');
  t.equal(line?.cwd, dir, 'the working directory');
  t.match(String(line?.msg), `"no-such-program-xyz" could not be started (ENOENT) in ${dir}`);
  t.notMatch(p.out(), /sekrit-arg/, 'never the arguments');
});

/** Resolves to whether the CLI's standard output matches `re` within the bound (false once it exits without). */
function outputMatches(p: ReturnType<typeof runCli>, re: RegExp, boundMs = 30_000): Promise<boolean> {
  return new Promise((resolve) => {
    const check = () => {
      if (re.test(p.out())) done(true);
    };
    const onExit = () => done(re.test(p.out()));
    const timer = setTimeout(() => done(false), boundMs);
    function done(matched: boolean) {
      clearTimeout(timer);
      p.child.stdout.off('data', check);
      p.child.off('exit', onExit);
      resolve(matched);
    }
    p.child.stdout.on('data', check);
    p.child.once('exit', onExit);
    check();
  });
}

/** The versions a fresh schema gets (1 to SCHEMA_VERSION), as --migrate names them. */
const VERSIONS = Array.from({ length: SCHEMA_VERSION }, (_, i) => i + 1).join(', ');
const pgMissing = postgresBinaryMissing();
if (pgMissing) t.comment(`Postgres CLI cases skipped: ${pgMissing}`);

t.test(
  '--migrate on a Postgres store: a migrate:off start is refused until it has run; it names the versions applied, then has nothing to do',
  { skip: pgMissing ?? false },
  async (t) => {
    const server = await startPostgres();
    t.teardown(() => server.dispose());
    const dir = t.testdir({
      'gw.json': JSON.stringify({ server: { port: 0 }, store: { kind: 'postgres', url: server.url, schema: 'cli_migrate', migrate: 'off' } }),
    });
    const config = join(dir, 'gw.json');

    const refused = runCli(['--config', config], SECRET);
    t.equal(await refused.exited, 3, 'the start on an unmigrated schema exits 3');
    t.match(refused.err(), /schema "cli_migrate" is at version 0, this gateway needs \d+: run mcp-tasks-gateway --migrate/, 'and says to run --migrate');
    t.notMatch(refused.err(), /^\s+at /m, 'no stack trace');

    const first = runCli(['--migrate', '--config', config]);
    t.equal(await first.exited, 0, first.err());
    t.equal(
      first.out(),
      `postgres store at ${server.url}, schema cli_migrate: applied version${SCHEMA_VERSION > 1 ? 's' : ''} ${VERSIONS}; now at ${SCHEMA_VERSION}\n`,
      'names the versions applied',
    );
    t.notMatch(first.out(), /"level"/, 'nothing started (no log lines)');

    const second = runCli(['--migrate', '--config', config]);
    t.equal(await second.exited, 0, second.err());
    t.equal(
      second.out(),
      `postgres store at ${server.url}, schema cli_migrate: already at version ${SCHEMA_VERSION}, nothing to do\n`,
      'the second run: nothing to do',
    );

    const started = runCli(['--config', config], SECRET);
    t.ok(await outputMatches(started, /serving MCP endpoint/), `the migrate:off gateway starts now (${started.err()})`);
    started.child.kill('SIGTERM');
    t.equal(await started.exited, 0, 'and stops cleanly');
  },
);

t.test('--migrate with a memory store: exit 2, saying only a postgres store has a schema to migrate', async (t) => {
  const p = runCli(['--migrate']);
  t.equal(await p.exited, 2);
  t.equal(p.err(), 'invalid configuration:\n  - --migrate: the store is memory; only a postgres store has a schema to migrate\n');
  t.equal(p.out(), '', 'nothing started');
});

t.test('--migrate with a Postgres that cannot be reached: exit 3, its URL without the password', async (t) => {
  const port = await freePort();
  const dir = t.testdir({ 'gw.json': JSON.stringify({ store: { kind: 'postgres' } }) });
  const p = runCli(['--migrate', '--config', join(dir, 'gw.json')], { MCP_GATEWAY_POSTGRES_URL: `postgres://u:s3cret@127.0.0.1:${port}/x` });
  t.equal(await p.exited, 3, p.err());
  t.match(p.err(), `cannot migrate the Postgres store at postgres://u:***@127.0.0.1:${port}/x: `, 'names the URL, password masked');
  t.match(p.err(), /ECONNREFUSED/, 'names the cause');
  t.notMatch(p.err() + p.out(), /s3cret/, 'the password is not shown');
  t.notMatch(p.err(), /^\s+at /m, 'no stack trace');
});

t.test('a Postgres store that cannot be reached at start: one line, its URL without the password, the cause (exit 3)', async (t) => {
  const port = await freePort();
  const dir = t.testdir({ 'gw.json': JSON.stringify({ store: { kind: 'postgres', url: `postgres://u:s3cret@127.0.0.1:${port}/x` } }) });
  const p = runCli(['--config', join(dir, 'gw.json'), '--port', '0'], SECRET);
  t.equal(await p.exited, 3);
  const lines = p.err().split('\n').filter(Boolean);
  t.equal(lines.length, 1, `one line on standard error (${p.err()})`);
  t.match(lines[0], new RegExp(`^cannot reach the Postgres store at postgres://u:\\*\\*\\*@127\\.0\\.0\\.1:${port}/x \\(store\\.url\\): .*ECONNREFUSED`));
  t.notMatch(p.err() + p.out(), /s3cret/, 'the password is not shown');
});

t.test('--check on a Postgres store prints its URL without the password and its schema, and contacts nothing', async (t) => {
  const connections: string[] = [];
  const holder = createServer((socket) => {
    connections.push('connection');
    socket.destroy();
  });
  holder.listen(0, '127.0.0.1');
  await once(holder, 'listening');
  t.teardown(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const port = (holder.address() as AddressInfo).port;
  const dir = t.testdir({
    'url.json': JSON.stringify({
      store: { kind: 'postgres', url: `postgres://u:s3cret@127.0.0.1:${port}/x`, schema: 'tenant_a', migrate: 'off', poolSize: 3 },
    }),
    'env.json': JSON.stringify({ store: { kind: 'postgres' } }),
  });
  const p = runCli(['--check', '--config', join(dir, 'url.json')], { MCP_GATEWAY_STATE_SECRET: '' });
  t.equal(await p.exited, 0, p.err());
  t.match(p.out(), `\nstore: postgres at postgres://u:***@127.0.0.1:${port}/x, schema tenant_a (migrate: off, pool 3)\n`, 'the store line, password masked');
  t.notMatch(p.out() + p.err(), /s3cret/, 'the password is not shown');
  t.match(p.out(), /note: MCP_GATEWAY_STATE_SECRET is not set here: the Postgres store needs the shared secret at start/);

  const env = runCli(['--check', '--config', join(dir, 'env.json')], { MCP_GATEWAY_POSTGRES_URL: '', ...SECRET });
  t.equal(await env.exited, 0, env.err());
  t.match(env.out(), `\nstore: postgres at $MCP_GATEWAY_POSTGRES_URL, schema ${DEFAULTS.postgresSchema} (migrate: auto, pool ${DEFAULTS.postgresPoolSize})\n`);
  t.match(env.out(), /note: MCP_GATEWAY_POSTGRES_URL is not set here: the Postgres store needs its URL at start/);
  t.same(connections, [], 'no connection to the database');
});
