/**
 * Upstream session isolation and per-principal shares (docs/security.md §Upstream session isolation, §Limits).
 *
 * The upstream is a real 2025-11-25 server on the legacy SDK that keeps one `McpServer` per session and session-scoped
 * state: it asks its client for `roots/list` once per session and answers later calls from that cache
 * until its client says they changed, as server-everything does (test/fixtures/roots-cache-server.ts). Modern clients
 * reach it through the gateway, which translates. Findings reproduced here: two anonymous clients were given each
 * other's roots (one shared upstream session); one caller could take every listen stream from the others. Then: who
 * shares a session under each scope (an exclusive checkout from a pool per principal and declared input kinds, reset on
 * handover), what each session declares, and that a caller at its
 * share of a shared bound (upstream sessions, listen streams, legacy face sessions and GET streams) gets the catalogued
 * 503 with Retry-After, before anything reaches the upstream, while another caller is served meanwhile.
 */
import t, { type Test } from 'tap';
import { parseConfig, principalShare } from '../../src/config/index.js';
import { startModernFixture } from '../fixtures/modern-server.js';
import { startRootsCacheServer, type RootsCacheServer } from '../fixtures/roots-cache-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post, type RawReply } from '../helpers/modern.js';
import { openListen } from '../helpers/sse-reader.js';
import { LEGACY_HEADERS } from '../helpers/legacy-face-stack.js';
import { redisAvailable, redisForTest } from '../helpers/redis-server.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

const SHARE_EXHAUSTED = /Too many .* for this caller/;
const A = { authorization: 'Bearer alice-token' };
const B = { authorization: 'Bearer bob-token' };
const ROOTS = { roots: {} };
const ELICIT = { elicitation: {} };

async function listening(t: Teardown, config: Record<string, unknown>): Promise<string> {
  const gateway = await startGateway(config);
  t.teardown(() => gateway.close());
  return gateway.url;
}

/** The roots fixture behind a gateway; `sessions` is the upstream's `sessions` entry, `extra` the rest of the config. */
async function stack(
  t: Teardown,
  sessions?: Record<string, unknown>,
  extra: Record<string, unknown> = {},
): Promise<{ upstream: RootsCacheServer; url: string }> {
  const upstream = await startRootsCacheServer();
  t.teardown(() => upstream.close());
  const url = await listening(t, {
    ...extra,
    upstreams: [{ name: 'roots', path: '/mcp', url: upstream.url, era: 'legacy', ...(sessions ? { sessions } : {}) }],
  });
  return { upstream, url };
}

/** `my_roots` as a client whose roots are `[uri]`: answers the roots/list round if the upstream asks. */
async function myRoots(url: string, uri: string, headers: Record<string, string> = {}): Promise<unknown> {
  const first = await post(url, 'tools/call', { name: 'my_roots', arguments: {} }, { capabilities: ROOTS, headers });
  let done = first;
  if (first.body.result?.resultType === 'input_required') {
    const [key] = Object.keys(first.body.result.inputRequests);
    done = await post(
      url,
      'tools/call',
      { name: 'my_roots', arguments: {}, requestState: first.body.result.requestState, inputResponses: { [key as string]: { roots: [{ uri }] } } },
      { capabilities: ROOTS, headers },
    );
  }
  return JSON.parse(done.body.result?.content?.[0]?.text ?? 'null');
}

const call = (url: string, name: string, headers: Record<string, string> = {}, capabilities: Record<string, unknown> = {}): Promise<RawReply> =>
  post(url, 'tools/call', { name, arguments: {} }, { capabilities, headers });

const textOf = (r: RawReply): string | undefined => r.body.result?.content?.[0]?.text;

/** A share refusal as the catalog says: 503, Retry-After, -31001 (the caller's own limit) with the share's message. */
function isShareRefusal(
  t: Test,
  r: { status: number; headers?: Headers | Record<string, unknown>; body: any },
  retryAfter: string | null | undefined,
  what: string,
): void {
  t.equal(r.status, 503, `${what}: 503`);
  t.equal(retryAfter, '1', `${what}: Retry-After`);
  t.equal(r.body?.error?.code, -31001, `${what}: -31001`);
  t.same(r.body?.error?.data, { retryAfterMs: 1000 }, `${what}: data.retryAfterMs`);
  t.match(r.body?.error?.message, SHARE_EXHAUSTED, `${what}: the catalogued message`);
}

