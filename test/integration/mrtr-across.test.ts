/**
 * MRTR rounds across gateway instances: two gateways built in one process share one task store and one shared secret
 * (as instances behind one load balancer do), in front of a real legacy server: one memory store object, and a real
 * redis-server on loopback with a store of its own per gateway (skipped, with the reason printed, when this machine
 * has no redis-server). A retry carrying `requestState` that
 * lands on the instance not holding the call is relayed to the one that does, and answered as if it had arrived
 * there; a holder that is gone is a clear -32602 telling the client to start again.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Gateway } from '../../src/app.js';
import { MemoryTaskStore, type TaskStore } from '../../src/store/index.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startGateway } from '../helpers/gateway.js';
import { envelope, MODERN, post, type RawReply } from '../helpers/modern.js';
import { redisAvailable, redisForTest } from '../helpers/redis-server.js';
import { serveSdkSessions } from '../helpers/sdk-session-server.js';

const ELICIT = { elicitation: {} };
const ELICIT_TOOL = 'test_input_required_result_elicitation';
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** One gateway instance listening on loopback. */
interface Instance {
  gateway: Gateway;
  url: string;
  held(): Promise<number>;
}

/** Where the instances keep what they share: one memory store object, or one Redis (a store per instance). */
type Backend = { kind: 'memory' } | { kind: 'redis'; url: string };

async function instance(upstreamUrl: string, shared: { store: TaskStore } | { redis: Record<string, unknown> }, stateKey: Uint8Array): Promise<Instance> {
  const cfg = {
    ...('redis' in shared ? { store: shared.redis } : {}),
    upstreams: [{ name: 'fixture', path: '/mcp', url: upstreamUrl }],
  };
  const { gateway, url, origin } = await startGateway(cfg, { deps: { stateKey, ...('store' in shared ? { store: shared.store } : {}) } });
  return {
    gateway,
    url,
    async held() {
      return ((await (await fetch(`${origin}/healthz`)).json()) as { heldCalls: number }).heldCalls;
    },
  };
}

/** Gateways A and B over one backend and one secret, in front of `upstreamUrl`. */
async function pair(t: Teardown, backend: Backend, upstreamUrl: string): Promise<{ a: Instance; b: Instance }> {
  const stateKey = randomBytes(32);
  const store = backend.kind === 'memory' ? new MemoryTaskStore({ maxTasks: 1000, maxTtlMs: 600_000 }) : undefined;
  const shared = store ? { store } : { redis: { kind: 'redis', url: (backend as { url: string }).url, keyPrefix: `mcpgw-edge-${randomUUID().slice(0, 8)}:` } };
  const a = await instance(upstreamUrl, shared, stateKey);
  const b = await instance(upstreamUrl, shared, stateKey);
  t.teardown(async () => {
    await a.gateway.close();
    await b.gateway.close();
    await store?.close();
  });
  return { a, b };
}

async function fixture(t: Teardown): Promise<string> {
  const f = await startLegacyFixture();
  t.teardown(() => f.close());
  return f.url;
}

function call(url: string, name: string, extra: Record<string, unknown> = {}, opts: Parameters<typeof post>[3] = {}): Promise<RawReply> {
  return post(url, 'tools/call', { name, arguments: {}, ...extra }, { capabilities: ELICIT, ...opts });
}

