/**
 * ModernUpstreamTask against the real modern fixture with the tasks extension (hand-written on the v2 SDK), in SSE
 * and in plain-JSON response mode: creation only when `CallOptions.task` declares the extension, the DetailedTask
 * polled with tasks/get (result, error, inputRequests under the upstream's own keys), tasks/update, the ack-only
 * tasks/cancel, a task the upstream forgot; and the same tasks seen as calls (taskAsCall, hideTask).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t, { type Test } from 'tap';
import {
  callNow,
  hideTask,
  ModernUpstreamClient,
  taskAsCall,
  UpstreamTaskLostError,
  type CallEvent,
  type UpstreamCaller,
  type UpstreamTask,
} from '../../../src/upstream/index.js';
import { ModernUpstreamTask } from '../../../src/upstream/modern/task.js';
import { startModernFixture, type ModernFixture } from '../../fixtures/modern-server.js';
import { nextWith, startUpstreamTask, toEnd } from '../../helpers/upstream-task.js';

const CLIENT_INFO = { name: 'gateway-under-test', version: '0.0.1' };
const TASKS = 'io.modelcontextprotocol/tasks';
const caller: UpstreamCaller = {
  capabilities: { elicitation: {}, sampling: {}, extensions: { [TASKS]: {}, 'example.com/other': { on: true } } },
  clientInfo: { name: 'ide', version: '9' },
};

/** Resolves once the fixture's task stats satisfy `done` (the fixture offers nothing to await). */
async function until(fx: ModernFixture, done: (s: ReturnType<ModernFixture['stats']>) => boolean): Promise<void> {
  for (let i = 0; i < 500 && !done(fx.stats()); i++) await new Promise((r) => setTimeout(r, 10));
  if (!done(fx.stats())) throw new Error(`fixture never reached the state: ${JSON.stringify(fx.stats())}`);
}

