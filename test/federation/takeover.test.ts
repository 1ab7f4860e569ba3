/**
 * A federated endpoint across instances (docs/federation.md, docs/several-instances.md § Leases and takeover): two
 * REAL gateway processes share one real store (a redis-server, then a postgres, each of the test's own) and one
 * configuration, whose path `/mcp` federates three members (namespaces): `r` and `w`, a sync-only 2025-11-25 fixture
 * whose `gated_job` is wrapped into a gateway-owned task (`r` with `retryOnLoss: true`, `w` without), and `j`, a
 * 2026-07-28 hand-rolled job server whose `start_report` is a `task: job` rule. A client creates one task per member through an instance K, so K owns them (their records name
 * the member); K is SIGKILLed; the client polls every task through the surviving instance B by its id until it ends:
 *  - `r_gated_job` runs once more on B (the sealed call opened by the claimer) and completes with the tool's result;
 *  - `w_gated_job` is failed by the claimer: "The gateway instance running this task was lost";
 *  - `j_start_report` is followed on B from its record (the same upstream job, started once) and completes with the
 *    job's result.
 * Another principal's lookup of the same ids through B is refused as an unknown task. Once for a 2026-07-28 client
 * (tasks extension, `tasks/get`) and once for a 2025-11-25 client (`tasks/get`, `tasks/result` in a session minted
 * on K and rebuilt on B). Each store's run skips, saying why, only when its server binary is missing.
 */
import t, { type Test } from 'tap';
import { startLegacyFixture, type LegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { JOB_RULES, startJobServer, type JobServer } from '../fixtures/job-server.js';
import { startGatewayProcess, TEST_SECRET, type GatewayProcess } from '../helpers/gateway-process.js';
import { postgresBinaryMissing, startPostgres } from '../helpers/postgres-server.js';
import { serverBinaryMissing, startRedis } from '../helpers/redis-server.js';
import { post, readReply, type RawReply } from '../helpers/modern.js';
import { LEGACY_HEADERS } from '../helpers/legacy-face-stack.js';
import { DECLARING, TERMINAL } from '../helpers/task-helpers.js';

/** A short lease: the lost instance's tasks are claimed within it (plus a sweep). */
const LEASE_MS = 1500;
/** Waits for something that must happen give up after this long (a failed test, never a pass). */
const BOUND_MS = 20_000;
/** The bound on a task's end after its owner died: the lease, the claim, and the run on B. */
const TAKEOVER_BOUND_MS = 3 * LEASE_MS + BOUND_MS;

/** The caller who creates the tasks, and another one. */
const ALICE = 'Bearer alice-token';
const MALLORY = 'Bearer mallory-token';

t.setTimeout(600_000);

/** The shared stores the instances run on, each on a server of this test's own. */
const BACKENDS = [
  {
    name: 'Redis',
    missing: serverBinaryMissing(),
    async start() {
      const redis = await startRedis();
      return { store: { kind: 'redis', url: redis.url, keyPrefix: 'fed-takeover:' }, stop: () => redis.stop() };
    },
  },
  {
    name: 'Postgres',
    missing: postgresBinaryMissing(),
    async start() {
      const pg = await startPostgres();
      return { store: { kind: 'postgres', url: pg.url, schema: 'fed_takeover' }, stop: () => pg.dispose() };
    },
  },
];

for (const backend of BACKENDS) {
  if (backend.missing) t.comment(`the federated takeover test on ${backend.name} is skipped: ${backend.missing}`);
  t.test(
    `two instances on ${backend.name}, a federated endpoint: the owner of tasks on different members is SIGKILLed; they end through the other instance`,
    { skip: backend.missing ?? false },
    (t) => main(t, backend),
  );
}

interface Fixtures {
  sync: LegacyFixture;
  jobs: JobServer;
}

async function main(t: Test, backend: (typeof BACKENDS)[number]): Promise<void> {
  const server = await backend.start();
  t.teardown(() => server.stop());
  const sync = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 0 });
  t.teardown(() => sync.close());
  const jobs = await startJobServer({ era: 'modern', stepMs: 50 });
  t.teardown(() => jobs.close());

  const config = {
    secret: { value: TEST_SECRET },
    store: { ...server.store, commandTimeoutMs: 500, connectTimeoutMs: 1000 },
    tasks: { leaseMs: LEASE_MS, pollIntervalMs: 50 },
    upstreams: [
      {
        name: 'retrying',
        path: '/mcp',
        url: sync.url,
        era: 'legacy',
        expose: { namespace: 'r' },
        tools: { gated_job: { task: 'always', pollIntervalMs: 50, retryOnLoss: true } },
      },
      { name: 'once', path: '/mcp', url: sync.url, era: 'legacy', expose: { namespace: 'w' }, tools: { gated_job: { task: 'always', pollIntervalMs: 50 } } },
      { name: 'jobs', path: '/mcp', url: jobs.url, era: 'modern', expose: { namespace: 'j' }, tools: { start_report: JOB_RULES.start_report } },
    ],
  };
  const instances: GatewayProcess[] = [];
  const start = async (name: string) => {
    const g = await startGatewayProcess({ name, config });
    instances.push(g);
    return g;
  };
  t.teardown(() => Promise.all(instances.map((g) => (g.exit ? undefined : g.kill('SIGKILL')))));
  const B = await start('B');
  const mcp = B.url('jobs');
  t.equal(B.url('retrying'), mcp, 'one endpoint for the three members');

  for (const era of ['modern', 'legacy'] as const) {
    t.test(`a ${era === 'modern' ? '2026-07-28' : '2025-11-25'} client`, async (t) => {
      const K = await start(`K-${era}`);
      const client = era === 'modern' ? modernClient(K.url('jobs'), B.url('jobs')) : await legacyClient(K.url('jobs'), B.url('jobs'));
      await takeover(t, { sync, jobs }, K, client, era);
      t.notOk(B.exit, 'B is still running', { exit: B.exit, output: B.exit ? B.output().slice(-3000) : undefined });
    });
  }
}

