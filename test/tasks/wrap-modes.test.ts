/**
 * Issue #4: slow synchronous tools of a legacy upstream WITHOUT task support, wrapped into gateway-owned tasks per
 * tool rule (`task: native | off | auto | always | required`). Real gateway in front of the real sync-only fixture
 * (`tasks: 'sync'`), raw modern requests. `afterMs` boundaries are driven by the fixture, never by sleeps: below the
 * boundary = a call that ends at once under a large afterMs; above = `gated_job` held by its gate under a small
 * afterMs (released only after the CreateTaskResult arrived).
 */
import t, { type Test } from 'tap';
import { startStack, type Stack } from '../helpers/stack.js';
import { post, type RawReply } from '../helpers/modern.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';

const TASKS_EXT = 'io.modelcontextprotocol/tasks';
/** A client that declares the tasks extension and form elicitation. */
const DECLARING = { extensions: { [TASKS_EXT]: {} }, elicitation: {} };
/** Declares the extension but no input kind at all. */
const TASKS_ONLY = { extensions: { [TASKS_EXT]: {} } };
/** A client without the extension. */
const PLAIN = { elicitation: {} };
/** A large window: anything that ends "at once" ends inside it. */
const LONG = 30_000;
/** A small window: a gated call held by its gate always outlives it. */
const SHORT = 20;

type Rules = Record<string, Record<string, unknown>>;
type PostOpts = NonNullable<Parameters<typeof post>[3]>;

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A gateway with these tool rules in front of the sync-only fixture. */
async function stackWith(t: Teardown, tools: Rules, config: Record<string, unknown> = {}, fixture: Record<string, unknown> = {}): Promise<Stack> {
  // pollTask below watches every 10 ms (the transitions are its subject, not polling): the poll limit, tested in
  // test/security/task-limits.test.ts, is set out of its way.
  const tasks = { pollBurst: 1_000_000, ...((config.tasks as object | undefined) ?? {}) };
  const stack = await startStack({ ...config, tasks }, { tools }, { tasks: 'sync', taskJobDelayMs: 0, ...fixture });
  t.teardown(() => stack.close());
  return stack;
}

function call(stack: Stack, name: string, args: Record<string, unknown> = {}, opts: PostOpts = {}, extra: Record<string, unknown> = {}): Promise<RawReply> {
  return post(stack.url, 'tools/call', { name, arguments: args, ...extra }, { capabilities: DECLARING, ...opts });
}

function taskRequest(stack: Stack, method: string, params: Record<string, unknown>, opts: PostOpts = {}): Promise<RawReply> {
  return post(stack.url, method, params, { capabilities: DECLARING, ...opts });
}

const getTask = (stack: Stack, taskId: string, opts: PostOpts = {}) => taskRequest(stack, 'tasks/get', { taskId }, opts);
const updateTask = (stack: Stack, taskId: string, inputResponses: Record<string, unknown>, opts: PostOpts = {}) =>
  taskRequest(stack, 'tasks/update', { taskId, inputResponses }, opts);
const cancelTask = (stack: Stack, taskId: string, opts: PostOpts = {}) => taskRequest(stack, 'tasks/cancel', { taskId }, opts);

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

/**
 * Polls tasks/get until `pred` holds (bounded: 5 s). Every DetailedTask seen is passed to `seen` (for invariants that
 * must hold on every poll). Returns the matching DetailedTask.
 */
