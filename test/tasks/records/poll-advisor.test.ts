// The poll advisor on its own: what it learns from task records and what it suggests for a read (times are arguments).
import t from 'tap';
import { PollAdvisor } from '../../../src/tasks/records/poll-advisor.js';
import type { TaskPolicy } from '../../../src/tasks/index.js';
import type { TaskId, TaskRecord } from '../../../src/translate/index.js';

const T0 = Date.parse('2026-08-01T00:00:00.000Z');
const NATIVE: TaskPolicy = { task: 'native' };
const ALWAYS: TaskPolicy = { task: 'always' };
let seq = 0;

/** A record of `tool` created at T0 + `at`, in `status`, last changed `ms` after its creation. */
function rec(tool: string, status: TaskRecord['status'], ms = 0, extra: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: `gwt_${++seq}` as TaskId,
    principal: 'p',
    upstream: 'up',
    kind: 'owned',
    tool,
    status,
    createdAt: new Date(T0).toISOString(),
    lastUpdatedAt: new Date(T0 + ms).toISOString(),
    ttlMs: 60_000,
    pollIntervalMs: 1_000,
    version: 1,
    ...extra,
  };
}

/** The advisor has seen `tool`'s tasks end after each of `durations`. */
function learn(a: PollAdvisor, tool: string, durations: number[], extra: Partial<TaskRecord> = {}): void {
  for (const ms of durations) a.observe(rec(tool, 'completed', ms, extra));
}

const advisor = (o: Partial<ConstructorParameters<typeof PollAdvisor>[0]> = {}, defaultMs = 1_000) =>
  new PollAdvisor({ enabled: true, minMs: 100, maxMs: 30_000, ...o }, defaultMs);

t.test('a tool not learned yet gets the configured interval', async (t) => {
  const a = advisor();
  t.equal(a.suggest(rec('new', 'working'), ALWAYS, T0), 1_000);
  learn(a, 'few', [50, 60]);
  t.equal(a.suggest(rec('few', 'working'), ALWAYS, T0), 1_000, 'two durations are not enough to learn from');
});

t.test('fast tools get shorter intervals than slow ones, aimed where the delay and the polls still needed cost least', async (t) => {
  const a = advisor();
  learn(a, 'fast', [250, 300, 350]);
  learn(a, 'slow', [4_000, 5_000, 6_000]);
  const fast = a.suggest(rec('fast', 'working'), ALWAYS, T0);
  const slow = a.suggest(rec('slow', 'working'), ALWAYS, T0);
  t.ok(fast < 1_000 && fast < slow, `fast ${fast} < slow ${slow}`);
  // A poll is worth 500 ms of delay here: 100 ms apart, the fast tool's durations are polled once, after the last.
  t.equal(fast, 350, 'a new task of a tool whose tasks end close together: just after the longest');
  // A second apart, the slow tool's are worth a poll each: the first comes at the shortest.
  t.equal(slow, 4_000, 'a new task of a tool whose tasks spread: at the shortest');
  // A slow task read at 4.5 s: of the durations above its age (5 s, 6 s), the next is 500 ms away.
  t.equal(a.suggest(rec('slow', 'working'), ALWAYS, T0 + 4_500), 500);
  // Durations in two groups (a tool whose arguments decide): a new task is polled at the first group's end.
  learn(a, 'two', [100, 110, 120, 5_000, 5_100, 5_200]);
  t.equal(a.suggest(rec('two', 'working'), ALWAYS, T0), 120);
  t.equal(a.suggest(rec('two', 'working'), ALWAYS, T0 + 130), 5_200 - 130, 'then at the second group’s end');
  // A task that outlived every duration seen backs off with its age, within the bounds.
  const at8 = a.suggest(rec('slow', 'working'), ALWAYS, T0 + 8_000);
  const at16 = a.suggest(rec('slow', 'working'), ALWAYS, T0 + 16_000);
  t.ok(at8 < at16, `back-off ${at8} < ${at16}`);
  t.equal(a.suggest(rec('slow', 'working'), ALWAYS, T0 + 3_600_000), 30_000, 'never above maxMs');
});

t.test('learned suggestions stay within the bounds, which never exclude the configured interval', async (t) => {
  const a = advisor({ minMs: 200, maxMs: 2_000 });
  learn(a, 'instant', [1, 2, 3]);
  learn(a, 'glacial', [600_000, 700_000, 800_000]);
  t.equal(a.suggest(rec('instant', 'working'), ALWAYS, T0), 200, 'minMs');
  t.equal(a.suggest(rec('glacial', 'working'), ALWAYS, T0), 2_000, 'maxMs');
  const narrow = advisor({ minMs: 500, maxMs: 600 }, 50);
  learn(narrow, 'instant', [1, 2, 3]);
  learn(narrow, 'glacial', [600_000, 700_000, 800_000]);
  t.equal(narrow.suggest(rec('instant', 'working', 0, { pollIntervalMs: 50 }), ALWAYS, T0), 50, 'a default below minMs lowers the floor to it');
  t.equal(narrow.suggest(rec('glacial', 'working', 0, { pollIntervalMs: 50 }), ALWAYS, T0), 600);
});

