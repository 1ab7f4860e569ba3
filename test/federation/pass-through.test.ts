/**
 * A federated endpoint passes a 2026-07-28 `tools/call` through to a member that speaks 2026-07-28 when nothing of the
 * gateway is needed (docs/federation.md §Eras and tasks): under the member's own name (body and `Mcp-Name`), its
 * progress and MRTR rounds as the member sends them, a JSON-lines answer (the conformance everything-server's
 * 2026-07-28 framing) re-framed as SSE. What needs the gateway still goes through the modern face: a member task the
 * client could take, a wrapped tool, a client that takes only JSON, an unknown name. Real fixture servers: the modern
 * fixture in its 2026-07-28-only mode, once with JSON lines and once with its own tasks.
 */
import t, { type Test } from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startServerEverything } from '../fixtures/server-everything.js';
import { startGateway } from '../helpers/gateway.js';
import { envelope, post } from '../helpers/modern.js';
import { legacySession } from '../helpers/trace-stack.js';
import { connectLegacy } from '../helpers/modern-stack.js';
import { DECLARING } from '../helpers/task-helpers.js';

/** The `mcp_gateway_requests_total` samples of `tools/call` by upstream and mode, read from `/metrics`. */
async function callCounts(base: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^mcp_gateway_requests_total\{(.*)\} (\d+)$/.exec(line);
    if (!m?.[1]?.includes('method="tools/call"')) continue;
    const upstream = /upstream="([^"]*)"/.exec(m[1])?.[1];
    const mode = /mode="([^"]*)"/.exec(m[1])?.[1];
    const key = `${upstream} ${mode}`;
    out[key] = (out[key] ?? 0) + Number(m[2]);
  }
  return out;
}

/** Checks how many `tools/call` each upstream and mode counted since the last check (or since it was made). */
async function callCounter(t: Test, url: string): Promise<(what: string, want: Record<string, number>) => Promise<void>> {
  const base = url.replace(/\/mcp$/, '');
  let before = await callCounts(base);
  return async (what, want) => {
    const now = await callCounts(base);
    const delta: Record<string, number> = {};
    for (const [k, v] of Object.entries(now)) if (v !== (before[k] ?? 0)) delta[k] = v - (before[k] ?? 0);
    t.strictSame(delta, want, what);
    before = now;
  };
}

