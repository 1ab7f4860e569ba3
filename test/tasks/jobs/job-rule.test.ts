/**
 * Reading hand-rolled jobs with a `task: job` rule (src/tasks/jobs/job-rule.ts): the handle where the rule's `id` path
 * points, in structured content or in a JSON text content; the status tool's states mapped onto task statuses; a
 * failed job's message; `{{id}}` in the arguments of the job's own tools; a JSON text result given its structuredContent.
 */
import t from 'tap';
import { jobRule, withStructuredContent, type JobSpec } from '../../../src/tasks/jobs/job-rule.js';

const SPEC: JobSpec = {
  id: 'structuredContent.jobId',
  status: {
    tool: 'report_status',
    arguments: { jobId: '{{id}}', note: 'job {{id}}', nested: [{ id: '{{id}}' }] },
    state: 'structuredContent.state',
    states: { queued: 'working', running: 'working', done: 'completed', error: 'failed', cancelled: 'cancelled' },
    message: "join('', [to_string(structuredContent.pct), '%'])",
    error: 'structuredContent.error',
  },
};

const text = (v: unknown) => ({ content: [{ type: 'text', text: JSON.stringify(v) }] });

t.test('the handle is read from structuredContent, or from the first text content parsed as JSON', async (t) => {
  const rule = jobRule('start_report', SPEC);
  t.equal(rule.handle({ content: [], structuredContent: { jobId: 'rep-1' } }), 'rep-1');
  t.equal(rule.handle(text({ jobId: 'rep-2' })), 'rep-2', 'JSON text when there is no structuredContent');
  t.equal(rule.handle({ ...text({ jobId: 'from-text' }), structuredContent: { jobId: 7 } }), 7, 'structuredContent wins, a number stays a number');
  t.equal(rule.handle({ content: [{ type: 'text', text: 'started, no JSON' }] }), undefined, 'no handle in plain text');
  t.equal(rule.handle({ structuredContent: { other: 1 } }), undefined, 'nothing at the path');
  t.equal(rule.handle({ structuredContent: { jobId: '' } }), undefined, 'an empty string is no handle');
});

t.test('states map onto task statuses; a message comes with them; a state the rule does not name is unknown', async (t) => {
  const rule = jobRule('start_report', SPEC);
  t.strictSame(rule.read({ structuredContent: { state: 'running', pct: 40 } }), { status: 'working', message: '40%' });
  t.strictSame(rule.read({ structuredContent: { state: 'done', pct: 100 } }), { status: 'completed', message: '100%' });
  const plain = jobRule('start_p', { ...SPEC, status: { ...SPEC.status, message: 'structuredContent.progress' } });
  t.strictSame(plain.read({ structuredContent: { state: 'cancelled' } }), { status: 'cancelled' }, 'a message path that reads nothing adds none');
  t.strictSame(plain.read({ structuredContent: { state: 'running', progress: 'step 2 of 3' } }), { status: 'working', message: 'step 2 of 3' });
  t.strictSame(rule.read(text({ state: 'queued', pct: 0 })), { status: 'working', message: '0%' }, 'read from JSON text too');
  t.strictSame(rule.read({ structuredContent: { state: 'paused' } }), { status: 'unknown', read: '"paused"' });
  t.strictSame(rule.read({ structuredContent: {} }), { status: 'unknown', read: 'nothing at structuredContent.state' });
});

t.test("a failed job's message: the error path, else the message, else the result's text", async (t) => {
  t.strictSame(jobRule('start_report', SPEC).read({ structuredContent: { state: 'error', error: 'disk full' } }), { status: 'failed', message: 'disk full' });
  const noError: JobSpec = { ...SPEC, status: { ...SPEC.status, error: undefined as never, message: 'structuredContent.note' } };
  delete (noError.status as { error?: string }).error;
  t.strictSame(jobRule('start_x', noError).read({ structuredContent: { state: 'error', note: 'it broke' } }), { status: 'failed', message: 'it broke' });
  const bare: JobSpec = { id: 'structuredContent.id', status: { tool: 's', state: 'structuredContent.state', states: { bad: 'failed' } } };
  t.strictSame(jobRule('start_y', bare).read({ content: [{ type: 'text', text: 'the build broke' }], structuredContent: { state: 'bad' } }), {
    status: 'failed',
    message: 'the build broke',
  });
});

t.test('{{id}} in arguments: the handle itself as a whole value, its text inside a string', async (t) => {
  const rule = jobRule('start_report', SPEC);
  t.strictSame(rule.argumentsFor(SPEC.status, 42), { jobId: 42, note: 'job 42', nested: [{ id: 42 }] });
  t.strictSame(rule.argumentsFor(SPEC.status, 'rep-1'), { jobId: 'rep-1', note: 'job rep-1', nested: [{ id: 'rep-1' }] });
  t.strictSame(rule.argumentsFor({ tool: 'x' }, 'rep-1'), {}, 'no arguments configured');
});

t.test('a rule is compiled once per configured object', async (t) => {
  t.equal(jobRule('start_report', SPEC), jobRule('start_report', SPEC));
  t.not(jobRule('start_report', SPEC), jobRule('start_report', { ...SPEC }), 'a reloaded rule is a new object');
});

t.test("a job's result without structuredContent gets its JSON text as one, when that is an object", async (t) => {
  const report = { report: { topic: 'owls', sections: 3 } };
  t.same(withStructuredContent(text(report)), { ...text(report), structuredContent: report }, 'JSON text → structuredContent');
  const own = { content: [{ type: 'text', text: '{"other":1}' }], structuredContent: report };
  t.equal(withStructuredContent(own), own, 'its own structuredContent stays');
  const plain = { content: [{ type: 'text', text: 'a report on owls' }] };
  t.equal(withStructuredContent(plain), plain, 'text that is no JSON: unchanged');
  const list = text([1, 2]);
  t.equal(withStructuredContent(list), list, 'JSON that is no object (2025-11-25 structuredContent is one): unchanged');
  const failed = { ...text(report), isError: true };
  t.equal(withStructuredContent(failed), failed, 'a tool error: unchanged');
});
