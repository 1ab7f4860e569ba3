/**
 * Task state in Postgres, across gateway instances: REAL gateway processes (src/cli.ts) share one real postgres (a
 * server of this test's own, test/helpers/postgres-server.ts) in front of real fixture upstreams running in this test
 * process. Each part has a Postgres of its own:
 *
 *  A. two instances, 200 wrapped tasks under load (created on both, most on A, polled through both), A SIGKILLed
 *     while many run: every task ends through B, none lost, stuck or crossed; what died with A ends failed with
 *     GW_TASK_INSTANCE_LOST, or runs again on B and completes when its rule says `retryOnLoss`;
 *  B. every instance SIGKILLed at once with 50 job tasks and 50 proxied upstream tasks running; two NEW instances on
 *     the same database finish all 100 with their own results, and no upstream start tool was called twice;
 *  C. postgres crashed (SIGKILL) and restarted under polling clients: every request in the gap is the catalogued
 *     GW_STORE_UNAVAILABLE 503 within 1 s, `/readyz` is 503 then 200, and the gateway recovers without a restart with
 *     every task made before the gap (outcomes reached during the gap included).
 *
 * Skips, saying why, when this machine cannot run a postgres of its own (`postgresBinaryMissing()`).
 */
import t, { type Test } from 'tap';
import { JOB_RULES, startJobServer } from '../fixtures/job-server.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import type { GatewayProcess } from '../helpers/gateway-process.js';
import { post } from '../helpers/modern.js';
import { postgresBinaryMissing, startPostgres } from '../helpers/postgres-server.js';
import { createTask, DECLARING, getTask, TERMINAL } from '../helpers/task-helpers.js';
import {
  answered,
  firstText,
  INSTANCE_LOST,
  isStoreUnavailable,
  lastLines,
  LEASE_MS,
  mapLimit,
  pgStore,
  readyzBecomes,
  safe,
  startInstances,
  startPollers,
  tally,
  waitUntil,
  type Followed,
  type Sent,
} from './postgres-instances-helpers.js';

/** Waits for what must happen (fixture calls held, tasks ending, /readyz flipping) give up after this long. */
const BOUND_MS = 90_000;
/** The bound the issue names on each request while the database is away. */
const GAP_ANSWER_MS = 1000;
/** Any other request: it must end (nothing hangs), on a loaded machine. */
const ANY_ANSWER_MS = 10_000;

/** Tasks settings shared by the parts: many live tasks for one (anonymous) principal, polls not throttled. */
const TASKS = { leaseMs: LEASE_MS, pollIntervalMs: 200, maxActivePerPrincipal: 1000, pollBurst: 100 };

// Every instance is a process of its own (seconds to start on a loaded machine), and part A runs 200 tasks.
t.setTimeout(900_000);

const missing = postgresBinaryMissing();
if (missing) {
  t.plan(0, `the Postgres multi-instance tests need a postgres of their own: ${missing}`);
} else {
  t.test('A. 200 wrapped tasks on two instances, A SIGKILLed mid-load: all end through B, 0 lost, 0 stuck, 0 crossed', (t) => partA(t));
  t.test('B. every instance SIGKILLed with 100 job and proxied tasks running: two new instances finish all 100', (t) => partB(t));
  t.test('C. Postgres crashed and restarted under polling: fast 503s in the gap, recovery without a restart', (t) => partC(t));
}

// ── A ────────────────────────────────────────────────────────────────────────────────────────────────────────

/** One task of part A: who creates it, on which rule, with which arguments, and the result that would be its own. */
interface Planned extends Followed {
  i: number;
  creator: 'A' | 'B';
  tool: 'slow_compute' | 'gated_job';
  args: Record<string, unknown>;
  expected: string;
  /** gated_job: its gate is opened before A is killed (the call may end on A first). */
  early: boolean;
}

