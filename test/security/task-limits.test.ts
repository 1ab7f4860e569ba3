/**
 * The task and MRTR limits (docs/security.md §Limits), each hit on the wire through a real gateway in front of the real
 * legacy fixture: every limit answers its catalogued error (status, JSON-RPC code, message, Retry-After where the
 * catalog says), a limit that can be known before the upstream is called is checked before it is called (the
 * fixture's call counts prove the upstream never saw the refused call), and another principal is served meanwhile.
 * The poll limit is counted in the store: with the memory store, and across two gateway instances sharing a real
 * Redis, then a real PostgreSQL (each skipped, with the reason printed, when its server binary, or REDIS_URL / PG_URL,
 * is not there).
 */
import { randomUUID } from 'node:crypto';
import t, { type Test } from 'tap';
import type { Gateway } from '../../src/app.js';
import { ERROR_CATALOG } from '../../src/translate/index.js';
import { startGateway } from '../helpers/gateway.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { envelope, readReply, type RawReply } from '../helpers/modern.js';
import { LEGACY_HEADERS } from '../helpers/legacy-face-stack.js';
import { filePostgres, schemaFor } from '../helpers/file-postgres.js';
import { postgresAvailable } from '../helpers/postgres-server.js';
import { redisAvailable, redisForTest } from '../helpers/redis-server.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import type { LegacyFixtureOptions } from '../fixtures/legacy-server.js';

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
/** Declares the tasks extension and form elicitation. */
const DECLARING = { extensions: { [TASKS_EXT]: {} }, elicitation: {} };
/** Declares every input kind. */
const ALL_INPUT = { extensions: { [TASKS_EXT]: {} }, elicitation: {}, sampling: {}, roots: {} };
const ALICE = 'Bearer alice-limits';
const BOB = 'Bearer bob-limits';
/** Bound on every request: a limit answers, it never hangs. */
const REQUEST_MS = 10_000;
const TERMINAL = ['completed', 'failed', 'cancelled'];

interface Reply extends RawReply {
  retryAfter: string | null;
}

let nextId = 1;

/** One modern request as `who`, with its Retry-After header. */
async function call(
  url: string,
  method: string,
  params: Record<string, unknown>,
  who: string,
  capabilities: Record<string, unknown> = DECLARING,
): Promise<Reply> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    authorization: who,
  };
  const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined;
  if (name !== undefined) headers['mcp-name'] = name;
  const body = { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: envelope(capabilities) } };
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal: AbortSignal.timeout(REQUEST_MS) });
  const retryAfter = res.headers.get('retry-after');
  return { ...(await readReply(res)), retryAfter };
}

const tool = (url: string, name: string, args: Record<string, unknown>, who: string, caps: Record<string, unknown> = DECLARING) =>
  call(url, 'tools/call', { name, arguments: args }, who, caps);
const getTask = (url: string, taskId: string, who: string) => call(url, 'tasks/get', { taskId }, who);

/** The created task's id; fails the test otherwise. */
function taskIdOf(r: Reply): string {
  if (r.status !== 200 || r.body?.result?.resultType !== 'task') throw new Error(`expected a CreateTaskResult, got HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.result.taskId as string;
}

/** Polls tasks/get at the task's own interval until it is terminal (bounded). */
async function untilTerminal(url: string, taskId: string, who: string): Promise<any> {
  const deadline = Date.now() + REQUEST_MS;
  for (;;) {
    const r = await getTask(url, taskId, who);
    if (r.status !== 200) throw new Error(`tasks/get: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    const task = r.body.result;
    if (TERMINAL.includes(task.status)) return task;
    if (Date.now() > deadline) throw new Error(`task ${taskId} did not end: ${JSON.stringify(task)}`);
    await new Promise((res) => setTimeout(res, task.pollIntervalMs ?? 100));
  }
}

