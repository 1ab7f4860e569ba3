/**
 * Graceful shutdown on SIGTERM, against REAL gateway processes in front of a real legacy fixture.
 * Memory store: wrapped tasks still running when the grace ends fail with the catalog's GW_TASK_SHUT_DOWN, and the
 * clients still connected read it before the exit (a 2026-07-28 `subscriptions/listen` on the task, a 2025-11-25 client
 * blocked in `tasks/result`); a request in flight that finishes inside the grace gets its real answer; requests during
 * the drain are refused; the process exits 0.
 * Redis (a real redis-server, two instances with one secret): the instance stopped mid-task hands the task's lease over
 * and the other takes the task over at once and completes it.
 */
import http from 'node:http';
import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { startGatewayProcess, TEST_SECRET } from '../helpers/gateway-process.js';
import { envelope, MODERN, readReply } from '../helpers/modern.js';
import { serverBinaryMissing, startRedis } from '../helpers/redis-server.js';
import { openListen, SseReader } from '../helpers/sse-reader.js';
import { createTask, DECLARING, pollToEnd } from '../helpers/task-helpers.js';
import { LEGACY_HEADERS } from '../helpers/legacy-face-stack.js';

/** Waits for something that must happen give up after this long (a failed test, never a pass). */
const BOUND_MS = 20_000;
/** The catalog's message for a task the shutdown ended. */
const SHUT_DOWN = /The gateway shut down before the task finished/;

// Gateway processes take a few seconds each to start on a loaded machine.
t.setTimeout(300_000);

const fixture = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 0 });
t.teardown(() => fixture.close());

/** One modern request over `agent` (node:http, so that the test controls connection reuse). */
function modernOver(
  agent: http.Agent,
  url: string,
  method: string,
  params: Record<string, unknown>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: any }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: envelope(DECLARING) } });
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'mcp-protocol-version': MODERN,
          'mcp-method': method,
          ...(typeof params.name === 'string' ? { 'mcp-name': params.name } : {}),
          'content-length': String(Buffer.byteLength(body)),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

t.test('memory store: SIGTERM drains, fails running wrapped tasks clearly where clients see it, and exits 0', async (t) => {
  const gw = await startGatewayProcess({
    name: 'drain',
    config: {
      // Long enough for the in-flight request below; the gated tasks never finish, so the drain ends with the grace.
      server: { shutdownGraceMs: 4_000 },
      tasks: { pollBurst: 1_000_000, pollIntervalMs: 50 },
      upstreams: [
        { name: 'wrapped', path: '/wrapped', url: fixture.url, era: 'legacy', tools: { gated_job: { task: 'always' }, confirm_delete: { task: 'always' } } },
        { name: 'plain', path: '/plain', url: fixture.url, era: 'legacy' },
      ],
    },
  });
  t.teardown(() => gw.kill('SIGKILL'));
  const wrappedUrl = gw.url('wrapped');

  // A modern client watches a running wrapped task on a listen stream.
  const created = await createTask(wrappedUrl, 'gated_job', { gate: 'never-modern' });
  const taskId = created.taskId as string;
  await waitForStats(fixture, (s) => s.gatesWaiting['never-modern'] === 1, BOUND_MS);
  const { stream } = await openListen(t, wrappedUrl, 'watch', { taskIds: [taskId] }, { capabilities: DECLARING });
  await stream.until((m) => m.method === 'notifications/subscriptions/acknowledged', BOUND_MS);

  // A legacy client blocks in tasks/result on a wrapped task waiting for its answer (the question on that stream
  // says the wait has begun).
  const init = await fetch(wrappedUrl, {
    method: 'POST',
    headers: LEGACY_HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {}, tasks: {} }, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await init.body?.cancel();
  const session = init.headers.get('mcp-session-id') as string;
  const legacy = { ...LEGACY_HEADERS, 'mcp-session-id': session };
  await fetch(wrappedUrl, { method: 'POST', headers: legacy, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) }).then((r) =>
    r.body?.cancel(),
  );
  const call = await readReply(
    await fetch(wrappedUrl, {
      method: 'POST',
      headers: legacy,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: 'kept.txt' }, task: {} } }),
    }),
  );
  const legacyTaskId = call.body?.result?.task?.taskId as string;
  t.type(legacyTaskId, 'string', 'the legacy client got a task', { body: call.body });
  const waiting = await fetch(wrappedUrl, {
    method: 'POST',
    headers: legacy,
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId: legacyTaskId } }),
  });
  const resultStream = new SseReader(waiting);
  t.teardown(() => resultStream.cancel());
  await resultStream.until((m) => m.method === 'elicitation/create', BOUND_MS);

  // A plain request in flight over a keep-alive connection.
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  t.teardown(() => agent.destroy());
  const inFlight = modernOver(agent, gw.url('plain'), 'tools/call', { name: 'gated_job', arguments: { gate: 'in-flight' } });
  await waitForStats(fixture, (s) => s.gatesWaiting['in-flight'] === 1, BOUND_MS);

  const since = gw.logs().length;
  gw.signal('SIGTERM');
  await gw.waitForLog((e) => typeof e.msg === 'string' && e.msg.startsWith('shutting down'), since, BOUND_MS);

  t.test('a new connection during the drain is refused', async (t) => {
    const fresh = await fetch(wrappedUrl, { method: 'POST', headers: { connection: 'close' } }).then(
      (r) => `HTTP ${r.status}`,
      () => 'refused',
    );
    t.equal(fresh, 'refused', 'the listening socket is closed');
  });

  t.test('the request in flight finishes inside the grace with its real answer; the next one on its connection gets 503', async (t) => {
    t.equal(fixture.releaseGate('in-flight'), 1);
    const answered = await inFlight;
    t.equal(answered.status, 200, { body: answered.body });
    t.match(JSON.stringify(answered.body?.result), /released in-flight/, 'the real answer');
    // The connection stays open after the answer (keep-alive): the next request on it reaches the drain's refusal.
    const next = await modernOver(agent, gw.url('plain'), 'tools/list', {});
    t.equal(next.status, 503, 'refused with 503', { next });
    t.equal(next.headers.connection, 'close', 'and Connection: close');
    t.equal(next.body?.error?.message, 'Gateway shutting down', 'a catalog JSON-RPC answer');
  });

  t.test('the listen stream hears the running task fail with the clear error', async (t) => {
    const failed = await stream.until((m) => m.method === 'notifications/tasks' && m.params?.taskId === taskId && m.params?.status === 'failed', BOUND_MS);
    t.match(JSON.stringify(failed.match.params), SHUT_DOWN, { params: failed.match.params });
  });

  t.test('the legacy client blocked in tasks/result gets the failure as its answer', async (t) => {
    const answer = await resultStream.until((m) => m.id === 2, BOUND_MS);
    t.match(JSON.stringify(answer.match), SHUT_DOWN, { answer: answer.match });
  });

  t.test('the process exits 0', async (t) => {
    const exit = await gw.exited;
    t.equal(exit.code, 0, { output: gw.output().slice(-3000) });
    t.ok(
      gw.logs().some((e) => e.msg === 'shut down'),
      'it said so',
    );
  });
});

