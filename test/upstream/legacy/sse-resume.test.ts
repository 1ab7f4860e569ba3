/**
 * The gateway as a 2025-11-25 client resumes the streams a server closes to be polled (2025-11-25 basic/transports
 * §Sending Messages to the Server item 6, §Resumability and Redelivery): after an event with an id, a closed stream is
 * resumed with GET and `Last-Event-ID`, no earlier than the server's `retry`, for a call's answer, a `tasks/result` and
 * the session's GET stream; a refused resumption, or one that keeps bringing nothing, fails the call with a message
 * that says so. The upstream is the real polling fixture (test/fixtures/polling-legacy-server.ts: SDK 1.32.2 sessions on
 * the SDK transport with an event store), in front of it the real gateway, driven by a raw modern client.
 */
import t, { type Test } from 'tap';
import type { JsonRpcNotification } from '../../../src/translate/index.js';
import { ERROR_CATALOG } from '../../../src/translate/index.js';
import { LegacySession } from '../../../src/upstream/legacy/session.js';
import { MAX_RESUME_ATTEMPTS } from '../../../src/upstream/legacy/sse-resume.js';
import { startPollingFixture, type PollingFixture, type PollingFixtureOptions, type StreamEvent } from '../../fixtures/polling-legacy-server.js';
import { startGateway } from '../../helpers/gateway.js';
import { MODERN, envelope, post } from '../../helpers/modern.js';
import { createTask, pollToEnd } from '../../helpers/task-helpers.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** The fixture's `retry` in these tests (ms). */
const RETRY_MS = 300;
/** How early a reconnection may come, for timer granularity (the conformance sse-retry scenario allows 50 ms). */
const EARLY_TOLERANCE_MS = 50;
/** A hang fails the test, it never passes it. */
const BOUND_MS = 10_000;

/** The polling fixture and a real gateway in front of it. */
async function stack(t: Teardown, opts: PollingFixtureOptions = {}): Promise<{ fixture: PollingFixture; url: string }> {
  const fixture = await startPollingFixture({ retryMs: RETRY_MS, ...opts });
  const gateway = await startGateway({ upstreams: [{ name: 'polling', path: '/mcp', url: fixture.url }] });
  t.teardown(async () => {
    await gateway.close();
    await fixture.close();
  });
  return { fixture, url: gateway.url };
}

/** The catalog's message for GW_UPSTREAM_UNAVAILABLE with `detail`, as the client must see it. */
function unavailable(detail: string): { code: number; message: string } {
  const spec = ERROR_CATALOG.GW_UPSTREAM_UNAVAILABLE;
  return { code: spec.rpc, message: spec.message.replace('%s', detail) };
}

/** The fixture's events of `kind`. */
function ofKind(fixture: PollingFixture, kind: StreamEvent['kind']): StreamEvent[] {
  return fixture.events.filter((e) => e.kind === kind);
}

/**
 * Checks that each resumption came at least the server's retry (less the tolerance) after the stream it resumes
 * ended: the close before it, or the resumption before it (whose stream the `empty` fixture ends at once).
 */
function pacedByRetry(t: Test, fixture: PollingFixture): void {
  let ended: StreamEvent | undefined;
  for (const e of fixture.events) {
    if (e.kind === 'resume' && ended)
      t.ok(
        e.at - ended.at >= RETRY_MS - EARLY_TOLERANCE_MS,
        `resumed ${Math.round(e.at - ended.at)} ms after the stream ended, not before the retry of ${RETRY_MS} ms`,
      );
    ended = e;
  }
}

/** A modern tools/call of `test_tool_with_progress` through the gateway whose SSE answer is read as it arrives. */
async function streamedCall(url: string, token: string): Promise<{ until(text: string): Promise<string>; abort(): void }> {
  const stop = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': 'tools/call',
      'mcp-name': 'test_tool_with_progress',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'test_tool_with_progress', arguments: {}, _meta: { ...envelope(), progressToken: token } },
    }),
    signal: stop.signal,
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let seen = '';
  return {
    /** What arrived until `text` did (or the answer ended). */
    async until(text: string): Promise<string> {
      while (!seen.includes(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += decoder.decode(value, { stream: true });
      }
      return seen;
    },
    abort: () => stop.abort(),
  };
}

