/**
 * The audit trail and the operator log, read as an operator would: the real gateway (`buildGateway`) with a pino
 * logger writing to memory, in front of the real legacy fixture; real SDK 1.32.2 clients for the legacy face and raw
 * modern requests for the modern one. Tasks are driven through created → input requested → answered → completed,
 * cancelled, failed and expired; an MRTR round; a legacy-face session opened and deleted. Each audit line's event
 * and fields are checked, the principal appears only as its fingerprint, and no line of the whole log (audit or
 * not, at debug) carries the bearer token, the Authorization value, a session id or a marker placed in tool
 * arguments, input requests, answers and results.
 */
import t from 'tap';
import { EventEmitter } from 'node:events';
import { Writable } from 'node:stream';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { MemoryTaskStore } from '../../src/store/index.js';
import { principalFingerprint } from '../../src/tasks/index.js';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post } from '../helpers/modern.js';
import { DECLARING, createTask, pollTask, pollToEnd, type PostOptions } from '../helpers/task-helpers.js';

const TOKEN = 'tok-AUDIT-SECRET-7f3a9c';
const AUTHORIZATION = `Bearer ${TOKEN}`;
const ARG_MARKER = 'ARG-MARKER-5d1e';
const ANSWER_MARKER = 'ANSWER-MARKER-b82c';
const SAMPLE_MARKER = 'SAMPLE-MARKER-91fa';
const ELICIT_MARKER = 'ELICIT-MARKER-0c4d';
const USER_MARKER = 'USER-MARKER-e3b7';

interface AuditLine {
  audit?: string;
  msg?: string;
  principal?: string;
  upstream?: string;
  tool?: string;
  taskId?: string;
  era?: string;
  reason?: string;
  [k: string]: unknown;
}

/** The whole log as written (raw text, every level) and its lines parsed; `waitFor` awaits a line. */
function memoryLog() {
  const raw: string[] = [];
  const lines: AuditLine[] = [];
  const added = new EventEmitter();
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const text of String(chunk).split('\n')) {
        if (!text.trim()) continue;
        raw.push(text);
        const line = JSON.parse(text) as AuditLine;
        lines.push(line);
        added.emit('line', line);
      }
      done();
    },
  });
  /** The first line matching `pred` (already written or still to come); rejects after `ms`. */
  const waitFor = (pred: (l: AuditLine) => boolean, what: string, ms = 15_000) =>
    new Promise<AuditLine>((resolve, reject) => {
      const found = lines.find(pred);
      if (found) return resolve(found);
      const timer = setTimeout(() => {
        added.off('line', on);
        reject(new Error(`no log line for ${what} within ${ms} ms`));
      }, ms);
      const on = (l: AuditLine) => {
        if (!pred(l)) return;
        clearTimeout(timer);
        added.off('line', on);
        resolve(l);
      };
      added.on('line', on);
    });
  return { raw, lines, stream, waitFor };
}

