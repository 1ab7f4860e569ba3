/**
 * ModernUpstreamClient against real 2026-07-28 servers on loopback: a v2 SDK server (`@modelcontextprotocol/server`
 * 2.4.0 `createMcpHandler`, which validates the envelope, the mirrored headers and `Mcp-Param-*` itself), and a raw
 * node:http server that answers in plain JSON and records what it received.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import * as z from 'zod';
import { McpServer, createMcpHandler, inputRequired, acceptedContent } from '@modelcontextprotocol/server';
import { toNodeHandler } from '@modelcontextprotocol/node';
import {
  ModernUpstreamClient,
  UpstreamHttpError,
  UpstreamTimeoutError,
  UpstreamUnavailableError,
  requestOnce,
  type CallEvent,
  type UpstreamCall,
  type UpstreamCaller,
} from '../../../src/upstream/index.js';
import { startModernFixture } from '../../fixtures/modern-server.js';
import { sdkRequest } from '../../helpers/sdk-request.js';

const CLIENT_INFO = { name: 'gateway-under-test', version: '0.0.1' };
const caller: UpstreamCaller = { capabilities: { elicitation: {} }, clientInfo: { name: 'ide', version: '9' } };

async function listen(server: http.Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

/** Reads a call to its final event, collecting everything before it. */
async function collect(call: UpstreamCall): Promise<{ events: CallEvent[]; final: CallEvent }> {
  const events: CallEvent[] = [];
  for (;;) {
    const e = await call.next();
    if (e.kind === 'response' || e.kind === 'failure') return { events, final: e };
    events.push(e);
  }
}

function resultOf(e: CallEvent): any {
  if (e.kind !== 'response') throw new Error(`expected a response, got ${e.kind}: ${e.kind === 'failure' ? e.error.message : ''}`);
  return (e.message as any).result ?? { error: (e.message as any).error };
}

// ---------------------------------------------------------------------------------------------------------------
// (a) a real v2 server

function v2Server() {
  const seen: Array<{ tool: string; requestState?: unknown; responses?: unknown; envelope?: unknown; meta?: unknown }> = [];
  const handler = createMcpHandler(
    () => {
      const s = new McpServer(
        { name: 'v2-upstream', version: '2.4.0' },
        { capabilities: { logging: {}, tools: { listChanged: true } }, instructions: 'ask nicely' },
      );
      s.registerTool('count', { inputSchema: z.object({ to: z.number().int() }) }, async ({ to }, ctx) => {
        seen.push({ tool: 'count', envelope: ctx.mcpReq.envelope, meta: ctx.mcpReq._meta });
        const token = ctx.mcpReq._meta?.progressToken;
        for (let i = 1; i <= to; i++) {
          if (token !== undefined) await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: to } });
        }
        await ctx.mcpReq.log('info', 'counted');
        return { content: [{ type: 'text', text: `counted to ${to}` }] };
      });
      // Two MRTR rounds: the first answer travels in requestState, so the retry alone must carry everything.
      s.registerTool('greet_twice', { inputSchema: z.object({}) }, async (_args, ctx) => {
        const state = ctx.mcpReq.requestState<string>();
        seen.push({ tool: 'greet_twice', requestState: state, responses: ctx.mcpReq.inputResponses });
        const schema = { type: 'object' as const, properties: { v: { type: 'string' as const } }, required: ['v'] };
        if (state === undefined) {
          return inputRequired({ inputRequests: { name: inputRequired.elicit({ message: 'Your name?', requestedSchema: schema }) }, requestState: 'round-1' });
        }
        if (state === 'round-1') {
          const name = acceptedContent(ctx.mcpReq.inputResponses, 'name')?.v;
          return inputRequired({
            inputRequests: { color: inputRequired.elicit({ message: 'Your colour?', requestedSchema: schema }) },
            requestState: `round-2:${String(name)}`,
          });
        }
        const color = acceptedContent(ctx.mcpReq.inputResponses, 'color')?.v;
        return { content: [{ type: 'text', text: `Hello ${state.slice('round-2:'.length)}, ${String(color)}` }] };
      });
      s.registerTool(
        'query',
        {
          inputSchema: z.object({
            region: z.string().meta({ 'x-mcp-header': 'Region' }),
            limit: z.number().int().meta({ 'x-mcp-header': 'Limit' }),
            note: z.string().optional().meta({ 'x-mcp-header': 'Note' }),
          }),
        },
        async (args) => ({ content: [{ type: 'text', text: JSON.stringify(args) }] }),
      );
      return s;
    },
    { legacy: 'reject' },
  );
  const node = toNodeHandler(handler);
  const server = http.createServer((req, res) => void node(sdkRequest(req), res));
  return { server, handler, seen };
}