/** Asserts a reply is the catalogued answer of `kind`. */
function isCatalogued(t: Test, r: Reply, kind: keyof typeof ERROR_CATALOG, what: string): void {
  const spec = ERROR_CATALOG[kind];
  t.equal(r.status, spec.status, `${what}: HTTP ${spec.status}`);
  t.equal(r.body?.error?.code, spec.rpc, `${what}: JSON-RPC ${spec.rpc}`);
  const prefix = spec.message.split('%s')[0] ?? '';
  t.ok(typeof r.body?.error?.message === 'string' && r.body.error.message.startsWith(prefix), `${what}: ${kind}'s message (${r.body?.error?.message})`);
  t.notOk(r.body?.result, `${what}: no result`);
}

async function stackWith(t: Test, config: Record<string, unknown>, upstream: Record<string, unknown>, fixture: LegacyFixtureOptions): Promise<Stack> {
  const stack = await startStack(config, upstream, fixture);
  t.teardown(() => stack.close());
  return stack;
}

t.test('held MRTR calls per principal: 503 with Retry-After before the upstream sees the call; another principal is held', async (t) => {
  const stack = await stackWith(t, { input: { maxHeldCallsPerPrincipal: 1 } }, {}, { tasks: 'sync' });
  const first = await tool(stack.url, 'confirm_delete', { filename: 'a.txt' }, ALICE);
  t.equal(first.body?.result?.resultType, 'input_required', 'alice has one call held for her answer');
  const over = await tool(stack.url, 'confirm_delete', { filename: 'b.txt' }, ALICE);
  isCatalogued(t, over, 'GW_TOO_MANY_HELD_CALLS', 'alice, second held call');
  t.ok(Number(over.retryAfter) >= 1, `Retry-After: ${over.retryAfter}`);
  t.equal(stack.fixture.stats().calls.confirm_delete, 1, 'the refused call never reached the upstream');
  const bob = await tool(stack.url, 'confirm_delete', { filename: 'c.txt' }, BOB);
  t.equal(bob.body?.result?.resultType, 'input_required', 'bob is held meanwhile');
  const plain = await tool(stack.url, 'greet', { name: 'alice' }, ALICE, {});
  t.equal(plain.body?.result?.content?.[0]?.text, 'Hello, alice!', 'alice may still make a call that cannot ask for input');
});

t.test('held MRTR calls: of concurrent calls admitted together, those that ask once no slot is left get 503 and are cancelled upstream', async (t) => {
  const stack = await stackWith(t, { input: { maxHeldCallsPerPrincipal: 1 } }, {}, { tasks: 'sync' });
  // Admitted while no call was held yet (or refused at once if one already was): either way one is held, the rest
  // get the catalogued 503, and nothing of theirs keeps running upstream.
  const replies = await Promise.all([1, 2, 3].map((i) => tool(stack.url, 'confirm_delete', { filename: `r${i}.txt` }, ALICE)));
  t.equal(replies.filter((r) => r.body?.result?.resultType === 'input_required').length, 1, 'one call is held');
  const refused = replies.filter((r) => r.status !== 200);
  t.equal(refused.length, 2, 'the others are refused');
  for (const r of refused) {
    isCatalogued(t, r, 'GW_TOO_MANY_HELD_CALLS', 'a call with no hold slot');
    t.ok(Number(r.retryAfter) >= 1, `Retry-After: ${r.retryAfter}`);
  }
  const stats = await waitForStats(stack.fixture, (s) => (s.running.confirm_delete ?? 0) === 1);
  t.equal(
    (stats.calls.confirm_delete ?? 0) - stats.cancellations.filter((c) => c.tool === 'confirm_delete').length,
    1,
    'every refused call that reached the upstream was cancelled there',
  );
});

t.test('held MRTR calls, all principals: 503 with Retry-After (was HTTP 200 with -32603), the upstream not called', async (t) => {
  const stack = await stackWith(t, { input: { maxHeldCalls: 1 } }, {}, { tasks: 'sync' });
  t.equal((await tool(stack.url, 'confirm_delete', { filename: 'a.txt' }, ALICE)).body?.result?.resultType, 'input_required');
  const over = await tool(stack.url, 'confirm_delete', { filename: 'b.txt' }, BOB);
  isCatalogued(t, over, 'GW_HELD_CALLS_FULL', 'bob, when every hold is taken');
  t.ok(Number(over.retryAfter) >= 1, `Retry-After: ${over.retryAfter}`);
  t.equal(stack.fixture.stats().calls.confirm_delete, 1, 'the refused call never reached the upstream');
  const greet = await tool(stack.url, 'greet', { name: 'bob' }, BOB, {});
  t.equal(greet.body?.result?.content?.[0]?.text, 'Hello, bob!', 'a call that cannot ask for input is still served');
});