t.test('a federated 2026-07-28 call passes through to its 2026-07-28 member unless it needs the gateway', async (t) => {
  const lines = await startModernFixture({ mode: 'modern', jsonLines: true });
  t.teardown(() => lines.close());
  const tasks = await startModernFixture({ mode: 'modern', tasks: 'native' });
  t.teardown(() => tasks.close());
  const gw = await startGateway(
    {
      upstreams: [
        { name: 'a', url: lines.url, path: '/mcp', expose: { namespace: 'a' }, timeoutMs: 1500 },
        { name: 'b', url: tasks.url, path: '/mcp', expose: { namespace: 'b' }, tools: { test_simple_text: { task: 'always' } } },
      ],
    },
    { t },
  );
  const counted = await callCounter(t, gw.url);

  // A plain call: the member gets its own name, in the body and in Mcp-Name (its SDK refuses a mismatch with -32020).
  const simple = await post(gw.url, 'tools/call', { name: 'a_test_simple_text', arguments: {} });
  t.equal(simple.status, 200);
  t.strictSame(simple.body.result?.content, [{ type: 'text', text: 'This is a simple text response for testing.' }], 'the member answered');
  t.equal(lines.stats().recent.at(-1)?.name, 'test_simple_text', 'the member saw its own name');
  await counted('passed through, counted under the member', { 'a passthrough': 1 });

  // A JSON-lines answer with progress: the client reads an SSE stream, the progress first, the result last.
  const progress = await post(gw.url, 'tools/call', { name: 'a_test_tool_with_progress', arguments: {}, _meta: { ...envelope(), progressToken: 'p1' } });
  t.match(progress.contentType, /^text\/event-stream/, 'JSON lines re-framed as SSE');
  t.strictSame(
    progress.messages.map((m: any) => m.params?.progress),
    [0, 50, 100],
    "the member's progress, in order",
  );
  t.strictSame(progress.body.result?.content, [{ type: 'text', text: 'p1' }], "then the result, with the client's own token");
  await counted('passed through', { 'a passthrough': 1 });

  // An MRTR round: the member's own round and state; the retry names the same tool and reaches the same member.
  const asking = { capabilities: { elicitation: {} } };
  const asked = await post(gw.url, 'tools/call', { name: 'a_test_input_required_result_elicitation', arguments: {} }, asking);
  t.equal(asked.body.result?.resultType, 'input_required', 'the member asks');
  t.ok(asked.body.result?.inputRequests?.user_name, 'its question, under its own key');
  const answered = await post(
    gw.url,
    'tools/call',
    {
      name: 'a_test_input_required_result_elicitation',
      arguments: {},
      inputResponses: { user_name: { action: 'accept', content: { name: 'Ada' } } },
      ...(asked.body.result?.requestState ? { requestState: asked.body.result.requestState } : {}),
    },
    asking,
  );
  t.strictSame(answered.body.result?.content, [{ type: 'text', text: 'Hello, Ada!' }], 'the retry completes on the member');
  await counted('both rounds passed through', { 'a passthrough': 2 });

  // What renaming would hide goes to the face, which refuses it as it would on a single endpoint: an Mcp-Name that
  // is not the body's name, a request without the envelope.
  const mismatch = await post(gw.url, 'tools/call', { name: 'a_test_simple_text', arguments: {} }, { headers: { 'mcp-name': 'a_test_image_content' } });
  t.equal(mismatch.status, 400, 'a mismatched Mcp-Name is refused');
  t.match(mismatch.body.error?.message, /Mcp-Name header "a_test_image_content" does not match/);
  const bare = await post(gw.url, 'tools/call', { name: 'a_test_simple_text', arguments: {}, _meta: {} });
  t.equal(bare.body.error?.code, -32602, 'a request without the envelope is refused');
  await counted('neither reached a member (the face refuses before counting)', {});

  // The face's requests are counted under the endpoint (its path), a pass-through's under the member.
  // A client that takes only JSON: the face answers (it drops what JSON cannot carry), not a pass-through.
  const jsonOnly = await post(gw.url, 'tools/call', { name: 'a_test_simple_text', arguments: {} }, { headers: { accept: 'application/json' } });
  t.equal(jsonOnly.status, 200);
  t.match(jsonOnly.contentType, /^application\/json/);
  await counted('a JSON-only client goes through the face', { '/mcp gateway': 1 });

  // A member that runs its own tasks, for a client that takes tasks: the face (the task id must be the endpoint's).
  const task = await post(gw.url, 'tools/call', { name: 'b_slow_compute', arguments: { seconds: 0, label: 'x' } }, { capabilities: DECLARING });
  t.equal(task.status, 200);
  await counted('a call that may become a member task goes through the face', { '/mcp gateway': 1 });
  // The same member for a client that takes no tasks: nothing of the gateway is needed.
  const plain = await post(gw.url, 'tools/call', { name: 'b_test_simple_text_nope', arguments: {} });
  t.equal(plain.body.error?.code, -32602, "an unknown name is the endpoint's unknown tool");
  t.strictSame(plain.body.error, { code: -32602, message: 'Unknown tool: b_test_simple_text_nope' });
  await counted('an unknown name goes through the face', { '/mcp gateway': 1 });
  const slow = await post(gw.url, 'tools/call', { name: 'b_slow_compute', arguments: { seconds: 0, label: 'y' } });
  t.match(JSON.stringify(slow.body.result?.content), /Computed y/, 'the member ran it in the call');
  await counted('a client without the tasks extension passes through', { 'b passthrough': 1 });

  // A tool a rule wraps is the gateway's, for every client.
  const wrapped = await post(gw.url, 'tools/call', { name: 'b_test_simple_text', arguments: {} }, { capabilities: DECLARING });
  t.match(wrapped.body.result?.task?.taskId ?? wrapped.body.result?.taskId, /^gwt_/, "the gateway's own task");
  await counted('a wrapped tool goes through the face', { '/mcp gateway': 1 });

  // A member that does not start its answer within its budget (its own `timeoutMs`): the catalogued timeout.
  const silent = await post(gw.url, 'tools/call', { name: 'a_test_cancellable_wait', arguments: { maxMs: 20_000 } });
  t.equal(silent.status, 504, 'the member did not answer in time');
  t.equal(silent.body.error?.message, 'Upstream timed out');

  // The member gone: the catalogued answer, which never says where the member was.
  await lines.close();
  const gone = await post(gw.url, 'tools/call', { name: 'a_test_simple_text', arguments: {} });
  t.ok(gone.status === 502 || gone.status === 503, `refused (${gone.status})`);
  t.equal(gone.body.error?.code, -32603);
  t.notMatch(gone.body.error?.message, /127\.0\.0\.1|localhost|:\d{2,5}\b/, 'no address in the answer');
});