t.test('(a) v2 server: discover, progress and log, two MRTR rounds, x-mcp-header, -32021, -32601', async (t) => {
  const { server, handler, seen } = v2Server();
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'v2', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    await handler.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  t.test('identity from server/discover, shared by concurrent callers', async (t) => {
    t.equal(client.knownIdentity, undefined);
    const [a, b] = await Promise.all([client.identity(caller), client.identity(caller)]);
    t.equal(a, b, 'one answer for both');
    t.equal(a.protocolVersion, '2026-07-28');
    t.strictSame(a.serverInfo, { name: 'v2-upstream', version: '2.4.0' });
    t.equal(a.instructions, 'ask nicely');
    t.ok((a.capabilities as any).tools, 'capabilities as the upstream sent them');
    t.equal(client.knownIdentity, a);
    t.strictSame(client.stats(), { sessions: 0 });
    client.retain(caller)();
  });

  t.test('progress and log notifications on the call, then the result', async (t) => {
    const call = await client.call({ ...caller, logLevel: 'info' }, 'tools/call', { name: 'count', arguments: { to: 3 }, _meta: { progressToken: 'p1' } });
    const { events, final } = await collect(call);
    const progress = events.filter((e) => e.kind === 'notification' && e.message.method === 'notifications/progress');
    t.strictSame(
      progress.map((e) => (e as any).message.params.progress),
      [1, 2, 3],
    );
    t.ok(
      events.some((e) => e.kind === 'notification' && e.message.method === 'notifications/message'),
      'the log level reached the upstream',
    );
    t.equal(resultOf(final).content[0].text, 'counted to 3');
    t.equal(call.finished, true);
    const env = seen.find((s) => s.tool === 'count')?.envelope as any;
    t.strictSame(env['io.modelcontextprotocol/clientInfo'], { name: 'ide', version: '9' }, 'the caller’s client info');
    t.strictSame(env['io.modelcontextprotocol/clientCapabilities'], { elicitation: {} }, 'the caller’s capabilities');
    t.equal((seen.find((s) => s.tool === 'count')?.meta as any)?.progressToken, 'p1', 'the caller’s own _meta key kept');
  });

  t.test('the gateway’s client info when the caller has none', async (t) => {
    const resp = await requestOnce(client, { capabilities: {} }, 'tools/call', { name: 'count', arguments: { to: 0 } });
    t.ok('result' in resp);
    t.strictSame((seen.filter((s) => s.tool === 'count').at(-1)?.envelope as any)?.['io.modelcontextprotocol/clientInfo'], CLIENT_INFO);
  });

  t.test('two MRTR rounds become two input requests, answered through respond()', async (t) => {
    seen.length = 0;
    const call = await client.call(caller, 'tools/call', { name: 'greet_twice', arguments: {} });
    const first = await call.next();
    t.equal(first.kind, 'request');
    if (first.kind !== 'request') return;
    t.equal(first.message.id, '1:name', 'id unique for the call: round and key');
    t.equal(first.message.method, 'elicitation/create');
    t.equal((first.message.params as any)._meta['mcp-tasks-gateway/inputKey'], 'name', 'the upstream key as a hint');
    await call.respond(first.message.id, { result: { action: 'accept', content: { v: 'Ada' } } });
    const second = await call.next();
    t.equal(second.kind, 'request');
    if (second.kind !== 'request') return;
    t.equal(second.message.id, '2:color');
    await t.rejects(call.respond(first.message.id, { result: {} }), /no open input request/, 'an answer to a closed round is refused');
    await call.respond(second.message.id, { result: { action: 'accept', content: { v: 'teal' } } });
    const final = await call.next();
    t.equal(resultOf(final).content[0].text, 'Hello Ada, teal');
    t.strictSame(
      seen.map((s) => s.requestState),
      [undefined, 'round-1', 'round-2:Ada'],
      'each retry echoed the state of the round before',
    );
    t.strictSame(seen[2]?.responses, { color: { action: 'accept', content: { v: 'teal' } } }, 'only this round’s answers, by the upstream’s keys');
  });

  t.test('an error answer to an input request ends the call with that error', async (t) => {
    const call = await client.call(caller, 'tools/call', { name: 'greet_twice', arguments: {} });
    const first = await call.next();
    if (first.kind !== 'request') return t.fail('expected an input request');
    await call.respond(first.message.id, { error: { code: -32601, message: 'not supported here' } });
    const final = await call.next();
    t.equal(final.kind, 'response');
    t.strictSame((final as any).message.error, { code: -32601, message: 'not supported here' });
  });

  t.test('x-mcp-header arguments become Mcp-Param-* headers the v2 server validates', async (t) => {
    const args = { region: 'Zürich ', limit: 7, note: '=?base64?literal?=' };
    const resp = await requestOnce(client, caller, 'tools/call', { name: 'query', arguments: args });
    t.ok('result' in resp, `the server accepted the headers: ${JSON.stringify(resp)}`);
    t.strictSame(JSON.parse((resp as any).result.content[0].text), args);
    // The negative control: the same call without the headers is refused by this server.
    const raw = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': 'query',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: {
          name: 'query',
          arguments: args,
          _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
        },
      }),
    });
    t.equal(raw.status, 400);
    t.equal(((await raw.json()) as any).error.code, -32020);
  });

  t.test('-32021 in a 400 and -32601 in a 404 are in-band responses', async (t) => {
    const refused = await requestOnce(client, { capabilities: {} }, 'tools/call', { name: 'greet_twice', arguments: {} });
    t.equal((refused as any).error?.code, -32021, 'the upstream refuses to ask an undeclared capability');
    t.ok((refused as any).error?.data?.requiredCapabilities?.elicitation);
    const unknown = await requestOnce(client, caller, 'acme/unknown', {});
    t.equal((unknown as any).error?.code, -32601);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// (b) a raw 2026 server in plain JSON that records what it received

interface Received {
  headers: http.IncomingHttpHeaders;
  body: any;
}

function rawServer(answer: (body: any, res: http.ServerResponse, req: http.IncomingMessage) => void) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (d) => (text += d));
    req.on('end', () => {
      const body = JSON.parse(text);
      received.push({ headers: req.headers, body });
      answer(body, res, req);
    });
  });
  return { server, received };
}

