/**
 * Several gateway instances behind one load balancer: two (and more) REAL gateway processes share one real
 * redis-server, in front of the same upstream fixtures running in this test process (a sync-only legacy server whose
 * tools rules wrap into gateway-owned tasks, a legacy server with native 2025-11-25 tasks, a modern server with the
 * tasks extension). What one instance started, another serves: task polls, input and cancellation, MRTR retries,
 * legacy sessions; an instance lost (SIGKILL) or stopped (SIGTERM) mid-task hands its work to another; a Redis
 * outage is a fast 503 and the gateway recovers without a restart. Skips, saying why, only when no `redis-server`
 * binary is on PATH.
 */
import t, { type Test } from 'tap';
import { startLegacyFixture, type LegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { runGatewayToExit, startGatewayProcess, TEST_SECRET, type GatewayProcess } from '../helpers/gateway-process.js';
import { serverBinaryMissing, startRedis, type RedisServer } from '../helpers/redis-server.js';
import { post, readReply, type RawReply } from '../helpers/modern.js';
import { openListen } from '../helpers/sse-reader.js';
import { DECLARING, TERMINAL } from '../helpers/task-helpers.js';
import { LEGACY_HEADERS } from '../helpers/legacy-face-stack.js';

/** A short lease: an instance lost mid-task is noticed within it (claimed by the next sweep). */
const LEASE_MS = 1500;
/** The bound on each Redis command: while Redis is down, no request may wait longer than this (plus MARGIN_MS). */
const COMMAND_TIMEOUT_MS = 500;
/** Slack for process scheduling and the HTTP round trip on a loaded machine. */
const MARGIN_MS = 1500;
/** Waits for something that must happen give up after this long (a failed test, never a pass). */
const BOUND_MS = 15_000;

type Rules = Record<string, Record<string, unknown>>;

// Every instance is a process of its own (a few seconds each to start on a loaded machine): a longer bound than
// the suite's default, still a bound.
t.setTimeout(600_000);

// A Redis of their own (stopped, frozen and restarted under the gateways): a REDIS_URL elsewhere will not do.
const missing = serverBinaryMissing();
if (missing) {
  t.plan(0, `the multi-instance tests need a redis-server of their own: ${missing}`);
} else {
  t.test('two and more gateway processes on one Redis', (t) => main(t));
}

async function main(t: Test): Promise<void> {
  const redis = await startRedis();
  t.teardown(() => redis.stop());
  const legacySync = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 0 });
  t.teardown(() => legacySync.close());
  const legacyNative = await startLegacyFixture({ tasks: 'native', taskPollIntervalMs: 50, taskJobDelayMs: 0 });
  t.teardown(() => legacyNative.close());
  const modernNative = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 50, taskJobDelayMs: 0 });
  t.teardown(() => modernNative.close());

  const wrapped: Rules = {
    gated_job: { task: 'always', pollIntervalMs: 50 },
    confirm_delete: { task: 'always', pollIntervalMs: 50 },
    greet: { task: 'always', pollIntervalMs: 50 },
  };
  /** One gateway configuration: the same upstreams on every instance, the store in `redis`. */
  const configFor = (leaseMs: number) => ({
    store: { kind: 'redis', url: redis.url, keyPrefix: 'mi-test:', commandTimeoutMs: COMMAND_TIMEOUT_MS, connectTimeoutMs: 1000 },
    tasks: { leaseMs, pollIntervalMs: 50 },
    upstreams: [
      // Slow sync tools wrapped into gateway-owned tasks (the legacy face mints sessions here for legacy clients).
      { name: 'wrapped', path: '/wrapped', url: legacySync.url, era: 'legacy', tools: wrapped },
      // The same tool, run again by another instance when its instance is lost (gated_job is idempotent enough here).
      { name: 'retry', path: '/retry', url: legacySync.url, era: 'legacy', tools: { gated_job: { task: 'always', pollIntervalMs: 50, retryOnLoss: true } } },
      // No rules: an eliciting call is an MRTR round, no task.
      { name: 'plain', path: '/plain', url: legacySync.url, era: 'legacy' },
      // Native 2025-11-25 upstream tasks, and native tasks-extension upstream tasks.
      { name: 'legacy-native', path: '/legacy-native', url: legacyNative.url, era: 'legacy' },
      { name: 'modern', path: '/modern', url: modernNative.url, era: 'modern' },
    ],
  });
  const env = { MCP_GATEWAY_STATE_SECRET: TEST_SECRET };
  const instances: GatewayProcess[] = [];
  const start = async (name: string, leaseMs = LEASE_MS) => {
    const g = await startGatewayProcess({ name, config: configFor(leaseMs), env });
    instances.push(g);
    return g;
  };
  t.teardown(async () => {
    await Promise.all(instances.map((g) => g.kill('SIGKILL')));
  });

  t.test('refuses to start with a Redis store and no shared secret: exit 2, naming the variable', async (t) => {
    const r = await runGatewayToExit({ name: 'nosecret', config: configFor(LEASE_MS), env: { MCP_GATEWAY_STATE_SECRET: undefined } });
    t.equal(r.code, 2, 'exit code 2 (a configuration error)', { output: r.output });
    t.match(r.output, /MCP_GATEWAY_STATE_SECRET/, 'the message names the variable');
    t.notMatch(r.output, /serving MCP endpoint/, 'it never served');
  });

  const pair = await Promise.allSettled([start('A'), start('B')]);
  const [a, b] = pair;
  if (a?.status !== 'fulfilled' || b?.status !== 'fulfilled') {
    for (const r of pair)
      if (r.status === 'rejected') t.fail('two gateway instances start on the Redis store', { error: String((r.reason as Error).message).slice(0, 3000) });
    return;
  }
  const A = a.value;
  const B = b.value;

  t.test('a wrapped task created on A is polled, answered and cancelled through B', async (t) => {
    t.test('polled: working on B while the call runs on A, completed on B when it ends', async (t) => {
      const before = legacySync.stats().calls.gated_job ?? 0;
      const taskId = await createTask(t, A.url('wrapped'), 'gated_job', { gate: 'poll-b' });
      await waitForStats(legacySync, (s) => s.running.gated_job === 1, BOUND_MS);
      const working = await getTask(B.url('wrapped'), taskId);
      t.equal(working.status, 200, 'B knows the task', { body: working.body });
      t.equal(working.body.result?.status, 'working');
      t.equal(legacySync.releaseGate('poll-b'), 1);
      const done = await pollUntil(B.url('wrapped'), taskId, (r) => TERMINAL.includes(r.status));
      t.equal(done.status, 'completed', 'completed, seen on B', { done });
      t.equal(firstText(done.result), 'released poll-b');
      t.equal((legacySync.stats().calls.gated_job ?? 0) - before, 1, 'one upstream call');
    });

    t.test('heard: a subscriptions/listen with taskIds on B hears the status changes A makes', async (t) => {
      const taskId = await createTask(t, A.url('wrapped'), 'gated_job', { gate: 'listen-b' });
      const { stream } = await openListen(t, B.url('wrapped'), 'listen-b', { taskIds: [taskId] }, { capabilities: DECLARING });
      const ack = await stream.until((m) => m.method === 'notifications/subscriptions/acknowledged', BOUND_MS);
      t.same(ack.match.params?.notifications?.taskIds, [taskId], 'B acknowledged the subscription');
      await waitForStats(legacySync, (s) => s.gatesWaiting['listen-b'] === 1, BOUND_MS);
      legacySync.releaseGate('listen-b');
      const heard = await stream.until((m) => m.method === 'notifications/tasks' && m.params?.taskId === taskId && m.params?.status === 'completed', BOUND_MS);
      t.equal(heard.match.params.status, 'completed', "B's listener heard the task complete on A");
    });

    t.test("answered: the input request shows on B and B's tasks/update reaches the call held by A", async (t) => {
      const taskId = await createTask(t, A.url('wrapped'), 'confirm_delete', { filename: 'across.txt' });
      const asking = await pollUntil(B.url('wrapped'), taskId, (r) => r.status !== 'working');
      t.equal(asking.status, 'input_required', 'B shows the question', { asking });
      t.same(Object.keys(asking.inputRequests ?? {}), ['confirm']);
      const ack = await post(B.url('wrapped'), 'tasks/update', { taskId, inputResponses: { confirm: accept({ confirm: true }) } }, { capabilities: DECLARING });
      t.equal(ack.status, 200, 'B accepted the answer', { body: ack.body });
      t.notOk(ack.body?.error);
      const done = await pollUntil(B.url('wrapped'), taskId, (r) => TERMINAL.includes(r.status));
      t.equal(done.status, 'completed', 'completed', { done });
      t.equal(firstText(done.result), 'Deleted across.txt', 'the answer given on B reached the upstream call on A');
    });

    t.test('cancelled: tasks/cancel on B cancels the upstream call A runs', async (t) => {
      const before = legacySync.stats().cancellations.length;
      const taskId = await createTask(t, A.url('wrapped'), 'gated_job', { gate: 'cancel-b' });
      await waitForStats(legacySync, (s) => s.gatesWaiting['cancel-b'] === 1, BOUND_MS);
      const r = await post(B.url('wrapped'), 'tasks/cancel', { taskId }, { capabilities: DECLARING });
      t.equal(r.status, 200, 'B answered the cancel', { body: r.body });
      t.notOk(r.body?.error);
      const end = await pollUntil(A.url('wrapped'), taskId, (x) => TERMINAL.includes(x.status));
      t.equal(end.status, 'cancelled', 'A reports it cancelled');
      const stats = await waitForStats(legacySync, (s) => s.cancellations.length > before && !s.gatesWaiting['cancel-b'], BOUND_MS);
      t.equal(stats.cancellations.at(-1)?.tool, 'gated_job', 'the upstream call was cancelled');
      t.equal((await getTask(B.url('wrapped'), taskId)).body.result?.status, 'cancelled', 'B reports it cancelled');
    });
  });

  for (const [label, path, fixture] of [
    ['modern tasks-extension', 'modern', modernNative],
    ['legacy 2025-11-25', 'legacy-native', legacyNative],
  ] as const) {
    t.test(`a native ${label} upstream task created on A is polled, answered and cancelled through B`, async (t) => {
      const stats = () => fixture.stats();
      t.test('polled', async (t) => {
        const taskId = await createTask(t, A.url(path), 'gated_job', { gate: `n-poll-${path}` });
        await waitForStats({ stats }, (s) => s.gatesWaiting[`n-poll-${path}`] === 1, BOUND_MS);
        const working = await getTask(B.url(path), taskId);
        t.equal(working.body.result?.status, 'working', 'B knows the task', { body: working.body });
        fixture.releaseGate(`n-poll-${path}`);
        const done = await pollUntil(B.url(path), taskId, (r) => TERMINAL.includes(r.status));
        t.equal(done.status, 'completed', 'completed, seen on B', { done });
        t.equal(firstText(done.result), `released n-poll-${path}`);
      });
      t.test('answered', async (t) => {
        const taskId = await createTask(t, A.url(path), 'confirm_delete', { filename: `${path}.txt` });
        const asking = await pollUntil(B.url(path), taskId, (r) => r.status !== 'working');
        t.equal(asking.status, 'input_required', "B shows the upstream task's question", { asking });
        const [key] = Object.keys(asking.inputRequests ?? {});
        t.ok(key, 'one input request');
        const ack = await post(
          B.url(path),
          'tasks/update',
          { taskId, inputResponses: { [key as string]: accept({ confirm: true }) } },
          { capabilities: DECLARING },
        );
        t.equal(ack.status, 200, 'B accepted the answer', { body: ack.body });
        t.notOk(ack.body?.error);
        const done = await pollUntil(B.url(path), taskId, (r) => TERMINAL.includes(r.status));
        t.equal(done.status, 'completed', 'completed', { done });
        t.equal(firstText(done.result), `Deleted ${path}.txt`);
      });
      t.test('cancelled', async (t) => {
        const before = stats().cancellations.length;
        const taskId = await createTask(t, A.url(path), 'gated_job', { gate: `n-cancel-${path}` });
        await waitForStats({ stats }, (s) => s.gatesWaiting[`n-cancel-${path}`] === 1, BOUND_MS);
        const r = await post(B.url(path), 'tasks/cancel', { taskId }, { capabilities: DECLARING });
        t.equal(r.status, 200, 'B answered the cancel', { body: r.body });
        t.notOk(r.body?.error);
        const end = await pollUntil(A.url(path), taskId, (x) => TERMINAL.includes(x.status));
        t.equal(end.status, 'cancelled', 'A reports it cancelled');
        await waitForStats({ stats }, (s) => s.cancellations.length > before, BOUND_MS);
        t.pass('the upstream saw the cancellation');
      });
    });
  }

  t.test('an MRTR round started on A is completed through B', async (t) => {
    const before = legacySync.stats().calls.confirm_delete ?? 0;
    const r1 = await post(A.url('plain'), 'tools/call', { name: 'confirm_delete', arguments: { filename: 'mrtr.txt' } }, { capabilities: { elicitation: {} } });
    const round = r1.body?.result;
    t.equal(round?.resultType, 'input_required', 'A asks', { body: r1.body });
    t.type(round?.requestState, 'string');
    const r2 = await post(
      B.url('plain'),
      'tools/call',
      {
        name: 'confirm_delete',
        arguments: { filename: 'mrtr.txt' },
        requestState: round?.requestState,
        inputResponses: { confirm: accept({ confirm: true }) },
      },
      { capabilities: { elicitation: {} } },
    );
    t.equal(r2.status, 200, { body: r2.body });
    t.equal(firstText(r2.body?.result), 'Deleted mrtr.txt', 'the retry on B completed the call held on A');
    t.equal((legacySync.stats().calls.confirm_delete ?? 0) - before, 1, 'one upstream call across both rounds');
  });

  t.test('an MRTR round of a modern upstream started on A is completed through B', async (t) => {
    const r1 = await post(
      A.url('modern'),
      'tools/call',
      { name: 'test_input_required_result_request_state', arguments: {} },
      { capabilities: { elicitation: {} } },
    );
    const round = r1.body?.result;
    t.equal(round?.resultType, 'input_required', { body: r1.body });
    const r2 = await post(
      B.url('modern'),
      'tools/call',
      { name: 'test_input_required_result_request_state', arguments: {}, requestState: round?.requestState, inputResponses: { confirm: accept({ ok: true }) } },
      { capabilities: { elicitation: {} } },
    );
    t.equal(r2.status, 200, { body: r2.body });
    t.match(firstText(r2.body?.result), /state-ok/, 'B verified the state A signed');
  });

  t.test("a legacy (2025-11-25) client's session started on A continues on B", async (t) => {
    const sessionId = await legacyInitialize(A.url('wrapped'));
    t.type(sessionId, 'string', 'A minted a session');
    const greet = await legacyRequest(B.url('wrapped'), sessionId, 'tools/call', { name: 'greet', arguments: { name: 'B' } });
    t.equal(greet.status, 200, 'B serves the session', { body: greet.body });
    // greet is wrapped (always): a legacy client that asks no task still gets the plain result.
    t.equal(firstText(greet.body?.result), 'Hello, B!');

    const created = await legacyRequest(A.url('wrapped'), sessionId, 'tools/call', {
      name: 'gated_job',
      arguments: { gate: 'legacy-b' },
      task: { ttl: 60_000 },
    });
    const taskId = created.body?.result?.task?.taskId as string;
    t.type(taskId, 'string', 'a legacy CreateTaskResult on A', { body: created.body });
    const got = await legacyRequest(B.url('wrapped'), sessionId, 'tasks/get', { taskId });
    t.equal(got.body?.result?.taskId, taskId, "B knows the session's task", { body: got.body });
    t.ok(['working', 'completed'].includes(got.body?.result?.status));
    const listed = await legacyRequest(B.url('wrapped'), sessionId, 'tasks/list', {});
    t.ok(
      (listed.body?.result?.tasks ?? []).some((x: any) => x.taskId === taskId),
      'B lists it',
      { body: listed.body },
    );
    const result = legacyRequest(B.url('wrapped'), sessionId, 'tasks/result', { taskId });
    await waitForStats(legacySync, (s) => s.gatesWaiting['legacy-b'] === 1, BOUND_MS);
    legacySync.releaseGate('legacy-b');
    const r = await result;
    t.equal(firstText(r.body?.result), 'released legacy-b', "B's blocking tasks/result hears the end of the call run by A", { body: r.body });
  });

  t.test('A killed with SIGKILL mid-task: B ends the task within the lease time, nothing lost or duplicated', async (t) => {
    t.test('an ordinary wrapped tool: the task fails through B with a clear error', async (t) => {
      const K = await start('K1');
      const before = legacySync.stats().calls.gated_job ?? 0;
      const taskId = await createTask(t, K.url('wrapped'), 'gated_job', { gate: 'kill-fail' });
      await waitForStats(legacySync, (s) => s.gatesWaiting['kill-fail'] === 1, BOUND_MS);
      const exit = await K.kill('SIGKILL');
      t.equal(exit.signal, 'SIGKILL');
      const end = await pollUntil(B.url('wrapped'), taskId, (r) => TERMINAL.includes(r.status), 3 * LEASE_MS + BOUND_MS / 3);
      t.equal(end.status, 'failed', 'failed, not left working', { end });
      t.match(JSON.stringify(end), /instance|lost|gone/i, 'the error says the instance running it was lost');
      t.equal((legacySync.stats().calls.gated_job ?? 0) - before, 1, 'not run again: no retryOnLoss');
    });

    t.test('a retryOnLoss tool runs exactly once more, on B, and completes', async (t) => {
      const K = await start('K2');
      const gate = 'kill-retry';
      const before = legacySync.stats().calls.gated_job ?? 0;
      const taskId = await createTask(t, K.url('retry'), 'gated_job', { gate });
      await waitForStats(legacySync, (s) => s.gatesWaiting[gate] === 1 && (s.calls.gated_job ?? 0) === before + 1, BOUND_MS);
      await K.kill('SIGKILL');
      // B's run is the second call. (The first may still wait at the gate: nobody told the upstream K is gone.)
      await waitForStats(legacySync, (s) => (s.calls.gated_job ?? 0) === before + 2, 3 * LEASE_MS + BOUND_MS / 3);
      legacySync.releaseGate(gate);
      const end = await pollUntil(B.url('retry'), taskId, (r) => TERMINAL.includes(r.status));
      t.equal(end.status, 'completed', { end });
      t.equal(firstText(end.result), `released ${gate}`);
      t.equal((legacySync.stats().calls.gated_job ?? 0) - before, 2, 'the tool ran exactly once more');
    });
  });

  t.test('A stopped with SIGTERM mid-task hands its lease over: B takes the task over without waiting for expiry', async (t) => {
    // A long lease on the stopping instance: only the handover lets B take over within the bound.
    const longLease = 60_000;
    t.test('an ordinary wrapped tool fails clearly', async (t) => {
      const S = await start('S1', longLease);
      const taskId = await createTask(t, S.url('wrapped'), 'gated_job', { gate: 'term-fail' });
      await waitForStats(legacySync, (s) => s.gatesWaiting['term-fail'] === 1, BOUND_MS);
      const exit = await S.kill('SIGTERM');
      t.equal(exit.code, 0, 'a graceful exit', { output: S.output().slice(-2000) });
      const end = await pollUntil(B.url('wrapped'), taskId, (r) => TERMINAL.includes(r.status));
      t.equal(end.status, 'failed', { end });
      t.match(JSON.stringify(end), /instance|lost|gone|stopp|shut/i, 'the error says why');
    });
    t.test('a retryOnLoss tool runs again on B', async (t) => {
      const S = await start('S2', longLease);
      const gate = 'term-retry';
      const before = legacySync.stats().calls.gated_job ?? 0;
      const taskId = await createTask(t, S.url('retry'), 'gated_job', { gate });
      await waitForStats(legacySync, (s) => s.gatesWaiting[gate] === 1, BOUND_MS);
      await S.kill('SIGTERM');
      await waitForStats(legacySync, (s) => (s.calls.gated_job ?? 0) === before + 2, BOUND_MS);
      legacySync.releaseGate(gate);
      const end = await pollUntil(B.url('retry'), taskId, (r) => TERMINAL.includes(r.status));
      t.equal(end.status, 'completed', { end });
      t.equal((legacySync.stats().calls.gated_job ?? 0) - before, 2, 'run exactly once more');
    });
  });

  t.test('an MRTR retry reaching B after A is gone gets a clear error saying to start again, never a hang', async (t) => {
    const K = await start('K3');
    const r1 = await post(K.url('plain'), 'tools/call', { name: 'confirm_delete', arguments: { filename: 'lost.txt' } }, { capabilities: { elicitation: {} } });
    const state = r1.body?.result?.requestState;
    t.type(state, 'string', { body: r1.body });
    await K.kill('SIGKILL');
    const retry = post(
      B.url('plain'),
      'tools/call',
      { name: 'confirm_delete', arguments: { filename: 'lost.txt' }, requestState: state, inputResponses: { confirm: accept({ confirm: true }) } },
      { capabilities: { elicitation: {} } },
    );
    const r2 = await raceBound(retry, BOUND_MS);
    t.ok(r2, 'answered within the bound');
    t.ok(r2?.body?.error, 'a JSON-RPC error', { body: r2?.body });
    t.equal(r2?.body?.error?.code, -32602, 'JSON-RPC -32602: this requestState cannot be continued');
    t.match(r2?.body?.error?.message, /again/i, 'it says to start the request again');
  });

  t.test('A and B are still running (nothing above crashed them)', async (t) => {
    for (const g of [A, B]) {
      t.notOk(g.exit, `${g.name} is running`, { exit: g.exit, output: g.exit ? lastLines(g.output()) : undefined });
    }
  });

  t.test('Redis hung (SIGSTOP): requests fail within commandTimeoutMs, and the data is served again once it answers', async (t) => {
    const taskId = await createTask(t, A.url('wrapped'), 'greet', { name: 'hung' });
    await pollUntil(B.url('wrapped'), taskId, (r) => r.status === 'completed');
    redis.pause();
    try {
      for (const [what, g] of [
        ['tasks/get on B', B],
        ['tasks/get on A', A],
      ] as const) {
        const r = await raceBound(safe(getTask(g.url('wrapped'), taskId)), COMMAND_TIMEOUT_MS + MARGIN_MS);
        t.ok(r, `${what}: answered within commandTimeoutMs + ${MARGIN_MS} ms`);
        t.equal(r?.status, 503, `${what}: HTTP 503`, { body: r?.body });
        t.match(r?.body?.error?.message, /task store is unavailable/i, `${what}: says the task store is unavailable`);
      }
    } finally {
      redis.resume();
    }
    const back = await pollUntil(B.url('wrapped'), taskId, (r) => r.status === 'completed');
    t.equal(firstText(back.result), 'Hello, hung!', 'the task is there again, unchanged');
    for (const g of [A, B]) t.notOk(g.exit, `${g.name} lives on`, { exit: g.exit, output: g.exit ? lastLines(g.output()) : undefined });
  });

  t.test('Redis stopped and restarted: fast 503s while it is down, recovery without a restart', async (t) => {
    await redisOutage(t, redis, A, B, legacySync);
    for (const g of [A, B]) {
      t.notOk(g.exit, `${g.name} survived the outage`, { exit: g.exit, output: g.exit ? lastLines(g.output()) : undefined });
    }
  });
}

