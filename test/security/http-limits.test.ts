/**
 * HTTP-layer limits against hostile input: oversized bodies and headers, malformed request lines, bodies and headers
 * sent byte by byte, idle connections, JSON nested ten thousand deep (from a client, and from an upstream), and the
 * long responses those limits must leave alone. Every refusal is a JSON-RPC error from the catalog with its HTTP
 * status, every response ends within the bound each test states, and other clients are served meanwhile.
 * Real gateway and real fixture servers on loopback; the one FAKE is the hostile upstream (no real server sends
 * what it sends).
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import t from 'tap';
import { ERROR_CATALOG } from '../../src/translate/index.js';
import { ConfigError, DEFAULTS, parseConfig } from '../../src/config/index.js';
import { startGateway } from '../helpers/gateway.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { MODERN, envelope, post, readReply, type RawReply } from '../helpers/modern.js';
import { SseReader, openListen } from '../helpers/sse-reader.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Bound on any one answer these tests wait for: a hang fails the test, it never passes it. */
const BOUND_MS = 10_000;
/** Depth of the hostile values (the probes used 10,000). */
const DEEP = 10_000;
const deepJson = (n: number) => '['.repeat(n) + ']'.repeat(n);
const ELICIT = { elicitation: {} };
const TASKS_EXT = 'io.modelcontextprotocol/tasks';
const DECLARING = { extensions: { [TASKS_EXT]: {} }, elicitation: {} };

async function stackFor(
  t: Teardown,
  config: Record<string, unknown> = {},
  upstream: Record<string, unknown> = {},
  fixture: Record<string, unknown> = {},
): Promise<Stack> {
  const stack = await startStack(config, upstream, fixture);
  t.teardown(() => stack.close());
  return stack;
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

/** The catalog's JSON-RPC error for `kind`, as the client must see it (message filled with `args`). */
function catalogError(kind: keyof typeof ERROR_CATALOG, ...args: unknown[]): { code: number; message: string } {
  const spec = ERROR_CATALOG[kind];
  let i = 0;
  return { code: spec.rpc, message: spec.message.replace(/%s/g, () => String(args[i++])) };
}

/** A plain call of another principal (its own credentials), which must be served whatever else is going on. */
async function greet(url: string): Promise<RawReply> {
  const r = await post(url, 'tools/call', { name: 'test_simple_text', arguments: {} }, { headers: { authorization: 'Bearer another-principal' } });
  if (r.status === 200 && r.body?.result?.isError) throw new Error(`greet failed: ${JSON.stringify(r.body)}`);
  return r;
}

/**
 * POSTs a modern request whose params carry, in place of the string "__DEEP__", JSON nested `DEEP` levels; bounded.
 */
async function postDeep(url: string, method: string, params: Record<string, unknown>, capabilities: Record<string, unknown> = {}): Promise<RawReply> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 'deep', method, params: { ...params, _meta: envelope(capabilities) } }).replace(
    '"__DEEP__"',
    deepJson(DEEP),
  );
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
  };
  if (typeof params.name === 'string') headers['mcp-name'] = params.name;
  if (typeof params.taskId === 'string') headers['mcp-name'] = params.taskId;
  const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(BOUND_MS) });
  return readReply(res);
}

/** A raw socket exchange: writes `head`, then `drip` one byte per `everyMs`, and resolves with all it read once closed. */
function rawExchange(port: number, head: string, drip = '', everyMs = 1_000): { done: Promise<string>; socket: net.Socket } {
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<string>((resolve, reject) => {
    const bound = setTimeout(() => {
      socket.destroy();
      reject(new Error(`connection still open after ${BOUND_MS} ms; read so far: ${JSON.stringify(text.slice(0, 200))}`));
    }, BOUND_MS);
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (text += c));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(bound);
      clearInterval(timer);
      resolve(text);
    });
  });
  // Awaited by the test; a rejection after the test already failed elsewhere is not reported twice.
  done.catch(() => {});
  socket.write(head);
  let i = 0;
  if (drip) {
    timer = setInterval(() => {
      if (i < drip.length && !socket.destroyed) socket.write(drip[i++] as string);
    }, everyMs);
  }
  return { done, socket };
}