/** 200 tasks: half slow_compute of 0.1 to 4 s, half gated_job held until released; 65 % made on A; a quarter `retryOnLoss`. */
function planLoad(): Planned[] {
  return Array.from({ length: 200 }, (_, i): Planned => {
    const creator = (i * 7) % 20 < 13 ? 'A' : 'B';
    const path = (i >> 1) % 4 === 1 ? 'retry' : 'wrapped';
    if (i % 2 === 0) {
      const args = { seconds: ((i >> 1) % 40) / 10 + 0.1, label: `load-${i}` };
      return { i, creator, path, tool: 'slow_compute', args, expected: `Computed ${args.label} after ${args.seconds}s`, early: false, taskId: '' };
    }
    const gate = `load-${i}`;
    return { i, creator, path, tool: 'gated_job', args: { gate }, expected: `released ${gate}`, early: (i >> 1) % 3 === 0, taskId: '' };
  });
}

async function partA(t: Test): Promise<void> {
  const pg = await startPostgres();
  t.teardown(() => pg.dispose());
  const fixture = await startLegacyFixture({ tasks: 'sync' });
  t.teardown(() => fixture.close());
  const rule = { task: 'always', pollIntervalMs: 200 };
  const retry = { ...rule, retryOnLoss: true };
  const config = {
    store: pgStore(pg.url, 'load'),
    tasks: TASKS,
    // Up to ~130 wrapped calls at once on one instance, each holding a legacy upstream session while it runs.
    sessions: { maxPerUpstream: 400, maxPerPrincipal: 400, acquireTimeoutMs: 30_000 },
    upstreams: [
      { name: 'wrapped', path: '/wrapped', url: fixture.url, era: 'legacy', tools: { slow_compute: rule, gated_job: rule } },
      { name: 'retry', path: '/retry', url: fixture.url, era: 'legacy', tools: { slow_compute: retry, gated_job: retry } },
    ],
  };
  const [A, B] = (await startInstances(t, ['A', 'B'], config)) as [GatewayProcess, GatewayProcess];
  const plan = planLoad();
  const created: Planned[] = [];
  const live = [A, B];
  const pollers = startPollers(created, { workers: 16, spacingMs: 200, via: () => live });
  const loadStart = Date.now();
  await mapLimit(plan, 16, async (p) => {
    p.taskId = (await createTask((p.creator === 'A' ? A : B).url(p.path), p.tool, p.args)).taskId;
    created.push(p);
  });
  const gated = plan.filter((p) => p.tool === 'gated_job');
  const waiting = () => fixture.stats().gatesWaiting;
  await waitUntil(() => gated.every((p) => waiting()[p.args.gate as string] === 1), 'every gated call held at its gate', BOUND_MS, waiting);
  t.comment(`200 tasks created and every gated call held after ${Date.now() - loadStart} ms`);

  // Some gated calls end now, racing the kill; the rest are certainly running on their instance when A dies.
  for (const p of gated.filter((x) => x.early)) fixture.releaseGate(p.args.gate as string);
  const runningOnA = plan.filter((p) => p.creator === 'A' && !TERMINAL.includes(p.last?.status)).length;
  const exit = await A.kill('SIGKILL');
  const killedAt = Date.now();
  live.splice(live.indexOf(A), 1);
  t.equal(exit.signal, 'SIGKILL', 'A was SIGKILLed');
  t.comment(`A killed with ${runningOnA} of its ${plan.filter((p) => p.creator === 'A').length} tasks not yet seen terminal by the clients`);
  const heldOnA = gated.filter((p) => p.creator === 'A' && !p.early).length;
  t.ok(runningOnA >= heldOnA && heldOnA >= 30, `many of the tasks A owns were running when it died (${heldOnA} held at their gate)`, { runningOnA });
  for (const p of gated.filter((x) => !x.early)) fixture.releaseGate(p.args.gate as string);

  const terminal = () => plan.every((p) => TERMINAL.includes(p.last?.status));
  const status = () => tally(plan.map((p) => `${p.creator}/${p.path}/${p.last?.status ?? 'unseen'}`));
  await waitUntil(terminal, 'every task terminal through B (0 stuck)', BOUND_MS, status, 50);
  const settledMs = Date.now() - killedAt;
  await pollers.stop();
  t.comment(`every task terminal through B ${settledMs} ms after the kill (lease ${LEASE_MS} ms); ${pollers.sent.length} polls in all`);
  t.comment(`outcomes by creator/rule/status: ${JSON.stringify(status())}`);
  // A poll in flight to A when it died finds its connection reset (status 0): a client's retry goes to B.
  const badPolls = pollers.sent.filter((s) => !answered(s) && !(s.via === 'A' && s.reply.status === 0 && s.startedAt <= killedAt));
  t.same(
    badPolls.slice(0, 5).map((s) => ({ via: s.via, status: s.reply.status, body: s.reply.body })),
    [],
    'every poll a live instance received was answered with its task (no 429, 503 or error under load)',
  );
  t.comment(`polls by instance and HTTP status: ${JSON.stringify(tally(pollers.sent.map((s) => `${s.via}:${s.reply.status}`)))}`);
  await checkLoadOutcomes(t, plan, B);
  t.notOk(B.exit, 'B is still running', { exit: B.exit, output: B.exit ? lastLines(B.output()) : undefined });
}

