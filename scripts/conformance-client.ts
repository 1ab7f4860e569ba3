/**
 * Runs the official suite's CLIENT scenarios (pinned @modelcontextprotocol/conformance 0.2.0-alpha.12, with the
 * Node 20 shim) with the gateway as the client, each compared check by check with an SDK client of the scenario's
 * own era run directly against the same scenario server:
 *
 *   tsx scripts/conformance-client.ts [--scenario NAME]
 *
 * Each scenario runs twice (scripts/conformance-client-driver.ts): `direct`, an SDK client of the scenario's era
 * against the scenario server; `gateway`, the gateway in front of the scenario server and an SDK client of the OTHER
 * era driving it (a 2026-07-28 client for a 2025-11-25 scenario, and the reverse), so that what the suite scores is
 * what the gateway sends as a client of the scenario's era. A check (by id, its worst status when emitted several
 * times) fails when it is worse through the gateway than directly, and so does a client that exits non-zero or times
 * out; a check better through the gateway is listed, not counted. The OAuth scenarios are left out: they test an
 * authorization client, which the gateway is not (it forwards a client's own token; README "Authentication").
 * Prints one line per scenario and ends with `conformance client scenarios: N passed, M failed`; exits 1 on a failure.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({ options: { scenario: { type: 'string' } } });

/**
 * The scenarios, with the spec version they are run at (the suite's default for the scenario when absent: 2026-07-28
 * for those introduced then, 2025-11-25 otherwise). Those valid in both eras run in both, so that both directions of
 * the gateway are scored.
 */
const SCENARIOS: Array<{ name: string; version?: string }> = [
  { name: 'initialize' },
  { name: 'tools_call' },
  { name: 'tools_call', version: '2026-07-28' },
  { name: 'elicitation-sep1034-client-defaults' },
  { name: 'sse-retry' },
  { name: 'json-schema-2020-12-preservation' },
  { name: 'json-schema-2020-12-preservation', version: '2026-07-28' },
  { name: 'request-metadata' },
  { name: 'sep-2322-client-request-state' },
  { name: 'http-standard-headers' },
  { name: 'http-custom-headers' },
  { name: 'http-invalid-tool-headers' },
  { name: 'json-schema-ref-no-deref' },
];

type Status = 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED';
interface Check {
  id: string;
  status: Status;
  errorMessage?: string;
}
interface Outcome {
  checks: Map<string, Check>;
  code: number;
  output: string;
}

/** How bad a status is; a check emitted several times counts at its worst. */
const SEVERITY: Record<Status, number> = { SKIPPED: 0, INFO: 0, SUCCESS: 1, WARNING: 2, FAILURE: 3 };

/** One run of one scenario with the driver in `mode`; its checks by id (worst status kept). */
async function runScenario(name: string, version: string | undefined, mode: 'direct' | 'gateway'): Promise<Outcome> {
  const out = await mkdtemp(join(tmpdir(), 'conformance-client-'));
  try {
    const driver = `${JSON.stringify(process.execPath)} ${JSON.stringify(join(root, 'node_modules/tsx/dist/cli.mjs'))} ${JSON.stringify(join(root, 'scripts/conformance-client-driver.ts'))} ${mode}`;
    const args = [
      '--import',
      join(root, 'conformance/node20-register.mjs'),
      join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'),
      'client',
      '--scenario',
      name,
      '--command',
      driver,
      '--timeout',
      '60000',
      '-o',
      out,
      ...(version ? ['--spec-version', version] : []),
    ];
    const { output } = await new Promise<{ code: number; output: string }>((resolve, reject) => {
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.stderr.on('data', (d) => (text += d));
      child.on('error', reject);
      child.on('close', (c) => resolve({ code: c ?? 1, output: text }));
    });
    const checks = new Map<string, Check>();
    for (const dir of await readdir(out)) {
      const raw = await readFile(join(out, dir, 'checks.json'), 'utf8').catch(() => '[]');
      for (const c of JSON.parse(raw) as Check[]) {
        const seen = checks.get(c.id);
        if (!seen || SEVERITY[c.status] > SEVERITY[seen.status]) checks.set(c.id, c);
      }
    }
    // The suite's exit code says whether the client failed (non-zero exit, timeout) besides the checks.
    const clientFailed = /Client exited with code|Client timed out/.test(output);
    return { checks, code: clientFailed ? 1 : 0, output };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  const chosen = values.scenario ? SCENARIOS.filter((s) => s.name === values.scenario) : SCENARIOS;
  if (chosen.length === 0) throw new Error(`unknown scenario ${values.scenario}; one of ${SCENARIOS.map((s) => s.name).join(', ')}`);
  let passed = 0;
  let failed = 0;
  for (const { name, version } of chosen) {
    const label = version ? `${name}@${version}` : name;
    const direct = await runScenario(name, version, 'direct');
    const gateway = await runScenario(name, version, 'gateway');
    const problems: string[] = [];
    const better: string[] = [];
    let ok = 0;
    if (gateway.code !== 0)
      problems.push(
        `the client through the gateway failed:\n${gateway.output
          .split('\n')
          .filter((l) => /rror|exited|timed out/.test(l))
          .slice(0, 8)
          .join('\n')}`,
      );
    if (direct.code !== 0) better.push('the SDK client alone failed (exit or timeout)');
    for (const id of [...new Set([...direct.checks.keys(), ...gateway.checks.keys()])].sort()) {
      const d = direct.checks.get(id);
      const g = gateway.checks.get(id);
      const ds = d?.status ?? 'ABSENT';
      const gs = g?.status ?? 'ABSENT';
      if (!g) problems.push(`${id}: ${ds} directly, not emitted through the gateway`);
      else if (d && SEVERITY[g.status] > SEVERITY[d.status])
        problems.push(`${id}: ${ds} directly → ${gs} through the gateway${g.errorMessage ? ` (${g.errorMessage})` : ''}`);
      else {
        ok++;
        if (!d || SEVERITY[g.status] < SEVERITY[d.status]) better.push(`${id}: ${ds} directly → ${gs} through the gateway`);
      }
    }
    const bad = problems.length;
    passed += ok;
    failed += bad;
    process.stdout.write(`${bad === 0 ? '✓' : '✗'} ${label}: ${ok} checks as directly${bad ? `, ${bad} worse` : ''}\n`);
    for (const p of problems) process.stdout.write(`    ✗ ${p}\n`);
    for (const b of better) process.stdout.write(`    + ${b}\n`);
  }
  process.stdout.write(`conformance client scenarios: ${passed} passed, ${failed} failed\n`);
  return failed > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(e);
    process.exit(1);
  },
);
