/**
 * stdio upstreams: a real 2025-11-25 SDK server run as a child process (test/fixtures/stdio-legacy-server.ts) behind a
 * real gateway on loopback, reached by real SDK clients of both eras: plain calls, elicitation (legacy elicitation and
 * MRTR), a wrapped slow tool completing as a task, a crash failing the calls in flight clearly and the child restarted,
 * an HTTP and an stdio upstream side by side, and a command that cannot start harming nothing else.
 */
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import type { Gateway, UpstreamProcess } from '../../src/app.js';
import { ConfigError, parseConfig } from '../../src/config/index.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { bounded, legacyClient, modernClient } from '../helpers/era-clients.js';
import { startGateway } from '../helpers/gateway.js';
import { askNameOverMrtr, envelope, MODERN, post, readReply } from '../helpers/modern.js';
import { LogLines } from '../helpers/log-lines.js';
import { SseReader } from '../helpers/sse-reader.js';
import { StdioHost } from '../../src/upstream/index.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const FIXTURE = fileURLToPath(new URL('../fixtures/stdio-legacy-server.ts', import.meta.url));
/** The fixture as an operator would configure it (tsx resolved from the repository root, given as `cwd`). */
const STDIO = { command: [process.execPath, '--import', 'tsx', FIXTURE], cwd: ROOT };
const CAPS = { elicitation: {} };

interface Running {
  gateway: Gateway;
  base: string;
  log: LogLines;
}

/** A gateway with these upstreams, listening on loopback port 0; closed at teardown. */
async function gatewayWith(t: Test, upstreams: Array<Record<string, unknown>>): Promise<Running> {
  const log = new LogLines();
  const { gateway, origin } = await startGateway(
    { tasks: { pollBurst: 1_000_000 }, upstreams },
    { t, deps: { logger: { level: 'info', stream: log.stream } as never } },
  );
  return { gateway, base: origin, log };
}

/** Resolves once `host` is running again after at least `restarts` restarts. */
function restarted(host: UpstreamProcess, restarts: number): Promise<void> {
  return bounded(
    new Promise<void>((resolve) => {
      const off = host.onChange((s) => {
        if (s.state === 'running' && s.restarts >= restarts) {
          off();
          resolve();
        }
      });
    }),
    'the child restarted',
  );
}

const text = (result: any): string => String(result?.content?.[0]?.text);

t.test('config: exactly one of url and command', async (t) => {
  t.throws(() => parseConfig({ upstreams: [{ name: 'x', url: 'http://127.0.0.1:1/mcp', command: ['node'] }] }), ConfigError);
  t.throws(() => parseConfig({ upstreams: [{ name: 'x' }] }), /exactly one of url .* and command/);
  const ok = parseConfig({ upstreams: [{ name: 'x', command: ['node', 'server.js'], env: { A: '1' } }] });
  t.same(ok.upstreams[0]?.restart, { initialDelayMs: 100, maxDelayMs: 30_000, resetAfterMs: 60_000 }, 'restart defaults');
});