function json(res: http.ServerResponse, status: number, message: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(message));
}

const QUERY_TOOL = {
  name: 'query',
  inputSchema: {
    type: 'object',
    properties: {
      region: { type: 'string', 'x-mcp-header': 'Region' },
      opts: { type: 'object', properties: { verbose: { type: 'boolean', 'x-mcp-header': 'Verbose' } } },
      count: { type: 'integer', 'x-mcp-header': 'Count' },
    },
  },
};
const BROKEN_TOOL = { name: 'broken', inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } } };

t.test('(b) raw JSON server: the headers and envelope it receives', async (t) => {
  const { server, received } = rawServer((body, res) => {
    const ok = (result: object) => json(res, 200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', ...result } });
    if (body.method === 'tools/list') return ok({ tools: [QUERY_TOOL, BROKEN_TOOL] });
    if (body.method === 'tools/call') return ok({ content: [{ type: 'text', text: 'done' }] });
    if (body.method === 'resources/read') return ok({ contents: [] });
    if (body.method === 'tasks/get') return ok({ taskId: body.params.taskId, status: 'working' });
    if (body.method === 'gone') return json(res, 404, { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } });
    if (body.method === 'plain') return void res.writeHead(502, { 'content-type': 'text/plain' }).end('bad gateway');
    return ok({});
  });
  const url = await listen(server);
  const client = new ModernUpstreamClient({
    name: 'raw',
    url,
    timeoutMs: 10_000,
    clientInfo: CLIENT_INFO,
    staticHeaders: { 'X-Api-Key': 'k1', 'Mcp-Session-Id': 'stale', 'Last-Event-ID': '9' },
  });
  t.teardown(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const who: UpstreamCaller = { ...caller, authorization: 'Bearer tok', logLevel: 'warning' };

  const listed = await requestOnce(client, who, 'tools/list', {});
  t.strictSame(
    (listed as any).result.tools.map((x: any) => x.name),
    ['query'],
    'a tool with invalid x-mcp-header declarations is left out',
  );

  const before = received.length;
  const resp = await requestOnce(client, who, 'tools/call', {
    name: 'query',
    arguments: { region: ' eu west ', opts: { verbose: true }, count: 12, extra: 'x' },
  });
  t.equal((resp as any).result.content[0].text, 'done');
  t.equal(received.length, before + 1, 'the schema learned from tools/list: no second tools/list');
  const call = received.at(-1) as Received;
  t.equal(call.headers['content-type'], 'application/json');
  t.match(call.headers.accept, /application\/json/);
  t.match(call.headers.accept, /text\/event-stream/);
  t.equal(call.headers['mcp-protocol-version'], '2026-07-28');
  t.equal(call.headers['mcp-method'], 'tools/call');
  t.equal(call.headers['mcp-name'], 'query');
  t.equal(call.headers['mcp-param-region'], `=?base64?${Buffer.from(' eu west ').toString('base64')}?=`, 'sentinel for surrounding spaces');
  t.equal(call.headers['mcp-param-verbose'], 'true', 'nested through properties');
  t.equal(call.headers['mcp-param-count'], '12');
  t.equal(call.headers.authorization, 'Bearer tok', 'the caller’s Authorization');
  t.equal(call.headers['x-api-key'], 'k1', 'the static headers');
  t.equal(call.headers['mcp-session-id'], undefined, 'never a session id');
  t.equal(call.headers['last-event-id'], undefined, 'never Last-Event-ID');
  t.strictSame(call.body.params._meta, {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
    'io.modelcontextprotocol/clientInfo': { name: 'ide', version: '9' },
    'io.modelcontextprotocol/logLevel': 'warning',
  });

  await requestOnce(client, who, 'tools/call', { name: 'query', arguments: { region: null } });
  t.equal(received.at(-1)?.headers['mcp-param-region'], undefined, 'a null value gets no header');

  await requestOnce(client, who, 'resources/read', { uri: 'file:///ü.txt' });
  t.equal(received.at(-1)?.headers['mcp-name'], `=?base64?${Buffer.from('file:///ü.txt').toString('base64')}?=`);
  await requestOnce(client, who, 'tasks/get', { taskId: 'task-7' });
  t.equal(received.at(-1)?.headers['mcp-name'], 'task-7', 'Mcp-Name for tasks/* is the task id');
  await requestOnce(client, who, 'tools/list', {});
  t.equal(received.at(-1)?.headers['mcp-name'], undefined, 'no Mcp-Name where nothing is named');

  const gone = await requestOnce(client, who, 'gone', {});
  t.strictSame((gone as any).error, { code: -32601, message: 'Method not found' }, 'a JSON-RPC error in a 404 is in-band');
  const err = await client.call(who, 'plain', {}).catch((e) => e);
  t.type(err, UpstreamHttpError, 'a non-2xx without a JSON-RPC body');
  t.equal(err.status, 502);

  const ids = received.map((r) => r.body.id);
  t.equal(new Set(ids).size, ids.length, 'every POST had its own JSON-RPC id');
});

t.test('(b) a HeaderMismatch makes the client re-read the tool schema and retry once', async (t) => {
  let schemaVersion = 0;
  const { server, received } = rawServer((body, res, req) => {
    if (body.method === 'tools/list') {
      schemaVersion++;
      const tool =
        schemaVersion === 1
          ? { name: 'q', inputSchema: { type: 'object', properties: {} } }
          : { name: 'q', inputSchema: { type: 'object', properties: { r: { type: 'string', 'x-mcp-header': 'R' } } } };
      return json(res, 200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', tools: [tool] } });
    }
    if (req.headers['mcp-param-r'] !== body.params.arguments.r)
      return json(res, 400, { jsonrpc: '2.0', id: body.id, error: { code: -32020, message: 'Mcp-Param-R missing' } });
    return json(res, 200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', content: [] } });
  });
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'raw', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const resp = await requestOnce(client, caller, 'tools/call', { name: 'q', arguments: { r: 'x' } });
  t.ok('result' in resp, 'answered after the retry');
  t.strictSame(
    received.map((r) => r.body.method),
    ['tools/list', 'tools/call', 'tools/list', 'tools/call'],
  );
});

t.test('-32022 naming 2026-07-28 among the supported versions: asked again once; a list without it, not', async (t) => {
  const refusals = new Map<string, number>();
  const { server, received } = rawServer((body, res) => {
    const name = String(body.params?.name ?? body.method);
    const n = (refusals.get(name) ?? 0) + 1;
    refusals.set(name, n);
    const supported = name === 'other' ? ['2027-01-01'] : ['2026-07-28'];
    // 'once' is refused the first time only; 'always' and 'other' every time.
    if (name !== 'once' || n === 1) {
      return json(res, 400, {
        jsonrpc: '2.0',
        id: body.id,
        error: { code: -32022, message: 'Unsupported protocol version', data: { supported, requested: '2026-07-28' } },
      });
    }
    return json(res, 200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', messages: [] } });
  });
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'raw', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const ok = await requestOnce(client, caller, 'prompts/get', { name: 'once' });
  t.ok('result' in ok, 'answered on the retry');
  const again = await requestOnce(client, caller, 'prompts/get', { name: 'always' });
  t.match(again, { error: { code: -32022 } }, 'refused twice: the refusal reaches the caller');
  const other = await requestOnce(client, caller, 'prompts/get', { name: 'other' });
  t.match(other, { error: { code: -32022 } }, 'a list without our version: no retry');
  t.same(
    received.map((r) => r.body.params.name),
    ['once', 'once', 'always', 'always', 'other'],
    'one retry each where our version is listed',
  );
  t.ok(
    received.every(
      (r) => r.headers['mcp-protocol-version'] === '2026-07-28' && r.body.params._meta['io.modelcontextprotocol/protocolVersion'] === '2026-07-28',
    ),
    'every attempt with the version header and _meta',
  );
});

t.test('(b) MRTR rounds are bounded; a state-only round is retried at once', async (t) => {
  const { server, received } = rawServer((body, res) => {
    if (body.params.name === 'malformed') {
      return json(res, 200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'input_required', inputRequests: { k: { params: {} } } } });
    }
    const n = received.length;
    json(res, 200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'input_required', requestState: `s${n}` } });
  });
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'raw', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO, maxRounds: 3 });
  t.teardown(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const call = await client.call(caller, 'prompts/get', { name: 'p', arguments: { a: '1' } });
  const { events, final } = await collect(call);
  t.strictSame(events, [], 'no input request to answer');
  t.equal(final.kind, 'response');
  t.equal((final as any).message.error.code, -32603);
  t.match((final as any).message.error.message, /3 rounds/);
  t.equal((final as any).message.id, received[0]?.body.id, 'the final response carries the call’s first id');
  t.strictSame(
    received.map((r) => r.body.params.requestState),
    [undefined, 's1', 's2', 's3'],
    'the exact state echoed each time',
  );
  t.ok(
    received.every((r) => r.body.params.name === 'p' && r.body.params.arguments.a === '1'),
    'the original params on every retry',
  );
  t.ok(
    received.every((r) => r.body.params.inputResponses === undefined),
    'no inputResponses when nothing was asked',
  );

  const malformed = await requestOnce(client, caller, 'tools/call', { name: 'malformed', arguments: {} });
  t.equal((malformed as any).error?.code, -32603, 'a malformed InputRequiredResult ends the call');
  t.match((malformed as any).error?.message, /malformed InputRequiredResult/);

  // input_required on a method that may not carry it is not a round: it is the response as sent.
  const resp = await requestOnce(client, caller, 'completion/complete', {});
  t.equal((resp as any).result.resultType, 'input_required');
});