async function pollTask(stack: Stack, taskId: string, pred: (task: any) => boolean, opts: { seen?: (task: any) => void; post?: PostOpts } = {}): Promise<any> {
  const deadline = Date.now() + 5_000;
  let last: unknown;
  for (;;) {
    const r = await getTask(stack, taskId, opts.post);
    if (r.status !== 200 || !r.body?.result) throw new Error(`tasks/get failed: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    const task = r.body.result;
    opts.seen?.(task);
    if (pred(task)) return task;
    last = task;
    if (Date.now() > deadline) throw new Error(`task ${taskId} never matched; last: ${JSON.stringify(last)}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const untilTerminal = (stack: Stack, taskId: string, opts: { seen?: (task: any) => void; post?: PostOpts } = {}) =>
  pollTask(stack, taskId, (task) => TERMINAL.has(task.status), opts);

/** Asserts a CreateTaskResult and returns its taskId. */
function createdTask(t: Test, r: RawReply): string {
  t.equal(r.status, 200, 'HTTP 200');
  t.equal(r.body?.result?.resultType, 'task', 'a CreateTaskResult', { body: r.body });
  t.type(r.body?.result?.taskId, 'string');
  return r.body?.result?.taskId as string;
}

/** Asserts a synchronous (non-task) tool result and returns its first text. */
function syncText(t: Test, r: RawReply): string {
  t.equal(r.status, 200, 'HTTP 200');
  t.equal(r.body?.result?.resultType, 'complete', 'a plain result', { body: r.body });
  t.notOk(r.body?.result && 'taskId' in r.body.result, 'no taskId');
  return r.body?.result?.content?.[0]?.text as string;
}

const firstText = (result: any): string | undefined => result?.content?.[0]?.text;
const accept = (content: Record<string, unknown>) => ({ action: 'accept', content });

async function discoverCapabilities(stack: Stack): Promise<any> {
  const r = await post(stack.url, 'server/discover', {}, { capabilities: DECLARING });
  return r.body?.result?.capabilities;
}

// ── native and off ─────────────────────────────────────────────────────────────────────────────────────────────

for (const [mode, tools] of [
  ['native (the default, no rules)', undefined],
  ['off', { '*': { task: 'off' } }],
] as const) {
  t.test(`${mode}: a slow call from a declaring client stays synchronous; the extension is not advertised`, async (t) => {
    const stack = tools
      ? await stackWith(t, tools)
      : await (async () => {
          const s = await startStack({}, {}, { tasks: 'sync' });
          t.teardown(() => s.close());
          return s;
        })();
    const caps = await discoverCapabilities(stack);
    t.ok(caps, 'discover answered');
    t.notOk(caps?.extensions?.[TASKS_EXT], 'no tasks extension: the gateway creates no tasks here');

    const pending = call(stack, 'gated_job', { gate: 'n' });
    await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);
    t.equal(stack.fixture.releaseGate('n'), 1, 'the call was held upstream, still unanswered');
    const r = await pending;
    t.equal(syncText(t, r), 'released n');
    t.equal(stack.fixture.stats().calls.gated_job, 1);
  });
}

// ── auto ───────────────────────────────────────────────────────────────────────────────────────────────────────

t.test('auto, below afterMs: calls that end inside the window answer synchronously (results, tool errors, JSON-RPC errors)', async (t) => {
  const stack = await stackWith(t, { '*': { task: 'auto', afterMs: LONG } });
  t.same((await discoverCapabilities(stack))?.extensions?.[TASKS_EXT], {}, 'the extension is advertised when the gateway wraps tools');

  t.equal(syncText(t, await call(stack, 'greet', { name: 'Ada' })), 'Hello, Ada!');
  t.equal(syncText(t, await call(stack, 'slow_compute', { seconds: 0, label: 'quick' })), 'Computed quick after 0s');

  const toolError = await call(stack, 'failing_job');
  t.equal(syncText(t, toolError), 'Job failed: simulated tool error');
  t.equal(toolError.body.result.isError, true, 'a tool error stays a result');

  const protocolError = await call(stack, 'protocol_error_job', {}, { id: 'pe-1' });
  t.equal(protocolError.body.id, 'pe-1');
  t.equal(protocolError.body.error?.code, -32603, 'the JSON-RPC error comes back as an error, not a task');
  t.match(protocolError.body.error?.message, /Job failed/);
  t.notOk(protocolError.body.result);
});

t.test('auto, input inside afterMs: an MRTR round (no task), then a synchronous answer', async (t) => {
  const stack = await stackWith(t, { confirm_delete: { task: 'auto', afterMs: LONG } });
  const r1 = await call(stack, 'confirm_delete', { filename: 'a.txt' });
  t.equal(r1.status, 200);
  const round = r1.body.result;
  t.equal(round.resultType, 'input_required');
  t.notOk('taskId' in round, 'no task yet');
  t.same(Object.keys(round.inputRequests), ['confirm']);
  t.equal(round.inputRequests.confirm.method, 'elicitation/create');
  t.equal(round.inputRequests.confirm.params.message, 'Delete a.txt?');
  t.type(round.requestState, 'string');

  const r2 = await call(
    stack,
    'confirm_delete',
    { filename: 'a.txt' },
    {},
    { requestState: round.requestState, inputResponses: { confirm: accept({ confirm: true }) } },
  );
  t.equal(syncText(t, r2), 'Deleted a.txt');
  t.equal(stack.fixture.stats().calls.confirm_delete, 1, 'one upstream call across both rounds');
});

t.test('auto, above afterMs: a CreateTaskResult while the call keeps running; the task completes when the gate opens', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'auto', afterMs: SHORT } });
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'a' }));
  // An anonymous caller's call opens its own upstream session first, so the task may be created (afterMs) before the
  // upstream has the call: awaited, not raced. A cancelled call never shows as running.
  const stats = await waitForStats(stack.fixture, (s) => s.running.gated_job === 1 || s.cancellations.length > 0);
  t.equal(stats.calls.gated_job, 1);
  t.equal(stats.running.gated_job, 1, 'the upstream call was not cancelled when the task was created');
  t.same(stats.cancellations, []);

  const working = (await getTask(stack, taskId)).body.result;
  t.equal(working.status, 'working');

  t.equal(stack.fixture.releaseGate('a'), 1);
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'completed');
  t.equal(firstText(done.result), 'released a');
  t.equal(done.result.resultType, 'complete');
  t.equal(stack.fixture.stats().calls.gated_job, 1, 'the same call finished (not re-run)');
});

