/**
 * The real 2025-11-25 task client (`@modelcontextprotocol/sdk` 1.32.2 `experimental.tasks`, with elicitation and
 * sampling handlers) through the gateway, for what a legacy client expects beyond the era matrix's shared script:
 * the advertised task capability and per-tool `taskSupport`, sampling and sequential rounds inside a task,
 * `tasks/list` by session with opaque cursors, and calls made without `task`. Three stacks: the modern fixture
 * with the tasks extension (native), and the sync-only legacy and modern fixtures behind wrapping rules.
 */
import t from 'tap';
import { CallToolResultSchema, type McpError } from '@modelcontextprotocol/sdk/types.js';
import { startFixture, startGateway, type Fixture, type TaskKind, type UpstreamEra } from '../helpers/era-cells.js';
import { legacyClient, SAMPLED_TEXT, type LegacyEraClient } from '../helpers/era-clients.js';

/** Wrapping rules with one tool per mode, to see each mode's `taskSupport` (README "Wrapped tools"). */
const WRAP_RULES = {
  failing_job: { task: 'required' },
  test_simple_text: { task: 'off' },
  '*': { task: 'always', pollIntervalMs: 50 },
};

/** What WRAP_RULES make of the tools: `always` → optional, `required` → required, `off` → forbidden. */
const WRAPPED_SUPPORT = { slow_compute: 'optional', failing_job: 'required', test_simple_text: 'forbidden' };

interface StackSpec {
  name: string;
  upstream: UpstreamEra;
  kind: TaskKind;
  /** A tool that asks for one sampling completion, its arguments and the text it answers with. */
  sampling: { tool: string; args: Record<string, unknown>; text: string };
  /** A tool that asks two questions one after the other, and its answer (every string answered "Ada"). */
  twoRounds?: { tool: string; text: string };
  /** `execution.taskSupport` the client should see for slow_compute, failing_job and test_simple_text. */
  support: Record<'slow_compute' | 'failing_job' | 'test_simple_text', string>;
}

const STACKS: StackSpec[] = [
  {
    name: 'modern fixture with the tasks extension (native)',
    upstream: 'modern',
    kind: 'native',
    sampling: { tool: 'sample_once', args: {}, text: `Sampled: ${SAMPLED_TEXT}` },
    twoRounds: { tool: 'ask_twice', text: 'Ada likes Ada' },
    // A 2026-07-28 tool says nothing about tasks, so every tool of an upstream with the extension is `optional`.
    support: { slow_compute: 'optional', failing_job: 'optional', test_simple_text: 'optional' },
  },
  {
    name: 'sync-only legacy fixture (wrapped)',
    upstream: 'legacy',
    kind: 'wrapped',
    sampling: { tool: 'test_sampling', args: { prompt: 'Say something' }, text: `LLM response: ${SAMPLED_TEXT}` },
    support: WRAPPED_SUPPORT,
  },
  {
    name: 'sync-only modern fixture (wrapped)',
    upstream: 'modern',
    kind: 'wrapped',
    sampling: { tool: 'sample_once', args: {}, text: `Sampled: ${SAMPLED_TEXT}` },
    twoRounds: { tool: 'ask_twice', text: 'Ada likes Ada' },
    support: WRAPPED_SUPPORT,
  },
];

const textOf = (result: any): string => (Array.isArray(result?.content) ? result.content.map((c: any) => c?.text ?? '').join('') : '');

