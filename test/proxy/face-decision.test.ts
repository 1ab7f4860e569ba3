/**
 * proxy/face-decision: which face serves a request, as a table. Each row gives the client's era, the request, what is
 * known of the upstream (its eras, or none with the last known, and its own tasks) and the route's rules; the decision
 * is checked against decideFace.
 */
import t from 'tap';
import { decideFace, type FaceDecision, type FaceFacts, type RouteRules } from '../../src/proxy/face-decision.js';
import type { UpstreamEras } from '../../src/upstream/index.js';

const TASKS_CAPS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
/** Upstream eras, by name. */
const ERAS: Record<string, UpstreamEras> = {
  legacy: { modern: false, legacy: true },
  modern: { modern: true, legacy: false },
  dual: { modern: true, legacy: true },
  neither: { modern: false, legacy: false },
  // Dual, with tasks in its 2026-07-28 leg only / in both legs.
  dualModernTasks: { modern: true, legacy: true, discover: { capabilities: TASKS_CAPS } },
  dualBothTasks: {
    modern: true,
    legacy: true,
    discover: { capabilities: TASKS_CAPS },
    identity: { serverInfo: { name: 'u', version: '1' }, capabilities: { tasks: { requests: { tools: { call: {} } } } }, protocolVersion: '2025-11-25' },
  } as UpstreamEras,
};

/** Route rules, by name: none, a wrapped tool (`slow`), a `native` rule with `afterMs` only, a job that hides `status`. */
const RULES: Record<string, RouteRules> = {
  none: rules({}),
  wraps: rules({ wrapsTools: true, servesTools: true, wrapped: ['slow'] }),
  afterMs: rules({ servesTools: true, wrapped: ['slow'] }),
  job: rules({ wrapsTools: true, servesTools: true, shapesToolList: true, wrapped: ['start'], hidden: ['status'] }),
};

function rules(r: { wrapsTools?: boolean; servesTools?: boolean; shapesToolList?: boolean; wrapped?: string[]; hidden?: string[] }): RouteRules {
  return {
    wrapsTools: () => r.wrapsTools ?? false,
    servesTools: () => r.servesTools ?? false,
    shapesToolList: () => r.shapesToolList ?? false,
    wrapsTool: (name) => (r.wrapped ?? []).includes(name),
    hidesTool: (name) => (r.hidden ?? []).includes(name),
  };
}

const call = (name: string) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } });
const rpc = (method: string, params: object = {}) => ({ jsonrpc: '2.0', id: 1, method, params });
const listen = (...taskIds: string[]) => rpc('subscriptions/listen', { notifications: { taskIds } });

const PASS: FaceDecision = { face: 'pass-through' };
const LEGACY: FaceDecision = { face: 'legacy' };
const ROUTE: FaceDecision = { face: 'modern', over: 'route' };
const MODERN: FaceDecision = { face: 'modern', over: 'modern-route' };
const DOWN: FaceDecision = { face: 'unavailable' };
const ASK: FaceDecision = { face: 'ask', fact: 'upstreamHasTasks' };

