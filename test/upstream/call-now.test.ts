/**
 * callNow against real upstreams on loopback: the modern fixture in plain-JSON response mode (headers only with the
 * result) and in SSE mode, and the legacy fixture. The call exists before the upstream has answered, cancelling it
 * then reaches the upstream, and a request that cannot be sent becomes the call's failure.
 */
import t from 'tap';
import {
  callNow,
  LegacyUpstreamClient,
  ModernUpstreamClient,
  UpstreamUnavailableError,
  type UpstreamCaller,
  type UpstreamClient,
} from '../../src/upstream/index.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';

const CLIENT_INFO = { name: 'gateway-under-test', version: '0.0.1' };
const caller: UpstreamCaller = { capabilities: { elicitation: {} }, clientInfo: { name: 'ide', version: '9' } };

/** Resolves once the fixture has seen `n` more calls of the tool than `before` (its stats are all it offers). */
async function untilCalled(fx: { stats(): { toolCalls: Record<string, number> } }, tool: string, before: number): Promise<void> {
  while ((fx.stats().toolCalls[tool] ?? 0) <= before) await new Promise((r) => setTimeout(r, 10));
}

function modernClient(url: string): UpstreamClient {
  return new ModernUpstreamClient({ name: 'up', url, timeoutMs: 30_000, clientInfo: CLIENT_INFO });
}

for (const responseMode of ['json', 'sse'] as const) {
  t.test(`modern upstream, ${responseMode} responses`, async (t) => {
    const fx = await startModernFixture({ mode: 'modern', responseMode });
    t.teardown(() => fx.close());
    const client = modernClient(fx.url);
    t.teardown(() => client.close());

    await t.test('the call exists before the upstream answers, and reads to its response', async (t) => {
      const call = callNow(client, caller, 'tools/call', { name: 'test_cancellable_wait', arguments: { maxMs: 300 } });
      t.equal(call.finished, false);
      t.equal(await call.nextUnless(0, undefined), undefined, 'nothing yet, and no wait for headers');
      const e = await call.next();
      t.equal(e.kind, 'response');
      t.match(e.kind === 'response' ? e.message : {}, { result: { content: [{ text: 'waited 300 ms' }] } });
      t.equal(call.finished, true);
    });

    await t.test('cancel() before the upstream answered aborts the request upstream', async (t) => {
      const cancelled = fx.nextCancellation();
      const before = fx.stats().toolCalls.test_cancellable_wait ?? 0;
      const call = callNow(client, caller, 'tools/call', { name: 'test_cancellable_wait', arguments: { maxMs: 30_000 } });
      // The upstream must have the request before it can see it cancelled.
      await untilCalled(fx, 'test_cancellable_wait', before);
      call.cancel('client went away');
      t.equal(await cancelled, 'test_cancellable_wait');
      const e = await call.next();
      t.equal(e.kind, 'failure');
      t.match(e.kind === 'failure' ? e.error.message : '', /client went away/);
    });
  });
}

t.test('the caller signal aborts a call that is not answered yet', async (t) => {
  const fx = await startModernFixture({ mode: 'modern', responseMode: 'json' });
  t.teardown(() => fx.close());
  const client = modernClient(fx.url);
  t.teardown(() => client.close());
  const cancelled = fx.nextCancellation();
  const ac = new AbortController();
  const call = callNow(client, caller, 'tools/call', { name: 'test_cancellable_wait', arguments: { maxMs: 30_000 } }, ac.signal);
  await untilCalled(fx, 'test_cancellable_wait', 0);
  ac.abort(new Error('deadline'));
  t.equal(await cancelled, 'test_cancellable_wait');
  const e = await call.next();
  t.equal(e.kind, 'failure');
});

t.test('a request that cannot be sent becomes the failure event', async (t) => {
  const fx = await startModernFixture({ mode: 'modern' });
  const url = fx.url;
  await fx.close();
  const client = modernClient(url);
  t.teardown(() => client.close());
  const call = callNow(client, caller, 'tools/call', { name: 'test_simple_text', arguments: {} });
  const e = await call.next();
  t.equal(e.kind, 'failure');
  t.ok(e.kind === 'failure' && e.error instanceof UpstreamUnavailableError, 'unreachable');
  t.equal(await call.next(), e, 'the final event again');
});

t.test('legacy upstream: input requests are forwarded and answered, cancel reaches the upstream', async (t) => {
  const fx = await startLegacyFixture({ tasks: 'sync' });
  t.teardown(() => fx.close());
  const client = new LegacyUpstreamClient('up', { url: fx.url, staticHeaders: {}, timeoutMs: 30_000, max: 10, idleMs: 60_000, clientInfo: CLIENT_INFO });
  t.teardown(() => client.close());

  const call = callNow(client, caller, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } });
  const ask = await call.next();
  t.equal(ask.kind, 'request');
  if (ask.kind !== 'request') return;
  t.equal(ask.message.method, 'elicitation/create');
  await call.respond(ask.message.id, { result: { action: 'accept', content: { confirm: true } } });
  const e = await call.next();
  t.match(e.kind === 'response' ? e.message : {}, { result: { content: [{ text: 'Deleted a.txt' }] } });

  const slow = callNow(client, caller, 'tools/call', { name: 'gated_job', arguments: { gate: 'never' } });
  await waitForStats(fx, (s) => s.running.gated_job === 1);
  slow.cancel('stop');
  await waitForStats(fx, (s) => s.cancellations.some((c) => c.tool === 'gated_job' && c.via === 'notifications/cancelled'));
  t.equal((await slow.next()).kind, 'failure');
});