/** Status and JSON body of a raw HTTP/1.1 answer. */
function parseRaw(text: string): { status: number; headers: string; body: any } {
  const split = text.indexOf('\r\n\r\n');
  const head = text.slice(0, split);
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0);
  const raw = text.slice(split + 4);
  let body: any;
  try {
    body = JSON.parse(raw);
  } catch {
    body = raw;
  }
  return { status, headers: head.toLowerCase(), body };
}

t.test('the server.* limits have safe defaults and refuse nonsense', async (t) => {
  const server = parseConfig({}).server;
  t.same(
    [server.headersTimeoutMs, server.requestTimeoutMs, server.idleTimeoutMs, server.maxJsonDepth],
    [DEFAULTS.headersTimeoutMs, DEFAULTS.requestTimeoutMs, DEFAULTS.idleTimeoutMs, DEFAULTS.maxJsonDepth],
  );
  const problems = (raw: unknown): string[] => {
    try {
      parseConfig(raw);
    } catch (e) {
      if (e instanceof ConfigError) return e.problems;
      throw e;
    }
    return [];
  };
  t.match(
    problems({ server: { headersTimeoutMs: 5_000, requestTimeoutMs: 1_000 } }).join('\n'),
    /server\.headersTimeoutMs/,
    'headers bound within the request bound',
  );
  t.match(problems({ server: { maxJsonDepth: 5_000 } }).join('\n'), /server\.maxJsonDepth/, 'depth at most 1000');
  t.match(problems({ server: { requestTimeoutMs: 0 } }).join('\n'), /server\.requestTimeoutMs/, 'no way to switch the request bound off');
});

// ── body size ─────────────────────────────────────────────────────────────────────────────────────────────────────

/**
 * fetch in another process (as a real client meets the gateway: its writes race the server's close, which in one
 * process they do not) sends each body and prints what it got: status and body, or the error.
 */
const OVERSIZED_CLIENT = `
const url = process.argv[1];
const chunked = (total) => { let sent = 0; return new ReadableStream({ pull(c) { if (sent >= total) { c.close(); return; } const n = Math.min(65536, total - sent); sent += n; c.enqueue(new Uint8Array(n).fill(0x20)); } }); };
const out = [];
for (const mib of [2, 10]) for (const mode of ['content-length', 'chunked']) {
  const size = mib * 1024 * 1024;
  try {
    const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: mode === 'chunked' ? chunked(size) : ' '.repeat(size), duplex: 'half', signal: AbortSignal.timeout(${BOUND_MS}) });
    out.push({ mib, mode, status: r.status, body: await r.text() });
  } catch (e) { out.push({ mib, mode, error: String(e.cause?.code ?? e.message) }); }
}
console.log(JSON.stringify(out));
`;

t.test('bodies over server.bodyLimitBytes (2 MiB, 10 MiB; declared and chunked) → 413 JSON-RPC that fetch receives', async (t) => {
  const stack = await stackFor(t);
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['--input-type=module', '-e', OVERSIZED_CLIENT, stack.url], { timeout: 60_000 }, (err, out) =>
      err ? reject(err) : resolve(out),
    );
  });
  const results = JSON.parse(stdout) as Array<{ mib: number; mode: string; status?: number; body?: string; error?: string }>;
  t.equal(results.length, 4);
  for (const r of results) {
    const what = `${r.mib} MiB, ${r.mode}`;
    t.notOk(r.error, `${what}: an answer, not a connection error (${r.error})`);
    t.equal(r.status, 413, `${what}: 413`);
    t.same(JSON.parse(r.body ?? 'null'), { jsonrpc: '2.0', id: null, error: catalogError('GW_BODY_TOO_LARGE') }, `${what}: the catalog's JSON-RPC error`);
  }
  const ok = await greet(stack.url);
  t.equal(ok.status, 200, 'another client is served');
});

// ── HTTP-level rejections ─────────────────────────────────────────────────────────────────────────────────────────