t.test('both client eras through the gateway to an stdio server', async (t) => {
  const { base, log, gateway } = await gatewayWith(t, [{ name: 'local', path: '/mcp', ...STDIO, tools: { slow_compute: { task: 'always' } } }]);
  const url = `${base}/mcp`;
  t.equal(gateway.upstreamProcesses.get('local')?.state === 'closed', false, 'the child is supervised');

  t.test('legacy client: tools/list, tools/call, elicitation, a wrapped slow tool as a task', async (t) => {
    const c = await legacyClient(url);
    t.teardown(() => c.close());
    const tools = await bounded(c.sdk.listTools(), 'tools/list');
    t.same(tools.tools.map((x) => x.name).sort(), ['ask_name', 'change_tools', 'crash', 'echo', 'getenv', 'slow_compute', 'stats', 'whoami']);
    t.equal(text(await bounded(c.sdk.callTool({ name: 'echo', arguments: { text: 'hi' } }), 'echo')), 'hi');
    t.equal(
      text(await bounded(c.sdk.callTool({ name: 'ask_name', arguments: {} }), 'ask_name')),
      'Hello, Ada',
      'the elicitation reached the client and its answer the child',
    );
    t.same(
      c.asked.map((a) => a.message),
      ['What is your name?'],
    );
    const created = await c.start('slow_compute', { durationMs: 200 });
    t.equal(created.status, 'working');
    const outcome = await c.settle(created.taskId);
    t.equal(outcome.status, 'completed');
    t.equal(text(outcome.result), 'computed after 200 ms');
  });

  t.test('modern client: tools/list, tools/call, MRTR elicitation, a wrapped slow tool as a task', async (t) => {
    const listed = await post(url, 'tools/list', {}, { capabilities: CAPS });
    t.equal(listed.status, 200);
    t.ok(listed.body.result.tools.some((x: any) => x.name === 'whoami'));
    const echoed = await post(url, 'tools/call', { name: 'echo', arguments: { text: 'hey' } }, { capabilities: CAPS });
    t.equal(text(echoed.body.result), 'hey');
    await askNameOverMrtr(t, url, CAPS);

    const c = await modernClient(url);
    t.teardown(() => c.close());
    const created = await c.start('slow_compute', { durationMs: 200 });
    const outcome = await c.settle(created.taskId);
    t.equal(outcome.status, 'completed');
    t.equal(text(outcome.result), 'computed after 200 ms');
  });

  t.test("the child's stderr is in the log; the private URL never is", async (t) => {
    const line = await log.waitFor((l) => typeof l.stderr === 'string' && l.stderr.startsWith('stdio-legacy-fixture ready'), 'stderr line');
    t.equal(line.upstream, 'local');
    t.equal(line.level, 30, 'at info: a server logs there, and not only its errors');
    t.notOk(
      log.lines.some((l) => /127\.0\.0\.1:\d+\/[0-9a-f]{32}/.test(JSON.stringify(l))),
      'no log line names the private endpoint',
    );
  });
});

t.test('a 2026-07-28 stdio server: its era learned over stdio, both client eras, a wrapped slow tool as a task', async (t) => {
  const MODERN_FIXTURE = fileURLToPath(new URL('../fixtures/stdio-modern-server.ts', import.meta.url));
  const { base } = await gatewayWith(t, [
    {
      name: 'modern',
      path: '/mcp',
      command: [process.execPath, '--import', 'tsx', MODERN_FIXTURE, '--legacy', 'reject'],
      cwd: ROOT,
      tools: { slow_compute: { task: 'always' } },
    },
  ]);
  const url = `${base}/mcp`;
  const echoed = await post(url, 'tools/call', { name: 'echo', arguments: { text: 'modern' } }, { capabilities: CAPS });
  t.equal(text(echoed.body.result), 'modern');
  const health = (await (await fetch(`${base}/healthz`)).json()) as { upstreams: Array<{ name: string; modern?: boolean; legacy?: boolean }> };
  const eras = health.upstreams.find((u) => u.name === 'modern');
  t.equal(eras?.modern, true, 'server/discover answered over stdio');
  t.notOk(eras && 'legacy' in eras, 'its 2025-11-25 side not asked: no 2025-11-25 client needed it yet');

  const legacy = await legacyClient(url);
  t.teardown(() => legacy.close());
  const asked = (await (await fetch(`${base}/healthz`)).json()) as { upstreams: Array<{ name: string; legacy?: boolean }> };
  t.equal(asked.upstreams.find((u) => u.name === 'modern')?.legacy, false, 'asked for the 2025-11-25 client: its refusal of initialize understood');
  t.equal(
    text(await bounded(legacy.sdk.callTool({ name: 'echo', arguments: { text: 'old' } }), 'legacy echo')),
    'old',
    'a 2025-11-25 client through the legacy face',
  );
  for (const c of [legacy, await modernClient(url)]) {
    if (c !== legacy) t.teardown(() => c.close());
    const created = await c.start('slow_compute', { durationMs: 100 });
    const outcome = await c.settle(created.taskId);
    t.equal(outcome.status, 'completed', `${c.era}: completed`);
    t.equal(text(outcome.result), 'computed after 100 ms', `${c.era}: its result`);
  }
});

