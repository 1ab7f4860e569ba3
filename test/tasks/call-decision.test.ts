/**
 * tasks/call-decision: what a tools/call becomes, as two tables. The first gives the route for every
 * combination of policy mode × client declares tasks × upstream task support (all 30); the second gives the
 * decision for every route × turn, each turn with the facts that change it (afterMs set, a followed upstream task, the
 * window that passed): 6 × 10. Together they cover every row of decideCall.
 */
import t from 'tap';
import { callRoute, decideCall, type CallDecision, type CallFacts, type CallRoute, type TaskMode } from '../../src/tasks/call-decision.js';
import type { TaskSupport } from '../../src/translate/index.js';

const MODES: TaskMode[] = ['native', 'off', 'auto', 'always', 'required'];
const SUPPORTS: TaskSupport[] = ['forbidden', 'optional', 'required'];
/** The turns, each with the facts beyond the route that may change its decision. */
const TURNS: Array<Pick<CallFacts, 'turn' | 'windowed' | 'following' | 'passed'>> = [
  { turn: 'start' },
  { turn: 'start', windowed: true },
  { turn: 'resume' },
  { turn: 'resume', following: true },
  { turn: 'result' },
  { turn: 'task-created' },
  { turn: 'task-created-in-window', windowed: true },
  { turn: 'window-passed', passed: 'budget' },
  { turn: 'window-passed', passed: 'after-ms', windowed: true },
  { turn: 'window-passed', passed: 'after-ms', windowed: true, following: true },
];

// [mode, declares, support, route]
const ROUTES: Array<[TaskMode, boolean, TaskSupport, CallRoute]> = [
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
];

const send = (upstreamTask: boolean, owned: boolean, refuseAtLimit: boolean, window: 'budget' | 'after-ms' | 'none'): CallDecision => ({
  action: 'send',
  upstreamTask,
  owned,
  refuseAtLimit,
  window,
});
const REFUSE: CallDecision = { action: 'refuse' };
const ANSWER: CallDecision = { action: 'answer' };

// route → decision per turn, in TURNS order: start, start with afterMs, resume, resume following a task, result,
// task-created, task-created within the window, window-passed (budget), window-passed (afterMs), and the same
// while following a task.
const TIME_OUT: CallDecision = { action: 'time-out' };
const OWN: CallDecision = { action: 'own-task' };
const PROXY: CallDecision = { action: 'proxy-task' };
const DECISIONS: Record<CallRoute, CallDecision[]> = {
  plain: [
    send(false, false, false, 'budget'),
    send(false, false, false, 'budget'),
    send(false, false, false, 'budget'),
    send(false, false, false, 'budget'),
    ANSWER,
    ANSWER,
    ANSWER,
    TIME_OUT,
    TIME_OUT,
    TIME_OUT,
  ],
  refused: Array(10).fill(REFUSE),
  // With afterMs, the first window covers the upstream task too: followed within it, the client's task once it passes.
  'upstream-task': [
    send(true, false, true, 'budget'),
    send(true, false, true, 'after-ms'),
    send(true, false, false, 'budget'),
    send(true, false, false, 'none'),
    ANSWER,
    PROXY,
    { action: 'follow-task', window: 'after-ms' },
    TIME_OUT,
    { action: 'wait', window: 'budget' },
    PROXY,
  ],
  'hidden-upstream-task': [
    send(true, false, false, 'budget'),
    send(true, false, false, 'budget'),
    send(true, false, false, 'budget'),
    send(true, false, false, 'budget'),
    ANSWER,
    { action: 'follow-task', window: 'budget' },
    { action: 'follow-task', window: 'budget' },
    TIME_OUT,
    TIME_OUT,
    TIME_OUT,
  ],
  'owned-every-round': [
    send(false, true, true, 'after-ms'),
    send(false, true, true, 'after-ms'),
    send(false, true, false, 'after-ms'),
    send(false, true, false, 'after-ms'),
    ANSWER,
    ANSWER,
    ANSWER,
    OWN,
    OWN,
    OWN,
  ],
  'owned-first-round': [
    send(false, true, true, 'after-ms'),
    send(false, true, true, 'after-ms'),
    send(false, true, false, 'none'),
    send(false, true, false, 'none'),
    ANSWER,
    ANSWER,
    ANSWER,
    OWN,
    OWN,
    OWN,
  ],
};

t.test('the route table covers every mode × declares × support', async (t) => {
  const seen = new Set<string>();
  for (const [mode, declares, support, route] of ROUTES) {
    seen.add(`${mode}/${declares}/${support}`);
    t.equal(callRoute(mode, declares, support), route, `${mode}, ${declares ? 'declares' : 'no tasks'}, upstream ${support} → ${route}`);
  }
  t.equal(seen.size, MODES.length * 2 * SUPPORTS.length, 'no combination missing or repeated');
  t.same(new Set(ROUTES.map((r) => r[3])), new Set(Object.keys(DECISIONS)), 'every route is reached by some combination');
});

t.test('every route × turn', async (t) => {
  for (const [route, decisions] of Object.entries(DECISIONS) as Array<[CallRoute, CallDecision[]]>) {
    const [mode, declares, support] = ROUTES.find((r) => r[3] === route) as [TaskMode, boolean, TaskSupport, CallRoute];
    TURNS.forEach((turn, i) => {
      t.same(decideCall({ mode, declares, support, ...turn }), decisions[i], `${route}, ${JSON.stringify(turn)}`);
    });
  }
});

t.test('decideCall depends on the facts only through the route', async (t) => {
  for (const [mode, declares, support, route] of ROUTES) {
    const want = DECISIONS[route];
    TURNS.forEach((turn, i) => t.same(decideCall({ mode, declares, support, ...turn }), want[i], `${mode}/${declares}/${support}/${JSON.stringify(turn)}`));
  }
});

t.test('a job is an upstream task made of the server tools: the client takes it or the call follows it', async (t) => {
  for (const support of ['forbidden', 'optional', 'required'] as const) {
    t.equal(callRoute('job', true, support), 'upstream-task', `declaring client, upstream support ${support}`);
    t.equal(callRoute('job', false, support), 'hidden-upstream-task', `client without tasks, upstream support ${support}`);
  }
  t.match(decideCall({ mode: 'job', declares: true, support: 'forbidden', turn: 'start' }), {
    action: 'send',
    upstreamTask: true,
    owned: false,
    refuseAtLimit: true,
    window: 'budget',
  });
  t.match(decideCall({ mode: 'job', declares: false, support: 'forbidden', turn: 'start' }), { action: 'send', refuseAtLimit: false, window: 'budget' });
  t.strictSame(decideCall({ mode: 'job', declares: true, support: 'forbidden', turn: 'task-created' }), { action: 'proxy-task' });
  t.strictSame(decideCall({ mode: 'job', declares: false, support: 'forbidden', turn: 'task-created' }), { action: 'follow-task', window: 'budget' });
  t.strictSame(decideCall({ mode: 'job', declares: false, support: 'forbidden', turn: 'window-passed', following: true, passed: 'budget' }), {
    action: 'time-out',
  });
});
