/**
 * Property-based fuzzing of both faces (fast-check): malformed JSON-RPC, wrong types for every params field, huge and
 * deeply nested values, odd header values and random `_meta` thrown at a real gateway in front of real fixture
 * upstreams, plus hostile answers from a fuzzing upstream (test/fixtures/hostile-upstream.ts, a FAKE) behind two more
 * paths of the same gateway. Properties (docs/security.md §Input validation):
 * - every request gets a well-formed answer within its bound (a JSON-RPC error with a numeric code and a string
 *   message, or a result; an HTTP status the gateway answers with) — never a gateway fault (500);
 * - a wrong-typed `_meta` value or input answer is refused with -32602, and a refused MRTR retry leaves the round
 *   usable (the same requestState then completes with a correct answer);
 * - the process never crashes (no uncaught exception or unhandled rejection while the gateway runs in-process);
 * - memory returns to its baseline (heap after a full gc within 24 MiB of the heap after a warm-up run; no held
 *   rounds, hung upstream sockets or fuzz-opened legacy sessions left);
 * - a task another client started before the fuzzing completes untouched, with its expected result.
 * Each request's bound is an `AbortSignal.timeout` on it (no duration is asserted).
 */
import { connect } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import t from 'tap';
import type { Gateway } from '../../src/app.js';
import { ERROR_CATALOG } from '../../src/translate/error-catalog.js';
import { startHostileUpstream, type HostileAnswer, type HostileUpstream } from '../fixtures/hostile-upstream.js';
import { startLegacyFixture, type LegacyFixture } from '../fixtures/legacy-server.js';
import { startModernFixture, type ModernFixture } from '../fixtures/modern-server.js';
import { connectEra, type EraClient } from '../helpers/era-clients.js';
import { startGateway } from '../helpers/gateway.js';

t.setTimeout(110_000);

const MODERN = '2026-07-28';
const LEGACY = '2025-11-25';
/** Every request's bound: an answer (or the end of its stream) within this, or the property fails. */
const REQUEST_BOUND_MS = 10_000;
/** Heap growth tolerated after the fuzzing, over the heap after the warm-up run (both after a full gc). */
const HEAP_TOLERANCE_BYTES = 24 * 1024 * 1024;
/** Runs per property (seeded by fast-check; a failure prints its seed and the shrunk counterexample). */
const RUNS = Number(process.env.FUZZ_RUNS ?? 200);

/** Statuses the gateway answers with: the catalog's, and the transport's own (202 for responses, 404/405/406/409). */
const STATUSES = new Set<number>([
  ...Object.values(ERROR_CATALOG).map((e) => e.status),
  200,
  202,
  400,
  401,
  403,
  404,
  405,
  406,
  408,
  409,
  413,
  415,
  429,
  431,
  502,
  503,
  504,
]);

// ── The gateway under fuzz ──

let legacy: LegacyFixture;
let modern: ModernFixture;
let hostile: HostileUpstream;
let gateway: Gateway;
let base = '';
const crashes: unknown[] = [];
const onCrash = (e: unknown) => crashes.push(e);

t.before(async () => {
  process.on('uncaughtException', onCrash);
  process.on('unhandledRejection', onCrash);
  legacy = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 0 });
  modern = await startModernFixture({ mode: 'modern' });
  hostile = await startHostileUpstream();
  const cfg = {
    // Rounds nobody continues (the hostile upstream's questions) end soon, so that what they hold is seen released.
    input: { holdMs: 1_500 },
    upstreams: [
      { name: 'legacy', path: '/legacy', url: legacy.url, tools: { slow_compute: { task: 'always' } } },
      { name: 'modern', path: '/modern', url: modern.url },
      // Wrapped calls are the gateway's own (it reads the upstream's answers); the rest passes through as it is.
      { name: 'hostile', path: '/hostile', url: hostile.url, era: 'modern', timeoutMs: 1_000, tools: { '*': { task: 'auto', afterMs: 5_000 } } },
      { name: 'hostile-legacy', path: '/hostile-legacy', url: hostile.url, era: 'legacy', timeoutMs: 1_000 },
    ],
  };
  ({ gateway, origin: base } = await startGateway(cfg));
});