/** What one era's client does: create a task through K, look a task up through B (as the creator or another principal). */
interface Client {
  /** tools/call asking for a task, through K; the task id. */
  create(name: string, args: Record<string, unknown>): Promise<string>;
  /** tasks/get through B, as the creator (or as MALLORY with `other`): the reply's result, or its error. */
  get(taskId: string, other?: boolean): Promise<{ result?: any; error?: any; reply: RawReply }>;
  /** The task's final result through B (2025-11-25: tasks/result; 2026-07-28: the `result` of the terminal tasks/get). */
  result(taskId: string, ended: any): Promise<any>;
}

async function takeover(t: Test, f: Fixtures, K: GatewayProcess, client: Client, era: string): Promise<void> {
  const gateR = `fed-retry-${era}`;
  const gateW = `fed-once-${era}`;
  const topic = `fed-${era}`;
  const callsBefore = f.sync.stats().calls.gated_job ?? 0;
  const startsBefore = f.jobs.calls.start_report ?? 0;

  const retried = await client.create('r_gated_job', { gate: gateR });
  const failing = await client.create('w_gated_job', { gate: gateW });
  const job = await client.create('j_start_report', { topic, steps: 60, stepMs: 100 });
  const handle = [...f.jobs.jobs.entries()].find(([, j]) => j.args.topic === topic)?.[0];
  t.ok(handle, 'the job server started the job', { jobs: [...f.jobs.jobs.keys()] });

  // Both wrapped calls are running on K (waiting at their gates), and K follows the job.
  await waitForStats(f.sync, (s) => s.gatesWaiting[gateR] === 1 && s.gatesWaiting[gateW] === 1, BOUND_MS);
  await waitFor(() => f.jobs.statusCalls.some((c) => String(c.handle) === handle), 'K polls the job');
  for (const [label, id] of [
    ['r_gated_job', retried],
    ['w_gated_job', failing],
    ['j_start_report', job],
  ] as const) {
    const seen = await client.get(id);
    t.equal(seen.result?.status, 'working', `${label}: working, seen through B while K owns it`, { reply: seen.reply.body });
  }

  const exit = await K.kill('SIGKILL');
  t.equal(exit.signal, 'SIGKILL', 'K was killed');
  const killedAt = Date.now();

  // The retryOnLoss call runs again on B (the call K made may still wait at the gate: nobody told the upstream).
  await waitForStats(f.sync, (s) => (s.calls.gated_job ?? 0) === callsBefore + 3, TAKEOVER_BOUND_MS);
  f.sync.releaseGate(gateR);

  const [endR, endW, endJ] = await Promise.all([untilEnded(client, retried), untilEnded(client, failing), untilEnded(client, job)]);

  t.equal(endR.status, 'completed', 'r_gated_job (retryOnLoss): completed through B', { endR });
  t.equal(firstText(await client.result(retried, endR)), `released ${gateR}`, "with the wrapped tool's result");
  t.equal((f.sync.stats().calls.gated_job ?? 0) - callsBefore, 3, 'the retryOnLoss call ran exactly once more; the other one not again');

  t.equal(endW.status, 'failed', 'w_gated_job (no retryOnLoss): failed by the claimer, not left working', { endW });
  t.match(JSON.stringify(endW), /gateway instance running this task was lost/i, 'the error says the instance running it was lost');
  f.sync.releaseGate(gateW);

  t.equal(endJ.status, 'completed', 'j_start_report (job): completed through B', { endJ });
  t.match(JSON.stringify((await client.result(job, endJ)) ?? {}), `Report on ${topic}: 60 sections`, "with the job's own result");
  t.equal((f.jobs.calls.start_report ?? 0) - startsBefore, 1, 'the start tool was called exactly once');
  t.ok(
    f.jobs.statusCalls.some((c) => String(c.handle) === handle && c.at > killedAt),
    'the same job was polled after K died',
  );

  for (const [label, id] of [
    ['r_gated_job', retried],
    ['w_gated_job', failing],
    ['j_start_report', job],
  ] as const) {
    const theirs = await client.get(id, true);
    t.notOk(theirs.result, `${label}: another principal reads nothing through B`, { reply: theirs.reply.body });
    t.equal(theirs.error?.code, -32602, `${label}: another principal is told the task is unknown`, { reply: theirs.reply.body });
    t.match(theirs.error?.message, /unknown task/i, `${label}: "Unknown task"`);
  }
}