/** POSTs like `post`, keeping the response headers. */
async function postWithHeaders(
  url: string,
  name: string,
  headers: Record<string, string>,
  capabilities: Record<string, unknown>,
): Promise<{ status: number; retryAfter: string | null; body: any }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': name,
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name,
        arguments: {},
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': capabilities,
          'io.modelcontextprotocol/clientInfo': { name: 't', version: '1' },
        },
      },
    }),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  const data = text
    .split('\n')
    .filter((l) => l.startsWith('data:'))
    .map((l) => JSON.parse(l.slice(5)));
  return { status: res.status, retryAfter: res.headers.get('retry-after'), body: data.at(-1) ?? (text ? JSON.parse(text) : undefined) };
}

t.test('finding: two anonymous clients are never given each other’s roots (default: one pool, reset on handover)', async (t) => {
  const { upstream, url } = await stack(t);
  t.same(await myRoots(url, 'file:///alice'), [{ uri: 'file:///alice' }]);
  t.same(await myRoots(url, 'file:///bob'), [{ uri: 'file:///bob' }], 'the second anonymous client gets its own roots');
  t.same(await myRoots(url, 'file:///carol'), [{ uri: 'file:///carol' }], 'and the third');
  t.equal(upstream.deletes, 0, 'pooled sessions are kept, not ended per request');
});

const noRedis = redisAvailable();
t.test(
  'the pool’s isolation with the Redis store: callers in turn, anonymous and two principals, each get their own roots',
  { skip: noRedis ?? false },
  async (t) => {
    const url = await redisForTest(t);
    const { upstream, url: gw } = await stack(t, undefined, {
      store: { kind: 'redis', url, keyPrefix: `iso-${Date.now()}:` },
      secret: { value: 'isolation-test-secret-at-least-32-characters' },
    });
    t.same(await myRoots(gw, 'file:///alice'), [{ uri: 'file:///alice' }]);
    t.same(await myRoots(gw, 'file:///bob'), [{ uri: 'file:///bob' }], 'anonymous callers in turn');
    t.same(await myRoots(gw, 'file:///a', A), [{ uri: 'file:///a' }]);
    t.same(await myRoots(gw, 'file:///b', B), [{ uri: 'file:///b' }], 'two principals');
    t.same(await myRoots(gw, 'file:///c'), [{ uri: 'file:///c' }], 'anonymous again');
    t.equal(upstream.deletes, 0);
  },
);

t.test('two principals never share a session, whatever the scopes', async (t) => {
  for (const sessions of [{ scope: 'principal' }, { scope: 'request' }, { scope: 'principal', anonymousScope: 'request' }]) {
    const { url } = await stack(t, sessions, { sessions: { warmIdle: 0 } });
    t.same(await myRoots(url, 'file:///alice', A), [{ uri: 'file:///alice' }], `${JSON.stringify(sessions)}: A`);
    t.same(await myRoots(url, 'file:///bob', B), [{ uri: 'file:///bob' }], `${JSON.stringify(sessions)}: B gets its own roots`);
    // Its own pooled session again (scope principal), whose cache is A's own; or a fresh one that asks again.
    t.same(
      await myRoots(url, 'file:///alice-again', A),
      [{ uri: sessions.scope === 'principal' ? 'file:///alice' : 'file:///alice-again' }],
      `${JSON.stringify(sessions)}: A again`,
    );
  }
});

t.test('anonymous callers share one pool: sessions reused one call at a time, nothing re-initialized in turn', async (t) => {
  const { upstream, url } = await stack(t, undefined, { sessions: { warmIdle: 0 } });
  const ids = new Set<string | undefined>();
  for (let i = 0; i < 4; i++) ids.add(textOf(await call(url, 'session_id')));
  t.equal(ids.size, 1, 'calls in turn reuse one session');
  t.equal(upstream.initializes, 1, 'one initialize');
  // Calls at once each get a session of their own: one held in an MRTR round, the other served beside it.
  const held = await call(url, 'ask_name', {}, ELICIT);
  t.equal(held.body.result?.resultType, 'input_required', 'a round holds its session');
  const other = textOf(await call(url, 'session_id', {}, ELICIT));
  t.notOk(ids.has(other), 'a call beside it is not given the held session');
  t.equal(upstream.deletes, 0, 'nothing ended');
});