// ── always ─────────────────────────────────────────────────────────────────────────────────────────────────────

t.test('always: every call from a declaring client is a task at once, even one that ends instantly', async (t) => {
  const stack = await stackWith(t, { '*': { task: 'always' } });
  const taskId = createdTask(t, await call(stack, 'greet', { name: 'Ada' }));
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'completed');
  t.equal(firstText(done.result), 'Hello, Ada!');
  t.equal(done.result.resultType, 'complete', 'the inlined result carries resultType complete');
  t.notOk(done.result._meta?.['io.modelcontextprotocol/related-task'], 'no related-task _meta on the inlined result');
});

t.test('always with afterMs: the first round gets the window (instant → synchronous, held → task)', async (t) => {
  const stack = await stackWith(t, {
    greet: { task: 'always', afterMs: LONG },
    gated_job: { task: 'always', afterMs: SHORT },
  });
  t.equal(syncText(t, await call(stack, 'greet', { name: 'Bo' })), 'Hello, Bo!');
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'w' }));
  stack.fixture.releaseGate('w');
  const done = await untilTerminal(stack, taskId);
  t.equal(firstText(done.result), 'released w');
});

// ── required ───────────────────────────────────────────────────────────────────────────────────────────────────

t.test('required: a non-declaring client gets HTTP 400 -32021 naming the extension; the upstream is never called', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'required' } });
  for (const [label, capabilities] of [
    ['no extension', PLAIN],
    ['only the legacy tasks capability', { tasks: { requests: { tools: { call: {} } } } }],
  ] as const) {
    const r = await call(stack, 'gated_job', { gate: 'r' }, { capabilities, id: `req-${label}` });
    t.equal(r.status, 400, `${label}: HTTP 400`);
    t.equal(r.body.id, `req-${label}`);
    t.equal(r.body.error?.code, -32021, `${label}: -32021`);
    t.same(r.body.error?.data?.requiredCapabilities?.extensions?.[TASKS_EXT], {}, `${label}: data.requiredCapabilities names the extension`);
  }
  t.notOk(stack.fixture.stats().calls.gated_job, 'the upstream never saw the refused calls');

  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'r' }));
  stack.fixture.releaseGate('r');
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'completed');
  t.equal(firstText(done.result), 'released r');
});

// ── non-declaring clients under auto / always ──────────────────────────────────────────────────────────────────

for (const rule of [{ task: 'auto', afterMs: SHORT }, { task: 'always' }]) {
  t.test(`${rule.task}: a non-declaring client gets a plain synchronous call, however long it runs`, async (t) => {
    const stack = await stackWith(t, { gated_job: rule });
    const pending = call(stack, 'gated_job', { gate: 'plain' }, { capabilities: PLAIN });
    await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);
    // A declaring call started after it becomes a task: the plain call has now been held at least as long.
    const probe = createdTask(t, await call(stack, 'gated_job', { gate: 'probe' }));
    t.equal(stack.fixture.releaseGate('plain'), 1, 'the plain call was still running upstream');
    t.equal(syncText(t, await pending), 'released plain');
    stack.fixture.releaseGate('probe');
    t.equal((await untilTerminal(stack, probe)).status, 'completed');
  });
}

