/**
 * A task store that cannot be reached, at the edge: both faces answer 503 with -31003 (unavailable) and Retry-After at once (never a
 * 500, never a hang), and serve again once the store is back. The store is a FAKE (the memory store behind a switch
 * that makes every call fail with StoreUnavailableError, as the Redis store does while Redis is down): the memory
 * store cannot be made unreachable.
 */
import { randomBytes } from 'node:crypto';
import t from 'tap';
import { MemoryTaskStore, StoreUnavailableError, type TaskStore } from '../../src/store/index.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { LEGACY_HEADERS } from '../helpers/legacy-face-stack.js';

/** FAKE: the memory store, failing every call while `down` (the bus heartbeat's failures are its own to ignore). */
function switchableStore(): { store: TaskStore; setDown(down: boolean): void } {
  const mem = new MemoryTaskStore({ maxTasks: 1000 });
  let down = false;
  const store = new Proxy(mem, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function' || prop === 'close') return v;
      return (...args: unknown[]) =>
        down ? Promise.reject(new StoreUnavailableError('FAKE: the store is switched off')) : (v as (...a: unknown[]) => unknown).apply(target, args);
    },
  }) as TaskStore;
  return { store, setDown: (d) => void (down = d) };
}

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };

t.test('store unavailable: 503, -31003 and Retry-After on the modern and the legacy face; served again once it is back', async (t) => {
  const fx = await startModernFixture({ mode: 'modern', tasks: 'sync', taskJobDelayMs: 50 });
  const { store, setDown } = switchableStore();
  const cfg = { upstreams: [{ name: 'fixture', path: '/mcp', url: fx.url, tools: { '*': { task: 'always' } } }] };
  const { gateway, url } = await startGateway(cfg, { deps: { stateKey: randomBytes(32), store } });
  t.teardown(async () => {
    setDown(false);
    await gateway.close();
    await store.close();
    await fx.close();
  });
  const legacy = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(url, { method: 'POST', headers: { ...LEGACY_HEADERS, ...headers }, body: JSON.stringify(body) });
  const init = {
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  };
  const sid = (await legacy(init)).headers.get('mcp-session-id') as string;
  t.ok(sid, 'a session while the store is up');

  setDown(true);
  const modern = await post(url, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0, label: 'x' } }, { capabilities: TASKS });
  t.equal(modern.status, 503, 'modern: a task that cannot be stored');
  t.equal(modern.body.error.code, -31003, 'unavailable (GatewayErrorCode.Unavailable), not an internal error');
  t.same(modern.body.error.data, { retryAfterMs: 1000 }, 'the retry hint in the data');
  t.match(modern.body.error.message, /task store is unavailable/);
  const got = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tasks/get',
      'mcp-name': 'gwt_unknown',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 9,
      method: 'tasks/get',
      params: {
        taskId: 'gwt_unknown',
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': TASKS },
      },
    }),
  });
  t.equal(got.status, 503, 'modern tasks/get');
  t.equal(got.headers.get('retry-after'), '1');
  t.equal(((await got.json()) as { error: { code: number } }).error.code, -31003);

  const refusedInit = await legacy(init);
  t.equal(refusedInit.status, 503, 'legacy initialize: the session cannot be stored');
  t.equal(refusedInit.headers.get('retry-after'), '1');
  t.equal(refusedInit.headers.get('mcp-session-id'), null, 'no session id handed out');
  t.equal(((await refusedInit.json()) as { error: { code: number } }).error.code, -31003);

  const unknown = await legacy({ jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': 'held-by-no-one-here' });
  t.equal(unknown.status, 503, 'legacy: a session this instance must read from the store');
  t.equal(unknown.headers.get('retry-after'), '1');

  const taskGet = await legacy({ jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { taskId: 'gwt_unknown' } }, { 'mcp-session-id': sid });
  t.equal(taskGet.status, 503, 'legacy tasks/get on a session held here');
  t.equal(taskGet.headers.get('retry-after'), '1');
  t.equal(((await taskGet.json()) as { error: { code: number } }).error.code, -31003);

  setDown(false);
  const back = await legacy({ jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { taskId: 'gwt_unknown' } }, { 'mcp-session-id': sid });
  t.equal(back.status, 200, 'the store is back: served again');
  t.equal(((await back.json()) as { error: { code: number } }).error.code, -32602, 'an unknown task, as usual');
});