t.test("a rule's pollIntervalMs wins; input_required, terminal and switched-off reads keep the stored interval", async (t) => {
  const a = advisor();
  learn(a, 'fast', [40, 50, 60]);
  t.equal(a.suggest(rec('fast', 'working', 0, { pollIntervalMs: 700 }), { task: 'always', pollIntervalMs: 700 }, T0), 700);
  t.equal(a.suggest(rec('fast', 'input_required'), ALWAYS, T0), 1_000);
  t.equal(a.suggest(rec('fast', 'completed', 50), ALWAYS, T0 + 50), 1_000);
  const off = advisor({ enabled: false });
  learn(off, 'fast', [40, 50, 60]);
  t.equal(off.suggest(rec('fast', 'working'), ALWAYS, T0), 1_000);
  t.equal(off.size, 0, 'nothing learned while off');
  // `advise` shows the suggestion in the record, and leaves a record that already says it untouched.
  const r = rec('fast', 'working');
  t.equal(a.advise(r, ALWAYS, T0).pollIntervalMs, 100);
  t.equal(r.pollIntervalMs, 1_000, 'the stored record is not changed');
  const ruled = rec('fast', 'working', 0, { pollIntervalMs: 700 });
  t.equal(a.advise(ruled, { task: 'always', pollIntervalMs: 700 }, T0), ruled);
});

t.test("a job's learned interval may be shorter than its stored one: the gateway calls its status tool at it", async (t) => {
  const a = advisor();
  const job = { handle: 'rep-1', rule: {} };
  learn(a, 'start_report', [40, 50, 60], { kind: 'proxied', job });
  const suggested = a.suggest(rec('start_report', 'working', 0, { kind: 'proxied', job, pollIntervalMs: 1_000 }), { task: 'job' }, T0);
  t.ok(suggested < 1_000, `learned from the tool's durations (${suggested} ms), not held to the stored second`);
  t.equal(a.suggest(rec('start_report', 'working', 0, { kind: 'proxied', pollIntervalMs: 1_000 }), NATIVE, T0), 1_000, 'an upstream task is');
  t.equal(
    a.suggest(rec('start_report', 'working', 0, { kind: 'proxied', job, pollIntervalMs: 1_000 }), { task: 'job', pollIntervalMs: 1_000 }, T0),
    1_000,
    "a rule's pollIntervalMs wins",
  );
});

t.test('a proxied task never suggests less than its stored interval (the upstream’s own suggestion)', async (t) => {
  const a = advisor();
  learn(a, 'fast', [40, 50, 60], { kind: 'proxied' });
  learn(a, 'slow', [4_000, 5_000, 6_000], { kind: 'proxied' });
  t.equal(a.suggest(rec('fast', 'working', 0, { kind: 'proxied', pollIntervalMs: 250 }), NATIVE, T0), 250);
  t.equal(a.suggest(rec('slow', 'working', 0, { kind: 'proxied', pollIntervalMs: 250 }), NATIVE, T0), 4_000, 'a longer learned one is suggested');
});

t.test('durations are learned per upstream and tool, from completed and failed tasks that never asked for input', async (t) => {
  const a = advisor();
  learn(a, 'tool', [4_000, 5_000, 6_000], { upstream: 'a' });
  t.equal(a.suggest(rec('tool', 'working', 0, { upstream: 'b' }), ALWAYS, T0), 1_000, 'another upstream’s tool of that name is not learned');
  for (const ms of [40, 50, 60]) a.observe(rec('mixed', 'failed', ms));
  t.equal(a.suggest(rec('mixed', 'working'), ALWAYS, T0), 100, 'failed tasks count');
  for (const ms of [40, 50, 60]) a.observe(rec('cancelled', 'cancelled', ms));
  t.equal(a.suggest(rec('cancelled', 'working'), ALWAYS, T0), 1_000, 'cancelled tasks do not');
  for (let i = 0; i < 3; i++) {
    const asking = rec('asks', 'input_required');
    a.observe(asking);
    a.observe({ ...asking, status: 'completed', lastUpdatedAt: new Date(T0 + 60_000).toISOString() });
  }
  t.equal(a.suggest(rec('asks', 'working'), ALWAYS, T0), 1_000, 'a task that waited for an answer says nothing of the tool');
});

t.test('memory is bounded: a window of durations per tool, and the tools that ended a task most recently', async (t) => {
  const a = advisor();
  learn(
    a,
    'drifts',
    Array.from({ length: 64 }, () => 10_000),
  );
  learn(
    a,
    'drifts',
    Array.from({ length: 64 }, () => 200),
  );
  t.equal(a.suggest(rec('drifts', 'working'), ALWAYS, T0), 200, 'only the latest window counts');
  for (let i = 0; i < 2_000; i++) a.observe(rec(`tool-${i}`, 'completed', 100));
  t.equal(a.size, 1_024);
  learn(a, 'tool-1999', [100, 100]);
  t.equal(a.suggest(rec('tool-1999', 'working'), ALWAYS, T0), 100, 'a recent tool is kept');
  learn(a, 'tool-0', [100, 100]);
  t.equal(a.suggest(rec('tool-0', 'working'), ALWAYS, T0), 1_000, 'the oldest were forgotten');
});