/** The same rounds over either backend. */
function suite(t: Test, backend: Backend): void {
  t.test('a round started on A is completed through B: the retry runs on A, its answer comes back from B', async (t) => {
    const { a, b } = await pair(t, backend, await fixture(t));
    const r1 = await call(a.url, ELICIT_TOOL);
    t.equal(r1.body.result?.resultType, 'input_required');
    t.equal(await a.held(), 1, 'A holds the call');
    t.equal(await b.held(), 0);
    const r2 = await call(
      b.url,
      ELICIT_TOOL,
      { requestState: r1.body.result.requestState, inputResponses: { user_name: accept({ name: 'Alice' }) } },
      { id: 'on-b' },
    );
    t.equal(r2.status, 200);
    t.equal(r2.body.id, 'on-b', 'B answers with the id of the request it got');
    t.equal(r2.body.result.resultType, 'complete');
    t.same(r2.body.result.content, [{ type: 'text', text: 'Hello, Alice!' }]);
    t.equal(await a.held(), 0, 'the call ended on A');

    const replay = await call(
      b.url,
      ELICIT_TOOL,
      { requestState: r1.body.result.requestState, inputResponses: { user_name: accept({ name: 'Alice' }) } },
      { id: 'replay' },
    );
    t.equal(replay.status, 400, "A's refusal is B's answer, with the status it has locally");
    t.equal(replay.body.id, 'replay');
    t.equal(replay.body.error.code, -32602);
    t.equal(replay.body.error.message, 'Invalid requestState', 'the one answer for every invalid state (error catalog)');
  });

  t.test('several rounds alternate between instances; every state names the holder', async (t) => {
    const { a, b } = await pair(t, backend, await fixture(t));
    const tool = 'test_input_required_result_multi_round';
    const r1 = await call(b.url, tool);
    t.same(Object.keys(r1.body.result.inputRequests), ['step1']);
    const r2 = await call(a.url, tool, { requestState: r1.body.result.requestState, inputResponses: { step1: accept({ name: 'Bob' }) } });
    t.equal(r2.body.result.resultType, 'input_required', 'round 2 asked on B, relayed from A');
    t.same(Object.keys(r2.body.result.inputRequests), ['step2']);
    const inst = (state: string) => JSON.parse(Buffer.from(state.split('.')[0] as string, 'base64url').toString('utf8')).inst;
    t.equal(inst(r2.body.result.requestState), inst(r1.body.result.requestState), 'the new state names B again');
    const r3 = await call(a.url, tool, { requestState: r2.body.result.requestState, inputResponses: { step2: accept({ color: 'green' }) } });
    t.same(r3.body.result?.content, [{ type: 'text', text: 'Multi-round complete for Bob who likes green' }]);
    t.equal(await b.held(), 0);
  });

  t.test("another principal's retry through B is refused as it would be on A", async (t) => {
    const { a, b } = await pair(t, backend, await fixture(t));
    const r1 = await call(a.url, ELICIT_TOOL, {}, { headers: { authorization: 'Bearer alice' } });
    const state = r1.body.result.requestState;
    const answers = { user_name: accept({ name: 'Mallory' }) };
    const foreign = await call(b.url, ELICIT_TOOL, { requestState: state, inputResponses: answers }, { headers: { authorization: 'Bearer mallory' } });
    t.equal(foreign.status, 400);
    t.equal(foreign.body.error.code, -32602);
    t.equal(foreign.body.error.message, 'Invalid requestState', 'the same answer as a replayed state: no oracle');
    const own = await call(
      b.url,
      ELICIT_TOOL,
      { requestState: state, inputResponses: { user_name: accept({ name: 'Alice' }) } },
      { headers: { authorization: 'Bearer alice' } },
    );
    t.same(own.body.result?.content, [{ type: 'text', text: 'Hello, Alice!' }], "the owner's credentials travel sealed to A and on upstream");
  });

  /** A legacy server whose tool asks first and reports progress after the answer. */
  async function askThenProgress(t: Teardown): Promise<string> {
    const server = await serveSdkSessions(() => {
      const s = new McpServer({ name: 'ask-then-progress', version: '1.0.0' });
      s.registerTool('ask_then_progress', { description: 'asks, then reports progress' }, async (extra) => {
        const r = await extra.sendRequest(
          { method: 'elicitation/create', params: { message: 'Go on?', requestedSchema: { type: 'object', properties: { ok: { type: 'boolean' } } } } },
          ElicitResultSchema,
        );
        const token = extra._meta?.progressToken;
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: 100, total: 100, message: 'after the answer' },
          });
        }
        return { content: [{ type: 'text', text: `went on: ${r.action}` }] };
      });
      return s;
    }, 'sdk-400-json');
    t.teardown(() => server.close());
    return server.url;
  }

  t.test('progress of a relayed round reaches the client on B', async (t) => {
    // The progress happens on A, during the round B relayed there.
    const { a, b } = await pair(t, backend, await askThenProgress(t));
    const params = (extra: Record<string, unknown> = {}) => ({
      name: 'ask_then_progress',
      arguments: {},
      _meta: envelope(ELICIT, { progressToken: 'pt-across' }),
      ...extra,
    });
    const r1 = await post(a.url, 'tools/call', params());
    t.equal(r1.body.result?.resultType, 'input_required');
    const [key] = Object.keys(r1.body.result.inputRequests) as [string];
    const r2 = await post(b.url, 'tools/call', params({ requestState: r1.body.result.requestState, inputResponses: { [key]: accept({ ok: true }) } }));
    t.match(r2.contentType, /^text\/event-stream/);
    t.same(
      r2.messages.map((m) => [m.method, m.params?.progressToken, m.params?.message]),
      [['notifications/progress', 'pt-across', 'after the answer']],
      'the progress A heard came to the client on B',
    );
    t.same(r2.body.result?.content, [{ type: 'text', text: 'went on: accept' }]);
  });

  t.test("a retry's own progress token: the progress after the round carries it; a retry without one gets none", async (t) => {
    const { a, b } = await pair(t, backend, await askThenProgress(t));
    const first = { name: 'ask_then_progress', arguments: {}, _meta: envelope(ELICIT, { progressToken: 'pt-first' }) };
    for (const [url, token, expected] of [
      [a.url, 'pt-retry', [['notifications/progress', 'pt-retry', 'after the answer']]],
      [b.url, 'pt-relayed', [['notifications/progress', 'pt-relayed', 'after the answer']]],
      [a.url, undefined, []],
    ] as const) {
      const r1 = await post(a.url, 'tools/call', first);
      t.equal(r1.body.result?.resultType, 'input_required');
      const [key] = Object.keys(r1.body.result.inputRequests) as [string];
      const retryMeta = token === undefined ? envelope(ELICIT) : envelope(ELICIT, { progressToken: token });
      const r2 = await post(url, 'tools/call', {
        name: 'ask_then_progress',
        arguments: {},
        _meta: retryMeta,
        requestState: r1.body.result.requestState,
        inputResponses: { [key]: accept({ ok: true }) },
      });
      t.same(
        r2.messages.map((m) => [m.method, m.params?.progressToken, m.params?.message]),
        expected,
        `retry with ${token ?? 'no token'}${url === b.url ? ', relayed' : ''}`,
      );
      t.same(r2.body.result?.content, [{ type: 'text', text: 'went on: accept' }]);
    }
  });

  t.test('the client on B gives up during a relayed round: the held call on A is cancelled upstream', async (t) => {
    // A legacy server whose tool asks, then works until it is cancelled: the relayed round on A is still running when
    // the client on B goes away.
    let cancelledUpstream!: () => void;
    const cancelled = new Promise<void>((resolve) => (cancelledUpstream = resolve));
    let working!: () => void;
    const started = new Promise<void>((resolve) => (working = resolve));
    const server = await serveSdkSessions(() => {
      const s = new McpServer({ name: 'ask-then-work', version: '1.0.0' });
      s.registerTool('ask_then_work', { description: 'asks, then works until cancelled' }, async (extra) => {
        await extra.sendRequest(
          { method: 'elicitation/create', params: { message: 'Start?', requestedSchema: { type: 'object', properties: {} } } },
          ElicitResultSchema,
        );
        working();
        await new Promise<void>((resolve) => extra.signal.addEventListener('abort', () => resolve(), { once: true }));
        cancelledUpstream();
        return { content: [{ type: 'text', text: 'stopped' }] };
      });
      return s;
    }, 'sdk-400-json');
    t.teardown(() => server.close());
    const { a, b } = await pair(t, backend, server.url);
    const r1 = await call(a.url, 'ask_then_work');
    const [key] = Object.keys(r1.body.result.inputRequests) as [string];
    const leaving = new AbortController();
    const retry = fetch(b.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN,
        'mcp-method': 'tools/call',
        'mcp-name': 'ask_then_work',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 'leaving',
        method: 'tools/call',
        params: {
          name: 'ask_then_work',
          arguments: {},
          requestState: r1.body.result.requestState,
          inputResponses: { [key]: accept({}) },
          _meta: envelope(ELICIT),
        },
      }),
      signal: leaving.signal,
    })
      .then((res) => res.text())
      .catch((e: unknown) => e);
    await started;
    leaving.abort();
    await retry;
    await cancelled;
    t.pass('the upstream call A held was cancelled');
    t.equal(await a.held(), 0, 'nothing is held on A any more');
  });

  t.test('the holding instance closed: the retry on B is told at once to start again without requestState', async (t) => {
    const { a, b } = await pair(t, backend, await fixture(t));
    const r1 = await call(a.url, ELICIT_TOOL);
    const state = r1.body.result.requestState;
    await a.gateway.close();
    const r2 = await call(b.url, ELICIT_TOOL, { requestState: state, inputResponses: { user_name: accept({ name: 'Alice' }) } }, { id: 'late' });
    t.equal(r2.status, 400);
    t.equal(r2.body.id, 'late');
    t.equal(r2.body.error.code, -32602);
    t.match(r2.body.error.message, /gone; send the request again without requestState/);
    const fresh = await call(b.url, ELICIT_TOOL);
    t.equal(fresh.body.result?.resultType, 'input_required', 'starting again works on B');
  });
}

t.test('one memory store shared in one process', async (t) => suite(t, { kind: 'memory' }));

const missing = redisAvailable();
if (missing) t.comment(`Redis variant skipped: ${missing}`);
t.test('one redis-server, a store per instance', { skip: missing ?? false }, async (t) => {
  suite(t, { kind: 'redis', url: await redisForTest(t) });
});
