/**
 * tasks/calls/call-decision: what a tools/call becomes, as tables. The route tables give the route for every combination
 * of the route facts: for a 2026-07-28 client (the modern face, `callTool`), mode × declares × upstream task support
 * (all 36); for a 2025-11-25 client (the legacy face: `callToolPlain` without `task`, `createTask` with it), the same
 * against a legacy upstream (36) and against a modern one that decides per call (24). The decision table gives the
 * decision for every route × turn, each turn with the facts that change it (afterMs set, a followed upstream task, the
 * window that passed): 10 × 14. Together they cover every row of decideCall.
 */
import t from 'tap';
import {
  callRoute,
  decideCall,
  supportMatters,
  type CallDecision,
  type CallFacts,
  type CallRoute,
  type RouteFacts,
} from '../../../src/tasks/calls/call-decision.js';
import { TASK_MODES, type TaskMode, type TaskSupport } from '../../../src/translate/index.js';

const SUPPORTS: TaskSupport[] = ['forbidden', 'optional', 'required'];
/** The turns, each with the facts beyond the route that may change its decision. */
const TURNS: Array<Pick<CallFacts, 'turn' | 'windowed' | 'following' | 'passed'>> = [
  { turn: 'start' },
  { turn: 'start', windowed: true },
  { turn: 'resume' },
  { turn: 'resume', following: true },
  { turn: 'result' },
  { turn: 'error' },
  { turn: 'input' },
  { turn: 'task-created' },
  { turn: 'task-created-in-window', windowed: true },
  { turn: 'window-passed', passed: 'budget' },
  { turn: 'window-passed', passed: 'after-ms', windowed: true },
  { turn: 'window-passed', passed: 'after-ms', windowed: true, following: true },
  { turn: 'window-passed', passed: 'creation' },
  { turn: 'window-passed', passed: 'none' },
];

type Row = [TaskMode, boolean, TaskSupport, CallRoute];

// A 2026-07-28 client: [mode, declares the tasks extension, upstream support, route]
const MODERN_ROUTES: Row[] = [
  // native: the upstream's own task support decides; a client that declares tasks gets them.
  ['native', false, 'forbidden', 'plain'],
  ['native', false, 'optional', 'plain'],
  ['native', false, 'required', 'refused'],
  ['native', true, 'forbidden', 'plain'],
  ['native', true, 'optional', 'upstream-task'],
  ['native', true, 'required', 'upstream-task'],
  // off: never a task for the client; a required upstream task is hidden inside the call.
  ['off', false, 'forbidden', 'plain'],
  ['off', false, 'optional', 'plain'],
  ['off', false, 'required', 'hidden-upstream-task'],
  ['off', true, 'forbidden', 'plain'],
  ['off', true, 'optional', 'plain'],
  ['off', true, 'required', 'hidden-upstream-task'],
  // auto: wrapped when the client declares tasks, each round with afterMs; the upstream's required task wins.
  ['auto', false, 'forbidden', 'plain'],
  ['auto', false, 'optional', 'plain'],
  ['auto', false, 'required', 'hidden-upstream-task'],
  ['auto', true, 'forbidden', 'owned-every-round'],
  ['auto', true, 'optional', 'owned-every-round'],
  ['auto', true, 'required', 'upstream-task'],
  // always: wrapped when the client declares tasks, the first round with afterMs.
  ['always', false, 'forbidden', 'plain'],
  ['always', false, 'optional', 'plain'],
  ['always', false, 'required', 'hidden-upstream-task'],
  ['always', true, 'forbidden', 'owned-first-round'],
  ['always', true, 'optional', 'owned-first-round'],
  ['always', true, 'required', 'upstream-task'],
  // required: a task or nothing.
  ['required', false, 'forbidden', 'refused'],
  ['required', false, 'optional', 'refused'],
  ['required', false, 'required', 'refused'],
  ['required', true, 'forbidden', 'owned-first-round'],
  ['required', true, 'optional', 'owned-first-round'],
  ['required', true, 'required', 'upstream-task'],
  // job: an upstream task made of the server's tools, whatever the upstream's support: taken, or followed in the call.
  ['job', false, 'forbidden', 'hidden-upstream-task'],
  ['job', false, 'optional', 'hidden-upstream-task'],
  ['job', false, 'required', 'hidden-upstream-task'],
  ['job', true, 'forbidden', 'upstream-task'],
  ['job', true, 'optional', 'upstream-task'],
  ['job', true, 'required', 'upstream-task'],
];

