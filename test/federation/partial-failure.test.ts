/**
 * One member of a federated endpoint lost under load (docs/federation.md §Availability), with real fixtures on
 * loopback: the calls to the other members keep succeeding, calls to the lost member's tools get the catalogued
 * GW_UPSTREAM_DOWN answer (503, Retry-After), its tools leave the list with a `list_changed` on a listen stream and come
 * back with another when it is restarted on the same port; /readyz needs only the members marked `required`.
 */
import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { type ModernFixture, startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { freePort } from '../helpers/redis-server.js';
import { openListen } from '../helpers/sse-reader.js';

/** Bound on waiting for something that must happen (a failure, never a pass). */
const BOUND_MS = 15_000;
const LOOPS = 4;

/** A member that can be stopped and started again on its port. */
async function restartable(port: number): Promise<{ url: string; current: () => ModernFixture; stop(): Promise<void>; start(): Promise<void> }> {
  let f: ModernFixture | undefined = await startModernFixture({ mode: 'modern', port });
  const url = f.url;
  return {
    url,
    current: () => f as ModernFixture,
    async stop() {
      await f?.close();
      f = undefined;
    },
    async start() {
      f = await startModernFixture({ mode: 'modern', port });
    },
  };
}

function configOf(m1: string, m2: string, m3: string, required: boolean) {
  const member = (name: string, url: string, extra: Record<string, unknown> = {}) => ({
    name,
    url,
    path: '/mcp',
    expose: { namespace: name, tools: { include: ['greet', 'test_simple_text'] }, prompts: { exclude: ['*'] }, ...extra },
  });
  return { upstreams: [member('a', m1), member('b', m2), member('c', m3, { required })] };
}

/** Calls `name` until an answer satisfies `done` (bounded); the answers before it, and it. */
async function callUntil(url: string, name: string, done: (r: Awaited<ReturnType<typeof post>>) => boolean) {
  const deadline = Date.now() + BOUND_MS;
  const before: Array<Awaited<ReturnType<typeof post>>> = [];
  for (;;) {
    const r = await post(url, 'tools/call', { name, arguments: { name: 'x' } });
    if (done(r)) return { last: r, before };
    before.push(r);
    if (Date.now() > deadline) throw new Error(`${name}: no such answer within ${BOUND_MS} ms; last ${r.status} ${JSON.stringify(r.body)}`);
  }
}

const isDown = (r: Awaited<ReturnType<typeof post>>) => r.status === 503 && r.body?.error?.code === -31003;

t.test('a member killed under load: the others keep serving, its tools answer GW_UPSTREAM_DOWN, leave and come back', async (t) => {
  const one = await startLegacyFixture({});
  t.teardown(() => one.close());
  const two = await startModernFixture({ mode: 'modern' });
  t.teardown(() => two.close());
  const three = await restartable(await freePort());
  t.teardown(() => three.stop());
  const gw = await startGateway(configOf(one.url, two.url, three.url, false), { t });
  const names = async () => ((await post(gw.url, 'tools/list')).body.result.tools as Array<{ name: string }>).map((x) => x.name);
  const all = ['a_test_simple_text', 'a_greet', 'b_test_simple_text', 'b_greet', 'c_test_simple_text', 'c_greet'];
  t.strictSame(await names(), all);

  const listen = await openListen(t, gw.url, 'listen-partial', { toolsListChanged: true });
  t.equal(listen.response.status, 200);
  await listen.stream.until((m) => m.method === 'notifications/subscriptions/acknowledged');

  // The load: calls of the other members' tools, for the whole test.
  let stopping = false;
  let succeeded = 0;
  const failures: string[] = [];
  const loops = Array.from({ length: LOOPS }, async (_, i) => {
    const tool = i % 2 === 0 ? 'a_greet' : 'b_greet';
    for (let n = 0; !stopping; n++) {
      const who = `loop${i}-${n}`;
      try {
        const r = await post(gw.url, 'tools/call', { name: tool, arguments: { name: who } });
        if (r.status === 200 && JSON.stringify(r.body?.result?.content ?? null).includes(`Hello, ${who}!`)) succeeded++;
        else failures.push(`${tool} ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      } catch (e) {
        failures.push(`${tool} ${String(e)}`);
      }
    }
  });
  const stopLoad = async () => {
    stopping = true;
    await Promise.all(loops);
  };
  t.teardown(stopLoad);

  // Under load, member c goes away.
  const c = await post(gw.url, 'tools/call', { name: 'c_greet', arguments: { name: 'before' } });
  t.match(JSON.stringify(c.body?.result?.content), /Hello, before!/, 'c serves before it is killed');
  await three.stop();
  const killedAt = Date.now();
  const { last: down, before } = await callUntil(gw.url, 'c_greet', isDown);
  t.comment(`first GW_UPSTREAM_DOWN answer ${Date.now() - killedAt} ms after the kill (${before.length} answers before it)`);
  for (const b of before) t.comment(`before it: ${b.status} ${JSON.stringify(b.body).slice(0, 200)}`);
  t.match(down.body.error, { code: -31003, message: /^Upstream unavailable: c is down; retry in \d+ s$/ }, 'the catalogued answer');
  t.equal(down.status, 503);
  const retry = await fetch(gw.url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'c_greet',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'retry',
      method: 'tools/call',
      params: {
        name: 'c_greet',
        arguments: {},
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'test-client', version: '1.0.0' },
        },
      },
    }),
  });
  await retry.text();
  t.equal(retry.status, 503);
  t.match(retry.headers.get('retry-after'), /^\d+$/, 'with Retry-After');

  await listen.stream.until((m) => m.method === 'notifications/tools/list_changed');
  t.strictSame(await names(), all.slice(0, 4), "c's tools left the list");
  const ready = await fetch(`${gw.origin}/readyz`);
  const readyBody = (await ready.json()) as Record<string, unknown>;
  t.equal(ready.status, 200, 'not required: the endpoint stays ready without c');
  t.strictSame(
    readyBody,
    {
      status: 'ready',
      failed: [],
      checks: {
        store: 'ok',
        upstreams: [
          { name: 'a', state: 'up' },
          { name: 'b', state: 'up' },
        ],
      },
    },
    'only the required members are checked',
  );

  // c comes back on its port; the availability's re-probe finds it and the lists change again.
  await three.start();
  await listen.stream.until((m) => m.method === 'notifications/tools/list_changed');
  const back = await callUntil(gw.url, 'c_greet', (r) => r.status === 200 && JSON.stringify(r.body?.result?.content ?? null).includes('Hello, x!'));
  t.ok(back.last, 'c serves again');
  t.strictSame(await names(), all, "c's tools are back");

  await stopLoad();
  t.strictSame(failures.slice(0, 10), [], `no call of a or b failed (${failures.length} did)`);
  t.ok(succeeded > 0, `${succeeded} calls of a and b succeeded meanwhile`);
});

t.test('/readyz of a path whose lost member is required: 503 naming it', async (t) => {
  const one = await startLegacyFixture({});
  t.teardown(() => one.close());
  const two = await startModernFixture({ mode: 'modern' });
  t.teardown(() => two.close());
  const three = await restartable(await freePort());
  t.teardown(() => three.stop());
  const gw = await startGateway(configOf(one.url, two.url, three.url, true), { t });
  const before = await fetch(`${gw.origin}/readyz`);
  await before.text();
  t.equal(before.status, 200, 'ready with every member up');
  await three.stop();
  await callUntil(gw.url, 'c_greet', isDown);
  const ready = await fetch(`${gw.origin}/readyz`);
  const body = (await ready.json()) as { failed: string[] };
  t.equal(ready.status, 503);
  t.strictSame(body.failed, ['upstream:c'], 'the required member is named');
});