t.test('a second signal during the drain exits at once', async (t) => {
  const gw = await startGatewayProcess({
    name: 'twice',
    config: {
      server: { shutdownGraceMs: 600_000 },
      upstreams: [{ name: 'wrapped', path: '/mcp', url: fixture.url, era: 'legacy', tools: { gated_job: { task: 'always' } } }],
    },
  });
  t.teardown(() => gw.kill('SIGKILL'));
  await createTask(gw.url('wrapped'), 'gated_job', { gate: 'never-twice' });
  await waitForStats(fixture, (s) => s.gatesWaiting['never-twice'] === 1, BOUND_MS);
  const since = gw.logs().length;
  gw.signal('SIGTERM');
  await gw.waitForLog((e) => typeof e.msg === 'string' && e.msg.startsWith('shutting down'), since, BOUND_MS);
  const exit = await gw.kill('SIGINT');
  t.equal(exit.code, 1, 'a forced exit, not a clean one', { output: gw.output().slice(-2000) });
  t.ok(
    gw.logs().some((e) => e.msg === 'second signal during shutdown: exiting now'),
    'it said why',
  );
});

const missing = serverBinaryMissing();
if (missing) {
  t.test('Redis: SIGTERM hands a running wrapped task over', { skip: `needs a redis-server of its own: ${missing}` }, () => {});
} else {
  t.test('Redis: the instance stopped mid-task hands the task over; the other takes it over at once and completes it', async (t) => {
    const redis = await startRedis();
    t.teardown(() => redis.stop());
    const configFor = (leaseMs: number) => ({
      server: { shutdownGraceMs: 500 },
      store: { kind: 'redis', url: redis.url, keyPrefix: 'shutdown-test:' },
      tasks: { leaseMs, pollIntervalMs: 50, pollBurst: 1_000_000 },
      upstreams: [
        { name: 'retry', path: '/mcp', url: fixture.url, era: 'legacy', tools: { gated_job: { task: 'always', pollIntervalMs: 50, retryOnLoss: true } } },
      ],
    });
    const env = { MCP_GATEWAY_STATE_SECRET: TEST_SECRET };
    // The stopping instance holds a long lease: only the handover lets the other take the task over within the bound.
    const [a, b] = await Promise.all([
      startGatewayProcess({ name: 'A', config: configFor(60_000), env }),
      startGatewayProcess({ name: 'B', config: configFor(1_500), env }),
    ]);
    t.teardown(() => Promise.all([a.kill('SIGKILL'), b.kill('SIGKILL')]));

    const before = fixture.stats().calls.gated_job ?? 0;
    const created = await createTask(a.url('retry'), 'gated_job', { gate: 'handover' });
    await waitForStats(fixture, (s) => s.gatesWaiting.handover === 1, BOUND_MS);
    const exit = await a.kill('SIGTERM');
    t.equal(exit.code, 0, 'A exits 0', { output: a.output().slice(-3000) });
    // B runs the call again (retryOnLoss) as soon as it claims the handed-over lease.
    await waitForStats(fixture, (s) => (s.calls.gated_job ?? 0) === before + 2 && s.gatesWaiting.handover === 1, BOUND_MS);
    fixture.releaseGate('handover');
    const end = (await pollToEnd(b.url('retry'), created.taskId as string)).at(-1);
    t.equal(end.status, 'completed', 'completed, polled through B', { end });
    t.match(JSON.stringify(end), /released handover/);
  });
}
