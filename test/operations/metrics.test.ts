/**
 * Metrics: `/metrics` serves the Prometheus text exposition format (checked by a strict parser below: HELP and TYPE
 * lines, sample syntax, histogram consistency), counts requests by era and outcome and a wrapped task's life by
 * upstream and tool, and keeps its label sets bounded under a flood of distinct tool names and methods. A real
 * gateway in front of the real sync-only legacy fixture, raw modern requests and a real legacy SDK client.
 */
import t, { type Test } from 'tap';
import { ConfigError, parseConfig } from '../../src/config/index.js';
import { BoundedLabels, methodLabel } from '../../src/proxy/metrics.js';
import { legacyClient } from '../helpers/era-clients.js';
import { post } from '../helpers/modern.js';
import { startStack, type Stack } from '../helpers/stack.js';
import { createTask, DECLARING, pollToEnd } from '../helpers/task-helpers.js';
import { waitForStats } from '../fixtures/legacy-task-tools.js';
import { postgresBinaryMissing, startPostgres } from '../helpers/postgres-server.js';
import { serverBinaryMissing, startRedis } from '../helpers/redis-server.js';

// ── A strict reader of the text exposition format (Prometheus "Exposition formats", text format 0.0.4) ─────────────

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}
interface Family {
  name: string;
  help?: string;
  type?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** The family a sample belongs to (a histogram's `_bucket`, `_sum`, `_count` samples belong to its name). */
function familyOf(sample: string, families: Map<string, Family>): Family | undefined {
  if (families.has(sample)) return families.get(sample);
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (sample.endsWith(suffix)) {
      const f = families.get(sample.slice(0, -suffix.length));
      if (f && (f.type === 'histogram' || f.type === 'summary')) return f;
    }
  }
  return undefined;
}

function parseValue(s: string): number {
  if (s === '+Inf') return Infinity;
  if (s === '-Inf') return -Infinity;
  // prom-client writes NaN as `Nan` (e.g. the event-loop lag mean before its first sample); Prometheus reads sample
  // values with Go's ParseFloat, which takes any case of "nan", so both spellings are valid exposition.
  if (s === 'NaN' || s === 'Nan') return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(s)) throw new Error(`not a sample value: ${JSON.stringify(s)}`);
  return Number(s);
}

/** Reads `{a="x",b="y"}` from `text` at `i`; returns the labels and the index after `}`. */
function parseLabels(text: string, i: number, line: string): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  i++; // {
  for (;;) {
    if (text[i] === '}') return [labels, i + 1];
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`label without "=": ${line}`);
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name ${JSON.stringify(name)}: ${line}`);
    if (name in labels) throw new Error(`label ${name} twice: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`label value not quoted: ${line}`);
    let j = eq + 2;
    let value = '';
    for (;;) {
      const c = text[j];
      if (c === undefined) throw new Error(`unterminated label value: ${line}`);
      if (c === '"') break;
      if (c === '\\') {
        const n = text[j + 1];
        if (n === '\\') value += '\\';
        else if (n === '"') value += '"';
        else if (n === 'n') value += '\n';
        else throw new Error(`bad escape \\${n}: ${line}`);
        j += 2;
        continue;
      }
      if (c === '\n') throw new Error(`raw newline in a label value: ${line}`);
      value += c;
      j++;
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') throw new Error(`expected "," or "}" after a label: ${line}`);
  }
}

