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

// The quick run starts a dozen processes and measures every leg once: over a minute on a busy two-core machine, past
// the default per-file bound.
t.setTimeout(300_000);

const PATHS = [
  'direct to the raw legacy upstream',
  'direct to the raw modern upstream',
  'plain `fastify` + `@fastify/http-proxy` → legacy',
  'gateway legacy → legacy (pass-through)',
  'gateway modern → legacy (translated), anonymous',
  'gateway modern → legacy (translated), credentialed',
  'gateway modern → modern (pass-through)',
  'gateway legacy → modern (translated, legacy face), anonymous',
  'gateway legacy → modern (translated, legacy face), credentialed',
];

const SHIM_LEGS = [
  'direct to the shim',
  'plain `fastify` + `@fastify/http-proxy` → shim',
  'gateway legacy → legacy (pass-through) → shim',
  'gateway modern → legacy (translated), anonymous → shim',
  'gateway modern → legacy (translated), credentialed → shim',
];

/** The text of the section headed `heading` (up to the next `###`). */
function section(md: string, heading: string): string {
  const start = md.indexOf(heading);
  if (start < 0) throw new Error(`no section ${heading}`);
  return md.slice(start, md.indexOf('\n### ', start + heading.length) >>> 0 || undefined);
}

/** The cells of every table row in the section headed `heading`, header and rule rows left out. */
function rows(md: string, heading: string): string[][] {
  const lines = section(md, heading)
    .split('\n')
    .filter((l) => l.startsWith('|'));
  return lines.slice(2).map((l) =>
    l
      .split('|')
      .slice(1, -1)
      .map((c) => c.trim()),
  );
}

/** The cells of the table row that starts with `label`, in the section headed `heading`. */
function row(md: string, heading: string, label: string): string[] {
  const found = rows(md, heading).find((cells) => cells[0]?.startsWith(label));
  if (!found) throw new Error(`no row ${label} in ${heading}`);
  return found;
}

const num = (cell: string | undefined): number =>
  Number(
    (cell ?? '')
      .replace(/\*\*/g, '')
      .replace(/,/g, '')
      .replace(/×.*$/, '')
      .replace(/ \(.*\)$/, ''),
  );

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
  // Anonymous and credentialed callers side by side, on both translated paths and both result sizes.
  const callers = rows(md, '### Anonymous and credentialed callers on the translated paths');
  for (const path of ['modern → legacy', 'legacy → modern (legacy face)']) {
    for (const size of ['small', '100 KB']) {
      for (const caller of ['anonymous', 'credentialed']) {
        const cells = callers.find((c) => c[0] === path && c[1] === size && c[2]?.startsWith(caller));
        t.ok(cells, `a ${caller} row for ${path}, ${size}`);
        // translated path | result | caller | 1 conn p50 | p50 added | 16 conns req/s | × plain proxy (16)
        t.ok(cells && num(cells[3]) > 0 && Number.isFinite(num(cells[4])) && num(cells[6]) > 0, `${path}, ${size}, ${caller}: p50, p50 added and ratio`, {
          cells,
        });
      }
    }
  }

  // The upstream 20 ms away: every leg measured, and the acceptance difference printed for both callers.
  const shim = '### Upstream 20 ms away';
  for (const label of SHIM_LEGS) {
    const cells = row(md, shim, label);
    // path | p50 | p50 added over direct | p50 minus the plain proxy's | req/s | answers
    t.ok(num(cells[1]) > 0 && num(cells[5]) > 0, `20 ms away, ${label}: p50 and answers`, { cells });
    if (label.startsWith('gateway')) t.ok(Number.isFinite(num(cells[3])), `20 ms away, ${label}: p50 minus the plain proxy's`, { cells });
  }
  for (const caller of ['anonymous', 'credentialed']) {
    t.match(
      section(md, shim),
      new RegExp(`^- gateway modern → legacy \\(translated\\), ${caller} → shim: [+-]\\d+\\.\\d{3} ms, (met|not met)$`, 'm'),
      `the acceptance line for the ${caller} caller`,
    );
  }

  // The upstream initialize count: a count, whatever it is (the pool decides it).
  const [count] = rows(md, '### Upstream `initialize` count');
  // calls | initialize | per call | notifications/initialized | GET | DELETE | tools/call | p50 | initialize since start
  t.ok(count && num(count[0]) > 0, 'the initialize count made calls', { count });
  t.ok(count && Number.isInteger(num(count[1])) && num(count[1]) >= 0, 'the upstream initialize count is a number', { count });
  t.ok(count && Number.isInteger(num(count[6])) && num(count[6]) > 0, 'the calls reached the upstream', { count });

  const redis = serverBinaryMissing();
  for (const store of redis ? ['memory'] : ['memory', 'redis']) {
    const cells = row(md, '### Tasks', store);
    t.ok(num(cells[1]) > 0, `tasks/get req/s, ${store}`, { cells });
    t.ok(num(cells[3]) > 0, `task creation rate, ${store}`, { cells });
  }
  if (redis) t.match(row(md, '### Tasks', 'redis')[1], /not measured/);
  if (existsSync(join(root, 'bench/polling.ts'))) t.ok(md.includes('### Polling (bench/polling.ts)'), 'the polling section (not run by --quick) is named');
  for (const tasks of ['1,000', '2,000']) {
    const cells = row(md, '### Heap per stored terminal task', tasks);
    t.ok(num(cells[2]) > 0 && num(cells[3]) > 0, `heap and bytes per task at ${tasks} tasks`, { cells });
    t.ok(Number.isFinite(num(cells[4])), `bytes beyond the result at ${tasks} tasks`, { cells });
  }
});
