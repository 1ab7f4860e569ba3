/**
 * What happens to one `tools/call`, from a client of either era: a pure decision from the traits of the tool's task
 * mode (translate/task-modes.ts), the client's era and whether it takes a task, the upstream's own task support for the
 * tool, and what the call has produced so far. The runtime asks once before sending (`start` / `resume`) and again at
 * each turn of the call (`result`, `task-created`, `window-passed`, …); the MRTR bridge only holds and resumes, and the
 * legacy face only relays: this table says what the call becomes.
 *
 * Sources: the tasks extension (io.modelcontextprotocol/tasks §Task Creation: a server decides per call, a client
 * must declare the extension), 2025-11-25 basic/utilities/tasks §Tool-Level Negotiation (`execution.taskSupport`:
 * a `required` tool refuses a call without `task`), and docs/tasks.md (a required upstream task for a client that
 * cannot take one: refuse, or drive the task to its end inside the call; wrapped tools). A 2025-11-25 client asks per
 * request: one that sends `task` gets a task (2025-11-25 basic/utilities/tasks §Creating Tasks) or -32601 where the tool
 * can be none (§Tool-Level Negotiation); one that does not gets none and is not refused for it.
 */
import { modeTraits, type Era, type TaskMode, type TaskSupport } from '../../translate/index.js';

/** What the call has produced when the decision is asked. */
export type CallTurn =
  /** Nothing yet: what to send. */
  | 'start'
  /** A client's MRTR retry continues a held call: what window the resumed round gets. */
  | 'resume'
  /** The upstream answered with an ordinary result. */
  | 'result'
  /** The upstream answered with a JSON-RPC error. */
  | 'error'
  /** The upstream asked for input before any task existed. */
  | 'input'
  /** The upstream answered a task-augmented call with a `CreateTaskResult`. */
  | 'task-created'
  /** The same, while the first round's `afterMs` window is still open. */
  | 'task-created-in-window'
  /** The round's window passed while the call still runs. */
  | 'window-passed';

/** The facts a call's route is derived from. */
export interface RouteFacts {
  mode: TaskMode;
  /**
   * The client takes a task for this call: a 2026-07-28 request's capabilities declare the tasks extension, a
   * 2025-11-25 request sends `task`.
   */
  declares: boolean;
  /** The upstream's task support for this tool (a legacy upstream's tools/list; a modern one's tasks extension). */
  support: TaskSupport;
  /** The client's era (absent: `modern`). */
  client?: Era;
  /**
   * The upstream decides per call whether to answer with a task (a 2026-07-28 upstream with the tasks extension):
   * its `optional` may then mean a task it requires.
   */
  upstreamDecides?: boolean;
}