// ── the clients ──────────────────────────────────────────────────────────────────────────────────────────────

/** A 2026-07-28 client declaring the tasks extension: each request stands alone. */
function modernClient(onK: string, onB: string): Client {
  const as = (authorization: string) => ({ capabilities: DECLARING, headers: { authorization } });
  return {
    async create(name, args) {
      const r = await post(onK, 'tools/call', { name, arguments: args }, as(ALICE));
      if (r.body?.result?.resultType !== 'task') throw new Error(`${name}: no task (HTTP ${r.status} ${JSON.stringify(r.body)})`);
      return r.body.result.taskId as string;
    },
    async get(taskId, other) {
      const reply = await post(onB, 'tasks/get', { taskId }, as(other ? MALLORY : ALICE));
      return { result: reply.body?.result, error: reply.body?.error, reply };
    },
    async result(_taskId, ended) {
      return ended.result;
    },
  };
}

let rpcId = 1;

/** A 2025-11-25 client: a session initialized on K (and rebuilt from the store by B), task-augmented tools/call. */
async function legacyClient(onK: string, onB: string): Promise<Client> {
  const send = async (url: string, authorization: string, sessionId: string | undefined, body: Record<string, unknown>) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { ...LEGACY_HEADERS, authorization, ...(sessionId ? { 'mcp-session-id': sessionId } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', ...body }),
      signal: AbortSignal.timeout(BOUND_MS),
    });
    return { res, reply: await readReply(res) };
  };
  const initialize = async (url: string, authorization: string) => {
    const { res, reply } = await send(url, authorization, undefined, {
      id: rpcId++,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { tasks: {} }, clientInfo: { name: 'fed-legacy', version: '1' } },
    });
    const sessionId = res.headers.get('mcp-session-id');
    if (!sessionId) throw new Error(`initialize on ${url}: no session (HTTP ${reply.status} ${JSON.stringify(reply.body)})`);
    await send(url, authorization, sessionId, { method: 'notifications/initialized' });
    return sessionId;
  };
  const mine = await initialize(onK, ALICE);
  // Mallory has a session of her own, on B.
  const theirs = await initialize(onB, MALLORY);
  const request = async (url: string, authorization: string, sessionId: string, method: string, params: Record<string, unknown>) =>
    (await send(url, authorization, sessionId, { id: rpcId++, method, params })).reply;
  return {
    async create(name, args) {
      const r = await request(onK, ALICE, mine, 'tools/call', { name, arguments: args, task: { ttl: 120_000 } });
      const taskId = r.body?.result?.task?.taskId;
      if (typeof taskId !== 'string') throw new Error(`${name}: no CreateTaskResult (HTTP ${r.status} ${JSON.stringify(r.body)})`);
      return taskId;
    },
    async get(taskId, other) {
      const reply = other ? await request(onB, MALLORY, theirs, 'tasks/get', { taskId }) : await request(onB, ALICE, mine, 'tasks/get', { taskId });
      return { result: reply.body?.result, error: reply.body?.error, reply };
    },
    async result(taskId) {
      const r = await request(onB, ALICE, mine, 'tasks/result', { taskId });
      return r.body?.result ?? r.body?.error;
    },
  };
}

// ── helpers ──────────────────────────────────────────────────────────────────────────────────────────────────

const firstText = (result: any): string | undefined => result?.content?.[0]?.text;

/** Polls tasks/get through B every 50 ms until the task is terminal; throws with the last reply after the bound. */
async function untilEnded(client: Client, taskId: string): Promise<any> {
  const deadline = Date.now() + TAKEOVER_BOUND_MS;
  for (;;) {
    const r = await client.get(taskId);
    if (TERMINAL.includes(r.result?.status)) return r.result;
    if (Date.now() > deadline)
      throw new Error(`task ${taskId}: not ended within ${TAKEOVER_BOUND_MS} ms; last: HTTP ${r.reply.status} ${JSON.stringify(r.reply.body)}`);
    await new Promise((res) => setTimeout(res, 50));
  }
}

/** Resolves once `cond()` holds (checked every 10 ms); throws after BOUND_MS. */
async function waitFor(cond: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + BOUND_MS;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${BOUND_MS} ms`);
    await new Promise((res) => setTimeout(res, 10));
  }
}
