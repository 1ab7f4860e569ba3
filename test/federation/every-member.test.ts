/**
 * One federated endpoint in front of a member of every kind (test/federation/every-member-stack.ts: the npm
 * server-everything, the 2026-07-28-only JSON-lines everything-server stand-in, a 2025-11-25 server with core tasks, a
 * hand-rolled job server and an stdio server with a wrapped tool, each under its own namespace), used by the v2
 * client with and without the tasks extension and SDK 1.32.2 with and without `task`: each lists the union, calls a
 * tool of every member, answers the forms of the tools that ask (an MRTR round for the 2026-07-28 clients, an
 * elicitation request on the session for the 2025-11-25 ones), is told the progress of the tools that report it, and
 * the task-capable ones run a task of every kind to its end; legacy `tasks/list` merges the members' tasks.
 */
import { Client as ModernClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import t, { type Test } from 'tap';
import { JOB_RULES } from '../fixtures/job-server.js';
import { bounded } from '../helpers/era-clients.js';
import { connectLegacy } from '../helpers/modern-stack.js';
import { type Caller, type CallerKind, connectCaller, NAMESPACES, startEveryMember } from './every-member-stack.js';

const stack = await startEveryMember(t);

const KINDS: CallerKind[] = ['modern+tasks', 'modern', 'legacy+task', 'legacy'];

/** Connects a caller of `kind`, closed at `t`'s teardown. */
async function caller(t: Test, kind: CallerKind): Promise<Caller> {
  const c = await connectCaller(kind, stack.url);
  t.teardown(() => c.close());
  return c;
}

const textOf = (result: any): string => (Array.isArray(result?.content) ? result.content.map((c: any) => c?.text ?? '').join('\n') : '');

/** A member's own tool names, asked of it directly by a 2025-11-25 client declaring elicitation (or `capabilities`). */
async function legacyNames(url: string, capabilities: Record<string, object> = { elicitation: {} }): Promise<string[]> {
  const client = new LegacyClient({ name: 'direct', version: '1.0.0' }, { capabilities });
  await bounded(connectLegacy(url, {}, client), 'direct connect');
  try {
    return (await client.listTools()).tools.map((x) => x.name);
  } finally {
    await client.close();
  }
}

/** The 2026-07-28 member's own tool names, asked of it directly. */
async function modernNames(url: string): Promise<string[]> {
  const client = new ModernClient({ name: 'direct', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' }, capabilities: { elicitation: {} } });
  await bounded(client.connect(new StreamableHTTPClientTransport(new URL(url))), 'direct connect');
  try {
    return (await client.listTools(undefined, { cacheMode: 'bypass' } as never)).tools.map((x) => x.name);
  } finally {
    await client.close();
  }
}

/** The stdio fixture's tools (test/fixtures/stdio-legacy-server.ts; it runs only as the gateway's child). */
const STDIO_TOOLS = ['echo', 'slow_compute', 'ask_name', 'crash', 'whoami', 'getenv', 'stats', 'change_tools'];

/** The job plumbing the rules hide (status, result and cancel tools). */
const HIDDEN_JOB_TOOLS: string[] = Object.values(JOB_RULES).flatMap((r) => [...r.job.hide]);

t.test('every client lists the union of the five members, each under its prefix, in the same order', async (t) => {
  const own: Record<(typeof NAMESPACES)[number], string[]> = {
    ev: await legacyNames(stack.everything.url),
    m: await modernNames(stack.modern.url),
    l: await legacyNames(stack.legacy.url),
    j: (await legacyNames(stack.jobs.url)).filter((n) => !HIDDEN_JOB_TOOLS.includes(n)),
    io: STDIO_TOOLS,
  };
  t.ok(HIDDEN_JOB_TOOLS.length >= 6 && HIDDEN_JOB_TOOLS.includes('report_status'), 'the job rules hide plumbing');
  const expected = NAMESPACES.flatMap((ns) => own[ns].map((n) => `${ns}_${n}`)).sort();
  // Each client sees what each member shows a client like it: server-everything lists its sampling tool only to a
  // client that declares sampling (the 2025-11-25 task client does), as it would through a single endpoint.
  const sampling = (await legacyNames(stack.everything.url, { elicitation: {}, sampling: {} })).filter((n) => !own.ev.includes(n));
  t.strictSame(sampling, ['trigger-sampling-request'], 'server-everything shows one more tool to a client that declares sampling');
  const expectedFor = (kind: string) => (kind === 'legacy+task' ? [...expected, ...sampling.map((n) => `ev_${n}`)].sort() : expected);
  let first: string[] | undefined;
  for (const kind of KINDS) {
    const c = await caller(t, kind);
    const names = await c.list();
    t.strictSame([...names].sort(), expectedFor(kind), `${kind}: the union, each member under its prefix`);
    t.equal(new Set(names).size, names.length, `${kind}: no name twice`);
    const same = names.filter((n) => expected.includes(n));
    if (first) t.strictSame(same, first, `${kind}: the same order as the first client`);
    else first = same;
  }
  for (const name of ['ev_echo', 'ev_trigger-elicitation-request', 'ev_trigger-long-running-operation', 'ev_simulate-research-query'])
    t.ok(expected.includes(name), `server-everything shows ${name}`);
  t.notOk(
    expected.some((n) => HIDDEN_JOB_TOOLS.some((h) => n === `j_${h}`)),
    'no hidden job tool',
  );
});

/** One ordinary tool of every member and what it answers. */
const PLAIN: Array<{ tool: string; args: (tag: string) => Record<string, unknown>; says: (tag: string) => string }> = [
  { tool: 'ev_echo', args: (tag) => ({ message: tag }), says: (tag) => `Echo: ${tag}` },
  { tool: 'm_greet', args: (tag) => ({ name: tag }), says: (tag) => `Hello, ${tag}!` },
  { tool: 'l_greet', args: (tag) => ({ name: tag }), says: (tag) => `Hello, ${tag}!` },
  { tool: 'j_echo', args: (tag) => ({ text: tag }), says: (tag) => tag },
  { tool: 'io_echo', args: (tag) => ({ text: tag }), says: (tag) => tag },
];

/** Tools that ask the client for a form during the call: the question, and the answer with the form filled. */
const ASKING: Array<{ tool: string; question: string; says: string }> = [
  { tool: 'ev_trigger-elicitation-request', question: 'Please provide inputs for the following fields:', says: 'User inputs:\n- Name: Ada' },
  { tool: 'm_test_input_required_result_elicitation', question: 'What is your name?', says: 'Hello, Ada!' },
  { tool: 'l_test_input_required_result_elicitation', question: 'What is your name?', says: 'Hello, Ada!' },
  { tool: 'io_ask_name', question: 'What is your name?', says: 'Hello, Ada' },
];

/** Tools that report progress for the call's token: the progress values, and the answer. */
const PROGRESSING: Array<{ tool: string; args: Record<string, unknown>; progress: number[]; says: string; wrapped?: true }> = [
  {
    tool: 'ev_trigger-long-running-operation',
    args: { duration: 0.1, steps: 2 },
    progress: [1, 2],
    says: 'Long running operation completed. Duration: 0.1 seconds, Steps: 2.',
  },
  { tool: 'm_test_tool_with_progress', args: {}, progress: [0, 50, 100], says: '' },
  { tool: 'l_test_tool_with_progress', args: {}, progress: [0, 50, 100], says: '' },
  // Wrapped into a task (task: always) for a client declaring the tasks extension: a plain call only for the others.
  { tool: 'io_slow_compute', args: { durationMs: 20 }, progress: [0], says: 'computed after 20 ms', wrapped: true },
];

for (const kind of KINDS) {
  t.test(`${kind}: a tool of every member, one that asks for input and one that reports progress`, async (t) => {
    const c = await caller(t, kind);
    for (const p of PLAIN) {
      const tag = `${kind}-${p.tool}`;
      const { result } = await c.call(p.tool, p.args(tag));
      t.notOk(result.isError, `${p.tool}: no tool error`, { result });
      t.equal(textOf(result), p.says(tag), `${p.tool}: the member's own answer`);
    }
    for (const a of ASKING) {
      const before = c.asked.length;
      const { result, progress } = await c.call(a.tool, {});
      t.strictSame(c.asked.slice(before), [a.question], `${a.tool}: the client was asked once, the member's question`);
      // The v2 client reports each MRTR round it fulfils as progress (round 1, …): one round, and no other progress.
      t.strictSame(progress, kind.startsWith('modern') ? [1] : [], `${a.tool}: ${kind.startsWith('modern') ? 'one MRTR round' : 'no MRTR round'}`);
      t.match(textOf(result), a.says, `${a.tool}: the answer used the form the client filled`, { result });
    }
    for (const p of PROGRESSING) {
      if (p.wrapped && kind === 'modern+tasks') continue;
      const { result, progress } = await c.call(p.tool, p.args);
      t.strictSame(progress, p.progress, `${p.tool}: the member's progress reached the caller`);
      // The fixtures' progress tool answers with the token it saw: the gateway's, not the client's.
      if (p.says) t.equal(textOf(result), p.says, `${p.tool}: the answer`);
      else t.notOk(result.isError, `${p.tool}: no tool error`, { result });
    }
  });
}

/** A task of every kind: the member's own (each era), the gateway's wrapped one and a job; how each ends. */
const TASKS: Array<{
  kind: string;
  tool: string;
  args: (tag: string) => Record<string, unknown>;
  says: (tag: string) => string;
  /** The question the task asks the client on its way. */
  asks?: (tag: string) => string;
}> = [
  {
    kind: "a 2025-11-25 member's own task (core tasks)",
    tool: 'l_slow_compute',
    args: (tag) => ({ seconds: 0.05, label: tag }),
    says: (tag) => `Computed ${tag} after 0.05s`,
  },
  {
    kind: "a 2026-07-28 member's own task (tasks extension)",
    tool: 'm_slow_compute',
    args: (tag) => ({ seconds: 0.05, label: tag }),
    says: (tag) => `Computed ${tag} after 0.05s`,
  },
  {
    kind: "a 2025-11-25 member's own task that asks for input",
    tool: 'l_confirm_delete',
    args: (tag) => ({ filename: tag }),
    says: (tag) => `Deleted ${tag}`,
    asks: (tag) => `Delete ${tag}?`,
  },
  {
    kind: "a 2026-07-28 member's own task that asks for input",
    tool: 'm_confirm_delete',
    args: (tag) => ({ filename: tag }),
    says: (tag) => `Deleted ${tag}`,
    asks: (tag) => `Delete ${tag}?`,
  },
  {
    kind: "server-everything's own 2025-11-25 task",
    tool: 'ev_simulate-research-query',
    args: (tag) => ({ topic: tag }),
    says: (tag) => `# Research Report: ${tag}`,
  },
  { kind: 'a wrapped synchronous tool (gateway-owned task)', tool: 'io_slow_compute', args: () => ({ durationMs: 30 }), says: () => 'computed after 30 ms' },
  {
    kind: 'a hand-rolled job (task: job)',
    tool: 'j_start_report',
    args: (tag) => ({ topic: tag, steps: 2, stepMs: 20 }),
    says: (tag) => `Report on ${tag}: 2 sections`,
  },
];

t.test('modern+tasks: the v2 client declares the extension on its plain calls too, so the wrapped tool is a task', async (t) => {
  const c = await caller(t, 'modern+tasks');
  // The v2 client itself reads no CreateTaskResult: that it meets one shows the extension was declared.
  await t.rejects(c.call('io_slow_compute', { durationMs: 1 }), /Unsupported result type 'task'/);
});

for (const kind of ['modern', 'legacy'] as const) {
  t.test(`${kind}: a client that takes no task gets every task tool's answer in the call`, async (t) => {
    const c = await caller(t, kind);
    for (const x of TASKS) {
      // server-everything's research tool requires a task (taskSupport: required).
      if (x.tool === 'ev_simulate-research-query') continue;
      const tag = `${kind}-plain-${x.tool}`;
      const { result } = await c.call(x.tool, x.args(tag));
      t.notOk(result.isError, `${x.tool}: no tool error`, { result });
      t.match(textOf(result), x.says(tag), `${x.kind}: its result, in the call`);
    }
  });
}

for (const kind of ['modern+tasks', 'legacy+task'] as const) {
  t.test(`${kind}: a task of every kind runs to its end`, async (t) => {
    const c = await caller(t, kind);
    const before = {
      l: stack.legacy.stats().tasksCreated.slow_compute ?? 0,
      m: stack.modern.stats().tasksCreated.slow_compute ?? 0,
      j: stack.jobs.calls.start_report ?? 0,
      lAsk: stack.legacy.stats().tasksCreated.confirm_delete ?? 0,
      mAsk: stack.modern.stats().tasksCreated.confirm_delete ?? 0,
    };
    const ran = await Promise.all(
      TASKS.map(async (x) => {
        const tag = `${kind}-${x.tool}`;
        return { ...x, tag, ...(await c.task!(x.tool, x.args(tag))) };
      }),
    );
    for (const r of ran) {
      t.equal(r.outcome.status, 'completed', `${r.kind}: completed`, { outcome: r.outcome });
      t.match(textOf(r.outcome.result), r.says(r.tag), `${r.kind}: the member's result`);
      if (r.asks) t.equal(c.asked.filter((q) => q === r.asks!(r.tag)).length, 1, `${r.kind}: the client was asked once`, { asked: c.asked });
    }
    t.equal(new Set(ran.map((r) => r.taskId)).size, TASKS.length, 'one task id each');
    t.equal((stack.legacy.stats().tasksCreated.slow_compute ?? 0) - before.l, 1, 'the 2025-11-25 member ran its own task');
    t.equal((stack.modern.stats().tasksCreated.slow_compute ?? 0) - before.m, 1, 'the 2026-07-28 member ran its own task');
    t.equal((stack.legacy.stats().tasksCreated.confirm_delete ?? 0) - before.lAsk, 1, 'the 2025-11-25 member ran its own asking task');
    t.equal((stack.modern.stats().tasksCreated.confirm_delete ?? 0) - before.mAsk, 1, 'the 2026-07-28 member ran its own asking task');
    t.equal((stack.jobs.calls.start_report ?? 0) - before.j, 1, 'the job was started once');
  });
}

t.test("legacy tasks/list through the federated endpoint lists the caller's tasks of every member", async (t) => {
  const c = await caller(t, 'legacy+task');
  const ids: Record<string, string> = {};
  for (const x of TASKS) {
    const tag = `list-${x.tool}`;
    const { taskId, outcome } = await c.task!(x.tool, x.args(tag));
    t.equal(outcome.status, 'completed', `${x.tool}: completed`);
    ids[x.tool] = taskId;
  }
  const listed = await c.taskList!();
  for (const [tool, id] of Object.entries(ids)) t.ok(listed.includes(id), `${tool}: its task is listed`, { listed });
  t.equal(new Set(listed).size, listed.length, 'no task twice');
});
