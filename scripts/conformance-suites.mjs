// The official conformance suites the gateway runs, in one list: `npm test` runs them all after tap (scripts/test.mjs),
// and `npm run conformance[:group]` runs all of them or one group through this file:
//
//   node scripts/conformance-suites.mjs [group …]     groups: 2026, 2025, tasks, legacy-clients, federation,
//                                                      modern-tasks, task-first, jobs, clients (none: every suite, in
//                                                      this order)
//
// Each suite is one run of scripts/conformance.ts (or scripts/conformance-client.ts for the client scenarios), which
// prints `conformance …: N passed, M failed`; this runner adds them up, repeats what failed, and exits non-zero when
// anything failed or broke.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** Every suite: its group, and the arguments of scripts/conformance.ts (`script` names another script). */
export const SUITES = [
  { group: '2026', args: ['--requirements', '2026-07-28'] },
  { group: '2025', args: ['--requirements', '2025-11-25'] },
  // 2025-11-25 upstream tasks served as the extension,
  { group: 'tasks', args: ['--requirements', '2026-07-28', '--tasks', 'native'] },
  // and sync tools wrapped into gateway tasks.
  { group: 'tasks', args: ['--requirements', '2026-07-28', '--tasks', 'sync'] },
  // Legacy clients through the gateway's legacy face in front of a modern-only server,
  { group: 'legacy-clients', args: ['--requirements', '2025-11-25', '--upstream', 'modern'] },
  // and in front of a dual-era server: exactly what the server gives directly, check by check, in both eras;
  { group: 'legacy-clients', args: ['--requirements', '2025-11-25', '--upstream', 'dual', '--compare'] },
  { group: 'legacy-clients', args: ['--requirements', '2026-07-28', '--upstream', 'dual', '--compare'] },
  // the same in front of a dual-era server that routes by _meta and headers, as the conformance reference
  // everything-server does (an initialize with 2026-07-28 markers meets its 2026-07-28 side),
  { group: 'legacy-clients', args: ['--requirements', '2025-11-25', '--upstream', 'dual-meta', '--compare'] },
  { group: 'legacy-clients', args: ['--requirements', '2026-07-28', '--upstream', 'dual-meta', '--compare'] },
  // in front of the real @modelcontextprotocol/server-everything (2025-11-25), scored by equality with it directly,
  { group: 'legacy-clients', args: ['--requirements', '2025-11-25', '--upstream', 'everything', '--compare'] },
  // and in front of a modern-only server framed as the reference everything-server (JSON-lines listens and tool
  // answers, resources without subscribe), compared with that server serving 2025-11-25 itself.
  { group: 'legacy-clients', args: ['--requirements', '2025-11-25', '--upstream', 'jsonl', '--compare'] },
  // A federated endpoint: the same dual-era server mounted without a namespace beside a 2025-11-25 and a 2026-07-28
  // member with one, compared check by check with that server through a single-upstream endpoint, in both eras.
  { group: 'federation', args: ['--requirements', '2025-11-25', '--upstream', 'dual-meta', '--compare', '--federated'] },
  { group: 'federation', args: ['--requirements', '2026-07-28', '--upstream', 'dual-meta', '--compare', '--federated'] },
  // Modern clients in front of a modern-only server with the tasks extension: its tasks-* results unchanged,
  { group: 'modern-tasks', args: ['--requirements', '2026-07-28', '--upstream', 'modern', '--tasks', 'native', '--compare'] },
  // and in front of a modern-only server whose tools are all synchronous, wrapped into tasks by the rules.
  { group: 'modern-tasks', args: ['--requirements', '2026-07-28', '--upstream', 'modern', '--tasks', 'sync'] },
  // Servers of both eras that create a task and ask inside it at once: a native rule's window makes the question an
  // MRTR round before the task, as tasks-mrtr-composition expects (it fails against the modern fixture directly).
  { group: 'task-first', args: ['--requirements', '2026-07-28', '--tasks', 'native', '--task-first'] },
  { group: 'task-first', args: ['--requirements', '2026-07-28', '--upstream', 'modern', '--tasks', 'native', '--task-first'] },
  // Servers of both eras whose test_tool_with_task is a hand-rolled job (a handle, then status/result/cancel tools):
  // a `task: job` rule makes it a real task, after the MRTR round its question becomes (tasks-mrtr-composition).
  { group: 'jobs', args: ['--requirements', '2026-07-28', '--tasks', 'job'] },
  { group: 'jobs', args: ['--requirements', '2026-07-28', '--upstream', 'modern', '--tasks', 'job'] },
  // The client scenarios with the gateway as the client, each compared with an SDK client of the scenario's era alone.
  { group: 'clients', script: 'scripts/conformance-client.ts', args: [] },
];

/** The groups, in the order of their first suite. */
export const GROUPS = [...new Set(SUITES.map((s) => s.group))];

/** Runs `cmd args`, echoing its standard output as it comes; resolves with its exit code and that output. */
export function run(cmd, args) {
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

/**
 * Runs `suites` one after another. Resolves with the passed and failed checks added up, the lines saying what failed
 * (each failed suite, then its scored ✗ lines), and whether a run broke (a non-zero exit or no summary line).
 */
export async function runSuites(suites) {
  let passed = 0;
  let failed = 0;
  let broken = false;
  const failures = [];
  for (const suite of suites) {
    const script = suite.script ?? 'scripts/conformance.ts';
    const named = [script === 'scripts/conformance.ts' ? '' : script, ...suite.args].filter(Boolean).join(' ');
    const r = await run(process.execPath, ['node_modules/tsx/dist/cli.mjs', script, ...suite.args]);
    const m = /conformance .*: (\d+) passed, (\d+) failed/.exec(r.text);
    if (m) {
      passed += Number(m[1]);
      failed += Number(m[2]);
      if (Number(m[2]) > 0) {
        const scored = r.text.split('\n').filter((l) => l.startsWith('✗') && !l.includes('(not scored)'));
        failures.push(`conformance ${named}: ${m[2]} failed`, ...scored.map((l) => `  ${l}`));
      }
    } else {
      failed += 1;
      failures.push(`conformance ${named}: no summary line (the run broke)`);
    }
    if (r.code !== 0) broken = true;
  }
  return { passed, failed, failures, broken };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const wanted = process.argv.slice(2);
  const unknown = wanted.filter((g) => !GROUPS.includes(g));
  if (unknown.length > 0) {
    process.stderr.write(`conformance-suites: no group ${unknown.join(', ')} (groups: ${GROUPS.join(', ')})\n`);
    process.exit(2);
  }
  const r = await runSuites(wanted.length === 0 ? SUITES : SUITES.filter((s) => wanted.includes(s.group)));
  if (r.failures.length > 0) process.stdout.write(`\nfailures:\n${r.failures.map((l) => `  ${l}`).join('\n')}\n`);
  process.stdout.write(`\nconformance suites: ${r.passed} passed, ${r.failed} failed\n`);
  process.exit(r.broken || r.failed > 0 ? 1 : 0);
}
