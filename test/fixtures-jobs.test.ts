/**
 * The job fixture (test/fixtures/job-server.ts) on its own, no gateway, with a real client of each era: the SDK 1.32.2
 * `Client` against the 2025-11-25 server, the v2 `Client` (@modelcontextprotocol/client 2.4.0) against the 2026-07-28
 * one. Each job shape runs to its end by polling its status tool; a cancelled job is shown to stop for good by
 * letting another job of the same pace run to its end meanwhile (an observable event, no sleep).
 */
import t from 'tap';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { JOB_RULES, startJobServer, type JobServer } from './fixtures/job-server.js';

const STEP_MS = 20;
/** Bound on polling one job to its end: a job that never ends fails the test, it never hangs it. */
const POLL_BOUND_MS = 10_000;

interface Result {
  content: Array<{ type: string; text?: string }>;
  structuredContent?: Record<string, any>;
  isError?: boolean;
}

interface ListedTool {
  name: string;
  inputSchema: { type: string; properties?: Record<string, any>; required?: string[] };
}

/** One connected client of one era, with what it called (to compare with what the fixture counted). */
interface Conn {
  /** The era the client negotiated. */
  era: string;
  call(name: string, args: Record<string, unknown>): Promise<Result>;
  /** A call the SDK may refuse (a protocol error, or the SDK's own isError): the result, or the error message. */
  tryCall(name: string, args: Record<string, unknown>): Promise<Result | { thrown: string }>;
  tools(): Promise<ListedTool[]>;
  /** Calls made per tool (excluding `tryCall`). */
  made: Record<string, number>;
  /** Status-tool calls made, in order (excluding `tryCall`). */
  statusMade: Array<{ tool: string; handle: unknown }>;
}

const STATUS_TOOLS = new Set(['report_status', 'export_status', 'build_status']);
const HANDLE_ARG: Record<string, string> = { report_status: 'jobId', export_status: 'handle', build_status: 'id' };