t.test('headers over the limit → 431 JSON-RPC; a malformed request line → 400 JSON-RPC; unknown path → 404 JSON-RPC', async (t) => {
  const stack = await stackFor(t);
  const big = await fetch(stack.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-padding': 'a'.repeat(20_000) },
    body: '{}',
    signal: AbortSignal.timeout(BOUND_MS),
  });
  t.equal(big.status, 431);
  t.match(big.headers.get('content-type') ?? '', /^application\/json/);
  t.same(await big.json(), { jsonrpc: '2.0', id: null, error: catalogError('GW_HEADERS_TOO_LARGE') });

  const garbage = parseRaw(await rawExchange(portOf(stack.url), 'THIS IS NOT HTTP\r\n\r\n').done);
  t.equal(garbage.status, 400);
  t.match(garbage.headers, /content-type: application\/json/);
  t.same(garbage.body, { jsonrpc: '2.0', id: null, error: catalogError('GW_BAD_REQUEST', 'malformed HTTP request') });

  const missing = await fetch(stack.url.replace(/\/mcp$/, '/nowhere'), { signal: AbortSignal.timeout(BOUND_MS) });
  t.equal(missing.status, 404);
  t.same(await missing.json(), { jsonrpc: '2.0', id: null, error: catalogError('GW_NOT_FOUND') });

  const withHost = (path: string, host: string, method = 'POST') =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: portOf(stack.url), path, method, headers: { host, 'content-type': 'application/json' } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.on('error', reject);
      req.end(method === 'POST' ? '{}' : undefined);
    });
  const foreign = await withHost('/mcp', 'evil.example');
  t.equal(foreign.status, 403);
  t.equal((await withHost('/healthz', 'evil.example', 'GET')).status, 403, 'a health probe naming a foreign host is refused too');
  t.same(JSON.parse(foreign.body), { jsonrpc: '2.0', id: null, error: catalogError('GW_FORBIDDEN_HOST') });

  const unparsable = await post(stack.url, 'tools/call', {}, { rawBody: '{"jsonrpc":' });
  t.equal(unparsable.status, 400);
  t.same(unparsable.body, { jsonrpc: '2.0', id: null, error: catalogError('GW_PARSE_ERROR') });
  t.equal((await greet(stack.url)).status, 200, 'the gateway serves on');
});

// ── timeouts ──────────────────────────────────────────────────────────────────────────────────────────────────────

t.test('a body or headers sent at 1 byte/s → 408 JSON-RPC once server.requestTimeoutMs (1 s here) is over; others are served meanwhile', async (t) => {
  const stack = await stackFor(t, { server: { requestTimeoutMs: 1_000, headersTimeoutMs: 1_000 } });
  const port = portOf(stack.url);
  const slowBody = rawExchange(
    port,
    `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{`,
    '"jsonrpc":"2.0","id":1,"method":"ping"'.repeat(10),
  );
  const slowHeaders = rawExchange(port, `POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`, 'X-Slow: '.repeat(20));

  // Served while both slow sockets are open.
  const served = await greet(stack.url);
  t.equal(served.status, 200, 'another client is served meanwhile');

  for (const [what, x] of [
    ['slow body', slowBody],
    ['slow headers', slowHeaders],
  ] as const) {
    const answer = parseRaw(await x.done); // bounded: BOUND_MS
    t.equal(answer.status, 408, `${what}: 408`);
    t.match(answer.headers, /connection: close/, `${what}: the connection is closed`);
    t.same(answer.body, { jsonrpc: '2.0', id: null, error: catalogError('GW_REQUEST_TIMEOUT') }, `${what}: the catalog's JSON-RPC error`);
  }
});

t.test('an idle keep-alive connection is closed after server.idleTimeoutMs', async (t) => {
  const stack = await stackFor(t, { server: { idleTimeoutMs: 300 } });
  const port = portOf(stack.url);
  const x = rawExchange(port, `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: keep-alive\r\n\r\n`);
  const text = await x.done; // bounded: BOUND_MS
  t.equal(parseRaw(text).status, 200, 'answered, then closed while idle');
});

t.test('a short requestTimeoutMs does not cut responses: a long tool call and a listen stream outlive it', async (t) => {
  const stack = await stackFor(t, { server: { requestTimeoutMs: 500, headersTimeoutMs: 500 } }, {}, { tasks: 'sync' });
  const listen = await openListen(t, stack.url, 'long-listen', { toolsListChanged: true });
  t.equal(listen.response.status, 200);
  t.equal((await listen.stream.next()).method, 'notifications/subscriptions/acknowledged');

  // 2.5 s: five times the request timeout, and ten checks of the connections.
  const slow = await post(stack.url, 'tools/call', {
    name: 'slow_compute',
    arguments: { seconds: 2.5, label: 'late' },
    _meta: { ...envelope(), progressToken: 'p1' },
  });
  t.equal(slow.status, 200);
  t.same(slow.body.result?.content, [{ type: 'text', text: 'Computed late after 2.5s' }], 'the long call got its answer');

  // The listen stream, open all that while, still delivers.
  const trigger = await post(stack.url, 'tools/call', { name: 'test_trigger_tool_change', arguments: {} });
  t.equal(trigger.status, 200);
  const changed = await listen.stream.next(BOUND_MS);
  t.equal(changed?.method, 'notifications/tools/list_changed', 'the listen stream is still open and delivering');
});