t.test('live tasks per principal: 429 before the upstream sees the call (an upstream task would have been created)', async (t) => {
  const stack = await stackWith(t, { tasks: { maxActivePerPrincipal: 1 } }, {}, { tasks: 'native', taskPollIntervalMs: 100 });
  const first = taskIdOf(await tool(stack.url, 'gated_job', { gate: 'l1' }, ALICE));
  const over = await tool(stack.url, 'gated_job', { gate: 'l2' }, ALICE);
  isCatalogued(t, over, 'GW_TOO_MANY_TASKS', 'alice, second live task');
  const stats = stack.fixture.stats();
  t.equal(stats.calls.gated_job, 1, 'the refused call never reached the upstream');
  t.equal(stats.tasks.length, 1, 'no upstream task was created for it');
  t.same(stats.cancellations, [], 'nothing had to be cancelled');
  const bob = taskIdOf(await tool(stack.url, 'gated_job', { gate: 'l3' }, BOB));
  stack.fixture.releaseGate('l1');
  stack.fixture.releaseGate('l3');
  t.equal((await untilTerminal(stack.url, first, ALICE)).status, 'completed');
  t.equal((await untilTerminal(stack.url, bob, BOB)).status, 'completed', 'bob had his own allowance');
});

t.test('a store full of live tasks: 503 before the upstream sees the call', async (t) => {
  const stack = await stackWith(t, { tasks: { maxTasks: 1 } }, {}, { tasks: 'native', taskPollIntervalMs: 100 });
  const first = taskIdOf(await tool(stack.url, 'gated_job', { gate: 'f1' }, ALICE));
  const over = await tool(stack.url, 'gated_job', { gate: 'f2' }, BOB);
  isCatalogued(t, over, 'GW_STORE_FULL', 'bob, store full of live tasks');
  t.equal(stack.fixture.stats().calls.gated_job, 1, 'the refused call never reached the upstream');
  t.equal(stack.fixture.stats().tasks.length, 1, 'no upstream task was created for it');
  stack.fixture.releaseGate('f1');
  t.equal((await untilTerminal(stack.url, first, ALICE)).status, 'completed');
});

t.test('result size per task: a larger outcome is stored as a failure naming the size, for owned and proxied tasks', async (t) => {
  const LIMIT = 512;
  const big = 'x'.repeat(4 * LIMIT);
  for (const [mode, upstream, fixture] of [
    ['owned (wrapped)', { tools: { slow_compute: { task: 'always', pollIntervalMs: 50 } } }, { tasks: 'sync' }],
    ['proxied', {}, { tasks: 'native', taskPollIntervalMs: 50 }],
  ] as const) {
    const stack = await stackWith(t, { tasks: { maxResultBytes: LIMIT, adaptivePolling: false } }, upstream, fixture);
    const id = taskIdOf(await tool(stack.url, 'slow_compute', { seconds: 0, label: big }, ALICE));
    const small = taskIdOf(await tool(stack.url, 'slow_compute', { seconds: 0, label: 'small' }, BOB));
    const task = await untilTerminal(stack.url, id, ALICE);
    t.equal(task.status, 'failed', `${mode}: the task failed`);
    t.equal(task.error?.code, ERROR_CATALOG.GW_TASK_RESULT_TOO_LARGE.rpc, `${mode}: the catalogued code`);
    t.match(task.error?.message, /too large to keep/, `${mode}: the catalogued message`);
    t.equal(task.error?.data?.limitBytes, LIMIT, `${mode}: data names the limit`);
    t.ok(task.error?.data?.resultBytes > LIMIT, `${mode}: and the size`);
    t.notOk(task.result, `${mode}: no result kept`);
    t.notOk(JSON.stringify(task).includes(big), `${mode}: nothing of the result is kept`);
    const ok = await untilTerminal(stack.url, small, BOB);
    t.equal(ok.status, 'completed', `${mode}: a small result is kept`);
    t.match(ok.result?.content?.[0]?.text, /Computed small/);
  }
});

