// The Dockerfile, checked without a Docker daemon (none here): its shape (node:20-slim stages, a non-root user, the
// package's bin as entry point, listening on every interface, the port exposed), every file it copies exists and
// passes .dockerignore, and its HEALTHCHECK command, run as written against a real gateway, says healthy, and
// unhealthy when nothing answers. What the image runs (the packed tarball, installed) is test/operations/package.test.ts.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { parse as parseYaml } from 'yaml';
import { DEFAULTS } from '../../src/config/index.js';
import { freePort } from '../helpers/redis-server.js';
import { startStack } from '../helpers/stack.js';

const root = new URL('../..', import.meta.url).pathname;
const pkg = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string> };

/** One instruction of the Dockerfile: its keyword and its arguments (continuation lines joined, comments dropped). */
interface Instruction {
  op: string;
  args: string;
}

function parseDockerfile(text: string): Instruction[] {
  const joined = text
    .split('\n')
    .filter((l) => !/^\s*#/.test(l))
    .join('\n')
    .replace(/\\\n/g, ' ');
  return joined
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean)
    .map((l) => {
      const m = /^(\S+)\s+(.*)$/.exec(l);
      return { op: (m?.[1] ?? l).toUpperCase(), args: m?.[2]?.trim() ?? '' };
    });
}

/** The stages: each FROM and what follows it up to the next. */
function stagesOf(instructions: Instruction[]): Instruction[][] {
  const stages: Instruction[][] = [];
  for (const i of instructions) {
    if (i.op === 'FROM') stages.push([]);
    stages.at(-1)?.push(i);
  }
  return stages;
}

/** Whether .dockerignore (an allow-list: `*`, then `!path` entries) lets `path` into the build context. */
function admitted(ignore: string[], path: string): boolean {
  let ok = true;
  for (const line of ignore) {
    const negate = line.startsWith('!');
    const pattern = (negate ? line.slice(1) : line).replace(/\/$/, '');
    const matches = pattern === '*' || path === pattern || path.startsWith(`${pattern}/`);
    if (matches) ok = negate;
  }
  return ok;
}

const instructions = parseDockerfile(await readFile(join(root, 'Dockerfile'), 'utf8'));
const stages = stagesOf(instructions);
const runtime = stages.at(-1) ?? [];
const ignore = (await readFile(join(root, '.dockerignore'), 'utf8'))
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

t.test('multi-stage on node:20-slim, running as a user that is not root', async (t) => {
  t.ok(stages.length >= 2, 'a build stage and a runtime stage');
  for (const s of stages) t.match(s[0]?.args ?? '', /^node:20-slim(\s|$)/, `FROM ${s[0]?.args}`);
  const users = runtime.filter((i) => i.op === 'USER').map((i) => i.args);
  t.ok(users.length > 0, 'the runtime stage names a USER');
  t.notMatch(users.at(-1) ?? 'root', /^(root|0)(:|$)/, 'the last USER is not root');
  const build = stages[0] ?? [];
  const runs = build
    .filter((i) => i.op === 'RUN')
    .map((i) => i.args)
    .join('\n');
  t.match(runs, /npm ci/, 'the build stage installs from the lockfile');
  t.match(runs, /npm run build/, 'and builds');
  t.match(runs, /npm pack/, 'and packs what a publish would ship');
  const runtimeRuns = runtime
    .filter((i) => i.op === 'RUN')
    .map((i) => i.args)
    .join('\n');
  t.match(runtimeRuns, /--omit=dev/, 'the runtime stage installs production dependencies only');
  const runtimeSources = runtime
    .filter((i) => i.op === 'COPY')
    .flatMap((i) =>
      i.args
        .split(/\s+/)
        .filter((p) => !p.startsWith('--'))
        .slice(0, -1),
    );
  t.same(
    runtimeSources.filter((p) => /node_modules|\/src\/?$|\.ts$/.test(p)),
    [],
    'the runtime stage copies neither sources nor the build stage node_modules',
  );
});