t.test("a 2025-11-25 stdio server's task asks inside the task: the question reaches the session that created it", async (t) => {
  const TASKS_FIXTURE = fileURLToPath(new URL('../fixtures/stdio-legacy-tasks-server.ts', import.meta.url));
  const { base } = await gatewayWith(t, [{ name: 'tasks', path: '/mcp', command: [process.execPath, '--import', 'tsx', TASKS_FIXTURE], cwd: ROOT }]);
  // Two clients (two virtual sessions) at once: each question goes to the session whose task it names.
  const clients = [await legacyClient(`${base}/mcp`), await legacyClient(`${base}/mcp`)];
  t.teardown(() => Promise.all(clients.map((c) => c.close())));
  const created = await Promise.all(clients.map((c) => c.start('test_tool_with_task', {})));
  const outcomes = await Promise.all(clients.map((c, i) => c.settle((created[i] as { taskId: string }).taskId)));
  clients.forEach((c, i) => {
    t.equal(outcomes[i]?.status, 'completed', JSON.stringify(outcomes[i]));
    t.equal(c.asked.length, 1, 'asked once');
    t.equal(c.asked[0]?.taskId, created[i]?.taskId, 'inside its own task (related-task _meta)');
  });
});

t.test('a crash fails the calls in flight clearly; the child is restarted and serves again', async (t) => {
  const { base, gateway, log } = await gatewayWith(t, [{ name: 'local', path: '/mcp', ...STDIO, restart: { initialDelayMs: 50 } }]);
  const url = `${base}/mcp`;
  const host = gateway.upstreamProcesses.get('local') as UpstreamProcess;
  const before = text((await post(url, 'tools/call', { name: 'whoami', arguments: {} }, { capabilities: CAPS })).body.result);

  const legacy = await legacyClient(url);
  t.teardown(() => legacy.close());
  const back = restarted(host, 1);
  // Two calls in flight (one per client era), then the crash; every one of them gets the gateway's error.
  const slowLegacy = legacy.sdk.callTool({ name: 'slow_compute', arguments: { durationMs: 60_000 } }).then(
    () => undefined,
    (e: Error) => e,
  );
  const slowModern = post(url, 'tools/call', { name: 'slow_compute', arguments: { durationMs: 60_000 } }, { capabilities: CAPS });
  await log.waitFor((l) => l.upstream === 'local' && String(l.stderr).startsWith('slow_compute started (60000'), 'both calls reached the child', 2);
  const crash = await bounded(post(url, 'tools/call', { name: 'crash', arguments: { code: 3 } }, { capabilities: CAPS }), 'crash');
  const exited = /Upstream process local exited \(code 3\); it is being restarted/;
  t.match(JSON.stringify(crash.body), exited, 'the crashing call itself');
  t.match(JSON.stringify((await bounded(slowModern, 'modern in flight')).body), exited, 'the modern call in flight');
  t.match(String((await bounded(slowLegacy, 'legacy in flight'))?.message), exited, 'the legacy call in flight');

  await back;
  t.equal(host.state, 'running');
  t.ok(host.restarts >= 1);
  const after = await post(url, 'tools/call', { name: 'whoami', arguments: {} }, { capabilities: CAPS });
  t.equal(after.status, 200);
  t.not(text(after.body.result), before, 'a new process answers');
  const again = await legacyClient(url);
  t.teardown(() => again.close());
  t.equal(text(await bounded(again.sdk.callTool({ name: 'echo', arguments: { text: 'back' } }), 'echo after restart')), 'back');
});

