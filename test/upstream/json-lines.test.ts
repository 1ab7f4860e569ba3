/**
 * Upstream answers framed as `Content-Type: application/json` that are not one JSON body: JSON lines, as the
 * conformance project's reference everything-server sends them in its 2026-07-28-only mode (a listen's
 * acknowledgement line with the body left open, a tool's notification lines before its result line). The real
 * modern fixture with `jsonLines` (test/fixtures/modern-server.ts) answers so behind a real gateway, and both of the
 * gateway's faces are driven by real clients. The one FAKE is the hostile upstream (test/fixtures/hostile-upstream.ts)
 * for what no real server here can be made to send: a body spread over lines, one that is neither JSON nor JSON
 * lines, a line over the byte limit.
 */
import t from 'tap';
import { LoggingMessageNotificationSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { ERROR_CATALOG } from '../../src/translate/index.js';
import { ModernUpstreamClient } from '../../src/upstream/index.js';
import { MAX_UPSTREAM_MESSAGE_BYTES } from '../../src/upstream/http.js';
import { startHostileUpstream, type HostileUpstream } from '../fixtures/hostile-upstream.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { connectLegacy, startModernStack, type ModernStack } from '../helpers/modern-stack.js';
import { MODERN, envelope, post, readReply } from '../helpers/modern.js';
import { LEGACY_HEADERS, rawInitialize } from '../helpers/legacy-face-stack.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** The bound on any one answer in front of such an upstream; a hang fails the test, it never passes it. */
const BOUND_MS = 5_000;

/** The real JSON-lines fixture behind a real gateway; `tools`: the upstream's rules. */
async function jsonLinesStack(t: Teardown, tools?: Record<string, unknown>): Promise<ModernStack> {
  const stack = await startModernStack('modern', {}, { jsonLines: true }, tools ? { tools } : {});
  t.teardown(() => stack.close());
  return stack;
}

/** Resolves with `p`, or fails naming `what` when it has not happened within BOUND_MS. */
async function bounded<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${BOUND_MS} ms`)), BOUND_MS);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The catalog's JSON-RPC error for `kind`, as the client must see it (message filled with `args`). */
function catalogError(kind: keyof typeof ERROR_CATALOG, ...args: unknown[]): { code: number; message: string } {
  const spec = ERROR_CATALOG[kind];
  let i = 0;
  return { code: spec.rpc, message: spec.message.replace(/%s/g, () => String(args[i++])) };
}

/** POSTs a modern tools/call straight to `url` (the fixture itself): status, content type and the raw body. */
async function rawCall(url: string, name: string, meta: Record<string, unknown>): Promise<{ status: number; type: string; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': 'tools/call',
      'mcp-name': name,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: {}, _meta: { ...envelope(), ...meta } } }),
    signal: AbortSignal.timeout(BOUND_MS),
  });
  return { status: res.status, type: res.headers.get('content-type') ?? '', text: await res.text() };
}

t.test('the fixture frames as the reference server: notification lines, then the unterminated result line', async (t) => {
  const { fixture } = await jsonLinesStack(t);
  const r = await rawCall(fixture.url, 'test_tool_with_progress', { progressToken: 'p' });
  t.equal(r.status, 200);
  t.match(r.type, /^application\/json/);
  const lines = r.text.split('\n');
  t.equal(lines.length, 4, 'three progress lines and the result line');
  t.same(
    lines.slice(0, 3).map((l) => JSON.parse(l).method),
    ['notifications/progress', 'notifications/progress', 'notifications/progress'],
  );
  t.equal(JSON.parse(lines[3] as string).id, 1, 'the result line comes last, without a newline');
  const plain = await rawCall(fixture.url, 'test_simple_text', {});
  t.same(
    JSON.parse(plain.text).result.content,
    [{ type: 'text', text: 'This is a simple text response for testing.' }],
    'an answer without notifications is one JSON body',
  );
});

t.test('modern face, wrapped call: a single JSON answer, and JSON lines whose notifications are relayed before the result', async (t) => {
  // The rule makes the call the gateway's own, so it reads the upstream's answer (unwrapped calls pass through as sent).
  const { url } = await jsonLinesStack(t, { '*': { task: 'auto', afterMs: 10_000 } });
  const plain = await post(url, 'tools/call', { name: 'test_simple_text', arguments: {} });
  t.equal(plain.status, 200);
  t.same(plain.body.result.content, [{ type: 'text', text: 'This is a simple text response for testing.' }]);

  const progress = await post(url, 'tools/call', { name: 'test_tool_with_progress', arguments: {}, _meta: { ...envelope(), progressToken: 'tok' } });
  t.equal(progress.status, 200);
  t.match(progress.contentType, /^text\/event-stream/, 'the notifications stream to the client');
  t.same(
    progress.messages.map((m) => [m.method, m.params.progress]),
    [
      ['notifications/progress', 0],
      ['notifications/progress', 50],
      ['notifications/progress', 100],
    ],
  );
  t.same(progress.body.result.content, [{ type: 'text', text: 'tok' }], 'the result line is the answer');

  const logged = await post(url, 'tools/call', {
    name: 'test_tool_with_logging',
    arguments: {},
    _meta: envelope({}, { 'io.modelcontextprotocol/logLevel': 'info' }),
  });
  t.equal(logged.status, 200);
  t.same(
    logged.messages.map((m) => m.method),
    ['notifications/message', 'notifications/message', 'notifications/message'],
  );
  t.same(logged.body.result.content, [{ type: 'text', text: 'Tool with logging executed successfully' }]);
});

t.test('legacy face: the result of a JSON-lines answer, with its progress and log lines relayed', async (t) => {
  const { url } = await jsonLinesStack(t);
  const { client } = await connectLegacy(url);
  t.teardown(() => client.close());
  const progress: number[] = [];
  const r = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined, {
    onprogress: (p) => progress.push(p.progress),
    timeout: BOUND_MS,
  });
  t.same(progress, [0, 50, 100], 'every progress line reached the client');
  t.notOk(r.isError);
  t.equal((r.content as Array<{ type: string }>)[0]?.type, 'text', 'the result line is the answer');

  const logs: unknown[] = [];
  client.setNotificationHandler(LoggingMessageNotificationSchema, async (n) => {
    logs.push(n.params.data);
  });
  await client.setLoggingLevel('info');
  const logged = await client.callTool({ name: 'test_tool_with_logging', arguments: {} }, undefined, { timeout: BOUND_MS });
  t.same(logged.content, [{ type: 'text', text: 'Tool with logging executed successfully' }]);
  t.equal(logs.length, 3, 'every log line reached the client');
});

t.test('a JSON-lines listen: its acknowledgement is seen while the body stays open, later lines follow', async (t) => {
  const fixture = await startModernFixture({ mode: 'modern', jsonLines: true });
  const client = new ModernUpstreamClient({
    name: 'json-lines',
    url: fixture.url,
    timeoutMs: BOUND_MS,
    clientInfo: { name: 'mcp-tasks-gateway', version: 'test' },
  });
  t.teardown(async () => {
    await client.close();
    await fixture.close();
  });
  const stop = new AbortController();
  t.teardown(() => stop.abort());
  // Bounded by the client's timeoutMs: an acknowledgement that is not seen fails the listen.
  const l = await client.listen({ capabilities: {} }, { toolsListChanged: true, resourceSubscriptions: ['test://watched-resource'] }, stop.signal);
  t.strictSame(l.accepted, { toolsListChanged: true }, 'the acknowledgement: tool list changes granted, no resource subscriptions (resources: {})');
  const it = l.notifications[Symbol.asyncIterator]();
  fixture.notifyListChanged('tools');
  const next = await it.next();
  t.equal(next.value?.method, 'notifications/tools/list_changed', 'a later line on the open body');
  stop.abort();
  t.equal((await it.next()).done, true, 'the listen ends when its signal aborts');
});

t.test('legacy face: the GET stream opens on the JSON-lines listen and carries its later lines', async (t) => {
  const { url, fixture } = await jsonLinesStack(t);
  const { client, getStreamOpen } = await connectLegacy(url);
  t.teardown(() => client.close());
  let changed!: () => void;
  const toolsChanged = new Promise<void>((resolve) => (changed = resolve));
  client.setNotificationHandler(ToolListChangedNotificationSchema, async () => changed());
  await bounded(getStreamOpen, 'the GET stream answered 200');
  fixture.notifyListChanged('tools');
  await bounded(toolsChanged, 'tools/list_changed on the GET stream');
  t.pass('the list change reached the client');
});

/** A gateway in front of the hostile FAKE, taken as a 2026-07-28-only upstream; its client-facing URL. */
async function hostileStack(t: Teardown): Promise<{ hostile: HostileUpstream; url: string }> {
  const hostile = await startHostileUpstream();
  t.teardown(() => hostile.close());
  // The rule makes every call the gateway's own on the modern face too (unwrapped calls pass through as sent).
  const tools = { '*': { task: 'auto', afterMs: 10_000 } };
  const { url } = await startGateway({ upstreams: [{ name: 'hostile', path: '/mcp', url: hostile.url, era: 'modern', tools }] }, { t });
  return { hostile, url };
}

const RESULT_LINE = '{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"fine"}]}}';

t.test('one JSON value spread over lines is still one answer (FAKE upstream)', async (t) => {
  const { hostile, url } = await hostileStack(t);
  const pretty = JSON.stringify(JSON.parse(RESULT_LINE.replace('__ID__', '0')), null, 2).replace('"id": 0', '"id": __ID__');
  hostile.script = () => ({ kind: 'sse', status: 200, contentType: 'application/json', chunks: [pretty.slice(0, 20), pretty.slice(20)], end: 'close' });
  const r = await post(url, 'tools/call', { name: 'any', arguments: {} });
  t.equal(r.status, 200);
  t.same(r.body.result.content, [{ type: 'text', text: 'fine' }]);
});

t.test('a body that is neither JSON nor JSON lines: the catalogued 502 naming the framing (FAKE upstream)', async (t) => {
  const { hostile, url } = await hostileStack(t);
  const bad = catalogError('GW_UPSTREAM_BAD_MESSAGE', 'the answer is not JSON or JSON lines (Content-Type application/json)');
  hostile.script = () => ({ kind: 'body', status: 200, contentType: 'application/json; charset=utf-8', text: 'hello\nworld\n' });
  const modern = await post(url, 'tools/call', { name: 'any', arguments: {} }, { id: 'm' });
  t.equal(modern.status, 502, 'modern face: 502');
  t.same(modern.body, { jsonrpc: '2.0', id: 'm', error: bad }, 'modern face: the catalogued error');

  const session = await rawInitialize(url);
  const legacy = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id: 'l', method: 'tools/call', params: { name: 'any', arguments: {} } }),
    signal: AbortSignal.timeout(BOUND_MS),
  });
  const reply = await readReply(legacy);
  t.equal(reply.status, 502, 'legacy face: 502');
  t.same(reply.body, { jsonrpc: '2.0', id: 'l', error: bad }, 'legacy face: the catalogued error');

  // Lines that parse, then one that does not: what came first is delivered, then the same error ends the stream.
  hostile.script = () => ({
    kind: 'sse',
    status: 200,
    contentType: 'application/json',
    chunks: ['{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}\n', 'garbage\n'],
    end: 'close',
  });
  const late = await post(url, 'tools/call', { name: 'any', arguments: {}, _meta: { ...envelope(), progressToken: 'p' } }, { id: 'late' });
  t.same(
    late.messages.map((m) => m.method),
    ['notifications/progress'],
    'the line before it was relayed',
  );
  t.same(late.body, { jsonrpc: '2.0', id: 'late', error: bad }, 'then the catalogued error');

  hostile.script = () => ({ kind: 'sse', status: 200, contentType: 'application/json', chunks: [RESULT_LINE], end: 'close' });
  const fine = await post(url, 'tools/call', { name: 'any', arguments: {} });
  t.same(fine.body.result.content, [{ type: 'text', text: 'fine' }], 'the upstream is still served');
});

t.test('a JSON line over the byte limit: the catalogued 502, and nothing else harmed (FAKE upstream)', async (t) => {
  const { hostile, url } = await hostileStack(t);
  const huge = `{"jsonrpc":"2.0","id":__ID__,"result":{"content":[{"type":"text","text":"${'x'.repeat(MAX_UPSTREAM_MESSAGE_BYTES)}"}]}}\n`;
  hostile.script = () => ({
    kind: 'sse',
    status: 200,
    contentType: 'application/json',
    chunks: ['{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}\n', huge],
    end: 'close',
  });
  const r = await post(url, 'tools/call', { name: 'any', arguments: {} }, { id: 'big' });
  t.equal(r.status, 502);
  t.same(r.body, { jsonrpc: '2.0', id: 'big', error: catalogError('GW_UPSTREAM_BAD_MESSAGE', `message larger than ${MAX_UPSTREAM_MESSAGE_BYTES} bytes`) });

  hostile.script = () => ({ kind: 'sse', status: 200, contentType: 'application/json', chunks: [RESULT_LINE], end: 'close' });
  const fine = await post(url, 'tools/call', { name: 'any', arguments: {} });
  t.same(fine.body.result.content, [{ type: 'text', text: 'fine' }], 'the upstream is still served');
});

t.test('legacy face: every 2025-11-25 request type answers within the bound in front of a JSON-lines upstream', async (t) => {
  const { url } = await jsonLinesStack(t);
  const { client, transport, getStreamOpen } = await bounded(connectLegacy(url), 'initialize (and initialized)');
  t.teardown(() => client.close());
  // Each request answers (a result or a JSON-RPC error) within the bound; a hang fails, an error is an answer.
  const answers = async (what: string, p: Promise<unknown>): Promise<unknown> => {
    const r = await bounded(
      p.then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
      what,
    );
    t.pass(`${what} answered`);
    return r;
  };
  const opts = { timeout: BOUND_MS };
  await bounded(getStreamOpen, 'GET: the stream answered 200');
  t.pass('GET answered');
  await answers('ping', client.ping(opts));
  await answers('tools/list', client.listTools(undefined, opts));
  await answers('tools/call', client.callTool({ name: 'test_simple_text', arguments: {} }, undefined, opts));
  const prompts = (await answers('prompts/list', client.listPrompts(undefined, opts))) as {
    value?: { prompts: Array<{ name: string; arguments?: Array<{ name: string; required?: boolean }> }> };
  };
  const list = prompts.value?.prompts ?? [];
  t.ok(list.length > 0, 'the upstream lists prompts');
  const plain = list.find((p) => !(p.arguments ?? []).some((a) => a.required)) ?? list[0];
  await answers('prompts/get', client.getPrompt({ name: plain?.name ?? 'none' }, opts));
  const resources = (await answers('resources/list', client.listResources(undefined, opts))) as { value?: { resources: Array<{ uri: string }> } };
  const uri = resources.value?.resources[0]?.uri ?? 'test://none';
  await answers('resources/templates/list', client.listResourceTemplates(undefined, opts));
  await answers('resources/read', client.readResource({ uri }, opts));
  const sub = (await answers('resources/subscribe', client.subscribeResource({ uri: 'test://watched-resource' }, opts))) as { error?: unknown };
  await answers('resources/unsubscribe', client.unsubscribeResource({ uri: 'test://watched-resource' }, opts));
  // The upstream's server/discover offers no subscriptions (resources: {}): a refusal is the right answer then.
  t.match(String((sub.error as Error | undefined)?.message), /-32601.*Method not found: resources\/subscribe/, 'subscribe refused: the upstream offers none', {
    error: sub.error,
  });
  const withArg = list.find((p) => (p.arguments ?? []).length > 0);
  if (withArg) {
    const argument = { name: withArg.arguments?.[0]?.name ?? 'x', value: '' };
    await answers('completion/complete', client.complete({ ref: { type: 'ref/prompt', name: withArg.name }, argument }, opts));
  }
  await answers('logging/setLevel', client.setLoggingLevel('info', opts));
  await answers('DELETE', transport.terminateSession());
});
