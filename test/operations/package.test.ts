// The published package shape: `npm pack` (whose `prepare` builds dist/), the tarball installed into an empty folder
// the way a user's `npm install mcp-tasks-gateway` would, then the installed package used from there: its main export
// imported, its bin run (through its shebang, as npx runs it) in front of a real fixture upstream and of the bundled
// demo upstream, each spoken to with real MCP clients of both eras, then stopped with SIGTERM.
//
// The install reads the npm cache first (`--prefer-offline`; `npm ci` filled it) and the registry for anything
// missing. Only when both fail for want of a network is the test skipped, saying so; any other failure fails it.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { access, constants, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Fastify from 'fastify';
import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';

// Packing builds with tsc and installing resolves ~160 packages: minutes on a busy 2-core machine, never a hang.
t.setTimeout(900_000);

const root = new URL('../..', import.meta.url).pathname;
const NAME = 'mcp-tasks-gateway';
/** Bound on one npm command, and on a started gateway logging its endpoint. */
const NPM_BOUND_MS = 240_000;
const START_BOUND_MS = 60_000;
/** What npm says when neither its cache nor the registry can give a package. */
const NO_NETWORK = /ENOTCACHED|ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENETUNREACH|network/;

/** A clean-room environment: without what an enclosing `npm test` exported (its package and prefix) or tap's loaders. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' };
  // tap's loaders (TypeScript, process tracking) are for this test file, not for a user's install and run.
  delete env.NODE_OPTIONS;
  for (const k of Object.keys(env)) {
    if (/^npm_(package_|lifecycle_)/i.test(k) || /^npm_config_(local_prefix|global|prefix)$/i.test(k) || k === 'INIT_CWD') delete env[k];
  }
  return env;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed past `bound`: a failure naming the command, never a hang). */
async function run(cmd: string, args: string[], cwd: string, bound = NPM_BOUND_MS): Promise<Ran> {
  const child = spawn(cmd, args, { cwd, env: npmEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), bound);
  const [code, signal] = (await once(child, 'close')) as [number | null, string | null];
  clearTimeout(timer);
  if (signal === 'SIGKILL') throw new Error(`${cmd} ${args.join(' ')} did not end within ${bound} ms:\n${stdout.slice(-2000)}\n${stderr.slice(-2000)}`);
  return { code, stdout, stderr };
}

/** A gateway started from the installed bin, its endpoint read from the `serving MCP endpoint` log line. */
interface Started {
  child: ChildProcess;
  endpoint: string;
  line: Record<string, unknown>;
  output(): string;
  exited: Promise<[number | null, string | null]>;
}

