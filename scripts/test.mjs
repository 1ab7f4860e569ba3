// The whole test run (`npm test`): the tap suites, then the conformance suites through the gateway.
// Ends with one line `N passed, M failed` over all of them; exits non-zero if anything failed.
import { spawn, spawnSync } from 'node:child_process';

function run(cmd, args) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => {
      text += d;
      process.stdout.write(d);
    });
    child.on('close', (code) => resolve({ code: code ?? 1, text }));
  });
}

// The Redis runs (the store contract on Redis, the multi-instance tests) start their own redis-server on a loopback
// port; without the binary they skip, and the run says so up front rather than only in the TAP output.
if (spawnSync(process.env.REDIS_SERVER_BIN ?? 'redis-server', ['--version']).error) {
  process.stdout.write('# note: no redis-server binary on PATH: the Redis store and multi-instance tests are skipped\n');
}

let passed = 0;
let failed = 0;
let broken = false;
// What failed, by name, repeated just above the last line: a CI log is often read from its tail only.
const failures = [];

const tap = await run(process.execPath, ['node_modules/tap/dist/esm/run.mjs', '--reporter=tap']);
const summary = /^# \{ (.*) \}$/m.exec(tap.text);
if (summary) {
  const field = (k) => Number(new RegExp(`\\b${k}: (\\d+)`).exec(summary[1])?.[1] ?? 0);
  passed += field('pass');
  failed += field('fail');
} else {
  failed += 1;
  failures.push('tap: no summary line (the run broke)');
}
if (tap.code !== 0) broken = true;
// Every `not ok` line, indented as deep as its subtest (tap prints the innermost first, the test file last).
for (const m of tap.text.matchAll(/^( *)not ok \d+ - (.*?)(?: # time=[^#]*)?$/gm)) failures.push(`tap: ${m[1]}${m[2]}`);

const suites = [
  ['--requirements', '2026-07-28'],
  ['--requirements', '2025-11-25'],
  ['--requirements', '2026-07-28', '--tasks', 'native'], // 2025-11-25 upstream tasks served as the extension
  ['--requirements', '2026-07-28', '--tasks', 'sync'], // sync tools wrapped into gateway tasks
  // Legacy clients through the gateway's legacy face in front of a modern-only server,
  ['--requirements', '2025-11-25', '--upstream', 'modern'],
  // and in front of a dual-era server: exactly what the server gives directly, check by check, in both eras.
  ['--requirements', '2025-11-25', '--upstream', 'dual', '--compare'],
  ['--requirements', '2026-07-28', '--upstream', 'dual', '--compare'],
  // the same in front of a dual-era server that routes by _meta and headers, as the conformance reference
  // everything-server does (an initialize with 2026-07-28 markers meets its 2026-07-28 side),
  ['--requirements', '2025-11-25', '--upstream', 'dual-meta', '--compare'],
  ['--requirements', '2026-07-28', '--upstream', 'dual-meta', '--compare'],
  // and in front of the real @modelcontextprotocol/server-everything (2025-11-25), scored by equality with it directly,
  ['--requirements', '2025-11-25', '--upstream', 'everything', '--compare'],
  // and in front of a modern-only server framed as the reference everything-server (JSON-lines listens and tool
  // answers, resources without subscribe), compared with that server serving 2025-11-25 itself.
  ['--requirements', '2025-11-25', '--upstream', 'jsonl', '--compare'],
  // Modern clients in front of a modern-only server with the tasks extension: its tasks-* results unchanged.
  ['--requirements', '2026-07-28', '--upstream', 'modern', '--tasks', 'native', '--compare'],
  // and in front of a modern-only server whose tools are all synchronous, wrapped into tasks by the rules.
  ['--requirements', '2026-07-28', '--upstream', 'modern', '--tasks', 'sync'],
  // Servers of both eras that create a task and ask inside it at once: a native rule's window makes the question an
  // MRTR round before the task, as tasks-mrtr-composition expects (it fails against the modern fixture directly).
  ['--requirements', '2026-07-28', '--tasks', 'native', '--task-first'],
  ['--requirements', '2026-07-28', '--upstream', 'modern', '--tasks', 'native', '--task-first'],
  // Servers of both eras whose test_tool_with_task is a hand-rolled job (a handle, then status/result/cancel tools):
  // a `task: job` rule makes it a real task, after the MRTR round its question becomes (tasks-mrtr-composition).
  ['--requirements', '2026-07-28', '--tasks', 'job'],
  ['--requirements', '2026-07-28', '--upstream', 'modern', '--tasks', 'job'],
];
// The client scenarios with the gateway as the client, each compared with an SDK client of the scenario's era alone.
const clientScenarios = ['scripts/conformance-client.ts'];
for (const args of [...suites, clientScenarios]) {
  const script = args === clientScenarios ? [] : ['scripts/conformance.ts'];
  const r = await run(process.execPath, ['node_modules/tsx/dist/cli.mjs', ...script, ...args]);
  const m = /conformance .*: (\d+) passed, (\d+) failed/.exec(r.text);
  if (m) {
    passed += Number(m[1]);
    failed += Number(m[2]);
    if (Number(m[2]) > 0) {
      const scored = r.text.split('\n').filter((l) => l.startsWith('✗') && !l.includes('(not scored)'));
      failures.push(`conformance ${args.join(' ')}: ${m[2]} failed`, ...scored.map((l) => `  ${l}`));
    }
  } else {
    failed += 1;
    failures.push(`conformance ${args.join(' ')}: no summary line (the run broke)`);
  }
  if (r.code !== 0) broken = true;
}

if (failures.length > 0) {
  const shown = failures.slice(0, 60);
  if (failures.length > shown.length) shown.push(`… and ${failures.length - shown.length} more lines`);
  process.stdout.write(`\nfailures:\n${shown.map((l) => `  ${l}`).join('\n')}\n`);
}
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(broken || failed > 0 ? 1 : 0);
