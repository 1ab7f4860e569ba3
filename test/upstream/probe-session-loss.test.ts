/**
 * Upstream session loss, whatever the upstream says: the bundled demo upstream (SDK-example style) answers a
 * session it forgot with 400 -32000 "Bad Request: no valid session", the legacy fixture with 404. Either way,
 * after the upstream restarts on the same port the gateway re-initializes once and the request succeeds: a
 * plain `tools/list` and a call the gateway wraps into a task.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import type { Gateway } from '../../src/app.js';
import { startDemoUpstream } from '../../src/demo/demo-server.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { createTask, pollToEnd } from '../helpers/task-helpers.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A gateway in front of `url`, with `tool` wrapped into a gateway task on every call. */
async function gatewayFor(t: Teardown, url: string, tool: string): Promise<{ gateway: Gateway; url: string }> {
  const cfg = {
    // No warm sessions: the tests count the initializes that session losses cause.
    sessions: { warmIdle: 0 },
    upstreams: [{ name: 'up', path: '/mcp', url, tools: { [tool]: { task: 'always', afterMs: 0 } } }],
  };
  return startGateway(cfg, { t });
}

/**
 * A forgotten session, as the upstream reports it to the gateway's first request after the restart. Sent on a
 * fresh connection (node:http without an agent), so that no keep-alive socket of the stopped server is reused.
 */
function forgottenSessionAnswer(url: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2025-11-25',
          'mcp-session-id': 'a-session-from-before-the-restart',
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
  });
}

t.test('the demo upstream (400 "no valid session") restarts: tools/list and a wrapped call work again', async (t) => {
  const demo = await startDemoUpstream();
  const port = Number(new URL(demo.url).port);
  let current = demo;
  t.teardown(() => current.close());
  const { url } = await gatewayFor(t, demo.url, 'countdown');

  const before = await post(url, 'tools/list');
  t.equal(before.status, 200);
  t.ok(
    before.body.result.tools.some((tool: any) => tool.name === 'greet'),
    'served before the restart',
  );
  // Both callers (plain, and task-declaring) now hold an upstream session each.
  const first = await createTask(url, 'countdown', { n: 1 });
  t.equal((await pollToEnd(url, first.taskId)).at(-1).status, 'completed', 'a wrapped call before the restart');

  await demo.close();
  current = await startDemoUpstream(port);
  const said = await forgottenSessionAnswer(current.url);
  t.same([said.status, said.body?.error?.code], [400, -32000], 'the restarted upstream answers a forgotten session with 400, not 404');
  t.match(said.body?.error?.message, /no valid session/);

  const task = await createTask(url, 'countdown', { n: 1 });
  const last = (await pollToEnd(url, task.taskId)).at(-1);
  t.equal(last.status, 'completed', 'the wrapped call ran on a new session');
  t.same(last.result?.content, [{ type: 'text', text: 'Lift-off!' }]);

  const list = await post(url, 'tools/list');
  t.equal(list.status, 200);
  t.notOk(list.body.error, 'not the upstream’s "no valid session"');
  t.ok(
    list.body.result?.tools.some((tool: any) => tool.name === 'greet'),
    'tools/list after the restart',
  );

  const greet = await post(url, 'tools/call', { name: 'greet', arguments: { name: 'Again' } });
  t.same(greet.body.result?.content, [{ type: 'text', text: 'Hello, Again!' }]);
});

t.test('the legacy fixture (404 "Session not found") restarts: tools/list and a wrapped call work again', async (t) => {
  const fixture = await startLegacyFixture();
  const port = Number(new URL(fixture.url).port);
  let current = fixture;
  t.teardown(() => current.close());
  const { url } = await gatewayFor(t, fixture.url, 'greet');

  t.equal((await post(url, 'tools/list')).status, 200);
  const first = await createTask(url, 'greet', { name: 'First' });
  t.equal((await pollToEnd(url, first.taskId)).at(-1).status, 'completed', 'a wrapped call before the restart');
  await fixture.close();
  current = await startLegacyFixture({ port });
  const said = await forgottenSessionAnswer(current.url);
  t.same([said.status, said.body?.error?.code], [404, -32001], 'the restarted fixture answers a forgotten session with 404');

  const list = await post(url, 'tools/list');
  t.equal(list.status, 200);
  t.ok(list.body.result?.tools.length > 0, 'tools/list after the restart');
  const task = await createTask(url, 'greet', { name: 'Wrapped' });
  const last = (await pollToEnd(url, task.taskId)).at(-1);
  t.equal(last.status, 'completed');
  t.same(last.result?.content, [{ type: 'text', text: 'Hello, Wrapped!' }]);
});