async function startInstalled(app: string, args: string[]): Promise<Started> {
  // The bin link itself, not `node dist/cli.js`: this runs only if the shebang and the executable bit survived packing.
  const bin = join(app, 'node_modules', '.bin', NAME);
  const child = spawn(bin, args, { cwd: app, stdio: ['ignore', 'pipe', 'pipe'], env: { ...npmEnv(), LOG_LEVEL: 'info' } });
  let out = '';
  const exited = once(child, 'close') as Promise<[number | null, string | null]>;
  const line = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no endpoint logged within ${START_BOUND_MS} ms:\n${out.slice(-4000)}`)), START_BOUND_MS);
    const check = (d: Buffer) => {
      out += d;
      for (const l of out.split('\n')) {
        if (!l.includes('serving MCP endpoint')) continue;
        clearTimeout(timer);
        resolve(JSON.parse(l) as Record<string, unknown>);
        return;
      }
    };
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    void exited.then(([code, signal]) => {
      clearTimeout(timer);
      reject(new Error(`the installed gateway exited (code ${code}, signal ${signal}) before serving:\n${out.slice(-4000)}`));
    });
  });
  return { child, endpoint: String(line.endpoint), line, output: () => out, exited };
}

/** tools/list through the gateway by a real 2025-11-25 client (SDK 1.x) and a real 2026-07-28 client (SDK 2.x). */
async function listBothEras(url: string): Promise<{ legacy: string[]; modern: string[]; modernEra: string | undefined }> {
  const legacy = new LegacyClient({ name: 'package-test-legacy', version: '1.0.0' });
  await legacy.connect(new LegacyTransport(new URL(url)));
  const legacyNames = (await legacy.listTools()).tools.map((x) => x.name);
  await legacy.close();
  const modern = new ModernClient({ name: 'package-test-modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await modern.connect(new ModernTransport(new URL(url)));
  const modernNames = (await modern.listTools(undefined, { cacheMode: 'bypass' })).tools.map((x) => x.name);
  const modernEra = modern.getProtocolEra();
  await modern.close();
  return { legacy: legacyNames, modern: modernNames, modernEra };
}

/** What the subtests share: the pack report, and the install folder (or why it could not be made). */
interface Prepared {
  packedFiles: Set<string>;
  pkg: { version: string; main: string; types: string; bin: Record<string, string>; exports: Record<string, string | Record<string, string>> };
  app: string;
  skip: string | false;
}

const work = await mkdtemp(join(tmpdir(), 'gw-package-'));
t.teardown(() => rm(work, { recursive: true, force: true }));

// Started at once, awaited by each subtest (the root test stays open while they wait: its teardown removes `work`).
const prepared: Promise<Prepared> = (async () => {
  const packed = await run('npm', ['pack', '--json', '--pack-destination', work], root);
  if (packed.code !== 0) throw new Error(`npm pack failed (${packed.code}):\n${packed.stderr.slice(-4000)}`);
  // The build's own output goes to stderr with --json; the report is the JSON array on stdout.
  const report = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as Array<{ filename: string; files: Array<{ path: string }> }>;
  const tarball = join(work, report[0]?.filename ?? '');
  const packedFiles = new Set((report[0]?.files ?? []).map((f) => f.path));
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as Prepared['pkg'];
  const app = join(work, 'app');
  await mkdir(app);
  await writeFile(join(app, 'package.json'), JSON.stringify({ name: 'package-test-app', version: '1.0.0', private: true }));
  const installed = await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball], app);
  const offline = installed.code !== 0 && NO_NETWORK.test(installed.stderr);
  if (installed.code !== 0 && !offline) throw new Error(`npm install of the tarball failed (${installed.code}):\n${installed.stderr.slice(-4000)}`);
  const skip = offline
    ? `neither the npm cache nor the registry could give the package's dependencies (${NO_NETWORK.exec(installed.stderr)?.[0]}): run \`npm ci\` with the registry reachable first`
    : false;
  return { packedFiles, pkg, app, skip };
})();
// A failure above fails the first subtest that awaits it; the others must not see it as unhandled.
prepared.catch(() => {});

