// The benchmark runs end to end: `bench/run.ts --quick` (one short round, from the sources) writes a results file with
// every path, every table and a positive number in every measured cell. No figure is judged: durations and rates
// belong to the benchmark, not to a test.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { serverBinaryMissing } from '../helpers/redis-server.js';

const root = new URL('../..', import.meta.url).pathname;

const PATHS = [
  'direct to the raw legacy upstream',
  'direct to the raw modern upstream',
  'plain `fastify` + `@fastify/http-proxy` → legacy',
  'gateway legacy → legacy (pass-through)',
  'gateway modern → legacy (translated), scope principal',
  'gateway modern → legacy (translated), scope request',
  'gateway modern → modern (pass-through)',
  'gateway legacy → modern (translated, legacy face)',
];

/** The cells of the table row that starts with `label`, in the section headed `heading`. */
function row(md: string, heading: string, label: string): string[] {
  const start = md.indexOf(heading);
  if (start < 0) throw new Error(`no section ${heading}`);
  const section = md.slice(start, md.indexOf('\n### ', start + heading.length) >>> 0 || undefined);
  const line = section.split('\n').find((l) => l.startsWith(`| ${label}`));
  if (!line) throw new Error(`no row ${label} in ${heading}`);
  return line.split('|').slice(1, -1).map((c) => c.trim());
}

const num = (cell: string | undefined): number => Number((cell ?? '').replace(/\*\*/g, '').replace(/,/g, '').replace(/×.*$/, '').replace(/ \(.*\)$/, ''));

t.test('npm run bench --quick writes every leg and table with positive figures', async (t) => {
  const out = join(t.testdir({}), 'RESULTS.md');
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'bench/run.ts'), '--quick', '--source', '--out', out], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // A test that fails or times out still ends the benchmark (which ends its own children).
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGTERM');
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  const [code] = (await once(child, 'exit')) as [number | null];
  t.equal(code, 0, 'the benchmark exits 0', { output: output.slice(-4000) });
  const md = await readFile(out, 'utf8');

  for (const heading of ['- command:', '- machine:', '- load average', '- pinning:']) t.ok(md.includes(heading), `the header has ${heading}`);
  for (const size of ['small result', '100 KB result']) {
    const heading = `### \`tools/call\`, ${size}`;
    for (const label of PATHS) {
      const cells = row(md, heading, label);
      // path | 1 conn p50 | 1 conn p99 | p50 added | 1 conn req/s | 16 conns req/s | × plain proxy
      t.ok(num(cells[1]) > 0 && num(cells[2]) > 0, `${size}, ${label}: 1-connection p50 and p99`, { cells });
      t.ok(num(cells[4]) > 0 && num(cells[5]) > 0, `${size}, ${label}: req/s at 1 and 16 connections`, { cells });
      if (label.startsWith('gateway')) {
        t.ok(num(cells[6]) > 0, `${size}, ${label}: throughput ratio to the plain proxy`, { cells });
        t.ok(Number.isFinite(num(cells[3])), `${size}, ${label}: p50 added over direct`, { cells });
      }
    }
  }
  const redis = serverBinaryMissing();
  for (const store of redis ? ['memory'] : ['memory', 'redis']) {
    const cells = row(md, '### Tasks', store);
    t.ok(num(cells[1]) > 0, `tasks/get req/s, ${store}`, { cells });
    t.ok(num(cells[3]) > 0, `task creation rate, ${store}`, { cells });
  }
  if (redis) t.match(row(md, '### Tasks', 'redis')[1], /not measured/);
  if (existsSync(join(root, 'bench/polling.ts'))) t.ok(md.includes('### Polling (bench/polling.ts)'), 'the polling section (not run by --quick) is named');
  for (const tasks of ['400', '2,000']) {
    const cells = row(md, '### Heap per stored terminal task', tasks);
    t.ok(num(cells[2]) > 0 && num(cells[3]) > 0, `heap and bytes per task at ${tasks} tasks`, { cells });
    t.ok(Number.isFinite(num(cells[4])), `bytes beyond the result at ${tasks} tasks`, { cells });
  }
});