/** Parses the whole exposition; throws naming the first line that breaks the format. */
function parseExposition(text: string): Map<string, Family> {
  const families = new Map<string, Family>();
  const sampled = new Set<string>();
  if (!text.endsWith('\n')) throw new Error('the exposition does not end with a newline');
  for (const line of text.slice(0, -1).split('\n')) {
    if (line === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
      if (!m) {
        if (/^# (HELP|TYPE)/.test(line)) throw new Error(`malformed ${line}`);
        continue; // a plain comment
      }
      const [, kind, name, rest] = m as unknown as [string, 'HELP' | 'TYPE', string, string];
      if (!METRIC_NAME.test(name)) throw new Error(`bad metric name in ${line}`);
      let f = families.get(name);
      if (!f) families.set(name, (f = { name, samples: [] }));
      if (sampled.has(name)) throw new Error(`${kind} after samples of ${name}`);
      if (kind === 'HELP') {
        if (f.help !== undefined) throw new Error(`second HELP for ${name}`);
        if (/\\[^\\n]/.test(rest.replace(/\\\\/g, ''))) throw new Error(`bad escape in HELP: ${line}`);
        f.help = rest;
      } else {
        if (f.type !== undefined) throw new Error(`second TYPE for ${name}`);
        if (!TYPES.has(rest)) throw new Error(`unknown TYPE ${rest}`);
        f.type = rest;
      }
      continue;
    }
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`not a sample: ${line}`);
    const name = line.slice(0, nameEnd);
    if (!METRIC_NAME.test(name)) throw new Error(`bad sample name: ${line}`);
    let labels: Record<string, string> = {};
    let i = nameEnd;
    if (line[i] === '{') [labels, i] = parseLabels(line, i, line);
    if (line[i] !== ' ') throw new Error(`no space before the value: ${line}`);
    const parts = line.slice(i + 1).split(' ');
    if (parts.length > 2 || parts[0] === '') throw new Error(`bad value/timestamp: ${line}`);
    const value = parseValue(parts[0] as string);
    if (parts[1] !== undefined && !/^-?\d+$/.test(parts[1])) throw new Error(`bad timestamp: ${line}`);
    const f = familyOf(name, families);
    if (!f) throw new Error(`sample ${name} before (or without) its TYPE`);
    if (f.type === undefined || f.help === undefined) throw new Error(`${f.name} has no HELP or TYPE before its samples`);
    if (f.type === 'counter' && !(value >= 0)) throw new Error(`negative counter: ${line}`);
    sampled.add(f.name);
    f.samples.push({ name, labels, value });
  }
  // Histograms: cumulative buckets ending in +Inf equal to _count, per label set.
  for (const f of families.values()) {
    if (f.type !== 'histogram') continue;
    const series = new Map<string, { buckets: Array<[number, number]>; count?: number; sum?: number }>();
    for (const s of f.samples) {
      const { le, ...rest } = s.labels;
      const key = JSON.stringify(Object.entries(rest).sort());
      let e = series.get(key);
      if (!e) series.set(key, (e = { buckets: [] }));
      if (s.name === `${f.name}_bucket`) {
        if (le === undefined) throw new Error(`${f.name}_bucket without le`);
        e.buckets.push([parseValue(le), s.value]);
      } else if (s.name === `${f.name}_count`) e.count = s.value;
      else if (s.name === `${f.name}_sum`) e.sum = s.value;
      else throw new Error(`unexpected sample ${s.name} in histogram ${f.name}`);
    }
    for (const [key, e] of series) {
      const last = e.buckets[e.buckets.length - 1];
      if (!last || last[0] !== Infinity) throw new Error(`${f.name}${key}: no +Inf bucket`);
      for (let k = 1; k < e.buckets.length; k++) {
        const [prevLe, prevN] = e.buckets[k - 1] as [number, number];
        const [le, n] = e.buckets[k] as [number, number];
        if (!(le > prevLe) || n < prevN) throw new Error(`${f.name}${key}: buckets not cumulative`);
      }
      if (e.count !== last[1] || e.sum === undefined) throw new Error(`${f.name}${key}: _count is not the +Inf bucket, or no _sum`);
    }
  }
  return families;
}

t.test('the exposition parser is strict (it can fail)', async (t) => {
  const ok = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} 3\n';
  t.equal(parseExposition(ok).get('a_total')?.samples[0]?.value, 3);
  t.throws(() => parseExposition('a_total 3\n'), /before/);
  t.throws(() => parseExposition('# HELP a_total A.\n# TYPE a_total counter\na_total{x=1} 3\n'), /quoted/);
  t.throws(() => parseExposition('# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} three\n'), /value/);
  t.throws(() => parseExposition('# HELP a A.\n# TYPE a gauge\n# TYPE a gauge\n'), /second TYPE/);
  t.throws(() => parseExposition('# HELP h H.\n# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\nh_sum 0\n'), /cumulative/);
});

// ── The gateway ──────────────────────────────────────────────────────────────────────────────────────────────────

const MAX_TOOLS = 4;