// ── JSON nesting depth ────────────────────────────────────────────────────────────────────────────────────────────

t.test('JSON nested 10,000 deep as a plain request → 400 GW_TOO_DEEP at once; others are served', async (t) => {
  const stack = await stackFor(t);
  const r = await postDeep(stack.url, 'tools/call', { name: 'test_simple_text', arguments: { x: '__DEEP__' } });
  t.equal(r.status, 400);
  t.same(r.body, { jsonrpc: '2.0', id: null, error: catalogError('GW_TOO_DEEP', 128) });
  // Within the limit passes: arguments 100 deep reach the tool.
  const fine = await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: { x: JSON.parse(deepJson(100)) } });
  t.equal(fine.status, 200, 'nesting within server.maxJsonDepth is accepted');
  t.equal((await greet(stack.url)).status, 200);
});

t.test('server.maxJsonDepth is configurable', async (t) => {
  const stack = await stackFor(t, { server: { maxJsonDepth: 8 } });
  const r = await post(stack.url, 'tools/call', { name: 'test_simple_text', arguments: { x: JSON.parse(deepJson(10)) } });
  t.equal(r.status, 400);
  t.same(r.body.error, catalogError('GW_TOO_DEEP', 8));
  t.equal((await greet(stack.url)).status, 200);
});

t.test('JSON nested 10,000 deep as an MRTR retry → 400 at once; the held round is still usable', async (t) => {
  const stack = await stackFor(t);
  const tool = 'test_input_required_result_elicitation';
  const r1 = await post(stack.url, 'tools/call', { name: tool, arguments: {} }, { capabilities: ELICIT });
  t.equal(r1.body.result?.resultType, 'input_required');
  const state = r1.body.result.requestState;

  const deep = await postDeep(stack.url, 'tools/call', { name: tool, arguments: {}, requestState: state, inputResponses: { user_name: '__DEEP__' } }, ELICIT);
  t.equal(deep.status, 400);
  t.same(deep.body.error, catalogError('GW_TOO_DEEP', 128));

  t.equal((await greet(stack.url)).status, 200, 'another client is served');
  const r2 = await post(
    stack.url,
    'tools/call',
    { name: tool, arguments: {}, requestState: state, inputResponses: { user_name: { action: 'accept', content: { name: 'Alice' } } } },
    { capabilities: ELICIT },
  );
  t.same(r2.body.result?.content, [{ type: 'text', text: 'Hello, Alice!' }], 'the round completes with a proper answer');
});

t.test('JSON nested 10,000 deep as a tasks/update answer → 400 at once; the task still takes a proper answer', async (t) => {
  const stack = await stackFor(t, {}, { tools: { confirm_delete: { task: 'always' } } }, { tasks: 'sync', taskJobDelayMs: 0 });
  const created = await post(stack.url, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } }, { capabilities: DECLARING });
  t.equal(created.body.result?.resultType, 'task');
  const taskId: string = created.body.result.taskId;
  const asking = await untilTask(stack.url, taskId, (task) => task.status === 'input_required');
  t.same(Object.keys(asking.inputRequests), ['confirm']);

  const deep = await postDeep(stack.url, 'tasks/update', { taskId, inputResponses: { confirm: '__DEEP__' } }, DECLARING);
  t.equal(deep.status, 400);
  t.same(deep.body.error, catalogError('GW_TOO_DEEP', 128));

  const ack = await post(
    stack.url,
    'tasks/update',
    { taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
    { capabilities: DECLARING },
  );
  t.equal(ack.status, 200);
  const done = await untilTask(stack.url, taskId, (task) => ['completed', 'failed', 'cancelled'].includes(task.status));
  t.equal(done.status, 'completed');
  t.same(done.result?.content, [{ type: 'text', text: 'Deleted a.txt' }]);
});