t.test('the entry point is the package bin, listening on every interface, the port exposed', async (t) => {
  const entry = runtime.filter((i) => i.op === 'ENTRYPOINT').at(-1);
  const argv = JSON.parse(entry?.args ?? 'null') as string[] | null;
  t.ok(Array.isArray(argv), 'ENTRYPOINT in exec form (signals reach the gateway, not a shell)');
  t.equal(argv?.[0], Object.keys(pkg.bin)[0], 'ENTRYPOINT names the bin of package.json');
  const host = argv?.indexOf('--host') ?? -1;
  t.equal(host >= 0 ? argv?.[host + 1] : undefined, '0.0.0.0', 'listens on every interface (the default is loopback)');
  t.notOk(argv?.includes('--port') || argv?.includes('-p'), 'on the default port, which EXPOSE and the healthcheck name');
  t.same(
    runtime.filter((i) => i.op === 'EXPOSE').map((i) => i.args),
    [String(DEFAULTS.port)],
    'EXPOSE the default port',
  );
});

t.test('every file the build copies from the context exists and passes .dockerignore', async (t) => {
  const copies = instructions.filter((i) => i.op === 'COPY' && !/--from=/.test(i.args));
  t.ok(copies.length > 0);
  for (const c of copies) {
    const parts = c.args.split(/\s+/).filter((p) => !p.startsWith('--'));
    for (const src of parts.slice(0, -1)) {
      t.ok(existsSync(join(root, src)), `${src} exists`);
      t.ok(admitted(ignore, src), `${src} is not excluded by .dockerignore`);
    }
  }
  for (const kept of ['node_modules', 'dist', 'test', '.git', 'bench']) t.notOk(admitted(ignore, kept), `${kept} stays out of the build context`);
  // The build stage's tsconfig.build.json extends tsconfig.json: both must be there.
  const copied = copies.flatMap((c) => c.args.split(/\s+/).slice(0, -1));
  const extended = (JSON.parse(await readFile(join(root, 'tsconfig.build.json'), 'utf8')) as { extends?: string }).extends;
  if (extended) t.ok(copied.includes(extended.replace(/^\.\//, '')), `${extended} (extended by tsconfig.build.json) is copied`);
});

t.test('no production dependency has an install script (the image installs with --ignore-scripts)', async (t) => {
  const lock = JSON.parse(await readFile(join(root, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { dev?: boolean; hasInstallScript?: boolean }>;
  };
  const scripted = Object.entries(lock.packages).filter(([, p]) => p.hasInstallScript);
  t.same(
    scripted.filter(([, p]) => !p.dev).map(([k]) => k),
    [],
    'none in production',
  );
  t.same(
    scripted.map(([k]) => k),
    ['node_modules/esbuild'],
    'the one the Dockerfile names (dev, for tsx)',
  );
});

t.test('the HEALTHCHECK command, as written, says healthy against a real gateway and unhealthy with none', async (t) => {
  const hc = runtime.find((i) => i.op === 'HEALTHCHECK');
  const cmd = JSON.parse(/CMD\s+(\[.*\])\s*$/.exec(hc?.args ?? '')?.[1] ?? 'null') as string[] | null;
  t.equal(cmd?.[0], 'node', 'node checks (node:20-slim has no curl)');
  const script = cmd?.[2] ?? '';
  t.match(script, `http://127.0.0.1:${DEFAULTS.port}/healthz`, 'asks /healthz on the exposed port');
  const check = async (port: number) => {
    const child = spawn(process.execPath, ['-e', script.replace(`:${DEFAULTS.port}/`, `:${port}/`)], { stdio: 'ignore' });
    const [code] = (await once(child, 'exit')) as [number | null];
    return code;
  };
  const stack = await startStack();
  t.teardown(() => stack.close());
  t.equal(await check(Number(new URL(stack.url).port)), 0, 'healthy: a gateway answers /healthz');
  t.equal(await check(await freePort()), 1, 'unhealthy: nothing listens');

  // The Redis example's allow-list names the public host only; the container's own probe still gets its answer.
  const example = parseYaml(await readFile(join(root, 'config/gateway.redis.example.yaml'), 'utf8')) as { server: { allowedHosts: string[] } };
  t.notOk(
    example.server.allowedHosts.some((h) => h === '127.0.0.1' || h === 'localhost'),
    'the example lists no loopback name',
  );
  const listed = await startStack({ server: { allowedHosts: example.server.allowedHosts } });
  t.teardown(() => listed.close());
  t.equal(await check(Number(new URL(listed.url).port)), 0, 'healthy with the example allow-list');
  const mcp = await fetch(listed.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  t.equal(mcp.status, 403, 'the MCP endpoint still refuses a Host the list does not name');
});
