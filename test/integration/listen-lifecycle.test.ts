/**
 * Listens as they meet servers in the wild (#21): a listen whose upstream dies ends with the catalogued upstream error
 * (never as if it were done), an upstream that never acknowledges fails the listen within the probe timeout, a
 * subscription the upstream does not offer is refused at once, and ordinary session ends log no warnings. Real
 * fixtures on loopback; the one FAKE is the hostile upstream, for a listen acknowledgement that never comes.
 */
import type net from 'node:net';
import { Writable } from 'node:stream';
import t from 'tap';
import { ERROR_CATALOG } from '../../src/translate/index.js';
import { ModernUpstreamClient } from '../../src/upstream/index.js';
import { startHostileUpstream } from '../fixtures/hostile-upstream.js';
import { startModernFixture, type ModernFixtureMode } from '../fixtures/modern-server.js';
import { startStack } from '../helpers/stack.js';
import { openListen } from '../helpers/sse-reader.js';
import { startGateway } from '../helpers/gateway.js';
import { LEGACY_HEADERS, rawInitialize } from '../helpers/legacy-face-stack.js';

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
  const { url } = await startGateway({ upstreams: [{ name: 'fixture', path: '/mcp', url: fixture.url }] }, { t, deps: { logger: { level: 'debug', stream } } });
  return { url, logs };
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
  const client = new ModernUpstreamClient({
    name: 'stuck',
    url: hostile.url,
    timeoutMs: 60_000,
    ackTimeoutMs: 200,
    clientInfo: { name: 'gw', version: 'test' },
  });
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
    const get = await bounded(
      fetch(url, { headers: { accept: 'text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': sid } }),
      `GET ${i}: headers`,
    );
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
 * offering resource subscriptions, whose listen never acknowledges a filter naming only `stuck://` URIs and
 * acknowledges any other at once, granting its URIs but the `stuck://` ones. Records each listen request and whether
 * its connection was closed by the client.
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
        const result = {
          resultType: 'complete',
          supportedVersions: ['2026-07-28'],
          capabilities: { resources: { subscribe: true }, tools: {} },
          serverInfo: { name: 'withholding', version: '1' },
          ttlMs: 0,
          cacheScope: 'private',
        };
        return json(200, { jsonrpc: '2.0', id: body.id, result });
      }
      if (body.method === 'subscriptions/listen') {
        const uris: string[] = body.params?.notifications?.resourceSubscriptions ?? [];
        listens.push({ uris, closed: new Promise<void>((resolve) => res.once('close', () => resolve())) });
        res.writeHead(200, { 'content-type': 'application/json' });
        const granted = uris.filter((u) => !u.startsWith('stuck://'));
        if (uris.length > 0 && granted.length === 0) return; // held: no acknowledgement, ever
        res.write(
          `${JSON.stringify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: { resourceSubscriptions: granted } } })}\n`,
        );
        return;
      }
      if (body.method === 'tools/call')
        return json(200, { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', content: [{ type: 'text', text: 'ok' }] } });
      if (body.method === 'tools/list')
        return json(200, {
          jsonrpc: '2.0',
          id: body.id,
          result: { resultType: 'complete', tools: [{ name: 'echo', inputSchema: { type: 'object' } }], ttlMs: 0, cacheScope: 'private' },
        });
      return json(400, {
        jsonrpc: '2.0',
        id: body.id ?? null,
        error: { code: -32022, message: 'Unsupported protocol version', data: { supported: ['2026-07-28'] } },
      });
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
  return (await startGateway({ upstreams: [{ name: 'withholding', path: '/mcp', url: upstreamUrl, probeTimeoutMs: 60_000 }] }, { t })).url;
}

/** Resolves once the upstream has seen `n` listen requests. */
async function listensSeen(up: { listens: unknown[] }, n: number): Promise<void> {
  while (up.listens.length < n) await new Promise((r) => setImmediate(r));
}

/**
 * A resources/subscribe whose client closes the HTTP request once the upstream has seen the listen it causes (the
 * upstream's listen count reaching `seen`).
 */
async function givenUpSubscribe(up: { listens: unknown[] }, url: string, sid: string, id: number, uri: string, seen: number): Promise<void> {
  const gone = new AbortController();
  const sent = fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'resources/subscribe', params: { uri } }),
    signal: gone.signal,
  }).catch(() => undefined);
  await listensSeen(up, seen);
  gone.abort();
  await sent;
}