t.teardown(async () => {
  await gateway?.close();
  await Promise.all([legacy?.close(), modern?.close(), hostile?.close()]);
  process.off('uncaughtException', onCrash);
  process.off('unhandledRejection', onCrash);
});

// ── Sending and judging ──

interface Reply {
  status: number;
  contentType: string;
  text: string;
  /** The JSON-RPC messages of the body: the JSON body, or each SSE event's data. */
  messages: unknown[];
  headers: Headers;
}

/** One request, read to its end within the bound (an abort fails the property). */
async function send(path: string, init: { method?: string; headers: Record<string, string>; body?: string }): Promise<Reply> {
  const res = await fetch(`${base}${path}`, {
    method: init.method ?? 'POST',
    headers: init.headers,
    ...(init.body !== undefined ? { body: init.body } : {}),
    signal: AbortSignal.timeout(REQUEST_BOUND_MS),
  });
  const text = await res.text();
  const contentType = res.headers.get('content-type') ?? '';
  const messages: unknown[] = [];
  if (contentType.includes('text/event-stream')) {
    for (const event of text.split(/\n\n/)) {
      const data = event
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n');
      if (data) messages.push(JSON.parse(data));
    }
  } else if (text) {
    messages.push(JSON.parse(text));
  }
  return { status: res.status, contentType, text, messages, headers: res.headers };
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Why a reply is not a well-formed answer, or `undefined`. */
function malformed(r: Reply, opts: { emptyOk?: boolean } = {}): string | undefined {
  if (!STATUSES.has(r.status)) return `status ${r.status} is not one the gateway answers with`;
  if (r.status === 500) return `a gateway fault (500): ${r.text.slice(0, 300)}`;
  if (r.messages.length === 0) {
    if (opts.emptyOk && (r.status === 202 || r.status === 200)) return undefined;
    return `HTTP ${r.status} without a JSON-RPC message: ${JSON.stringify(r.text.slice(0, 200))}`;
  }
  const last = r.messages.at(-1);
  if (!isObj(last) || last.jsonrpc !== '2.0') return `not JSON-RPC 2.0: ${JSON.stringify(last).slice(0, 200)}`;
  if ('error' in last) {
    const e = last.error;
    if (!isObj(e) || typeof e.code !== 'number' || !Number.isInteger(e.code) || typeof e.message !== 'string')
      return `malformed error ${JSON.stringify(e).slice(0, 200)}`;
    if ('result' in last) return 'both result and error';
    return undefined;
  }
  if ('result' in last) return isObj(last.result) ? undefined : `result is not an object: ${JSON.stringify(last.result).slice(0, 100)}`;
  if (opts.emptyOk && 'method' in last) return undefined; // a notification or request on a stream, then it ended: judged by status
  return `neither result nor error: ${JSON.stringify(last).slice(0, 200)}`;
}

function expectWellFormed(r: Reply, what: string, opts: { emptyOk?: boolean } = {}): void {
  const problem = malformed(r, opts);
  if (problem) throw new Error(`${what}: ${problem}`);
}

function errorOf(r: Reply): { code: number; message: string } | undefined {
  const last = r.messages.at(-1);
  return isObj(last) && isObj(last.error) ? (last.error as { code: number; message: string }) : undefined;
}

/** Modern request headers for `body` (a modern client's, to be overridden by the fuzz). */
function modernHeaders(method: string, name?: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': MODERN,
    'mcp-method': method,
    ...(name !== undefined ? { 'mcp-name': name } : {}),
  };
}

function envelope(
  extra: Record<string, unknown> = {},
  capabilities: Record<string, unknown> = { elicitation: {}, sampling: {}, roots: {} },
): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'fuzz', version: '1.0.0' },
    ...extra,
  };
}

// ── Arbitraries ──

const METHODS = [
  'tools/call',
  'tools/list',
  'prompts/get',
  'prompts/list',
  'resources/read',
  'resources/list',
  'resources/templates/list',
  'tasks/get',
  'tasks/update',
  'tasks/cancel',
  'tasks/list',
  'tasks/result',
  'subscriptions/listen',
  'server/discover',
  'initialize',
  'ping',
  'logging/setLevel',
  'completion/complete',
  'notifications/cancelled',
  'notifications/initialized',
];
const PARAM_FIELDS = [
  'name',
  'arguments',
  'uri',
  'taskId',
  'cursor',
  'inputResponses',
  'requestState',
  'task',
  'notifications',
  'level',
  'ref',
  'argument',
  'protocolVersion',
  'capabilities',
  'clientInfo',
];
const META_KEYS = [
  'io.modelcontextprotocol/protocolVersion',
  'io.modelcontextprotocol/clientCapabilities',
  'io.modelcontextprotocol/clientInfo',
  'io.modelcontextprotocol/logLevel',
  'progressToken',
  'io.modelcontextprotocol/related-task',
  'mcp-tasks-gateway/inputKey',
];