for (const spec of STACKS) {
  t.test(spec.name, async (t) => {
    const fixture: Fixture = await startFixture(spec.upstream, spec.kind);
    t.teardown(() => fixture.close());
    const { gateway, base } = await startGateway([{ name: 'fixture', path: '/mcp', url: fixture.url, ...(spec.kind === 'wrapped' && { tools: WRAP_RULES }) }]);
    t.teardown(() => gateway.close());
    const url = `${base}/mcp`;
    const connect = async (t: { teardown(fn: () => unknown): void }): Promise<LegacyEraClient> => {
      const c = await legacyClient(url);
      t.teardown(() => c.close());
      return c;
    };

    t.test('capabilities.tasks is advertised, and each tool says whether it runs as a task', async (t) => {
      const c = await connect(t);
      // 2025-11-25 basic/utilities/tasks §Capabilities: tool calls as tasks, tasks/list and tasks/cancel.
      t.match(c.sdk.getServerCapabilities()?.tasks, { list: {}, cancel: {}, requests: { tools: { call: {} } } });
      const { tools } = await c.sdk.listTools();
      const support = Object.fromEntries(tools.map((x) => [x.name, x.execution?.taskSupport ?? 'forbidden']));
      for (const [tool, expected] of Object.entries(spec.support)) t.equal(support[tool], expected, `${tool}: ${expected}`);
    });

    t.test('sampling inside a task: the request carries related-task and the answer reaches the tool', async (t) => {
      const c = await connect(t);
      const created = await c.start(spec.sampling.tool, spec.sampling.args);
      const out = await c.settle(created.taskId);
      t.equal(out.status, 'completed', JSON.stringify(out));
      t.equal(textOf(out.result), spec.sampling.text);
      t.same(
        c.asked.map((a) => a.taskId),
        [created.taskId],
        'one sampling request, within the task',
      );
      t.match(c.asked[0]?.message, /^sampling: /);
    });

    if (spec.twoRounds) {
      const rounds = spec.twoRounds;
      t.test('two questions one after the other inside one task', async (t) => {
        const c = await connect(t);
        const created = await c.start(rounds.tool, {});
        const out = await c.settle(created.taskId);
        t.equal(out.status, 'completed', JSON.stringify(out));
        t.equal(textOf(out.result), rounds.text);
        t.equal(c.asked.length, 2, 'asked twice');
        t.ok(
          c.asked.every((a) => a.taskId === created.taskId),
          'both within the task',
        );
      });
    }

    t.test("tasks/list pages through the session's own tasks; a bad cursor is -32602", async (t) => {
      const c = await connect(t);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const created = await c.start('slow_compute', { seconds: 0, label: `list-${i}` });
        ids.push(created.taskId);
        t.equal((await c.settle(created.taskId)).status, 'completed');
      }
      const listed = await c.list!();
      t.same(
        ids.filter((id) => !listed.includes(id)),
        [],
        'every task of this session is listed',
      );
      const other = await connect(t);
      const foreign = await other.list!();
      t.same(
        ids.filter((id) => foreign.includes(id)),
        [],
        "another session (no credentials) does not see this session's tasks",
      );
      await t.rejects(c.sdk.experimental.tasks.listTasks('not-a-cursor'), { code: -32602 }, 'an invalid cursor');
    });

    t.test('without `task`: an ordinary call that ends with the final result, its questions relayed as plain requests', async (t) => {
      const c = await connect(t);
      const plain = await c.sdk.callTool({ name: 'slow_compute', arguments: { seconds: 0.1, label: 'plain' } });
      t.equal(textOf(plain), 'Computed plain after 0.1s');
      t.notOk('task' in plain, 'no task');
      // A tool that must run as a task upstream (or is wrapped as `required`) still answers a call without `task`.
      const required = await c.sdk.request({ method: 'tools/call', params: { name: 'failing_job', arguments: {} } }, CallToolResultSchema);
      t.equal(required.isError, true);
      t.equal(textOf(required), 'Job failed: simulated tool error');
      const asked = await c.sdk.request(
        { method: 'tools/call', params: { name: 'confirm_delete', arguments: { filename: 'plain.txt' } } },
        CallToolResultSchema,
      );
      t.equal(textOf(asked), 'Deleted plain.txt');
      t.same(
        c.asked.map((a) => a.taskId),
        [undefined],
        'one question, with no related-task',
      );
      const listed = await c.list!().catch((e: McpError) => e);
      t.ok(Array.isArray(listed) && listed.length === 0, `no task was left behind for this session: ${JSON.stringify(listed)}`);
    });
  });
}