// A 2025-11-25 client of a legacy upstream: [mode, sent `task`, upstream support, route]. Without `task` (callToolPlain)
// never a task and never refused: a task the upstream requires is hidden. With it (createTask) a task or -32601.
const LEGACY_ROUTES: Row[] = [
  ['native', false, 'forbidden', 'plain'],
  ['native', false, 'optional', 'plain'],
  ['native', false, 'required', 'hidden-upstream-task'],
  ['native', true, 'forbidden', 'task-refused'],
  ['native', true, 'optional', 'asked-upstream-task'],
  ['native', true, 'required', 'asked-upstream-task'],
  ['off', false, 'forbidden', 'plain'],
  ['off', false, 'optional', 'plain'],
  ['off', false, 'required', 'hidden-upstream-task'],
  ['off', true, 'forbidden', 'task-refused'],
  ['off', true, 'optional', 'task-refused'],
  ['off', true, 'required', 'task-refused'],
  ['auto', false, 'forbidden', 'plain'],
  ['auto', false, 'optional', 'plain'],
  ['auto', false, 'required', 'hidden-upstream-task'],
  ['auto', true, 'forbidden', 'owned-at-once'],
  ['auto', true, 'optional', 'owned-at-once'],
  ['auto', true, 'required', 'owned-at-once'],
  ['always', false, 'forbidden', 'plain'],
  ['always', false, 'optional', 'plain'],
  ['always', false, 'required', 'hidden-upstream-task'],
  ['always', true, 'forbidden', 'owned-at-once'],
  ['always', true, 'optional', 'owned-at-once'],
  ['always', true, 'required', 'owned-at-once'],
  ['required', false, 'forbidden', 'plain'],
  ['required', false, 'optional', 'plain'],
  ['required', false, 'required', 'hidden-upstream-task'],
  ['required', true, 'forbidden', 'owned-at-once'],
  ['required', true, 'optional', 'owned-at-once'],
  ['required', true, 'required', 'owned-at-once'],
  ['job', false, 'forbidden', 'hidden-upstream-task'],
  ['job', false, 'optional', 'hidden-upstream-task'],
  ['job', false, 'required', 'hidden-upstream-task'],
  ['job', true, 'forbidden', 'asked-job'],
  ['job', true, 'optional', 'asked-job'],
  ['job', true, 'required', 'asked-job'],
];

// A 2025-11-25 client of a modern upstream, which decides per call (its support is `optional` with the tasks extension,
// else `forbidden`): a client without `task` has the call sent task-augmented wherever the upstream may make a task.
const LEGACY_OVER_MODERN_ROUTES: Row[] = [
  ['native', false, 'forbidden', 'plain'],
  ['native', false, 'optional', 'hidden-upstream-task'],
  ['native', true, 'forbidden', 'task-refused'],
  ['native', true, 'optional', 'asked-upstream-task'],
  ['off', false, 'forbidden', 'plain'],
  ['off', false, 'optional', 'hidden-upstream-task'],
  ['off', true, 'forbidden', 'task-refused'],
  ['off', true, 'optional', 'task-refused'],
  ['auto', false, 'forbidden', 'plain'],
  ['auto', false, 'optional', 'hidden-upstream-task'],
  ['auto', true, 'forbidden', 'owned-at-once'],
  ['auto', true, 'optional', 'owned-at-once'],
  ['always', false, 'forbidden', 'plain'],
  ['always', false, 'optional', 'hidden-upstream-task'],
  ['always', true, 'forbidden', 'owned-at-once'],
  ['always', true, 'optional', 'owned-at-once'],
  ['required', false, 'forbidden', 'plain'],
  ['required', false, 'optional', 'hidden-upstream-task'],
  ['required', true, 'forbidden', 'owned-at-once'],
  ['required', true, 'optional', 'owned-at-once'],
  ['job', false, 'forbidden', 'hidden-upstream-task'],
  ['job', false, 'optional', 'hidden-upstream-task'],
  ['job', true, 'forbidden', 'asked-job'],
  ['job', true, 'optional', 'asked-job'],
];

