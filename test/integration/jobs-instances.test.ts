/**
 * A job task outlives the gateway instance that started it (docs/jobs.md § Several instances): two REAL gateway
 * processes share one real redis-server in front of the job fixtures of both eras (running in this test process).
 * A job is started through A; A is SIGKILLed mid-job; B takes the task over from its record (the handle and the rule)
 * and drives the same upstream job to its end; the start tool was called exactly once. Skips, saying why, only when
 * no `redis-server` binary is on PATH.
 */
import t, { type Test } from 'tap';
import { loadConfigFile } from '../../src/config/index.js';
import { startJobServer } from '../fixtures/job-server.js';
import { startGatewayProcess, TEST_SECRET, type GatewayProcess } from '../helpers/gateway-process.js';
import { serverBinaryMissing, startRedis } from '../helpers/redis-server.js';
import { post } from '../helpers/modern.js';
import { bounded, until } from '../helpers/era-clients.js';
import { DECLARING, TERMINAL } from '../helpers/task-helpers.js';

/** A short lease: the lost instance's tasks are claimed within it. */
const LEASE_MS = 1500;

t.setTimeout(300_000);

const missing = serverBinaryMissing();
if (missing) t.plan(0, `the multi-instance job test needs a redis-server of its own: ${missing}`);
else t.test('a job started on an instance that dies is finished by another', (t) => main(t));

async function main(t: Test): Promise<void> {
  const redis = await startRedis();
  t.teardown(() => redis.stop());
  const servers = { legacy: await startJobServer({ era: 'legacy', stepMs: 50 }), modern: await startJobServer({ era: 'modern', stepMs: 50 }) };
  t.teardown(() => Promise.all(Object.values(servers).map((s) => s.close())));
  const tools = (await loadConfigFile(new URL('../../config/jobs.example.yaml', import.meta.url).pathname)).upstreams[0]!.tools;
  const config = {
    store: { kind: 'redis', url: redis.url, keyPrefix: 'jobs-test:', commandTimeoutMs: 500, connectTimeoutMs: 1000 },
    tasks: { leaseMs: LEASE_MS, pollIntervalMs: 100 },
    upstreams: [
      { name: 'legacy', path: '/legacy', url: servers.legacy.url, era: 'legacy', tools },
      { name: 'modern', path: '/modern', url: servers.modern.url, era: 'modern', tools },
    ],
  };
  const env = { MCP_GATEWAY_STATE_SECRET: TEST_SECRET };
  const instances: GatewayProcess[] = [];
  t.teardown(() => Promise.all(instances.map((g) => (g.exit ? undefined : g.kill('SIGKILL')))));
  const [A, B] = await Promise.all([startGatewayProcess({ name: 'A', config, env }), startGatewayProcess({ name: 'B', config, env })]);
  instances.push(A, B);

  // One job per upstream era, both started through A and running when A dies.
  const started = await Promise.all(
    (['legacy', 'modern'] as const).map(async (era) => {
      const server = servers[era];
      const topic = `survivor-${era}`;
      const before = server.calls.start_report ?? 0;
      const r = await post(A.url(era), 'tools/call', { name: 'start_report', arguments: { topic, steps: 40, stepMs: 100 } }, { capabilities: DECLARING });
      t.equal(r.body?.result?.resultType, 'task', `${era}: a task from A`, { body: r.body });
      const handle = [...server.jobs.entries()].find(([, j]) => j.args.topic === topic)?.[0];
      // A follows the job: its status tool is being called.
      await bounded(
        until(() => server.statusCalls.some((c) => String(c.handle) === handle)),
        `${era}: A polls the job`,
      );
      return { era, server, taskId: r.body.result.taskId as string, handle, before };
    }),
  );

  await A.kill('SIGKILL');
  const killedAt = Date.now();

  for (const s of started) {
    let last: any;
    await bounded(
      (async () => {
        for (;;) {
          const r = await post(B.url(s.era), 'tasks/get', { taskId: s.taskId }, { capabilities: DECLARING });
          last = r.body?.result;
          if (TERMINAL.includes(last?.status)) return;
          await new Promise((res) => setTimeout(res, 200));
        }
      })(),
      `${s.era}: the task ends on B`,
      30_000,
    );
    t.equal(last?.status, 'completed', `${s.era}: B finished the task A started`, { last });
    t.match(JSON.stringify(last?.result ?? {}), `Report on survivor-${s.era}: 40 sections`, `${s.era}: with the job's own result`);
    t.equal((s.server.calls.start_report ?? 0) - s.before, 1, `${s.era}: the start tool was called exactly once`);
    t.ok(
      s.server.statusCalls.some((c) => String(c.handle) === s.handle && c.at > killedAt),
      `${s.era}: the same job was polled after A died`,
    );
    t.equal(s.server.jobs.get(String(s.handle))?.finished, true, `${s.era}: the upstream job ran to its end`);
  }
}
