/**
 * The task modes of a tool rule (configuration `upstreams[].tools[].task`) and their traits: the one place a mode is
 * named. The configuration validates rules by these traits, the runtime's call decision (tasks/calls/call-decision.ts) routes
 * calls by them, and the edge reads them to know when the gateway must stand in a tool's path and what a 2025-11-25
 * client is shown. A new mode is a new row here, plus the code of its own behaviour (docs/tasks.md, "Wrapped tools").
 */
import type { TaskSupport } from './legacy-tasks.js';

/** What a client that takes tasks gets for a call of the tool. */
export type ModeTask =
  /** The upstream's own task, where it makes one (passed through, or translated between eras). */
  | 'upstream'
  /** No task, ever. */
  | 'none'
  /** A task the gateway owns, over a synchronous call it runs in the background. */
  | 'owned'
  /** A hand-rolled async job the gateway drives through the server's own tools (docs/jobs.md), as an upstream task. */
  | 'driven';

/** What one mode is. */
export interface TaskModeTraits {
  /** What a client that takes tasks gets. */
  task: ModeTask;
  /** `owned`: the rounds `afterMs` covers, every round of the call or only the first (then the task comes at once). */
  rounds?: 'every' | 'first';
  /**
   * When a client that takes no task is refused (-32021): on every call, when the upstream requires a task for the tool, or
   * never (a task the upstream insists on is then followed inside the call).
   */
  refusesUntasked: 'every-call' | 'if-upstream-requires' | 'never';
  /** `afterMs`: the mode needs it, takes it as the first round's window, or refuses it (and why). */
  afterMs: 'needed' | 'window' | { refused: string };
  /** `retryOnLoss`: taken, or refused (and why). */
  retryOnLoss: 'taken' | { refused: string };
  /** The 2025-11-25 `execution.taskSupport` a legacy client is shown for the tool (`upstream`: the upstream's own). */
  legacySupport: TaskSupport | 'upstream';
  /** The configuration reference's words for it. */
  doc: string;
}

/** Every mode, in the order the configuration reference lists them; the first is the default. */
export const TASK_MODE_TRAITS = {
  native: {
    task: 'upstream',
    refusesUntasked: 'if-upstream-requires',
    afterMs: 'window',
    retryOnLoss: 'taken',
    legacySupport: 'upstream',
    doc: "the upstream's own tasks, passed through or translated",
  },
  off: {
    task: 'none',
    refusesUntasked: 'never',
    afterMs: { refused: 'it never makes a task' },
    retryOnLoss: 'taken',
    legacySupport: 'forbidden',
    doc: 'never a task',
  },
  auto: {
    task: 'owned',
    rounds: 'every',
    refusesUntasked: 'never',
    afterMs: 'needed',
    retryOnLoss: 'taken',
    legacySupport: 'optional',
    doc: 'a task when the call runs longer than `afterMs`; needs `afterMs`',
  },
  always: {
    task: 'owned',
    rounds: 'first',
    refusesUntasked: 'never',
    afterMs: 'window',
    retryOnLoss: 'taken',
    legacySupport: 'optional',
    doc: 'a task at once for a client that takes tasks, docs/tasks.md',
  },
  required: {
    task: 'owned',
    rounds: 'first',
    refusesUntasked: 'every-call',
    afterMs: 'window',
    retryOnLoss: 'taken',
    legacySupport: 'required',
    doc: 'as `always`, and a client that takes no task is refused, docs/tasks.md',
  },
  job: {
    task: 'driven',
    refusesUntasked: 'never',
    afterMs: { refused: "the start tool's handle makes the task at once" },
    retryOnLoss: { refused: 'another instance goes on polling the same job, the start tool is never called again' },
    legacySupport: 'optional',
    doc: "a hand-rolled async job driven by the server's own tools; needs `job`, docs/jobs.md",
  },
} as const satisfies Record<string, TaskModeTraits>;

/** A tool rule's task mode. */
export type TaskMode = keyof typeof TASK_MODE_TRAITS;

/** The modes' names, in the table's order. */
export const TASK_MODES = Object.keys(TASK_MODE_TRAITS) as [TaskMode, ...TaskMode[]];

/** The mode of a tool no rule names. */
export const DEFAULT_TASK_MODE: TaskMode = TASK_MODES[0];

/** One mode's traits. */
export function modeTraits(mode: TaskMode): TaskModeTraits {
  return TASK_MODE_TRAITS[mode];
}

/** The modes whose traits pass a test, in the table's order. */
export function modesWhere(test: (traits: TaskModeTraits) => boolean): TaskMode[] {
  return TASK_MODES.filter((m) => test(modeTraits(m)));
}

/** Whether the gateway makes the mode's tasks itself (a wrapped call, or a driven job), rather than the upstream. */
export function makesTasks(mode: TaskMode): boolean {
  const task = modeTraits(mode).task;
  return task === 'owned' || task === 'driven';
}

/** Whether the mode is a hand-rolled job, driven through the server's own tools (docs/jobs.md). */
export function drivesJob(mode: TaskMode): boolean {
  return modeTraits(mode).task === 'driven';
}

/**
 * Whether a rule needs the gateway in the path of its tool's calls, even where the upstream speaks the client's era:
 * the gateway makes the tool's tasks, or the rule's `afterMs` window covers the upstream's own (its questions become
 * MRTR rounds of the creating call, its tasks get gateway ids).
 */
export function needsGateway(rule: { task: TaskMode; afterMs?: number }): boolean {
  return makesTasks(rule.task) || (modeTraits(rule.task).task === 'upstream' && rule.afterMs !== undefined);
}
