/**
 * Principal binding (docs/security.md §Principal binding): a task id, a legacy session id and an MRTR `requestState`
 * are capabilities of the principal they were issued to. Another principal holding one gets exactly what an unknown
 * one gets: the same HTTP status, JSON-RPC code and message, byte for byte (tasks extension §Security
 * Considerations; 2025-11-25 basic/utilities/tasks §Security Considerations; 2025-11-25 basic/transports §Session
 * Management; 2026-07-28 basic/patterns/mrtr §Server Requirements), and nothing of the owner's is touched.
 *
 * Real parts on loopback: the legacy fixture (SDK 1.32.2), the modern fixture (v2 SDK), an SDK-example session server
 * that answers a lost session with 400, the gateway built from its config, raw fetch with exact bodies; the memory
 * store, and a real redis-server shared by two gateway instances.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import t, { type Test } from 'tap';
import { MemoryTaskStore, type TaskStore } from '../../src/store/index.js';
import { mintTaskId } from '../../src/tasks/records/task-limits.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startGateway } from '../helpers/gateway.js';
import { envelope, MODERN } from '../helpers/modern.js';
import { redisAvailable, redisForTest } from '../helpers/redis-server.js';
import { startRelay } from '../helpers/relay.js';
import { serveSdkSessions } from '../helpers/sdk-session-server.js';
import { SseReader } from '../helpers/sse-reader.js';
import { DECLARING } from '../helpers/task-helpers.js';

const ALICE = 'Bearer alice-token';
const MALLORY = 'Bearer mallory-token';
const LEGACY = '2025-11-25';
const RELATED = 'io.modelcontextprotocol/related-task';
/** Every await on the network in this file is bounded by this (a hang fails the test, never passes it). */
const BOUND_MS = 15_000;

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Where gateway instances keep what they share. */
type Backend = { kind: 'memory' } | { kind: 'redis'; url: string };

/**
 * `n` gateway instances in front of `upstreamUrl` over one backend and one secret (one instance: the plain memory
 * store of its config). Returns their MCP endpoint URLs.
 */
async function gateways(
  t: Teardown,
  backend: Backend,
  upstreamUrl: string,
  n: number,
  upstream: Record<string, unknown> = {},
  config: Record<string, unknown> = {},
): Promise<string[]> {
  const stateKey = randomBytes(32);
  const store: TaskStore | undefined = backend.kind === 'memory' && n > 1 ? new MemoryTaskStore({ maxTasks: 1000, maxTtlMs: 600_000 }) : undefined;
  const prefix = `mcpgw-binding-${randomUUID().slice(0, 8)}:`;
  const urls: string[] = [];
  for (let i = 0; i < n; i++) {
    const cfg = {
      ...config,
      ...(backend.kind === 'redis' ? { store: { kind: 'redis', url: backend.url, keyPrefix: prefix } } : {}),
      upstreams: [{ name: 'fixture', path: '/mcp', url: upstreamUrl, ...upstream }],
    };
    urls.push((await startGateway(cfg, { t, deps: { stateKey, ...(store ? { store } : {}) } })).url);
  }
  if (store) t.teardown(() => store.close());
  return urls;
}

/** An HTTP answer as the client gets it, for byte comparisons. */
interface Exchange {
  status: number;
  contentType: string;
  text: string;
}

async function exchange(url: string, init: { method: string; headers: Record<string, string>; body?: string }): Promise<Exchange> {
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(BOUND_MS) });
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', text: await res.text() };
}

/** The final JSON-RPC message of an exchange (JSON or SSE). */
function messageOf(x: Exchange): any {
  if (!x.contentType.includes('text/event-stream')) return JSON.parse(x.text);
  const data = x.text.split('\n').filter((l) => l.startsWith('data:'));
  return JSON.parse((data.at(-1) as string).slice(5));
}

// ── modern face ──────────────────────────────────────────────────────────────────────────────────────────────────

