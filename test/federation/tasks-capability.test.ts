/**
 * A federated endpoint whose members have no task support of their own but whose rules make tasks (a wrapped sync tool,
 * a `task: job` rule) runs tasks: its 2025-11-25 sessions declare `capabilities.tasks` and take task-augmented calls,
 * and its `server/discover` advertises the tasks extension, as the members' own endpoints would (docs/tasks.md,
 * docs/federation.md). In one process, on the memory store.
 */
import t from 'tap';
import { startLegacyFixture } from '../fixtures/legacy-server.js';
import { JOB_RULES, startJobServer } from '../fixtures/job-server.js';
import { startGateway } from '../helpers/gateway.js';
import { post, readReply } from '../helpers/modern.js';
import { LEGACY_HEADERS } from '../helpers/legacy-face-stack.js';
import { TASKS_EXT } from '../helpers/task-helpers.js';

t.test('members with task rules only: the federated endpoint runs tasks for both client eras', async (t) => {
  const sync = await startLegacyFixture({ tasks: 'sync', taskJobDelayMs: 0 });
  t.teardown(() => sync.close());
  const jobs = await startJobServer({ era: 'modern', stepMs: 20 });
  t.teardown(() => jobs.close());
  const gw = await startGateway(
    {
      upstreams: [
        { name: 'sync', url: sync.url, era: 'legacy', path: '/mcp', expose: { namespace: 'w' }, tools: { greet: { task: 'always' } } },
        { name: 'jobs', url: jobs.url, era: 'modern', path: '/mcp', expose: { namespace: 'j' }, tools: { start_report: JOB_RULES.start_report } },
      ],
    },
    { t },
  );

  const discover = await post(gw.url, 'server/discover', {});
  t.ok(discover.body?.result?.capabilities?.extensions?.[TASKS_EXT], 'server/discover advertises the tasks extension', { body: discover.body });

  const send = (body: Record<string, unknown>, sessionId?: string) =>
    fetch(gw.url, {
      method: 'POST',
      headers: { ...LEGACY_HEADERS, ...(sessionId ? { 'mcp-session-id': sessionId } : {}) },
      body: JSON.stringify({ jsonrpc: '2.0', ...body }),
      signal: AbortSignal.timeout(15_000),
    });
  const init = await send({
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: { tasks: {} }, clientInfo: { name: 'raw', version: '1' } },
  });
  const sessionId = init.headers.get('mcp-session-id') as string;
  const initialized = await readReply(init);
  t.ok(initialized.body?.result?.capabilities?.tasks, 'the 2025-11-25 session declares tasks', { body: initialized.body });
  await (await send({ method: 'notifications/initialized' }, sessionId)).body?.cancel();
  for (const [name, args] of [
    ['w_greet', { name: 'fed' }],
    ['j_start_report', { topic: 'fed', steps: 2, stepMs: 20 }],
  ] as const) {
    const created = await readReply(await send({ id: 2, method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 } } }, sessionId));
    t.type(created.body?.result?.task?.taskId, 'string', `${name}: a task-augmented call is a CreateTaskResult`, { body: created.body });
  }
});