t.test('two upstreams on two paths, one HTTP and one stdio, through one gateway', async (t) => {
  const http = await startLegacyFixture({});
  t.teardown(() => http.close());
  // A variable of the gateway's own environment that is not on the inherited list stays the gateway's.
  process.env.STDIO_TEST_GATEWAY_SECRET = 'not for children';
  t.teardown(() => delete process.env.STDIO_TEST_GATEWAY_SECRET);
  const { base } = await gatewayWith(t, [
    { name: 'remote', path: '/a', url: http.url },
    { name: 'local', path: '/b', ...STDIO, env: { FIXTURE_GREETING: 'hello from config' } },
  ]);
  const a = await post(`${base}/a`, 'tools/list', {}, { capabilities: CAPS });
  const b = await post(`${base}/b`, 'tools/list', {}, { capabilities: CAPS });
  t.equal(a.status, 200);
  t.equal(b.status, 200);
  t.notOk(
    a.body.result.tools.some((x: any) => x.name === 'whoami'),
    '/a is the HTTP server',
  );
  t.ok(
    b.body.result.tools.some((x: any) => x.name === 'whoami'),
    '/b is the stdio server',
  );
  const legacyA = await legacyClient(`${base}/a`);
  const legacyB = await legacyClient(`${base}/b`);
  t.teardown(async () => {
    await legacyA.close();
    await legacyB.close();
  });
  t.ok((await bounded(legacyA.sdk.listTools(), 'list a')).tools.length > 0);
  t.equal(text(await bounded(legacyB.sdk.callTool({ name: 'echo', arguments: { text: 'b' } }), 'echo b')), 'b');
  const getenv = async (name: string) => JSON.parse(text(await bounded(legacyB.sdk.callTool({ name: 'getenv', arguments: { name } }), `getenv ${name}`)));
  t.equal(await getenv('FIXTURE_GREETING'), 'hello from config', 'the configured env');
  t.equal(await getenv('PATH'), process.env.PATH, 'PATH inherited');
  t.equal(await getenv('STDIO_TEST_GATEWAY_SECRET'), null, "the rest of the gateway's environment is not");
});

t.test('a command that cannot start: the gateway starts, serves the other upstream, and answers 503 for it', async (t) => {
  const http = await startLegacyFixture({});
  t.teardown(() => http.close());
  const { base, log, gateway } = await gatewayWith(t, [
    { name: 'remote', path: '/a', url: http.url },
    { name: 'broken', path: '/b', command: ['/nonexistent/mcp-server-that-is-not-there'], restart: { initialDelayMs: 60_000, maxDelayMs: 60_000 } },
  ]);
  const line = await log.waitFor((l) => l.upstream === 'broken' && /could not be started/.test(String(l.msg)), 'spawn failure logged');
  t.equal(line.error, 'ENOENT');
  t.equal(gateway.upstreamProcesses.get('broken')?.state, 'restarting');
  // Operators read the command and the OS error, not the private loopback hop's "HTTP 503".
  const down = await log.waitFor((l) => l.upstream === 'broken' && l.msg === 'upstream is down', 'the upstream found down');
  const reason = 'command "/nonexistent/mcp-server-that-is-not-there" could not be started (ENOENT)';
  t.equal(down.reason, reason);
  const health = (await (await fetch(`${base}/healthz`)).json()) as { upstreams: Array<{ name: string; state: string; reason?: string }> };
  t.match(
    health.upstreams.find((u) => u.name === 'broken'),
    { state: 'down', reason },
    '/healthz names the command and the error',
  );
  const ready = await fetch(`${base}/readyz`);
  t.equal(ready.status, 503);
  const report = (await ready.json()) as any;
  t.ok(report.failed.includes('upstream:broken'));
  t.same(
    report.checks.upstreams.find((u: any) => u.name === 'broken'),
    { name: 'broken', state: 'down', reason },
    '/readyz too',
  );
  const a = await post(`${base}/a`, 'tools/list', {}, { capabilities: CAPS });
  t.equal(a.status, 200);
  // Known to be down: 503 with Retry-After, without touching it.
  const raw = await fetch(`${base}/b`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/list' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope(CAPS) } }),
  });
  const body = (await raw.json()) as any;
  t.equal(raw.status, 503, JSON.stringify(body));
  t.match(body.error?.message, /broken is down; retry in \d+ s/);
  t.match(raw.headers.get('retry-after'), /^\d+$/);
});

