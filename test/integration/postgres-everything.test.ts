/**
 * The Postgres store in front of a server nobody here wrote: the npm `@modelcontextprotocol/server-everything` over
 * Streamable HTTP, behind a gateway process with the DEFAULT configuration (no tool rules, no auth) and only
 * `store: { kind: postgres }` set. A 2026-07-28 client declaring the tasks extension calls its task-only
 * `simulate-research-query` (the server's own 2025-11-25 task, about 4 s long): the gateway proxies it as a task;
 * the gateway is SIGKILLed while the task runs, a NEW gateway process on the same database follows the same
 * upstream task from its record to its real end, and the client reads the server's own report through it. Skips,
 * saying why, when this machine cannot run a postgres of its own.
 */
import t from 'tap';
import { startServerEverything } from '../fixtures/server-everything.js';
import { startGatewayProcess, TEST_SECRET, type GatewayProcess } from '../helpers/gateway-process.js';
import { postgresBinaryMissing, startPostgres } from '../helpers/postgres-server.js';
import { createTask, getTask, pollToEnd } from '../helpers/task-helpers.js';

t.setTimeout(300_000);

const missing = postgresBinaryMissing();
if (missing) t.plan(0, `the Postgres test in front of server-everything needs a postgres of its own: ${missing}`);
else
  t.test('server-everything behind a default gateway on Postgres: its own task outlives the gateway that proxied it', async (t) => {
    const pg = await startPostgres();
    t.teardown(() => pg.dispose());
    const everything = await startServerEverything();
    t.teardown(() => everything.close());
    // The default configuration but for the store (and the short lease the takeover is waited for).
    const config = {
      store: { kind: 'postgres', url: pg.url },
      tasks: { leaseMs: 1500 },
      upstreams: [{ name: 'everything', url: everything.url }],
    };
    const env = { MCP_GATEWAY_STATE_SECRET: TEST_SECRET };
    const gateways: GatewayProcess[] = [];
    t.teardown(() => Promise.all(gateways.map((g) => (g.exit ? undefined : g.kill('SIGKILL')))));
    const first = await startGatewayProcess({ name: 'first', config, env });
    gateways.push(first);

    const task = await createTask(first.url('everything'), 'simulate-research-query', { topic: 'durable tasks' });
    t.match(task, { resultType: 'task', status: 'working' }, "the server's own task, proxied as a task");
    const running = await getTask(first.url('everything'), task.taskId);
    t.equal(running.body?.result?.status, 'working', 'still running when its gateway is killed', { body: running.body });
    const exit = await first.kill('SIGKILL');
    t.equal(exit.signal, 'SIGKILL');

    const second = await startGatewayProcess({ name: 'second', config, env });
    gateways.push(second);
    const results = await pollToEnd(second.url('everything'), task.taskId);
    const last = results[results.length - 1];
    t.equal(last?.status, 'completed', 'the new gateway followed it to its end', { last });
    t.match(JSON.stringify(last?.result ?? {}), '# Research Report: durable tasks', "with the server's own report");
  });