/** One modern request with exact headers and body; `auth` is the Authorization header. */
function modern(
  url: string,
  method: string,
  params: Record<string, unknown>,
  opts: { auth?: string; id?: string | number; capabilities?: Record<string, unknown> } = {},
): Promise<Exchange> {
  const p: Record<string, unknown> = { ...params, _meta: envelope(opts.capabilities ?? DECLARING) };
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(opts.auth ? { authorization: opts.auth } : {}),
  };
  const name = typeof p.name === 'string' ? p.name : typeof p.taskId === 'string' ? p.taskId : undefined;
  if (name !== undefined) headers['mcp-name'] = name;
  return exchange(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: opts.id ?? 1, method, params: p }) });
}

/** A gateway id of the task-id shape nobody was given. */
const randomTaskId = (): string => mintTaskId();

/** Polls tasks/get as `auth` until `until` holds (bounded). */
async function pollModern(url: string, taskId: string, auth: string, until: (task: any) => boolean): Promise<any> {
  const deadline = Date.now() + BOUND_MS;
  for (;;) {
    const task = messageOf(await modern(url, 'tasks/get', { taskId }, { auth })).result;
    if (task && until(task)) return task;
    if (Date.now() > deadline) throw new Error(`task ${taskId} never matched; last ${JSON.stringify(task)}`);
    await new Promise((r) => setTimeout(r, typeof task?.pollIntervalMs === 'number' ? Math.min(task.pollIntervalMs, 100) : 20));
  }
}

/** Opens a listen stream for `taskIds` as `auth` and reads its acknowledgement. */
async function listen(
  t: Teardown,
  url: string,
  taskIds: string[],
  auth: string,
  id: string | number,
): Promise<{ status: number; ack: any; stream: SseReader; close(): void }> {
  const controller = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': MODERN,
      'mcp-method': 'subscriptions/listen',
      authorization: auth,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications: { taskIds }, _meta: envelope(DECLARING) } }),
    signal: controller.signal,
  });
  const stream = new SseReader(res);
  t.teardown(async () => {
    controller.abort();
    await stream.cancel();
  });
  return { status: res.status, ack: await stream.next(BOUND_MS), stream, close: () => controller.abort() };
}

