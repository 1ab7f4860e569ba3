/**
 * The legacy session pool as its callers see it (docs/security.md §Upstream session isolation): a 2026-07-28 caller, or a
 * 2025-11-25 caller served by the legacy face, of a 2025-11-25 upstream gets exactly the server→client requests that
 * belong to its own call, and only of a kind it declared it can answer. Real servers on loopback port 0, the real
 * gateway from `buildGateway(parseConfig(…))` with the default `auth` (principal = bearer fingerprint):
 *  - the demo upstream's `book_table` elicits with `server.elicitInput()` naming no request, so the SDK sends the
 *    question on the session's GET stream (2025-11-25 basic/transports §Listening for Messages from the Server): only
 *    a session serving one call at a time can tie it to its call, however many calls one principal makes at once;
 *  - roots-cache-server caches `roots/list` per session: a session one caller gave its roots to must never answer
 *    another caller from that cache (2025-11-25 client/roots);
 *  - roots-at-start-server, and the real `@modelcontextprotocol/server-everything`, ask `roots/list` right after
 *    `notifications/initialized` (and after `notifications/roots/list_changed`), tied to no call, and only of a client
 *    that declared `roots`: a caller that declared none is never asked and never refused with -32021
 *    (`MissingRequiredClientCapabilityError`, 2026-07-28 schema); one that did may be asked, and both get their result
 *    and every progress notification of their call (2025-11-25 basic/utilities/progress).
 * Every wait is bounded, so a case that is wrong fails instead of hanging.
 */
import t, { type Test } from 'tap';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ElicitRequestSchema, ListRootsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { startDemoUpstream } from '../../src/demo/demo-server.js';
import { longOpText, startRootsAtStartServer, type RootsAtStartServer } from '../fixtures/roots-at-start-server.js';
import { startRootsCacheServer } from '../fixtures/roots-cache-server.js';
import { startServerEverything } from '../fixtures/server-everything.js';
import { bounded } from '../helpers/era-clients.js';
import { startGateway } from '../helpers/gateway.js';
import { envelope, post, type RawReply } from '../helpers/modern.js';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** Bound on one step of a case (a request, a round, a connect). */
const STEP_MS = 20_000;

const ELICIT = { elicitation: {} };
const ROOTS = { roots: { listChanged: true } };
const ALICE = { authorization: 'Bearer alice-token' };
const BOB = { authorization: 'Bearer bob-token' };

/**
 * A rule that wraps a tool no server here has: a legacy client then always meets the gateway's legacy face (a
 * wrapped tool needs the gateway's own tasks, which only the face serves; docs/how-it-works.md §Routing), and every call it makes
 * goes upstream through the pool, like a modern client's.
 */
const FACE_RULE = { tools: { 'no-such-tool': { task: 'always' } } };

/**
 * A gateway in front of one 2025-11-25 upstream; `upstream` is merged into its entry, `config` into the rest. Its MCP
 * URL.
 */
async function gatewayFor(t: Teardown, url: string, upstream: Record<string, unknown> = {}, config: Record<string, unknown> = {}): Promise<string> {
  return (await startGateway({ ...config, upstreams: [{ name: 'up', path: '/mcp', url, era: 'legacy', ...upstream }] }, { t })).url;
}

/** One modern request, bounded. */
function send(url: string, params: Record<string, unknown>, opts: Parameters<typeof post>[3], what: string): Promise<RawReply> {
  return bounded(post(url, 'tools/call', params, opts), what, STEP_MS);
}

/** What a final answer says, in one line: the result's text (marked when `isError`), or the JSON-RPC error. */
function describe(r: RawReply): string {
  const error = r.body?.error;
  if (error) return `error ${error.code}: ${error.message}`;
  const result = r.body?.result;
  if (!result) return `HTTP ${r.status}: ${JSON.stringify(r.body)}`;
  if (result.resultType === 'input_required') return `input_required: ${JSON.stringify(Object.values(result.inputRequests ?? {}).map((x: any) => x?.method))}`;
  const text = (result.content ?? []).map((c: { text?: string }) => c.text ?? '').join(' ');
  return result.isError ? `isError: ${text}` : text;
}