t.test('polling faster than pollIntervalMs: 429 with Retry-After past the burst, on both faces; other tasks and principals unaffected', async (t) => {
  const stack = await stackWith(
    t,
    { tasks: { pollBurst: 2, adaptivePolling: false, maxTtlMs: 600_000 } },
    { tools: { gated_job: { task: 'always', pollIntervalMs: 60_000 } } },
    { tasks: 'sync' },
  );
  const alice = taskIdOf(await tool(stack.url, 'gated_job', { gate: 'p1' }, ALICE));
  const bob = taskIdOf(await tool(stack.url, 'gated_job', { gate: 'p2' }, BOB));
  for (let i = 1; i <= 2; i++) t.equal((await getTask(stack.url, alice, ALICE)).status, 200, `alice's poll ${i} is within the burst`);
  const fast = await getTask(stack.url, alice, ALICE);
  isCatalogued(t, fast, 'GW_POLL_TOO_FAST', 'alice, third poll within the interval');
  const retryAfterMs = fast.body?.error?.data?.retryAfterMs;
  t.ok(retryAfterMs > 0 && retryAfterMs <= 60_000, `data.retryAfterMs ${retryAfterMs}`);
  t.equal(Number(fast.retryAfter), Math.ceil(retryAfterMs / 1000), `Retry-After ${fast.retryAfter} s matches`);
  t.equal((await getTask(stack.url, bob, BOB)).body?.result?.status, 'working', 'bob polls his task meanwhile');
  const foreign = await getTask(stack.url, alice, BOB);
  t.equal(foreign.body?.error?.code, -32602, 'a foreign id is still just unknown (no 429 tells it exists)');
  const unknown = await getTask(stack.url, `gwt_${randomUUID()}`, ALICE);
  t.equal(unknown.body?.error?.code, -32602, 'an unknown id likewise');

  // The legacy face's tasks/get is a status poll of the same task: the same counter.
  const init = await fetch(stack.url, {
    method: 'POST',
    headers: { ...LEGACY_HEADERS, authorization: ALICE },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
    }),
    signal: AbortSignal.timeout(REQUEST_MS),
  });
  await init.body?.cancel();
  const session = init.headers.get('mcp-session-id') as string;
  t.ok(session, 'a legacy session for alice');
  const legacy = async (method: string, params: Record<string, unknown>) => {
    const res = await fetch(stack.url, {
      method: 'POST',
      headers: { ...LEGACY_HEADERS, 'mcp-session-id': session, authorization: ALICE },
      body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params }),
      signal: AbortSignal.timeout(REQUEST_MS),
    });
    return { ...(await readReply(res)), retryAfter: res.headers.get('retry-after') };
  };
  const legacyGet = await legacy('tasks/get', { taskId: alice });
  isCatalogued(t, legacyGet, 'GW_POLL_TOO_FAST', 'the legacy face, same task');
  t.ok(Number(legacyGet.retryAfter) >= 1, `legacy Retry-After ${legacyGet.retryAfter}`);

  // A client asking for a huge ttl gets the deployment's cap.
  const created = await legacy('tools/call', { name: 'gated_job', arguments: { gate: 'p3' }, task: { ttl: 1e15 } });
  t.equal(created.body?.result?.task?.ttl, 600_000, 'task ttl clamped to tasks.maxTtlMs');

  for (const gate of ['p1', 'p2', 'p3']) stack.fixture.releaseGate(gate);
});