/** Latin-1 text (what an HTTP header may carry through fetch), odd characters likely. */
const headerText = fc
  .oneof(
    fc.string({
      unit: fc
        .integer({ min: 0x20, max: 0xff })
        .filter((c) => c !== 0x7f)
        .map((c) => String.fromCharCode(c)),
      maxLength: 40,
    }),
    fc.constantFrom('', ' ', '2026-07-28 ', '=?base64?AAAA?=', '=?base64?%%%?=', '=?base64?8J+YgA==?=', '2025-11-25', 'tools/call', '*', 'null'),
    // Long, yet all of a request's headers stay under Node's 16 KiB header limit (beyond it: test 'raw header bytes').
    fc.integer({ min: 100, max: 2_000 }).map((n) => 'x'.repeat(n)),
  )
  .map((s) => s.trim() || 'x');

/** Any JSON value, bounded; sometimes huge or deep. */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 200_000 }).map((n) => 'x'.repeat(n)) },
  { weight: 1, arbitrary: fc.integer({ min: 1_000, max: 20_000 }).map((n) => Array.from({ length: n }, (_, i) => i)) },
  { weight: 1, arbitrary: fc.integer({ min: 50, max: 500 }).map((d) => nest(d)) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(-0, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, 0.5, '__proto__', JSON.parse('{"__proto__":{"polluted":1}}') as unknown, {
      constructor: { prototype: 1 },
    }),
  },
);

function nest(depth: number): unknown {
  let v: unknown = 'deep';
  for (let i = 0; i < depth; i++) v = i % 2 ? [v] : { a: v };
  return v;
}

const anyId = fc.oneof(
  fc.integer(),
  fc.string({ maxLength: 20 }),
  fc.constant(null),
  fc.boolean(),
  fc.double(),
  fc.constant({}),
  fc.constant([1]),
  fc.constant(2 ** 70),
);

/** A JSON-RPC-ish message: the right shape with wrong parts, or not the shape at all. */
const messageArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 1, arbitrary: anyJson },
  {
    weight: 4,
    arbitrary: fc.record(
      {
        jsonrpc: fc.oneof(fc.constant('2.0'), fc.constant('2.0'), fc.constant('1.0'), fc.constant(2), fc.constant(null)),
        id: anyId,
        method: fc.oneof(fc.constantFrom(...METHODS), fc.string({ maxLength: 30 }), fc.integer()),
        params: fc.oneof(fc.dictionary(fc.oneof(fc.constantFrom(...PARAM_FIELDS), fc.string({ maxLength: 10 })), anyJson, { maxKeys: 5 }), anyJson),
        result: anyJson,
        error: anyJson,
        extra: anyJson,
      },
      { requiredKeys: [] },
    ),
  },
);

/** A request that is right but for a `_meta` of random keys and values (reserved ones likely). */
const metaArb = fc.dictionary(fc.oneof(fc.constantFrom(...META_KEYS), fc.string({ maxLength: 12 })), anyJson, { maxKeys: 4 });

/** Odd values for each standard header, or the right one. */
const headersArb = fc.record(
  {
    'mcp-protocol-version': headerText,
    'mcp-method': headerText,
    'mcp-name': headerText,
    accept: fc.oneof(headerText, fc.constantFrom('text/event-stream', 'application/json', '*/*', 'text/html')),
    'content-type': fc.oneof(
      headerText,
      fc.constantFrom('application/json', 'application/json; charset=latin1', 'text/plain', 'application/x-www-form-urlencoded', 'application/jsonx'),
    ),
    'mcp-session-id': headerText,
    authorization: headerText,
  },
  { requiredKeys: [] },
);

// ── Properties ──