const legacyError = (e: unknown): string => (e instanceof McpError ? `error ${e.code}: ${e.message}` : `failed: ${String((e as Error)?.message ?? e)}`);

/** A 2025-11-25 SDK client of the gateway, declaring `capabilities`, sending `headers` on every request. */
async function legacyClient(t: Teardown, url: string, capabilities: Record<string, unknown>, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'upstream-pool-legacy', version: '1.0.0' }, { capabilities });
  // A GET stream the gateway ends at teardown is reported here; the cases assert on requests and results instead.
  client.onerror = () => {};
  await bounded(client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } })), 'legacy connect', STEP_MS);
  t.teardown(() => client.close());
  return client;
}

const range = (from: number, to: number): number[] => Array.from({ length: to - from + 1 }, (_, i) => from + i);

// ---------------------------------------------------------------------------------------------------------------
// 1. An elicitation tied to no request (book_table), many calls at once.
// ---------------------------------------------------------------------------------------------------------------

/** What one booking looked like to its caller: the question(s) it was asked, and the final answer. */
interface Booking {
  guests: number;
  asked: string;
  answer: string;
}

/** Each caller was asked exactly its own question and got its own booking; only the callers that did not are shown. */
function checkBookings(t: Test, got: Booking[], guests: number[]): void {
  const expected = guests.map((g) => ({ guests: g, asked: `elicitation/create: Book a table for ${g}?`, answer: `Booked a table for ${g}.` }));
  t.equal(got.length, guests.length, 'every caller got an answer');
  t.equal(
    got.filter((b) => /Cannot tie|UNATTRIBUTED/.test(`${b.asked} ${b.answer}`)).length,
    0,
    'no call was refused as unattributable (GW_UPSTREAM_REQUEST_UNATTRIBUTED)',
  );
  t.same(
    got.filter((b, i) => b.guests !== expected[i]?.guests || b.asked !== expected[i]?.asked || b.answer !== expected[i]?.answer),
    [],
    `each of ${guests.length} callers was asked its own question and got its own booking`,
  );
}

/**
 * 40 legacy clients of one principal each hold a GET stream, and each stream an upstream listen session of its own,
 * besides the sessions their calls use: more than the default quarter share of `sessions.maxPerUpstream`. The share
 * is not what these cases are about, so the face cases lift it to the bound.
 */
const FACE_SHARE = { sessions: { maxPerUpstream: 256, maxPerPrincipal: 256 } };

/**
 * `guests.length` modern callers with `headers` book at once: every first round is in flight (held for input) before
 * any is answered, so that every call is running upstream at the same time; then every caller answers its round.
 */
async function bookModern(url: string, guests: number[], headers: Record<string, string>): Promise<Booking[]> {
  const params = (g: number) => ({ name: 'book_table', arguments: { guests: g } });
  const firsts = await Promise.all(guests.map((g) => send(url, params(g), { capabilities: ELICIT, headers }, `book_table ${g}: round 1`)));
  return Promise.all(
    guests.map(async (g, i): Promise<Booking> => {
      const first = firsts[i] as RawReply;
      const result = first.body?.result;
      if (result?.resultType !== 'input_required') return { guests: g, asked: `no round: ${describe(first)}`, answer: '(not asked)' };
      const requests = Object.entries(result.inputRequests ?? {}) as Array<[string, any]>;
      const asked = requests.map(([, r]) => `${r?.method}: ${r?.params?.message}`).join(' | ');
      const inputResponses = Object.fromEntries(requests.map(([k]) => [k, { action: 'accept', content: { confirm: true } }]));
      const done = await send(
        url,
        { ...params(g), requestState: result.requestState, inputResponses },
        { capabilities: ELICIT, headers },
        `book_table ${g}: retry`,
      );
      return { guests: g, asked, answer: describe(done) };
    }),
  );
}

