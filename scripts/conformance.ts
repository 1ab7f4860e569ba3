/**
 * Runs the official conformance suite (pinned @modelcontextprotocol/conformance 0.2.0-alpha.12, with the
 * Node 20 shim) against the gateway in front of a fixture server, both started here on loopback port 0.
 *
 *   tsx scripts/conformance.ts [--requirements 2026-07-28|2025-11-25] [--scenario NAME] [--direct | --compare]
 *                              [--upstream legacy|modern|dual|dual-meta|everything|jsonl] [--tasks native|sync|job [--task-first]]
 *                              [--federated]
 *
 * --upstream picks the fixture: `legacy` (default; test/fixtures/legacy-server.ts, 2025-11-25), `modern`
 * (test/fixtures/modern-server.ts, 2026-07-28 only), `dual` (the same server also serving 2025-11-25 itself, its
 * requests routed by the SDK's `isLegacyRequest`), `dual-meta` (the same, routed by `_meta` and headers as the
 * conformance project's reference everything-server does in its dual-era mode: an `initialize` with 2026-07-28 markers
 * meets its 2026-07-28 side), `everything` (the real `@modelcontextprotocol/server-everything`, a 2025-11-25 server
 * whose tools are not the suite's: compare with --compare, where many checks fail both ways) or
 * `jsonl` (the modern fixture with `jsonLines`: the framings of the conformance project's reference everything-server
 * in its 2026-07-28-only mode, JSON-lines listens and tool answers, `resources: {}`; 2026-07-28 only through the
 * gateway, and in its dual-era mode for the baseline, so that a 2025-11-25 suite through the gateway's legacy face is
 * compared with the same server serving 2025-11-25 itself).
 * --direct runs against the fixture itself (the baseline). --compare runs the suite twice in one invocation,
 * against the fixture directly and through the gateway, and fails listing every check (by scenario and check id)
 * whose status differs; the counts are those of the through-gateway run, with every differing check of a scored
 * scenario counted as a failure (differences in unscored scenarios are listed, not counted).
 * --tasks gives the fixture the task tools of the `tasks-*` scenarios: `native` as the fixture's own tasks
 * (2025-11-25 core tasks on `legacy`, the io.modelcontextprotocol/tasks extension on `modern` and `dual`), `sync` as
 * plain tools (MRTR rounds for input on the modern fixture) that the gateway wraps by the rules in TASK_RULES
 * below, or `job`: as `sync`, except that test_tool_with_task is a hand-rolled async job (it asks its question as in
 * `sync`, then answers a `jobId` that its own status, result and cancel tools take), which the gateway makes a task
 * of by the `task: job` rule in JOB_TASK_RULES (docs/jobs.md; directly, the fixture answers a handle where
 * tasks-mrtr-composition wants a task). The tasks-* scenarios then count as scored. --task-first (with --tasks
 * native) starts the fixture with `taskFirst`: its test_tool_with_task creates the task at once and asks inside it,
 * the other kind of "question before the task" (the scenario tasks-mrtr-composition wants an MRTR round first, so it
 * fails directly by design; through the gateway, TASK_FIRST_RULES give that tool a native window that turns the
 * question into that round).
 * --federated (with --compare) puts the fixture on a federated `/mcp` without a namespace, beside two more members with
 * one (FEDERATED_MEMBERS: the legacy fixture as `a`, the 2026-07-28 fixture as `b`), and compares that run with the same
 * fixture through a single-upstream gateway endpoint, check by check: a federated endpoint must answer the suite as a
 * plain endpoint in front of the same server does, its extra prefixed members notwithstanding.
 * Prints one line per scenario and ends with `conformance <set>: N passed, M failed` counting the checks of
 * scored scenarios; exits 1 if any scored check failed. Other unscored scenarios are reported, not counted.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startLegacyFixture } from '../test/fixtures/legacy-server.js';
import { startModernFixture } from '../test/fixtures/modern-server.js';
import { startServerEverything } from '../test/fixtures/server-everything.js';
import { startGateway as startListening } from '../test/helpers/gateway.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const { values } = parseArgs({
  options: {
    requirements: { type: 'string', default: '2026-07-28' },
    scenario: { type: 'string' },
    direct: { type: 'boolean', default: false },
    compare: { type: 'boolean', default: false },
    upstream: { type: 'string', default: 'legacy' },
    tasks: { type: 'string' },
    'task-first': { type: 'boolean', default: false },
    federated: { type: 'boolean', default: false },
    // By hand: a server already running (the conformance repository's everything-server) instead of the fixture.
    'upstream-url': { type: 'string' },
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

/**
 * With --tasks job: TASK_RULES, but test_tool_with_task is the start tool of a hand-rolled job (docs/jobs.md). Its
 * question is an MRTR round of the call like any upstream's, then its handle makes the task (tasks-mrtr-composition).
 */