// ── rules: globs and order ─────────────────────────────────────────────────────────────────────────────────────

t.test('rules: globs match tool names and the first matching rule wins', async (t) => {
  t.test('specific rules before a catch-all', async (t) => {
    const stack = await stackWith(t, {
      'gated_*': { task: 'off' },
      'gre?t': { task: 'always' },
      '*': { task: 'auto', afterMs: LONG },
    });
    createdTask(t, await call(stack, 'greet', { name: 'G' }));

    const pending = call(stack, 'gated_job', { gate: 'glob' });
    await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);
    stack.fixture.releaseGate('glob');
    t.equal(syncText(t, await pending), 'released glob', 'gated_* → off: synchronous');

    t.equal(syncText(t, await call(stack, 'slow_compute', { seconds: 0 })), 'Computed result after 0s', '* → auto, below the window');
  });

  t.test('a catch-all first would shadow a later exact rule: such a configuration is refused, naming both', async (t) => {
    await t.rejects(stackWith(t, { '*': { task: 'always' }, greet: { task: 'off' } }), /rule "greet" can never apply: the earlier rule "\*"/);
  });

  t.test('a tool no rule matches is native', async (t) => {
    const stack = await stackWith(t, { 'slow_*': { task: 'always' } });
    t.equal(syncText(t, await call(stack, 'greet', { name: 'I' })), 'Hello, I!');
    createdTask(t, await call(stack, 'slow_compute', { seconds: 0 }));
  });
  t.end();
});

// ── CreateTaskResult shape, ttlMs, pollIntervalMs ──────────────────────────────────────────────────────────────

const CREATE_KEYS = new Set(['resultType', 'taskId', 'status', 'statusMessage', 'createdAt', 'lastUpdatedAt', 'ttlMs', 'pollIntervalMs', '_meta']);

t.test('CreateTaskResult: flat, resultType task, ttlMs/pollIntervalMs from the rule; tasks/get works at once', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always', ttlMs: 120_000, pollIntervalMs: 250 } });
  const r = await call(stack, 'gated_job', { gate: 's' }, { id: 'create-1' });
  t.equal(r.body.id, 'create-1');
  const taskId = createdTask(t, r);
  const created = r.body.result;
  for (const k of Object.keys(created)) t.ok(CREATE_KEYS.has(k), `no unexpected key ${k}`);
  for (const k of ['result', 'error', 'inputRequests', 'requestState', 'task', 'ttl', 'pollInterval']) t.notOk(k in created, `no ${k}`);
  t.equal(created.status, 'working');
  t.equal(created.ttlMs, 120_000);
  t.equal(created.pollIntervalMs, 250);
  t.match(taskId, /^[A-Za-z0-9_-]{22,}$/, 'URL-safe id with at least 128 bits');
  t.ok(!Number.isNaN(Date.parse(created.createdAt)) && !Number.isNaN(Date.parse(created.lastUpdatedAt)), 'ISO timestamps');

  // X: the task is readable before the CreateTaskResult is sent.
  const got = await getTask(stack, taskId);
  t.equal(got.status, 200);
  const task = got.body.result;
  t.equal(task.resultType, 'complete');
  t.equal(task.taskId, taskId);
  t.equal(task.status, 'working');
  t.equal(task.createdAt, created.createdAt);
  t.equal(task.ttlMs, 120_000);
  t.equal(task.pollIntervalMs, 250);
  t.notOk('result' in task || 'error' in task || 'inputRequests' in task);

  const second = createdTask(t, await call(stack, 'gated_job', { gate: 's' }));
  t.not(second, taskId, 'each task gets its own id');
  stack.fixture.releaseGate('s');
  t.equal((await untilTerminal(stack, taskId)).status, 'completed');
  t.equal((await untilTerminal(stack, second)).status, 'completed');
});