t.test('audit trail: task and session events with fingerprints only, and nothing secret anywhere in the log', async (t) => {
  const fx = await startLegacyFixture();
  t.teardown(() => fx.close());
  const log = memoryLog();
  const cfg = {
    upstreams: [
      {
        name: 'fixture',
        path: '/mcp',
        url: fx.url,
        tools: {
          greet: { task: 'always' },
          test_input_required_result_elicitation: { task: 'always' },
          test_elicitation: { task: 'always' },
          no_such_tool: { task: 'always' },
          // Kept for one second: its question is never answered, so its retention ends before it does.
          test_input_required_result_request_state: { task: 'always', ttlMs: 1_000 },
        },
      },
      // Identity only from a fronting proxy this test is not: every request here is refused (an auth failure).
      { name: 'guarded', path: '/guarded', url: fx.url, auth: { mode: 'header', header: 'x-forwarded-user', trustedProxies: ['10.0.0.0/8'] } },
    ],
  };
  const store = new MemoryTaskStore({ maxTasks: 1_000, maxTtlMs: 3_600_000 });
  t.teardown(() => store.close());
  const { url } = await startGateway(cfg, { t, deps: { logger: { level: 'debug', stream: log.stream }, store } });
  const auth: PostOptions = { headers: { authorization: AUTHORIZATION } };
  const audit = (event: string, taskId?: string) => (l: AuditLine) => l.audit === event && (taskId === undefined || l.taskId === taskId);

  // created → completed, with a marker in the arguments that comes back in the result.
  const greet = await createTask(url, 'greet', { name: ARG_MARKER }, auth);
  // The principal as the gateway derived it (a keyed hash of the credentials), and its fingerprint.
  const principal = (await store.get(greet.taskId))?.principal as string;
  const fingerprint = principalFingerprint(principal);
  const greeted = (await pollToEnd(url, greet.taskId, auth)).at(-1);
  t.equal(greeted.status, 'completed');
  t.match(JSON.stringify(greeted.result), ARG_MARKER, 'the marker is in the result the client reads');

  // created → input requested → answered → completed.
  const asking = await createTask(url, 'test_input_required_result_elicitation', { note: ARG_MARKER }, auth);
  const waiting = (await pollTask(url, asking.taskId, (r) => r.status === 'input_required', auth)).at(-1);
  const key = Object.keys(waiting.inputRequests)[0] as string;
  const ack = await post(
    url,
    'tasks/update',
    { taskId: asking.taskId, inputResponses: { [key]: { action: 'accept', content: { name: ANSWER_MARKER } } } },
    { capabilities: DECLARING, ...auth },
  );
  t.equal(ack.status, 200, 'the answer is taken');
  const answered = (await pollToEnd(url, asking.taskId, auth)).at(-1);
  t.equal(answered.status, 'completed');
  t.match(JSON.stringify(answered.result), ANSWER_MARKER, 'the answer came back in the result');

  // created → input requested → cancelled (the question carries a marker).
  const cancelled = await createTask(url, 'test_elicitation', { message: ELICIT_MARKER }, auth);
  await pollTask(url, cancelled.taskId, (r) => r.status === 'input_required', auth);
  const cancel = await post(url, 'tasks/cancel', { taskId: cancelled.taskId }, { capabilities: DECLARING, ...auth });
  t.equal(cancel.status, 200);

  // created → failed (the upstream knows no such tool).
  const failing = await createTask(url, 'no_such_tool', { x: ARG_MARKER }, auth);
  t.equal((await pollToEnd(url, failing.taskId, auth)).at(-1).status, 'failed');

  // created → expired (its one-second retention ends while it waits for an answer).
  const expiring = await createTask(url, 'test_input_required_result_request_state', {}, auth);

  // An MRTR round (no task): the question is asked and answered within the request.
  const first = await post(
    url,
    'tools/call',
    { name: 'test_input_required_result_sampling', arguments: { q: ARG_MARKER } },
    { capabilities: { sampling: {} }, ...auth },
  );
  t.equal(first.body?.result?.resultType, 'input_required', 'an MRTR round');
  const sampleKey = Object.keys(first.body.result.inputRequests)[0] as string;
  const retry = await post(
    url,
    'tools/call',
    {
      name: 'test_input_required_result_sampling',
      arguments: { q: ARG_MARKER },
      inputResponses: { [sampleKey]: { role: 'assistant', content: { type: 'text', text: SAMPLE_MARKER }, model: 'm' } },
      requestState: first.body.result.requestState,
    },
    { capabilities: { sampling: {} }, ...auth },
  );
  t.match(JSON.stringify(retry.body?.result), SAMPLE_MARKER, 'the retry completes the call');

  // A legacy-face session (2025-11-25 client through the face: the rules wrap tools), opened and deleted.
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: AUTHORIZATION } } });
  const client = new Client({ name: 'audit-test', version: '1.0.0' }, { capabilities: {} });
  client.onerror = () => {};
  await client.connect(transport);
  const sessionId = transport.sessionId;
  t.ok(sessionId, 'the face minted a session id');
  await client.callTool({ name: 'greet', arguments: { name: ARG_MARKER } });
  await transport.terminateSession();
  await client.close();

  // An auth failure: the reason is recorded, never the header that was refused.
  const refused = await post(
    url.replace(/\/mcp$/, '/guarded'),
    'tools/call',
    { name: 'greet', arguments: { name: ARG_MARKER } },
    {
      headers: { authorization: AUTHORIZATION, 'x-forwarded-user': USER_MARKER },
    },
  );
  t.equal(refused.status, 401, 'refused at the edge');
  const authFailed = await log.waitFor(audit('auth.failed'), 'auth.failed');
  t.match(authFailed, { upstream: 'guarded' }, 'auth.failed names the upstream');
  t.type(authFailed.reason, 'string', 'and why');

  // Every event, each with its fields.
  const expected: Array<[event: string, taskId: string, tool: string, reason?: string]> = [
    ['task.created', greet.taskId, 'greet'],
    ['task.completed', greet.taskId, 'greet'],
    ['task.created', asking.taskId, 'test_input_required_result_elicitation'],
    ['task.input_requested', asking.taskId, 'test_input_required_result_elicitation'],
    ['task.input_answered', asking.taskId, 'test_input_required_result_elicitation'],
    ['task.completed', asking.taskId, 'test_input_required_result_elicitation'],
    ['task.created', cancelled.taskId, 'test_elicitation'],
    ['task.input_requested', cancelled.taskId, 'test_elicitation'],
    ['task.cancelled', cancelled.taskId, 'test_elicitation'],
    ['task.created', failing.taskId, 'no_such_tool'],
    ['task.failed', failing.taskId, 'no_such_tool'],
    ['task.created', expiring.taskId, 'test_input_required_result_request_state'],
    ['task.expired', expiring.taskId, 'test_input_required_result_request_state', 'ttl'],
  ];
  for (const [event, taskId, tool, reason] of expected) {
    const line = await log.waitFor(audit(event, taskId), `${event} of ${tool}`);
    t.match(line, { msg: `audit: ${event}`, principal: fingerprint, upstream: 'fixture', tool, taskId, era: 'modern' }, `${event} (${tool})`);
    if (reason !== undefined) t.equal(line.reason, reason, `${event} says why`);
  }
  const failed = await log.waitFor(audit('task.failed', failing.taskId), 'task.failed');
  t.match(failed.reason, /^-32\d{3}$/, 'a failure is recorded with its JSON-RPC code only');
  t.equal(log.lines.filter(audit('task.completed', asking.taskId)).length, 1, 'each event once');

  const mrtrAsked = await log.waitFor((l) => l.audit === 'task.input_requested' && l.tool === 'test_input_required_result_sampling', 'MRTR question');
  t.match(mrtrAsked, { principal: fingerprint, upstream: 'fixture', era: 'modern' });
  t.notOk('taskId' in mrtrAsked, 'an MRTR round has no task id');
  await log.waitFor((l) => l.audit === 'task.input_answered' && l.tool === 'test_input_required_result_sampling', 'MRTR answer');

  const opened = await log.waitFor(audit('session.opened'), 'session.opened');
  t.match(opened, { principal: fingerprint, upstream: 'fixture', era: 'legacy' });
  const closed = await log.waitFor(audit('session.closed'), 'session.closed');
  t.match(closed, { principal: fingerprint, upstream: 'fixture', era: 'legacy', reason: 'deleted' });
  // The legacy session's own task (a plain call through the face makes none); its era is recorded as legacy.
  t.notOk(
    log.lines.some((l) => l.audit !== undefined && l.era === 'legacy' && l.audit.startsWith('task.')),
    'a plain call is no task',
  );

  // The principal only as its fingerprint: never the principal itself.
  for (const l of log.lines.filter((l) => l.audit !== undefined && l.audit !== 'auth.failed')) {
    t.equal(l.principal, fingerprint, `${l.audit}: the fingerprint`);
    const keys = Object.keys(l).filter((k) => !['level', 'time', 'pid', 'hostname', 'msg', 'layer'].includes(k));
    t.ok(
      keys.every((k) => ['audit', 'principal', 'upstream', 'tool', 'taskId', 'era', 'reason'].includes(k)),
      `${l.audit}: only audit fields (${keys.join(', ')})`,
    );
  }

  // Nothing secret anywhere in the log, at any level.
  const whole = log.raw.join('\n');
  t.ok(
    log.lines.some((l) => l.audit === undefined && l.msg === 'mcp request'),
    'operator lines were written too (the check covers them)',
  );
  for (const [what, secret] of [
    ['the bearer token', TOKEN],
    ['the Authorization value', AUTHORIZATION],
    ['the principal', principal],
    ['the session id', sessionId as string],
    ['a tool argument', ARG_MARKER],
    ['an input request', ELICIT_MARKER],
    ['an answer', ANSWER_MARKER],
    ['a sampling answer', SAMPLE_MARKER],
    ['an identity header refused', USER_MARKER],
  ] as const) {
    t.notOk(whole.includes(secret), `the log never contains ${what}`);
  }
});