function modernTaskSuite(t: Test, backend: Backend): void {
  t.test('modern face: A cannot get, update, cancel or listen to B’s task; each answer equals an unknown id’s', async (t) => {
    const fx = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 0 });
    t.teardown(() => fx.close());
    const n = backend.kind === 'memory' ? 1 : 2;
    const urls = await gateways(t, backend, fx.url, n, { tools: { confirm_delete: { task: 'always' }, gated_job: { task: 'always' } } });
    const [own, other] = [urls[0] as string, urls[n - 1] as string];

    const asking = messageOf(await modern(own, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'alice.txt' } }, { auth: ALICE })).result;
    t.equal(asking.resultType, 'task');
    const working = messageOf(await modern(own, 'tools/call', { name: 'gated_job', arguments: { gate: 'alice' } }, { auth: ALICE })).result;
    t.equal(working.resultType, 'task');
    await pollModern(own, asking.taskId, ALICE, (task) => task.status === 'input_required');

    // Mallory with Alice's ids, and with ids nobody has, through the instance that did not create the tasks.
    for (const [method, extra] of [
      ['tasks/get', {}],
      ['tasks/update', { inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } }],
      ['tasks/cancel', {}],
    ] as const) {
      for (const victim of [asking.taskId, working.taskId]) {
        const foreign = await modern(other, method, { taskId: victim, ...extra }, { auth: MALLORY, id: 'same' });
        const unknown = await modern(other, method, { taskId: randomTaskId(), ...extra }, { auth: MALLORY, id: 'same' });
        // The id is echoed in Mcp-Name only; the answer names no task id.
        t.strictSame(foreign, unknown, `${method}: the answer to a foreign id is the answer to an unknown one`);
        t.equal(foreign.status, 200);
        t.match(messageOf(foreign).error, { code: -32602 }, `${method}: -32602`);
      }
    }
    const anonymous = await modern(other, 'tasks/get', { taskId: asking.taskId }, { id: 'same' });
    t.strictSame(anonymous, await modern(other, 'tasks/get', { taskId: randomTaskId() }, { id: 'same' }), 'no credentials: as unknown too');

    // Listening: Mallory's acknowledgement for Alice's ids equals the one for random ids, and carries none of them.
    const foreignListen = await listen(t, other, [asking.taskId, working.taskId], MALLORY, 'sub');
    const unknownListen = await listen(t, other, [randomTaskId(), randomTaskId()], MALLORY, 'sub');
    t.equal(foreignListen.status, unknownListen.status);
    t.strictSame(foreignListen.ack, unknownListen.ack, 'the same acknowledgement');
    t.notMatch(JSON.stringify(foreignListen.ack), asking.taskId);
    const alicesListen = await listen(t, other, [working.taskId], ALICE, 'alice-sub');
    t.same(alicesListen.ack.params?.notifications?.taskIds ?? alicesListen.ack.params?.taskIds ?? [working.taskId], [working.taskId]);

    // Nothing of Alice's was touched: the question is still open, the job still runs; then she finishes both.
    const still = await pollModern(own, asking.taskId, ALICE, () => true);
    t.equal(still.status, 'input_required', 'Mallory’s update and cancel did not reach the task');
    t.equal((await pollModern(own, working.taskId, ALICE, () => true)).status, 'working');
    fx.releaseGate('alice');
    const { match: done } = await alicesListen.stream.until((m) => m.params?.status === 'completed');
    t.equal(done.params.taskId, working.taskId, 'Alice hears her task complete');
    foreignListen.close();
    const heardByMallory: any[] = [];
    for (;;) {
      const m = await foreignListen.stream.next(BOUND_MS).catch(() => undefined);
      if (m === undefined) break;
      heardByMallory.push(m);
    }
    t.notOk(
      heardByMallory.some((m) => JSON.stringify(m).includes(working.taskId)),
      'Mallory heard nothing of it',
    );
    t.equal(
      messageOf(
        await modern(
          own,
          'tasks/update',
          { taskId: asking.taskId, inputResponses: { confirm: { action: 'accept', content: { confirm: true } } } },
          { auth: ALICE },
        ),
      ).result?.resultType,
      'complete',
    );
    t.equal((await pollModern(other, asking.taskId, ALICE, (task) => task.status === 'completed')).result.content[0].text, 'Deleted alice.txt');
  });

  t.test('MRTR: every invalid requestState gets one answer: forged, foreign, expired, replayed, wrong type', async (t) => {
    const fx = await startLegacyFixture();
    t.teardown(() => fx.close());
    const n = backend.kind === 'memory' ? 1 : 2;
    const urls = await gateways(t, backend, fx.url, n);
    const [own, other] = [urls[0] as string, urls[n - 1] as string];
    const tool = 'test_input_required_result_elicitation';
    const answers = { user_name: { action: 'accept', content: { name: 'Alice' } } };
    const round = (url: string, extra: Record<string, unknown>, auth?: string) =>
      modern(url, 'tools/call', { name: tool, arguments: {}, ...extra }, { ...(auth ? { auth } : {}), id: 'retry', capabilities: { elicitation: {} } });

    const r1 = messageOf(await round(own, {}, ALICE)).result;
    t.equal(r1.resultType, 'input_required');
    const state: string = r1.requestState;
    const dot = state.indexOf('.');
    const flipped = state.slice(0, 5) + (state[5] === 'A' ? 'B' : 'A') + state.slice(6);

    const reference = await round(other, { requestState: 'not-a-state', inputResponses: answers }, MALLORY);
    t.equal(reference.status, 400);
    t.strictSame(messageOf(reference), { jsonrpc: '2.0', id: 'retry', error: { code: -32602, message: 'Invalid requestState' } }, 'the catalog entry');
    const invalid: Array<[string, unknown, string | undefined]> = [
      ['foreign (another principal’s state)', state, MALLORY],
      ['foreign (no credentials)', state, undefined],
      ['forged (one payload character)', flipped, MALLORY],
      ['forged (signature cut)', state.slice(0, dot + 10), MALLORY],
      ['wrong type: 1', 1, MALLORY],
      ['wrong type: {}', {}, MALLORY],
      ['wrong type: null', null, MALLORY],
      ['wrong type: []', [], MALLORY],
      ['wrong type: true', true, MALLORY],
      ['a number string', '12345', MALLORY],
      ['empty string', '', MALLORY],
    ];
    for (const [name, requestState, auth] of invalid) {
      t.strictSame(await round(other, { requestState, inputResponses: answers }, auth), reference, name);
    }
    t.equal(fx.url.length > 0, true);

    // The owner's round was not consumed by any of those; her answer completes it; the same state again is a replay.
    const done = messageOf(await round(other, { requestState: state, inputResponses: answers }, ALICE));
    t.equal(done.result?.content?.[0]?.text, 'Hello, Alice!');
    t.strictSame(await round(other, { requestState: state, inputResponses: answers }, ALICE), reference, 'replayed by its owner');
    t.strictSame(await round(own, { requestState: state, inputResponses: answers }, ALICE), reference, 'replayed on the holding instance');
  });
}