/** The facts a decision is made from. */
export interface CallFacts extends RouteFacts {
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
  /** A 2025-11-25 client's task-augmented call: the policy's `afterMs`, else the runtime's creation window, within the budget. */
  | 'creation'
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
  /** Refuse with -32601: the client asked for a task the tool cannot be (2025-11-25 §Tool-Level Negotiation). */
  | { action: 'refuse-task' }
  /** The upstream's answer is the client's answer (a question: its MRTR round, or its request on the call's stream). */
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

/** The way a call is treated, derived from the route facts (the rows of the table). */
export type CallRoute =
  /** Sent as it is; nothing becomes a task. */
  | 'plain'
  /** Refused before it reaches the upstream: the tool needs a task the client does not take. */
  | 'refused'
  /** Refused before it reaches the upstream: the client asked for a task the tool cannot be. */
  | 'task-refused'
  /** Sent task-augmented; an upstream task becomes a proxied task. */
  | 'upstream-task'
  /** Sent task-augmented; an upstream task is followed to its end within the request. */
  | 'hidden-upstream-task'
  /** A wrapped call: every round gets `afterMs` before it becomes a gateway task. */
  | 'owned-every-round'
  /** A wrapped call: the first round gets `afterMs`, a resumed round none. */
  | 'owned-first-round'
  /** A wrapped call the client asked as a task: a gateway task at once. */
  | 'owned-at-once'
  /**
   * The client asked for a task, the upstream may make it: sent task-augmented; an upstream task becomes a proxied
   * task, any other first answer but an error (a result, a question, the creation window passing) a gateway task.
   */
  | 'asked-upstream-task'
  /** The same for a driven job, whose start tool answers its handle within the call's budget. */
  | 'asked-job';

/** The route of a call. */
export function callRoute(facts: RouteFacts): CallRoute {
  return facts.client === 'legacy' ? legacyRoute(facts) : modernRoute(facts);
}

/** The route of a 2026-07-28 client's call: it declares the tasks extension or not, the server decides per call. */
function modernRoute({ mode, declares, support }: RouteFacts): CallRoute {
  const traits = modeTraits(mode);
  // A hand-rolled job (docs/jobs.md) is an upstream task made of the server's own tools, whatever the upstream's task
  // support: the client's task where it takes one, followed to its end inside the call where it does not.
  if (traits.task === 'driven') return declares ? 'upstream-task' : 'hidden-upstream-task';
  // The upstream's own task support decides when it requires a task, or offers one and the mode makes no task itself.
  if (support === 'required' || (support === 'optional' && (traits.task === 'upstream' || traits.task === 'none'))) {
    if (declares && traits.task !== 'none') return 'upstream-task';
    // An optional tool runs synchronously for a client that takes no task (or may not get one).
    if (support === 'optional') return 'plain';
    // A required task the client cannot take: refuse (tasks extension §Capability Negotiation: -32021), or hide it
    // inside this call.
    return traits.refusesUntasked === 'never' ? 'hidden-upstream-task' : 'refused';
  }
  if (traits.task !== 'owned') return 'plain';
  if (declares) return traits.rounds === 'every' ? 'owned-every-round' : 'owned-first-round';
  return traits.refusesUntasked === 'every-call' ? 'refused' : 'plain';
}

/** The route of a 2025-11-25 client's call: it sent `task` (it gets a task or -32601) or it did not (it gets none). */
function legacyRoute({ mode, declares, support, upstreamDecides }: RouteFacts): CallRoute {
  const traits = modeTraits(mode);
  if (!declares) {
    // The rules make no task for it (a legacy client cannot receive an unsolicited task) and refuse it nothing; a task
    // the upstream requires (a legacy upstream must be asked for one, 2025-11-25 §Tool-Level Negotiation), or may make
    // (a modern one decides per call, and may only when the extension is declared), is hidden inside the call.
    if (traits.task === 'driven') return 'hidden-upstream-task';
    return support === 'required' || (support === 'optional' && upstreamDecides === true) ? 'hidden-upstream-task' : 'plain';
  }
  switch (traits.task) {
    case 'owned':
      return 'owned-at-once';
    case 'driven':
      return 'asked-job';
    case 'upstream':
      return support === 'forbidden' ? 'task-refused' : 'asked-upstream-task';
    case 'none':
      return 'task-refused';
  }
}

/** Whether a decision can depend on the upstream's task support (else it is made without asking the upstream). */
export function supportMatters(facts: Omit<RouteFacts, 'support'>): boolean {
  // Asked on every tool call, of a handful of distinct facts: remembered (bounded by the modes × eras × flags).
  const key = `${facts.mode}|${facts.declares}|${facts.client}|${facts.upstreamDecides}`;
  let matters = SUPPORT_MATTERS.get(key);
  if (matters === undefined) {
    const varied: RouteFacts = { ...facts, support: 'forbidden' };
    const first = callRoute(varied);
    varied.support = 'optional';
    const optional = callRoute(varied);
    varied.support = 'required';
    matters = optional !== first || callRoute(varied) !== first;
    SUPPORT_MATTERS.set(key, matters);
  }
  return matters;
}

/** `supportMatters` by its facts (mode, declares, client era, upstreamDecides): a few dozen entries at most. */
const SUPPORT_MATTERS = new Map<string, boolean>();

/** The window a call's first round gets. */
function startWindow(route: CallRoute, windowedTask: boolean, owned: boolean): CallWindow {
  if (route === 'owned-at-once') return 'none';
  if (route === 'asked-upstream-task') return 'creation';
  if (route === 'asked-job') return 'budget';
  return owned || windowedTask ? 'after-ms' : 'budget';
}

/** The decision for one turn of a call. */
export function decideCall(facts: CallFacts): CallDecision {
  const route = callRoute(facts);
  if (route === 'refused') return { action: 'refuse' };
  if (route === 'task-refused') return { action: 'refuse-task' };
  const asked = route === 'asked-upstream-task' || route === 'asked-job';
  const upstreamTask = route === 'upstream-task' || route === 'hidden-upstream-task' || asked;
  const owned = route === 'owned-every-round' || route === 'owned-first-round' || route === 'owned-at-once' || asked;
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
      return { action: 'send', upstreamTask, owned, refuseAtLimit: owned || route === 'upstream-task', window: startWindow(route, windowedTask, owned) };
    case 'resume': {
      // A wrapped always/required call asked its question before the task existed (tasks extension §Task
      // Creation: input first); once answered, the call becomes the task at once. So does an upstream task that
      // asked within the first window. (A 2025-11-25 client's call is never resumed: it has no MRTR retry.)
      const becomesTask = route === 'owned-first-round' || route === 'owned-at-once' || asked || (route === 'upstream-task' && facts.following === true);
      return { action: 'send', upstreamTask, owned, refuseAtLimit: false, window: becomesTask ? 'none' : owned ? 'after-ms' : 'budget' };
    }
    case 'result':
    case 'input':
      // A client that asked for a task gets one: an immediate result completes a gateway task, a question before any
      // task is its `input_required` (2025-11-25 basic/utilities/tasks §Creating Tasks).
      return asked || route === 'owned-at-once' ? { action: 'own-task' } : { action: 'answer' };
    case 'error':
      // An immediate JSON-RPC error (invalid arguments, an unknown tool) is no task: it is the answer.
      return { action: 'answer' };
    case 'task-created':
    case 'task-created-in-window':
      // Only a task-augmented call can create an upstream task.
      if (route === 'asked-upstream-task' || route === 'asked-job') return { action: 'proxy-task' };
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
