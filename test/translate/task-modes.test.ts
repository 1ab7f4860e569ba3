/**
 * translate/task-modes: the one table of task modes. Its names and order (the configuration's enum and default), the
 * traits each consumer reads (which modes make their own tasks, which drive a job, which need the gateway in a tool's
 * path), and the consistency the runtime relies on (only a mode that makes owned tasks has rounds, a needed `afterMs`
 * belongs to such a mode, every refusal says why).
 */
import t from 'tap';
import {
  DEFAULT_TASK_MODE,
  drivesJob,
  makesTasks,
  modesWhere,
  modeTraits,
  needsGateway,
  TASK_MODE_TRAITS,
  TASK_MODES,
  type TaskMode,
} from '../../src/translate/task-modes.js';

t.test('the modes, in the order the reference lists them; the first is the default', async (t) => {
  t.same(TASK_MODES, Object.keys(TASK_MODE_TRAITS));
  t.same(TASK_MODES, ['native', 'off', 'auto', 'always', 'required', 'job']);
  t.equal(DEFAULT_TASK_MODE, 'native');
});

t.test('per mode: who makes the task, whether it is a job, whether the gateway stands in the path', async (t) => {
  // [mode, makes its own tasks, drives a job, needs the gateway without afterMs, with afterMs]
  const rows: Array<[TaskMode, boolean, boolean, boolean, boolean]> = [
    ['native', false, false, false, true],
    ['off', false, false, false, false],
    ['auto', true, false, true, true],
    ['always', true, false, true, true],
    ['required', true, false, true, true],
    ['job', true, true, true, true],
  ];
  t.equal(rows.length, TASK_MODES.length, 'a row per mode');
  for (const [mode, makes, job, bare, windowed] of rows) {
    t.equal(makesTasks(mode), makes, `${mode}: makes its own tasks`);
    t.equal(drivesJob(mode), job, `${mode}: drives a job`);
    t.equal(needsGateway({ task: mode }), bare, `${mode}: needs the gateway`);
    t.equal(needsGateway({ task: mode, afterMs: 0 }), windowed, `${mode} with afterMs: needs the gateway`);
  }
});

t.test('modesWhere selects by trait, in table order', async (t) => {
  t.same(
    modesWhere((m) => m.afterMs === 'needed'),
    ['auto'],
  );
  t.same(
    modesWhere((m) => typeof m.afterMs === 'object'),
    ['off', 'job'],
  );
  t.same(
    modesWhere((m) => m.refusesUntasked !== 'never'),
    ['native', 'required'],
  );
  t.same(
    modesWhere(() => false),
    [],
  );
});

t.test('the traits are consistent', async (t) => {
  for (const mode of TASK_MODES) {
    const m = modeTraits(mode);
    t.equal(m, TASK_MODE_TRAITS[mode], `${mode}: modeTraits reads the table`);
    t.equal(m.rounds !== undefined, m.task === 'owned', `${mode}: rounds only for a mode that owns its tasks`);
    if (m.afterMs === 'needed') t.equal(m.task, 'owned', `${mode}: a needed afterMs decides when an owned call becomes a task`);
    if (typeof m.afterMs === 'object') t.ok(m.afterMs.refused.length > 0, `${mode}: says why it refuses afterMs`);
    if (typeof m.retryOnLoss === 'object') t.ok(m.retryOnLoss.refused.length > 0, `${mode}: says why it refuses retryOnLoss`);
    if (m.task === 'none') t.equal(m.legacySupport, 'forbidden', `${mode}: never a task, so a legacy client is told so`);
    t.ok(m.doc.length > 0, `${mode}: documented`);
  }
});
