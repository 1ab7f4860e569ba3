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
