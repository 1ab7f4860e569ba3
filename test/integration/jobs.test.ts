/**
 * Hand-rolled async jobs as tasks (docs/jobs.md), through the real gateway configured with config/jobs.example.yaml,
 * in front of the job fixture servers of both eras (test/fixtures/job-server.ts: three shapes, each with real timers,
 * and a cancel that really stops the work). Every client era gets each job's real outcome: a 2026-07-28 client with
 * the tasks extension (ext-tasks), a 2025-11-25 SDK 1.32.2 client sending `task`, and clients of both eras that take
 * no task (one call driven to the end, progress relayed). Also: cancel stops the upstream job; the plumbing tools are
 * hidden and refused; the start tool is called exactly once per task; a rule that reads no handle fails with the
 * catalogued error naming the rule; a job task is bound to its principal and the upstream handle is never a task id.
 */
import { Client as LegacySdkClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { Client as ModernSdkClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import t, { type Test } from 'tap';
import type { Gateway } from '../../src/app.js';
import { loadConfigFile, parseConfig } from '../../src/config/index.js';
import { JOB_RULES, startJobServer, type JobServer } from '../fixtures/job-server.js';
import { bounded, connectEra, until, type ClientEra, type EraClient } from '../helpers/era-clients.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { DECLARING, TERMINAL } from '../helpers/task-helpers.js';

const EXAMPLE = new URL('../../config/jobs.example.yaml', import.meta.url).pathname;

type Rules = Record<string, unknown>;

/** The tool rules of config/jobs.example.yaml (the file the README points at, run here as it is). */
async function exampleRules(): Promise<Rules> {
  const cfg = await loadConfigFile(EXAMPLE);
  return cfg.upstreams[0]!.tools as Rules;
}

/** A gateway in front of `upstream` with these tool rules (and `entry`'s other upstream settings), listening on loopback. */
async function gatewayFor(
  t: Test,
  upstream: string,
  tools: Rules,
  config: Record<string, unknown> = {},
  entry: Record<string, unknown> = {},
): Promise<{ url: string; gateway: Gateway }> {
  const upstreams = [{ ...entry, name: 'jobs', path: '/mcp', url: upstream, tools }];
  const { url, gateway } = await startGateway({ ...config, upstreams });
  t.teardown(() => gateway.close());
  return { url, gateway };
}

const textOf = (result: any): string => (Array.isArray(result?.content) ? result.content.map((c: any) => c?.text ?? '').join('') : '');

/** What each shape ends with, as a client of any era sees it. */
const SHAPES = [
  {
    tool: 'start_report',
    args: (tag: string) => ({ topic: tag, steps: 3, stepMs: 20 }),
    ends: 'completed',
    text: (tag: string) => `Report on ${tag}: 3 sections`,
  },
  { tool: 'start_export', args: (tag: string) => ({ table: tag, steps: 3, stepMs: 20 }), ends: 'completed', text: (tag: string) => `"table":"${tag}"` },
  { tool: 'start_build', args: (tag: string) => ({ target: tag, steps: 2, stepMs: 20 }), ends: 'failed', text: (tag: string) => `compiler exploded on ${tag}` },
] as const;

/** A 2025-11-25 SDK client that takes no task. */
async function legacyPlain(url: string): Promise<LegacySdkClient> {
  const client = new LegacySdkClient({ name: 'jobs-legacy-plain', version: '1.0.0' }, { capabilities: {} });
  await bounded(client.connect(new LegacyTransport(new URL(url))), 'legacy connect');
  return client;
}

/** A 2026-07-28 SDK client that takes no task (it does not declare the extension). */
async function modernPlain(url: string): Promise<ModernSdkClient> {
  const client = new ModernSdkClient({ name: 'jobs-modern-plain', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await bounded(client.connect(new StreamableHTTPClientTransport(new URL(url))), 'modern connect');
  return client;
}

/** A plain call of either era: the result (or the error) and the progress messages seen. */
async function plainCall(
  era: ClientEra,
  url: string,
  tool: string,
  args: Record<string, unknown>,
): Promise<{ result?: any; error?: string; progress: string[] }> {
  const progress: string[] = [];
  const onprogress = (p: { message?: string | undefined }) => void (p.message !== undefined && progress.push(p.message));
  if (era === 'legacy') {
    const client = await legacyPlain(url);
    try {
      const result = await bounded(
        client.callTool({ name: tool, arguments: args }, CallToolResultSchema, { onprogress, timeout: 15_000 }),
        `${tool}: plain legacy call`,
      );
      return { result, progress };
    } catch (e) {
      return { error: e instanceof McpError ? `${e.code} ${e.message}` : String(e), progress };
    } finally {
      await client.close();
    }
  }
  const client = await modernPlain(url);
  try {
    const result = await bounded(client.callTool({ name: tool, arguments: args }, { onprogress, timeout: 15_000 } as never), `${tool}: plain modern call`);
    return { result, progress };
  } catch (e) {
    return { error: String((e as Error)?.message ?? e), progress };
  } finally {
    await client.close();
  }
}

t.test('config/jobs.example.yaml holds the rules the job fixture is driven by', async (t) => {
  const parsed = parseConfig({ upstreams: [{ name: 'x', url: 'http://127.0.0.1:1/mcp', tools: { ...JOB_RULES, '*': { task: 'native' } } }] });
  t.strictSame(await exampleRules(), parsed.upstreams[0]!.tools);
});

for (const upstreamEra of ['legacy', 'modern'] as const) {
  t.test(`in front of a ${upstreamEra === 'legacy' ? '2025-11-25' : '2026-07-28'} job server`, async (t) => {
    const server: JobServer = await startJobServer({ era: upstreamEra, stepMs: 20 });
    t.teardown(() => server.close());
    const { url } = await gatewayFor(t, server.url, await exampleRules());
    let seq = 0;
    const tag = (what: string) => `${upstreamEra}-${what}-${++seq}`;

    for (const era of ['modern', 'legacy'] as const) {
      t.test(`a ${era === 'modern' ? '2026-07-28 client with the tasks extension' : '2025-11-25 client sending task'} gets each job as a task`, async (t) => {
        const client: EraClient = await connectEra(era, url);
        t.teardown(() => client.close());
        for (const shape of SHAPES) {
          const name = tag(shape.tool);
          const startsBefore = server.calls[shape.tool] ?? 0;
          const created = await client.start(shape.tool, shape.args(name));
          t.equal(created.status, 'working', `${shape.tool}: a working task at once`);
          t.notMatch(created.taskId, /^(rep|exp)-|^\d+$/, `${shape.tool}: the gateway's task id, not the job's handle`);
          const outcome = await client.settle(created.taskId);
          t.equal(outcome.status, shape.ends, `${shape.tool}: ${shape.ends}`, { outcome });
          const said = shape.ends === 'completed' ? textOf(outcome.result) : `${outcome.error?.message ?? ''}${textOf(outcome.result)}`;
          t.match(said, shape.text(name), `${shape.tool}: the job's own ${shape.ends === 'completed' ? 'result' : 'message'}`, { outcome });
          t.equal((server.calls[shape.tool] ?? 0) - startsBefore, 1, `${shape.tool}: the start tool was called exactly once`);
        }
      });

      t.test(`a ${era} client's tasks/cancel stops the upstream job`, async (t) => {
        const client: EraClient = await connectEra(era, url);
        t.teardown(() => client.close());
        const topic = tag('cancel');
        const created = await client.start('start_report', { topic, steps: 1000, stepMs: 50 });
        const job = [...server.jobs.values()].find((j) => j.args.topic === topic);
        t.ok(job, 'the fixture runs the job');
        const answered = await client.cancel(created.taskId);
        t.notOk('code' in answered, 'the cancel is accepted', { answered });
        t.equal(job?.cancelled, true, 'the fixture says the job was stopped');
        const after = await client.lookup(created.taskId);
        t.equal('status' in after ? after.status : after, 'cancelled', 'the task is cancelled');
        // A job started alongside keeps stepping: once it has taken two steps, the cancelled one would have too.
        const step = job?.step;
        const control = await client.start('start_report', { topic: `${topic}-control`, steps: 1000, stepMs: 50 });
        const other = [...server.jobs.values()].find((j) => j.args.topic === `${topic}-control`)!;
        const from = other.step;
        await bounded(
          until(() => other.step >= from + 2),
          'the control job steps on',
        );
        t.equal(job?.step, step, 'the cancelled job does not advance any more');
        await client.cancel(control.taskId);
      });

      t.test(`a ${era} client without tasks gets one call driven to the end, progress relayed`, async (t) => {
        for (const shape of SHAPES) {
          const name = tag(`plain-${shape.tool}`);
          const r = await plainCall(era, url, shape.tool, shape.args(name));
          if (shape.ends === 'completed') {
            t.match(textOf(r.result), shape.text(name), `${shape.tool}: the job's result as the call's`, { r });
            t.notOk(r.result?.isError, `${shape.tool}: no error`);
          } else {
            t.match(`${r.error ?? ''}${textOf(r.result)}`, shape.text(name), `${shape.tool}: the job's failure as the call's error`, { r });
          }
        }
        // Long enough that a status poll (at the default second, nothing learned yet) sees it running.
        const r = await plainCall(era, url, 'start_report', { topic: tag('progress'), steps: 4, stepMs: 600 });
        t.match(textOf(r.result), 'sections', 'the result', { r });
        t.ok(
          r.progress.some((m) => /step \d of 4/.test(m)),
          'status messages arrive as progress notifications',
          { progress: r.progress },
        );
      });

      t.test(`a ${era} client sees no plumbing tools and cannot call them`, async (t) => {
        const plumbing = ['report_status', 'report_result', 'report_cancel', 'export_status', 'export_cancel', 'build_status', 'build_cancel'];
        if (era === 'legacy') {
          const client = await legacyPlain(url);
          t.teardown(() => client.close());
          const names = (await client.listTools()).tools.map((x) => x.name);
          t.ok(names.includes('start_report') && names.includes('echo'), 'the start tools and the others are listed', { names });
          t.strictSame(
            names.filter((n) => plumbing.includes(n)),
            [],
            'no plumbing tool is listed',
          );
          const listed = (await client.listTools()).tools.find((x) => x.name === 'start_report');
          t.equal((listed as any)?.execution?.taskSupport, 'optional', 'a start tool takes task');
          await t.rejects(client.callTool({ name: 'report_status', arguments: { jobId: 'rep-1' } }), { code: -32602, message: /Unknown tool: report_status/ });
        } else {
          const list = await post(url, 'tools/list', {});
          const names = (list.body?.result?.tools ?? []).map((x: any) => x.name);
          t.ok(names.includes('start_report') && names.includes('echo'), 'the start tools and the others are listed', { names });
          t.strictSame(
            names.filter((n: string) => plumbing.includes(n)),
            [],
            'no plumbing tool is listed',
          );
          const r = await post(url, 'tools/call', { name: 'build_status', arguments: { id: 1 } }, { capabilities: DECLARING });
          t.equal(r.body?.error?.code, -32602, 'refused: unknown tool', { body: r.body });
          t.match(r.body?.error?.message, /Unknown tool: build_status/);
        }
      });
    }

    t.test('twenty clients polling one job task every 50 ms: the status tool at most once per interval', async (t) => {
      const rules = { ...(await exampleRules()) } as Record<string, any>;
      const INTERVAL = 200;
      rules.start_report = { ...rules.start_report, pollIntervalMs: INTERVAL };
      const { url: polled } = await gatewayFor(t, server.url, rules);
      const topic = tag('pollers');
      const created = (await post(polled, 'tools/call', { name: 'start_report', arguments: { topic, steps: 12, stepMs: 100 } }, { capabilities: DECLARING }))
        .body?.result;
      t.equal(created?.resultType, 'task', 'a task', { created });
      t.equal(created?.pollIntervalMs, INTERVAL, 'the suggested interval');
      const handle = [...server.jobs.entries()].find(([, j]) => j.args.topic === topic)?.[0];
      let ended = false;
      const poller = async () => {
        while (!ended) {
          const r = await post(polled, 'tasks/get', { taskId: created.taskId }, { capabilities: DECLARING });
          if (TERMINAL.includes(r.body?.result?.status)) ended = true;
          else await new Promise((res) => setTimeout(res, 50));
        }
      };
      await bounded(Promise.all(Array.from({ length: 20 }, poller)), 'twenty pollers until the job ends', 20_000);
      const calls = server.statusCalls.filter((c) => String(c.handle) === handle).map((c) => c.at);
      t.ok(calls.length >= 3, 'the job was polled through to its end', { calls: calls.length });
      // Counted, not timed one by one: the fixture sees each call when it arrives, and a call delayed on its way (a
      // loaded machine) shortens the gap after it without the gateway asking sooner. At most one call per interval
      // over the span is the span's intervals plus the first, and one more for the delay at either end. Without the
      // shared clock, twenty pollers every 50 ms would cause about 80 calls in this span.
      const span = calls.at(-1)! - calls[0]!;
      const most = Math.floor(span / INTERVAL) + 2;
      t.ok(calls.length <= most, `${calls.length} status calls in ${span} ms: at most one per ${INTERVAL} ms interval (${most})`, { calls });
    });
  });
}

t.test('a rule whose id path reads nothing fails the call with the catalogued error naming the rule', async (t) => {
  const server = await startJobServer({ era: 'legacy', stepMs: 20 });
  t.teardown(() => server.close());
  const rules = { ...(await exampleRules()) } as Record<string, any>;
  rules.start_report = { ...rules.start_report, job: { ...rules.start_report.job, id: 'structuredContent.nothing' } };
  const { url } = await gatewayFor(t, server.url, rules);
  const r = await post(url, 'tools/call', { name: 'start_report', arguments: { topic: 'no-handle' } }, { capabilities: DECLARING });
  t.equal(r.status, 502, 'HTTP 502: the upstream answered what the rule cannot read');
  t.equal(r.body?.error?.code, -32603);
  t.equal(r.body?.error?.message, 'Job rule for tool start_report: the start tool answered without a handle at structuredContent.nothing');
  const legacy = await connectEra('legacy', url);
  t.teardown(() => legacy.close());
  await t.rejects(
    legacy.start('start_report', { topic: 'no-handle-legacy' }),
    /without a handle at structuredContent\.nothing/,
    'a 2025-11-25 task client is told the same',
  );
  const plain = await plainCall('modern', url, 'start_report', { topic: 'no-handle-plain' });
  t.match(plain.error, /without a handle at structuredContent\.nothing/, 'and a client without tasks');
});

t.test('a job task is bound to its principal; the upstream handle is never a task id', async (t) => {
  const server = await startJobServer({ era: 'modern', stepMs: 20 });
  t.teardown(() => server.close());
  const { url } = await gatewayFor(t, server.url, await exampleRules());
  const as = (token: string) => ({ capabilities: DECLARING, headers: { authorization: `Bearer ${token}` } });
  const created = (await post(url, 'tools/call', { name: 'start_report', arguments: { topic: 'mine', steps: 1000, stepMs: 50 } }, as('alice-token'))).body
    ?.result;
  t.equal(created?.resultType, 'task');
  const mine = await post(url, 'tasks/get', { taskId: created.taskId }, as('alice-token'));
  t.equal(mine.body?.result?.status, 'working', 'its creator reads it');
  const theirs = await post(url, 'tasks/get', { taskId: created.taskId }, as('mallory-token'));
  t.equal(theirs.body?.error?.code, -32602, 'another principal is told it does not exist', { body: theirs.body });
  const cancel = await post(url, 'tasks/cancel', { taskId: created.taskId }, as('mallory-token'));
  t.equal(cancel.body?.error?.code, -32602, 'nor can it cancel it');
  const handle = [...server.jobs.entries()].find(([, j]) => j.args.topic === 'mine')?.[0];
  t.ok(handle, 'the fixture knows the job by its handle');
  const byHandle = await post(url, 'tasks/get', { taskId: String(handle) }, as('alice-token'));
  t.equal(byHandle.body?.error?.code, -32602, 'the handle is no task id, even for the creator');
  await post(url, 'tasks/cancel', { taskId: created.taskId }, as('alice-token'));
  t.equal(server.jobs.get(String(handle))?.cancelled, true, "the creator's cancel reached the job");
});

t.test('a client without tasks whose job outlives the call budget gets a timeout, and the job is cancelled', async (t) => {
  const server = await startJobServer({ era: 'legacy', stepMs: 20 });
  t.teardown(() => server.close());
  const { url } = await gatewayFor(t, server.url, await exampleRules(), {}, { timeoutMs: 1_500 });
  for (const era of ['modern', 'legacy'] as const) {
    const topic = `budget-${era}`;
    const r = await plainCall(era, url, 'start_report', { topic, steps: 1000, stepMs: 100 });
    t.match(r.error, /timed out|Upstream timed out|-32603/i, `${era}: the call ends with a timeout`, { r });
    const job = [...server.jobs.values()].find((j) => j.args.topic === topic);
    await bounded(
      until(() => job?.cancelled === true),
      `${era}: the job is cancelled`,
    );
    t.equal(job?.cancelled, true, `${era}: nobody can reach the job any more, so it was stopped`);
  }
});
