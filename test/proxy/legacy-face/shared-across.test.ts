/**
 * Legacy face sessions across gateway instances: two gateways built in one process share one task store and one
 * shared secret, in front of the real modern-only fixture (2025-11-25 clients meet the legacy face): one memory store
 * object, and a real redis-server on loopback with a store of its own per gateway (skipped, with the reason printed,
 * when this machine has no redis-server). A session initialized on A is served by B (read from the store), ends
 * everywhere on DELETE, stays another principal's 404, and a task's input request sent on A is answered through B.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import Fastify from 'fastify';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import type { Gateway } from '../../../src/app.js';
import { MemoryTaskStore, type TaskStore } from '../../../src/store/index.js';
import { startModernFixture } from '../../fixtures/modern-server.js';
import { listenLocal, startGateway } from '../../helpers/gateway.js';
import { readReply } from '../../helpers/modern.js';
import { LegacyFace } from '../../../src/proxy/legacy-face/face.js';
import { MrtrBridge, TaskRuntime } from '../../../src/tasks/index.js';
import { ModernUpstreamClient } from '../../../src/upstream/index.js';
import { redisAvailable, redisForTest } from '../../helpers/redis-server.js';
import { LEGACY_HEADERS, routeOver } from '../../helpers/legacy-face-stack.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

interface Instance {
  gateway: Gateway;
  url: string;
}

/** Where the instances keep what they share: one memory store object, or one Redis (a store per instance). */
type Backend = { kind: 'memory' } | { kind: 'redis'; url: string };

/** The upstream's tasks: its own (`native`, proxied by the gateway), or the gateway's (`wrapped`: every tool). */
type Tasks = 'native' | 'wrapped';

async function instance(
  upstreamUrl: string,
  tasks: Tasks,
  shared: { store: TaskStore } | { redis: Record<string, unknown> },
  stateKey: Uint8Array,
): Promise<Instance> {
  const cfg = {
    tasks: { pollIntervalMs: 50 },
    ...('redis' in shared ? { store: shared.redis } : {}),
    upstreams: [{ name: 'fixture', path: '/mcp', url: upstreamUrl, ...(tasks === 'wrapped' ? { tools: { '*': { task: 'always' } } } : {}) }],
  };
  const { gateway, url } = await startGateway(cfg, { deps: { stateKey, ...('store' in shared ? { store: shared.store } : {}) } });
  return { gateway, url };
}

/** The modern fixture and gateways A and B over one backend and one secret. */
async function pair(t: Teardown, backend: Backend, tasks: Tasks = 'native'): Promise<{ a: Instance; b: Instance }> {
  const fx = await startModernFixture({ mode: 'modern', tasks: tasks === 'native' ? 'native' : 'sync', taskPollIntervalMs: 50, taskJobDelayMs: 100 });
  const store = backend.kind === 'memory' ? new MemoryTaskStore({ maxTasks: 1000, maxTtlMs: 600_000 }) : undefined;
  const shared = store ? { store } : { redis: { kind: 'redis', url: (backend as { url: string }).url, keyPrefix: `mcpgw-edge-${randomUUID().slice(0, 8)}:` } };
  const stateKey = randomBytes(32);
  const a = await instance(fx.url, tasks, shared, stateKey);
  const b = await instance(fx.url, tasks, shared, stateKey);
  t.teardown(async () => {
    await a.gateway.close();
    await b.gateway.close();
    await store?.close();
    await fx.close();
  });
  return { a, b };
}

const ALICE = { authorization: 'Bearer alice' };

let nextId = 1;

/** One raw 2025-11-25 POST of a session; the reply read to its end. */
async function rpc(url: string, sid: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = ALICE) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, 'mcp-session-id': sid, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
  });
  return readReply(res);
}

/** Initializes a session on `url` for Alice; its id. */
async function initialize(url: string, capabilities: Record<string, unknown> = {}): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, ...ALICE },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'raw', version: '1' } },
    }),
  });
  const body = (await res.json()) as { result?: { capabilities?: Record<string, unknown> } };
  if (!body.result?.capabilities?.tasks) throw new Error('tasks were not advertised');
  const sid = res.headers.get('mcp-session-id') as string;
  const note = await fetch(url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, ...ALICE, 'mcp-session-id': sid },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await note.body?.cancel();
  return sid;
}

const textOf = (r: unknown): string => ((r as { content?: Array<{ text?: string }> }).content ?? []).map((c) => c.text ?? '').join('');

