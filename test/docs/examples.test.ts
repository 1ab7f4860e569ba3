/**
 * The client examples the README shows (examples/*.ts), run as they are against a real gateway process on its
 * embedded default (no upstream: the bundled demo upstream, its slow_report wrapped), and the README's copies of them
 * kept identical to the files.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import t from 'tap';
import { startGatewayProcess } from '../helpers/gateway-process.js';

const root = new URL('../..', import.meta.url).pathname;
/** The examples the README shows in full (modern-tasks.ts and modern-ext-tasks.ts it links, with the request's shape). */
const EMBEDDED = ['modern-client.ts', 'legacy-client.ts'];
/** A run that has not ended by then failed (a test failure, not a pass). */
const RUN_BOUND_MS = 60_000;

async function run(file: string, url: string): Promise<{ code: number | null; out: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', `examples/${file}`, url], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (out += d));
  const timer = setTimeout(() => child.kill('SIGKILL'), RUN_BOUND_MS);
  const [code] = (await once(child, 'exit')) as [number | null];
  clearTimeout(timer);
  return { code, out };
}

t.test('each client example runs against the gateway in front of the demo upstream', async (t) => {
  const gw = await startGatewayProcess({ name: 'examples', config: {} });
  t.teardown(() => gw.kill('SIGTERM'));
  const url = gw.url('demo');

  const modern = await run('modern-client.ts', url);
  t.equal(modern.code, 0, modern.out);
  t.match(modern.out, /era: modern server: demo-legacy-server/, 'the v2 client negotiated 2026-07-28 and sees the upstream');
  t.match(modern.out, /greet: Hello, World!/);
  t.match(modern.out, /book_table: Booked a table for 2\./, "the legacy server's elicitation answered through an MRTR round");

  const legacy = await run('legacy-client.ts', url);
  t.equal(legacy.code, 0, legacy.out);
  t.match(legacy.out, /tasks: true/, 'the gateway advertises 2025-11-25 tasks');
  t.match(legacy.out, /task created: working/);
  t.match(legacy.out, /result: Report ready after 2s\./);

  const tasks = await run('modern-tasks.ts', url);
  t.equal(tasks.code, 0, tasks.out);
  t.match(tasks.out, /tools\/call: task working/, 'declaring the extension, the slow call is a task');
  t.match(tasks.out, /tasks\/get: completed/);
  t.match(tasks.out, /result: Report ready after 2s\./, 'tasks/get carried the result');

  const ext = await run('modern-ext-tasks.ts', url);
  t.equal(ext.code, 0, ext.out);
  t.match(ext.out, /^tools\/call: task gwt_\S+$/m, 'through ext-tasks on the v2 client, the slow call is a task of the gateway');
  t.match(ext.out, /^task: working \(next poll in \d+ ms\)$/m, 'the extension followed it at the interval it suggests');
  t.match(ext.out, /^outcome: completed$/m);
  t.match(ext.out, /^result: Report ready after 2s\.$/m, "the tool's result, from the task");
});

t.test("the README's client snippets are the example files, line for line", async (t) => {
  const readme = await readFile(`${root}README.md`, 'utf8');
  for (const file of EMBEDDED) {
    const source = (await readFile(`${root}examples/${file}`, 'utf8')).trimEnd();
    // A snippet is introduced by its path in a comment: <!-- examples/NAME.ts -->, then a ```ts block.
    const m = new RegExp(`<!-- examples/${file.replace('.', '\\.')} -->\\n\`\`\`ts\\n([^]*?)\\n\`\`\``).exec(readme);
    t.ok(m, `README shows examples/${file}`);
    if (m) t.equal(m[1], source, `README's copy of examples/${file} is the file`);
  }
});

t.test("the README's wrapped-tool configuration is valid and says what it claims", async (t) => {
  const { parse } = await import('yaml');
  const { parseConfig } = await import('../../src/config/index.js');
  const readme = await readFile(`${root}README.md`, 'utf8');
  const block = /## Wrap a slow tool into a task\n[^]*?```yaml\n([^]*?)\n```/.exec(readme)?.[1];
  t.ok(block, 'the README shows a YAML rule block');
  const cfg = parseConfig(parse(block ?? '') as Record<string, unknown>);
  t.same(cfg.upstreams[0]?.tools['build_*'], { task: 'auto', afterMs: 2000 }, 'build_*: a task after 2 s');
  t.equal(cfg.upstreams[0]?.tools['export_all']?.task, 'required');
  t.equal(cfg.upstreams[0]?.tools['*']?.task, 'native');
});