async function scrape(stack: Stack): Promise<{ families: Map<string, Family>; contentType: string }> {
  const res = await fetch(new URL('/metrics', stack.url));
  if (res.status !== 200) throw new Error(`/metrics: HTTP ${res.status}`);
  return { families: parseExposition(await res.text()), contentType: res.headers.get('content-type') ?? '' };
}

/** The value of one sample whose labels include `labels` (summed over the rest), 0 when none. */
function value(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const f = familyOf(name, families);
  if (!f) throw new Error(`no family ${name}`);
  return f.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((n, s) => n + s.value, 0);
}

/**
 * Scrapes until `check` holds for the families (bounded): for gauges that settle just after what the client saw (an
 * owned task's call leaves the live set right after its record is final).
 */
async function scrapeUntil(stack: Stack, what: string, check: (m: Map<string, Family>) => boolean): Promise<Map<string, Family>> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const m = (await scrape(stack)).families;
    if (check(m)) return m;
    if (Date.now() > deadline) throw new Error(`not within 5 s: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The distinct values of `label` among a family's samples (optionally narrowed). */
function labelValues(families: Map<string, Family>, name: string, label: string, where: Record<string, string> = {}): Set<string> {
  const f = families.get(name);
  const out = new Set<string>();
  for (const s of f?.samples ?? []) {
    if (Object.entries(where).every(([k, v]) => s.labels[k] === v) && s.labels[label] !== undefined) out.add(s.labels[label] as string);
  }
  return out;
}

async function stackFor(t: Test): Promise<Stack> {
  const stack = await startStack(
    { tasks: { pollBurst: 1_000_000 }, server: { metrics: { maxToolLabels: MAX_TOOLS } } },
    { tools: { confirm_delete: { task: 'auto', afterMs: 30_000 }, '*': { task: 'always' } } },
    { tasks: 'sync', taskJobDelayMs: 0 },
  );
  t.teardown(() => stack.close());
  return stack;
}

t.test("a wrapped task's life shows in the counters, with its upstream and tool", async (t) => {
  const stack = await stackFor(t);
  const before = await scrape(stack);
  t.match(before.contentType, /^text\/plain; version=0\.0\.4/, 'the Prometheus text format');
  for (const name of [
    'mcp_gateway_tasks_created_total',
    'mcp_gateway_tasks_completed_total',
    'mcp_gateway_tasks_failed_total',
    'mcp_gateway_tasks_cancelled_total',
    'mcp_gateway_tasks_expired_total',
  ]) {
    t.equal(before.families.get(name)?.type, 'counter', `${name} is a counter`);
    t.equal(value(before.families, name), 0, `${name} starts at 0`);
  }

  // created → completed
  const done = await createTask(stack.url, 'slow_compute', { seconds: 0, label: 'x' });
  t.equal((await pollToEnd(stack.url, done.taskId)).at(-1).status, 'completed');
  // created → failed (the upstream's JSON-RPC error)
  const failed = await createTask(stack.url, 'protocol_error_job', {});
  t.equal((await pollToEnd(stack.url, failed.taskId)).at(-1).status, 'failed');
  // created → cancelled (held by its gate upstream until cancelled)
  const held = await createTask(stack.url, 'gated_job', { gate: 'never' });
  await waitForStats(stack.fixture, (s) => s.running.gated_job === 1);
  await scrapeUntil(stack, 'one owned task runs here now', (m) => value(m, 'mcp_gateway_tasks_live') === 1);
  t.pass('one owned task runs here now (the gated one)');
  const cancel = await post(stack.url, 'tasks/cancel', { taskId: held.taskId }, { capabilities: DECLARING });
  t.equal(cancel.status, 200);
  t.equal((await pollToEnd(stack.url, held.taskId)).at(-1).status, 'cancelled');

  const after = await scrapeUntil(stack, 'no owned task runs any more', (m) => value(m, 'mcp_gateway_tasks_live') === 0);
  const up = { upstream: 'fixture' };
  t.equal(value(after, 'mcp_gateway_tasks_created_total', { ...up, tool: 'slow_compute' }), 1);
  t.equal(value(after, 'mcp_gateway_tasks_completed_total', { ...up, tool: 'slow_compute' }), 1);
  t.equal(value(after, 'mcp_gateway_tasks_created_total', { ...up, tool: 'protocol_error_job' }), 1);
  t.equal(value(after, 'mcp_gateway_tasks_failed_total', { ...up, tool: 'protocol_error_job' }), 1);
  t.equal(value(after, 'mcp_gateway_tasks_created_total', { ...up, tool: 'gated_job' }), 1);
  t.equal(value(after, 'mcp_gateway_tasks_cancelled_total', { ...up, tool: 'gated_job' }), 1);
  t.equal(value(after, 'mcp_gateway_tasks_created_total'), 3, 'three created in all');
  t.equal(value(after, 'mcp_gateway_tasks_completed_total'), 1);
  t.equal(value(after, 'mcp_gateway_tasks_failed_total'), 1);
  t.equal(value(after, 'mcp_gateway_tasks_cancelled_total'), 1);

  // The requests that drove them: modern, through the gateway's face, by outcome.
  t.equal(
    value(after, 'mcp_gateway_requests_total', {
      method: 'tools/call',
      client_era: 'modern',
      upstream_era: 'legacy',
      mode: 'gateway',
      outcome: 'task_created',
    }),
    3,
  );
  t.equal(value(after, 'mcp_gateway_requests_total', { method: 'tasks/cancel', client_era: 'modern', outcome: 'ok' }), 1);
  // At least one poll per task, whatever it found (a poll of the cancelled task counts as outcome `cancelled`).
  t.ok(value(after, 'mcp_gateway_requests_total', { method: 'tasks/get', client_era: 'modern' }) >= 3, 'the polls are counted');
  t.equal(after.get('mcp_gateway_request_duration_seconds')?.type, 'histogram');
  t.equal(value(after, 'mcp_gateway_request_duration_seconds_count', { method: 'tools/call', client_era: 'modern' }), 3, 'each call timed');
});

t.test('requests by era and outcome; MRTR rounds and held calls; errors by catalog code', async (t) => {
  const stack = await stackFor(t);

  // An MRTR round: the call is held for the client's answer.
  const round = await post(stack.url, 'tools/call', { name: 'confirm_delete', arguments: { filename: 'a.txt' } }, { capabilities: DECLARING });
  t.equal(round.body.result?.resultType, 'input_required');
  let m = (await scrape(stack)).families;
  t.equal(value(m, 'mcp_gateway_mrtr_rounds_total', { upstream: 'fixture' }), 1, 'one round asked');
  t.equal(value(m, 'mcp_gateway_mrtr_held_calls'), 1, 'its call is held');
  t.ok(value(m, 'mcp_gateway_upstream_sessions', { upstream: 'fixture', era: 'legacy' }) >= 1, 'the held call holds an upstream session');
  t.equal(value(m, 'mcp_gateway_upstream_sessions', { upstream: 'fixture', era: 'modern' }), 0, 'the stateless client holds none');
  t.equal(value(m, 'mcp_gateway_requests_total', { method: 'tools/call', client_era: 'modern', outcome: 'input_required' }), 1);

  // A refused request: counted by its catalog code.
  const bad = await post(stack.url, 'tasks/get', { taskId: 'gwt_nope' }, { capabilities: DECLARING });
  t.ok(bad.body.error, 'refused');
  m = (await scrape(stack)).families;
  t.same(
    labelValues(m, 'mcp_gateway_requests_total', 'outcome', { method: 'tasks/get' }),
    new Set(['GW_TASK_UNKNOWN']),
    'the refusal is counted by its catalog code',
  );

  // A legacy client (the face serves it: rules wrap tools) runs a task to its end.
  const legacy = await legacyClient(stack.url);
  t.teardown(() => legacy.close());
  const created = await legacy.start('slow_compute', { seconds: 0, label: 'l' });
  t.equal((await legacy.settle(created.taskId)).status, 'completed');
  m = (await scrape(stack)).families;
  t.equal(value(m, 'mcp_gateway_client_sessions', { upstream: 'fixture' }), 1, 'the legacy face holds its session');
  t.same(labelValues(m, 'mcp_gateway_streams', 'kind', { upstream: 'fixture' }), new Set(['listen', 'get']), 'streams by kind');
  t.equal(
    value(m, 'mcp_gateway_requests_total', { method: 'initialize', client_era: 'legacy', mode: 'gateway', outcome: 'ok' }),
    1,
    'the legacy session opened',
  );
  t.equal(value(m, 'mcp_gateway_requests_total', { method: 'tools/call', client_era: 'legacy', upstream_era: 'legacy', outcome: 'task_created' }), 1);
  t.equal(value(m, 'mcp_gateway_tasks_completed_total', { upstream: 'fixture', tool: 'slow_compute' }), 1);
  t.same(labelValues(m, 'mcp_gateway_requests_total', 'client_era'), new Set(['modern', 'legacy']), 'both eras counted');

  // The upstream goes away: what its failure maps to in the catalog is counted by kind.
  t.equal(value(m, 'mcp_gateway_upstream_errors_total'), 0, 'no upstream error so far');
  await stack.fixture.close();
  const failed = await post(stack.url, 'tools/list', {}, { capabilities: DECLARING });
  t.ok(failed.body.error, 'the request fails');
  m = (await scrape(stack)).families;
  const kinds = labelValues(m, 'mcp_gateway_upstream_errors_total', 'kind', { upstream: 'fixture' });
  t.ok(kinds.size >= 1 && [...kinds].every((k) => /^GW_UPSTREAM_[A-Z_]+$/.test(k)), `counted by catalog kind (${[...kinds].join(', ')})`);
  t.equal(value(m, 'mcp_gateway_upstream_up', { upstream: 'fixture' }), 0, 'and the upstream is down');
});

/** The shared stores, each on a server of its own that the test stops. */
const SHARED_STORES = [
  {
    kind: 'redis',
    skip: serverBinaryMissing(),
    start: async () => {
      const s = await startRedis();
      return { store: { kind: 'redis', url: s.url }, stop: () => s.stop(), dispose: () => s.stop() };
    },
  },
  {
    kind: 'postgres',
    skip: postgresBinaryMissing(),
    start: async () => {
      const s = await startPostgres();
      return { store: { kind: 'postgres', url: s.url }, stop: () => s.stop(), dispose: () => s.dispose() };
    },
  },
] as const;

for (const backend of SHARED_STORES) {
  t.test(
    `${backend.kind}: store calls are timed by store and operation; errors counted by operation and catalog code`,
    { skip: backend.skip ?? false },
    async (t) => {
      const server = await backend.start();
      t.teardown(() => server.dispose());
      const stack = await startStack(
        {
          tasks: { pollBurst: 1_000_000 },
          store: { ...server.store, commandTimeoutMs: 500, connectTimeoutMs: 5_000 },
          secret: { value: 'x'.repeat(32) },
        },
        { tools: { '*': { task: 'always' } } },
        { tasks: 'sync', taskJobDelayMs: 0 },
      );
      t.teardown(() => stack.close());
      // A task still running: every poll of it reads the store (a finished one may be answered from the Postgres
      // store's copy of finished records, which is the point of that copy).
      const task = await createTask(stack.url, 'slow_compute', { seconds: 60, label: 's' });
      const before = (await scrape(stack)).families;
      t.equal(value(before, 'mcp_gateway_store_errors_total'), 0, `none while ${backend.kind} answers`);
      t.equal(before.get('mcp_gateway_store_duration_seconds')?.type, 'histogram');
      t.ok(value(before, 'mcp_gateway_store_duration_seconds_count', { store: backend.kind, operation: 'create' }) >= 1, 'the task creation timed');
      const gets = value(before, 'mcp_gateway_store_duration_seconds_count', { store: backend.kind, operation: 'get' });
      await post(stack.url, 'tasks/get', { taskId: task.taskId }, { capabilities: DECLARING });
      const after = (await scrape(stack)).families;
      t.ok(value(after, 'mcp_gateway_store_duration_seconds_count', { store: backend.kind, operation: 'get' }) > gets, 'a poll’s read timed');
      await server.stop();
      const refused = await post(stack.url, 'tasks/get', { taskId: task.taskId }, { capabilities: DECLARING });
      t.ok(refused.body.error, 'the store is unavailable');
      const m = (await scrape(stack)).families;
      t.ok(value(m, 'mcp_gateway_store_errors_total', { operation: 'get', kind: 'GW_STORE_UNAVAILABLE' }) >= 1, 'the failed get is counted');
      t.same(labelValues(m, 'mcp_gateway_requests_total', 'outcome', { method: 'tasks/get' }), new Set(['ok', 'GW_STORE_UNAVAILABLE']));
    },
  );
}

t.test('the default (memory) store is timed too', async (t) => {
  const stack = await stackFor(t);
  await createTask(stack.url, 'slow_compute', { seconds: 0, label: 'm' });
  const m = (await scrape(stack)).families;
  t.ok(value(m, 'mcp_gateway_store_duration_seconds_count', { store: 'memory', operation: 'create' }) >= 1);
});

t.test('a flood of distinct tool names and methods keeps the label sets bounded', async (t) => {
  const stack = await stackFor(t);
  // Each distinct name becomes a task (rule `*: always`) that fails upstream (no such tool): each is audited.
  const names = Array.from({ length: 3 * MAX_TOOLS }, (_, i) => `no_such_tool_${i}`);
  for (const name of names) {
    const r = await post(stack.url, 'tools/call', { name, arguments: {} }, { capabilities: DECLARING });
    t.equal(r.status, 200, `${name} answered`);
  }
  // And as many made-up methods (forwarded; the upstream does not know them).
  for (let i = 0; i < 3 * MAX_TOOLS; i++) await post(stack.url, `made/up/${i}`, {}, { capabilities: DECLARING });

  const m = (await scrape(stack)).families;
  const tools = labelValues(m, 'mcp_gateway_tasks_created_total', 'tool', { upstream: 'fixture' });
  t.ok(tools.size <= MAX_TOOLS + 1, `at most ${MAX_TOOLS} tool names and "other" (${[...tools].join(', ')})`);
  t.ok(tools.has('other'), 'the rest count as other');
  t.equal(value(m, 'mcp_gateway_tasks_created_total', { upstream: 'fixture' }), names.length, 'every task is still counted');
  const methods = labelValues(m, 'mcp_gateway_requests_total', 'method');
  t.notOk(
    [...methods].some((x) => x.startsWith('made/up')),
    'no made-up method is a label value',
  );
  t.ok(methods.has('other'), 'they count as other');
  t.equal(value(m, 'mcp_gateway_requests_total', { method: 'other' }), 3 * MAX_TOOLS);
  // No identity in any label: principals, task ids and session ids never appear. One check over every label, since
  // which series exist (the runtime's GC kinds among them) follows the run.
  const labels = [...m.values()].flatMap((f) => f.samples.flatMap((s) => Object.values(s.labels).map((v) => ({ name: s.name, v }))));
  t.ok(labels.length > 0, 'labels were read');
  t.same(
    labels.filter(({ v }) => /^gwt_|Bearer|mcp-session/i.test(v)),
    [],
    'no label value is an identity',
  );
});

t.test('label helpers: bounded by construction', async (t) => {
  const b = new BoundedLabels(2);
  t.same(
    ['a', 'b', 'c', 'a', 'd'].map((x) => b.of('u', x)),
    ['a', 'b', 'other', 'a', 'other'],
  );
  t.equal(b.of('v', 'c'), 'c', 'each upstream has its own first names');
  t.equal(methodLabel('tools/call'), 'tools/call');
  t.equal(methodLabel('x'.repeat(100)), 'other');
  t.equal(methodLabel(42), 'other');
});

t.test('the operations paths cannot be an upstream path', async (t) => {
  for (const path of ['/metrics', '/readyz', '/healthz']) {
    t.throws(() => parseConfig({ upstreams: [{ name: 'u', path, url: 'http://127.0.0.1:1/mcp' }] }), ConfigError, `${path} refused`);
  }
  t.doesNotThrow(
    () => parseConfig({ server: { metrics: { enabled: false } }, upstreams: [{ name: 'u', path: '/metrics', url: 'http://127.0.0.1:1/mcp' }] }),
    'free with metrics off',
  );
});

t.test('metrics off: no /metrics route', async (t) => {
  const stack = await startStack({ server: { metrics: { enabled: false } } });
  t.teardown(() => stack.close());
  const res = await fetch(new URL('/metrics', stack.url));
  t.equal(res.status, 404);
  await res.arrayBuffer();
});