/** Every row as the facts it stands for, with its route. */
const ROWS: Array<{ facts: RouteFacts; route: CallRoute }> = [
  ...MODERN_ROUTES.map(([mode, declares, support, route]) => ({ facts: { mode, declares, support }, route })),
  ...LEGACY_ROUTES.map(([mode, declares, support, route]) => ({ facts: { mode, declares, support, client: 'legacy' as const }, route })),
  ...LEGACY_OVER_MODERN_ROUTES.map(([mode, declares, support, route]) => ({
    facts: { mode, declares, support, client: 'legacy' as const, upstreamDecides: true },
    route,
  })),
];

const send = (upstreamTask: boolean, owned: boolean, refuseAtLimit: boolean, window: 'budget' | 'after-ms' | 'creation' | 'none'): CallDecision => ({
  action: 'send',
  upstreamTask,
  owned,
  refuseAtLimit,
  window,
});
const REFUSE: CallDecision = { action: 'refuse' };
const REFUSE_TASK: CallDecision = { action: 'refuse-task' };
const ANSWER: CallDecision = { action: 'answer' };
const TIME_OUT: CallDecision = { action: 'time-out' };
const OWN: CallDecision = { action: 'own-task' };
const PROXY: CallDecision = { action: 'proxy-task' };
const FOLLOW: CallDecision = { action: 'follow-task', window: 'budget' };

// route → decision per turn, in TURNS order: start, start with afterMs, resume, resume following a task, result, error,
// input, task-created, task-created within the window, window-passed (budget), window-passed (afterMs), the same while
// following a task, window-passed (the creation window), window-passed (none).
const DECISIONS: Record<CallRoute, CallDecision[]> = {
  plain: [...Array(4).fill(send(false, false, false, 'budget')), ...Array(5).fill(ANSWER), ...Array(5).fill(TIME_OUT)],
  refused: Array(14).fill(REFUSE),
  'task-refused': Array(14).fill(REFUSE_TASK),
  // With afterMs, the first window covers the upstream task too: followed within it, the client's task once it passes.
  'upstream-task': [
    send(true, false, true, 'budget'),
    send(true, false, true, 'after-ms'),
    send(true, false, false, 'budget'),
    send(true, false, false, 'none'),
    ANSWER,
    ANSWER,
    ANSWER,
    PROXY,
    { action: 'follow-task', window: 'after-ms' },
    TIME_OUT,
    { action: 'wait', window: 'budget' },
    PROXY,
    TIME_OUT,
    TIME_OUT,
  ],
  'hidden-upstream-task': [...Array(4).fill(send(true, false, false, 'budget')), ...Array(3).fill(ANSWER), FOLLOW, FOLLOW, ...Array(5).fill(TIME_OUT)],
  'owned-every-round': [
    send(false, true, true, 'after-ms'),
    send(false, true, true, 'after-ms'),
    send(false, true, false, 'after-ms'),
    send(false, true, false, 'after-ms'),
    ...Array(5).fill(ANSWER),
    ...Array(5).fill(OWN),
  ],
  'owned-first-round': [
    send(false, true, true, 'after-ms'),
    send(false, true, true, 'after-ms'),
    send(false, true, false, 'none'),
    send(false, true, false, 'none'),
    ...Array(5).fill(ANSWER),
    ...Array(5).fill(OWN),
  ],
  // A 2025-11-25 client that asked for a task gets one at once for a wrapped call; nothing else can happen first.
  'owned-at-once': [
    send(false, true, true, 'none'),
    send(false, true, true, 'none'),
    send(false, true, false, 'none'),
    send(false, true, false, 'none'),
    OWN,
    ANSWER,
    OWN,
    ANSWER,
    ANSWER,
    ...Array(5).fill(OWN),
  ],
  // It asked for a task the upstream may make: the upstream's task, else a gateway task of whatever came first but an
  // error; within the creation window (a job's start tool: within the budget).
  'asked-upstream-task': [
    send(true, true, true, 'creation'),
    send(true, true, true, 'creation'),
    send(true, true, false, 'none'),
    send(true, true, false, 'none'),
    OWN,
    ANSWER,
    OWN,
    PROXY,
    PROXY,
    ...Array(5).fill(OWN),
  ],
  'asked-job': [
    send(true, true, true, 'budget'),
    send(true, true, true, 'budget'),
    send(true, true, false, 'none'),
    send(true, true, false, 'none'),
    OWN,
    ANSWER,
    OWN,
    PROXY,
    PROXY,
    ...Array(5).fill(OWN),
  ],
};