t.test('anonymousScope request (the opt-in for servers with other per-session state): a fresh session per request', async (t) => {
  const { upstream, url } = await stack(t, { anonymousScope: 'request' });
  const ids = new Set<string | undefined>();
  for (let i = 0; i < 3; i++) ids.add(textOf(await call(url, 'session_id')));
  t.equal(ids.size, 3, 'three requests, three sessions');
  await upstream.until(() => upstream.deletes >= 3 && upstream.live === 0, `sessions not all ended: ${upstream.deletes} DELETEs, ${upstream.live} live`);
  t.equal(upstream.deletes, upstream.initializes, 'every session ended with DELETE');
});

t.test('scope principal: a principal’s requests reuse its pooled sessions, kept; B on others', async (t) => {
  const { upstream, url } = await stack(t, { scope: 'principal' }, { sessions: { warmIdle: 0 } });
  const ids = new Set<string | undefined>();
  for (let i = 0; i < 3; i++) ids.add(textOf(await call(url, 'session_id', A)));
  t.equal(ids.size, 1, 'every request of A in turn on one session');
  const b = textOf(await call(url, 'session_id', B));
  t.notOk(ids.has(b), 'B on another');
  t.equal(upstream.initializes, 2, 'one initialize per principal');
  t.equal(upstream.deletes, 0, 'pooled sessions are kept');
});

t.test('warm sessions: idle ones kept ready per key, so calls in steady state wait for no initialize', async (t) => {
  const { upstream, url } = await stack(t, { scope: 'principal' }, { sessions: { warmIdle: 2 } });
  t.equal(textOf(await call(url, 'greet', A)), 'hello');
  await upstream.until(() => upstream.initializes === 3, `two warm sessions beside the first (${upstream.initializes} initializes)`);
  // Steady state: calls in turn take a ready session; none waits for an initialize, none is opened or ended.
  for (let i = 0; i < 20; i++) t.equal(textOf(await call(url, 'greet', A)), 'hello');
  t.equal(upstream.initializes, 3, 'twenty more calls, no initialize');
  // Rounds held at once each hold a session of their own; the warm ones serve them, and are replaced.
  for (let i = 0; i < 3; i++) t.equal((await call(url, 'ask_name', A, ELICIT)).body.result?.resultType, 'input_required', `round ${i} held`);
  t.equal(upstream.deletes, 0);
});

t.test('each session declares exactly the input kinds its caller declared; one pool per set', async (t) => {
  const { upstream, url } = await stack(t, { scope: 'principal' }, { sessions: { warmIdle: 0 } });
  const sets = [{}, ROOTS, { sampling: {} }, ELICIT, { elicitation: { form: {} }, roots: {} }, { extensions: { x: {} } }];
  for (const caps of [...sets, ...sets]) t.equal(textOf(await call(url, 'greet', A, caps)), 'hello');
  t.same(
    upstream.declared,
    [{}, { roots: { listChanged: true } }, { sampling: {} }, { elicitation: { form: {} } }, { elicitation: { form: {} }, roots: { listChanged: true } }],
    'one session per set of input kinds (other capabilities do not split), declaring that set',
  );
});

t.test('a server that cached roots is told they changed when its session passes to another caller, and only then', async (t) => {
  const { upstream, url } = await stack(t, undefined, { sessions: { warmIdle: 0 } });
  t.same(await myRoots(url, 'file:///alice'), [{ uri: 'file:///alice' }]);
  t.same(await myRoots(url, 'file:///bob'), [{ uri: 'file:///bob' }], 'anonymous: every checkout is a handover');
  t.equal(upstream.initializes, 1, 'on the same session');
  const aliceA = await myRoots(url, 'file:///a', A);
  t.same(await myRoots(url, 'file:///a-again', A), aliceA, 'one principal: its own cache stays');
});