/** The same through the legacy face: one SDK client per caller, all calling at once; each answers what it is asked. */
async function bookLegacy(t: Teardown, url: string, guests: number[], headers: Record<string, string>): Promise<Booking[]> {
  const clients = await Promise.all(
    guests.map(async (g) => {
      const asked: string[] = [];
      const client = await legacyClient(t, url, ELICIT, headers);
      client.setRequestHandler(ElicitRequestSchema, async (req) => {
        asked.push(`elicitation/create: ${req.params.message}`);
        return { action: 'accept', content: { confirm: true } };
      });
      return { g, client, asked };
    }),
  );
  return Promise.all(
    clients.map(async ({ g, client, asked }): Promise<Booking> => {
      let answer: string;
      try {
        const r = await bounded(
          client.callTool({ name: 'book_table', arguments: { guests: g } }, CallToolResultSchema, { timeout: STEP_MS }),
          `legacy book_table ${g}`,
          STEP_MS,
        );
        const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join(' ');
        answer = r.isError ? `isError: ${text}` : text;
      } catch (e) {
        answer = legacyError(e);
      }
      return { guests: g, asked: asked.join(' | ') || '(not asked)', answer };
    }),
  );
}

t.test('a question tied to no request reaches the one caller whose call asked it, 40 calls at once', async (t) => {
  const demo = await startDemoUpstream();
  t.teardown(() => demo.close());
  const guests = range(1, 40);

  t.test('modern callers of one principal (one bearer token)', async (t) => {
    const url = await gatewayFor(t, demo.url);
    const bookings = await bookModern(url, guests, ALICE);
    checkBookings(t, bookings, guests);
  });

  t.test('modern anonymous callers (no Authorization)', async (t) => {
    const url = await gatewayFor(t, demo.url);
    const bookings = await bookModern(url, guests, {});
    checkBookings(t, bookings, guests);
  });

  t.test('2025-11-25 callers of one principal, served by the legacy face', async (t) => {
    const url = await gatewayFor(t, demo.url, FACE_RULE, FACE_SHARE);
    const bookings = await bookLegacy(t, url, guests, ALICE);
    checkBookings(t, bookings, guests);
  });

  t.test('2025-11-25 anonymous callers, served by the legacy face', async (t) => {
    const url = await gatewayFor(t, demo.url, FACE_RULE, FACE_SHARE);
    const bookings = await bookLegacy(t, url, guests, {});
    checkBookings(t, bookings, guests);
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 2. A server that caches roots per session.
// ---------------------------------------------------------------------------------------------------------------

/** `my_roots` as a modern caller whose roots are `[uri]` (answering a roots/list round if asked): the roots returned. */
async function myRoots(url: string, uri: string, headers: Record<string, string>): Promise<unknown> {
  const params = { name: 'my_roots', arguments: {} };
  let r = await send(url, params, { capabilities: ROOTS, headers }, `my_roots as ${uri}`);
  for (let round = 0; r.body?.result?.resultType === 'input_required'; round++) {
    if (round === 3) return `more than 3 rounds: ${describe(r)}`;
    const requests = Object.entries(r.body.result.inputRequests ?? {}) as Array<[string, any]>;
    const unexpected = requests.filter(([, x]) => x?.method !== 'roots/list');
    if (unexpected.length > 0) return `asked ${JSON.stringify(unexpected.map(([, x]) => x?.method))}`;
    const inputResponses = Object.fromEntries(requests.map(([k]) => [k, { roots: [{ uri }] }]));
    r = await send(url, { ...params, requestState: r.body.result.requestState, inputResponses }, { capabilities: ROOTS, headers }, `my_roots as ${uri}: retry`);
  }
  const text = r.body?.result?.content?.[0]?.text;
  return typeof text === 'string' && !r.body.result.isError ? JSON.parse(text) : describe(r);
}

// roots-cache-server asks once per session and never again: it ignores notifications/roots/list_changed, as a server
// may (2025-11-25 client/roots §Root List Changes lets it re-request, it does not make it). Telling it that the roots
// changed is therefore not enough: a session whose cache holds one caller's roots must never serve another caller.
t.test('a server that caches roots per session never answers one caller with another’s roots', async (t) => {
  const upstream = await startRootsCacheServer();
  t.teardown(() => upstream.close());
  const url = await gatewayFor(t, upstream.url);

  t.test('anonymous callers in turn', async (t) => {
    for (const who of ['anon-1', 'anon-2', 'anon-3']) {
      t.same(await myRoots(url, `file:///${who}`, {}), [{ uri: `file:///${who}` }], `${who} gets its own roots`);
    }
  });

  t.test('two principals in turn, each twice', async (t) => {
    t.same(await myRoots(url, 'file:///alice-1', ALICE), [{ uri: 'file:///alice-1' }], 'alice gets her roots');
    t.same(await myRoots(url, 'file:///bob-1', BOB), [{ uri: 'file:///bob-1' }], 'bob gets his own, not alice’s');
    // A principal's later call may be answered from its own earlier roots (the server's cache), never another's.
    t.match(JSON.stringify(await myRoots(url, 'file:///alice-2', ALICE)), /^\[\{"uri":"file:\/\/\/alice-[12]"\}\]$/, 'alice again: one of hers');
    t.match(JSON.stringify(await myRoots(url, 'file:///bob-2', BOB)), /^\[\{"uri":"file:\/\/\/bob-[12]"\}\]$/, 'bob again: one of his');
    t.same(await myRoots(url, 'file:///anon-after', {}), [{ uri: 'file:///anon-after' }], 'an anonymous caller afterwards gets its own');
  });

  t.test('eight anonymous callers at once, then eight more', async (t) => {
    for (const batch of ['a', 'b']) {
      const whos = range(1, 8).map((i) => `file:///batch-${batch}-${i}`);
      const got = await Promise.all(whos.map((uri) => myRoots(url, uri, {})));
      t.same(
        got,
        whos.map((uri) => [{ uri }]),
        `batch ${batch}: each its own roots`,
      );
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 3. A server that asks roots/list at start, tied to no call, while a long call reports progress.
// ---------------------------------------------------------------------------------------------------------------

const DURATION_S = 2;
const STEPS = 5;

/** How one long call went, as its caller saw it. */
interface LongOp {
  /** The methods of the input requests it was asked, every round. */
  asked: string[];
  /** The progress values it received, in order. */
  progress: number[];
  /** The progress tokens they carried. */
  tokens: unknown[];
  /** The final answer (`describe`). */
  answer: string;
}

/** What a caller must see: its own token on every progress, every step, then the result. */
const expectedLongOp = (token: string) => ({ progress: range(1, STEPS), tokens: range(1, STEPS).map(() => token), answer: longOpText(DURATION_S, STEPS) });

/**
 * A modern caller runs `long_op` with `token`; with `roots` it declares roots and answers every roots/list round with
 * them, retrying with the same progressToken; without, it declares none. Every round's progress is collected.
 */
async function longOpModern(url: string, token: string, roots: string | undefined, headers: Record<string, string>): Promise<LongOp> {
  const capabilities = roots ? ROOTS : {};
  const params = { name: 'long_op', arguments: { duration: DURATION_S, steps: STEPS }, _meta: envelope(capabilities, { progressToken: token }) };
  const seen: LongOp = { asked: [], progress: [], tokens: [], answer: '' };
  const collect = (r: RawReply) => {
    for (const m of r.messages) {
      if (m?.method !== 'notifications/progress') continue;
      seen.progress.push(m.params?.progress);
      seen.tokens.push(m.params?.progressToken);
    }
  };
  let r = await send(url, params, { headers }, `long_op ${token}`);
  collect(r);
  for (let round = 0; r.body?.result?.resultType === 'input_required' && round < 4; round++) {
    const requests = Object.entries(r.body.result.inputRequests ?? {}) as Array<[string, any]>;
    seen.asked.push(...requests.map(([, x]) => String(x?.method)));
    // Only roots/list is expected; anything else is declined, and shows in `asked`.
    const inputResponses = Object.fromEntries(
      requests.map(([k, x]) => [k, x?.method === 'roots/list' ? { roots: [{ uri: roots ?? 'file:///nobody' }] } : { action: 'decline' }]),
    );
    r = await send(url, { ...params, requestState: r.body.result.requestState, inputResponses }, { headers }, `long_op ${token}: retry ${round + 1}`);
    collect(r);
  }
  seen.answer = describe(r);
  return seen;
}

/** The same through the legacy face: an SDK client with (answering roots/list) or without roots. */
async function longOpLegacy(t: Teardown, url: string, token: string, roots: string | undefined, headers: Record<string, string>): Promise<LongOp> {
  const seen: LongOp = { asked: [], progress: [], tokens: [], answer: '' };
  const client = await legacyClient(t, url, roots ? ROOTS : {}, headers);
  if (roots) {
    client.setRequestHandler(ListRootsRequestSchema, async () => {
      seen.asked.push('roots/list');
      return { roots: [{ uri: roots }] };
    });
  }
  // Whatever else the face sends this client is recorded (the SDK would answer it -32601).
  client.fallbackRequestHandler = async (req) => {
    seen.asked.push(req.method);
    throw new McpError(-32601, `not expected: ${req.method}`);
  };
  try {
    const r = await bounded(
      client.callTool({ name: 'long_op', arguments: { duration: DURATION_S, steps: STEPS } }, CallToolResultSchema, {
        timeout: STEP_MS,
        onprogress: (p) => {
          seen.progress.push(p.progress);
          // The SDK hands the callback only its own token's progress: the token it chose, not `token`.
          seen.tokens.push(token);
        },
      }),
      `legacy long_op ${token}`,
      STEP_MS,
    );
    const text = (r.content as Array<{ text?: string }>).map((c) => c.text ?? '').join(' ');
    seen.answer = r.isError ? `isError: ${text}` : text;
  } catch (e) {
    seen.answer = legacyError(e);
  }
  return seen;
}

type Runner = (token: string, roots: string | undefined) => Promise<LongOp>;

/** Checks one caller's view: the caller without roots was asked nothing; the one with roots only roots/list. */
function checkLongOp(t: Test, what: string, token: string, roots: string | undefined, got: LongOp): void {
  t.notMatch(got.answer, /-32021/, `${what}: never refused -32021`);
  if (roots)
    t.ok(
      got.asked.every((m) => m === 'roots/list'),
      `${what}: asked nothing but roots/list (${JSON.stringify(got.asked)})`,
    );
  else t.same(got.asked, [], `${what}: never asked anything`);
  t.same({ progress: got.progress, tokens: got.tokens, answer: got.answer }, expectedLongOp(token), `${what}: every progress of its own, then its result`);
}

/**
 * One after another (without roots, with, without again: a caller without roots after one with them), then eight at
 * once (half with roots), for `who`.
 */
async function longOpScenario(t: Test, fixture: RootsAtStartServer, run: Runner, who: string): Promise<void> {
  for (const [i, roots] of [undefined, `file:///${who}-seq-2`, undefined].entries()) {
    const token = `${who}-seq-${i + 1}`;
    checkLongOp(t, `${token} (${roots ? 'roots' : 'no roots'})`, token, roots, await run(token, roots));
  }
  const batch = range(1, 8).map((i) => ({ token: `${who}-batch-${i}`, roots: i % 2 === 0 ? `file:///${who}-batch-${i}` : undefined }));
  const results = await Promise.all(batch.map(({ token, roots }) => run(token, roots)));
  batch.forEach(({ token, roots }, i) => checkLongOp(t, `${token} (${roots ? 'roots' : 'no roots'}, at once)`, token, roots, results[i] as LongOp));
  // The upstream's own view: every roots/list it sent was answered or is still open, never refused (a request sent
  // before any call is the pool's to answer; one during a call, the caller's).
  t.same(
    fixture.asks.filter((a) => a.outcome === 'refused'),
    [],
    'the upstream’s roots/list was never refused',
  );
}

t.test('a server that asks roots/list at start: a caller without roots is never asked, both get result and progress', async (t) => {
  t.test('modern callers, anonymous and of one principal', async (t) => {
    const fixture = await startRootsAtStartServer();
    t.teardown(() => fixture.close());
    const url = await gatewayFor(t, fixture.url);
    await longOpScenario(t, fixture, (token, roots) => longOpModern(url, token, roots, {}), 'anon');
    await longOpScenario(t, fixture, (token, roots) => longOpModern(url, token, roots, ALICE), 'alice');
  });

  t.test('2025-11-25 callers served by the legacy face, anonymous and of one principal', async (t) => {
    const fixture = await startRootsAtStartServer();
    t.teardown(() => fixture.close());
    const url = await gatewayFor(t, fixture.url, FACE_RULE);
    await longOpScenario(t, fixture, (token, roots) => longOpLegacy(t, url, token, roots, {}), 'legacy-anon');
    await longOpScenario(t, fixture, (token, roots) => longOpLegacy(t, url, token, roots, ALICE), 'legacy-alice');
  });
});

// ---------------------------------------------------------------------------------------------------------------
// 4. The real server-everything over Streamable HTTP.
// ---------------------------------------------------------------------------------------------------------------

/** The real server-everything (test/fixtures/server-everything.ts), stopped at teardown. Its URL. */
async function startEverything(t: Teardown): Promise<string> {
  const everything = await startServerEverything(STEP_MS);
  t.teardown(() => everything.close());
  return everything.url;
}

t.test('server-everything: trigger-long-running-operation with a progress token, with and without roots', async (t) => {
  const url = await gatewayFor(t, await startEverything(t), { era: 'auto' });
  const tools = await bounded(post(url, 'tools/list', {}), 'tools/list', STEP_MS);
  const tool = (tools.body?.result?.tools ?? []).find((x: { name: string }) => x.name === 'trigger-long-running-operation');
  t.ok(tool, 'the upstream lists trigger-long-running-operation');
  t.match(Object.keys(tool?.inputSchema?.properties ?? {}).sort(), ['duration', 'steps'], 'taking duration and steps');

  const steps = 4;
  const expected = (token: string) => ({
    progress: range(1, steps),
    tokens: range(1, steps).map(() => token),
    answer: `Long running operation completed. Duration: ${DURATION_S} seconds, Steps: ${steps}.`,
  });
  const run = async (token: string, roots: string | undefined): Promise<LongOp> => {
    const capabilities = roots ? ROOTS : {};
    const params = {
      name: 'trigger-long-running-operation',
      arguments: { duration: DURATION_S, steps },
      _meta: envelope(capabilities, { progressToken: token }),
    };
    const seen: LongOp = { asked: [], progress: [], tokens: [], answer: '' };
    let r = await send(url, params, {}, token);
    for (let round = 0; ; round++) {
      for (const m of r.messages) {
        if (m?.method !== 'notifications/progress') continue;
        seen.progress.push(m.params?.progress);
        seen.tokens.push(m.params?.progressToken);
      }
      if (r.body?.result?.resultType !== 'input_required' || round === 4) break;
      const requests = Object.entries(r.body.result.inputRequests ?? {}) as Array<[string, any]>;
      seen.asked.push(...requests.map(([, x]) => String(x?.method)));
      const inputResponses = Object.fromEntries(
        requests.map(([k, x]) => [k, x?.method === 'roots/list' ? { roots: [{ uri: roots ?? 'file:///nobody' }] } : { action: 'decline' }]),
      );
      r = await send(url, { ...params, requestState: r.body.result.requestState, inputResponses }, {}, `${token}: retry ${round + 1}`);
    }
    seen.answer = describe(r);
    return seen;
  };

  for (const [token, roots] of [
    ['everything-none-1', undefined],
    ['everything-roots-1', 'file:///everything-roots-1'],
    ['everything-none-2', undefined],
  ] as const) {
    const got = await run(token, roots);
    t.notMatch(got.answer, /-32021/, `${token}: never refused -32021`);
    if (roots)
      t.ok(
        got.asked.every((m) => m === 'roots/list'),
        `${token}: asked nothing but roots/list (${JSON.stringify(got.asked)})`,
      );
    else t.same(got.asked, [], `${token}: never asked anything`);
    t.same({ progress: got.progress, tokens: got.tokens, answer: got.answer }, expected(token), `${token}: every progress of its own, then its result`);
  }
});