t.test('ttlMs and pollIntervalMs defaults come from tasks.*; rule maxTtlMs and tasks.maxTtlMs clamp', async (t) => {
  const stack = await stackWith(
    t,
    {
      greet: { task: 'always' },
      slow_compute: { task: 'always', maxTtlMs: 60_000 },
      test_simple_text: { task: 'always', ttlMs: 900_000 },
      test_error_handling: { task: 'always', ttlMs: 50_000, maxTtlMs: 70_000 },
    },
    { tasks: { defaultTtlMs: 200_000, maxTtlMs: 300_000, pollIntervalMs: 750 } },
  );
  const cases: Array<[string, Record<string, unknown>, number]> = [
    ['greet', { name: 'x' }, 200_000], // tasks.defaultTtlMs
    ['slow_compute', { seconds: 0 }, 60_000], // the default, clamped by the rule's maxTtlMs
    ['test_simple_text', {}, 300_000], // the rule's ttlMs, clamped by tasks.maxTtlMs
    ['test_error_handling', {}, 50_000], // the rule's ttlMs, under both bounds
  ];
  for (const [tool, args, ttlMs] of cases) {
    const r = await call(stack, tool, args);
    const taskId = createdTask(t, r);
    t.equal(r.body.result.ttlMs, ttlMs, `${tool}: ttlMs ${ttlMs}`);
    t.equal(r.body.result.pollIntervalMs, 750, `${tool}: pollIntervalMs from tasks.pollIntervalMs`);
    const done = await untilTerminal(stack, taskId);
    t.equal(done.ttlMs, ttlMs, `${tool}: tasks/get reports the same ttlMs`);
  }
});

// ── outcomes ───────────────────────────────────────────────────────────────────────────────────────────────────

t.test('outcomes: a tool error completes (isError), a JSON-RPC error fails the task with that error', async (t) => {
  const stack = await stackWith(t, { '*': { task: 'always' } });
  const toolError = await untilTerminal(stack, createdTask(t, await call(stack, 'failing_job')));
  t.equal(toolError.status, 'completed', 'X: completed includes isError results');
  t.equal(toolError.result.isError, true);
  t.equal(firstText(toolError.result), 'Job failed: simulated tool error');
  t.notOk('error' in toolError);

  const protocolError = await untilTerminal(stack, createdTask(t, await call(stack, 'protocol_error_job')));
  t.equal(protocolError.status, 'failed', 'X: failed only for a JSON-RPC error');
  t.equal(protocolError.error.code, -32603);
  t.match(protocolError.error.message, /Job failed/);
  t.notOk('result' in protocolError);
});

// ── input during a wrapped call ────────────────────────────────────────────────────────────────────────────────

t.test('input: confirm_delete under always → input_required (key confirm) → tasks/update → completed', async (t) => {
  const stack = await stackWith(t, { confirm_delete: { task: 'always' } });
  const taskId = createdTask(t, await call(stack, 'confirm_delete', { filename: 'report.txt' }));
  const asking = await pollTask(stack, taskId, (task) => task.status !== 'working');
  t.equal(asking.status, 'input_required');
  t.same(Object.keys(asking.inputRequests), ['confirm'], 'the upstream hint becomes the key');
  const ask = asking.inputRequests.confirm;
  t.equal(ask.method, 'elicitation/create');
  t.equal(ask.params.message, 'Delete report.txt?');
  t.same(ask.params.requestedSchema.required, ['confirm']);
  t.notOk('jsonrpc' in ask || 'id' in ask, 'a bare {method, params}');
  t.notOk(ask.params._meta?.['mcp-tasks-gateway/inputKey'], 'the hint does not leak');

  const ack = await updateTask(stack, taskId, { confirm: accept({ confirm: true }) });
  t.equal(ack.status, 200);
  t.same(ack.body.result, { resultType: 'complete' }, 'an empty ack');
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'completed');
  t.equal(firstText(done.result), 'Deleted report.txt');
  t.notOk('inputRequests' in done);

  const declined = createdTask(t, await call(stack, 'confirm_delete', { filename: 'b.txt' }));
  await pollTask(stack, declined, (task) => task.status === 'input_required');
  await updateTask(stack, declined, { confirm: { action: 'decline' } });
  t.equal(firstText((await untilTerminal(stack, declined)).result), 'Kept b.txt (decline)');
});

