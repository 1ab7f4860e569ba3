/**
 * Reload on SIGHUP, against a REAL gateway process (the CLI with a YAML configuration file) in front of a real legacy
 * fixture behind a recording relay: a rewritten file's tool rule wraps a tool that was answered plainly, its changed
 * upstream header reaches the upstream, and a call in flight across the reload gets its answer; a broken file (invalid
 * YAML, then a schema error) is rejected with its errors logged while the old behaviour stays; a change that needs a
 * restart (the port) is logged as such and not applied; without a file, SIGHUP says there is nothing to reload.
 */
import t from 'tap';
import { parseConfig, planReload } from '../../src/config/index.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { startGatewayProcess, type GatewayProcess } from '../helpers/gateway-process.js';
import { post } from '../helpers/modern.js';
import { freePort } from '../helpers/redis-server.js';
import { startRelay } from '../helpers/relay.js';
import { DECLARING, pollToEnd } from '../helpers/task-helpers.js';

/** Waits for something that must happen give up after this long (a failed test, never a pass). */
const BOUND_MS = 15_000;

// A gateway process takes a few seconds to start on a loaded machine.
t.setTimeout(240_000);

t.test('planReload: which differences apply live and which wait for a restart (names only, never values)', async (t) => {
  const base = {
    upstreams: [
      { name: 'a', url: 'http://127.0.0.1:1/mcp', headers: { 'x-key': 'old-secret-value' } },
      { name: 'b', path: '/b', url: 'http://127.0.0.1:2/mcp' },
    ],
  };
  const prev = parseConfig(base);
  const next = parseConfig({
    server: { port: 9999, maxListenStreams: 5, bodyLimitBytes: 10 },
    secret: { value: 'a-new-secret-of-at-least-thirty-two-characters' },
    tasks: { pollBurst: 7, leaseMs: 1000 },
    input: { holdMs: 1000 },
    upstreams: [
      { name: 'a', url: 'http://127.0.0.1:1/other', headers: { 'x-key': 'new-secret-value' }, tools: { x: { task: 'always' } } },
      { name: 'c', path: '/c', url: 'http://127.0.0.1:3/mcp' },
    ],
  });
  const plan = planReload(prev, next);
  t.same(plan.applied.sort(), ['input.holdMs', 'server.maxListenStreams', 'tasks.pollBurst', 'upstreams.a.headers', 'upstreams.a.tools']);
  t.same(plan.needsRestart.sort(), ['secret.value', 'server.bodyLimitBytes', 'server.port', 'tasks.leaseMs', 'upstreams.a.url', 'upstreams.b', 'upstreams.c']);
  t.notMatch(JSON.stringify([plan.applied, plan.needsRestart]), /secret-value|thirty-two/, 'no value is named');
  t.equal(plan.effective.server.port, prev.server.port, 'the effective configuration keeps what needs a restart');
  t.equal(plan.effective.upstreams[0]?.url, 'http://127.0.0.1:1/mcp');
  t.equal(plan.effective.tasks.pollBurst, 7, 'and takes what applies live');
  t.same(plan.effective.upstreams[0]?.tools, { x: { task: 'always' } });
  t.same(
    plan.effective.upstreams.map((u) => u.name),
    ['a', 'b'],
    'upstreams stay as they run',
  );
  t.same(planReload(plan.effective, next).applied, [], 'a second reload of the same file applies nothing more');
  t.same(planReload(prev, prev), { applied: [], needsRestart: [], effective: prev }, 'the same file: nothing');
});

const fixture = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 0 });
t.teardown(() => fixture.close());
const relay = await startRelay(t);
relay.setTarget(fixture.url);

/** The configuration file's content: one legacy upstream behind the relay, with these rules and headers. */
const configWith = (tools: Record<string, unknown>, headers: Record<string, string>, server: Record<string, unknown> = {}) => ({
  server,
  tasks: { pollBurst: 1_000_000, pollIntervalMs: 50 },
  upstreams: [{ name: 'up', path: '/mcp', url: relay.url, era: 'legacy', headers, tools }],
});
const unwrapped = { '*': { task: 'native' } };
const wrapped = { greet: { task: 'always', pollIntervalMs: 50 }, '*': { task: 'native' } };

const gw: GatewayProcess = await startGatewayProcess({ name: 'reload', format: 'yaml', config: configWith(unwrapped, { 'x-deploy': 'one' }) });
t.teardown(() => gw.kill('SIGKILL'));
const url = gw.url('up');

/** Sends SIGHUP and resolves with the first reload log line after it (applied, rejected or nothing to do). */
async function hup(): Promise<Record<string, any>> {
  const since = gw.logs().length;
  gw.signal('SIGHUP');
  return gw.waitForLog((e) => typeof e.msg === 'string' && /^(configuration reloaded|reload rejected|SIGHUP)/.test(e.msg), since, BOUND_MS);
}