t.test('one principal holding MRTR rounds takes only its share of upstream sessions; another’s greet is served', async (t) => {
  // A short wait for a session to come free: none comes here, so the refusal follows it.
  const { upstream, url } = await stack(t, { scope: 'request' }, { sessions: { maxPerUpstream: 8, maxPerPrincipal: 2, acquireTimeoutMs: 200 } });
  for (let i = 0; i < 2; i++) t.equal((await call(url, 'ask_name', A, ELICIT)).body.result?.resultType, 'input_required', `round ${i} held`);
  const sent = upstream.initializes;
  const refused = await postWithHeaders(url, 'ask_name', A, ELICIT);
  isShareRefusal(t, refused, refused.retryAfter, 'A past its share');
  t.equal(upstream.initializes, sent, 'refused before anything reached the upstream');
  t.equal(textOf(await call(url, 'greet', B)), 'hello', 'B is served meanwhile');
  // Anonymous callers are one principal: holding rounds they take their share only.
  for (let i = 0; i < 2; i++) t.equal((await call(url, 'ask_name', {}, ELICIT)).body.result?.resultType, 'input_required');
  const anon = await postWithHeaders(url, 'greet', {}, {});
  isShareRefusal(t, anon, anon.retryAfter, 'anonymous past its share');
  t.equal(textOf(await call(url, 'greet', B)), 'hello', 'B is still served');
});

t.test('a call past its principal’s share waits for one of its sessions, and is served when one comes back', async (t) => {
  const { upstream, url } = await stack(t, undefined, { sessions: { maxPerUpstream: 8, maxPerPrincipal: 2, warmIdle: 0, acquireTimeoutMs: 60_000 } });
  const rounds = [];
  for (let i = 0; i < 2; i++) {
    const r = await call(url, 'ask_name', A, ELICIT);
    t.equal(r.body.result?.resultType, 'input_required', `round ${i} held`);
    rounds.push(r);
  }
  const sent = upstream.initializes;
  // The third call waits (nothing reaches the upstream for it) until the first round completes and frees its session.
  const waiting = call(url, 'ask_name', A, ELICIT);
  const first = rounds[0]!;
  const [key] = Object.keys(first.body.result.inputRequests);
  const done = await post(
    url,
    'tools/call',
    {
      name: 'ask_name',
      arguments: {},
      requestState: first.body.result.requestState,
      inputResponses: { [key as string]: { action: 'accept', content: { name: 'Ada' } } },
    },
    { capabilities: ELICIT, headers: A },
  );
  t.same(JSON.parse(textOf(done) ?? 'null'), { name: 'Ada' }, 'the first round completes');
  t.equal((await waiting).body.result?.resultType, 'input_required', 'the waiting call is served on the session that came back');
  t.equal(upstream.initializes, sent, 'no session opened for it: it took the freed one');
});

t.test('a burst of wrapped tasks past the principal’s share queues for sessions: every task completes', async (t) => {
  const upstream = await startRootsCacheServer();
  t.teardown(() => upstream.close());
  // A short wait for interactive calls; background calls wait within their budget instead.
  const url = await listening(t, {
    sessions: { maxPerUpstream: 8, maxPerPrincipal: 2, warmIdle: 0, acquireTimeoutMs: 50 },
    upstreams: [{ name: 'roots', path: '/mcp', url: upstream.url, era: 'legacy', tools: { ask_name: { task: 'always' } } }],
  });
  const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} }, elicitation: {} };
  // Each task holds a session while it waits for its answer: two take the share, the other four wait for them.
  const created = await Promise.all(
    [0, 1, 2, 3, 4, 5].map(() => post(url, 'tools/call', { name: 'ask_name', arguments: {} }, { capabilities: TASKS, headers: A })),
  );
  const ids = created.map((r) => r.body.result?.taskId as string);
  t.ok(
    ids.every((id) => typeof id === 'string'),
    'six tasks created',
    { bodies: created.filter((r) => typeof r.body.result?.taskId !== 'string').map((r) => [r.status, r.body]) },
  );
  const answered = new Set<string>();
  const deadline = Date.now() + 30_000;
  while (answered.size < ids.length && Date.now() < deadline) {
    for (const taskId of ids) {
      if (answered.has(taskId)) continue;
      const got = await post(url, 'tasks/get', { taskId }, { capabilities: TASKS, headers: A });
      const task = got.body.result;
      if (task?.status === 'failed') t.fail(`task ${taskId} failed: ${JSON.stringify(task).slice(0, 300)}`);
      const [key] = Object.keys(task?.inputRequests ?? {});
      if (task?.status !== 'input_required' || !key) continue;
      await post(
        url,
        'tasks/update',
        { taskId, inputResponses: { [key]: { action: 'accept', content: { name: taskId.slice(-4) } } } },
        { capabilities: TASKS, headers: A },
      );
      answered.add(taskId);
    }
    await new Promise((r) => setTimeout(r, 50)); // the tasks' own poll interval stands in for a client's
  }
  t.equal(answered.size, ids.length, 'every task was asked in turn, as sessions came free');
  t.ok(upstream.initializes <= 2, 'never more sessions than the share');
});

