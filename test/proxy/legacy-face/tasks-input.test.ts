/**
 * A task's input requests on the 2025-11-25 wire, byte by byte (raw fetch, for what the SDK client hides): each one is
 * sent once, again only when the stream it went out on died; each is answered into the task once; one that waited for
 * a stream goes out when the session's GET stream opens. The real gateway in front of the sync-only modern fixture,
 * whose tools a rule wraps into gateway tasks.
 */
import t from 'tap';
import { startModernFixture } from '../../fixtures/modern-server.js';
import { startGateway } from '../../helpers/gateway.js';
import { SseReader } from '../../helpers/sse-reader.js';

const RELATED = 'io.modelcontextprotocol/related-task';
const HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** The gateway under test; its polls below wait on a status, not on pollIntervalMs, so the poll limit is lifted. */
async function stack(t: Teardown): Promise<string> {
  const fx = await startModernFixture({ mode: 'modern', tasks: 'sync' });
  const gateway = await startGateway({
    tasks: { pollBurst: 1_000_000 },
    upstreams: [{ name: 'fixture', path: '/mcp', url: fx.url, tools: { '*': { task: 'always' } } }],
  });
  t.teardown(async () => {
    await gateway.close();
    await fx.close();
  });
  return gateway.url;
}

/** A raw 2025-11-25 session of a client that declares elicitation. */
async function session(url: string) {
  const init = await fetch(url, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  await init.body?.cancel();
  const headers = { ...HEADERS, 'mcp-session-id': init.headers.get('mcp-session-id') as string };
  let id = 1;
  const send = (body: object, signal?: AbortSignal) => fetch(url, { method: 'POST', headers, body: JSON.stringify(body), ...(signal ? { signal } : {}) });
  return {
    headers,
    async request(method: string, params: object): Promise<any> {
      const res = await send({ jsonrpc: '2.0', id: id++, method, params });
      return res.json();
    },
    /** A request whose SSE answer is read message by message. */
    async stream(method: string, params: object, signal?: AbortSignal): Promise<SseReader> {
      return new SseReader(await send({ jsonrpc: '2.0', id: id++, method, params }, signal));
    },
    async respond(gid: string, result: object): Promise<number> {
      const res = await send({ jsonrpc: '2.0', id: gid, result });
      await res.body?.cancel();
      return res.status;
    },
    async get(signal: AbortSignal): Promise<SseReader> {
      return new SseReader(await fetch(url, { method: 'GET', headers: { ...headers, accept: 'text/event-stream' }, signal }));
    },
  };
}

t.test('a question goes out again only when its stream died, and is answered once', async (t) => {
  const url = await stack(t);
  const s = await session(url);
  const created = await s.request('tools/call', { name: 'confirm_delete', arguments: { filename: 'x.txt' }, task: { ttl: 60_000 } });
  const taskId = created.result.task.taskId as string;

  const first = new AbortController();
  const r1 = await s.stream('tasks/result', { taskId }, first.signal);
  const ask1 = await r1.next();
  t.equal(ask1.method, 'elicitation/create');
  t.same(ask1.params._meta[RELATED], { taskId }, 'the request names the task');
  first.abort();

  const r2 = await s.stream('tasks/result', { taskId });
  const ask2 = await r2.next();
  t.equal(ask2.method, 'elicitation/create', 'sent again: its first stream died');
  t.not(ask2.id, ask1.id, 'under a new id');

  t.equal(await s.respond(ask1.id, { action: 'accept', content: { confirm: true }, _meta: { [RELATED]: { taskId } } }), 202);
  t.equal(await s.respond(ask2.id, { action: 'accept', content: { confirm: false } }), 202, 'a second answer is accepted on the wire');
  const final = await r2.next();
  t.equal(final.result.content[0].text, 'Deleted x.txt', 'the first answer decided; the key was not answered twice');
  t.same(final.result._meta[RELATED], { taskId });
});

t.test('a question waiting for a stream goes out when the GET stream opens', async (t) => {
  const url = await stack(t);
  const s = await session(url);
  const created = await s.request('tools/call', { name: 'confirm_delete', arguments: { filename: 'y.txt' }, task: {} });
  const taskId = created.result.task.taskId as string;
  // Polled as a 2025-11-25 client does (2025-11-25 basic/utilities/tasks §Getting Tasks), a bounded number of times.
  let status = '';
  for (let i = 0; i < 500 && status !== 'input_required'; i++) status = (await s.request('tasks/get', { taskId })).result.status;
  t.equal(status, 'input_required');
  const closing = new AbortController();
  t.teardown(() => closing.abort());
  const get = await s.get(closing.signal);
  const { match: ask } = await get.until((m) => m.method === 'elicitation/create');
  t.same(ask.params._meta[RELATED], { taskId });
  t.equal(await s.respond(ask.id, { action: 'decline' }), 202);
  const { match: done } = await get.until((m) => m.method === 'notifications/tasks/status' && m.params.status === 'completed');
  t.equal(done.params.taskId, taskId);
  t.notOk(RELATED in (done.params._meta ?? {}), 'a status notification carries no related-task _meta');
  const r = await s.request('tasks/result', { taskId });
  t.equal(r.result.content[0].text, 'Kept y.txt (decline)');
});