export const JOB_TASK_RULES = {
  ...TASK_RULES,
  test_tool_with_task: {
    task: 'job',
    job: {
      id: 'structuredContent.jobId',
      status: {
        tool: 'test_tool_with_task_status',
        arguments: { jobId: '{{id}}' },
        state: 'structuredContent.state',
        states: { running: 'working', done: 'completed', cancelled: 'cancelled' },
      },
      result: { tool: 'test_tool_with_task_result', arguments: { jobId: '{{id}}' } },
      cancel: { tool: 'test_tool_with_task_cancel', arguments: { jobId: '{{id}}' } },
      hide: ['test_tool_with_task_status', 'test_tool_with_task_result', 'test_tool_with_task_cancel'],
    },
  },
};

/**
 * With --task-first: the first-round window of a native rule covers the upstream task, so a question the task asks
 * at once becomes an MRTR round of the creating call, as the tasks-mrtr-composition scenario expects of a server.
 */
export const TASK_FIRST_RULES = {
  test_tool_with_task: { task: 'native', afterMs: 2000 },
  '*': { task: 'native' },
};

/**
 * With --compare, the checks that differ between a server serving 2025-11-25 itself and the gateway's legacy face in
 * front of its 2026-07-28 self for a reason the README states (its Conformance paragraphs): listed with that reason,
 * not counted. Any other difference still fails the run.
 */
const EXPLAINED: Partial<Record<Upstream, Record<string, string>>> = {
  everything: {
    'dns-rebinding-protection/localhost-host-rebinding-rejected':
      'the gateway checks Host and Origin itself (README "Security by default"), which server-everything does not: a foreign Host gets 403 through the gateway',
  },
  jsonl: {
    'server-sse-multiple-streams/server-sse-streams-functional':
      'the legacy face answers a request that streams nothing in plain JSON, which the suite records as information',
    'resources-subscribe/resources-subscribe': 'the 2026-07-28 server offers no resource subscriptions (resources: {}); only its 2025-11-25 self does',
    'resources-unsubscribe/resources-unsubscribe': 'the 2026-07-28 server offers no resource subscriptions (resources: {}); only its 2025-11-25 self does',
  },
};

/**
 * With --federated, the checks that differ between a single-upstream endpoint and the federated one for a stated reason:
 * listed with it, not counted. A federated path never passes through, so a 2025-11-25 client meets the legacy face where
 * a single-upstream endpoint passes it through to a dual-era server's own 2025-11-25 side.
 */
const FEDERATED_EXPLAINED: Partial<Record<Upstream, Record<string, string>>> = {
  'dual-meta': {
    'server-sse-multiple-streams/server-sse-streams-functional':
      'the legacy face answers a request that streams nothing in plain JSON (the suite records it as information, as for --upstream jsonl), where the single-upstream endpoint passes the client through to the server, which answers in SSE',
  },
};

interface Check {
  id: string;
  status: string;
  errorMessage?: string;
}
interface Scenario {
  name: string;
  checks: Check[];
}
interface Run {
  scenarios: Scenario[];
  unscored: Set<string>;
}

const UPSTREAMS = ['legacy', 'modern', 'dual', 'dual-meta', 'everything', 'jsonl'] as const;
type Upstream = (typeof UPSTREAMS)[number];
type Tasks = 'native' | 'sync' | 'job';