t.test('fuzzing both faces, the upstream, and the input answers', async (t) => {
  // A gc the test can call (node's own flag, set before the function is made).
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const heap = () => {
    gc();
    gc();
    return process.memoryUsage().heapUsed;
  };

  // Another client's task, started before the fuzzing: a slow tool the gateway wraps as a task, through a real client.
  const bystander: EraClient = await connectEra('modern', `${base}/legacy`);
  t.teardown(() => bystander.close());
  const created = await bystander.start('slow_compute', { seconds: 3, label: 'bystander' });
  t.equal(created.status, 'working', 'the bystander task runs');

  const modernMalformed = fc.asyncProperty(
    fc.constantFrom('/legacy', '/modern'),
    messageArb,
    headersArb,
    fc.boolean(),
    async (path, message, headers, keepHeaders) => {
      const body = typeof message === 'string' && message.startsWith('x') ? message : JSON.stringify(message);
      const method = isObj(message) && typeof message.method === 'string' ? message.method : 'tools/call';
      const h = keepHeaders ? { ...modernHeaders(method), ...pick(headers, ['accept', 'mcp-name']) } : { ...modernHeaders(method), ...headers };
      const r = await send(path, { headers: h, body: body ?? 'null' });
      expectWellFormed(r, `POST ${path}`, { emptyOk: true });
    },
  );

  const metaFuzz = fc.asyncProperty(
    fc.constantFrom(['/legacy', 'greet', { name: 'fuzz' }], ['/modern', 'greet', { name: 'fuzz' }]),
    metaArb,
    async ([path, name, args], meta) => {
      const params = { name, arguments: args, _meta: envelope(meta) };
      const r = await send(path as string, {
        headers: modernHeaders('tools/call', name as string),
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params }),
      });
      expectWellFormed(r, `tools/call ${path} with _meta ${JSON.stringify(meta).slice(0, 200)}`);
      // The face reads the envelope itself; a modern upstream passed through to is the judge of its own requests.
      // A body with a `__proto__` key is refused whole by the JSON parser (-32700, prototype poisoning guard).
      const wrong = path === '/legacy' && !/"(__proto__|constructor)"/.test(JSON.stringify(meta)) ? wrongMeta(params._meta) : undefined;
      const e0 = errorOf(r);
      // The JSON depth guard refuses a deeply nested body whole, before the envelope is read (-32600).
      if (wrong && !(e0?.code === -32600 && /nested deeper/.test(e0.message))) {
        const e = errorOf(r);
        if (e?.code !== -32602 || r.status !== 400)
          throw new Error(`_meta ${wrong} of the wrong type got HTTP ${r.status} ${JSON.stringify(e)}, not 400 -32602`);
      }
    },
  );

  const legacyFace = fc.asyncProperty(
    fc.option(fc.record({ protocolVersion: fc.oneof(fc.constant(LEGACY), anyJson), capabilities: anyJson, clientInfo: anyJson }, { requiredKeys: [] }), {
      nil: undefined,
    }),
    fc.array(fc.tuple(messageArb, headersArb, fc.boolean()), { minLength: 1, maxLength: 4 }),
    async (initParams, messages) => {
      const init = {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: initParams ?? {
          protocolVersion: LEGACY,
          capabilities: { elicitation: {}, sampling: {}, roots: {} },
          clientInfo: { name: 'fuzz', version: '1' },
        },
      };
      const legacyHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
      const r0 = await send('/legacy', { headers: legacyHeaders, body: JSON.stringify(init) });
      expectWellFormed(r0, 'initialize');
      const session = r0.headers.get('mcp-session-id');
      try {
        for (const [message, headers, keepSession] of messages) {
          const h: Record<string, string> = { ...legacyHeaders, 'mcp-protocol-version': LEGACY, ...headers };
          if (session && keepSession) h['mcp-session-id'] = session;
          const r = await send('/legacy', { headers: h, body: JSON.stringify(message) ?? 'null' });
          expectWellFormed(r, `legacy session request ${JSON.stringify(message)?.slice(0, 120)}`, { emptyOk: true });
        }
      } finally {
        if (session) {
          const d = await send('/legacy', { method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': LEGACY } });
          // biome-ignore lint/correctness/noUnsafeFinally: a DELETE that fails is this test's failure, whatever came before
          if (d.status !== 200 && d.status !== 404) throw new Error(`DELETE of the fuzz session: HTTP ${d.status}`);
        }
      }
    },
  );

  const hostileUpstream = fc.asyncProperty(
    hostileAnswerArb(),
    fc.constantFrom(
      // Read by the gateway: a wrapped call to a modern upstream, anything a modern client sends a legacy one.
      ['/hostile', 'tools/call', { name: 'hostile_tool', arguments: {} }, 'read'],
      ['/hostile-legacy', 'tools/call', { name: 'hostile_tool', arguments: {} }, 'read'],
      ['/hostile-legacy', 'prompts/get', { name: 'p' }, 'read'],
      ['/hostile-legacy', 'resources/read', { uri: 'file:///x' }, 'read'],
      ['/hostile-legacy', 'tools/list', {}, 'read'],
      // Passed through as it is (the upstream's answer is the client's): it must still end within the bound.
      ['/hostile', 'tools/list', {}, 'passed'],
      ['/hostile', 'prompts/get', { name: 'p' }, 'passed'],
    ),
    async (answer, [path, method, params, mode]) => {
      hostile.script = () => answer;
      const name = (params as { name?: string; uri?: string }).name ?? (params as { uri?: string }).uri;
      const body = JSON.stringify({ jsonrpc: '2.0', id: 7, method, params: { ...(params as object), _meta: envelope() } });
      const what = `${method} on ${path} with the upstream answering ${JSON.stringify(answer).slice(0, 300)}`;
      if (mode === 'passed') {
        // An upstream that hangs a passed-through stream hangs the client's (the todo test below): not fuzzed here.
        fc.pre(!hangs(answer));
        const res = await fetch(`${base}${path}`, {
          method: 'POST',
          headers: modernHeaders(method as string, name),
          body,
          signal: AbortSignal.timeout(REQUEST_BOUND_MS),
        });
        await res.arrayBuffer().catch((e: unknown) => {
          // A stream the upstream broke is broken for the client too; only no end at all fails.
          if ((e as Error).name === 'TimeoutError') throw new Error(`${what}: no end within the bound`);
        });
        return;
      }
      // An error status on a stream that never ends stays open upstream after the answer (the todo test below).
      fc.pre(!(path === '/hostile-legacy' && answer.kind === 'sse' && answer.status >= 300 && answer.end === 'hang'));
      expectWellFormed(await send(path as string, { headers: modernHeaders(method as string, name), body }), what);
    },
  );

  const inputAnswers = fc.asyncProperty(
    fc.oneof(anyJson, elicitAnswerArb()),
    fc.oneof(fc.constant('confirm'), fc.string({ maxLength: 8 })),
    async (answer, key) => {
      const tool = 'test_input_required_result_request_state';
      const call = (extra: Record<string, unknown>) =>
        send('/legacy', {
          headers: modernHeaders('tools/call', tool),
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: {}, ...extra, _meta: envelope() } }),
        });
      const first = await call({});
      expectWellFormed(first, 'the first round');
      const round = first.messages.at(-1) as { result: { resultType: string; requestState: string; inputRequests: Record<string, unknown> } };
      if (round.result.resultType !== 'input_required') throw new Error(`no input asked: ${first.text.slice(0, 200)}`);
      const retry = await call({ inputResponses: { [key]: answer }, requestState: round.result.requestState });
      expectWellFormed(retry, `a retry answering ${JSON.stringify({ [key]: answer }).slice(0, 200)}`);
      const e = errorOf(retry);
      // A `__proto__` or `constructor` key anywhere is refused whole by the JSON parser (-32700, poisoning guard).
      // So is a body nested deeper than the JSON depth guard allows (-32600).
      const poisoned =
        (e?.code === -32700 && /"(__proto__|constructor)"/.test(JSON.stringify({ [key]: answer }))) || (e?.code === -32600 && /nested deeper/.test(e.message));
      if (e) {
        if (!poisoned && (e.code !== -32602 || retry.status !== 400)) throw new Error(`a refused answer got HTTP ${retry.status} ${JSON.stringify(e)}`);
        // The round is still usable: the same state carries a correct answer to the end.
        const fixed = await call({ inputResponses: { confirm: { action: 'accept', content: { ok: true } } }, requestState: round.result.requestState });
        expectWellFormed(fixed, 'the corrected retry');
        const text = JSON.stringify(fixed.messages.at(-1));
        if (!text.includes('state-ok')) throw new Error(`the corrected retry did not complete the round: ${text.slice(0, 300)}`);
      } else {
        // Accepted: only a valid answer under the asked key, or keys of no concern re-asked (the round goes on).
        const result = (retry.messages.at(-1) as { result: { resultType?: string } }).result;
        if (key !== 'confirm' && result.resultType !== 'input_required') throw new Error(`an unknown key was taken: ${retry.text.slice(0, 200)}`);
        if (result.resultType === 'input_required') {
          // Not answered: drop the round so that nothing is left held.
          const again = result as { requestState: string };
          await call({ inputResponses: { confirm: { action: 'cancel' } }, requestState: again.requestState });
        }
      }
    },
  );

  const rawHeaders = fc.asyncProperty(
    fc.array(
      fc.tuple(
        fc.constantFrom('mcp-protocol-version', 'mcp-method', 'mcp-name', 'accept', 'content-type', 'mcp-session-id', 'x-odd'),
        fc.uint8Array({ minLength: 0, maxLength: 300 }),
      ),
      { minLength: 1, maxLength: 4 },
    ),
    fc.constantFrom('/legacy', '/modern', '/hostile'),
    async (headers, path) => {
      const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } }));
      const head = Buffer.concat([
        Buffer.from(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\ncontent-length: ${body.length}\r\n`),
        ...headers.map(([k, v]) => Buffer.concat([Buffer.from(`${k}: `), Buffer.from(v.filter((b) => b !== 13 && b !== 10)), Buffer.from('\r\n')])),
        Buffer.from('\r\n'),
      ]);
      const answer = await rawExchange(Buffer.concat([head, body]));
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(answer);
      if (!m) throw new Error(`not an HTTP answer: ${JSON.stringify(answer.slice(0, 100))}`);
      const status = Number(m[1]);
      if (!STATUSES.has(status) || status === 500) throw new Error(`raw headers got HTTP ${status}: ${answer.slice(0, 300)}`);
    },
  );

  // Warm-up (JIT, pools, caches): a short run of each, then the baseline.
  const warm = { numRuns: 10, seed: 1 };
  await fc.assert(modernMalformed, warm);
  await fc.assert(metaFuzz, warm);
  await fc.assert(hostileUpstream, warm);
  await fc.assert(legacyFace, { numRuns: 3, seed: 1 });
  const baseline = heap();

  // Each property stops after RUNS runs or 8 s, whichever comes first (the machine is shared; the file stays well
  // under tap's 120 s): an interrupted property passes with the runs it made.
  const opts = { numRuns: RUNS, interruptAfterTimeLimit: 8_000 };
  await t.test('malformed JSON-RPC and odd headers on the modern face: well-formed answers', async () => fc.assert(modernMalformed, opts));
  await t.test('random _meta: well-formed answers, wrong types refused -32602', async () => fc.assert(metaFuzz, opts));
  await t.test('the legacy face: initialize and session requests of any shape', async () => fc.assert(legacyFace, { ...opts, numRuns: Math.ceil(RUNS / 4) }));
  await t.test('a hostile upstream: every request still ends with a well-formed answer', async () => fc.assert(hostileUpstream, opts));
  await t.test('input answers: refused -32602 or taken; a refused round stays usable', async () =>
    fc.assert(inputAnswers, { ...opts, numRuns: Math.ceil(RUNS / 4) }),
  );
  await t.test('raw header bytes: an HTTP answer, never a fault', async () => fc.assert(rawHeaders, { ...opts, numRuns: Math.ceil(RUNS / 2) }));

  hostile.script = () => ({ kind: 'body', status: 500, text: 'idle' });
  // The bystander's task completes untouched.
  const outcome = await bystander.settle(created.taskId);
  t.equal(outcome.status, 'completed', 'the bystander task completed');
  t.match(JSON.stringify(outcome.result), /Computed bystander after 3s/, 'with its own result');

  // Rounds the hostile upstream's questions opened are held until their window (input.holdMs) passes.
  const held = async () =>
    ((await (await fetch(`${base}/healthz`, { signal: AbortSignal.timeout(REQUEST_BOUND_MS) })).json()) as { heldCalls: number }).heldCalls;
  t.equal(await eventually(async () => (await held()) === 0), true, 'no MRTR round left held');
  t.equal(
    await eventually(async () => hostile.hungOpen() === 0),
    true,
    `every upstream answer that hung was closed by the gateway (open: ${JSON.stringify(hostile.hungWhat())})`,
  );
  const after = heap();
  t.ok(
    after <= baseline + HEAP_TOLERANCE_BYTES,
    `heap back to its baseline within ${HEAP_TOLERANCE_BYTES / 2 ** 20} MiB (baseline ${mib(baseline)}, after ${mib(after)})`,
  );
  t.strictSame(crashes.map(String), [], 'no uncaught exception or unhandled rejection');
});

t.test('a passed-through upstream stream that stops mid-way ends within the upstream budget, with the catalogued timeout as its last event', async (t) => {
  hostile.script = () => ({ kind: 'sse', status: 200, chunks: [': started\n\n'], end: 'hang' });
  const res = await fetch(`${base}/hostile`, {
    method: 'POST',
    headers: modernHeaders('tools/list'),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: envelope() } }),
    signal: AbortSignal.timeout(5_000),
  });
  const text = await res.text().then(
    (x) => x,
    () => undefined,
  );
  t.ok(text !== undefined, 'the response ended before the 5 s bound (the route budget is 1 s)');
  t.match(text, /data: \{"jsonrpc":"2.0","id":1,"error":\{"code":-32603,"message":"Upstream timed out"\}\}/, 'its last event is the timeout');
});

t.test('a legacy upstream answering an error status on a stream that never ends: the gateway drops the stream', async (t) => {
  hostile.script = () => ({ kind: 'sse', status: 400, chunks: ['data: {"jsonrpc":"2.0","id":__ID__,"error":[1]}\n\n'], end: 'hang' });
  const r = await send('/hostile-legacy', {
    headers: modernHeaders('prompts/get', 'p'),
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'prompts/get', params: { name: 'p', _meta: envelope() } }),
  });
  t.equal(malformed(r), undefined, 'the client gets a well-formed answer (504 after the 1 s budget)');
  t.equal(await eventually(async () => hostile.hungOpen() === 0), true, 'the upstream stream is closed');
});

// ── Helpers of the properties ──

/** Whether `check` holds within 10 s (polled every 50 ms): a bound on waiting, never a duration asserted. */
async function eventually(check: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether a scripted answer never ends by itself. */
function hangs(a: HostileAnswer): boolean {
  return a.kind === 'hang' || (a.kind === 'sse' && a.end === 'hang');
}

function pick(o: Record<string, string>, keys: string[]): Record<string, string> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => keys.includes(k)));
}

function mib(n: number): string {
  return `${(n / 2 ** 20).toFixed(1)} MiB`;
}

/** The first reserved `_meta` value of the wrong type (2026-07-28 schema `RequestMetaObject`), if any. */
function wrongMeta(meta: Record<string, unknown>): string | undefined {
  const levels = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];
  const info = meta['io.modelcontextprotocol/clientInfo'];
  if ('io.modelcontextprotocol/clientInfo' in meta && (!isObj(info) || ['name', 'version', 'title'].some((k) => k in info && typeof info[k] !== 'string')))
    return 'clientInfo';
  if ('io.modelcontextprotocol/logLevel' in meta && !levels.includes(meta['io.modelcontextprotocol/logLevel'] as string)) return 'logLevel';
  const token = meta.progressToken;
  if ('progressToken' in meta && typeof token !== 'string' && !(typeof token === 'number' && Number.isFinite(token))) return 'progressToken';
  if (typeof meta['io.modelcontextprotocol/protocolVersion'] !== 'string') return 'protocolVersion';
  const caps = meta['io.modelcontextprotocol/clientCapabilities'];
  if (!isObj(caps)) return 'clientCapabilities';
  for (const k of ['experimental', 'roots', 'sampling', 'elicitation', 'extensions', 'tasks'])
    if (k in caps && !isObj(caps[k])) return `clientCapabilities.${k}`;
  return undefined;
}

/** Elicitation answers near the right shape (the likely mistakes), for the input-answer property. */
function elicitAnswerArb(): fc.Arbitrary<unknown> {
  return fc.record(
    {
      action: fc.oneof(fc.constantFrom('accept', 'decline', 'cancel', 'ACCEPT', ''), anyJson),
      content: fc.oneof(
        fc.record({ ok: fc.oneof(fc.boolean(), anyJson) }, { requiredKeys: [] }),
        fc.dictionary(fc.string({ maxLength: 6 }), anyJson, { maxKeys: 3 }),
        anyJson,
      ),
      _meta: anyJson,
    },
    { requiredKeys: [] },
  );
}

/** What the hostile upstream answers with: the likely mistakes and the plainly hostile, SSE and JSON. */
function hostileAnswerArb(): fc.Arbitrary<HostileAnswer> {
  const rpc = (v: unknown) => JSON.stringify(v).replace('"__ID__"', '__ID__');
  const response = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }).map((result) => rpc({ jsonrpc: '2.0', id: '__ID__', result })),
    fc
      .record(
        {
          resultType: fc.oneof(fc.constantFrom('complete', 'input_required', 'task', 'weird'), anyJson),
          content: anyJson,
          tools: anyJson,
          contents: anyJson,
          messages: anyJson,
          inputRequests: anyJson,
          requestState: anyJson,
          taskId: anyJson,
          status: anyJson,
        },
        { requiredKeys: [] },
      )
      .map((result) => rpc({ jsonrpc: '2.0', id: '__ID__', result })),
    fc
      .oneof(fc.record({ message: anyJson, code: anyJson, data: anyJson }, { requiredKeys: [] }), anyJson)
      .map((error) => rpc({ jsonrpc: '2.0', id: '__ID__', error })),
    anyJson.map((v) => JSON.stringify(v) ?? 'null'),
    fc.constantFrom(
      '',
      '{',
      '{"jsonrpc":"2.0","id":__ID__,"result":',
      'null',
      '[]',
      '<html>502</html>',
      '\u0000\u0001',
      '{"jsonrpc":"2.0","id":999999,"result":{}}',
    ),
    fc.integer({ min: 100, max: 2_000 }).map((d) => `{"jsonrpc":"2.0","id":__ID__,"result":{"content":${'['.repeat(d)}${']'.repeat(d)}}}`),
  );
  const event = fc.oneof(
    response.map((d) => `data: ${d}\n\n`),
    fc
      .record({
        method: fc.constantFrom(
          'notifications/progress',
          'notifications/message',
          'notifications/tools/list_changed',
          'elicitation/create',
          'sampling/createMessage',
          'roots/list',
          'vendor/x',
        ),
        params: anyJson,
        id: fc.oneof(fc.constant(undefined), anyId),
      })
      .map((m) => `data: ${JSON.stringify({ jsonrpc: '2.0', ...m })}\n\n`),
    fc.constantFrom(
      ': ping\n\n',
      'event: weird\ndata: x\n\n',
      'id: 1\nretry: abc\n\n',
      'data: {"partial":\n\n',
      'data:\n\n',
      '\n\n\n',
      `data: ${'y'.repeat(10_000)}\n\n`,
    ),
    fc.string({ maxLength: 50 }),
  );
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('body' as const),
        status: fc.constantFrom(200, 200, 200, 202, 204, 400, 401, 404, 500, 502),
        contentType: fc.option(fc.constantFrom('application/json', 'text/html', 'text/event-stream', 'application/json; charset=utf-16'), { nil: undefined }),
        text: response,
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('sse' as const),
        status: fc.constantFrom(200, 200, 201, 400),
        chunks: fc.array(event, { maxLength: 6 }),
        end: fc.constantFrom('close' as const, 'close' as const, 'destroy' as const, 'hang' as const),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'destroy' as const }) },
    { weight: 1, arbitrary: response.map((text) => ({ kind: 'truncated' as const, text })) },
    { weight: 1, arbitrary: fc.constant({ kind: 'hang' as const }) },
  );
}

/** Sends raw bytes and reads the answer until the server closes (the request says `connection: close`). */
function rawExchange(bytes: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('raw exchange: no end within the bound'));
    }, REQUEST_BOUND_MS);
    socket.on('data', (d) => chunks.push(d));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString('latin1'));
    });
    socket.end(bytes);
  });
}