t.test('finding: one principal cannot take every listen stream; its own past the share are refused, others listen', async (t) => {
  // maxListenStreams 4: a principal's share is 1 by default (a quarter).
  const { url } = await stack(t, { scope: 'principal' }, { server: { maxListenStreams: 4 } });
  const opened: number[] = [];
  let refusal: { status: number; retryAfter: string | null; body: any } | undefined;
  for (let i = 0; i < 4; i++) {
    const l = await openListen(t, url, `a${i}`, { toolsListChanged: true }, A);
    if (l.response.status === 200) {
      opened.push(i);
      continue;
    }
    refusal ??= { status: l.response.status, retryAfter: l.response.headers.get('retry-after'), body: await l.stream.next() };
  }
  t.same(opened, [0], 'A gets its share');
  t.ok(refusal, 'A is refused past it');
  if (refusal) isShareRefusal(t, refusal, refusal.retryAfter, 'A’s listen past its share');
  const b = await openListen(t, url, 'b', { toolsListChanged: true }, B);
  t.equal(b.response.status, 200, 'B can still listen');
  t.equal((await b.stream.next()).method, 'notifications/subscriptions/acknowledged');
  t.equal(textOf(await call(url, 'greet', B)), 'hello', 'and B’s greet is served');
});

t.test('scope request: each listen holds its own upstream session, counted in the bound and the share', async (t) => {
  const { upstream, url } = await stack(
    t,
    { scope: 'request' },
    { sessions: { maxPerUpstream: 8, maxPerPrincipal: 2 }, server: { maxListenStreams: 100, maxListenStreamsPerPrincipal: 50 } },
  );
  for (let i = 0; i < 2; i++) {
    const l = await openListen(t, url, `a${i}`, { toolsListChanged: true }, A);
    t.equal(l.response.status, 200);
    await l.stream.next();
  }
  t.equal(upstream.live, 2, 'two listens, two upstream sessions');
  const third = await openListen(t, url, 'a2', { toolsListChanged: true }, A);
  isShareRefusal(
    t,
    { status: third.response.status, body: await third.stream.next() },
    third.response.headers.get('retry-after'),
    'A’s third listen (no session left in its share)',
  );
  t.equal(textOf(await call(url, 'greet', B)), 'hello', 'B is served');
});