/** The end of a process's output (what led to a crash). */
const lastLines = (text: string, n = 15) => text.split('\n').slice(-n).join('\n');

/** Redis goes away under both instances, then comes back (empty: no persistence). */
async function redisOutage(t: Test, redis: RedisServer, A: GatewayProcess, B: GatewayProcess, fixture: LegacyFixture): Promise<void> {
  // A wrapped call running on A ends while Redis is down: its outcome cannot be stored, and A must live on.
  const taskId = await createTask(t, A.url('wrapped'), 'gated_job', { gate: 'outage' });
  await waitForStats(fixture, (s) => s.gatesWaiting.outage === 1, BOUND_MS);
  await redis.stop();
  fixture.releaseGate('outage');
  const bound = COMMAND_TIMEOUT_MS + MARGIN_MS;
  const attempts: Array<[string, () => Promise<RawReply>]> = [
    ['tasks/get on B', () => getTask(B.url('wrapped'), taskId)],
    ['tasks/get on A', () => getTask(A.url('wrapped'), taskId)],
    [
      'a task-creating tools/call on A',
      () => post(A.url('wrapped'), 'tools/call', { name: 'greet', arguments: { name: 'down' } }, { capabilities: DECLARING }),
    ],
    ['tasks/cancel on B', () => post(B.url('wrapped'), 'tasks/cancel', { taskId }, { capabilities: DECLARING })],
  ];
  for (const [what, send] of attempts) {
    // A refused connection is an answer too (a crashed instance): reported, not thrown.
    const r = await raceBound(safe(send()), bound);
    t.ok(r, `${what}: answered within commandTimeoutMs + ${MARGIN_MS} ms`);
    if (!r) continue;
    t.equal(r.status, 503, `${what}: HTTP 503`, { body: r.body, exits: [A.exit, B.exit] });
    t.equal(r.body?.error?.code, -31003, `${what}: JSON-RPC -31003 (unavailable)`);
    t.equal(r.body?.error?.data?.retryAfterMs, 1000, `${what}: data.retryAfterMs`);
    t.match(r.body?.error?.message, /task store is unavailable/i, `${what}: says the task store is unavailable`);
  }
  const legacy = await raceBound(
    fetch(B.url('wrapped'), {
      method: 'POST',
      headers: LEGACY_HEADERS,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    }).then(readReply),
    bound,
  ).catch((e: Error) => ({ status: 0, body: { fetchError: String(e.cause ?? e) } }));
  t.ok(legacy, 'a legacy initialize (a session kept in the store): answered within the bound');
  t.equal(legacy?.status, 503, 'a legacy initialize: HTTP 503', { body: legacy?.body });

  await redis.restart();
  // Recovery: the instances reconnect on their own; a new task made on A is polled to its end through B.
  const deadline = Date.now() + BOUND_MS;
  let recovered: string | undefined;
  while (!recovered && Date.now() < deadline) {
    const r = await safe(post(A.url('wrapped'), 'tools/call', { name: 'greet', arguments: { name: 'after' } }, { capabilities: DECLARING }));
    if (r.body?.result?.resultType === 'task') recovered = r.body.result.taskId as string;
    else await new Promise((res) => setTimeout(res, 100));
  }
  t.ok(recovered, 'A creates tasks again without a restart');
  if (!recovered) return;
  const end = await pollUntil(B.url('wrapped'), recovered, (r) => TERMINAL.includes(r.status));
  t.equal(end.status, 'completed', 'B serves it to its end');
  t.equal(firstText(end.result), 'Hello, after!');
  t.ok(fixture.stats().calls.greet, 'the upstream was called');
}