/** [what the row shows, client era, body, eras (or `down:<last known>`), rules, upstream has tasks, decision] */
type Row = [string, FaceFacts['clientEra'], unknown, string, string, boolean | undefined, FaceDecision];
const ROWS: Row[] = [
  // A legacy client: through whenever the upstream speaks its era and no rule wraps tools.
  ['legacy → legacy', 'legacy', call('x'), 'legacy', 'none', undefined, PASS],
  ['legacy → dual', 'legacy', call('x'), 'dual', 'none', undefined, PASS],
  ['legacy → neither (taken as legacy)', 'legacy', call('x'), 'neither', 'none', undefined, PASS],
  ['legacy → modern-only: the face', 'legacy', call('x'), 'modern', 'none', undefined, LEGACY],
  ['legacy GET (no body) → modern-only', 'legacy', undefined, 'modern', 'none', undefined, LEGACY],
  ['legacy → legacy with wrapping rules: the face', 'legacy', call('x'), 'legacy', 'wraps', undefined, LEGACY],
  ['legacy → legacy, native afterMs only: through', 'legacy', call('x'), 'legacy', 'afterMs', undefined, PASS],
  ['legacy → dual with tasks only in its modern leg: the face', 'legacy', call('x'), 'dualModernTasks', 'none', undefined, LEGACY],
  ['legacy → dual with tasks in both legs: through', 'legacy', call('x'), 'dualBothTasks', 'none', undefined, PASS],
  // A modern client in front of an upstream without 2026-07-28: everything over the route (legacy sessions).
  ['modern → legacy: modern face over the route', 'modern', call('x'), 'legacy', 'none', undefined, ROUTE],
  ['modern → neither: over the route', 'modern', rpc('tools/list'), 'neither', 'none', undefined, ROUTE],
  ['modern tasks/get → legacy: over the route', 'modern', rpc('tasks/get', { taskId: 'up_1' }), 'legacy', 'none', undefined, ROUTE],
  // A modern client in front of a modern upstream: through, unless the rules make the request the gateway's.
  ['modern → modern, no rules', 'modern', call('slow'), 'modern', 'none', undefined, PASS],
  ['modern → dual, no rules', 'modern', rpc('server/discover'), 'dual', 'none', undefined, PASS],
  ['modern → modern, body not an object', 'modern', 'x', 'modern', 'wraps', undefined, PASS],
  ['modern → modern, no method', 'modern', { jsonrpc: '2.0', id: 1 }, 'modern', 'wraps', undefined, PASS],
  ['server/discover with wrapping rules', 'modern', rpc('server/discover'), 'modern', 'wraps', undefined, MODERN],
  ['server/discover with native afterMs', 'modern', rpc('server/discover'), 'modern', 'afterMs', undefined, MODERN],
  ['tools/call of a wrapped tool', 'modern', call('slow'), 'modern', 'wraps', undefined, MODERN],
  ['tools/call of another tool', 'modern', call('fast'), 'modern', 'wraps', undefined, PASS],
  ['tools/call without a name', 'modern', rpc('tools/call'), 'modern', 'wraps', undefined, PASS],
  ['tools/call of a hidden tool: refused by the runtime', 'modern', call('status'), 'modern', 'job', undefined, MODERN],
  ['tools/list under a job rule: the gateway shows it', 'modern', rpc('tools/list'), 'modern', 'job', undefined, MODERN],
  ['tools/list without a job rule', 'modern', rpc('tools/list'), 'modern', 'wraps', undefined, PASS],
  ['other methods pass', 'modern', rpc('resources/list'), 'modern', 'wraps', undefined, PASS],
  // Listen streams and task requests: the gateway's own ids are its own; others depend on the upstream's tasks.
  ['listen without task ids', 'modern', listen(), 'modern', 'wraps', undefined, PASS],
  ['listen with a gateway task id', 'modern', listen('up_1', 'gwt_1'), 'modern', 'wraps', undefined, MODERN],
  ['listen with upstream ids: ask', 'modern', listen('up_1'), 'modern', 'wraps', undefined, ASK],
  ['listen with upstream ids, upstream has tasks', 'modern', listen('up_1'), 'modern', 'wraps', true, PASS],
  ['listen with upstream ids, upstream has none', 'modern', listen('up_1'), 'modern', 'wraps', false, MODERN],
  ['tasks/get of a gateway task', 'modern', rpc('tasks/get', { taskId: 'gwt_1' }), 'modern', 'wraps', undefined, MODERN],
  ['tasks/cancel of an upstream task: ask', 'modern', rpc('tasks/cancel', { taskId: 'up_1' }), 'modern', 'wraps', undefined, ASK],
  ['tasks/update, upstream has tasks', 'modern', rpc('tasks/update', { taskId: 'up_1' }), 'modern', 'wraps', true, PASS],
  ['tasks/get, upstream has none', 'modern', rpc('tasks/get', { taskId: 'up_1' }), 'modern', 'wraps', false, MODERN],
  ['tasks/get without rules that serve tools', 'modern', rpc('tasks/get', { taskId: 'gwt_1' }), 'modern', 'none', undefined, PASS],
  // The upstream's eras cannot be learned: only a modern task request the gateway's records answer is served.
  ['legacy, upstream down', 'legacy', call('x'), 'down:dual', 'wraps', undefined, DOWN],
  ['modern call, upstream down', 'modern', call('slow'), 'down:modern', 'wraps', undefined, DOWN],
  ['modern tasks/get, nothing ever known', 'modern', rpc('tasks/get', { taskId: 'gwt_1' }), 'down:', 'wraps', undefined, DOWN],
  ['modern tasks/get of a gateway task, last known modern', 'modern', rpc('tasks/get', { taskId: 'gwt_1' }), 'down:modern', 'wraps', undefined, MODERN],
  ['modern tasks/get, last known legacy: over the route', 'modern', rpc('tasks/get', { taskId: 'up_1' }), 'down:legacy', 'none', undefined, ROUTE],
  ['modern tasks/get of an upstream task, down: ask', 'modern', rpc('tasks/get', { taskId: 'up_1' }), 'down:modern', 'wraps', undefined, ASK],
  ['modern tasks/get of an upstream task, down, upstream has tasks', 'modern', rpc('tasks/get', { taskId: 'up_1' }), 'down:modern', 'wraps', true, DOWN],
  ['modern tasks/get of an upstream task, down, upstream has none', 'modern', rpc('tasks/get', { taskId: 'up_1' }), 'down:modern', 'wraps', false, MODERN],
  ['modern tasks/get, down, no rules', 'modern', rpc('tasks/get', { taskId: 'gwt_1' }), 'down:modern', 'none', undefined, DOWN],
];

t.test('every row', async (t) => {
  for (const [what, clientEra, body, eras, rulesName, upstreamHasTasks, expected] of ROWS) {
    const down = eras.startsWith('down:');
    const known = down ? eras.slice(5) : eras;
    const facts: FaceFacts = {
      clientEra,
      body,
      eras: down ? undefined : ERAS[known],
      ...(down ? { lastKnownEras: known === '' ? undefined : ERAS[known] } : {}),
      rules: RULES[rulesName] as RouteRules,
      ...(upstreamHasTasks !== undefined ? { upstreamHasTasks } : {}),
    };
    t.same(decideFace(facts), expected, what);
  }
});

t.test('the decision reads no rule it does not need', async (t) => {
  const asked: string[] = [];
  const spy: RouteRules = {
    wrapsTools: () => (asked.push('wrapsTools'), false),
    servesTools: () => (asked.push('servesTools'), false),
    shapesToolList: () => (asked.push('shapesToolList'), false),
    wrapsTool: () => (asked.push('wrapsTool'), false),
    hidesTool: () => (asked.push('hidesTool'), false),
  };
  decideFace({ clientEra: 'modern', body: call('x'), eras: ERAS.legacy, rules: spy });
  t.same(asked, [], 'a modern request to a legacy upstream asks no rule');
  decideFace({ clientEra: 'modern', body: call('x'), eras: ERAS.modern, rules: spy });
  t.same(asked, ['servesTools'], 'without rules that serve tools, nothing per tool');
});