t.test('MRTR: an expired state gets the same answer', async (t) => {
  const fx = await startLegacyFixture();
  t.teardown(() => fx.close());
  // A hold of 1 ms: the state has expired by the time the client holds it.
  const [url] = (await gateways(t, { kind: 'memory' }, fx.url, 1, {}, { input: { holdMs: 1 } })) as [string];
  const round = (extra: Record<string, unknown>, auth: string) =>
    modern(
      url,
      'tools/call',
      { name: 'test_input_required_result_elicitation', arguments: {}, ...extra },
      { auth, id: 'retry', capabilities: { elicitation: {} } },
    );
  const r1 = messageOf(await round({}, ALICE)).result;
  t.equal(r1.resultType, 'input_required');
  const answers = { user_name: { action: 'accept', content: { name: 'Alice' } } };
  t.strictSame(
    await round({ requestState: r1.requestState, inputResponses: answers }, ALICE),
    await round({ requestState: 'x.y', inputResponses: answers }, ALICE),
  );
});

t.test('MRTR: a requestState carries nothing derived from the credentials', async (t) => {
  const fx = await startLegacyFixture();
  t.teardown(() => fx.close());
  const [url] = (await gateways(t, { kind: 'memory' }, fx.url, 1)) as [string];
  const token = 'alice-secret-token';
  const r1 = messageOf(
    await modern(
      url,
      'tools/call',
      { name: 'test_input_required_result_elicitation', arguments: {} },
      { auth: `Bearer ${token}`, capabilities: { elicitation: {} } },
    ),
  ).result;
  const state: string = r1.requestState;
  const visible = state
    .split('.')
    .map((part) => Buffer.from(part, 'base64url').toString('latin1'))
    .join('\n');
  for (const secret of [`Bearer ${token}`, token]) {
    for (const digest of [
      createHash('sha256').update(secret).digest('base64url'),
      createHash('sha256').update(secret).digest('hex'),
      createHash('sha256').update(secret).digest('base64'),
    ]) {
      t.notOk(visible.includes(digest) || state.includes(digest), 'no unkeyed hash of the credentials in the state');
    }
    t.notOk(visible.includes(secret), 'not the credentials themselves');
  }
  t.notMatch(visible, /sha256:/, 'no principal fingerprint');
});

// ── legacy face (legacy clients in front of a modern upstream: the gateway's own sessions and tasks) ────────────

