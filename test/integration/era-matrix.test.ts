/**
 * The era matrix: every client era gets tasks from every upstream era, native or wrapped. One scenario script
 * (create and poll, status notifications, input, cancel, failure, expiry) runs in every cell of
 * {legacy (2025-11-25), modern (2026-07-28)} client × {legacy, modern, dual} upstream × {native, wrapped}, with
 * the real clients of each era (test/helpers/era-clients.ts) through the real gateway (test/helpers/era-cells.ts).
 * "native": the fixture runs the task tools as its own tasks; "wrapped": the fixture's tools are synchronous and
 * the gateway's `always` rule makes each call a gateway-owned task. The script asserts what the client's own era
 * promises (2025-11-25 basic/utilities/tasks; tasks extension), never how the gateway got there.
 */
import t, { type Test } from 'tap';
import { RELATED_TASK_META_KEY } from '@modelcontextprotocol/sdk/types.js';
import { startCell, SHORT_RETENTION_MS, POLL_MS, type Cell, type TaskKind, type UpstreamEra } from '../helpers/era-cells.js';
import { bounded, connectEra, CLIENT_BOUND_MS, type ClientEra, type EraClient, type Lookup } from '../helpers/era-clients.js';

const CLIENTS: ClientEra[] = ['legacy', 'modern'];
const UPSTREAMS: UpstreamEra[] = ['legacy', 'modern', 'dual'];
const KINDS: TaskKind[] = ['native', 'wrapped'];

/** What one scenario gets: the cell, and a client of the era under test connected to a route of it. */
interface Ctx {
  era: ClientEra;
  cell: Cell;
  connect(url?: string): Promise<EraClient>;
}

interface Scenario {
  name: string;
  run(t: Test, ctx: Ctx): Promise<void>;
}

const textOf = (result: any): string => (Array.isArray(result?.content) ? result.content.map((c: any) => c?.text ?? '').join('') : '');

const codeOf = (l: Lookup | { status: string } | { code: number }): number | undefined => ('code' in l ? l.code : undefined);

const statusOf = (l: Lookup | { status: string } | { code: number; message: string }): string => ('status' in l ? l.status : `error ${l.code}: ${l.message}`);

/** A task id the gateway and the fixture never minted. */
const UNKNOWN_TASK = 'no-such-task-0000000000000000';

let gates = 0;