for (const responseMode of ['sse', 'json'] as const) {
  t.test(`modern fixture, ${responseMode} responses`, async (t) => {
    const fx = await startModernFixture({ mode: 'modern', tasks: 'native', responseMode, taskPollIntervalMs: 100, taskJobDelayMs: 200 });
    const client = new ModernUpstreamClient({ name: 'up', url: fx.url, timeoutMs: 30_000, clientInfo: CLIENT_INFO });
    t.teardown(async () => {
      await client.close();
      await fx.close();
    });

    const startTask = (t: Test, tool: string, args: Record<string, unknown>): Promise<UpstreamTask> =>
      startUpstreamTask(client, caller, tool, args, { ttlMs: 30_000, t });

    await t.test('a task that completes', async (t) => {
      const task = await startTask(t, 'slow_compute', { seconds: 0.2, label: 'sum' });
      t.ok(task instanceof ModernUpstreamTask);
      t.match(task.created, { status: 'working', pollIntervalMs: 100 });
      t.type(task.created.ttlMs, 'number');
      const end = (await toEnd(task)).at(-1)!;
      t.match(end, { status: 'completed', result: { resultType: 'complete', content: [{ text: 'Computed sum after 0.2s' }] } });
      t.equal(await task.next(new AbortController().signal), end, 'the terminal state again');
    });

    await t.test("without CallOptions.task the caller's extension is not declared upstream, so the tool runs in the call", async (t) => {
      const call = await client.call(caller, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.05 } });
      const e = await call.next();
      t.match(e, { kind: 'response', message: { result: { content: [{ text: 'Computed result after 0.05s' }] } } });
      const seen = fx
        .stats()
        .recent.filter((r) => r.method === 'tools/call' && r.name === 'slow_compute')
        .at(-1);
      t.same(
        (seen?.envelope?.['io.modelcontextprotocol/clientCapabilities'] as any)?.extensions,
        { 'example.com/other': { on: true } },
        'other extensions stay',
      );
    });

    await t.test('a task-only tool without CallOptions.task answers -32021, an ordinary response', async (t) => {
      const call = await client.call(caller, 'tools/call', { name: 'failing_job', arguments: {} });
      t.match(await call.next(), { kind: 'response', message: { error: { code: -32021 } } });
    });

    await t.test('input inside the task: the upstream keys, tasks/update with only outstanding keys', async (t) => {
      const task = await startTask(t, 'multi_input', {});
      const asked = await nextWith(task, 'input_required');
      t.same(Object.keys(asked.inputRequests ?? {}).sort(), ['confirm', 'name']);
      t.equal(asked.inputRequests!.name!.method, 'elicitation/create');
      t.same(await task.answer({ name: { action: 'accept', content: { name: 'Ada' } }, bogus: { x: 1 } }), ['name']);
      t.same(await task.answer({ name: { action: 'accept', content: { name: 'Bob' } } }), [], 'an answered key is not sent again');
      const after = await task.get();
      t.same(Object.keys(after.inputRequests ?? {}), ['confirm']);
      await task.answer({ confirm: { action: 'accept', content: { confirm: true } } });
      t.match((await toEnd(task)).at(-1), { status: 'completed', result: { content: [{ text: /Ada/ }] } });
    });

    await t.test('two rounds of sampling inside one task', async (t) => {
      const task = await startTask(t, 'sample_twice', {});
      const first = await nextWith(task, 'input_required');
      t.same(Object.keys(first.inputRequests ?? {}), ['draft']);
      t.equal(first.inputRequests!.draft!.method, 'sampling/createMessage');
      await task.answer({ draft: { role: 'assistant', content: { type: 'text', text: 'D' }, model: 'm' } });
      const second = await nextWith(task, 'input_required');
      t.same(Object.keys(second.inputRequests ?? {}), ['polish']);
      await task.answer({ polish: { role: 'assistant', content: { type: 'text', text: 'P' }, model: 'm' } });
      t.match((await toEnd(task)).at(-1), { status: 'completed', result: { content: [{ text: 'Sampled twice: D / P' }] } });
    });

    await t.test('a tool error stays completed; a JSON-RPC error is failed with it', async (t) => {
      t.match((await toEnd(await startTask(t, 'failing_job', {}))).at(-1), { status: 'completed', result: { isError: true } });
      const end = (await toEnd(await startTask(t, 'protocol_error_job', {}))).at(-1)!;
      t.equal(end.status, 'failed');
      t.match(end.error, { code: -32603, message: /Job failed/ });
    });

    await t.test('cancel: acknowledged, the work stops, the task ends cancelled; after the end: terminal', async (t) => {
      const task = await startTask(t, 'gated_job', { gate: `g-${responseMode}-1` });
      await until(fx, (s) => (s.gatesWaiting[`g-${responseMode}-1`] ?? 0) === 1);
      t.equal(await task.cancel(), 'cancelled');
      t.ok(fx.stats().cancellations.some((c) => c.taskId === task.id && c.via === 'tasks/cancel'));
      t.equal((await toEnd(task)).at(-1)!.status, 'cancelled');
      const done = await startTask(t, 'slow_compute', { seconds: 0 });
      await toEnd(done);
      t.equal(await done.cancel(), 'terminal');
    });

    await t.test('a task the upstream does not know: UpstreamTaskLostError; cancel says unknown', async (t) => {
      const task = new ModernUpstreamTask(client, caller, {
        resultType: 'task',
        taskId: 'no-such-task',
        status: 'working',
        ttlMs: null,
        createdAt: new Date(0).toISOString(),
        lastUpdatedAt: new Date(0).toISOString(),
      });
      t.teardown(() => task.release());
      await t.rejects(task.get(), UpstreamTaskLostError);
      await t.rejects(task.next(new AbortController().signal), UpstreamTaskLostError);
      t.equal(await task.cancel(), 'unknown');
    });

    await t.test('taskAsCall: the upstream key rides as a hint, the answer goes into the task', async (t) => {
      const call = taskAsCall(await startTask(t, 'confirm_delete', { filename: 'a.txt' }));
      const ask = await call.next();
      if (ask.kind !== 'request') return t.fail(`expected a request, got ${ask.kind}`);
      t.match(ask.message, { method: 'elicitation/create', params: { message: 'Delete a.txt?', _meta: { 'mcp-tasks-gateway/inputKey': 'confirm' } } });
      await call.respond(ask.message.id, { result: { action: 'accept', content: { confirm: true } } });
      t.match(await call.next(), { kind: 'response', message: { result: { content: [{ text: 'Deleted a.txt' }] } } });
    });

    await t.test('taskAsCall: a refused sampling request ends the call with the error and cancels the task', async (t) => {
      const task = await startTask(t, 'sample_once', {});
      const call = taskAsCall(task);
      const ask = await call.next();
      if (ask.kind !== 'request') return t.fail(`expected a request, got ${ask.kind}`);
      await call.respond(ask.message.id, { error: { code: -32601, message: 'no sampling here' } });
      t.match(await call.next(), { kind: 'response', message: { error: { code: -32601 } } });
      await until(fx, (s) => s.cancellations.some((c) => c.taskId === task.id));
    });

    await t.test('hideTask over callNow: a task the caller never sees answers like a plain call', async (t) => {
      const call = hideTask(callNow(client, caller, 'tools/call', { name: 'ask_twice', arguments: {} }, undefined, { task: {} }));
      const events: CallEvent[] = [];
      for (;;) {
        const e = await call.next();
        events.push(e);
        if (e.kind === 'request') {
          const answer =
            e.message.params?._meta && (e.message.params._meta as any)['mcp-tasks-gateway/inputKey'] === 'step1' ? { name: 'Ada' } : { color: 'green' };
          await call.respond(e.message.id, { result: { action: 'accept', content: answer } });
          continue;
        }
        break;
      }
      t.same(
        events.map((e) => e.kind),
        ['request', 'request', 'response'],
      );
      t.match(events.at(-1), { kind: 'response', message: { result: { content: [{ text: 'Ada likes green' }] } } });
    });
  });
}

