/**
 * `UpstreamClient.resumeTask`: a task one client (one gateway instance) created, reached by another client from its
 * ref alone. Legacy: the session it lives in is joined by id without a new `initialize`, a passive resumed task opens
 * no `tasks/result` until someone follows it, and a session the upstream no longer knows (404; 400 with or without a
 * JSON-RPC body) loses the task. Modern: stateless tasks/get, tasks/update and tasks/cancel from anywhere. Real
 * upstreams: the legacy fixture with native tasks, an SDK 1.32.2 session-per-server host, the modern fixture.
 */
import t from 'tap';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  LegacyUpstreamClient,
  ModernUpstreamClient,
  UpstreamTaskLostError,
  type UpstreamCaller,
  type UpstreamTask,
  type UpstreamTaskSnapshot,
} from '../../src/upstream/index.js';
import { drain } from '../../src/upstream/call-wrappers.js';
import { LegacySession } from '../../src/upstream/legacy/session.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { serveSdkSessions } from '../helpers/sdk-session-server.js';
import { nextWith, startUpstreamTask, toEnd } from '../helpers/upstream-task.js';

const CLIENT_INFO = { name: 'gateway-under-test', version: '0.0.1' };
const TASKS = 'io.modelcontextprotocol/tasks';
const asking: UpstreamCaller = { capabilities: { elicitation: {}, extensions: { [TASKS]: {} } }, clientInfo: { name: 'ide', version: '9' } };
const now = () => new Date().toISOString();
const working = (): UpstreamTaskSnapshot => ({ status: 'working', ttlMs: 60_000, createdAt: now(), lastUpdatedAt: now(), pollIntervalMs: 100 });

function legacyClient(url: string): LegacyUpstreamClient {
  return new LegacyUpstreamClient('up', { url, staticHeaders: {}, timeoutMs: 30_000, max: 4, idleMs: 60_000, clientInfo: CLIENT_INFO });
}

t.test('legacy fixture with native tasks', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'native', taskPollIntervalMs: 100, taskJobDelayMs: 200 });
  const a = legacyClient(fx.url);
  const b = legacyClient(fx.url);
  t.teardown(async () => {
    await a.close();
    await b.close();
    await fx.close();
  });

  const created = (tool: string, args: Record<string, unknown>): Promise<UpstreamTask> => startUpstreamTask(a, asking, tool, args, { ttlMs: 60_000 });

  t.test('the ref names the session the task lives in; another client reaches it there without initialize', async (t) => {
    const task = await created('gated_job', { gate: 'resume-1' });
    t.teardown(() => task.release());
    t.type(task.ref.session, 'string', 'a legacy task reports its Mcp-Session-Id');
    t.equal(task.ref.id, task.id);
    const there = b.resumeTask(asking, task.ref, task.created);
    t.equal(b.knownIdentity, undefined, 'no initialize was sent by the joining client');
    t.equal(b.stats().sessions, 1, 'the joined session is held while the task is');
    t.match(await there.get(), { status: 'working' });
    fx.releaseGate('resume-1');
    // A passive resumed task fetches the payload itself once tasks/get says the task ended.
    let end = await there.get();
    while (end.status === 'working') end = await there.get();
    t.match(end, { status: 'completed', result: { content: [{ text: 'released resume-1' }] } });
    there.release();
    t.equal(b.stats().sessions, 0, 'released: the joined session is forgotten');
  });

  t.test('cancel through the joined session cancels the task upstream', async (t) => {
    const task = await created('gated_job', { gate: 'resume-2' });
    t.teardown(() => task.release());
    await waitForStats(fx, (s) => (s.gatesWaiting['resume-2'] ?? 0) === 1);
    const there = b.resumeTask(asking, task.ref, task.created);
    t.teardown(() => there.release());
    t.equal(await there.cancel(), 'cancelled');
    await waitForStats(fx, (s) => s.cancellations.some((c) => c.taskId === task.id && c.via === 'tasks/cancel'));
    t.equal((await toEnd(task)).at(-1)!.status, 'cancelled', 'the creating side sees it cancelled');
  });

  t.test('a resumed task that is followed opens tasks/result in the joined session: its input arrives there', async (t) => {
    // Created by a bare session that never opens tasks/result, so the question is still queued upstream.
    const raw = new LegacySession({ url: fx.url, headers: {}, capabilities: { elicitation: {} }, clientInfo: CLIENT_INFO, timeoutMs: 30_000 });
    t.teardown(() => raw.close());
    await raw.initialize();
    const res = await drain(await raw.request('tools/call', { name: 'confirm_delete', arguments: { filename: 'r.txt' }, task: { ttl: 60_000 } }));
    if (!('result' in res)) throw new Error('no task');
    const taskId = (res.result.task as { taskId: string }).taskId;
    const there = b.resumeTask(asking, { id: taskId, session: raw.sessionId! }, working());
    t.teardown(() => there.release());
    const asked = await nextWith(there, 'input_required');
    t.same(Object.keys(asked.inputRequests ?? {}), ['confirm']);
    t.same(await there.answer({ confirm: { action: 'accept', content: { confirm: true } } }), ['confirm']);
    t.match((await toEnd(there)).at(-1), { status: 'completed', result: { content: [{ text: 'Deleted r.txt' }] } });
  });

  t.test('a session the upstream does not know (404) loses the task', async (t) => {
    const there = b.resumeTask(asking, { id: 'whatever', session: 'no-such-session' }, working());
    t.teardown(() => there.release());
    await t.rejects(there.get(), UpstreamTaskLostError);
    await t.rejects(there.next(new AbortController().signal), UpstreamTaskLostError);
    t.equal(await there.cancel(), 'unknown');
  });

  t.test('a task released while it runs leaves its session alive upstream when the creating client closes', async (t) => {
    const c = legacyClient(fx.url);
    const task = await startUpstreamTask(c, asking, 'gated_job', { gate: 'resume-3' });
    const ref = task.ref;
    task.release();
    await c.close(); // no DELETE of a session a running task was left in
    const there = b.resumeTask(asking, ref, working());
    t.teardown(() => there.release());
    t.match(await there.get(), { status: 'working' });
    fx.releaseGate('resume-3');
    t.match((await toEnd(there)).at(-1), { status: 'completed' });
  });

  t.test('joined sessions are bounded', async (t) => {
    const held = [1, 2, 3, 4].map((i) => b.resumeTask(asking, { id: `x${i}`, session: `s${i}` }, working()));
    t.teardown(() => held.forEach((h) => h.release()));
    t.throws(() => b.resumeTask(asking, { id: 'x5', session: 's5' }, working()), { name: 'UpstreamBusyError' });
    const same = b.resumeTask(asking, { id: 'y1', session: 's1' }, working());
    t.equal(b.stats().sessions, 4, 'a second task in a joined session shares it');
    same.release();
  });
});