/** A raw 2025-11-25 session through `url` as `auth`. */
async function legacySession(url: string, auth: string | undefined, capabilities: Record<string, unknown> = { elicitation: {} }) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': LEGACY,
    ...(auth ? { authorization: auth } : {}),
  };
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: LEGACY, capabilities, clientInfo: { name: 'raw', version: '1' } },
    }),
    signal: AbortSignal.timeout(BOUND_MS),
  });
  const sid = init.headers.get('mcp-session-id');
  await init.text();
  if (init.status !== 200 || !sid) throw new Error(`initialize: HTTP ${init.status}`);
  const session = { ...headers, 'mcp-session-id': sid };
  await exchange(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) });
  return {
    sid,
    headers: session,
    send: (body: unknown, over: Record<string, string> = {}) => exchange(url, { method: 'POST', headers: { ...session, ...over }, body: JSON.stringify(body) }),
    stream: async (body: unknown, signal: AbortSignal) =>
      new SseReader(await fetch(url, { method: 'POST', headers: session, body: JSON.stringify(body), signal })),
  };
}

function legacyFaceSuite(t: Test, backend: Backend): void {
  t.test('legacy face: A cannot get, result, cancel, list or answer B’s task, nor use or end B’s session', async (t) => {
    const fx = await startModernFixture({ mode: 'modern', tasks: 'sync' });
    t.teardown(() => fx.close());
    const n = backend.kind === 'memory' ? 1 : 2;
    const urls = await gateways(t, backend, fx.url, n, { tools: { '*': { task: 'always' } } });
    const [own, other] = [urls[0] as string, urls[n - 1] as string];

    const alice = await legacySession(own, ALICE);
    const created = messageOf(
      await alice.send({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 'confirm_delete', arguments: { filename: 'a.txt' }, task: { ttl: 60_000 } },
      }),
    );
    const taskId = created.result.task.taskId as string;
    // Alice's question goes out on her tasks/result stream; Mallory learns its id (it is only an id).
    const waiting = new AbortController();
    t.teardown(() => waiting.abort());
    const results = await alice.stream({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } }, waiting.signal);
    const ask = await results.next(BOUND_MS);
    t.equal(ask.method, 'elicitation/create');

    const mallory = await legacySession(other, MALLORY);
    const unknownId = randomTaskId();
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      const foreign = await mallory.send({ jsonrpc: '2.0', id: 'same', method, params: { taskId } });
      const unknown = await mallory.send({ jsonrpc: '2.0', id: 'same', method, params: { taskId: unknownId } });
      t.strictSame(foreign, unknown, `${method}: the answer to a foreign id is the answer to an unknown one`);
      t.match(messageOf(foreign).error, { code: -32602 }, `${method}: -32602`);
    }
    // tasks/list: Mallory's page is the page of a principal with no tasks at all.
    const nobody = await legacySession(other, 'Bearer nobody');
    t.strictSame(
      await mallory.send({ jsonrpc: '2.0', id: 'same', method: 'tasks/list', params: {} }),
      await nobody.send({ jsonrpc: '2.0', id: 'same', method: 'tasks/list', params: {} }),
    );
    t.same(messageOf(await mallory.send({ jsonrpc: '2.0', id: 3, method: 'tasks/list', params: {} })).result.tasks, []);
    // Answering Alice's question with its id: taken like an answer to a question nobody asked (202), and ignored.
    const answer = (id: string) => ({ jsonrpc: '2.0', id, result: { action: 'accept', content: { confirm: true }, _meta: { [RELATED]: { taskId } } } });
    const foreignAnswer = await mallory.send(answer(ask.id));
    t.strictSame(foreignAnswer, await mallory.send(answer(String(ask.id).replace(taskId, unknownId))));
    t.equal(foreignAnswer.status, 202);

    // Alice's session id with Mallory's credentials, on either instance: an unknown session (404), also to DELETE.
    for (const url of urls) {
      const as = (sid: string) => ({ ...mallory.headers, 'mcp-session-id': sid });
      const madeUp = randomBytes(16).toString('base64url');
      const ping = JSON.stringify({ jsonrpc: '2.0', id: 'same', method: 'ping' });
      t.strictSame(
        await exchange(url, { method: 'POST', headers: as(alice.sid), body: ping }),
        await exchange(url, { method: 'POST', headers: as(madeUp), body: ping }),
        'POST',
      );
      const foreignPost = await exchange(url, { method: 'POST', headers: as(alice.sid), body: ping });
      t.equal(foreignPost.status, 404);
      t.strictSame(
        await exchange(url, { method: 'GET', headers: { ...as(alice.sid), accept: 'text/event-stream' } }),
        await exchange(url, { method: 'GET', headers: { ...as(madeUp), accept: 'text/event-stream' } }),
        'GET',
      );
      t.strictSame(await exchange(url, { method: 'DELETE', headers: as(alice.sid) }), await exchange(url, { method: 'DELETE', headers: as(madeUp) }), 'DELETE');
    }

    // Alice's task still asks; her own answer decides it; her session lives.
    const status = messageOf(await alice.send({ jsonrpc: '2.0', id: 4, method: 'tasks/get', params: { taskId } })).result.status;
    t.equal(status, 'input_required', 'Mallory’s cancel and answer did not reach the task');
    t.equal((await alice.send({ jsonrpc: '2.0', id: ask.id, result: { action: 'accept', content: { confirm: false } } })).status, 202);
    const final = await results.next(BOUND_MS);
    t.equal(final.result.content[0].text, 'Kept a.txt');
    t.equal((await alice.send({ jsonrpc: '2.0', id: 5, method: 'ping' })).status, 200, 'Alice’s session survived Mallory’s DELETE');
  });
}

