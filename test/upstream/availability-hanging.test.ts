/**
 * An upstream that hangs from the start (a TCP server that accepts and never answers), through the gateway:
 * the first request waits its probe's bound and gets 504; every later one is answered at once with 503 and a
 * Retry-After hint, without the gateway touching the upstream; once a real server listens there, traffic flows.
 * "At once" is shown by ordering (the answer came before the hanging server saw any new request), never by
 * measuring time. Requests, not connections, are counted: after an aborted request undici opens a spare
 * connection to the origin on its own, which carries nothing.
 */
import net from 'node:net';
import t from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { startStack } from '../helpers/stack.js';
import { createTask, getTask, pollToEnd } from '../helpers/task-helpers.js';
import { startEraServer, untilServed } from '../helpers/era-servers.js';

/** A TCP server that accepts connections and never answers; records each request (a socket's first bytes) in `events`. */
async function hangingServer(events: string[]): Promise<{ port: number; requests: () => number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let count = 0;
  const srv = net.createServer((s) => {
    sockets.add(s);
    s.on('data', () => {
      count++;
      events.push('upstream request');
    });
    s.on('error', () => {});
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve));
  let closed: Promise<void> | undefined;
  return {
    port: (srv.address() as net.AddressInfo).port,
    requests: () => count,
    close() {
      closed ??= new Promise<void>((resolve) => {
        srv.close(() => resolve());
        for (const s of sockets) s.destroy();
      });
      return closed;
    },
  };
}

t.test('a hanging upstream: one bounded wait, then immediate 503s with Retry-After, then recovery', async (t) => {
  const events: string[] = [];
  const hanging = await hangingServer(events);
  t.teardown(() => hanging.close());
  const { url } = await startGateway(
    { upstreams: [{ name: 'hangs', path: '/mcp', url: `http://127.0.0.1:${hanging.port}/mcp`, probeTimeoutMs: 1_000 }] },
    { t },
  );

  const first = await post(url, 'tools/list', {}, { id: 'first' });
  events.push('first answered');
  t.equal(first.status, 504, 'the first request waited for the probe’s bound');
  t.same([first.body.id, first.body.error.code], ['first', -32603]);
  t.ok(hanging.requests() >= 1, 'the probe asked the upstream');

  const seenBefore = hanging.requests();
  const second = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'second',
      method: 'tools/list',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } },
    }),
  });
  const secondBody = (await second.json()) as any;
  events.push('second answered');
  t.equal(second.status, 503, 'known to be down: 503');
  t.ok(Number(second.headers.get('retry-after')) >= 1, `Retry-After: ${second.headers.get('retry-after')}`);
  t.same([secondBody.id, secondBody.error.code], ['second', -31003], 'unavailable: a code to retry, not an internal error');
  t.equal(secondBody.error.data?.retryAfterMs, Number(second.headers.get('retry-after')) * 1000, 'the wait in the data too');
  t.match(secondBody.error.message, /Upstream unavailable: hangs is down/);
  t.equal(hanging.requests(), seenBefore, 'answered without a request to the upstream');
  t.same(events.slice(events.indexOf('first answered')), ['first answered', 'second answered'], 'nothing reached the upstream in between');

  const health = (await (await fetch(new URL('/healthz', url))).json()) as any;
  t.same(
    health.upstreams.map((u: any) => [u.name, u.state]),
    [['hangs', 'down']],
    '/healthz says so',
  );

  // Legacy traffic is refused at once as well.
  const legacyInit = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'l', version: '1' } },
    }),
  });
  t.equal(legacyInit.status, 503, 'a legacy initialize');
  await legacyInit.text();
  const legacyGet = await fetch(url, { method: 'GET', headers: { accept: 'text/event-stream' } });
  t.equal(legacyGet.status, 503, 'a GET stream');
  await legacyGet.text();
  events.push('legacy answered');
  t.equal(hanging.requests(), seenBefore, 'still no request upstream');

  // The upstream comes back (a dual-era server on the same port): the background re-probe finds it.
  await hanging.close();
  const server = await startEraServer('stateless', hanging.port);
  t.teardown(() => server.close());
  await server.waitFor((s) => s.rpcMethod === 'server/discover');
  const back = await untilServed(() => post(url, 'tools/call', { name: 'greet', arguments: { name: 'Back' } }));
  t.equal(back.status, 200);
  t.same(back.body.result?.content, [{ type: 'text', text: 'Hello, Back!' }]);

  const healthy = (await (await fetch(new URL('/healthz', url))).json()) as any;
  // A 2025-11-25 client came while it was down: the re-probe asked its 2025-11-25 side too.
  t.same(
    healthy.upstreams.map((u: any) => [u.state, u.modern, u.legacy]),
    [['up', true, true]],
    '/healthz: up, both eras, learned by the re-probe',
  );
  const legacyBack = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'l', version: '1' } },
    }),
  });
  t.equal(legacyBack.status, 200, 'a legacy client is served');
  await legacyBack.text();
  const both = (await (await fetch(new URL('/healthz', url))).json()) as any;
  t.same(
    both.upstreams.map((u: any) => [u.state, u.modern, u.legacy]),
    [['up', true, true]],
    '/healthz: still both eras',
  );

  const client = new Client({ name: 'legacy-after', version: '1' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.teardown(() => client.close());
  t.same(
    (await client.callTool({ name: 'greet', arguments: { name: 'L' } })).content,
    [{ type: 'text', text: 'Hello, L!' }],
    'legacy clients pass through again',
  );
});

t.test('an upstream that dies after serving: the failing request triggers a re-probe, later ones are refused at once', async (t) => {
  const server = await startEraServer('reject');
  const { url } = await startGateway({ upstreams: [{ name: 'dies', path: '/mcp', url: server.url }] }, { t });
  t.equal((await post(url, 'tools/list')).status, 200);

  await server.close();
  const failing = await post(url, 'tools/list', {}, { id: 'f' });
  t.equal(failing.status, 502, 'the request that finds it gone');
  t.same([failing.body.id, failing.body.error.code], ['f', -32603]);
  const refused = await untilServed(
    () => post(url, 'tools/list'),
    (r) => r.status === 503,
  );
  t.equal(refused.status, 503, 'then known to be down');
});

t.test('while the upstream is known to be down, the gateway still answers for its own tasks', async (t) => {
  const stack = await startStack({}, { tools: { greet: { task: 'always', afterMs: 0 } } });
  t.teardown(() => stack.close());
  const task = await createTask(stack.url, 'greet', { name: 'Kept' });
  t.equal((await pollToEnd(stack.url, task.taskId)).at(-1).status, 'completed');

  await stack.fixture.close();
  const down = await untilServed(
    () => post(stack.url, 'tools/list'),
    (r) => r.status === 503,
  );
  t.equal(down.status, 503, 'known to be down');
  const got = await getTask(stack.url, task.taskId);
  t.equal(got.status, 200, 'tasks/get is answered from the gateway’s records');
  t.equal(got.body.result.status, 'completed');
  t.same(got.body.result.result?.content, [{ type: 'text', text: 'Hello, Kept!' }]);
});