// ---------------------------------------------------------------------------------------------------------------
// (c) a listen stream

t.test('(c) subscriptions/listen: acknowledgement, then notifications without the subscription id', async (t) => {
  const { server, handler } = v2Server();
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'v2', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    await handler.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const stop = new AbortController();
  const l = await client.listen(caller, { toolsListChanged: true, promptsListChanged: true }, stop.signal);
  t.equal(l.accepted.toolsListChanged, true, 'the server serves tool list changes');
  t.not(l.accepted.promptsListChanged, true, 'a server without prompts does not accept prompt changes');
  const it = l.notifications[Symbol.asyncIterator]();
  handler.notify.toolsChanged();
  const first = await it.next();
  t.equal(first.done, false);
  t.equal(first.value?.method, 'notifications/tools/list_changed');
  t.equal((first.value?.params?._meta as any)?.['io.modelcontextprotocol/subscriptionId'], undefined, 'subscriptionId removed');
  stop.abort();
  const after = await it.next();
  t.equal(after.done, true, 'the stream ends when the signal aborts');
});

t.test('(c) a listen stream on a raw server: accepted subset, graceful close, refusal', async (t) => {
  const sid = 'io.modelcontextprotocol/subscriptionId';
  const { server, received } = rawServer((body, res) => {
    if (body.params.notifications.resourceSubscriptions?.[0] === 'refuse') {
      return json(res, 404, { jsonrpc: '2.0', id: body.id, error: { code: -32601, message: 'Method not found' } });
    }
    const send = (m: unknown) => res.write(`data: ${JSON.stringify(m)}\n\n`);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    send({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: { resourceSubscriptions: ['file:///a'] }, _meta: { [sid]: body.id } },
    });
    send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///a', _meta: { [sid]: body.id, keep: 1 } } });
    send({ jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', _meta: { [sid]: body.id } } });
    send({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///after-close' } });
    res.end();
  });
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'raw', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const l = await client.listen(caller, { resourceSubscriptions: ['file:///a', 'file:///b'] }, new AbortController().signal);
  t.strictSame(l.accepted, { resourceSubscriptions: ['file:///a'] });
  t.strictSame(received[0]?.body.params.notifications, { resourceSubscriptions: ['file:///a', 'file:///b'] }, 'the filter as sent');
  t.equal(received[0]?.headers['mcp-method'], 'subscriptions/listen');
  const got = [];
  for await (const n of l.notifications) got.push(n);
  t.strictSame(
    got,
    [{ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'file:///a', _meta: { keep: 1 } } }],
    'nothing after the closing result',
  );
  await t.rejects(client.listen(caller, { resourceSubscriptions: ['refuse'] }, new AbortController().signal), UpstreamUnavailableError);
});

// ---------------------------------------------------------------------------------------------------------------
// (d) cancel aborts the POST

t.test('(d) cancel() closes the POST, and the server sees it', async (t) => {
  let sawClose: () => void = () => {};
  const closed = new Promise<void>((r) => (sawClose = r));
  const { server } = rawServer((body, res, req) => {
    if (body.method === 'tools/list') return json(res, 200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', tools: [] } });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 1, progress: 1 } })}\n\n`);
    req.socket.on('close', sawClose);
  });
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'raw', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const call = await client.call(caller, 'tools/call', { name: 'slow', arguments: {}, _meta: { progressToken: 1 } });
  const progress = await call.next();
  t.equal(progress.kind, 'notification', 'the stream is open');
  t.equal(await call.nextUnless(20, undefined), undefined, 'nothing more yet');
  t.equal(call.pending, 0);
  t.equal(call.finished, false);
  call.cancel('user stopped it');
  call.cancel('twice is fine');
  await closed;
  t.pass('the server saw the connection close');
  const final = await call.next();
  t.equal(final.kind, 'failure');
  t.match((final as any).error.message, /cancelled: user stopped it/);
  t.equal(call.finished, true);
});

t.test('(d) the caller’s signal and close() abort what is in flight', async (t) => {
  const { server } = rawServer((body, res) => {
    if (body.method === 'tools/list') return json(res, 200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', tools: [] } });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(': open\n\n');
  });
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'raw', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const signal = new AbortController();
  const viaSignal = await client.call(caller, 'tools/call', { name: 'x', arguments: {} }, signal.signal);
  signal.abort(new Error('client went away'));
  const a = await viaSignal.next();
  t.equal(a.kind, 'failure');
  t.match((a as any).error.message, /client went away/);

  const viaClose = await client.call(caller, 'tools/call', { name: 'x', arguments: {} });
  await client.close();
  await client.close();
  const b = await viaClose.next();
  t.equal(b.kind, 'failure');
  t.type((b as any).error, UpstreamUnavailableError);
  await t.rejects(client.call(caller, 'tools/list', {}), UpstreamUnavailableError, 'a closed client takes no calls');
});

// ---------------------------------------------------------------------------------------------------------------
// (e) failures

t.test('(e) an unreachable upstream is UpstreamUnavailableError; a silent one times out', async (t) => {
  const probe = http.createServer();
  const deadUrl = await listen(probe);
  await new Promise((r) => probe.close(r));
  const dead = new ModernUpstreamClient({ name: 'dead', url: deadUrl, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  const e1 = await dead.call(caller, 'tools/list', {}).catch((e) => e);
  t.type(e1, UpstreamUnavailableError);
  t.ok(e1.cause, 'the cause is kept');
  await t.rejects(dead.identity(caller), UpstreamUnavailableError, 'identity fails the same way, and is not cached');
  await t.rejects(dead.listen(caller, { toolsListChanged: true }, new AbortController().signal), UpstreamUnavailableError);
  await dead.close();

  const silent = http.createServer(() => {}); // accepts, never answers
  const silentUrl = await listen(silent);
  t.teardown(async () => {
    silent.closeAllConnections();
    await new Promise((r) => silent.close(r));
  });
  const slow = new ModernUpstreamClient({ name: 'silent', url: silentUrl, timeoutMs: 200, clientInfo: CLIENT_INFO });
  const e2 = await slow.call(caller, 'tools/list', {}).catch((e) => e);
  t.type(e2, UpstreamTimeoutError);
  t.ok(e2.cause, 'the cause is kept');
  await slow.close();
});

t.test('(e) a stream that ends without a response is a failure event', async (t) => {
  const { server } = rawServer((_body, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.end(`data: ${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'x' } })}\n\n`);
  });
  const url = await listen(server);
  const client = new ModernUpstreamClient({ name: 'raw', url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
  t.teardown(async () => {
    await client.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const { events, final } = await collect(await client.call(caller, 'tools/call', { name: 'x', arguments: {} }));
  t.equal(events.length, 1);
  t.equal(final.kind, 'failure');
  t.type((final as any).error, UpstreamUnavailableError);
});

// ---------------------------------------------------------------------------------------------------------------
// (f) the shared modern-only fixture, with answers as JSON-or-SSE (auto) and always SSE

for (const responseMode of ['auto', 'sse'] as const) {
  t.test(`(f) the modern fixture, responseMode ${responseMode}`, async (t) => {
    const fixture = await startModernFixture({ mode: 'modern', responseMode });
    const client = new ModernUpstreamClient({ name: 'fixture', url: fixture.url, timeoutMs: 10_000, clientInfo: CLIENT_INFO });
    t.teardown(async () => {
      await client.close();
      await fixture.close();
    });
    const full: UpstreamCaller = { capabilities: { elicitation: {}, sampling: {}, roots: {} }, clientInfo: { name: 'ide', version: '9' } };
    const elicited = (v: Record<string, unknown>) => ({ result: { action: 'accept', content: v } });

    t.equal((await client.identity(full)).serverInfo.name, 'modern-fixture-server');

    // Multi-round: step1, then step2, the sealed requestState echoed in between.
    const multi = await client.call(full, 'tools/call', { name: 'test_input_required_result_multi_round', arguments: {} });
    const step1 = await multi.next();
    t.equal(step1.kind === 'request' && step1.message.id, '1:step1');
    if (step1.kind === 'request') await multi.respond(step1.message.id, elicited({ name: 'Ada' }));
    const step2 = await multi.next();
    t.equal(step2.kind === 'request' && step2.message.id, '2:step2');
    if (step2.kind === 'request') await multi.respond(step2.message.id, elicited({ color: 'teal' }));
    t.equal(resultOf(await multi.next()).content[0].text, 'Multi-round complete for Ada who likes teal');

    // Three kinds in one round, answered in another order than asked.
    const many = await client.call(full, 'tools/call', { name: 'test_input_required_result_multiple_inputs', arguments: {} });
    const asked: Array<{ id: string | number; method: string }> = [];
    while (asked.length < 3) {
      const e = await many.next();
      if (e.kind !== 'request') return t.fail(`expected input requests, got ${e.kind}`);
      asked.push({ id: e.message.id, method: e.message.method });
    }
    t.strictSame(asked.map((a) => a.id).sort(), ['1:client_roots', '1:greeting', '1:user_name']);
    const answers: Record<string, { result: Record<string, unknown> }> = {
      'roots/list': { result: { roots: [{ uri: 'file:///w' }] } },
      'sampling/createMessage': { result: { role: 'assistant', content: { type: 'text', text: 'Hi!' }, model: 'm', stopReason: 'endTurn' } },
      'elicitation/create': elicited({ name: 'Bo' }),
    };
    for (const a of [...asked].reverse()) await many.respond(a.id, answers[a.method] as { result: Record<string, unknown> });
    t.equal(resultOf(await many.next()).content[0].text, 'Name: Bo; Greeting: Hi!; Roots: 1');

    // -32021 without the capability, the input request with it.
    const refused = await requestOnce(client, { capabilities: {} }, 'tools/call', { name: 'test_missing_capability', arguments: {} });
    t.equal((refused as any).error?.code, -32021);
    t.strictSame((refused as any).error?.data?.requiredCapabilities, { sampling: {} });

    // Progress, then cancel: the fixture sees the request cancelled.
    const cancelled = fixture.nextCancellation();
    const wait = await client.call(full, 'tools/call', { name: 'test_cancellable_wait', arguments: { maxMs: 30_000 }, _meta: { progressToken: 'w' } });
    const progress = await wait.next();
    t.equal(progress.kind === 'notification' && progress.message.method, 'notifications/progress');
    wait.cancel('enough');
    t.equal(await cancelled, 'test_cancellable_wait', 'closing the stream cancelled the upstream call');

    // A listen stream hears a list change.
    const stop = new AbortController();
    const l = await client.listen(full, { toolsListChanged: true }, stop.signal);
    t.equal(l.accepted.toolsListChanged, true);
    const it = l.notifications[Symbol.asyncIterator]();
    fixture.notifyListChanged('tools');
    t.equal((await it.next()).value?.method, 'notifications/tools/list_changed');
    stop.abort();
    t.equal((await it.next()).done, true);
  });
}
