/**
 * What happens to one `tools/call`: a pure decision from the tool's task policy, whether the client declares the
 * tasks extension, the upstream's own task support for the tool, and what the call has produced so far. The
 * runtime asks once before sending (`start` / `resume`) and again at each turn of the call (`result`,
 * `task-created`, `window-passed`); the MRTR bridge only holds and resumes, this table says what the call becomes.
 *
 * Sources: the tasks extension (io.modelcontextprotocol/tasks §Task Creation: a server decides per call, a client
 * must declare the extension), 2025-11-25 basic/utilities/tasks §Tool-Level Negotiation (`execution.taskSupport`:
 * a `required` tool refuses a call without `task`), and docs/tasks.md (a required upstream task for a client that
 * cannot take one: refuse, or drive the task to its end inside the call; wrapped tools).
 */
import type { TaskSupport } from '../translate/index.js';
import type { TaskPolicy } from './route.js';

/** A tool's task policy mode (configuration `task:`). */
export type TaskMode = TaskPolicy['task'];

/** What the call has produced when the decision is asked. */
export type CallTurn =
  /** Nothing yet: what to send. */
  | 'start'
  /** A client's MRTR retry continues a held call: what window the resumed round gets. */
  | 'resume'
  /** The upstream answered with an ordinary result or error. */
  | 'result'
  /** The upstream answered a task-augmented call with a `CreateTaskResult`. */
  | 'task-created'
  /** The same, while the first round's `afterMs` window is still open. */
  | 'task-created-in-window'
  /** The round's window passed while the call still runs. */
  | 'window-passed';

/** The facts a decision is made from. */
export interface CallFacts {
  mode: TaskMode;
  /** The request's client capabilities declare the tasks extension. */
  declares: boolean;
  /** The upstream's task support for this tool (a legacy upstream's tools/list; a modern one's tasks extension). */
  support: TaskSupport;
  turn: CallTurn;
  /** The policy sets `afterMs`: a task the upstream creates gets the first round's window too. */
  windowed?: boolean;
  /** The round follows an upstream task inside the creating request (`resume`, `window-passed`). */
  following?: boolean;
  /** `window-passed`: the window that passed. */
  passed?: CallWindow;
}

/** How long a round may run before `window-passed`. */
export type CallWindow =
  /** The upstream's budget for one call (a call that cannot become a task). */
  | 'budget'
  /** The policy's `afterMs` (0 when unset). */
  | 'after-ms'
  /** None: the call becomes a gateway task at once. */
  | 'none';

/** What the runtime does. */
export type CallDecision =
  /**
   * Forward the call. `upstreamTask`: as a task-augmented call (`task: { ttl }`); `owned`: it may become a
   * gateway task; `refuseAtLimit`: it may become the client's task, so a principal at its task limit (or a full
   * store) is refused before the upstream sees the call (the upstream work may not be idempotent).
   */
  | { action: 'send'; upstreamTask: boolean; owned: boolean; refuseAtLimit: boolean; window: CallWindow }
  /** Refuse with -32021: the tool needs a task the client did not declare (or may not get). */
  | { action: 'refuse' }
  /** The upstream's answer is the client's answer. */
  | { action: 'answer' }
  /** The upstream task becomes a proxied task; the client gets the gateway's `CreateTaskResult`. */
  | { action: 'proxy-task' }
  /**
   * The upstream task is followed inside this request (its questions are MRTR rounds of the request): to its end
   * (`budget`), or for the rest of the first round's window (`after-ms`), after which the client gets it.
   */
  | { action: 'follow-task'; window: CallWindow }
  /** The first round's window passed before the upstream answered at all: wait for its answer within the budget. */
  | { action: 'wait'; window: CallWindow }
  /** The running call becomes a gateway-owned task. */
  | { action: 'own-task' }
  /** The call ran out of its budget: a timeout error. */
  | { action: 'time-out' };