t.test('the tarball holds what the runtime needs and no tests or sources', async (t) => {
  const { packedFiles, pkg } = await prepared;
  const targets = [
    pkg.main,
    pkg.types,
    ...Object.values(pkg.bin),
    ...Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e))),
  ];
  for (const target of targets) t.ok(packedFiles.has(target.replace(/^\.\//, '')), `${target} (named by package.json) is in the tarball`);
  for (const f of [
    'README.md',
    'LICENSE',
    'package.json',
    'dist/cli.js',
    'dist/index.js',
    'dist/index.d.ts',
    'dist/demo/demo-server.js',
    'config/gateway.example.yaml',
    'config/gateway.redis.example.yaml',
    'schema/gateway.schema.json',
  ]) {
    t.ok(packedFiles.has(f), `${f} is packed`);
  }
  const stray = [...packedFiles].filter((f) => /^(src|test|scripts|bench|conformance|docs|\.ci)\//.test(f) || /\.test\.[jt]s$/.test(f));
  t.same(stray, [], 'no sources, tests or tooling in the tarball');
  // tsc never deletes: output of a source removed since an earlier build would ship unless someone cleans dist/.
  const stale = [...packedFiles].filter((f) => f.startsWith('dist/') && !existsSync(join(root, 'src', f.slice(5).replace(/\.(js|d\.ts)(\.map)?$/, '.ts'))));
  t.same(stale, [], 'every file under dist/ is built from a file under src/ (else: rm -rf dist and build again)');
  t.match(await readFile(join(root, 'dist/cli.js'), 'utf8'), /^#!\/usr\/bin\/env node\n/, 'the CLI starts with its shebang');
});

t.test('the installed package: its main export resolves and exposes buildGateway', async (t) => {
  const { app, pkg, skip } = await prepared;
  if (skip) return void t.pass('the tarball installed', { skip });
  const script = `import('${NAME}').then((m) => console.log(JSON.stringify({ exports: Object.keys(m).sort(), buildGateway: typeof m.buildGateway, parseConfig: typeof m.parseConfig, version: m.GATEWAY_VERSION })))`;
  const r = await run(process.execPath, ['-e', script], app);
  t.equal(r.code, 0, r.stderr);
  const got = JSON.parse(r.stdout) as { exports: string[]; buildGateway: string; parseConfig: string; version: string };
  t.equal(got.buildGateway, 'function');
  t.equal(got.parseConfig, 'function');
  t.equal(got.version, pkg.version, 'the version it reports is the package version');
  t.same(
    got.exports,
    ['ConfigError', 'DEFAULTS', 'DEFAULT_LOGGER', 'GATEWAY_NAME', 'GATEWAY_VERSION', 'buildGateway', 'loadConfigFile', 'parseConfig'],
    'the public API, and nothing else',
  );
  const sub = await run(process.execPath, ['-e', `console.log(require.resolve('${NAME}/package.json'))`], app);
  t.equal(sub.code, 0, `${NAME}/package.json is exported: ${sub.stderr}`);
  const deep = await run(
    process.execPath,
    ['-e', `import('${NAME}/dist/app.js').then(() => process.exit(0), (e) => { console.log(e.code); process.exit(3) })`],
    app,
  );
  t.equal(deep.stdout.trim(), 'ERR_PACKAGE_PATH_NOT_EXPORTED', 'files past the exports map are not reachable');
  await access(join(app, 'node_modules', NAME, pkg.types), constants.R_OK);
  t.pass('the types file exists where package.json says');
});

t.test('the installed bin runs in front of a real upstream and stops on SIGTERM', async (t) => {
  const { app, pkg, skip } = await prepared;
  if (skip) return void t.pass('the tarball installed', { skip });
  const fx = await startLegacyFixture();
  t.teardown(() => fx.close());
  const mode = (await stat(join(app, 'node_modules', NAME, pkg.bin[NAME] as string))).mode;
  t.ok(mode & 0o111, 'the installed CLI is executable');
  const gw = await startInstalled(app, ['--upstream', fx.url, '--port', '0']);
  t.teardown(() => void gw.child.kill('SIGKILL'));
  t.equal(gw.line.demo, false, 'the given upstream, not the demo');
  const direct = new LegacyClient({ name: 'package-test-direct', version: '1.0.0' });
  await direct.connect(new LegacyTransport(new URL(fx.url)));
  const expected = (await direct.listTools()).tools.map((x) => x.name);
  await direct.close();
  t.ok(expected.length > 0);
  const got = await listBothEras(gw.endpoint);
  t.same(got.legacy, expected, 'a 2025-11-25 client lists the upstream tools through the installed gateway');
  t.equal(got.modernEra, 'modern', 'the 2026-07-28 client speaks its own era to the gateway');
  t.same(got.modern, expected, 'a 2026-07-28 client lists the same tools through it (translated)');
  gw.child.kill('SIGTERM');
  const [code, signal] = await gw.exited;
  t.same({ code, signal }, { code: 0, signal: null }, 'SIGTERM stops it cleanly');
});

t.test('the installed bin with no upstream serves the bundled demo upstream', async (t) => {
  const { app, skip } = await prepared;
  if (skip) return void t.pass('the tarball installed', { skip });
  const gw = await startInstalled(app, ['--port', '0']);
  t.teardown(() => void gw.child.kill('SIGKILL'));
  t.equal(gw.line.demo, true);
  const got = await listBothEras(gw.endpoint);
  for (const names of [got.legacy, got.modern]) t.ok(names.includes('slow_report') && names.includes('greet'), `demo tools listed: ${names.join(', ')}`);
  gw.child.kill('SIGTERM');
  const [code] = await gw.exited;
  t.equal(code, 0);
});

t.test('npx mcp-tasks-gateway --help and --version from the install', async (t) => {
  const { app, pkg, skip } = await prepared;
  if (skip) return void t.pass('the tarball installed', { skip });
  const help = await run('npx', ['--no-install', NAME, '--help'], app);
  t.equal(help.code, 0, help.stderr);
  t.match(help.stdout, /^mcp-tasks-gateway \d+\.\d+\.\d+/);
  t.match(help.stdout, /Usage: mcp-tasks-gateway \[options\]/);
  const version = await run('npx', ['--no-install', NAME, '--version'], app);
  t.equal(version.code, 0, version.stderr);
  t.equal(version.stdout.trim(), pkg.version);
});

// ── What npm ci and a user's install check before anything runs: engines, and the licence ────────────────────────

/** semver (a declared devDependency; it ships no types, and only these two functions are used). */
const semver = createRequire(import.meta.url)('semver') as {
  validRange(range: string): string | null;
  subset(sub: string, dom: string): boolean;
};

interface LockEntry {
  version?: string;
  dev?: boolean;
  engines?: { node?: string } | string[];
}

/** The Node versions a contributor develops on: a current Node 20 or 22 (tap's coverage, c8, needs 20.19 or 22.12). */
const DEV_NODE = '^20.19.0 || ^22.12.0 || >=23';

t.test('every package in package-lock.json runs on the Node versions it is installed on (npm ci warns EBADENGINE otherwise)', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, LockEntry> };
  const ours = pkg.engines.node;
  t.ok(semver.validRange(ours), `engines.node ${ours} is a valid range`);
  t.ok(semver.subset(DEV_NODE, ours), `development (${DEV_NODE}) is on versions engines.node admits`);
  t.same(lock.packages['']?.engines, pkg.engines, 'the lock was written from this package.json (npm install --package-lock-only)');
  const all = Object.entries(lock.packages).filter(([path]) => path !== '');
  t.ok(all.filter(([, entry]) => !entry.dev).length > 50, 'the production packages are in the lock');
  // What npm ci prints EBADENGINE for: a package whose range leaves out a Node version it is installed on (an old
  // lockfile's engines may be an array of strings: no node range then). Production packages run wherever engines.node
  // admits; dev ones wherever a contributor runs `npm ci` (package.json's overrides pin content-type under
  // @octokit/request, the conformance suite's, to 2.x: 3.x parses alike but needs Node 22).
  const narrower = all
    .map(([path, entry]) => ({ path, dev: entry.dev, version: entry.version, node: Array.isArray(entry.engines) ? undefined : entry.engines?.node }))
    .filter((p) => p.node !== undefined && !semver.subset(p.dev ? DEV_NODE : ours, p.node))
    .map((p) => `${p.path.replace(/^.*node_modules\//, '')}@${p.version} needs node ${p.node}`);
  t.same(narrower, [], `no production package needs more than ${ours}, no dev package more than ${DEV_NODE}`);
});

t.test("every install script in package-lock.json is decided in package.json's allowScripts (npm 11 names the rest at each install)", async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> };
  const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { hasInstallScript?: boolean }>;
  };
  const scripted = Object.entries(lock.packages)
    .filter(([path, entry]) => path !== '' && entry.hasInstallScript)
    .map(([path]) => path.replace(/^.*node_modules\//, ''));
  t.ok(scripted.length > 0, `the lock names its install scripts (${scripted.join(', ')})`);
  const decided = Object.keys(pkg.allowScripts ?? {}).map((key) => key.replace(/(?<=.)@.*$/, ''));
  t.same(
    scripted.filter((name) => !decided.includes(name)),
    [],
    'each is approved or denied',
  );
  t.same(
    decided.filter((name) => !scripted.includes(name)),
    [],
    'and allowScripts names no package without one (npm install-scripts prune)',
  );
});

t.test("fastify.inject sends cookies through light-my-request's cookie (the one package.json's overrides keeps on 1.x)", async (t) => {
  const app = Fastify();
  t.teardown(() => app.close());
  app.get('/echo', async (req) => ({ cookie: req.headers.cookie }));
  const res = await app.inject({ method: 'GET', url: '/echo', cookies: { a: 'b c', d: 'e' } });
  t.same(res.json(), { cookie: 'a=b%20c; d=e' });
});

t.test('LICENSE is the Apache License 2.0 that package.json names, with our copyright line', async (t) => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { license: string };
  t.equal(pkg.license, 'Apache-2.0');
  const text = readFileSync(join(root, 'LICENSE'), 'utf8');
  t.match(text, /^\s*Apache License\n\s*Version 2\.0, January 2004\n/);
  t.match(text, /TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION/);
  t.match(text, /END OF TERMS AND CONDITIONS/, 'the full text, not an excerpt');
  t.match(text, /^ {3}Copyright 2026 the mcp-tasks-gateway authors$/m);
  t.notMatch(text, /\[yyyy\]|\[name of copyright owner\]/, 'no placeholder left');
});