t.test('a tools/call whose stream the server closes completes on the resumed stream, progress before and after relayed', async (t) => {
  const { fixture, url } = await stack(t);
  const r = await post(url, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: { ...envelope(), progressToken: 'tok' } });
  t.equal(r.status, 200);
  t.same(r.body.result.content, [{ type: 'text', text: 'tok' }], 'the result came on the resumed stream');
  t.same(
    r.messages.map((m) => [m.method, m.params.progress]),
    [
      ['notifications/progress', 0],
      ['notifications/progress', 50],
      ['notifications/progress', 100],
    ],
    'progress 0 (before the close) and 50, 100 (after it, replayed) all reached the client',
  );
  t.same(
    ofKind(fixture, 'closed').map((e) => e.what),
    ['tools/call'],
    'the server closed the call stream',
  );
  const resumes = ofKind(fixture, 'resume');
  t.equal(resumes.length, 1, 'one GET with Last-Event-ID resumed it');
  t.match(resumes[0]?.what, /\S/, 'the GET carried the id of the last event received');
  t.equal(fixture.posted.filter((m) => m === 'tools/call').length, 1, 'the call was not POSTed again');
  pacedByRetry(t, fixture);
});

t.test('a tasks/result stream the server closes is resumed, and the task ends with its result', async (t) => {
  const { fixture, url } = await stack(t, { tasks: 'native' });
  const task = await createTask(url, 'slow_compute', { seconds: 0.5, label: 'resumed' });
  const states = await pollToEnd(url, task.taskId);
  const last = states.at(-1);
  t.equal(last.status, 'completed', 'the task completed');
  t.match(JSON.stringify(last.result), /resumed/, "the task's payload came through");
  t.ok(
    ofKind(fixture, 'closed').some((e) => e.what === 'tasks/result'),
    'the server closed the tasks/result stream',
  );
  t.ok(ofKind(fixture, 'resume').length >= 1, 'it was resumed with GET and Last-Event-ID');
  t.equal(fixture.posted.filter((m) => m === 'tasks/result').length, 1, 'tasks/result was not POSTed again');
  pacedByRetry(t, fixture);
});

t.test('a call dropped by its client is not resumed', async (t) => {
  const { fixture, url } = await stack(t);
  // The client goes away once the progress sent before the close reached it: the call ends with it.
  const gone = await streamedCall(url, 'gone');
  t.match(await gone.until('"progress":0'), /"progress":0/, 'the progress sent before the close arrived');
  gone.abort();
  // A later call resumed in full: a resumption of the dropped call would have come before its own (the dropped
  // call's stream was closed first, and both wait the same retry).
  const r = await post(url, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: { ...envelope(), progressToken: 'kept' } });
  t.same(r.body.result.content, [{ type: 'text', text: 'kept' }]);
  t.equal(ofKind(fixture, 'closed').length, 2, 'both call streams were closed by the server');
  t.equal(ofKind(fixture, 'resume').length, 1, 'only the call still wanted was resumed');
});

