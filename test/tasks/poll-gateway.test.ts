// Poll intervals through the real gateway: learned per tool from the tasks it saw end (a fast tool is suggested a
// shorter interval than a slow one, a rule's interval wins), and an upstream task is asked `tasks/get` at most once per
// the upstream's own interval however fast a client polls the gateway (counted where the upstream receives them).
import t, { type Test } from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { startRelay } from '../helpers/relay.js';
import { createTask, getTask, pollToEnd, TERMINAL } from '../helpers/task-helpers.js';

/** Starts a gateway with `upstreams` (and `tasks` settings) on loopback port 0; returns its base URL. */
async function gatewayWith(t: Test, upstreams: unknown[], tasks: Record<string, unknown> = {}): Promise<string> {
  // These tests poll faster than the interval on purpose (what the upstream sees then): the poll limit, tested in
  // test/security/task-limits.test.ts, is set out of their way.
  return (await startGateway({ tasks: { pollBurst: 1_000_000, ...tasks }, upstreams }, { t })).origin;
}

t.test('a tool learned fast is suggested a shorter interval than a tool learned slow; a rule’s interval wins', async (t) => {
  const fixture = await startLegacyFixture({ tasks: 'sync' });
  t.teardown(() => fixture.close());
  // The same tool behind three routes: learning is per upstream and tool, so each route learns its own durations.
  const wrapped = { slow_compute: { task: 'always' } };
  const base = await gatewayWith(t, [
    { name: 'fast', path: '/fast', url: fixture.url, tools: wrapped },
    { name: 'slow', path: '/slow', url: fixture.url, tools: wrapped },
    { name: 'ruled', path: '/ruled', url: fixture.url, tools: { slow_compute: { task: 'always', pollIntervalMs: 250 } } },
  ]);
  const seconds = { fast: 0.02, slow: 0.6, ruled: 0.02 };
  const run = async (route: keyof typeof seconds) => {
    const created = await createTask(`${base}/${route}`, 'slow_compute', { seconds: seconds[route] });
    const seen = await pollToEnd(`${base}/${route}`, created.taskId);
    t.equal(seen.at(-1).status, 'completed', `${route}: completed`);
    return created;
  };
  // Three tasks per route end while the gateway watches; nothing is learned before (the configured interval).
  const first = await Promise.all((['fast', 'slow', 'ruled'] as const).flatMap((r) => [run(r), run(r), run(r)]));
  for (const [i, c] of first.entries()) t.equal(c.pollIntervalMs, i < 6 ? 1_000 : 250, 'before any task ended: tasks.pollIntervalMs, or the rule’s');

  const fast = await createTask(`${base}/fast`, 'slow_compute', { seconds: seconds.fast });
  const slow = await createTask(`${base}/slow`, 'slow_compute', { seconds: seconds.slow });
  const ruled = await createTask(`${base}/ruled`, 'slow_compute', { seconds: seconds.ruled });
  t.ok(fast.pollIntervalMs < slow.pollIntervalMs, `learned fast ${fast.pollIntervalMs} ms < learned slow ${slow.pollIntervalMs} ms`);
  t.ok(fast.pollIntervalMs < 1_000, 'the fast tool is polled sooner than the configured interval');
  t.ok(fast.pollIntervalMs >= 100, 'never below tasks.minPollIntervalMs');
  t.equal(ruled.pollIntervalMs, 250, "the rule's pollIntervalMs wins over what was learned");
  // tasks/get suggests again on each read (the slow task is still running: a learned interval, not the default).
  const slowRead = (await getTask(`${base}/slow`, slow.taskId)).body.result;
  if (slowRead.status === 'working') t.not(slowRead.pollIntervalMs, 1_000, 'a read of a running task: learned');
  await Promise.all([pollToEnd(`${base}/fast`, fast.taskId), pollToEnd(`${base}/slow`, slow.taskId), pollToEnd(`${base}/ruled`, ruled.taskId)]);
});