// ── legacy sessions passed through to a legacy upstream ──────────────────────────────────────────────────────────

/** A plain SDK 1.32.2 server with one tool, for the SDK-example session host. */
function greeter(): McpServer {
  const server = new McpServer({ name: 'session-greeter', version: '1.0.0' });
  server.registerTool('greet', { description: 'Greets' }, async () => ({ content: [{ type: 'text', text: 'hello' }] }));
  return server;
}

function passThroughSuite(t: Test, backend: Backend): void {
  for (const shape of ['legacy fixture (404 for a lost session)', 'SDK example host (400 for a lost session)'] as const) {
    t.test(`pass-through to a ${shape}: the session is bound to the principal that initialized it`, async (t) => {
      const upstream = shape.startsWith('legacy') ? await startLegacyFixture() : await serveSdkSessions(greeter, 'sdk-400-json');
      t.teardown(() => upstream.close());
      const relay = await startRelay(t);
      relay.setTarget(upstream.url);
      const n = backend.kind === 'memory' ? 1 : 2;
      const urls = await gateways(t, backend, relay.url, n);
      const [own, other] = [urls[0] as string, urls[n - 1] as string];

      const alice = await legacySession(own, ALICE, {});
      t.equal((await alice.send({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).status, 200, 'the owner is served');
      const reached = () => relay.seen.filter((s) => s.sessionId === alice.sid).length;
      const before = reached();

      const madeUp = randomUUID();
      const headersOf = (sid: string, auth?: string) => {
        const h: Record<string, string> = { ...alice.headers, 'mcp-session-id': sid };
        if (auth) h.authorization = auth;
        else delete h.authorization;
        return h;
      };
      const body = JSON.stringify({ jsonrpc: '2.0', id: 'same', method: 'tools/list' });
      for (const url of urls) {
        for (const auth of [MALLORY, undefined]) {
          const foreign = await exchange(url, { method: 'POST', headers: headersOf(alice.sid, auth), body });
          const unknown = await exchange(url, { method: 'POST', headers: headersOf(madeUp, auth), body });
          t.strictSame(foreign, unknown, 'POST: as an unknown session');
          t.equal(foreign.status, 404);
          t.strictSame(JSON.parse(foreign.text), { jsonrpc: '2.0', id: 'same', error: { code: -32001, message: 'Session not found' } });
          const get = (sid: string) => exchange(url, { method: 'GET', headers: { ...headersOf(sid, auth), accept: 'text/event-stream' } });
          t.strictSame(await get(alice.sid), await get(madeUp), 'GET: as an unknown session');
          const del = (sid: string) => exchange(url, { method: 'DELETE', headers: headersOf(sid, auth) });
          const foreignDelete = await del(alice.sid);
          t.strictSame(foreignDelete, await del(madeUp), 'DELETE: as an unknown session');
          t.equal(foreignDelete.status, 404);
        }
      }
      t.equal(reached(), before, 'nothing of those reached the upstream under Alice’s session');
      t.notOk(
        relay.seen.some((s) => s.sessionId === madeUp),
        'nor under a session id the gateway never saw initialized',
      );

      // A session the upstream opened without the gateway seeing it (opened directly, or before a memory-store
      // gateway restarted): the gateway cannot vouch for it, so it is unknown, even to the one who opened it.
      const direct = await legacySession(upstream.url, ALICE, {});
      const unvouched = await exchange(own, { method: 'POST', headers: { ...alice.headers, 'mcp-session-id': direct.sid }, body });
      t.equal(unvouched.status, 404, 'a session the gateway never saw opened is unknown');
      t.notOk(
        relay.seen.some((s) => s.sessionId === direct.sid),
        'and not forwarded',
      );

      // Alice, on any instance, is still served; her DELETE ends the session for good.
      for (const url of urls) {
        const r = await exchange(url, { method: 'POST', headers: alice.headers, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) });
        t.equal(r.status, 200, 'the owner is served on every instance');
        t.ok(messageOf(r).result.tools.length > 0);
      }
      t.equal((await exchange(other, { method: 'DELETE', headers: alice.headers })).status, 200, 'the owner ends it');
      const after = await exchange(other, { method: 'POST', headers: alice.headers, body });
      t.equal(after.status, 404, 'an ended session is unknown');
      t.strictSame(JSON.parse(after.text), { jsonrpc: '2.0', id: 'same', error: { code: -32001, message: 'Session not found' } }, 'to the gateway');
      // Another instance may still forward the owner's requests for a moment; the upstream has ended the session.
      t.not((await exchange(own, { method: 'POST', headers: alice.headers, body })).status, 200, 'and is over upstream');
    });
  }
}

// ── ids ─────────────────────────────────────────────────────────────────────────────────────────────────────────────

t.test('task ids and gateway-minted session ids: at least 128 random bits, URL-safe, never repeated', async (t) => {
  // Both come from node:crypto randomBytes (a CSPRNG): task ids 18 bytes (mintTaskId), session ids 16 bytes.
  const ids = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const id = mintTaskId();
    t.ok(/^gwt_[A-Za-z0-9_-]+$/.test(id)) || t.fail(id);
    ids.add(id);
  }
  t.equal(ids.size, 2000, 'no repeats');
  const bits = Buffer.from(mintTaskId().slice(4), 'base64url').length * 8;
  t.ok(bits >= 128, `task ids carry ${bits} bits`);

  const fx = await startModernFixture({ mode: 'modern' });
  t.teardown(() => fx.close());
  const [url] = (await gateways(t, { kind: 'memory' }, fx.url, 1)) as [string];
  const sids = new Set<string>();
  for (let i = 0; i < 20; i++) {
    const s = await legacySession(url, undefined);
    t.match(s.sid, /^[A-Za-z0-9_-]+$/);
    t.ok(Buffer.from(s.sid, 'base64url').length * 8 >= 128, 'a session id carries at least 128 bits');
    sids.add(s.sid);
  }
  t.equal(sids.size, 20);
});

// ── the suites, over each store ───────────────────────────────────────────────────────────────────────────────────

t.test('memory store', async (t) => {
  modernTaskSuite(t, { kind: 'memory' });
  legacyFaceSuite(t, { kind: 'memory' });
  passThroughSuite(t, { kind: 'memory' });
});

const missing = redisAvailable();
if (missing) t.comment(`Redis variant skipped: ${missing}`);
t.test('Redis store, two instances (B’s things asked for through the other instance)', { skip: missing ?? false }, async (t) => {
  const url = await redisForTest(t);
  modernTaskSuite(t, { kind: 'redis', url });
  legacyFaceSuite(t, { kind: 'redis', url });
  passThroughSuite(t, { kind: 'redis', url });
});