t.test('a 400 that is not about the session stays the upstream’s own answer; the session is kept', async (t) => {
  // A raw legacy server (a real server's wire, written out): sessions by header, and a 400 JSON-RPC error
  // about the request itself for tools/call, as a strict server answers parameters it refuses.
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const body = text ? JSON.parse(text) : undefined;
      // The era probe's own initialize names itself (clientInfo.version "probe"); sessions' do not.
      if (body?.params?.clientInfo?.version !== 'probe') seen.push(`${req.method} ${body?.method ?? ''}`);
      const json = (status: number, payload: unknown, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(payload));
      if (req.method !== 'POST') return void res.writeHead(405).end();
      if (body.method === 'initialize') {
        return json(
          200,
          { jsonrpc: '2.0', id: body.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'raw', version: '1' } } },
          { 'mcp-session-id': 'raw-session' },
        );
      }
      if (body.id === undefined) return void res.writeHead(202).end();
      if (body.method === 'server/discover')
        return json(400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: no valid session ID provided' } });
      if (body.method === 'tools/call')
        return json(400, { jsonrpc: '2.0', id: body.id, error: { code: -32602, message: 'Invalid params: name must be a string' } });
      return json(200, { jsonrpc: '2.0', id: body.id, result: { tools: [] } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const { url } = await gatewayFor(t, `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, 'none');

  // One caller with credentials, its calls in turn: they reuse one pooled session.
  const headers = { authorization: 'Bearer one-caller' };
  const bad = await post(url, 'tools/call', { name: 'greet', arguments: { name: 42 } }, { headers });
  t.same(bad.body.error, { code: -32602, message: 'Invalid params: name must be a string' }, 'the upstream’s own refusal, in-band');
  t.equal((await post(url, 'tools/list', {}, { headers })).status, 200);
  t.equal(seen.filter((s) => s === 'POST initialize').length, 1, 'one session: no re-initialize for it');
});

/**
 * A raw legacy server (a real server's wire, written out) that forgets its sessions on demand and then answers
 * them with HTTP 400 and `message`, the way servers word it.
 */
async function forgetfulServer(t: Teardown, message: string): Promise<{ url: string; forget(): void; initializes(): number }> {
  const sessions = new Set<string>();
  let next = 0;
  let initializes = 0;
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const body = text ? JSON.parse(text) : undefined;
      const json = (status: number, payload: unknown, headers: Record<string, string> = {}) =>
        res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(payload));
      if (req.method !== 'POST') return void res.writeHead(405).end();
      if (body.method === 'initialize') {
        const sid = `s${++next}`;
        if (body.params?.clientInfo?.version !== 'probe') initializes++;
        sessions.add(sid);
        return json(
          200,
          {
            jsonrpc: '2.0',
            id: body.id,
            result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'forgetful', version: '1' } },
          },
          { 'mcp-session-id': sid },
        );
      }
      const sid = req.headers['mcp-session-id'];
      if (typeof sid !== 'string' || !sessions.has(sid)) return json(400, { jsonrpc: '2.0', id: body.id ?? null, error: { code: -32000, message } });
      if (body.id === undefined) return void res.writeHead(202).end();
      return json(200, { jsonrpc: '2.0', id: body.id, result: { tools: [{ name: 'echo', inputSchema: { type: 'object' } }] } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, forget: () => sessions.clear(), initializes: () => initializes };
}

t.test('the ways servers say a session is gone with 400 all lead to one re-initialize', async (t) => {
  for (const message of [
    'Bad Request: No valid session ID provided',
    'Bad Request: no valid session',
    'Session not found',
    'Invalid or expired session',
    'Unknown session id',
    'Bad Request: Server not initialized',
  ]) {
    const server = await forgetfulServer(t, message);
    const { url } = await gatewayFor(t, server.url, 'none');
    t.equal((await post(url, 'tools/list')).status, 200);
    server.forget();
    const after = await post(url, 'tools/list');
    t.same([after.status, after.body.result?.tools?.[0]?.name], [200, 'echo'], message);
    t.equal(server.initializes(), 2, `${message}: initialized once more`);
  }
});