const SCENARIOS: Scenario[] = [
  {
    name: 'create and poll: a task at once, polled to its result',
    async run(t, { era, connect }) {
      const c = await connect();
      const created = await c.start('slow_compute', { seconds: 0.2, label: 'pi' });
      t.match(created.taskId, /\S/, 'a task id');
      t.equal(created.status, 'working');
      t.type(created.ttlMs, 'number', 'a retention');
      t.ok((created.pollIntervalMs ?? 0) > 0, 'a poll interval');
      if (era === 'legacy') {
        // 2025-11-25 basic/utilities/tasks §Creating Tasks: the nested Task, `ttl` and `pollInterval`.
        t.match(created.wire, { taskId: created.taskId, status: 'working', ttl: Number, pollInterval: Number, createdAt: String, lastUpdatedAt: String });
        t.notOk('ttlMs' in created.wire || 'resultType' in created.wire, 'no 2026-07-28 fields');
      } else {
        // tasks extension §Task Creation: the flat CreateTaskResult.
        t.match(created.wire, { resultType: 'task', taskId: created.taskId, status: 'working', ttlMs: Number, pollIntervalMs: Number });
        t.notOk('ttl' in created.wire || 'pollInterval' in created.wire || 'task' in created.wire, 'no 2025-11-25 fields');
      }
      const early = await c.lookup(created.taskId);
      t.ok(['working', 'completed'].includes(statusOf(early)), `tasks/get while it runs: ${statusOf(early)}`);

      const out = await c.settle(created.taskId);
      t.equal(out.status, 'completed', JSON.stringify(out));
      t.equal(textOf(out.result), 'Computed pi after 0.2s');
      t.notOk(out.result?.isError);
      const after = await c.lookup(created.taskId);
      t.equal(statusOf(after), 'completed', 'tasks/get after the end');
      if (era === 'legacy') {
        t.same(out.result?._meta?.[RELATED_TASK_META_KEY], { taskId: created.taskId }, 'tasks/result carries related-task');
        t.notOk('result' in ('task' in after ? after.task : {}), 'a 2025-11-25 tasks/get carries no payload');
        t.ok((await c.list!()).includes(created.taskId), 'tasks/list names the task');
      }
    },
  },
  {
    name: 'notifications: each status change reaches the client unasked',
    async run(t, { connect }) {
      const c = await connect();
      // confirm_delete waits for its answer, so the watch is in place before the task can end.
      const created = await c.start('confirm_delete', { filename: 'watched.txt' });
      const watch = await c.watch(created.taskId);
      const out = await c.settle(created.taskId);
      t.equal(out.status, 'completed', JSON.stringify(out));
      const seen = await watch.until('completed');
      t.ok(seen.includes('completed'), `statuses notified: ${JSON.stringify(seen)}`);
    },
  },
  {
    name: 'input: elicitation inside the task, one question and two',
    async run(t, { era, connect }) {
      const c = await connect();
      const one = await c.start('confirm_delete', { filename: 'notes.txt' });
      t.ok(['working', 'input_required'].includes(one.status), `created ${one.status}`);
      const out = await c.settle(one.taskId);
      t.equal(out.status, 'completed', JSON.stringify(out));
      t.equal(textOf(out.result), 'Deleted notes.txt', 'the answer reached the tool');
      t.same(
        c.asked.map((a) => a.message),
        ['Delete notes.txt?'],
        'asked once',
      );
      t.equal(c.asked[0]?.taskId, one.taskId, era === 'legacy' ? 'the request carries related-task' : 'asked within the task');

      const two = await c.start('multi_input', {});
      const out2 = await c.settle(two.taskId);
      t.equal(out2.status, 'completed', JSON.stringify(out2));
      t.equal(textOf(out2.result), 'multi_input: name=Ada, confirm=true');
      const mine = c.asked
        .filter((a) => a.taskId === two.taskId)
        .map((a) => a.message)
        .sort();
      t.same(mine, ['Do you confirm?', 'What is your name?'], 'both questions, each once, within the task');
      t.equal(c.asked.length, 3);
    },
  },
  {
    name: 'cancel: a running task is cancelled and stays cancelled',
    async run(t, { era, connect }) {
      const c = await connect();
      const created = await c.start('gated_job', { gate: `matrix-${++gates}` });
      const cancelled = await c.cancel(created.taskId);
      // 2025-11-25 §Task Cancellation answers the cancelled Task; the tasks extension only acknowledges.
      t.equal(statusOf(cancelled), era === 'legacy' ? 'cancelled' : 'acked');
      const out = await c.settle(created.taskId);
      t.equal(out.status, 'cancelled', JSON.stringify(out));
      t.equal(statusOf(await c.lookup(created.taskId)), 'cancelled');
      const again = await c.cancel(created.taskId);
      if (era === 'legacy') {
        t.equal(codeOf(again), -32602, `cancelling a terminal task: -32602 (${statusOf(again)})`);
        const payload = await c.payload!(created.taskId);
        t.ok('code' in payload, `tasks/result of a cancelled task is an error: ${JSON.stringify(payload)}`);
      } else {
        t.equal(statusOf(again), 'acked', 'cancelling a terminal task: acknowledged (tasks extension §Task Cancellation)');
      }
      t.equal(statusOf(await c.lookup(created.taskId)), 'cancelled', 'still cancelled');
      t.equal(codeOf(await c.cancel(UNKNOWN_TASK)), -32602, 'cancelling an unknown task: -32602');
    },
  },
  {
    name: 'failure: a tool error and a protocol error',
    async run(t, { era, connect }) {
      const c = await connect();
      const toolError = await c.start('failing_job', {});
      const out = await c.settle(toolError.taskId);
      // A tool error is a result: 2025-11-25 reports its task `failed`, the tasks extension `completed`.
      const expected = era === 'legacy' ? 'failed' : 'completed';
      t.equal(out.status, expected, JSON.stringify(out));
      t.equal(out.result?.isError, true, 'the isError result');
      t.equal(textOf(out.result), 'Job failed: simulated tool error');
      t.equal(statusOf(await c.lookup(toolError.taskId)), expected);

      const protocolError = await c.start('protocol_error_job', {});
      const out2 = await c.settle(protocolError.taskId);
      t.equal(out2.status, 'failed', JSON.stringify(out2));
      t.equal(out2.error?.code, -32603, 'the JSON-RPC error code');
      t.match(out2.error?.message, /Job failed/);
      t.notOk(out2.result, 'no result');
      t.equal(statusOf(await c.lookup(protocolError.taskId)), 'failed');
    },
  },
  {
    name: 'expiry: past its retention a task is gone (-32602)',
    async run(t, { era, cell, connect }) {
      const c = await connect(cell.shortUrl);
      const created = await c.start('slow_compute', { seconds: 0, label: 'brief' }, { ttlMs: SHORT_RETENTION_MS });
      t.ok(typeof created.ttlMs === 'number' && created.ttlMs <= SHORT_RETENTION_MS, `retention ${created.ttlMs} within ${SHORT_RETENTION_MS} ms`);
      // Expiry is a clock event nothing announces: poll at the task's pace until it is gone (bounded).
      const seen: string[] = [];
      const gone = async () => {
        for (;;) {
          const l = await c.lookup(created.taskId);
          seen.push(statusOf(l));
          if ('code' in l) return l;
          await new Promise((r) => setTimeout(r, POLL_MS));
        }
      };
      const last = await bounded(gone(), `task ${created.taskId} to expire (seen ${seen.length} lookups)`, CLIENT_BOUND_MS);
      t.equal(last.code, -32602, `tasks/get of an expired task (after ${JSON.stringify([...new Set(seen)])})`);
      t.equal(codeOf(await c.lookup(created.taskId)), -32602, 'and it stays gone');
      t.equal(codeOf(await c.cancel(created.taskId)), -32602, 'tasks/cancel of an expired task');
      if (era === 'legacy') {
        const payload = await c.payload!(created.taskId);
        t.equal('code' in payload ? payload.code : undefined, -32602, 'tasks/result of an expired task');
        t.notOk((await c.list!()).includes(created.taskId), 'tasks/list no longer names it');
      }
    },
  },
];

// The cells share nothing (each has its own fixtures and gateway), so they run side by side: most of a cell's time
// is waiting on its tasks, not work.
t.jobs = UPSTREAMS.length * KINDS.length;

for (const upstream of UPSTREAMS) {
  for (const kind of KINDS) {
    t.test(`${upstream} upstream, ${kind}`, async (t) => {
      const cell = await startCell(upstream, kind);
      t.teardown(() => cell.close());
      for (const era of CLIENTS) {
        t.test(`${era} client × ${upstream} upstream × ${kind}`, async (t) => {
          for (const scenario of SCENARIOS) {
            t.test(scenario.name, async (t) => {
              const clients: EraClient[] = [];
              t.teardown(async () => {
                for (const c of clients) await c.close().catch(() => {});
              });
              const connect = async (url = cell.url) => {
                const c = await connectEra(era, url);
                clients.push(c);
                return c;
              };
              await scenario.run(t, { era, cell, connect });
            });
          }
        });
      }
    });
  }
}