const greet = (name: string) => post(url, 'tools/call', { name: 'greet', arguments: { name } }, { capabilities: DECLARING });

t.test('a rewritten rule wraps a tool at once; a call in flight across the reload gets its answer; the new header reaches the upstream', async (t) => {
  const plain = await greet('before');
  t.equal(plain.status, 200, { body: plain.body });
  t.equal(plain.body?.result?.resultType ?? 'complete', 'complete', 'not wrapped before the reload: answered plainly');
  t.match(JSON.stringify(plain.body?.result?.content), /Hello, before!/);
  t.ok(
    relay.seen.some((s) => s.headers['x-deploy'] === 'one'),
    'the first header reached the upstream',
  );

  // A caller with credentials gets a pooled upstream session: it stays open across the reload.
  const auth = { authorization: 'Bearer reload-pooled-caller' };
  const pooledBefore = await post(url, 'tools/call', { name: 'greet', arguments: { name: 'pooled' } }, { capabilities: DECLARING, headers: auth });
  t.equal(pooledBefore.status, 200, { body: pooledBefore.body });
  const pooled = await relay.waitFor((s) => s.rpcMethod === 'tools/call' && s.headers.authorization === auth.authorization);
  t.ok(pooled.sessionId, 'the credentialed call went on a session');

  // A call that stays in flight across the reload (the gate opens after it).
  const inFlight = post(url, 'tools/call', { name: 'gated_job', arguments: { gate: 'across-reload' } }, { capabilities: DECLARING });
  await waitForStats(fixture, (s) => s.gatesWaiting['across-reload'] === 1, BOUND_MS);

  await gw.rewriteConfig(configWith(wrapped, { 'x-deploy': 'two' }));
  const line = await hup();
  t.equal(line.msg, 'configuration reloaded', { line });
  t.same([...line.applied].sort(), ['upstreams.up.headers', 'upstreams.up.tools'], 'the log line names what was applied');
  t.same(line.needsRestart, [], 'nothing needs a restart');

  const task = await greet('after');
  t.equal(task.body?.result?.resultType, 'task', 'the same tool now answers with a task', { body: task.body });
  const end = (await pollToEnd(url, task.body.result.taskId as string)).at(-1);
  t.equal(end.status, 'completed', { end });
  const seenNew = await relay.waitFor((s) => s.headers['x-deploy'] === 'two');
  t.equal(seenNew.headers['x-deploy'], 'two', 'the changed header reached the upstream');

  const again = await post(url, 'tools/call', { name: 'greet', arguments: { name: 'pooled again' } }, { capabilities: DECLARING, headers: auth });
  t.equal(again.body?.result?.resultType, 'task', { body: again.body });
  const onSame = await relay.waitFor((s) => s.rpcMethod === 'tools/call' && s.body?.params?.arguments?.name === 'pooled again');
  t.equal(onSame.sessionId, pooled.sessionId, 'the open session stays');
  t.equal(onSame.headers['x-deploy'], 'two', 'and its later requests carry the new header');

  t.equal(fixture.releaseGate('across-reload'), 1);
  const answered = await inFlight;
  t.equal(answered.status, 200, 'the call in flight across the reload was answered', { body: answered.body });
  t.match(JSON.stringify(answered.body?.result), /released across-reload/);
});

t.test('a limit changes live: a lowered task limit refuses the next task of a principal at it', async (t) => {
  // Rules are matched in order: the new rule goes before the catch-all.
  const limited = configWith({ gated_job: { task: 'always', pollIntervalMs: 50 }, ...wrapped }, { 'x-deploy': 'two' });
  (limited.tasks as Record<string, unknown>).maxActivePerPrincipal = 1;
  await gw.rewriteConfig(limited);
  const line = await hup();
  t.same([...line.applied].sort(), ['tasks.maxActivePerPrincipal', 'upstreams.up.tools'], { line });
  const running = await post(url, 'tools/call', { name: 'gated_job', arguments: { gate: 'limit' } }, { capabilities: DECLARING });
  t.equal(running.body?.result?.resultType, 'task', 'one task runs', { body: running.body });
  await waitForStats(fixture, (s) => s.gatesWaiting.limit === 1, BOUND_MS);
  const refused = await greet('over the limit');
  t.equal(refused.status, 429, 'the next one is refused at the new limit', { body: refused.body });
  t.match(refused.body?.error?.message, /Too many active tasks \(limit 1\)/);
  // Back to the rules before, without the limit, for what follows.
  fixture.releaseGate('limit');
  await pollToEnd(url, running.body.result.taskId as string);
  await gw.rewriteConfig(configWith(wrapped, { 'x-deploy': 'two' }));
  const back = await hup();
  t.same([...back.applied].sort(), ['tasks.maxActivePerPrincipal', 'upstreams.up.tools'], { back });
});