// ── helpers ──────────────────────────────────────────────────────────────────────────────────────────────────

const firstText = (result: any): string | undefined => result?.content?.[0]?.text;
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

/** A reply, or a refused connection as a reply with status 0 (a crashed instance is reported, not thrown). */
function safe(p: Promise<RawReply>): Promise<RawReply> {
  return p.catch((e: Error): RawReply => ({ status: 0, contentType: '', body: { fetchError: String(e.cause ?? e) }, messages: [] }));
}

/** Resolves with the reply, or undefined when `ms` pass first (the outcome the caller asserts on). */
async function raceBound<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

async function createTask(t: Test, url: string, name: string, args: Record<string, unknown>): Promise<string> {
  const r = await post(url, 'tools/call', { name, arguments: args }, { capabilities: DECLARING });
  if (r.body?.result?.resultType !== 'task') {
    t.fail(`${name}: expected a CreateTaskResult`, { status: r.status, body: r.body });
    throw new Error(`${name}: no task (HTTP ${r.status} ${JSON.stringify(r.body)})`);
  }
  return r.body.result.taskId as string;
}

function getTask(url: string, taskId: string): Promise<RawReply> {
  return post(url, 'tasks/get', { taskId }, { capabilities: DECLARING });
}

/** Polls tasks/get on `url` every 50 ms until `until(result)`; throws with the last reply after `boundMs`. */
async function pollUntil(url: string, taskId: string, until: (result: any) => boolean, boundMs = BOUND_MS): Promise<any> {
  const deadline = Date.now() + boundMs;
  let last: RawReply | undefined;
  for (;;) {
    last = await getTask(url, taskId);
    const result = last.body?.result;
    if (result && until(result)) return result;
    if (Date.now() > deadline)
      throw new Error(`task ${taskId} on ${url}: not there within ${boundMs} ms; last: HTTP ${last.status} ${JSON.stringify(last.body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

let legacyId = 100;

/** A raw 2025-11-25 initialize (+ notifications/initialized); the session id the gateway minted. */
async function legacyInitialize(url: string): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: LEGACY_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: legacyId++,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { tasks: {} }, clientInfo: { name: 'raw-legacy', version: '1' } },
    }),
  });
  await readReply(res);
  const sessionId = res.headers.get('mcp-session-id') as string;
  await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sessionId },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  }).then((r) => r.body?.cancel());
  return sessionId;
}

/** One raw 2025-11-25 request on a session. */
async function legacyRequest(url: string, sessionId: string, method: string, params: Record<string, unknown>): Promise<RawReply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sessionId },
    body: JSON.stringify({ jsonrpc: '2.0', id: legacyId++, method, params }),
  });
  return readReply(res);
}