/**
 * Connects an SDK 1.32.2 task client to `aUrl` whose answers to the server's requests go to `bUrl` instead (a load
 * balancer's choice), creates a `confirm_delete` task, and returns its result once the client answered its question.
 */
async function answerThroughB(t: Teardown, aUrl: string, bUrl: string): Promise<{ text: string; answersOnB: number }> {
  let answersOnB = 0;
  const split: typeof fetch = async (input, init) => {
    const body = typeof init?.body === 'string' ? (JSON.parse(init.body) as Record<string, unknown>) : undefined;
    if (body && !('method' in body) && ('result' in body || 'error' in body)) {
      answersOnB++;
      return fetch(bUrl, init);
    }
    return fetch(input, init);
  };
  let asked!: (r: ElicitRequest) => void;
  const question = new Promise<ElicitRequest>((resolve) => (asked = resolve));
  const client = new Client({ name: 'split-client', version: '1.0.0' }, { capabilities: { elicitation: {} } });
  client.onerror = () => {};
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    asked(req);
    return { action: 'accept', content: { confirm: true } };
  });
  let streamOpen!: () => void;
  const opened = new Promise<void>((resolve) => (streamOpen = resolve));
  const transport = new StreamableHTTPClientTransport(new URL(aUrl), {
    requestInit: { headers: ALICE },
    fetch: async (input, init) => {
      const res = await split(input, init);
      if ((init?.method ?? 'GET') === 'GET' && res.status === 200) streamOpen();
      return res;
    },
  });
  await client.connect(transport);
  t.teardown(() => client.close());
  // The question goes out on A's GET stream (no tasks/result is open yet).
  await opened;
  const created = await client.request(
    { method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: 'c.txt' }, task: { ttl: 60_000 } } },
    CreateTaskResultSchema,
  );
  await question;
  // Bounded below the SDK's 60 s default: a lost answer fails the test sooner.
  const r = await client.experimental.tasks.getTaskResult(created.task.taskId, CallToolResultSchema, { timeout: 15_000 });
  return { text: textOf(r), answersOnB };
}

t.test("a task's input request sent by face A is answered through face B (one runtime behind both)", async (t) => {
  // The edge's part alone: B takes an answer to a request it never sent, checks it against the caller's task and its
  // outstanding keys, and gives it to the runtime.
  const fx = await startModernFixture({ mode: 'modern', tasks: 'native', taskPollIntervalMs: 50, taskJobDelayMs: 100 });
  const upstream = new ModernUpstreamClient({ name: 'fixture', url: fx.url, timeoutMs: 10_000, clientInfo: { name: 'mcp-tasks-gateway', version: 'test' } });
  const store = new MemoryTaskStore({ maxTasks: 1000 });
  const runtime = new TaskRuntime({
    store,
    bridge: new MrtrBridge({ stateKey: randomBytes(32), holdMs: 60_000, maxHeld: 100, gatherMs: 25 }),
    defaultTtlMs: 60_000,
    maxTtlMs: 600_000,
    defaultPollIntervalMs: 50,
    maxActivePerPrincipal: 50,
    toolSupportTtlMs: 60_000,
  });
  const route = routeOver(upstream);
  const face = async (): Promise<{ url: string; close(): Promise<void> }> => {
    const f = new LegacyFace({ runtime, routeFor: async () => route, routeOf: (era) => (era === 'modern' ? route : undefined) }, { store });
    const app = Fastify({ logger: false, forceCloseConnections: true });
    app.post('/mcp', (req, reply) => f.post(req, reply));
    app.get('/mcp', (req, reply) => f.get(req, reply));
    app.delete('/mcp', (req, reply) => f.delete(req, reply));
    const { url } = await listenLocal(app);
    return {
      url,
      async close() {
        f.close();
        await app.close();
      },
    };
  };
  const a = await face();
  const b = await face();
  t.teardown(async () => {
    await a.close();
    await b.close();
    runtime.close();
    await upstream.close();
    await store.close();
    await fx.close();
  });
  const r = await answerThroughB(t, a.url, b.url);
  t.equal(r.answersOnB, 1, 'the answer went to B');
  t.equal(r.text, 'Deleted c.txt', 'the answer B took reached the task');
});