t.test('input requests per round: an upstream asking more at once is stopped (MRTR: 502; a task: failed), the call cancelled', async (t) => {
  const stack = await stackWith(
    t,
    { input: { maxRequestsPerRound: 2 }, tasks: { adaptivePolling: false } },
    { tools: { multi_input: { task: 'always', pollIntervalMs: 50 } } },
    { tasks: 'sync' },
  );
  const over = await tool(stack.url, 'test_input_required_result_multiple_inputs', {}, ALICE, ALL_INPUT);
  isCatalogued(t, over, 'GW_INPUT_REQUESTS_EXCEEDED', 'three questions at once, limit 2');
  const cancelled = await waitForStats(stack.fixture, (s) => s.cancellations.some((c) => c.tool === 'test_input_required_result_multiple_inputs'));
  t.ok(cancelled, 'the upstream call was cancelled');
  const bob = await tool(stack.url, 'test_input_required_result_elicitation', {}, BOB, ALL_INPUT);
  t.equal(bob.body?.result?.resultType, 'input_required', 'another principal asking one question is served');

  const smaller = await stackWith(
    t,
    { input: { maxRequestsPerRound: 1 }, tasks: { adaptivePolling: false } },
    { tools: { multi_input: { task: 'always', pollIntervalMs: 50 } } },
    { tasks: 'sync' },
  );
  const id = taskIdOf(await tool(smaller.url, 'multi_input', {}, ALICE));
  const task = await untilTerminal(smaller.url, id, ALICE);
  t.equal(task.status, 'failed', 'the owned task failed');
  t.equal(task.error?.code, ERROR_CATALOG.GW_INPUT_REQUESTS_EXCEEDED.rpc);
  t.match(task.error?.message, /more input at once than allowed \(limit 1\)/);
  await waitForStats(smaller.fixture, (s) => s.cancellations.some((c) => c.tool === 'multi_input'));
  t.pass('its upstream call was cancelled');
});

t.test('input rounds per call: an upstream that keeps asking is stopped at the limit with 502, its call cancelled', async (t) => {
  const stack = await stackWith(t, { input: { maxRoundsPerTask: 1 } }, {}, { tasks: 'sync' });
  const name = 'test_input_required_result_multi_round';
  const first = await tool(stack.url, name, {}, ALICE);
  const result = first.body?.result;
  t.equal(result?.resultType, 'input_required', 'round 1 is within the limit');
  const key = Object.keys(result?.inputRequests ?? {})[0] as string;
  const retry = await call(
    stack.url,
    'tools/call',
    { name, arguments: {}, inputResponses: { [key]: { action: 'accept', content: { name: 'Alice' } } }, requestState: result.requestState },
    ALICE,
  );
  isCatalogued(t, retry, 'GW_INPUT_ROUNDS_EXCEEDED', 'round 2, limit 1');
  await waitForStats(stack.fixture, (s) => s.cancellations.some((c) => c.tool === name));
  t.pass('the upstream call was cancelled');
  const bob = await tool(stack.url, name, {}, BOB);
  t.equal(bob.body?.result?.resultType, 'input_required', 'another principal is served');
});

const missingRedis = redisAvailable();
const missingPostgres = postgresAvailable();
if (missingPostgres) t.comment(`Postgres runs skipped: ${missingPostgres}`);
/** One PostgreSQL for the file (started by the first test that needs it), each test in a schema of its own. */
const postgres = filePostgres();
t.teardown(() => postgres.dispose());

type StoreKind = 'memory' | 'redis' | 'postgres';
const STORE_NAME = { memory: 'memory', redis: 'Redis', postgres: 'PostgreSQL' } as const;
/** Why a test on `kind` cannot run here, or `false`. */
const skipOf = (kind: StoreKind): string | false => (kind === 'redis' ? missingRedis : kind === 'postgres' ? missingPostgres : undefined) ?? false;

/** The `store` section of a gateway configuration on `kind`, with a key prefix or schema of its own (named by `tag`). */
async function storeOf(t: Test, kind: StoreKind, tag: string): Promise<Record<string, unknown>> {
  if (kind === 'memory') return { kind: 'memory' };
  if (kind === 'redis') return { kind: 'redis', url: await redisForTest(t), keyPrefix: `mcpgw-${tag}-${randomUUID().slice(0, 8)}:` };
  return { kind: 'postgres', url: await postgres.url(), schema: schemaFor(`mcpgw_${tag}`), migrate: 'auto' };
}

