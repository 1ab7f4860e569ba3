// scripts/build-if-stale.mjs, which `npm run demo` runs instead of an unconditional build: run in a scratch folder
// laid out like the repository, whose `npm run build` only counts its runs and writes dist/cli.js (as tsc would), so
// "up to date" is seen to run no build at all and "stale" exactly one.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import t, { type Test } from 'tap';

const root = new URL('../..', import.meta.url).pathname;
const script = join(root, 'scripts', 'build-if-stale.mjs');

/** Seconds since the epoch, for utimes: the fixture's times are set, never left to the clock. */
const NOW = Math.floor(Date.now() / 1000);
const BUILT = NOW - 1000;
const BEFORE = BUILT - 100;
const AFTER = BUILT + 100;

/** A scratch repository: sources and configs from before the build, dist/cli.js from the build. */
async function fixture(t: Test, opts: { buildExits?: number; built?: boolean } = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'gw-build-if-stale-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  // The "build": count the run, emit dist/cli.js (tsc emits even when it reports errors), exit as told.
  const build = `const fs = require('node:fs'); fs.appendFileSync('builds', 'x'); fs.mkdirSync('dist', { recursive: true }); fs.writeFileSync('dist/cli.js', ''); process.exit(${opts.buildExits ?? 0});`;
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'fixture', private: true, scripts: { build: 'node build.cjs' } }),
    'build.cjs': build,
    'tsconfig.json': '{}',
    'tsconfig.build.json': '{}',
    'src/cli.ts': '',
    'src/deep/er/module.ts': '',
  };
  for (const [path, text] of Object.entries(files)) await put(dir, path, text, BEFORE);
  if (opts.built !== false) await put(dir, 'dist/cli.js', '', BUILT);
  return dir;
}

async function put(dir: string, path: string, text: string, time: number): Promise<void> {
  await mkdir(dirname(join(dir, path)), { recursive: true });
  await writeFile(join(dir, path), text);
  await utimes(join(dir, path), time, time);
}

/** Runs the script in `dir` as `npm run demo` does (node, cwd the repository); how many builds it ran. */
async function runIn(dir: string): Promise<{ code: number | null; out: string; builds: number }> {
  // No loaders of tap's in the script's node, and no registry look-up by npm run (the update notice).
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_update_notifier: 'false' };
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, [script], { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const [code] = (await once(child, 'close')) as [number | null];
  const builds = (await readFile(join(dir, 'builds'), 'utf8').catch(() => '')).length;
  return { code, out, builds };
}

t.test('dist/cli.js newer than src/, the tsconfigs and package.json: "up to date", and no build runs', async (t) => {
  const dir = await fixture(t);
  const r = await runIn(dir);
  t.equal(r.code, 0, r.out);
  t.match(r.out, /build-if-stale: dist\/ is up to date/);
  t.equal(r.builds, 0, 'npm run build was not run');
});

t.test('a source file modified after the build, however deep: one build, then up to date', async (t) => {
  const dir = await fixture(t);
  await utimes(join(dir, 'src/deep/er/module.ts'), AFTER, AFTER);
  const first = await runIn(dir);
  t.equal(first.code, 0, first.out);
  t.match(first.out, /src\/deep\/er\/module\.ts is newer than dist\/cli\.js: building/);
  t.equal(first.builds, 1);
  const second = await runIn(dir);
  t.match(second.out, /dist\/ is up to date/);
  t.equal(second.builds, 1, 'the second run built nothing');
});

t.test('a tsconfig or package.json modified after the build: built again', async (t) => {
  for (const file of ['tsconfig.json', 'tsconfig.build.json', 'package.json']) {
    const dir = await fixture(t);
    await utimes(join(dir, file), AFTER, AFTER);
    const r = await runIn(dir);
    t.match(r.out, `${file} is newer than dist/cli.js`, file);
    t.equal(r.builds, 1, file);
  }
});

t.test('no dist/cli.js yet: built', async (t) => {
  const dir = await fixture(t, { built: false });
  const r = await runIn(dir);
  t.equal(r.code, 0, r.out);
  t.match(r.out, /dist\/cli\.js does not exist: building/);
  t.equal(r.builds, 1);
});

t.test('a failed build exits non-zero, and the next run builds again although the build wrote dist/cli.js', async (t) => {
  const dir = await fixture(t, { buildExits: 2 });
  await utimes(join(dir, 'src/cli.ts'), AFTER, AFTER);
  const first = await runIn(dir);
  t.not(first.code, 0, 'the build failure is the exit status');
  t.equal((await stat(join(dir, 'dist/cli.js'))).mtimeMs, 0, "the failed build's output is dated at the epoch");
  const second = await runIn(dir);
  t.match(second.out, /building/);
  t.equal(second.builds, 2);
});

t.test('npm run demo builds through the script, then runs the built CLI', async (t) => {
  const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
  t.equal(pkg.scripts.demo, 'node scripts/build-if-stale.mjs && node dist/cli.js --demo');
});