t.test("the session's GET stream is resumed after the server closes it, and carries what was sent meanwhile", async (t) => {
  const fixture = await startPollingFixture({ retryMs: RETRY_MS });
  const session = new LegacySession({
    url: fixture.url,
    headers: {},
    capabilities: {},
    clientInfo: { name: 'sse-resume', version: 'test' },
    timeoutMs: BOUND_MS,
    watchStrays: true,
  });
  t.teardown(async () => {
    await session.close();
    await fixture.close();
  });
  await session.initialize();
  const heard: unknown[] = [];
  const after = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the GET stream did not resume within ${BOUND_MS} ms`)), BOUND_MS);
    session.onStreamNotification((n: JsonRpcNotification | undefined) => {
      heard.push(n?.params?.data ?? n);
      if (n?.params?.data === 'after' || n === undefined) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  await fixture.pollSessionStreams();
  await after;
  t.same(heard, ['before', 'after'], 'the notification sent while the stream was closed came on the resumed stream');
  t.equal(ofKind(fixture, 'resume').length, 1, 'one GET with Last-Event-ID');
});

t.test('a refused resumption fails the call at once with a message saying so', async (t) => {
  const { fixture, url } = await stack(t, { resume: 'refuse' });
  const r = await post(url, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: { ...envelope(), progressToken: 'tok' } });
  t.same(r.body.error, unavailable('upstream closed the stream before answering; the upstream refused to resume it (HTTP 405 to GET with Last-Event-ID)'));
  t.same(
    r.messages.map((m) => m.params.progress),
    [0],
    'what came before the close was relayed',
  );
  t.equal(ofKind(fixture, 'resume').length, 1, 'one resumption was asked, none after the refusal');
});

t.test('an upstream gone while its stream waits to be resumed fails the call at the first reconnection, saying so', async (t) => {
  const { fixture, url } = await stack(t);
  // Once the progress sent before the close came through, the gateway holds the stream's event id.
  const call = await streamedCall(url, 'tok');
  await call.until('"progress":0');
  await fixture.close();
  const reply = await call.until('"error"');
  const r = {
    body: JSON.parse(
      reply
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .at(-1)!
        .slice(5),
    ),
  };
  t.match(r.body.error, {
    code: ERROR_CATALOG.GW_UPSTREAM_UNAVAILABLE.rpc,
    // The client is told what failed, never where the upstream is (docs/errors.md).
    message: /^Upstream unavailable: upstream closed the stream before answering; resuming it failed: upstream unreachable: connect ECONNREFUSED$/,
  });
  t.equal(ofKind(fixture, 'resume').length, 0, 'nothing listened for the resumption');
});

t.test('a resumption that keeps bringing nothing fails after the bounded attempts', async (t) => {
  const { fixture, url } = await stack(t, { resume: 'empty' });
  const r = await post(url, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: { ...envelope(), progressToken: 'tok' } });
  t.same(
    r.body.error,
    unavailable(
      `upstream closed the stream before answering; resuming it (Last-Event-ID ${ofKind(fixture, 'resume')[0]?.what}) failed ${MAX_RESUME_ATTEMPTS} times in a row`,
    ),
  );
  t.equal(ofKind(fixture, 'resume').length, MAX_RESUME_ATTEMPTS, `${MAX_RESUME_ATTEMPTS} resumptions, then no more`);
  pacedByRetry(t, fixture);
});

t.test("a response the server sends on the session's GET stream instead of the call's reaches the call", async (t) => {
  // A raw 2025-11-25 server (its wire written out): the conformance suite's sse-retry server answers a call it closed
  // on whichever GET comes next (2025-11-25 says MUST NOT unless resuming, yet clients meet it); here the call's
  // stream gets its priming event with a long retry, the response goes on the session's GET stream, the POST ends.
  const { createServer } = await import('node:http');
  const gets = new Map<string, import('node:http').ServerResponse>();
  const getWaiters = new Map<string, () => void>();
  let resumes = 0;
  let sessions = 0;
  const server = createServer((req, res) => {
    const sid = String(req.headers['mcp-session-id'] ?? '');
    if (req.method === 'GET') {
      if (req.headers['last-event-id']) resumes++;
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': open\n\n');
      gets.set(sid, res);
      getWaiters.get(sid)?.();
      return;
    }
    if (req.method === 'DELETE') return void res.writeHead(200).end();
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text);
      const json = (status: number, payload: unknown, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(payload));
      if (body.method === 'initialize') {
        const result = { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'get-answers', version: '1' } };
        return json(200, { jsonrpc: '2.0', id: body.id, result }, { 'mcp-session-id': `s${++sessions}` });
      }
      if (body.id === undefined) return void res.writeHead(202).end();
      if (!sid) return json(400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: no valid session' } });
      if (body.method === 'tools/list')
        return json(200, { jsonrpc: '2.0', id: body.id, result: { tools: [{ name: 'slow', inputSchema: { type: 'object' } }] } });
      if (body.method !== 'tools/call') return json(200, { jsonrpc: '2.0', id: body.id, result: {} });
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write('id: e1\nretry: 5000\ndata: \n\n');
      const answer = () => {
        gets
          .get(sid)
          ?.write(`id: e2\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { content: [{ type: 'text', text: 'from the GET stream' }] } })}\n\n`);
        res.end();
      };
      if (gets.has(sid)) answer();
      else getWaiters.set(sid, answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const upstreamUrl = `http://127.0.0.1:${(server.address() as import('node:net').AddressInfo).port}/mcp`;
  const { url, close } = await startGateway({ upstreams: [{ name: 'raw', path: '/mcp', url: upstreamUrl, era: 'legacy' }] });
  t.teardown(async () => {
    await close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const r = await post(url, 'tools/call', { name: 'slow', arguments: {}, _meta: envelope() });
  t.same(r.body.result?.content, [{ type: 'text', text: 'from the GET stream' }], 'the call got the response sent on the GET stream');
  t.equal(resumes, 0, 'and did not wait out the retry to resume a stream that had nothing left');
});