t.test('notifications/tasks on subscriptions/listen bring the states, so polling slows down', async (t) => {
  // A poll interval far longer than the task: only the listen can bring its states in time.
  const fx = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 60_000 });
  const client = new ModernUpstreamClient({ name: 'up', url: fx.url, timeoutMs: 30_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    await fx.close();
  });
  const e = await (await client.call(caller, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'n.txt' } }, undefined, { task: {} })).next();
  if (e.kind !== 'task') return t.fail(`expected a task, got ${e.kind}`);
  const task = e.task;
  t.teardown(() => task.release());
  const polls = () => fx.stats().methods['tasks/get'] ?? 0;
  const before = polls();
  const asked = await nextWith(task, 'input_required');
  t.same(Object.keys(asked.inputRequests ?? {}), ['confirm']);
  await task.answer({ confirm: { action: 'accept', content: { confirm: true } } });
  t.match((await toEnd(task)).at(-1), { status: 'completed', result: { content: [{ text: 'Deleted n.txt' }] } });
  t.equal(polls(), before + 1, 'one tasks/get when the listen opened; every later state came as a notification');
});

/**
 * A server that breaks the extension's rule (a task for a request that did not declare it): a fake, because no real
 * server here can be made to produce it.
 */
async function ruleBreakingServer(): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const m = JSON.parse(body);
      const result =
        m.method === 'tools/list'
          ? { resultType: 'complete', tools: [] }
          : { resultType: 'task', taskId: 't-1', status: 'working', ttlMs: null, createdAt: '2026-08-01T00:00:00Z', lastUpdatedAt: '2026-08-01T00:00:00Z' };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: m.id, result }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, close: () => new Promise((r) => server.close(() => r())) };
}

t.test('a task nobody asked for is an invalid response: the call fails', async (t) => {
  const up = await ruleBreakingServer();
  const client = new ModernUpstreamClient({ name: 'up', url: up.url, timeoutMs: 5_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    await up.close();
  });
  const unasked = await client.call(caller, 'tools/call', { name: 'x', arguments: {} });
  t.match(await unasked.next(), { kind: 'failure', error: { message: /task it was not allowed to create/ } });
  const notATool = await client.call(caller, 'prompts/get', { name: 'x' }, undefined, { task: {} });
  t.match(await notATool.next(), { kind: 'failure' }, 'only tools/call may create a task');
  const asked = await client.call(caller, 'tools/call', { name: 'x', arguments: {} }, undefined, { task: {} });
  const e = await asked.next();
  t.equal(e.kind, 'task');
  if (e.kind === 'task') {
    t.equal(e.task.id, 't-1');
    e.task.release();
  }
});
