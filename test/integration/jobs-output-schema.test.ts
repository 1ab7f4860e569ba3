/**
 * A job rule's start tool is listed with the `outputSchema` of the tool whose result its callers receive (the result
 * tool, else the status tool, else none; src/tasks/jobs/job-listing.ts, docs/jobs.md), so that the official clients, which
 * check a tool's structured result against the schema it was listed with, accept every answer: the job fixture's
 * summary shape (test/fixtures/job-server.ts, `typed`: start, status and result registered with `outputSchema`) behind
 * the real gateway, in front of servers of both eras, called by SDK 1.32.2 with and without `task` and by the v2 client
 * with and without the tasks extension. Also: a list served in pages (the result tool on another page than the start
 * tool), and a finished job's `statusMessage` (its final status's, never the progress of an earlier poll).
 */
import { Client as LegacySdkClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { Client as ModernSdkClient, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import t, { type Test } from 'tap';
import { startJobServer, TYPED_JOB_RULES, type JobServer } from '../fixtures/job-server.js';
import { bounded, legacyClient, modernClient } from '../helpers/era-clients.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { createTask, DECLARING, pollTask, pollToEnd, TERMINAL } from '../helpers/task-helpers.js';

type Rules = Record<string, unknown>;
type Tool = { name: string; outputSchema?: Record<string, unknown> };

/** A gateway in front of `upstream` with these tool rules, listening on loopback. */
async function gatewayFor(t: Test, upstream: string, tools: Rules): Promise<string> {
  const upstreams = [{ name: 'jobs', path: '/mcp', url: upstream, tools: { ...tools, '*': { task: 'native' } } }];
  const gateway = await startGateway({ upstreams });
  t.teardown(() => gateway.close());
  return gateway.url;
}

/** The summary rule with its `job` changed by `change`. */
function summaryRule(change: (job: Record<string, unknown>) => Record<string, unknown>): Rules {
  const rule = TYPED_JOB_RULES.start_summary;
  return { start_summary: { ...rule, job: change({ ...rule.job }) } };
}

/** A 2025-11-25 SDK 1.32.2 client that takes no task. */
async function legacyPlain(t: Test, url: string): Promise<LegacySdkClient> {
  const client = new LegacySdkClient({ name: 'jobs-schema-legacy', version: '1.0.0' }, { capabilities: {} });
  await bounded(client.connect(new LegacyTransport(new URL(url))), 'legacy connect');
  t.teardown(() => client.close());
  return client;
}

/** A 2026-07-28 v2 client that takes no task (it does not declare the extension). */
async function modernPlain(t: Test, url: string): Promise<ModernSdkClient> {
  const client = new ModernSdkClient({ name: 'jobs-schema-modern', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
  await bounded(client.connect(new StreamableHTTPClientTransport(new URL(url))), 'modern connect');
  t.teardown(() => client.close());
  return client;
}

/** The upstream's own tools/list, page by page, read straight from the fixture (as a client of its era would). */
async function upstreamPages(t: Test, server: JobServer): Promise<Tool[][]> {
  const pages: Tool[][] = [];
  const legacy = server.era === 'legacy' ? await legacyPlain(t, server.url) : undefined;
  let cursor: string | undefined;
  do {
    const params = cursor ? { cursor } : {};
    const page = legacy ? await legacy.listTools(params) : (await post(server.url, 'tools/list', params)).body?.result;
    pages.push(page.tools as Tool[]);
    cursor = page.nextCursor;
  } while (cursor && pages.length < 50);
  return pages;
}

/** Every tool the upstream itself lists, every page, by name. */
async function upstreamTools(t: Test, server: JobServer): Promise<Map<string, Tool>> {
  return new Map((await upstreamPages(t, server)).flat().map((x) => [x.name, x]));
}

/** Whether `result`'s structuredContent conforms to `schema`, by the validator SDK 1.32.2's client uses. */
function conforms(schema: Record<string, unknown> | undefined, result: any): { valid: boolean; errorMessage?: string } {
  if (schema === undefined) return { valid: true };
  if (result?.structuredContent === undefined) return { valid: false, errorMessage: 'no structuredContent' };
  const { valid, errorMessage } = new AjvJsonSchemaValidator().getValidator(schema)(result.structuredContent);
  return valid ? { valid } : { valid, errorMessage: String(errorMessage) };
}

const REPORT = (topic: string) => ({ report: { topic, sections: 3 } });

for (const era of ['legacy', 'modern'] as const) {
  t.test(`in front of a ${era === 'legacy' ? '2025-11-25' : '2026-07-28'} job server whose tools have output schemas`, async (t) => {
    const server = await startJobServer({ era, stepMs: 20, typed: true });
    t.teardown(() => server.close());
    const url = await gatewayFor(t, server.url, TYPED_JOB_RULES);
    const own = await upstreamTools(t, server);
    const resultSchema = own.get('summary_result')?.outputSchema;
    t.ok(resultSchema && own.get('start_summary')?.outputSchema, 'the upstream lists both schemas');
    t.notSame(own.get('start_summary')?.outputSchema, resultSchema, "the start tool's own schema is another");
    let seq = 0;
    const topic = (what: string) => `${era}-${what}-${++seq}`;

    t.test("both client eras see the start tool with the result tool's outputSchema", async (t) => {
      const legacy = (await (await legacyPlain(t, url)).listTools()).tools.find((x) => x.name === 'start_summary');
      t.same(legacy?.outputSchema, resultSchema, 'a 2025-11-25 client');
      const modern = (await (await modernPlain(t, url)).listTools()).tools.find((x) => x.name === 'start_summary');
      t.same(modern?.outputSchema, resultSchema, 'a 2026-07-28 client');
    });

    t.test('SDK 1.32.2 without task: the call validates against the listed schema', async (t) => {
      const client = await legacyPlain(t, url);
      await client.listTools(); // the client keeps each listed tool's validator
      const name = topic('plain');
      const result = await bounded(client.callTool({ name: 'start_summary', arguments: { topic: name } }, CallToolResultSchema, { timeout: 15_000 }), 'call');
      t.same(result.structuredContent, REPORT(name), "the result tool's report");
      t.same(conforms(resultSchema, result), { valid: true }, 'it conforms to the listed schema');
    });

    t.test('SDK 1.32.2 with task: callToolStream validates the tasks/result payload', async (t) => {
      const client = await legacyClient(url);
      t.teardown(() => client.close());
      const listed = (await client.sdk.listTools()).tools.find((x) => x.name === 'start_summary')?.outputSchema;
      const name = topic('task');
      const created = await client.start('start_summary', { topic: name });
      const outcome = await client.settle(created.taskId);
      t.equal(outcome.status, 'completed', 'no validation error from the stream', { outcome });
      t.same(outcome.result?.structuredContent, REPORT(name));
      const payload = await client.payload!(created.taskId);
      t.same('result' in payload && conforms(listed, payload.result), { valid: true }, 'tasks/result conforms to the listed schema', { payload });
    });

    t.test('v2 client without the tasks extension: the call validates against the listed schema', async (t) => {
      const client = await modernPlain(t, url);
      await client.listTools();
      const name = topic('plain-v2');
      const result: any = await bounded(client.callTool({ name: 'start_summary', arguments: { topic: name } }, { timeout: 15_000 } as never), 'call');
      t.same(result.structuredContent, REPORT(name));
      t.same(conforms(resultSchema, result), { valid: true });
    });

    t.test('v2 client with the tasks extension: the terminal tasks/get conforms', async (t) => {
      const client = await modernClient(url);
      t.teardown(() => client.close());
      const name = topic('task-v2');
      const created = await client.start('start_summary', { topic: name });
      const outcome = await client.settle(created.taskId);
      t.equal(outcome.status, 'completed', 'completed', { outcome });
      t.same(outcome.result?.structuredContent, REPORT(name));
      // ext-tasks does not check results against schemas itself: the check is the one its host would make.
      const listed = (await post(url, 'tools/list', {}, { capabilities: DECLARING })).body?.result?.tools?.find((x: Tool) => x.name === 'start_summary');
      t.same(listed?.outputSchema, resultSchema, 'listed to it with the result tool’s schema');
      const got = await client.lookup(created.taskId);
      t.same('task' in got && conforms(listed?.outputSchema, got.task.result), { valid: true }, 'the result inline in tasks/get conforms', { got });
    });

    t.test('without a result tool, the start tool is listed with the status tool’s schema; the final status conforms', async (t) => {
      const noResult = await gatewayFor(
        t,
        server.url,
        summaryRule(({ result: _r, ...job }) => job),
      );
      const statusSchema = own.get('summary_status')?.outputSchema;
      const legacy = await legacyPlain(t, noResult);
      t.same((await legacy.listTools()).tools.find((x) => x.name === 'start_summary')?.outputSchema, statusSchema);
      const result = await bounded(legacy.callTool({ name: 'start_summary', arguments: { topic: topic('status') } }), 'call');
      t.same(result.structuredContent, { state: 'done' }, 'the final status is the answer');
      t.same(conforms(statusSchema, result), { valid: true });
      const modern = await modernPlain(t, noResult);
      t.same((await modern.listTools()).tools.find((x) => x.name === 'start_summary')?.outputSchema, statusSchema);
      const r2: any = await bounded(modern.callTool({ name: 'start_summary', arguments: { topic: topic('status-v2') } }), 'call');
      t.same(r2.structuredContent, { state: 'done' });
    });

    t.test('a result tool without a schema: the start tool is listed with none, and its text answer is accepted', async (t) => {
      const viaEcho = await gatewayFor(
        t,
        server.url,
        summaryRule((job) => ({ ...job, result: { tool: 'echo', arguments: { text: 'summary {{id}} written' } } })),
      );
      const legacy = await legacyPlain(t, viaEcho);
      t.equal((await legacy.listTools()).tools.find((x) => x.name === 'start_summary')?.outputSchema, undefined, 'no outputSchema');
      const result = await bounded(legacy.callTool({ name: 'start_summary', arguments: { topic: topic('echo') } }), 'call');
      t.match((result.content as Array<{ text: string }>)[0]?.text, /^summary sum-\d+ written$/, 'SDK 1.32.2 takes the text');
      const modern = await modernPlain(t, viaEcho);
      t.equal((await modern.listTools()).tools.find((x) => x.name === 'start_summary')?.outputSchema, undefined);
      const r2: any = await bounded(modern.callTool({ name: 'start_summary', arguments: { topic: topic('echo-v2') } }), 'call');
      t.match(r2.content[0]?.text, /^summary sum-\d+ written$/, 'and so does the v2 client');
    });

    t.test("a finished job's statusMessage is its final status's: the running percent is gone", async (t) => {
      const quick = await gatewayFor(t, server.url, { start_summary: { ...TYPED_JOB_RULES.start_summary, pollIntervalMs: 50 } });
      const created = await createTask(quick, 'start_summary', { topic: topic('percent'), steps: 10, stepMs: 100 });
      const running = await pollTask(quick, created.taskId, (r) => r.statusMessage !== undefined || TERMINAL.includes(r.status));
      t.match(running.at(-1), { status: 'working', statusMessage: /^\d+$/ }, 'while it runs, the numeric percent as its text');
      const end = (await pollToEnd(quick, created.taskId)).at(-1);
      t.equal(end.status, 'completed');
      t.notOk('statusMessage' in end, 'the completed task keeps no progress message', { end });
      const legacy = await legacyClient(quick);
      t.teardown(() => legacy.close());
      const other = await legacy.start('start_summary', { topic: topic('percent-legacy'), steps: 10, stepMs: 100 });
      await legacy.settle(other.taskId);
      const seen = await legacy.lookup(other.taskId);
      t.match(seen, { status: 'completed' });
      t.notOk('task' in seen && 'statusMessage' in seen.task, 'nor does a 2025-11-25 client see one', { seen });
    });
  });
}

t.test('a tools/list in pages: the start tool gets the schema of a result tool listed on another page', async (t) => {
  for (const era of ['legacy', 'modern'] as const) {
    const server = await startJobServer({ era, stepMs: 20, typed: true, toolsPageSize: 2 });
    t.teardown(() => server.close());
    const url = await gatewayFor(t, server.url, TYPED_JOB_RULES);
    const pages = await upstreamPages(t, server);
    const pageOf = (name: string) => pages.findIndex((p) => p.some((x) => x.name === name));
    t.ok(pageOf('start_summary') >= 0 && pageOf('summary_result') > pageOf('start_summary'), `${era}: upstream, the result tool is on a later page`);
    const resultSchema = pages.flat().find((x) => x.name === 'summary_result')?.outputSchema;
    t.ok(resultSchema, `${era}: with its schema`);

    // A 2025-11-25 client reads page by page (SDK 1.32.2 keeps the validators of the page it read last).
    const legacy = await legacyPlain(t, url);
    let listed: Tool | undefined;
    let cursor: string | undefined;
    do {
      const page = await legacy.listTools(cursor ? { cursor } : {});
      listed = (page.tools as Tool[]).find((x) => x.name === 'start_summary');
      cursor = page.nextCursor;
    } while (!listed && cursor);
    t.same(listed?.outputSchema, resultSchema, `${era}: the 2025-11-25 client's page lists the result tool's schema`);
    const name = `${era}-paged`;
    const result = await bounded(legacy.callTool({ name: 'start_summary', arguments: { topic: name } }), 'call');
    t.same(result.structuredContent, REPORT(name), `${era}: SDK 1.32.2 accepts the answer`);

    // The v2 client walks every page itself.
    const modern = await modernPlain(t, url);
    const all = (await modern.listTools()).tools as Tool[];
    t.same(all.find((x) => x.name === 'start_summary')?.outputSchema, resultSchema, `${era}: the v2 client's list too`);
    t.notOk(
      all.some((x) => x.name.startsWith('summary_')),
      `${era}: the plumbing stays hidden on every page`,
    );
    const r2: any = await bounded(modern.callTool({ name: 'start_summary', arguments: { topic: `${era}-paged-v2` } }), 'call');
    t.same(r2.structuredContent, REPORT(`${era}-paged-v2`), `${era}: the v2 client accepts the answer`);
  }
});