/** Part A's verdicts, from one final tasks/get of every task through B. */
async function checkLoadOutcomes(t: Test, plan: Planned[], B: GatewayProcess): Promise<void> {
  const finals = await mapLimit(plan, 16, (p) => safe(getTask(B.url(p.path), p.taskId)));
  const lost = plan.filter((p, k) => finals[k]?.status !== 200 || finals[k]?.body?.result?.taskId !== p.taskId);
  t.same(
    lost.map((p) => p.i),
    [],
    '0 lost: every task id answers tasks/get on B',
    { replies: lost.slice(0, 5).map((p) => finals[plan.indexOf(p)]?.body) },
  );
  const results = finals.map((r) => r?.body?.result);
  const notTerminal = plan.filter((_, k) => !TERMINAL.includes(results[k]?.status));
  t.same(
    notTerminal.map((p) => p.i),
    [],
    '0 stuck: every task is terminal',
  );
  const crossed = plan.filter((p, k) => results[k]?.status === 'completed' && (firstText(results[k]?.result) !== p.expected || results[k]?.result?.isError));
  t.same(
    crossed.map((p) => ({ i: p.i, expected: p.expected, got: results[plan.indexOf(p)]?.result })),
    [],
    "0 crossed: each completed task's result is its own call's",
  );
  const failed = plan.filter((_, k) => results[k]?.status === 'failed');
  const wrongFailure = failed.filter((p) => {
    const r = results[plan.indexOf(p)];
    return r?.error?.code !== INSTANCE_LOST.code || r?.error?.message !== INSTANCE_LOST.message;
  });
  t.same(
    wrongFailure.map((p) => ({ i: p.i, got: results[plan.indexOf(p)] })),
    [],
    'every failed task carries GW_TASK_INSTANCE_LOST (-32603, the catalog message)',
  );
  const mayFail = (p: Planned) => p.creator === 'A' && p.path === 'wrapped';
  t.same(
    failed.filter((p) => !mayFail(p)).map((p) => `${p.i}: ${p.creator}/${p.path}`),
    [],
    "only tasks that died with A on a rule without retryOnLoss failed (B's own, and retryOnLoss ones, completed)",
  );
  const heldAtKill = plan.filter((p) => mayFail(p) && p.tool === 'gated_job' && !p.early);
  t.ok(heldAtKill.length >= 10, `${heldAtKill.length} calls were certainly running on A when it died, without retryOnLoss`);
  t.same(
    heldAtKill.filter((p) => results[plan.indexOf(p)]?.status !== 'failed').map((p) => p.i),
    [],
    'each of them ended failed (GW_TASK_INSTANCE_LOST)',
  );
  const retried = plan.filter((p) => p.creator === 'A' && p.path === 'retry');
  t.ok(
    retried.every((p) => results[plan.indexOf(p)]?.status === 'completed'),
    `the ${retried.length} retryOnLoss tasks A owned all completed`,
  );
  t.equal(plan.filter((_, k) => results[k]?.status === 'cancelled').length, 0, 'none cancelled');
  t.comment(`final: ${JSON.stringify(tally(results.map((r) => String(r?.status))))}; ${failed.length} failed with GW_TASK_INSTANCE_LOST`);
}