/** The host alone, reached as the gateway reaches it: raw Streamable HTTP against the real legacy fixture. */
t.test('the host: virtual sessions over the one session of a 2025-11-25 child', async (t) => {
  const warned: Array<{ obj: any; msg: string }> = [];
  const watchers = new Set<() => void>();
  const note = (obj: object, msg: string): void => {
    warned.push({ obj, msg });
    for (const w of [...watchers]) w();
  };
  const log = { debug: () => {}, info: note, warn: note, error: note };
  /** Resolves once a line (info and up) matching `pred` was logged (bounded). */
  const warning = (pred: (w: { obj: any; msg: string }) => boolean, what: string): Promise<void> =>
    bounded(
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (!warned.some(pred)) return;
          watchers.delete(check);
          resolve();
        };
        watchers.add(check);
        check();
      }),
      what,
    );
  const host = await StdioHost.start({ name: 'raw', ...STDIO, restart: { initialDelayMs: 50, maxDelayMs: 1_000, resetAfterMs: 60_000 }, log });
  t.teardown(() => host.close());
  const headers = (sid?: string): Record<string, string> => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    ...(sid ? { 'mcp-session-id': sid } : {}),
  });
  const send = (body: unknown, sid?: string): Promise<Response> => fetch(host.url, { method: 'POST', headers: headers(sid), body: JSON.stringify(body) });
  const rpc = async (id: number | string, method: string, params: Record<string, unknown>, sid?: string) =>
    readReply(await send({ jsonrpc: '2.0', id, method, params }, sid));
  const open = async (): Promise<string> => {
    const res = await send({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    });
    const sid = res.headers.get('mcp-session-id');
    const body = (await res.json()) as any;
    t.equal(body.result?.serverInfo?.name, 'stdio-legacy-fixture');
    t.equal((await send({ jsonrpc: '2.0', method: 'notifications/initialized' }, sid ?? undefined)).status, 202);
    return sid as string;
  };
  const a = await open();
  const b = await open();
  t.not(a, b, 'a fresh virtual session each');
  t.equal(
    text((await rpc(1, 'tools/call', { name: 'stats', arguments: {} }, a)).body.result),
    JSON.stringify({ initialized: 1 }),
    'the child was initialized once',
  );

  t.test('the same request id and progress token in two sessions at once: each gets its own answer and progress', async (t) => {
    const call = (sid: string, ms: number) => rpc(7, 'tools/call', { name: 'slow_compute', arguments: { durationMs: ms }, _meta: { progressToken: 'p' } }, sid);
    const [ra, rb] = await Promise.all([call(a, 150), call(b, 50)]);
    t.equal(text(ra.body.result), 'computed after 150 ms');
    t.equal(text(rb.body.result), 'computed after 50 ms');
    t.equal(ra.body.id, 7);
    t.equal(rb.body.id, 7);
    t.same(
      ra.messages.map((m) => m.params?.progressToken),
      ['p'],
      'progress under the token the client gave',
    );
    t.same(
      rb.messages.map((m) => m.params?.progressToken),
      ['p'],
    );
  });

  t.test("broadcast notifications reach every session's GET stream", async (t) => {
    const streams = await Promise.all(
      [a, b].map(async (sid) => new SseReader(await fetch(host.url, { headers: { ...headers(sid), accept: 'text/event-stream' } }))),
    );
    await rpc(2, 'tools/call', { name: 'change_tools', arguments: {} }, a);
    for (const s of streams) t.equal((await s.next()).method, 'notifications/tools/list_changed');
  });

  t.test('a request of the child tied to no call is refused, and logged; DELETE cancels what a session runs', async (t) => {
    const c = await open();
    // A call that may ask for input runs in another session; the child's elicitation then names neither.
    const slow = rpc(3, 'tools/call', { name: 'slow_compute', arguments: { durationMs: 60_000 } }, c);
    await warning((w) => String(w.obj.stderr).startsWith('slow_compute started (60000'), 'the slow call reached the child');
    const asked = await rpc(3, 'tools/call', { name: 'ask_name', arguments: {} }, a);
    t.notOk(
      asked.messages.some((m) => m.method === 'elicitation/create'),
      'the client was not asked',
    );
    t.match(JSON.stringify(asked.body), /Cannot tie elicitation\/create to a call: several calls are running/);
    t.ok(warned.some((w) => w.obj.method === 'elicitation/create' && /tied to no call/.test(w.msg)));
    t.equal((await fetch(host.url, { method: 'DELETE', headers: headers(c) })).status, 200);
    const ended = await bounded(slow, 'the slow call ended with its session');
    t.equal(ended.body, undefined, 'its stream ended without an answer');
    // With the other call gone, the same question is tied to the one call that may ask.
    const res = await send({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'ask_name', arguments: {} } }, a);
    const reader = new SseReader(res);
    const question = await reader.next();
    t.equal(question.method, 'elicitation/create');
    t.equal((await send({ jsonrpc: '2.0', id: question.id, result: { action: 'accept', content: { name: 'Lin' } } }, a)).status, 202);
    t.equal(text((await reader.next()).result), 'Hello, Lin');
  });

  t.test('unknown and ended sessions are 404; GET without a session is 405; other paths 404', async (t) => {
    t.equal((await rpc(4, 'tools/list', {}, 'no-such-session')).status, 404);
    t.equal((await fetch(host.url, { method: 'GET' })).status, 405);
    t.equal((await fetch(host.url.replace(/\/[0-9a-f]{32}$/, '/mcp'), { method: 'POST', headers: headers(), body: '{}' })).status, 404);
    const c = await open();
    t.equal((await fetch(host.url, { method: 'DELETE', headers: headers(c) })).status, 200);
    t.equal((await rpc(5, 'tools/list', {}, c)).status, 404, 'after DELETE');
  });

  t.test('a crash ends every virtual session; the restarted child is initialized afresh', async (t) => {
    const back = new Promise<void>((resolve) => {
      const off = host.onChange((s) => {
        if (s.state === 'running' && s.restarts >= 1) {
          off();
          resolve();
        }
      });
    });
    const crashed = await rpc(6, 'tools/call', { name: 'crash', arguments: { code: 7 } }, a);
    t.match(crashed.body.error?.message, /Upstream process raw exited \(code 7\)/);
    await bounded(back, 'restart');
    t.equal((await rpc(8, 'tools/list', {}, a)).status, 404, 'the old session is gone');
    t.equal((await rpc(8, 'tools/list', {}, b)).status, 404);
    const d = await open();
    t.equal(
      text((await rpc(9, 'tools/call', { name: 'stats', arguments: {} }, d)).body.result),
      JSON.stringify({ initialized: 1 }),
      'the new process was initialized',
    );
  });

  t.test('close is idempotent and stops the child', async (t) => {
    await Promise.all([host.close(), host.close()]);
    t.equal(host.state, 'closed');
    await t.rejects(fetch(host.url, { method: 'POST', headers: headers(), body: '{}' }));
  });
});