for (const kind of ['redis', 'postgres'] as const) {
  t.test(`the poll limit holds across gateway instances sharing a real ${STORE_NAME[kind]}`, { skip: skipOf(kind) }, async (t) => {
    // Both instances on one key prefix or schema.
    const store = await storeOf(t, kind, 'limits');
    const stack = await stackWith(t, {}, {}, { tasks: 'sync' });
    const gateways: Gateway[] = [];
    const urls: string[] = [];
    for (let i = 0; i < 2; i++) {
      const cfg = {
        store,
        secret: { value: 'a-test-secret-of-at-least-32-characters!' },
        tasks: { pollBurst: 2, adaptivePolling: false },
        upstreams: [{ name: 'fixture', path: '/mcp', url: stack.fixture.url, tools: { gated_job: { task: 'always', pollIntervalMs: 60_000 } } }],
      };
      const g = await startGateway(cfg, { t });
      gateways.push(g.gateway);
      urls.push(g.url);
    }
    const [a, b] = urls as [string, string];
    const id = taskIdOf(await tool(a, 'gated_job', { gate: 'r1' }, ALICE));
    const bobId = taskIdOf(await tool(b, 'gated_job', { gate: 'r2' }, BOB));
    t.equal((await getTask(a, id, ALICE)).status, 200, 'poll 1 on instance A');
    t.equal((await getTask(b, id, ALICE)).status, 200, 'poll 2 on instance B');
    isCatalogued(t, await getTask(a, id, ALICE), 'GW_POLL_TOO_FAST', 'poll 3 on instance A counts the one on B');
    isCatalogued(t, await getTask(b, id, ALICE), 'GW_POLL_TOO_FAST', 'and on instance B');
    t.equal((await getTask(b, bobId, BOB)).body?.result?.status, 'working', 'bob is served meanwhile');
    stack.fixture.releaseGate('r1');
    stack.fixture.releaseGate('r2');
  });
}

for (const kind of ['memory', 'redis', 'postgres'] as const) {
  t.test(
    `${kind} store: a poll after waiting the retryAfterMs of a 429 is accepted; Retry-After is that wait in whole seconds`,
    { skip: skipOf(kind) },
    async (t) => {
      const store = await storeOf(t, kind, 'wait');
      const stack = await stackWith(
        t,
        { store, secret: { value: 'a-test-secret-of-at-least-32-characters!' }, tasks: { pollBurst: 1, adaptivePolling: false } },
        { tools: { gated_job: { task: 'always', pollIntervalMs: 1_000 } } },
        { tasks: 'sync' },
      );
      const id = taskIdOf(await tool(stack.url, 'gated_job', { gate: `w-${kind}` }, ALICE));
      // A few rounds: each refusal names a wait, and the poll after it is served (then the next one is refused again).
      for (let round = 1; round <= 3; round++) {
        t.equal((await getTask(stack.url, id, ALICE)).status, 200, `round ${round}: the first poll of a window is served`);
        const fast = await getTask(stack.url, id, ALICE);
        isCatalogued(t, fast, 'GW_POLL_TOO_FAST', `round ${round}: the second poll within the window`);
        const retryAfterMs = fast.body?.error?.data?.retryAfterMs as number;
        t.ok(Number.isInteger(retryAfterMs) && retryAfterMs >= 1, `round ${round}: data.retryAfterMs ${retryAfterMs}`);
        t.equal(
          Number(fast.retryAfter),
          Math.max(1, Math.ceil(retryAfterMs / 1000)),
          `round ${round}: Retry-After ${fast.retryAfter} s is the wait rounded up`,
        );
        await new Promise((resolve) => setTimeout(resolve, retryAfterMs));
      }
      t.equal((await getTask(stack.url, id, ALICE)).status, 200, 'the poll after the last advised wait is served');
      stack.fixture.releaseGate(`w-${kind}`);
    },
  );
}
