/**
 * Runs the official conformance suite (pinned @modelcontextprotocol/conformance 0.2.0-alpha.12, with the
 * Node 20 shim) against the gateway in front of the legacy fixture, both started here on loopback port 0.
 *
 *   tsx scripts/conformance.ts [--requirements 2026-07-28|2025-11-25] [--scenario NAME] [--direct]
 *                              [--tasks native|sync]
 *
 * --direct runs against the fixture itself (the baseline). --tasks gives the fixture the task tools of the
 * `tasks-*` scenarios: `native` as 2025-11-25 tasks (issue #3), `sync` as plain slow tools that the gateway
 * wraps by the rules in TASK_RULES below (issue #4); the tasks-* scenarios then count as scored.
 * Prints one line per scenario and ends with `conformance <set>: N passed, M failed` counting the checks of
 * scored scenarios; exits 1 if any scored check failed. Other unscored scenarios are reported, not counted.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { buildGateway } from '../src/app.js';
import { parseConfig } from '../src/config/index.js';
import { startLegacyFixture } from '../test/fixtures/legacy-server.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: {
    requirements: { type: 'string', default: '2026-07-28' },
    scenario: { type: 'string' },
    direct: { type: 'boolean', default: false },
    tasks: { type: 'string' },
  },
});

/** The per-tool rules that wrap the sync-only fixture's tools into gateway-owned tasks. */
export const TASK_RULES = {
  slow_compute: { task: 'auto', afterMs: 250 },
  protocol_error_job: { task: 'auto', afterMs: 250 },
  gated_job: { task: 'auto', afterMs: 250 },
  // These ask for input at once; the scenarios expect the question inside a task, not an MRTR round.
  confirm_delete: { task: 'always' },
  multi_input: { task: 'always' },
  failing_job: { task: 'required' },
  // MRTR first (the question arrives within afterMs), then the task (tasks-mrtr-composition).
  test_tool_with_task: { task: 'required', afterMs: 2000 },
  '*': { task: 'native' },
};

interface Check { id: string; status: string; errorMessage?: string }

async function main(): Promise<number> {
  const tasks = values.tasks === 'native' || values.tasks === 'sync' ? values.tasks : undefined;
  if (values.tasks !== undefined && !tasks) throw new Error('--tasks takes native or sync');
  const fixture = await startLegacyFixture(tasks ? { tasks } : {});
  let url = fixture.url;
  let closeGateway = async () => {};
  if (!values.direct) {
    const upstream = { name: 'fixture', path: '/mcp', url: fixture.url, ...(tasks === 'sync' ? { tools: TASK_RULES } : {}) };
    const gateway = await buildGateway(parseConfig({ server: { port: 0 }, upstreams: [upstream] }));
    await gateway.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = gateway.app.server.address();
    url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp`;
    closeGateway = () => gateway.close();
  }
  const out = await mkdtemp(join(tmpdir(), 'conformance-'));
  const args = [
    '--import', join(root, 'conformance/node20-register.mjs'),
    join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'),
    'server', '--url', url, '-o', out,
    ...(values.scenario ? ['--scenario', values.scenario, '--spec-version', values.requirements as string] : ['--requirements', values.requirements as string]),
  ];
  const stdout = await new Promise<string>((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => (text += d));
    child.on('error', reject);
    child.on('close', () => resolve(text));
  });
  await closeGateway();
  await fixture.close();

  // Scenarios listed under "Not scored for …" are reported, not counted.
  const unscored = new Set<string>();
  const tail = stdout.split(/Not scored for [^\n]*\n/)[1] ?? '';
  for (const m of tail.matchAll(/^\s+[✓✗]\s+(\S+)\s+\(/gm)) if (m[1]) unscored.add(m[1]);

  let passed = 0;
  let failed = 0;
  const lines: string[] = [];
  for (const dir of (await readdir(out)).sort()) {
    const name = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
    const checks = JSON.parse(await readFile(join(out, dir, 'checks.json'), 'utf8')) as Check[];
    const ok = checks.filter((c) => c.status === 'SUCCESS').length;
    const bad = checks.filter((c) => c.status === 'FAILURE');
    const scored = !unscored.has(name) || (tasks !== undefined && name.startsWith('tasks-'));
    if (scored) {
      passed += ok;
      failed += bad.length;
    }
    lines.push(`${bad.length === 0 ? '✓' : '✗'} ${name}: ${ok} passed, ${bad.length} failed${scored ? '' : ' (not scored)'}`);
    // Details only where they count: an unscored scenario's failures (e.g. tasks-* without task tools) are noise.
    if (scored) for (const b of bad) lines.push(`    ${b.id}: ${(b.errorMessage ?? '').slice(0, 200)}`);
  }
  await rm(out, { recursive: true, force: true });
  process.stdout.write(`${lines.join('\n')}\n`);
  const label = `${values.requirements}${values.direct ? ' (direct)' : ''}${tasks ? ` tasks=${tasks}` : ''}${values.scenario ? ` ${values.scenario}` : ''}`;
  process.stdout.write(`conformance ${label}: ${passed} passed, ${failed} failed\n`);
  return failed === 0 && passed > 0 ? 0 : 1;
}

main().then((code) => process.exit(code), (e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