t.test('adaptivePolling: false keeps the configured interval', async (t) => {
  const fixture = await startLegacyFixture({ tasks: 'sync' });
  t.teardown(() => fixture.close());
  const base = await gatewayWith(t, [{ name: 'fx', path: '/mcp', url: fixture.url, tools: { slow_compute: { task: 'always' } } }], {
    adaptivePolling: false,
    pollIntervalMs: 200,
  });
  for (let i = 0; i < 3; i++) await pollToEnd(`${base}/mcp`, (await createTask(`${base}/mcp`, 'slow_compute', { seconds: 0.01 })).taskId);
  t.equal((await createTask(`${base}/mcp`, 'slow_compute', { seconds: 0.01 })).pollIntervalMs, 200);
});

/**
 * A client polls the gateway every few ms (far faster than the upstream's interval) while an upstream task runs; the
 * upstream must see at most one tasks/get per its interval over the whole life of the task (counted by the upstream).
 */
async function pollFastWhileRunning(t: Test, url: string, release: () => void, upstreamGets: () => number, intervalMs: number): Promise<void> {
  const before = upstreamGets();
  const started = Date.now();
  const created = await createTask(url, 'gated_job', { gate: 'g' });
  let clientPolls = 0;
  let last: any;
  for (let i = 0; i < 60; i++) {
    last = (await getTask(url, created.taskId)).body.result;
    clientPolls++;
    // One pause of one and a half intervals: the client's reads fall out of step with the gateway's own polls (two
    // clocks would then each poll once per interval).
    await new Promise((r) => setTimeout(r, i === 20 ? intervalMs * 1.5 : 5));
  }
  t.equal(last.status, 'working', 'still running while the gate is closed');
  release();
  for (;;) {
    last = (await getTask(url, created.taskId)).body.result;
    clientPolls++;
    if (TERMINAL.includes(last.status)) break;
    await new Promise((r) => setTimeout(r, 5));
  }
  const elapsed = Date.now() - started;
  const gets = upstreamGets() - before;
  const allowed = Math.floor(elapsed / intervalMs) + 1;
  t.equal(last.status, 'completed');
  t.ok(clientPolls > 2 * allowed, `the client polled ${clientPolls} times in ${elapsed} ms (faster than the upstream's interval)`);
  t.ok(gets <= allowed, `upstream tasks/get ${gets} <= one per ${intervalMs} ms interval (${allowed})`);
  t.ok(last.pollIntervalMs >= intervalMs, 'a proxied task never suggests less than its upstream');
}

t.test('a legacy upstream task: tasks/get at most once per the upstream’s pollInterval while a client polls faster', async (t) => {
  const interval = 200;
  const fixture = await startLegacyFixture({ tasks: 'native', taskPollIntervalMs: interval });
  t.teardown(() => fixture.close());
  // The relay sits between the gateway and the fixture and records every request the upstream receives.
  const relay = await startRelay(t);
  relay.setTarget(fixture.url);
  const base = await gatewayWith(t, [{ name: 'fx', path: '/mcp', url: relay.url }]);
  await pollFastWhileRunning(
    t,
    `${base}/mcp`,
    () => fixture.releaseGate('g'),
    () => relay.seen.filter((s) => s.rpcMethod === 'tasks/get').length,
    interval,
  );
});

t.test('a modern upstream task: tasks/get at most once per the upstream’s pollIntervalMs while a client polls faster', async (t) => {
  const interval = 200;
  const fixture = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: interval });
  t.teardown(() => fixture.close());
  // A modern client's polls of a modern upstream's task pass through unless the gateway serves the task: a `native`
  // rule with `afterMs` makes the task the gateway's (proxied under its own id).
  const base = await gatewayWith(t, [{ name: 'fx', path: '/mcp', url: fixture.url, tools: { gated_job: { task: 'native', afterMs: 10 } } }]);
  await pollFastWhileRunning(
    t,
    `${base}/mcp`,
    () => fixture.releaseGate('g'),
    () => fixture.stats().methods['tasks/get'] ?? 0,
    interval,
  );
});