/** A legacy session on the gateway in front of the withholding upstream. */
async function withholdingSession(t: Teardown): Promise<{ up: Awaited<ReturnType<typeof withholdingUpstream>>; url: string; sid: string }> {
  const up = await withholdingUpstream(t);
  const url = await faceBefore(t, up.url);
  return { up, url, sid: await rawInitialize(url) };
}

t.test('legacy face: a listen still waiting for its acknowledgement delays neither a newer subscribe nor a call of the session (FAKE upstream)', async (t) => {
  const { up, url, sid } = await withholdingSession(t);
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
  const { up, url, sid } = await withholdingSession(t);
  await givenUpSubscribe(up, url, sid, 1, 'stuck://a', 1);
  await bounded(up.listens[0]!.closed, 'the upstream listen request closed');
  const fine = await bounded(rpc(url, sid, 2, 'resources/subscribe', { uri: 'fine://b' }), 'the next subscribe');
  t.same(fine.body.result, {}, 'the next subscribe of the session is granted');
  t.same(up.listens.at(-1)?.uris, ['fine://b'], 'the closed request left no subscription behind');
});

t.test('legacy face: a subscribe after one still waiting for its acknowledgement is answered at once (FAKE upstream)', async (t) => {
  const { up, url, sid } = await withholdingSession(t);
  const stuck = rpc(url, sid, 1, 'resources/subscribe', { uri: 'stuck://a' });
  await listensSeen(up, 1);
  // The newer change's filter names both URIs; its acknowledgement grants only fine://b (the ack bound is 60 s).
  const fine = await bounded(rpc(url, sid, 2, 'resources/subscribe', { uri: 'fine://b' }), 'the newer subscribe');
  t.same(fine.body.result, {}, 'the newer subscribe is granted');
  t.same(up.listens[1]?.uris, ['stuck://a', 'fine://b'], "the newer listen carries the session's whole state");
  await bounded(up.listens[0]!.closed, 'the superseded listen request closed by the gateway');
  const first = await bounded(stuck, 'the superseded subscribe');
  t.equal(
    first.body.error?.code,
    ERROR_CATALOG.GW_SUBSCRIBE_FAILED.rpc,
    'the superseded subscribe is answered from the listen serving the session: not granted',
  );
});

t.test('legacy face: a subscribe cancelled by notifications/cancelled stops its pending upstream listen (FAKE upstream)', async (t) => {
  const { up, url, sid } = await withholdingSession(t);
  const stuck = rpc(url, sid, 1, 'resources/subscribe', { uri: 'stuck://a' }).catch(() => undefined);
  await listensSeen(up, 1);
  const cancel = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'gave up' } }),
  });
  t.equal(cancel.status, 202, 'the cancellation is accepted');
  await bounded(up.listens[0]!.closed, 'the upstream listen request closed');
  await stuck;
  const fine = await bounded(rpc(url, sid, 2, 'resources/subscribe', { uri: 'fine://b' }), 'the next subscribe');
  t.same(fine.body.result, {}, 'the next subscribe of the session is granted');
  t.same(up.listens.at(-1)?.uris, ['fine://b'], 'the cancelled request left no subscription behind');
});

t.test('legacy face: a given-up subscribe that another waits on is dropped from a new listen, not failing the other (FAKE upstream)', async (t) => {
  const { up, url, sid } = await withholdingSession(t);
  const waiting = rpc(url, sid, 1, 'resources/subscribe', { uri: 'stuck://a' });
  await listensSeen(up, 1);
  await givenUpSubscribe(up, url, sid, 2, 'stuck://b', 2);
  await bounded(up.listens[1]!.closed, 'the listen naming the given-up URI closed');
  await bounded(listensSeen(up, 3), 'a listen for the session without the given-up URI');
  t.same(up.listens[2]?.uris, ['stuck://a'], 'the new listen names only the URI still waited for');
  // The waiting subscribe is still the session's; unsubscribing it answers it (not granted).
  const unsub = await bounded(rpc(url, sid, 3, 'resources/unsubscribe', { uri: 'stuck://a' }), 'the unsubscribe');
  t.same(unsub.body.result, {}, 'unsubscribe answered');
  const first = await bounded(waiting, 'the waiting subscribe');
  t.equal(first.body.error?.code, ERROR_CATALOG.GW_SUBSCRIBE_FAILED.rpc, 'the waiting subscribe is answered: not granted');
});