t.test('a broken file is rejected with its errors logged; the running configuration stays', async (t) => {
  t.test('invalid YAML', async (t) => {
    await gw.rewriteConfig('upstreams:\n  - name: up\n    tools: {greet: [\n');
    const line = await hup();
    t.equal(line.msg, 'reload rejected: invalid configuration; the running configuration stays', { line });
    t.equal(line.level, 50, 'logged as an error');
    t.match(line.problems.join('\n'), /not valid YAML/, 'the parser error is logged');
    t.equal(gw.exit, undefined, 'the process is alive');
    const task = await greet('still wrapped');
    t.equal(task.body?.result?.resultType, 'task', 'the old rules still apply', { body: task.body });
  });

  t.test('a schema error: every problem is logged by key', async (t) => {
    const bad = configWith({ greet: { task: 'sometimes' }, '*': { task: 'native' } }, { 'x-deploy': 'three' });
    (bad.tasks as Record<string, unknown>).pollBurst = -1;
    await gw.rewriteConfig(bad);
    const line = await hup();
    t.equal(line.msg, 'reload rejected: invalid configuration; the running configuration stays', { line });
    const problems = (line.problems as string[]).join('\n');
    t.match(problems, /upstreams\.0\.tools\.greet\.task/, 'the rule problem names its key');
    t.match(problems, /tasks\.pollBurst/, 'the limit problem names its key');
    t.equal(gw.exit, undefined, 'the process is alive');
    const task = await greet('still wrapped');
    t.equal(task.body?.result?.resultType, 'task', 'the old rules still apply', { body: task.body });
    await relay.waitFor((s) => s.rpcMethod === 'tools/call' && s.body?.params?.arguments?.name === 'still wrapped');
    t.notOk(
      relay.seen.some((s) => s.headers['x-deploy'] === 'three'),
      'the rejected header never reached the upstream',
    );
  });

  t.test('a rule after one that covers it is refused, naming both rules', async (t) => {
    await gw.rewriteConfig(configWith({ '*': { task: 'native' }, greet: { task: 'off' } }, { 'x-deploy': 'four' }));
    const line = await hup();
    t.equal(line.msg, 'reload rejected: invalid configuration; the running configuration stays', { line });
    t.match((line.problems as string[]).join('\n'), /upstreams\.0\.tools\.greet: rule "greet" can never apply: the earlier rule "\*"/);
    const task = await greet('wrapped as before');
    t.equal(task.body?.result?.resultType, 'task', 'the old rules still apply', { body: task.body });
  });
});

t.test('a change that needs a restart (the port) is logged as such and not applied; the live part is', async (t) => {
  const port = await freePort();
  await gw.rewriteConfig(configWith(unwrapped, { 'x-deploy': 'two' }, { port }));
  const since = gw.logs().length;
  const line = await hup();
  t.equal(line.msg, 'configuration reloaded', { line });
  t.same(line.needsRestart, ['server.port'], 'the port needs a restart');
  t.same(line.applied, ['upstreams.up.tools'], 'the rule change was applied');
  const warn = await gw.waitForLog((e) => e.msg === 'configuration changes that need a restart were not applied', since, BOUND_MS);
  t.same(warn.needsRestart, ['server.port']);
  const plain = await greet('unwrapped again');
  t.equal(plain.body?.result?.resultType ?? 'complete', 'complete', 'served on the old port, the tool unwrapped again', { body: plain.body });
  const other = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST' }).then(
    () => 'answered',
    () => 'refused',
  );
  t.equal(other, 'refused', 'nothing listens on the new port');
});

t.test('without a configuration file, SIGHUP says there is nothing to reload', async (t) => {
  const flagged = await startGatewayProcess({ name: 'flags', config: {}, flags: ['--upstream', fixture.url, '--port', '0'] });
  t.teardown(() => flagged.kill('SIGKILL'));
  const since = flagged.logs().length;
  flagged.signal('SIGHUP');
  const line = await flagged.waitForLog((e) => typeof e.msg === 'string' && e.msg.startsWith('SIGHUP'), since, BOUND_MS);
  t.match(line.msg, /nothing to reload/);
  t.equal(flagged.exit, undefined, 'the process is alive');
  const exit = await flagged.kill('SIGTERM');
  t.equal(exit.code, 0, 'and stops cleanly', { output: flagged.output().slice(-2000) });
});