for (const lost of ['sdk-400-json', 'bare-status'] as const) {
  t.test(`SDK session-per-server host (${lost}): a session it no longer knows loses the task`, async (t) => {
    const host = await serveSdkSessions(() => new McpServer({ name: 'sdk', version: '1' }, { capabilities: { tools: {} } }), lost);
    const b = legacyClient(host.url);
    t.teardown(async () => {
      await b.close();
      await host.close();
    });
    const there = b.resumeTask(asking, { id: 'task-1', session: 'forgotten-session' }, working());
    t.teardown(() => there.release());
    await t.rejects(there.get(), UpstreamTaskLostError);
    t.equal(await there.cancel(), 'unknown');
  });
}

t.test('modern fixture with the tasks extension: stateless get, update and cancel from another client', async (t) => {
  const fx = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 100, taskJobDelayMs: 200 });
  const a = new ModernUpstreamClient({ name: 'up', url: fx.url, timeoutMs: 30_000, clientInfo: CLIENT_INFO });
  const b = new ModernUpstreamClient({ name: 'up', url: fx.url, timeoutMs: 30_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await a.close();
    await b.close();
    await fx.close();
  });
  const created = (tool: string, args: Record<string, unknown>): Promise<UpstreamTask> => startUpstreamTask(a, asking, tool, args, { ttlMs: 60_000, t });

  t.test('input answered and the result read through another client', async (t) => {
    const task = await created('confirm_delete', { filename: 'm.txt' });
    t.same(task.ref, { id: task.id }, 'a modern task needs no session');
    const asked = await nextWith(task, 'input_required');
    const there = b.resumeTask(asking, task.ref, asked);
    t.teardown(() => there.release());
    t.same(await there.answer({ confirm: { action: 'accept', content: { confirm: true } } }), ['confirm']);
    let s = await there.get();
    while (s.status !== 'completed') s = await there.get();
    t.match(s, { result: { content: [{ text: 'Deleted m.txt' }] } });
  });

  t.test('cancelled through another client', async (t) => {
    const task = await created('gated_job', { gate: 'm-1' });
    const there = b.resumeTask(asking, task.ref, task.created);
    t.teardown(() => there.release());
    t.equal(await there.cancel(), 'cancelled');
    t.equal((await toEnd(task)).at(-1)!.status, 'cancelled');
  });

  t.test('an id the upstream does not know is lost', async (t) => {
    const there = b.resumeTask(asking, { id: 'no-such-task' }, working());
    t.teardown(() => there.release());
    await t.rejects(there.get(), UpstreamTaskLostError);
  });
});