t.test('legacy face: sessions and GET streams per principal', async (t) => {
  const fx = await startModernFixture({ mode: 'modern' });
  t.teardown(() => fx.close());
  const url = await listening(t, {
    clientSessions: { max: 40, maxPerPrincipal: 2, maxStreamsPerPrincipal: 1 },
    upstreams: [{ name: 'modern', path: '/mcp', url: fx.url, era: 'modern' }],
  });
  const initialize = async (headers: Record<string, string>) => {
    const res = await fetch(url, {
      method: 'POST',
      headers: { ...LEGACY_HEADERS, ...headers },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    return {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      sid: res.headers.get('mcp-session-id'),
      body: text ? JSON.parse(text) : undefined,
    };
  };
  const ping = async (sid: string, headers: Record<string, string>) =>
    (
      await fetch(url, {
        method: 'POST',
        headers: { ...LEGACY_HEADERS, ...headers, 'mcp-session-id': sid },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
        signal: AbortSignal.timeout(10_000),
      })
    ).status;
  const openGet = async (sid: string, headers: Record<string, string>, aborter: AbortController) => {
    t.teardown(() => aborter.abort());
    return fetch(url, {
      method: 'GET',
      headers: { ...LEGACY_HEADERS, ...headers, accept: 'text/event-stream', 'mcp-session-id': sid },
      signal: aborter.signal,
    });
  };

  const b = await initialize(B);
  const a1 = await initialize(A);
  const a2 = await initialize(A);
  const a3 = await initialize(A);
  t.ok(b.sid && a1.sid && a2.sid && a3.sid, 'every initialize got a session');
  t.equal(await ping(a1.sid as string, A), 404, 'A’s least recently used idle session made room for its third');
  t.equal(await ping(a3.sid as string, A), 200);
  t.equal(await ping(b.sid as string, B), 200, 'B’s session untouched');

  // GET streams: A has one; its second is refused; B still opens one.
  const g1 = await openGet(a2.sid as string, A, new AbortController());
  t.equal(g1.status, 200, 'A’s first GET stream');
  const g2 = await openGet(a3.sid as string, A, new AbortController());
  const g2body = JSON.parse(await g2.text());
  isShareRefusal(t, { status: g2.status, body: g2body }, g2.headers.get('retry-after'), 'A’s second GET stream');
  const gb = await openGet(b.sid as string, B, new AbortController());
  t.equal(gb.status, 200, 'B’s GET stream');

  // Every session of A busy: a long call in flight on each (its progress starts the answer's stream, so the call is
  // known to be running once the headers arrive); the next initialize is refused, B's is not.
  for (const sid of [a2.sid, a3.sid]) {
    const aborter = new AbortController();
    t.teardown(() => aborter.abort());
    const running = await fetch(url, {
      method: 'POST',
      headers: { ...LEGACY_HEADERS, ...A, 'mcp-session-id': sid as string },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'tools/call',
        params: { name: 'test_cancellable_wait', arguments: { maxMs: 20_000 }, _meta: { progressToken: 'p' } },
      }),
      signal: aborter.signal,
    });
    t.equal(running.headers.get('content-type'), 'text/event-stream', 'the call is running');
  }
  const refused = await initialize(A);
  isShareRefusal(t, refused, refused.retryAfter, 'A’s initialize with every session of its share busy');
  t.ok((await initialize(B)).sid, 'B initializes meanwhile');
});

t.test('config: the scopes and shares, their defaults, and a share larger than its bound refused', async (t) => {
  const c = parseConfig({ upstreams: [{ name: 'u', url: 'http://127.0.0.1:1/mcp' }] });
  t.same(c.upstreams[0]?.sessions, { scope: 'principal', anonymousScope: 'shared' }, 'anonymous callers share one pool, reset on handover');
  t.equal(c.sessions.warmIdle, 2, 'two warm sessions per key');
  t.equal(principalShare(c.sessions.maxPerUpstream, c.sessions.maxPerPrincipal), 64, 'a quarter of maxPerUpstream');
  t.equal(principalShare(c.server.maxListenStreams, c.server.maxListenStreamsPerPrincipal), 250, 'a quarter of maxListenStreams');
  t.equal(principalShare(c.clientSessions.max, c.clientSessions.maxPerPrincipal), 250, 'a quarter of clientSessions.max');
  t.equal(principalShare(3), 1, 'at least 1');
  t.equal(principalShare(256, 10), 10, 'as configured');
  t.throws(() => parseConfig({ upstreams: [{ name: 'u', url: 'http://127.0.0.1:1/mcp', sessions: { scope: 'everyone' } }] }), /upstreams\.0\.sessions\.scope/);
  t.throws(() => parseConfig({ sessions: { maxPerUpstream: 4, maxPerPrincipal: 5 } }), /sessions\.maxPerPrincipal/);
  t.throws(() => parseConfig({ server: { maxListenStreams: 4, maxListenStreamsPerPrincipal: 5 } }), /server\.maxListenStreamsPerPrincipal/);
  t.throws(() => parseConfig({ clientSessions: { max: 4, maxStreamsPerPrincipal: 5 } }), /clientSessions\.maxStreamsPerPrincipal/);
});