// ── B ────────────────────────────────────────────────────────────────────────────────────────────────────────

/** Part B's jobs: long enough to outlive the creation of 50 of them, the kill and the start of two new instances. */
const JOB = { steps: 50, stepMs: 500 };

/** One task of part B. */
interface Durable extends Followed {
  kind: 'job' | 'proxied';
  era: 'legacy' | 'modern';
  /** The topic (job) or gate (proxied) that names it. */
  name: string;
  expected: string;
}

async function partB(t: Test): Promise<void> {
  const pg = await startPostgres();
  t.teardown(() => pg.dispose());
  const jobs = { legacy: await startJobServer({ era: 'legacy', stepMs: 200 }), modern: await startJobServer({ era: 'modern', stepMs: 200 }) };
  const native = {
    legacy: await startLegacyFixture({ tasks: 'native', taskPollIntervalMs: 100 }),
    modern: await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 100, taskTtlMs: 600_000 }),
  };
  t.teardown(() => Promise.all([...Object.values(jobs), ...Object.values(native)].map((s) => s.close())));
  const config = {
    store: pgStore(pg.url, 'durable'),
    tasks: TASKS,
    upstreams: [
      { name: 'job-legacy', path: '/job-legacy', url: jobs.legacy.url, era: 'legacy', tools: JOB_RULES },
      { name: 'job-modern', path: '/job-modern', url: jobs.modern.url, era: 'modern', tools: JOB_RULES },
      { name: 'native-legacy', path: '/native-legacy', url: native.legacy.url, era: 'legacy' },
      { name: 'native-modern', path: '/native-modern', url: native.modern.url, era: 'modern' },
    ],
  };
  const eras = ['legacy', 'modern'] as const;
  const startsBefore = { legacy: jobs.legacy.calls.start_report ?? 0, modern: jobs.modern.calls.start_report ?? 0 };
  const nativeBefore = Object.fromEntries(eras.map((e) => [e, native[e].stats().calls.gated_job ?? 0]));
  const first = await startInstances(t, ['K1', 'K2'], config);
  const plan: Durable[] = Array.from({ length: 100 }, (_, i): Durable => {
    const era = eras[i % 2] as 'legacy' | 'modern';
    if (i < 50) return { kind: 'proxied', era, name: `durable-${i}`, path: `native-${era}`, taskId: '', expected: `released durable-${i}` };
    return { kind: 'job', era, name: `durable-${i}`, path: `job-${era}`, taskId: '', expected: `Report on durable-${i}: ${JOB.steps} sections` };
  });
  const create = (tasks: Durable[]) =>
    mapLimit(tasks, 10, async (p, i) => {
      const [tool, args] = p.kind === 'job' ? ['start_report', { topic: p.name, ...JOB }] : ['gated_job', { gate: p.name }];
      p.taskId = (await createTask((first[i % first.length] as GatewayProcess).url(p.path), tool as string, args)).taskId;
    });
  // The upstream tasks first (held at their gates as long as needed), then the jobs (running on a timer), then the kill.
  const proxied = plan.filter((p) => p.kind === 'proxied');
  await create(proxied);
  const held = () => proxied.every((p) => native[p.era].stats().gatesWaiting[p.name] === 1);
  await waitUntil(held, 'every proxied upstream task running (held at its gate)', BOUND_MS, () => eras.map((e) => native[e].stats().gatesWaiting));
  const jobTasks = plan.filter((p) => p.kind === 'job');
  const jobsAt = Date.now();
  await create(jobTasks);
  t.comment(`50 job tasks created in ${Date.now() - jobsAt} ms (each job runs ${JOB.steps * JOB.stepMs} ms)`);
  const jobOf = (p: Durable) => [...jobs[p.era].jobs.values()].filter((j) => j.args.topic === p.name);
  t.same(
    jobTasks.filter((p) => jobOf(p)[0]?.finished !== false).map((p) => p.name),
    [],
    'all 50 upstream jobs are running when the instances die',
  );

  const exits = await Promise.all(first.map((g) => g.kill('SIGKILL')));
  const killedAt = Date.now();
  t.same(
    exits.map((e) => e.signal),
    ['SIGKILL', 'SIGKILL'],
    'every instance SIGKILLed at once',
  );
  // Half the upstream tasks end while no instance runs; the other half after the new ones have taken over.
  for (const p of proxied.filter((_, k) => k % 2 === 0)) native[p.era].releaseGate(p.name);
  const second = await startInstances(t, ['N1', 'N2'], config);
  t.comment(`two new instances serving ${Date.now() - killedAt} ms after the kill`);
  for (const p of proxied.filter((_, k) => k % 2 === 1)) native[p.era].releaseGate(p.name);

  const pollers = startPollers(plan, { workers: 8, spacingMs: 200, via: () => second });
  const status = () => tally(plan.map((p) => `${p.kind}/${p.era}/${p.last?.status ?? 'unseen'}`));
  await waitUntil(() => plan.every((p) => TERMINAL.includes(p.last?.status)), 'all 100 tasks terminal on the new instances', BOUND_MS, status, 50);
  await pollers.stop();
  t.same(
    pollers.sent
      .filter((s) => !answered(s))
      .slice(0, 5)
      .map((s) => ({ via: s.via, status: s.reply.status, body: s.reply.body })),
    [],
    'every poll of the new instances was answered with its task, taken over or not yet',
  );
  t.comment(`all 100 terminal ${Date.now() - killedAt} ms after the kill: ${JSON.stringify(status())}`);

  const finals = await mapLimit(plan, 10, (p, i) => safe(getTask((second[i % 2] as GatewayProcess).url(p.path), p.taskId)));
  const wrong = plan.filter((p, k) => {
    const r = finals[k]?.body?.result;
    return finals[k]?.status !== 200 || r?.taskId !== p.taskId || r?.status !== 'completed' || !JSON.stringify(r?.result ?? {}).includes(p.expected);
  });
  t.same(
    wrong.map((p) => ({ name: p.name, reply: finals[plan.indexOf(p)]?.body })),
    [],
    '100/100 completed through the new instances, each with its own result',
  );
  for (const era of eras) {
    t.equal((jobs[era].calls.start_report ?? 0) - startsBefore[era], 25, `${era} jobs: start_report called 25 times for 25 tasks`);
    t.same(
      jobTasks.filter((p) => p.era === era && jobOf(p).length !== 1).map((p) => p.name),
      [],
      `${era} jobs: exactly one upstream job per task`,
    );
    t.ok(
      jobTasks.filter((p) => p.era === era).every((p) => jobOf(p)[0]?.finished),
      `${era} jobs: every upstream job ran to its end`,
    );
    const polledAfter = jobTasks.filter(
      (p) => p.era === era && jobs[era].statusCalls.some((c) => c.at > killedAt && jobOf(p)[0] === jobs[era].jobs.get(String(c.handle))),
    );
    t.equal(polledAfter.length, 25, `${era} jobs: each was followed by the new instances (its status tool called after the kill)`);
    const stats = native[era].stats();
    t.equal((stats.calls.gated_job ?? 0) - (nativeBefore[era] ?? 0), 25, `${era} proxied: gated_job called 25 times for 25 tasks`);
    t.same(stats.gatesWaiting, {}, `${era} proxied: no upstream call left waiting`);
  }
  for (const g of second) t.notOk(g.exit, `${g.name} is still running`, { exit: g.exit, output: g.exit ? lastLines(g.output()) : undefined });
}

