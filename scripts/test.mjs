// The whole test run (`npm test`): the tap suites, then the conformance suites through the gateway.
// Ends with one line `N passed, M failed` over all of them; exits non-zero if anything failed.
import { spawnSync } from 'node:child_process';
import { run, runSuites, SUITES } from './conformance-suites.mjs';

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

// The conformance suites through the gateway, every one (their list and what each shows: scripts/conformance-suites.mjs).
const conformance = await runSuites(SUITES);
passed += conformance.passed;
failed += conformance.failed;
failures.push(...conformance.failures);
if (conformance.broken) broken = true;

if (failures.length > 0) {
  const shown = failures.slice(0, 60);
  if (failures.length > shown.length) shown.push(`… and ${failures.length - shown.length} more lines`);
  process.stdout.write(`\nfailures:\n${shown.map((l) => `  ${l}`).join('\n')}\n`);
}
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(broken || failed > 0 ? 1 : 0);
