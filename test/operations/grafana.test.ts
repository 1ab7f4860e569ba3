// deploy/grafana/mcp-tasks-gateway.json against the gateway's real /metrics: every metric a panel's PromQL (or a
// template variable's query) reads is one the gateway serves, the datasource is the ${DS_PROMETHEUS} variable, and
// the documented families the dashboard is for are on it. A real gateway in front of the legacy fixture, scraped
// after a request so the histogram has samples.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { post } from '../helpers/modern.js';
import { startStack } from '../helpers/stack.js';

const root = new URL('../..', import.meta.url).pathname;
const DASHBOARD = 'deploy/grafana/mcp-tasks-gateway.json';
const DS = '${DS_PROMETHEUS}';

interface Target {
  expr?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  type: string;
  title?: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
}
interface Variable {
  name: string;
  type: string;
  query?: string | { query?: string };
  datasource?: { type?: string; uid?: string };
}
interface Dashboard {
  panels: Panel[];
  templating: { list: Variable[] };
}

const dashboard = JSON.parse(await readFile(join(root, DASHBOARD), 'utf8')) as Dashboard;
/** Every panel, those inside collapsed rows too. */
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]).filter((p) => p.type !== 'row');

/** PromQL words that look like names but are not metrics (functions are told apart by the `(` after them). */
const KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/** The metric names a PromQL expression reads: what is left once strings, variables, label matchers, ranges, label lists and function names are taken out. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, '""')
    .replace(/\$\{\w+\}|\$\w+/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, ' ');
  const names = [...bare.matchAll(/(?<![\w:.])([a-zA-Z_:][\w:]*)(?![\w:])(?!\s*\()/g)].map((m) => m[1] as string);
  return [...new Set(names.filter((n) => !KEYWORDS.has(n.toLowerCase())))];
}

/** The metric a `label_values(metric, label)` variable query reads. */
function variableMetric(v: Variable): string | undefined {
  const q = typeof v.query === 'string' ? v.query : v.query?.query;
  return q === undefined ? undefined : /label_values\(\s*([a-zA-Z_:][\w:]*)/.exec(q)?.[1];
}

t.test('the PromQL reader finds metrics and nothing else', async (t) => {
  t.same(
    metricNames(
      'histogram_quantile(0.99, sum by (le, method) (rate(a_seconds_bucket{upstream=~"$upstream", method!~"x|GET"}[$__rate_interval]))) / on (job) group_left (x) b_total offset 5m',
    ),
    ['a_seconds_bucket', 'b_total'],
  );
  t.same(metricNames('sum(rate(x_total[5m])) > bool 0 and up unless nope{a="sum(b)"}'), ['x_total', 'up', 'nope']);
  t.same(metricNames('1e3 * vector(1)'), []);
});

t.test('the dashboard: panels on the ${DS_PROMETHEUS} datasource variable, an upstream variable', async (t) => {
  const dsVar = dashboard.templating.list.find((v) => v.name === 'DS_PROMETHEUS');
  t.match(dsVar, { type: 'datasource', query: 'prometheus' }, 'DS_PROMETHEUS picks a Prometheus datasource');
  t.ok(panels.length >= 10, `${panels.length} panels`);
  for (const p of panels) {
    t.same(p.datasource, { type: 'prometheus', uid: DS }, `${p.title}: datasource`);
    t.ok((p.targets ?? []).length > 0, `${p.title}: has queries`);
    for (const target of p.targets ?? []) {
      t.same(target.datasource, { type: 'prometheus', uid: DS }, `${p.title}: query datasource`);
      t.ok(metricNames(target.expr ?? '').length > 0, `${p.title}: ${target.expr} reads a metric`);
    }
  }
  for (const v of dashboard.templating.list.filter((v) => v.type === 'query')) t.same(v.datasource, { type: 'prometheus', uid: DS }, `variable ${v.name}`);
  t.ok(variableMetric(dashboard.templating.list.find((v) => v.name === 'upstream') as Variable), 'an upstream variable from label_values');
});

t.test("every metric the dashboard queries is in a real gateway's /metrics", async (t) => {
  const stack = await startStack();
  t.teardown(() => stack.close());
  const listed = await post(stack.url, 'tools/list');
  t.equal(listed.status, 200, 'one request, so the request histogram has samples');
  const res = await fetch(new URL('/metrics', stack.url));
  t.equal(res.status, 200);
  const text = await res.text();
  // Families by their TYPE line: a labelled counter nobody has counted yet still declares itself.
  const types = new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]));
  t.ok(types.size > 10, `${types.size} families served`);
  const served = (name: string): boolean => {
    if (types.has(name)) return true;
    const suffix = /_(bucket|sum|count)$/.exec(name);
    if (!suffix) return false;
    const base = types.get(name.slice(0, -suffix[0].length));
    // _bucket only on histograms; _sum and _count on histograms and summaries.
    return base === 'histogram' || (base === 'summary' && suffix[1] !== 'bucket');
  };
  const queried = new Map<string, string[]>();
  const note = (name: string, where: string) => queried.set(name, [...(queried.get(name) ?? []), where]);
  for (const p of panels) for (const target of p.targets ?? []) for (const n of metricNames(target.expr ?? '')) note(n, `panel "${p.title}"`);
  for (const v of dashboard.templating.list) {
    const n = variableMetric(v);
    if (n) note(n, `variable ${v.name}`);
  }
  const missing = [...queried].filter(([n]) => !served(n)).map(([n, where]) => `${n} (${where.join(', ')})`);
  t.same(missing, [], 'no panel or variable queries a metric the gateway does not serve');
  // What the dashboard is for (docs/operations.md, Metrics): requests by outcome, latency quantiles, tasks, sessions, streams.
  const bases = new Set([...queried.keys()].map((n) => n.replace(/_(bucket|sum|count)$/, '')));
  for (const n of [
    'mcp_gateway_requests_total',
    'mcp_gateway_request_duration_seconds',
    'mcp_gateway_tasks_live',
    'mcp_gateway_tasks_created_total',
    'mcp_gateway_tasks_failed_total',
    'mcp_gateway_upstream_sessions',
    'mcp_gateway_client_sessions',
    'mcp_gateway_streams',
    'mcp_gateway_upstream_up',
  ]) {
    t.ok(bases.has(n), `${n} is on the dashboard`);
  }
  t.ok(
    panels.some((p) => (p.targets ?? []).some((x) => /histogram_quantile\(0\.99, .*mcp_gateway_request_duration_seconds_bucket/.test(x.expr ?? ''))),
    'a p99 of the request duration histogram',
  );
});

t.test('the operations page (Metrics) and the README link the dashboard', async (t) => {
  const page = await readFile(join(root, 'docs/operations.md'), 'utf8');
  const section = page.slice(page.indexOf('## Metrics'), page.indexOf('## Traces'));
  t.match(section, `(../${DASHBOARD})`);
  t.match(await readFile(join(root, 'README.md'), 'utf8'), `(${DASHBOARD.replace(/[^/]+$/, '')})`);
});