/** Runs the suite once against `url`; the scenarios' checks as the suite wrote them. */
async function runSuite(url: string): Promise<Run> {
  const out = await mkdtemp(join(tmpdir(), 'conformance-'));
  try {
    const args = [
      '--import',
      join(root, 'conformance/node20-register.mjs'),
      join(root, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'),
      'server',
      '--url',
      url,
      '-o',
      out,
      // --force: the tasks-* scenarios are extension scenarios "not on the spec timeline"; without it the suite skips
      // them when named one at a time (and writes no checks).
      ...(values.scenario
        ? ['--scenario', values.scenario, '--spec-version', values.requirements as string, '--force']
        : ['--requirements', values.requirements as string]),
    ];
    const stdout = await new Promise<string>((resolve, reject) => {
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.on('error', reject);
      child.on('close', () => resolve(text));
    });
    // Scenarios listed under "Not scored for …" are reported, not counted.
    const unscored = new Set<string>();
    const tail = stdout.split(/Not scored for [^\n]*\n/)[1] ?? '';
    for (const m of tail.matchAll(/^\s+[✓✗]\s+(\S+)\s+\(/gm)) if (m[1]) unscored.add(m[1]);
    const scenarios: Scenario[] = [];
    for (const dir of (await readdir(out)).sort()) {
      const name = dir.replace(/^server-/, '').replace(/-\d{4}-\d{2}-\d{2}T.*$/, '');
      // A scenario that crashed (e.g. a 2026 scenario against a 2025-only server) or was skipped leaves no checks.json.
      const raw = await readFile(join(out, dir, 'checks.json'), 'utf8').catch(() => undefined);
      const checks: Check[] =
        raw !== undefined
          ? (JSON.parse(raw) as Check[])
          : [{ id: `${name}-crashed`, status: 'FAILURE', errorMessage: 'the scenario wrote no checks: it crashed (stderr above) or the suite skipped it' }];
      scenarios.push({ name, checks });
    }
    return { scenarios, unscored };
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

/** Starts the chosen fixture (`baseline`: for the direct run); `close` stops it. */
async function startFixture(upstream: Upstream, tasks: Tasks | undefined, baseline: boolean): Promise<{ url: string; close(): Promise<void> }> {
  const taskFirst = values['task-first'] ? { taskFirst: true } : {};
  const given = values['upstream-url'];
  if (given !== undefined) return { url: given, close: async () => {} };
  if (upstream === 'legacy') return startLegacyFixture(tasks ? { tasks, ...taskFirst } : {});
  if (upstream === 'everything') return startServerEverything();
  // The JSON-lines server behind the gateway speaks 2026-07-28 only; its baseline also serves 2025-11-25 itself.
  const mode = upstream === 'jsonl' ? (baseline ? 'dual' : 'modern') : upstream === 'dual-meta' ? 'dual' : upstream;
  return startModernFixture({
    mode,
    ...(upstream === 'dual-meta' && { dualRouting: 'meta' as const }),
    ...(upstream === 'jsonl' && { jsonLines: true }),
    ...(tasks ? { tasks, ...taskFirst } : {}),
  });
}

/** Starts the gateway in front of `fixtureUrl`; its client-facing URL and `close`. */
async function startGateway(fixtureUrl: string, tasks: Tasks | undefined): Promise<{ url: string; close(): Promise<void> }> {
  const tools = tasks === 'sync' ? TASK_RULES : tasks === 'job' ? JOB_TASK_RULES : values['task-first'] ? TASK_FIRST_RULES : undefined;
  const upstream = { name: 'fixture', path: '/mcp', url: fixtureUrl, ...(tools ? { tools } : {}) };
  return startListening({ upstreams: [upstream] });
}

/**
 * With --federated: the members put beside the suite's fixture on the federated path, each with a namespace (so that
 * their names, many the same as the fixture's, are shown as `a_…` and `b_…` and hide none of the fixture's).
 */
const FEDERATED_MEMBERS = [
  { name: 'a', namespace: 'a', start: () => startLegacyFixture() },
  { name: 'b', namespace: 'b', start: () => startModernFixture({ mode: 'modern' }) },
] as const;

/**
 * The gateway with the fixture on a federated `/mcp`, first and without a namespace, and FEDERATED_MEMBERS after it;
 * `close` stops the gateway and the members it started. The endpoint keeps the gateway's own serverInfo (no
 * `endpoints[]` entry): no check of either suite compares it with the server's (both runs measured equal without it).
 */
async function startFederatedGateway(fixtureUrl: string, tasks: Tasks | undefined): Promise<{ url: string; close(): Promise<void> }> {
  const tools = tasks === 'sync' ? TASK_RULES : tasks === 'job' ? JOB_TASK_RULES : values['task-first'] ? TASK_FIRST_RULES : undefined;
  const members: Array<{ close(): Promise<void> }> = [];
  try {
    const upstreams: Record<string, unknown>[] = [{ name: 'fixture', path: '/mcp', url: fixtureUrl, ...(tools ? { tools } : {}) }];
    for (const m of FEDERATED_MEMBERS) {
      const started = await m.start();
      members.push(started);
      upstreams.push({ name: m.name, path: '/mcp', url: started.url, expose: { namespace: m.namespace } });
    }
    const gateway = await startListening({ upstreams });
    return {
      url: gateway.url,
      close: async () => {
        await gateway.close();
        await Promise.all(members.map((m) => m.close()));
      },
    };
  } catch (e) {
    await Promise.all(members.map((m) => m.close()));
    throw e;
  }
}

/** Every check whose status differs between the two runs, as `scenario/check-id: direct → gateway`. */
function differences(direct: Run, gateway: Run): Map<string, string> {
  const index = (run: Run) => {
    const m = new Map<string, string>();
    for (const s of run.scenarios) for (const c of s.checks) m.set(`${s.name}/${c.id}`, c.status);
    return m;
  };
  const a = index(direct);
  const b = index(gateway);
  const diffs = new Map<string, string>();
  for (const key of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    const x = a.get(key) ?? 'ABSENT';
    const y = b.get(key) ?? 'ABSENT';
    if (x !== y) diffs.set(key, values.federated ? `${x} single → ${y} federated` : `${x} direct → ${y} through the gateway`);
  }
  return diffs;
}

async function main(): Promise<number> {
  const tasks = values.tasks === 'native' || values.tasks === 'sync' || values.tasks === 'job' ? values.tasks : undefined;
  if (values.tasks !== undefined && !tasks) throw new Error('--tasks takes native, sync or job');
  const upstream = UPSTREAMS.find((u) => u === values.upstream);
  if (!upstream) throw new Error(`--upstream takes ${UPSTREAMS.join(', ')}`);
  // server-everything's tools are not the suite's, so many checks fail against it directly: its run is scored by
  // equality with the direct run (a check passes when its status is the same both ways), which needs --compare.
  const byEquality = upstream === 'everything';
  if (byEquality && (tasks || !values.compare)) throw new Error('--upstream everything takes --compare and no --tasks');
  if (values.direct && values.compare) throw new Error('--direct and --compare exclude each other');
  if (values['task-first'] && tasks !== 'native') throw new Error('--task-first needs --tasks native');
  if (values.federated && !values.compare) throw new Error('--federated takes --compare (it is scored against a single-upstream endpoint)');

  // Each run gets a fresh fixture, so the direct run cannot leave state behind for the gateway run. With --federated,
  // the baseline is the fixture through a single-upstream endpoint, the counted run through the federated one.
  const runAgainst = async (throughGateway: boolean): Promise<Run> => {
    const fixture = await startFixture(upstream, tasks, !throughGateway && !values.federated);
    try {
      if (!throughGateway && !values.federated) return await runSuite(fixture.url);
      const gateway = throughGateway && values.federated ? await startFederatedGateway(fixture.url, tasks) : await startGateway(fixture.url, tasks);
      try {
        return await runSuite(gateway.url);
      } finally {
        await gateway.close();
      }
    } finally {
      await fixture.close();
    }
  };
  const direct = values.direct || values.compare ? await runAgainst(false) : undefined;
  const counted = values.direct && direct ? direct : await runAgainst(true);
  const diffs = values.compare && direct ? differences(direct, counted) : new Map<string, string>();
  // Explained differences leave the count (the check neither passes nor fails); they are listed below with why.
  const explained = new Map<string, string>();
  for (const [key, what] of diffs) {
    const why = (values.federated ? FEDERATED_EXPLAINED : EXPLAINED)[upstream]?.[key];
    if (why === undefined) continue;
    explained.set(key, `${what}: ${why}`);
    diffs.delete(key);
  }

  const isScored = (name: string) => !counted.unscored.has(name) || (tasks !== undefined && name.startsWith('tasks-'));
  let passed = 0;
  let failed = 0;
  const lines: string[] = [];
  for (const { name, checks: all } of counted.scenarios) {
    const checks = all.filter((c) => !explained.has(`${name}/${c.id}`));
    // Differences count where the checks count: in scored scenarios (unscored ones are listed below, not counted).
    const differs = (c: Check) => isScored(name) && diffs.has(`${name}/${c.id}`);
    // Scored by equality, a check passes when it has the status it has directly, whatever that is.
    const ok = checks.filter((c) => (byEquality || c.status === 'SUCCESS') && !differs(c)).length;
    const bad = checks.filter((c) => (!byEquality && c.status === 'FAILURE') || differs(c));
    const scored = isScored(name);
    if (scored) {
      passed += ok;
      failed += bad.length;
    }
    lines.push(`${bad.length === 0 ? '✓' : '✗'} ${name}: ${ok} passed, ${bad.length} failed${scored ? '' : ' (not scored)'}`);
    // Details only where they count: an unscored scenario's failures (e.g. tasks-* without task tools) are noise.
    if (scored)
      for (const b of bad) lines.push(`    ${b.id}: ${differs(b) ? `[differs: ${diffs.get(`${name}/${b.id}`)}] ` : ''}${(b.errorMessage ?? '').slice(0, 200)}`);
  }
  let scoredDiffs = 0;
  if (values.compare) {
    // A check present in only one run (e.g. a scenario that stopped early) differs too; count it once here.
    const listed = new Set(counted.scenarios.flatMap((s) => s.checks.map((c) => `${s.name}/${c.id}`)));
    const scenarioOf = (key: string) => key.slice(0, key.indexOf('/'));
    failed += [...diffs.keys()].filter((k) => !listed.has(k) && isScored(scenarioOf(k))).length;
    const scoredKeys = [...diffs.keys()].filter((k) => isScored(scenarioOf(k)));
    scoredDiffs = scoredKeys.length;
    const every = explained.size === 0 ? 'every scored check' : 'every scored check not explained below';
    lines.push(
      scoredDiffs === 0
        ? `compare: ${every} has the same status ${values.federated ? 'through a single-upstream endpoint and through the federated one' : 'directly and through the gateway'}`
        : `compare: ${scoredDiffs} scored check(s) differ:`,
    );
    for (const key of scoredKeys) lines.push(`    ${key}: ${diffs.get(key)}`);
    const other = [...diffs.keys()].filter((k) => !isScored(scenarioOf(k)));
    if (other.length > 0) lines.push(`compare: ${other.length} check(s) of unscored scenarios differ (not counted):`);
    for (const key of other) lines.push(`    ${key}: ${diffs.get(key)}`);
    if (explained.size > 0) lines.push(`compare: ${explained.size} check(s) differ for a reason the README states (not counted):`);
    for (const [key, why] of explained) lines.push(`    ${key}: ${why}`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  const mode = values.direct ? ' (direct)' : values.federated ? ' (compare federated)' : values.compare ? ' (compare)' : '';
  const label = `${values.requirements}${upstream === 'legacy' ? '' : ` upstream=${upstream}`}${mode}${tasks ? ` tasks=${tasks}` : ''}${values['task-first'] ? ' task-first' : ''}${values.scenario ? ` ${values.scenario}` : ''}`;
  process.stdout.write(`conformance ${label}: ${passed} passed, ${failed} failed\n`);
  return failed === 0 && scoredDiffs === 0 && passed > 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`${(e as Error).stack ?? e}\n`);
    process.exit(1);
  },
);