/** The way a call is treated, derived from mode × declares × support (the rows of the table). */
export type CallRoute =
  /** Sent as it is; nothing becomes a task. */
  | 'plain'
  /** Refused before it reaches the upstream. */
  | 'refused'
  /** Sent task-augmented; an upstream task becomes a proxied task. */
  | 'upstream-task'
  /** Sent task-augmented; an upstream task is followed to its end within the request. */
  | 'hidden-upstream-task'
  /** A wrapped call: every round gets `afterMs` before it becomes a gateway task (`auto`). */
  | 'owned-every-round'
  /** A wrapped call: the first round gets `afterMs`, a resumed round none (`always`, `required`). */
  | 'owned-first-round';

/** The route of a call (the first three facts). */
export function callRoute(mode: TaskMode, declares: boolean, support: TaskSupport): CallRoute {
  // A hand-rolled job (docs/jobs.md) is an upstream task made of the server's own tools, whatever the upstream's task
  // support: the client's task where it takes one, followed to its end inside the call where it does not.
  if (mode === 'job') return declares ? 'upstream-task' : 'hidden-upstream-task';
  // The upstream's own task support decides when it requires a task, or offers one and no rule wraps the tool.
  if (support === 'required' || (support === 'optional' && (mode === 'native' || mode === 'off'))) {
    if (declares && mode !== 'off') return 'upstream-task';
    // An optional tool runs synchronously for a client that takes no task (or may not get one).
    if (support === 'optional') return 'plain';
    // A required task the client cannot take: refuse (native, required; tasks extension §Capability Negotiation:
    // -32021), or hide it inside this call (off, auto, always).
    return mode === 'native' || mode === 'required' ? 'refused' : 'hidden-upstream-task';
  }
  switch (mode) {
    case 'native':
    case 'off':
      return 'plain';
    case 'required':
      return declares ? 'owned-first-round' : 'refused';
    case 'auto':
      return declares ? 'owned-every-round' : 'plain';
    case 'always':
      return declares ? 'owned-first-round' : 'plain';
  }
}

/** The decision for one turn of a call. */
export function decideCall(facts: CallFacts): CallDecision {
  const route = callRoute(facts.mode, facts.declares, facts.support);
  if (route === 'refused') return { action: 'refuse' };
  const upstreamTask = route === 'upstream-task' || route === 'hidden-upstream-task';
  const owned = route === 'owned-every-round' || route === 'owned-first-round';
  // A question before the task, whatever the upstream does: with `afterMs`, the first round's window covers an
  // upstream task too, so that a task that asks at once is seen like a tool that asks before creating its task
  // (tasks extension §Task Creation: a server may ask with an InputRequiredResult before it creates the task).
  const windowedTask = route === 'upstream-task' && facts.windowed === true;
  switch (facts.turn) {
    case 'start':
      // Any call that may become the client's task is refused at the principal's task limit (or a full store) before
      // the upstream sees it (docs/security.md §Limits: a limit known before the upstream is called is checked
      // first), even an auto call or an upstream task that may still end synchronously: refusing later would cancel
      // upstream work that is perhaps not idempotent.
      return {
        action: 'send',
        upstreamTask,
        owned,
        refuseAtLimit: owned || route === 'upstream-task',
        window: owned || windowedTask ? 'after-ms' : 'budget',
      };
    case 'resume': {
      // A wrapped always/required call asked its question before the task existed (tasks extension §Task
      // Creation: input first); once answered, the call becomes the task at once. So does an upstream task that
      // asked within the first window.
      const becomesTask = route === 'owned-first-round' || (route === 'upstream-task' && facts.following === true);
      return { action: 'send', upstreamTask, owned, refuseAtLimit: false, window: becomesTask ? 'none' : owned ? 'after-ms' : 'budget' };
    }
    case 'result':
      return { action: 'answer' };
    case 'task-created':
    case 'task-created-in-window':
      // Only a task-augmented call can create an upstream task.
      if (route === 'upstream-task')
        return facts.turn === 'task-created-in-window' && windowedTask ? { action: 'follow-task', window: 'after-ms' } : { action: 'proxy-task' };
      if (route === 'hidden-upstream-task') return { action: 'follow-task', window: 'budget' };
      return { action: 'answer' };
    case 'window-passed':
      if (owned) return { action: 'own-task' };
      if (route === 'upstream-task' && facts.following === true) return { action: 'proxy-task' };
      if (route === 'upstream-task' && facts.passed === 'after-ms') return { action: 'wait', window: 'budget' };
      return { action: 'time-out' };
  }
}