/** What two gateways do over either backend. */
function suite(t: Test, backend: Backend): void {
  t.test('a session initialized on A continues on B: calls, tasks created on A, the log level', async (t) => {
    const { a, b } = await pair(t, backend);
    const sid = await initialize(a.url);

    const tools = await rpc(b.url, sid, 'tools/list');
    t.equal(tools.status, 200, 'B serves a session it never saw');
    const listed = tools.body.result.tools as Array<{ name: string; execution?: { taskSupport?: string } }>;
    t.equal(
      listed.find((x) => x.name === 'slow_compute')?.execution?.taskSupport,
      'optional',
      'tasks were advertised at initialize on A: B lists task support',
    );

    const greet = await rpc(b.url, sid, 'tools/call', { name: 'greet', arguments: { name: 'Bob' } });
    t.equal(textOf(greet.body.result), 'Hello, Bob!');

    const created = await rpc(a.url, sid, 'tools/call', { name: 'slow_compute', arguments: { seconds: 0.1, label: 'x' }, task: { ttl: 60_000 } });
    const taskId = created.body.result.task.taskId as string;
    t.match(taskId, /^gwt_/);
    const got = await rpc(b.url, sid, 'tasks/get', { taskId });
    t.equal(got.body.result.taskId, taskId, "B answers tasks/get of A's task");
    t.match(got.body.result.status, /^(working|completed)$/);
    const listedTasks = await rpc(b.url, sid, 'tasks/list');
    t.ok(
      (listedTasks.body.result.tasks as Array<{ taskId: string }>).some((x) => x.taskId === taskId),
      'and lists it',
    );

    t.equal((await rpc(b.url, sid, 'logging/setLevel', { level: 'debug' })).status, 200);
    const logged = await rpc(a.url, sid, 'tools/call', { name: 'test_logging_tool', arguments: {} });
    t.ok(
      logged.messages.some((m) => m.method === 'notifications/message'),
      'the level set on B applies on A',
    );
  });

  t.test('another principal gets 404 on every instance, and cannot end the session', async (t) => {
    const { a, b } = await pair(t, backend);
    const sid = await initialize(a.url);
    const mallory = { authorization: 'Bearer mallory' };
    t.equal((await rpc(b.url, sid, 'ping', {}, mallory)).status, 404, 'on B (read from the store): as unknown');
    t.equal((await rpc(a.url, sid, 'ping', {}, mallory)).status, 404, 'on A (held there)');
    t.equal((await rpc(b.url, sid, 'ping', {}, {})).status, 404, 'no credentials: another principal');
    t.equal((await fetch(b.url, { method: 'DELETE', headers: { 'mcp-session-id': sid, ...mallory } })).status, 404);
    t.equal((await rpc(b.url, sid, 'ping')).status, 200, 'the owner still has it');
    t.equal((await rpc(b.url, 'made-up', 'ping')).status, 404, 'an unknown id');
  });

  t.test('DELETE on B ends the session on A too: its GET stream there closes', async (t) => {
    const { a, b } = await pair(t, backend);
    const sid = await initialize(a.url);
    const stream = await fetch(a.url, { headers: { accept: 'text/event-stream', 'mcp-session-id': sid, ...ALICE } });
    t.equal(stream.status, 200, 'a GET stream open on A');
    t.equal((await rpc(b.url, sid, 'ping')).status, 200);
    t.equal((await fetch(b.url, { method: 'DELETE', headers: { 'mcp-session-id': sid, ...ALICE } })).status, 200);
    await stream.text();
    t.pass("A's GET stream ended");
    t.equal((await rpc(a.url, sid, 'ping')).status, 404, 'ended on A');
    t.equal((await rpc(b.url, sid, 'ping')).status, 404, 'ended on B');
  });

  t.test("a task's input request sent on gateway A is answered through gateway B (a gateway-owned task)", async (t) => {
    const { a, b } = await pair(t, backend, 'wrapped');
    const r = await answerThroughB(t, a.url, b.url);
    t.equal(r.answersOnB, 1, 'the answer went to B');
    t.equal(r.text, 'Deleted c.txt', 'B handed it to A, which runs the task');
  });

  t.test("a task's input request sent on gateway A is answered through gateway B (the upstream's own task)", async (t) => {
    const { a, b } = await pair(t, backend);
    const r = await answerThroughB(t, a.url, b.url);
    t.equal(r.answersOnB, 1, 'the answer went to B');
    t.equal(r.text, 'Deleted c.txt', 'B handed it to the instance following the upstream task');
  });
}

t.test('one memory store shared in one process', async (t) => suite(t, { kind: 'memory' }));

const missing = redisAvailable();
if (missing) t.comment(`Redis variant skipped: ${missing}`);
t.test('one redis-server, a store per instance', { skip: missing ?? false }, async (t) => {
  suite(t, { kind: 'redis', url: await redisForTest(t) });
});