async function connect(t: { teardown(fn: () => unknown): void }, fx: JobServer): Promise<Conn> {
  let raw: (name: string, args: Record<string, unknown>) => Promise<Result>;
  let list: () => Promise<ListedTool[]>;
  let era: string;
  if (fx.era === 'legacy') {
    const client = new LegacyClient({ name: 'fixtures-jobs-legacy', version: '1.0.0' });
    const transport = new LegacyTransport(new URL(fx.url));
    await client.connect(transport);
    t.teardown(() => client.close());
    era = transport.protocolVersion ?? '(none)';
    raw = async (name, args) => (await client.callTool({ name, arguments: args })) as Result;
    list = async () => (await client.listTools()).tools as ListedTool[];
  } else {
    const client = new ModernClient({ name: 'fixtures-jobs-modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await client.connect(new ModernTransport(new URL(fx.url)));
    t.teardown(() => client.close());
    era = client.getProtocolEra() ?? '(none)';
    raw = async (name, args) => (await client.callTool({ name, arguments: args })) as Result;
    list = async () => (await client.listTools(undefined, { cacheMode: 'bypass' })).tools as ListedTool[];
  }
  const made: Record<string, number> = {};
  const statusMade: Conn['statusMade'] = [];
  return {
    era,
    made,
    statusMade,
    async call(name, args) {
      made[name] = (made[name] ?? 0) + 1;
      if (STATUS_TOOLS.has(name)) statusMade.push({ tool: name, handle: args[HANDLE_ARG[name]!] });
      return raw(name, args);
    },
    async tryCall(name, args) {
      try {
        return await raw(name, args);
      } catch (e) {
        return { thrown: e instanceof Error ? e.message : String(e) };
      }
    },
    tools: list,
  };
}

const textOf = (r: Result): string => r.content.map((c) => c.text ?? '').join('');
const jsonOf = (r: Result): any => JSON.parse(r.content[0]?.text ?? 'null');

/** Calls `tool` with `args` until `done(result)`; every result in order (the last one is done). */
async function pollUntil(conn: Conn, tool: string, args: Record<string, unknown>, done: (r: Result) => boolean): Promise<Result[]> {
  const seen: Result[] = [];
  const deadline = Date.now() + POLL_BOUND_MS;
  for (;;) {
    const r = await conn.call(tool, args);
    seen.push(r);
    if (done(r)) return seen;
    if (Date.now() > deadline) throw new Error(`${tool} ${JSON.stringify(args)}: not done within ${POLL_BOUND_MS} ms, last ${JSON.stringify(r)}`);
  }
}

/** Whether `seen` follows `order` (repeats allowed, no going back, nothing outside it). */
function inOrder(seen: string[], order: string[]): boolean {
  let at = 0;
  for (const s of seen) {
    const i = order.indexOf(s);
    if (i < at) return false;
    at = i;
  }
  return true;
}

t.test('JOB_RULES names the tools the fixture offers', async (t) => {
  const fx = await startJobServer({ era: 'legacy' });
  t.teardown(() => fx.close());
  const conn = await connect(t, fx);
  const names = new Set((await conn.tools()).map((tool) => tool.name));
  for (const [start, rule] of Object.entries(JOB_RULES)) {
    t.ok(names.has(start), start);
    const job = rule.job as { status: { tool: string }; result?: { tool: string }; cancel?: { tool: string }; hide: readonly string[] };
    for (const tool of [job.status.tool, job.result?.tool, job.cancel?.tool, ...job.hide]) if (tool) t.ok(names.has(tool), `${start}: ${tool}`);
  }
});

for (const era of ['legacy', 'modern'] as const) {
  t.test(`${era}: the job tools with a real ${era} client`, async (t) => {
    const fx = await startJobServer({ era, stepMs: STEP_MS });
    t.teardown(() => fx.close());
    const conn = await connect(t, fx);

    t.test('the client is of the era', async (t) => {
      t.equal(fx.era, era);
      t.equal(conn.era, era === 'legacy' ? '2025-11-25' : 'modern');
    });

    t.test('tools/list: every tool with a JSON Schema of its arguments', async (t) => {
      const tools = await conn.tools();
      t.same(tools.map((tool) => tool.name).sort(), [
        'build_cancel',
        'build_status',
        'echo',
        'export_cancel',
        'export_status',
        'report_cancel',
        'report_result',
        'report_status',
        'start_build',
        'start_export',
        'start_report',
      ]);
      const byName = new Map(tools.map((tool) => [tool.name, tool.inputSchema]));
      t.match(byName.get('start_report'), {
        type: 'object',
        properties: { topic: { type: 'string' }, steps: { type: 'integer' }, stepMs: { type: 'integer' } },
        required: ['topic'],
      });
      t.match(byName.get('build_status'), { type: 'object', properties: { id: { type: 'number' } }, required: ['id'] });
      t.match(byName.get('export_status'), { type: 'object', properties: { handle: { type: 'string' } }, required: ['handle'] });
    });

    t.test('echo is an ordinary tool', async (t) => {
      const r = await conn.call('echo', { text: 'hi' });
      t.same(r.content, [{ type: 'text', text: 'hi' }]);
      t.notOk(r.isError);
    });

    t.test('report: handle in structuredContent, states queued → running → done, a separate result tool', async (t) => {
      const started = await conn.call('start_report', { topic: 'owls', steps: 3, stepMs: STEP_MS });
      const jobId = started.structuredContent?.jobId;
      t.match(jobId, /^rep-\d+$/);
      t.same(jsonOf(started), { jobId }, 'the same JSON as text');
      t.same(fx.jobs.get(jobId)?.args, { topic: 'owls', steps: 3, stepMs: STEP_MS });
      const early = await conn.call('report_result', { jobId });
      t.equal(early.isError, true);
      t.equal(textOf(early), 'not finished');

      const seen = await pollUntil(conn, 'report_status', { jobId }, (r) => r.structuredContent?.state === 'done');
      const states = seen.map((r) => String(r.structuredContent?.state));
      t.ok(inOrder(states, ['queued', 'running', 'done']), `states in order: ${states.join(',')}`);
      for (const r of seen) {
        t.match(r.structuredContent?.progress, /^step [0-3] of 3$/);
        t.same(jsonOf(r), r.structuredContent, 'text mirrors structuredContent');
      }
      t.same(seen.at(-1)?.structuredContent, { state: 'done', progress: 'step 3 of 3' });

      const result = await conn.call('report_result', { jobId });
      t.notOk(result.isError);
      t.same(result.content, [{ type: 'text', text: 'Report on owls: 3 sections' }]);
      t.same(result.structuredContent, { report: { topic: 'owls', sections: 3 } });
      t.match(fx.jobs.get(jobId), { shape: 'report', state: 'done', step: 3, steps: 3, finished: true, cancelled: false });
      const late = await conn.call('report_cancel', { jobId });
      t.equal(textOf(late), 'already finished', 'cancelling a finished job changes nothing');
      t.equal(fx.jobs.get(jobId)?.state, 'done');
    });

    t.test('export: handle and result in JSON text, no structuredContent anywhere', async (t) => {
      const started = await conn.call('start_export', { table: 'users', steps: 4, stepMs: STEP_MS });
      t.equal(started.structuredContent, undefined);
      const { handle } = jsonOf(started);
      t.match(handle, /^exp-\d+$/);
      t.same(jsonOf(started), { handle });

      const seen = await pollUntil(conn, 'export_status', { handle }, (r) => jsonOf(r).status !== 'running');
      for (const r of seen) t.equal(r.structuredContent, undefined);
      const running = seen.slice(0, -1).map((r) => jsonOf(r));
      let last = 0;
      for (const s of running) {
        t.ok(Object.keys(s).length === 2 && s.pct >= last && s.pct <= 100, `running ${JSON.stringify(s)}`);
        last = s.pct;
      }
      t.same(jsonOf(seen.at(-1)!), { status: 'finished', pct: 100, rows: 40, table: 'users' });
      t.match(fx.jobs.get(handle), { shape: 'export', state: 'finished', step: 4, finished: true, cancelled: false });
    });

    t.test('build: a numeric handle, and the job fails', async (t) => {
      const started = await conn.call('start_build', { target: 'kernel', stepMs: STEP_MS });
      const id = started.structuredContent?.id;
      t.type(id, 'number');
      t.same(jsonOf(started), { id });
      const seen = await pollUntil(conn, 'build_status', { id }, (r) => r.structuredContent?.phase !== 'compiling');
      t.ok(
        seen.slice(0, -1).every((r) => JSON.stringify(r.structuredContent) === '{"phase":"compiling"}'),
        'compiling until the end',
      );
      t.same(seen.at(-1)?.structuredContent, { phase: 'broken', error: 'compiler exploded on kernel' });
      t.match(fx.jobs.get(String(id)), { shape: 'build', state: 'broken', steps: 3, finished: true, cancelled: false });

      // The SDK validates the arguments against the schema: a string id never reaches the tool.
      const calls = fx.calls.build_status;
      const statusCalls = fx.statusCalls.length;
      const refused = await conn.tryCall('build_status', { id: String(id) });
      t.ok('thrown' in refused || refused.isError === true, `refused: ${JSON.stringify(refused)}`);
      t.equal(fx.calls.build_status, calls, 'not counted');
      t.equal(fx.statusCalls.length, statusCalls);
    });

    t.test('an unknown handle on any job tool is an isError result', async (t) => {
      for (const [tool, args, id] of [
        ['report_status', { jobId: 'rep-999' }, 'rep-999'],
        ['report_result', { jobId: 'rep-999' }, 'rep-999'],
        ['report_cancel', { jobId: 'rep-999' }, 'rep-999'],
        ['export_status', { handle: 'nope' }, 'nope'],
        ['export_cancel', { handle: 'nope' }, 'nope'],
        ['build_status', { id: 7 }, '7'],
        ['build_cancel', { id: 7 }, '7'],
      ] as const) {
        const r = await conn.call(tool, args);
        t.equal(r.isError, true, tool);
        t.equal(textOf(r), `unknown job ${id}`, tool);
      }
    });

    t.test('cancel: the job stops for good, and its status says so', async (t) => {
      const started = await conn.call('start_report', { topic: 'slow', steps: 1000, stepMs: STEP_MS });
      const jobId = started.structuredContent?.jobId as string;
      await pollUntil(conn, 'report_status', { jobId }, (r) => r.structuredContent?.state === 'running');
      const cancelled = await conn.call('report_cancel', { jobId });
      t.same(cancelled.content, [{ type: 'text', text: 'cancelled' }]);
      t.notOk(cancelled.isError);
      const job = fx.jobs.get(jobId)!;
      t.match(job, { cancelled: true, finished: false, state: 'cancelled' });
      const stepAtCancel = job.step;
      t.ok(stepAtCancel >= 1 && stepAtCancel < 1000, `stopped at step ${stepAtCancel}`);

      // Time passes observably: a job of the same pace runs its three steps to the end meanwhile.
      const other = (await conn.call('start_report', { topic: 'pace', steps: 3, stepMs: STEP_MS })).structuredContent?.jobId;
      await pollUntil(conn, 'report_status', { jobId: other }, (r) => r.structuredContent?.state === 'done');

      const status = await conn.call('report_status', { jobId });
      t.same(status.structuredContent, { state: 'cancelled', progress: `step ${stepAtCancel} of 1000` });
      t.equal(fx.jobs.get(jobId)?.step, stepAtCancel, 'the step never advanced after the cancel');
      t.equal(textOf(await conn.call('report_result', { jobId })), 'not finished');
      t.equal(textOf(await conn.call('report_cancel', { jobId })), 'cancelled', 'cancelling again is harmless');
      t.equal(fx.jobs.get(jobId)?.step, stepAtCancel);
    });

    t.test('cancel: export reports aborted, build reports cancelled', async (t) => {
      const { handle } = jsonOf(await conn.call('start_export', { table: 'big', steps: 1000, stepMs: STEP_MS }));
      t.same(textOf(await conn.call('export_cancel', { handle })), 'cancelled');
      t.same(jsonOf(await conn.call('export_status', { handle })), { status: 'aborted' });
      t.match(fx.jobs.get(handle), { cancelled: true, finished: false, state: 'aborted' });

      const id = (await conn.call('start_build', { target: 'big', steps: 1000, stepMs: STEP_MS })).structuredContent?.id;
      t.same(textOf(await conn.call('build_cancel', { id })), 'cancelled');
      t.same((await conn.call('build_status', { id })).structuredContent, { phase: 'cancelled' });
      t.match(fx.jobs.get(String(id)), { cancelled: true, finished: false, state: 'cancelled' });
    });

    t.test('calls and statusCalls match what the client called', async (t) => {
      t.same(fx.calls, conn.made);
      t.equal(fx.calls.start_report, 3, 'each start_report call made one job');
      t.equal(fx.calls.start_export, 2);
      t.equal(fx.calls.start_build, 2);
      t.equal([...fx.jobs.values()].length, 7);
      t.same(
        fx.statusCalls.map(({ tool, handle }) => ({ tool, handle })),
        conn.statusMade,
        'every status call, in order, with the handle as sent (build ids as numbers)',
      );
      t.ok(fx.statusCalls.some((s) => s.tool === 'build_status' && typeof s.handle === 'number'));
      t.ok(
        fx.statusCalls.every((s, i, all) => typeof s.at === 'number' && (i === 0 || s.at >= all[i - 1]!.at)),
        'each with its Date.now()',
      );
    });
  });
}

t.test('the modern server is 2026-07-28 only: an SDK 1.32.2 client is refused', async (t) => {
  const fx = await startJobServer({ era: 'modern' });
  t.teardown(() => fx.close());
  const client = new LegacyClient({ name: 'fixtures-jobs-legacy', version: '1.0.0' });
  await t.rejects(client.connect(new LegacyTransport(new URL(fx.url))));
  await client.close();
});

t.test('close stops every job', async (t) => {
  const fx = await startJobServer({ era: 'legacy', stepMs: STEP_MS });
  const conn = await connect(t, fx);
  const jobId = (await conn.call('start_report', { topic: 'left running', steps: 1000 })).structuredContent?.jobId;
  await fx.close();
  const step = fx.jobs.get(jobId)!.step;
  // A second fixture's job of the same pace runs to its end meanwhile.
  const other = await startJobServer({ era: 'legacy', stepMs: STEP_MS });
  t.teardown(() => other.close());
  const conn2 = await connect(t, other);
  const id2 = (await conn2.call('start_report', { topic: 'pace' })).structuredContent?.jobId;
  await pollUntil(conn2, 'report_status', { jobId: id2 }, (r) => r.structuredContent?.state === 'done');
  t.equal(fx.jobs.get(jobId)!.step, step, 'no step after close');
  t.equal(fx.jobs.get(jobId)!.finished, false);
});