// ── C ────────────────────────────────────────────────────────────────────────────────────────────────────────

/** One task of part C and when its gate (if any) opens. */
interface Before extends Followed {
  expected: string;
  gate?: string;
  /** `gap`: the upstream call ends while Postgres is down (its outcome waits for the store); `after`: once it is back. */
  opens?: 'gap' | 'after';
}

async function partC(t: Test): Promise<void> {
  const pg = await startPostgres();
  t.teardown(() => pg.dispose());
  const fixture = await startLegacyFixture({ tasks: 'sync' });
  t.teardown(() => fixture.close());
  const rule = { task: 'always', pollIntervalMs: 200 };
  const config = {
    store: pgStore(pg.url, 'outage', 500),
    tasks: TASKS,
    upstreams: [{ name: 'wrapped', path: '/wrapped', url: fixture.url, era: 'legacy', tools: { greet: rule, gated_job: rule } }],
  };
  const [G] = (await startInstances(t, ['G'], config)) as [GatewayProcess];
  const pid = G.pid;
  const tasks: Before[] = [];
  for (let i = 0; i < 10; i++) {
    tasks.push({ path: 'wrapped', taskId: (await createTask(G.url('wrapped'), 'greet', { name: `pg-${i}` })).taskId, expected: `Hello, pg-${i}!` });
  }
  for (let i = 0; i < 15; i++) {
    const gate = `outage-${i}`;
    const opens = i < 10 ? 'gap' : 'after';
    tasks.push({ path: 'wrapped', taskId: (await createTask(G.url('wrapped'), 'gated_job', { gate })).taskId, expected: `released ${gate}`, gate, opens });
  }
  const gated = tasks.filter((x) => x.gate);
  await waitUntil(
    () => gated.every((x) => fixture.stats().gatesWaiting[x.gate as string] === 1),
    'every gated call held',
    BOUND_MS,
    () => fixture.stats(),
  );
  const polls = startPollers(tasks, { workers: 6, spacingMs: 100, via: () => [G], done: () => false });
  const greeted = tasks.filter((x) => !x.gate);
  await waitUntil(
    () => greeted.every((x) => x.last?.status === 'completed'),
    'the greet tasks completed',
    BOUND_MS,
    () => greeted.map((x) => x.last),
  );
  t.equal((await readyzBecomes(G, 200, BOUND_MS)).ms >= 0, true, '/readyz is 200 before the outage');

  const killAt = Date.now();
  await pg.kill();
  const downAt = Date.now();
  for (const x of gated.filter((y) => y.opens === 'gap')) fixture.releaseGate(x.gate as string);
  const createdInGap = Date.now();
  const create = await safe(post(G.url('wrapped'), 'tools/call', { name: 'greet', arguments: { name: 'gap' } }, { capabilities: DECLARING }));
  const createMs = Date.now() - createdInGap;
  const down = await readyzBecomes(G, 503, BOUND_MS);
  const inGap = () => polls.sent.filter((s) => s.startedAt >= downAt);
  // The gap outlasts two leases (renewals fail meanwhile: the gateway's running tasks' leases lapse) and many polls.
  const longEnough = () => inGap().length >= 60 && Date.now() - downAt > 2 * LEASE_MS;
  await waitUntil(longEnough, 'polls sent while Postgres is down, for two leases', BOUND_MS, () => inGap().length);
  const restartAt = Date.now();
  await pg.restart();
  const upAt = Date.now();
  t.comment(`Postgres down for ${restartAt - downAt} ms (kill ${downAt - killAt} ms, restart ${upAt - restartAt} ms)`);

  const up = await readyzBecomes(G, 200, BOUND_MS);
  const done = (x: Before) => x.last?.status === 'completed';
  const inGapDone = gated.filter((x) => x.opens === 'gap');
  await waitUntil(
    () => inGapDone.every(done),
    'the outcomes reached during the gap are stored once Postgres is back',
    BOUND_MS,
    () => inGapDone.map((x) => x.last?.status),
  );
  const recoveredAt = Date.now();
  for (const x of gated.filter((y) => y.opens === 'after')) fixture.releaseGate(x.gate as string);
  await waitUntil(
    () => tasks.every(done),
    'every task completed',
    BOUND_MS,
    () => tasks.map((x) => x.last?.status),
  );
  await polls.stop();
  t.comment(`/readyz 503 ${down.ms} ms into the gap, 200 ${up.ms} ms after the restart; recovered ${recoveredAt - upAt} ms after it`);

  t.ok(isStoreUnavailable(create), 'a task-creating tools/call in the gap: the catalogued GW_STORE_UNAVAILABLE 503', {
    reply: create.body,
    status: create.status,
  });
  t.ok(createMs <= GAP_ANSWER_MS, `that call answered in ${createMs} ms (at most ${GAP_ANSWER_MS})`);
  checkGapPolls(t, polls.sent, new Set(greeted.map((x) => x.taskId)), { killAt, downAt, restartAt, upAt, recoveredAt });
  const finals = await mapLimit(tasks, 6, (x) => safe(getTask(G.url('wrapped'), x.taskId)));
  const wrong = tasks.filter((x, k) => {
    const r = finals[k]?.body?.result;
    return finals[k]?.status !== 200 || r?.taskId !== x.taskId || r?.status !== 'completed' || firstText(r?.result) !== x.expected;
  });
  t.same(
    wrong.map((x) => ({ expected: x.expected, reply: finals[tasks.indexOf(x)]?.body })),
    [],
    'every task made before the gap answers tasks/get completed with its own result',
  );
  t.notOk(G.exit, 'the gateway was not restarted: still the same process', { exit: G.exit, output: G.exit ? lastLines(G.output()) : undefined });
  t.equal(G.pid, pid, 'same pid');
}