/** Polls tasks/get until `pred` holds; bounded by BOUND_MS. */
async function untilTask(url: string, taskId: string, pred: (task: any) => boolean): Promise<any> {
  const deadline = Date.now() + BOUND_MS;
  for (;;) {
    const r = await post(url, 'tasks/get', { taskId }, { capabilities: DECLARING });
    const task = r.body?.result;
    if (task && pred(task)) return task;
    if (Date.now() > deadline) throw new Error(`task ${taskId} not in the expected state; last: ${JSON.stringify(r.body)}`);
    await new Promise((resolve) => setTimeout(resolve, typeof task?.pollIntervalMs === 'number' ? Math.min(task.pollIntervalMs, 200) : 50));
  }
}

// ── hostile upstream ──────────────────────────────────────────────────────────────────────────────────────────────

/**
 * A FAKE 2025-11-25 upstream over raw node:http: no real server answers with JSON nested 10,000 deep. `deep_json`
 * answers so in a JSON body; `deep_sse` in an SSE stream, after a progress notification when the call carries a
 * progress token (so the gateway's answer to the client is already streaming); `fine` answers normally.
 */
async function startHostileUpstream(t: Teardown): Promise<string> {
  const server = http.createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    if (req.method !== 'POST') {
      res.writeHead(405).end();
      return;
    }
    const m = JSON.parse(body);
    if (m.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const reply = (result: string, sse: boolean, before = '') => {
      const msg = `{"jsonrpc":"2.0","id":${JSON.stringify(m.id)},"result":${result}}`;
      if (!sse) {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'hostile-1' }).end(msg);
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'hostile-1' });
      res.write(before);
      res.end(`event: message\ndata: ${msg}\n\n`);
    };
    switch (m.method) {
      case 'initialize':
        return reply(JSON.stringify({ protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'hostile', version: '1' } }), false);
      case 'tools/list':
        return reply(JSON.stringify({ tools: ['deep_json', 'deep_sse', 'fine'].map((name) => ({ name, inputSchema: { type: 'object' } })) }), false);
      case 'tools/call': {
        const name = m.params?.name;
        if (name === 'fine') return reply(JSON.stringify({ content: [{ type: 'text', text: 'fine' }] }), true);
        const token = m.params?._meta?.progressToken;
        const progress =
          token === undefined
            ? ''
            : `event: message\ndata: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: token, progress: 1 } })}\n\n`;
        return reply(`{"content":[{"type":"text","text":"deep"}],"structuredContent":{"x":${deepJson(DEEP)}}}`, name === 'deep_sse', progress);
      }
      default:
        return reply('{}', false);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`;
}

t.test('a hostile upstream answering 10,000 deep (JSON, SSE, SSE already streaming) → a JSON-RPC error and the response ends', async (t) => {
  const upstream = await startHostileUpstream(t);
  const { url } = await startGateway({ upstreams: [{ name: 'hostile', url: upstream, era: 'legacy' }] }, { t });
  const bad = catalogError('GW_UPSTREAM_BAD_MESSAGE', 'JSON nested deeper than 1000 levels');

  const call = (name: string, meta: Record<string, unknown> = {}) =>
    fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': name,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: name, method: 'tools/call', params: { name, arguments: {}, _meta: { ...envelope(), ...meta } } }),
      signal: AbortSignal.timeout(BOUND_MS),
    });

  for (const name of ['deep_json', 'deep_sse']) {
    const r = await readReply(await call(name));
    t.equal(r.status, 502, `${name}: 502`);
    t.same(r.body, { jsonrpc: '2.0', id: name, error: bad }, `${name}: the catalog's JSON-RPC error`);
  }

  // The answer to the client streams already (the progress went out) when the deep result arrives: the stream ends
  // with the error as its last event.
  const streaming = await call('deep_sse', { progressToken: 'p' });
  t.equal(streaming.status, 200);
  t.match(streaming.headers.get('content-type') ?? '', /^text\/event-stream/);
  const reader = new SseReader(streaming);
  t.equal((await reader.next(BOUND_MS))?.method, 'notifications/progress');
  t.same(await reader.next(BOUND_MS), { jsonrpc: '2.0', id: 'deep_sse', error: bad }, 'a JSON-RPC error event');
  t.equal(await reader.next(BOUND_MS), undefined, 'then the stream ends');

  const fine = await readReply(await call('fine'));
  t.same(fine.body?.result?.content, [{ type: 'text', text: 'fine' }], 'the upstream is still served');
});