t.test('the host, 2026-07-28 child: a subscriptions/listen stream gets its notifications under its own id; closing it cancels', async (t) => {
  const MODERN_FIXTURE = fileURLToPath(new URL('../fixtures/stdio-modern-server.ts', import.meta.url));
  let sawCancel: () => void = () => {};
  const cancelled = new Promise<void>((resolve) => (sawCancel = resolve));
  const host = await StdioHost.start({
    name: 'raw-modern',
    // One subscription at a time: a second listen is acknowledged only once the child has let the first go.
    command: [process.execPath, '--import', 'tsx', MODERN_FIXTURE, '--legacy', 'reject', '--max-subscriptions', '1'],
    cwd: ROOT,
    restart: { initialDelayMs: 50, maxDelayMs: 1_000, resetAfterMs: 60_000 },
    log: { debug: (_obj: object, msg: string) => /client went away was cancelled/.test(msg) && sawCancel(), warn: () => {}, error: () => {} },
  });
  t.teardown(() => host.close());
  const openListen = async (id: string, signal?: AbortSignal): Promise<SseReader> => {
    const res = await fetch(host.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'subscriptions/listen',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { _meta: envelope({}), notifications: { toolsListChanged: true } } }),
      ...(signal ? { signal } : {}),
    });
    return new SseReader(res);
  };
  const listen = new AbortController();
  const reader = await openListen('my-listen', listen.signal);
  const ack = await reader.next();
  t.equal(ack.method, 'notifications/subscriptions/acknowledged');
  t.equal(ack.params?._meta?.['io.modelcontextprotocol/subscriptionId'], 'my-listen', "the listen's own id, not the host's");
  // A second request while the listen is open: stateless, with the same id as the listen's (the host's ids differ).
  const echoed = await post(host.url, 'tools/call', { name: 'echo', arguments: { text: 'alongside' } }, { id: 'my-listen', capabilities: {} });
  t.equal(text(echoed.body.result), 'alongside');
  const refused = await (await openListen('second')).next();
  t.match(JSON.stringify(refused), /Subscription limit reached/, 'the limit is one');
  listen.abort();
  await bounded(cancelled, 'the host saw the listen stream close');
  // The child was told (notifications/cancelled, written before anything after it): its one subscription is free.
  const third = await openListen('third');
  const again = await third.next();
  t.equal(again.method, 'notifications/subscriptions/acknowledged', JSON.stringify(again));
});
