/**
 * Listens as they meet servers in the wild (#21): a listen whose upstream dies ends with the catalogued upstream error
 * (never as if it were done), an upstream that never acknowledges fails the listen within the probe timeout, a
 * subscription the upstream does not offer is refused at once, and ordinary session ends log no warnings. Real
 * fixtures on loopback; the one FAKE is the hostile upstream, for a listen acknowledgement that never comes.
 */
import net from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { buildGateway } from '../../src/app.js';
import { parseConfig } from '../../src/config/index.js';
import { ERROR_CATALOG } from '../../src/translate/index.js';
import { ModernUpstreamClient } from '../../src/upstream/index.js';
import { startHostileUpstream } from '../fixtures/hostile-upstream.js';
import { startModernFixture, type ModernFixtureMode } from '../fixtures/modern-server.js';
import { startStack } from '../helpers/stack.js';
import { openListen } from '../helpers/sse-reader.js';
import { LEGACY_HEADERS, rawInitialize } from '../legacy-face/face-stack.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** The bound: a hang fails the test, it never passes it. */
const BOUND_MS = 5_000;

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

interface LogLine {
  level: number;
  msg: string;
  [k: string]: unknown;
}

/** A gateway in front of a modern fixture (`jsonLines` as the reference server frames), its log lines kept. */
async function faceStack(t: Teardown, mode: ModernFixtureMode, jsonLines: boolean): Promise<{ url: string; logs: LogLine[] }> {
  const fixture = await startModernFixture({ mode, jsonLines });
  t.teardown(() => fixture.close());
  const logs: LogLine[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n')) if (line.trim()) logs.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  const gateway = await buildGateway(parseConfig({ server: { port: 0 }, upstreams: [{ name: 'fixture', path: '/mcp', url: fixture.url }] }), { logger: { level: 'debug', stream } });
  t.teardown(() => gateway.close());
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  return { url: `http://127.0.0.1:${(gateway.app.server.address() as net.AddressInfo).port}/mcp`, logs };
}

async function rpc(url: string, sid: string, id: number, method: string, params: Record<string, unknown>): Promise<{ status: number; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params }),
    signal: AbortSignal.timeout(BOUND_MS),
  });
  return { status: res.status, body: await res.json() };
}

t.test('modern listen: the upstream killed under it ends the listen with the catalogued upstream error', async (t) => {
  const stack = await startStack();
  let closed = false;
  t.teardown(() => (closed ? stack.gateway.close() : stack.close()));
  const l = await openListen(t, stack.url, 'dies', { toolsListChanged: true }, { capabilities: {} });
  const ack = await bounded(l.stream.next(), 'the acknowledgement');
  t.equal(ack.method, 'notifications/subscriptions/acknowledged');
  await stack.fixture.close();
  closed = true;
  const end = await bounded(l.stream.next(), 'the end of the listen');
  t.notOk(end?.result, 'not a result: the server did not end it', { end });
  t.equal(end?.error?.code, ERROR_CATALOG.GW_UPSTREAM_UNAVAILABLE.rpc, 'the catalogued upstream error', { end });
  t.match(end?.error?.message, /^Upstream unavailable: fixture /, 'naming the upstream');
});

t.test('an upstream that never acknowledges subscriptions/listen fails the listen within the acknowledgement budget (FAKE upstream)', async (t) => {
  const hostile = await startHostileUpstream();
  t.teardown(() => hostile.close());
  hostile.script = () => ({ kind: 'hang' });
  const client = new ModernUpstreamClient({ name: 'stuck', url: hostile.url, timeoutMs: 60_000, ackTimeoutMs: 200, clientInfo: { name: 'gw', version: 'test' } });
  t.teardown(() => client.close());
  const stop = new AbortController();
  t.teardown(() => stop.abort());
  const failure = await bounded(
    client.listen({ capabilities: {} }, { toolsListChanged: true }, stop.signal).then(
      () => undefined,
      (e: unknown) => e,
    ),
    'the listen failing',
  );
  t.match(failure, { kind: 'GW_UPSTREAM_TIMEOUT', detail: /did not acknowledge subscriptions\/listen in time/ }, 'the catalogued timeout');
});

t.test('legacy face: resources/subscribe to an upstream without subscriptions is refused at once, method not found', async (t) => {
  const { url } = await faceStack(t, 'modern', true);
  const sid = await rawInitialize(url);
  for (const method of ['resources/subscribe', 'resources/unsubscribe']) {
    const r = await bounded(rpc(url, sid, 1, method, { uri: 'test://watched-resource' }), method);
    t.equal(r.status, 200);
    t.same(r.body.error, { code: -32601, message: `Method not found: ${method}` }, `${method}: the catalogued refusal`);
  }
});

t.test('legacy face: 100 sessions opened, listened (GET) and DELETEd log no warning', async (t) => {
  const { url, logs } = await faceStack(t, 'modern', true);
  for (let i = 0; i < 100; i++) {
    const sid = await rawInitialize(url);
    const get = await bounded(fetch(url, { headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sid } }), `GET ${i}: headers`);
    if (get.status !== 200) t.fail(`GET ${i}: ${get.status}`);
    const del = await fetch(url, { method: 'DELETE', headers: { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sid } });
    if (del.status !== 200) t.fail(`DELETE ${i}: ${del.status}`);
    await get.body?.cancel();
  }
  const warned = logs.filter((l) => l.level >= 40);
  t.same(warned, [], 'no warn or error line');
  t.notOk(
    logs.some((l) => JSON.stringify(l).includes('INDEX_SIZE_ERR')),
    'no error is logged as a serialized DOMException',
  );
});