t.test('a federated 2025-11-25 call passes through to its 2025-11-25 member on the pool session unless it needs the gateway', async (t) => {
  const legacy = await startLegacyFixture({ tasks: 'native' });
  t.teardown(() => legacy.close());
  const other = await startLegacyFixture({});
  t.teardown(() => other.close());
  const plain = await startLegacyFixture({ tasks: 'sync', responseMode: 'json' });
  t.teardown(() => plain.close());
  const gw = await startGateway(
    {
      upstreams: [
        { name: 'l', url: legacy.url, path: '/mcp', expose: { namespace: 'l' }, tools: { test_error_handling: { task: 'always' } } },
        { name: 'o', url: other.url, path: '/mcp', expose: { namespace: 'o' } },
        { name: 'j', url: plain.url, path: '/mcp', expose: { namespace: 'j' } },
      ],
    },
    { t },
  );
  const counted = await callCounter(t, gw.url);

  // A real 2025-11-25 client (SDK 1.32.2) that declares no input kind: its calls pass through, its session stays the
  // gateway's (the member's session id never reaches it).
  const c = await connectLegacy(gw.url);
  t.teardown(() => c.client.close());
  const sessionId = c.transport.sessionId;
  const simple = await c.client.callTool({ name: 'l_test_simple_text', arguments: {} });
  t.strictSame(simple.content, [{ type: 'text', text: 'This is a simple text response for testing.' }], 'the member answered');
  const seen: number[] = [];
  const progress = await c.client.callTool({ name: 'o_test_tool_with_progress', arguments: {} }, undefined, {
    onprogress: (p) => seen.push(p.progress),
  });
  t.strictSame(seen, [0, 50, 100], "the member's progress reached the client");
  t.notOk(progress.isError, 'and its answer');
  t.equal(c.transport.sessionId, sessionId, "the client's session is still the gateway's");
  await counted('passed through, counted under each member', { 'l passthrough': 1, 'o passthrough': 1 });

  // A passed call its client cancels: the member is told, on the session the call went on.
  const controller = new AbortController();
  const pending = c.client.callTool({ name: 'l_gated_job', arguments: { gate: 'never' } }, undefined, { signal: controller.signal });
  await waitForStats(legacy, (x) => x.gatesWaiting.never === 1);
  controller.abort(new Error('stop'));
  await t.rejects(pending, 'the client stopped waiting');
  const stats = await waitForStats(legacy, (x) => x.cancellations.some((r) => r.tool === 'gated_job'));
  t.match(
    stats.cancellations.find((r) => r.tool === 'gated_job'),
    { via: 'notifications/cancelled' },
    'the member got notifications/cancelled',
  );
  await counted('the cancelled call passed through', { 'l passthrough': 1 });

  // Cancelled before the member answered at all (a member answering plain JSON sends nothing until its result): the
  // exchange is dropped and the member told; the gateway goes on serving.
  const early = new AbortController();
  const unanswered = c.client.callTool({ name: 'j_gated_job', arguments: { gate: 'late' } }, undefined, { signal: early.signal });
  await waitForStats(plain, (x) => x.gatesWaiting.late === 1);
  early.abort(new Error('stop'));
  await t.rejects(unanswered, 'the client stopped waiting');
  // The member stops waiting: its exchange was dropped and the request cancelled on its session (whichever it
  // reads first; without either it would wait at the gate for ever).
  await waitForStats(plain, (x) => !x.gatesWaiting.late);
  t.pass('the member stopped the call');
  t.strictSame(
    (await c.client.callTool({ name: 'j_test_simple_text', arguments: {} })).content,
    [{ type: 'text', text: 'This is a simple text response for testing.' }],
    'the gateway serves on',
  );
  await counted('both passed through', { 'j passthrough': 2 });

  // The answer carries no session id of the member's, in either framing.
  const raw = await legacySession(gw.url);
  const call = (name: string, more: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
    raw.request('tools/call', { name, arguments: {}, ...more }, headers);
  for (const accept of ['application/json, text/event-stream', '*/*']) {
    const reply = await call('l_test_simple_text', {}, { accept });
    t.equal(reply.headers.get('mcp-session-id'), null, `no member session id in the answer (${accept})`);
    t.equal(reply.body.result?.content?.[0]?.text, 'This is a simple text response for testing.');
  }
  await counted('passed through', { 'l passthrough': 2 });

  // What needs the face: a rule's tool, a task-augmented call, a client that may be asked, one that takes only JSON,
  // an unknown name.
  t.ok((await call('l_test_error_handling')).body.result, 'a wrapped tool answers');
  t.ok((await call('l_slow_compute', { arguments: { seconds: 0, label: 'x' }, task: {} })).body.result, 'a task-augmented call answers');
  const jsonOnly = await call('l_test_simple_text', {}, { accept: 'application/json' });
  t.equal(jsonOnly.body.result?.content?.[0]?.text, 'This is a simple text response for testing.');
  const asking = await legacySession(gw.url, { elicitation: {} });
  const asked = await asking.request('tools/call', { name: 'l_test_simple_text', arguments: {} });
  t.equal(asked.body.result?.content?.[0]?.text, 'This is a simple text response for testing.');
  t.equal((await call('l_nope')).body.error?.code, -32602, "an unknown name is the endpoint's unknown tool");
  await counted('each through the face, counted under the endpoint', { '/mcp gateway': 5 });

  // The member gone: the catalogued answer, which never says where the member was, and the session lives on.
  await other.close();
  const gone = await call('o_test_simple_text');
  t.ok(gone.body.error, `refused (${gone.status})`);
  t.notMatch(gone.body.error?.message ?? '', /127\.0\.0\.1|localhost|:\d{2,5}\b/, 'no address in the answer');
  const still = await call('l_test_simple_text');
  t.equal(still.body.result?.content?.[0]?.text, 'This is a simple text response for testing.', "the other member's calls go on");
});

t.test('in front of the npm server-everything, default configuration: a 2025-11-25 call passes through to it', async (t) => {
  const ev = await startServerEverything();
  t.teardown(() => ev.close());
  const modern = await startModernFixture({ mode: 'modern' });
  t.teardown(() => modern.close());
  // No auth, no rules: only the namespaces that make one endpoint of the two.
  const gw = await startGateway(
    {
      upstreams: [
        { name: 'ev', url: ev.url, path: '/mcp', expose: { namespace: 'ev' } },
        { name: 'm', url: modern.url, path: '/mcp', expose: { namespace: 'm' } },
      ],
    },
    { t },
  );
  const counted = await callCounter(t, gw.url);
  const c = await connectLegacy(gw.url);
  t.teardown(() => c.client.close());
  const echo = await c.client.callTool({ name: 'ev_echo', arguments: { message: 'hi' } });
  t.strictSame(echo.content, [{ type: 'text', text: 'Echo: hi' }], "server-everything's own answer");
  const seen: number[] = [];
  const long = await c.client.callTool({ name: 'ev_trigger-long-running-operation', arguments: { duration: 0.1, steps: 2 } }, undefined, {
    onprogress: (p) => seen.push(p.progress),
  });
  t.strictSame(seen, [1, 2], 'its progress reached the client');
  t.match(JSON.stringify(long.content), /Long running operation completed/);
  await counted('both passed through to server-everything', { 'ev passthrough': 2 });
  // A 2026-07-28 client of the same endpoint reaches this 2025-11-25-only member through the face.
  const translated = await post(gw.url, 'tools/call', { name: 'ev_echo', arguments: { message: 'hi' } });
  t.strictSame(translated.body.result?.content, [{ type: 'text', text: 'Echo: hi' }]);
  await counted('a modern client is translated', { '/mcp gateway': 1 });
});