const label = (f: RouteFacts) =>
  `${f.client ?? 'modern'} client${f.upstreamDecides ? ' (upstream decides per call)' : ''}, ${f.mode}, ${f.declares ? 'takes tasks' : 'no tasks'}, upstream ${f.support}`;

t.test('the route tables cover every combination of their facts', async (t) => {
  for (const { facts, route } of ROWS) t.equal(callRoute(facts), route, `${label(facts)} → ${route}`);
  const count = (rows: Row[]) => new Set(rows.map(([m, d, s]) => `${m}/${d}/${s}`)).size;
  t.equal(count(MODERN_ROUTES), MODERN_ROUTES.length, 'no modern row repeated');
  t.equal(count(MODERN_ROUTES), TASK_MODES.length * 2 * SUPPORTS.length, 'every mode × declares × support, modern client');
  t.equal(count(LEGACY_ROUTES), TASK_MODES.length * 2 * SUPPORTS.length, 'the same, 2025-11-25 client of a legacy upstream');
  t.equal(count(LEGACY_OVER_MODERN_ROUTES), TASK_MODES.length * 2 * 2, 'the same, 2025-11-25 client of a modern upstream');
  t.same(new Set(ROWS.map((r) => r.route)), new Set(Object.keys(DECISIONS)), 'every route is reached by some combination');
});

t.test('every route × turn', async (t) => {
  for (const [route, decisions] of Object.entries(DECISIONS) as Array<[CallRoute, CallDecision[]]>) {
    t.equal(decisions.length, TURNS.length, `${route}: one decision per turn`);
    const row = ROWS.find((r) => r.route === route);
    if (!row) continue;
    TURNS.forEach((turn, i) => t.same(decideCall({ ...row.facts, ...turn }), decisions[i], `${route}, ${JSON.stringify(turn)}`));
  }
});

t.test('decideCall depends on the facts only through the route', async (t) => {
  for (const { facts, route } of ROWS) {
    TURNS.forEach((turn, i) => t.same(decideCall({ ...facts, ...turn }), DECISIONS[route][i], `${label(facts)}, ${JSON.stringify(turn)}`));
  }
});

t.test('callToolPlain: a 2025-11-25 call without task is sent, never refused, never a task of the gateway', async (t) => {
  for (const { facts } of ROWS.filter((r) => r.facts.client === 'legacy' && !r.facts.declares)) {
    t.match(decideCall({ ...facts, turn: 'start' }), { action: 'send', owned: false, refuseAtLimit: false, window: 'budget' }, label(facts));
  }
});

t.test('createTask: a 2025-11-25 call with task is a task (checked at the limit first) or refused with -32601', async (t) => {
  for (const { facts, route } of ROWS.filter((r) => r.facts.client === 'legacy' && r.facts.declares)) {
    const start = decideCall({ ...facts, turn: 'start' });
    if (route === 'task-refused') t.same(start, REFUSE_TASK, label(facts));
    else t.match(start, { action: 'send', owned: true, refuseAtLimit: true }, label(facts));
  }
});

t.test('the upstream is asked its task support only where the decision can depend on it', async (t) => {
  const cases: Array<[Omit<RouteFacts, 'support'>, boolean, string]> = [
    [{ mode: 'native', declares: true }, true, 'modern client, native'],
    [{ mode: 'off', declares: false }, true, 'modern client, off: a required upstream task is hidden'],
    [{ mode: 'auto', declares: true }, true, "modern client, auto: the upstream's required task wins"],
    [{ mode: 'required', declares: false }, false, 'modern client without tasks, required: refused whatever the upstream'],
    [{ mode: 'job', declares: true }, false, 'modern client, job: made of the server’s own tools'],
    [{ mode: 'native', declares: false, client: 'legacy' }, true, '2025-11-25 call without task, native'],
    [{ mode: 'job', declares: false, client: 'legacy' }, false, '2025-11-25 call without task, job'],
    [{ mode: 'native', declares: true, client: 'legacy' }, true, '2025-11-25 call with task, native'],
    [{ mode: 'always', declares: true, client: 'legacy' }, false, '2025-11-25 call with task, always: a gateway task at once'],
    [{ mode: 'off', declares: true, client: 'legacy' }, false, '2025-11-25 call with task, off: refused whatever the upstream'],
  ];
  for (const [facts, asks, what] of cases) t.equal(supportMatters(facts), asks, what);
});