/** Part C's verdicts on the polls: each in the gap the catalogued 503 within 1 s, none hanging, recovery seen. */
function checkGapPolls(
  t: Test,
  sent: Sent[],
  finishedBefore: ReadonlySet<string>,
  at: { killAt: number; downAt: number; restartAt: number; upAt: number; recoveredAt: number },
): void {
  const ok = answered;
  const gap = sent.filter((s) => s.startedAt >= at.downAt && s.endedAt <= at.restartAt);
  t.ok(gap.length >= 30, `${gap.length} tasks/get polls sent and answered while Postgres was down`);
  // A task that was finished (and read) before the gap may be answered from the instance's copy of finished records
  // (a terminal record never changes): its own completed result. Every other poll needs the database.
  const running = gap.filter((s) => !finishedBefore.has(s.taskId));
  t.ok(running.length >= 20, `${running.length} of them of tasks still running`);
  t.same(
    running.filter((s) => !isStoreUnavailable(s.reply)).map((s) => ({ status: s.reply.status, body: s.reply.body })),
    [],
    'each poll of a running task in the gap: HTTP 503, JSON-RPC -31003 "The task store is unavailable; retry shortly", data.retryAfterMs 1000',
  );
  t.same(
    gap
      .filter((s) => finishedBefore.has(s.taskId) && !isStoreUnavailable(s.reply))
      .filter((s) => !(s.reply.status === 200 && s.reply.body?.result?.taskId === s.taskId && s.reply.body?.result?.status === 'completed'))
      .map((s) => ({ status: s.reply.status, body: s.reply.body })),
    [],
    'each poll of a task finished before the gap: the catalogued 503, or its own completed record from the finished-record copy',
  );
  // Every request that overlapped the outage (from the kill until the restart completed): answered within 1 s.
  const around = sent.filter((s) => s.endedAt >= at.killAt && s.startedAt <= at.upAt);
  const slowest = Math.max(0, ...around.map((s) => s.ms));
  t.same(
    around.filter((s) => s.ms > GAP_ANSWER_MS).map((s) => ({ ms: s.ms, status: s.reply.status })),
    [],
    `every request while Postgres was away answered within ${GAP_ANSWER_MS} ms (slowest ${slowest} ms of ${around.length})`,
  );
  t.same(
    sent.filter((s) => !ok(s) && !isStoreUnavailable(s.reply)).map((s) => ({ status: s.reply.status, body: s.reply.body })),
    [],
    'every poll, before, during and after: the task, or the catalogued 503 (no other error, no refused connection)',
  );
  t.same(
    sent.filter((s) => s.ms > ANY_ANSWER_MS).map((s) => s.ms),
    [],
    `nothing hung: every poll answered within ${ANY_ANSWER_MS} ms`,
  );
  t.ok(
    sent.some((s) => s.startedAt >= at.upAt && ok(s)),
    'polls are answered with the task again after the restart',
  );
  t.same(
    sent.filter((s) => s.startedAt >= at.recoveredAt && !ok(s)).map((s) => s.reply.body),
    [],
    'no 503 once recovered',
  );
  t.comment(`polls: ${sent.length} (${gap.length} in the gap; slowest around the outage ${slowest} ms)`);
}