/**
 * A 2026-07-28 server (its wire written out: FAKE, since no real server can be made to withhold an acknowledgement)
 * offering resource subscriptions, whose listen never acknowledges a filter naming `stuck://` and acknowledges any
 * other at once. Records each listen request and whether its connection was closed by the client.
 */
async function withholdingUpstream(t: Teardown): Promise<{ url: string; listens: Array<{ uris: string[]; closed: Promise<void> }> }> {
  const http = await import('node:http');
  const listens: Array<{ uris: string[]; closed: Promise<void> }> = [];
  const server = http.createServer((req, res) => {
    let text = '';
    req.on('data', (c) => (text += c));
    req.on('end', () => {
      const body = JSON.parse(text || '{}');
      const json = (status: number, payload: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
      if (body.method === 'server/discover') {
        const result = { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { resources: { subscribe: true }, tools: {} }, serverInfo: { name: 'withholding', version: '1' }, ttlMs: 0, cacheScope: 'private' };
        return json(200, { jsonrpc: '2.0', id: body.id, result });
      }
      if (body.method === 'subscriptions/listen') {
        const uris: string[] = body.params?.notifications?.resourceSubscriptions ?? [];
        listens.push({ uris, closed: new Promise<void>((resolve) => res.once('close', () => resolve())) });
        res.writeHead(200, { 'content-type': 'application/json' });
        if (uris.some((u) => u.startsWith('stuck://'))) return; // held: no acknowledgement, ever
        res.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { resourceSubscriptions: uris } } })}\n`);
        return;
      }
      if (body.method === 'tools/call') return json(200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', content: [{ type: 'text', text: 'ok' }] } });
      if (body.method === 'tools/list') return json(200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', tools: [{ name: 'echo', inputSchema: { type: 'object' } }], ttlMs: 0, cacheScope: 'private' } });
      return json(400, { jsonrpc: '2.0', id: body.id ?? null, error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } } });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}/mcp`, listens };
}

/** The gateway's legacy face in front of `upstreamUrl`, with a long acknowledgement bound (the probe timeout). */
async function faceBefore(t: Teardown, upstreamUrl: string): Promise<string> {
  const gateway = await buildGateway(parseConfig({ server: { port: 0 }, upstreams: [{ name: 'withholding', path: '/mcp', url: upstreamUrl, probeTimeoutMs: 60_000 }] }), { logger: false });
  t.teardown(() => gateway.close());
  await gateway.app.listen({ host: '127.0.0.1', port: 0 });
  const addr = gateway.app.server.address();
  return `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}/mcp`;
}

t.test('legacy face: a listen still waiting for its acknowledgement delays neither a newer subscribe nor a call of the session (FAKE upstream)', async (t) => {
  const up = await withholdingUpstream(t);
  const url = await faceBefore(t, up.url);
  const sid = await rawInitialize(url);
  const stuck = rpc(url, sid, 1, 'resources/subscribe', { uri: 'stuck://a' });
  const call = await bounded(rpc(url, sid, 2, 'tools/call', { name: 'echo', arguments: {} }), 'a call while the listen is pending');
  t.same(call.body.result?.content, [{ type: 'text', text: 'ok' }], 'the call answered');
  // Unsubscribing the stuck URI supersedes its setup: the new filter (no subscription) needs no listen at all.
  const unsub = await bounded(rpc(url, sid, 3, 'resources/unsubscribe', { uri: 'stuck://a' }), 'the unsubscribe');
  t.same(unsub.body.result, {}, 'unsubscribe answered');
  const first = await bounded(stuck, 'the superseded subscribe');
  t.equal(first.body.error?.code, ERROR_CATALOG.GW_SUBSCRIBE_FAILED.rpc, 'the superseded subscribe of a URI no longer wanted fails as not granted');
  await bounded(up.listens[0]!.closed, 'the stuck listen request closed by the gateway');
  const fine = await bounded(rpc(url, sid, 4, 'resources/subscribe', { uri: 'fine://b' }), 'a later subscribe');
  t.same(fine.body.result, {}, 'a later subscribe is granted at once');
});

t.test('legacy face: a subscribe whose client closes the request stops its pending upstream listen (FAKE upstream)', async (t) => {
  const up = await withholdingUpstream(t);
  const url = await faceBefore(t, up.url);
  const sid = await rawInitialize(url);
  const gone = new AbortController();
  const stuck = fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'resources/subscribe', params: { uri: 'stuck://a' } }),
    signal: gone.signal,
  }).catch(() => undefined);
  while (up.listens.length === 0) await new Promise((r) => setImmediate(r));
  gone.abort();
  await stuck;
  await bounded(up.listens[0]!.closed, 'the upstream listen request closed');
  const fine = await bounded(rpc(url, sid, 2, 'resources/subscribe', { uri: 'fine://b' }), 'the next subscribe');
  t.same(fine.body.result, {}, 'the next subscribe of the session is granted');
  t.same(up.listens.at(-1)?.uris, ['fine://b'], 'the closed request left no subscription behind');
});