t.test('input: multi_input partial updates; answered keys never come back and are never re-bound', async (t) => {
  const stack = await stackWith(t, { multi_input: { task: 'always' } });
  const taskId = createdTask(t, await call(stack, 'multi_input'));
  const ledger = new Map<string, string>();
  const seen = (task: any) => {
    for (const [k, v] of Object.entries(task.inputRequests ?? {})) {
      const fp = JSON.stringify(v);
      if (!ledger.has(k)) ledger.set(k, fp);
      else if (ledger.get(k) !== fp) t.fail(`key ${k} stood for two different requests`);
    }
  };
  const both = await pollTask(stack, taskId, (task) => Object.keys(task.inputRequests ?? {}).length === 2, { seen });
  t.same(Object.keys(both.inputRequests).sort(), ['confirm', 'name']);

  t.same((await updateTask(stack, taskId, { name: accept({ name: 'Bo' }) })).body.result, { resultType: 'complete' });
  const partial = (await getTask(stack, taskId)).body.result;
  seen(partial);
  t.equal(partial.status, 'input_required', 'still waiting for the other answer');
  t.same(Object.keys(partial.inputRequests), ['confirm'], 'the answered key is gone at once');

  // An answered key sent again (with another value) and an unknown key are acked and ignored.
  const again = await updateTask(stack, taskId, { name: accept({ name: 'Eve' }), 'unknown-key': { ignored: true } });
  t.same(again.body.result, { resultType: 'complete' });
  const still = (await getTask(stack, taskId)).body.result;
  seen(still);
  t.same(Object.keys(still.inputRequests), ['confirm'], 'name did not come back');

  await updateTask(stack, taskId, { confirm: accept({ confirm: true }) });
  const done = await untilTerminal(stack, taskId, { seen });
  t.equal(firstText(done.result), 'multi_input: name=Bo, confirm=true', 'the first answer for name was the one used');
  t.same([...ledger.keys()].sort(), ['confirm', 'name'], 'only the two keys ever appeared');
});

t.test('input: an undeclared input kind is never asked; the server meets a client without it', async (t) => {
  const stack = await stackWith(t, { confirm_delete: { task: 'always' } });
  const r = await call(stack, 'confirm_delete', { filename: 'c.txt' }, { capabilities: TASKS_ONLY });
  const taskId = createdTask(t, r);
  let asked = false;
  const done = await untilTerminal(stack, taskId, {
    post: { capabilities: TASKS_ONLY },
    seen: (task) => {
      if (task.status === 'input_required' || 'inputRequests' in task) asked = true;
    },
  });
  t.notOk(asked, 'no poll ever showed input_required or inputRequests');
  // The call's session declared no elicitation: the SDK server refuses to ask, and the call fails as it would directly.
  t.ok(done.status === 'failed' || done.result?.isError === true, `a failure, not a confirmation: ${JSON.stringify(done).slice(0, 200)}`);
  t.notMatch(JSON.stringify(done), /Deleted c\.txt/, 'nothing was confirmed');
});

t.test('MRTR then task: required with a large afterMs asks in round 1 (no task), creates the task in round 2', async (t) => {
  const stack = await stackWith(t, { test_tool_with_task: { task: 'required', afterMs: LONG } });
  const r1 = await call(stack, 'test_tool_with_task');
  t.equal(r1.status, 200);
  const round = r1.body.result;
  t.equal(round.resultType, 'input_required');
  t.notOk('taskId' in round, 'round 1 is not a task');
  t.same(Object.keys(round.inputRequests), ['user_name']);
  t.type(round.requestState, 'string');

  const r2 = await call(stack, 'test_tool_with_task', {}, {}, { requestState: round.requestState, inputResponses: { user_name: accept({ name: 'Ada' }) } });
  const taskId = createdTask(t, r2);
  t.notOk('inputRequests' in r2.body.result || 'requestState' in r2.body.result);
  const done = await untilTerminal(stack, taskId);
  t.equal(done.status, 'completed');
  t.equal(firstText(done.result), 'Hello, Ada!');
  t.equal(stack.fixture.stats().calls.test_tool_with_task, 1, 'one upstream call for both rounds and the task');
});

// ── limits and principals ──────────────────────────────────────────────────────────────────────────────────────

t.test('tasks.maxActivePerPrincipal: 1 → a second live task is refused with 429; the first and other principals are unaffected', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always' } }, { tasks: { maxActivePerPrincipal: 1 } });
  const alice = { headers: { authorization: 'Bearer alice' } };
  const bob = { headers: { authorization: 'Bearer bob' } };
  const first = createdTask(t, await call(stack, 'gated_job', { gate: 'one' }, alice));

  const refused = await call(stack, 'gated_job', { gate: 'two' }, { ...alice, id: 'over-limit' });
  t.equal(refused.status, 429, 'HTTP 429');
  t.equal(refused.body.jsonrpc, '2.0');
  t.equal(refused.body.id, 'over-limit');
  t.type(refused.body.error?.code, 'number', 'a JSON-RPC error');
  t.type(refused.body.error?.message, 'string');
  t.notOk(refused.body.result);
  t.equal(stack.fixture.stats().gatesWaiting.one, 1, 'the first call still runs upstream');

  const other = createdTask(t, await call(stack, 'gated_job', { gate: 'bob' }, bob));
  t.equal((await getTask(stack, first, alice)).body.result.status, 'working', 'the first task is unharmed');

  stack.fixture.releaseGate('one');
  const done = await untilTerminal(stack, first, { post: alice });
  t.equal(done.status, 'completed');
  t.equal(firstText(done.result), 'released one');
  const again = createdTask(t, await call(stack, 'gated_job', { gate: 'three' }, alice));
  t.ok(again, 'a finished task no longer counts');

  stack.fixture.releaseGate('bob');
  stack.fixture.releaseGate('three');
  t.equal((await untilTerminal(stack, other, { post: bob })).status, 'completed');
  t.equal((await untilTerminal(stack, again, { post: alice })).status, 'completed');
  // Gate "two" was never opened: had the refused call been left running upstream, this would never hold.
  const end = await waitForStats(stack.fixture, (s) => !s.running.gated_job);
  t.notOk(end.gatesWaiting.two, 'nothing of the refused call is left upstream');
});

t.test('tasks.maxActivePerPrincipal: under always, a refused call never reaches the upstream', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always' } }, { tasks: { maxActivePerPrincipal: 1 } });
  const first = createdTask(t, await call(stack, 'gated_job', { gate: 'one' }));
  const refused = await call(stack, 'gated_job', { gate: 'two' });
  t.equal(refused.status, 429);
  // The admitted call runs in the background (its task was handed out at once): counted once it arrives upstream.
  const stats = await waitForStats(stack.fixture, (s) => (s.gatesWaiting.one ?? 0) === 1);
  t.equal(stats.calls.gated_job, 1, 'only the admitted call reached the upstream', { stats });
  t.same(stats.cancellations, [], 'nothing had to be cancelled');
  stack.fixture.releaseGate('one');
  t.equal((await untilTerminal(stack, first)).status, 'completed');
});

t.test('principal binding: another Authorization sees -32602 on tasks/get, update and cancel; the task is unharmed', async (t) => {
  const stack = await stackWith(t, { gated_job: { task: 'always' } });
  const alice = { headers: { authorization: 'Bearer alice' } };
  const taskId = createdTask(t, await call(stack, 'gated_job', { gate: 'p' }, alice));
  for (const [who, opts] of [
    ['mallory', { headers: { authorization: 'Bearer mallory' } }],
    ['anonymous', {}],
  ] as const) {
    const get = await getTask(stack, taskId, opts);
    t.equal(get.body.error?.code, -32602, `${who}: tasks/get → -32602`);
    t.notOk(get.body.result);
    t.equal((await updateTask(stack, taskId, { x: accept({}) }, opts)).body.error?.code, -32602, `${who}: tasks/update → -32602`);
    t.equal((await cancelTask(stack, taskId, opts)).body.error?.code, -32602, `${who}: tasks/cancel → -32602`);
  }
  const noExt = await getTask(stack, taskId, { ...alice, capabilities: PLAIN });
  t.equal(noExt.status, 400);
  t.equal(noExt.body.error?.code, -32021, 'the owner without the extension on this request → -32021');

  t.same(stack.fixture.stats().cancellations, [], 'nothing was cancelled upstream');
  t.equal((await getTask(stack, taskId, alice)).body.result.status, 'working');
  stack.fixture.releaseGate('p');
  const done = await untilTerminal(stack, taskId, { post: alice });
  t.equal(done.status, 'completed');
  t.equal(firstText(done.result), 'released p');
});
