/** translate/methods: the method registry of the modern client face. */
import t from 'tap';
import { methodPolicy, UNKNOWN_METHOD_POLICY, type MethodPolicy } from '../../src/translate/methods.js';

t.test('every registered method', async (t) => {
  const table: Array<[string, MethodPolicy]> = [
    ['server/discover', { kind: 'discover', cacheable: true }],
    ['tools/list', { kind: 'forward', cacheable: true }],
    ['tools/call', { kind: 'forward-input', nameParam: 'name' }],
    ['prompts/list', { kind: 'forward', cacheable: true }],
    ['prompts/get', { kind: 'forward-input', nameParam: 'name' }],
    ['resources/list', { kind: 'forward', cacheable: true }],
    ['resources/templates/list', { kind: 'forward', cacheable: true }],
    ['resources/read', { kind: 'forward-input', nameParam: 'uri', cacheable: true }],
    ['completion/complete', { kind: 'forward' }],
    ['subscriptions/listen', { kind: 'listen' }],
    ['tasks/get', { kind: 'tasks', nameParam: 'taskId' }],
    ['tasks/update', { kind: 'tasks', nameParam: 'taskId' }],
    ['tasks/cancel', { kind: 'tasks', nameParam: 'taskId' }],
    ['initialize', { kind: 'removed' }],
    ['ping', { kind: 'removed' }],
    ['logging/setLevel', { kind: 'removed' }],
    ['resources/subscribe', { kind: 'removed' }],
    ['resources/unsubscribe', { kind: 'removed' }],
    ['tasks/result', { kind: 'removed' }],
    ['tasks/list', { kind: 'removed' }],
  ];
  for (const [method, want] of table) {
    const got = methodPolicy(method);
    t.equal(got.kind, want.kind, `${method} kind`);
    t.equal(got.nameParam, want.nameParam, `${method} nameParam`);
    t.equal(got.cacheable === true, want.cacheable === true, `${method} cacheable`);
    t.not(got, UNKNOWN_METHOD_POLICY, `${method} is registered`);
  }
});

t.test('spec-derived sets', async (t) => {
  const all = [
    'server/discover',
    'tools/list',
    'tools/call',
    'prompts/list',
    'prompts/get',
    'resources/list',
    'resources/templates/list',
    'resources/read',
    'completion/complete',
    'subscriptions/listen',
    'tasks/get',
    'tasks/update',
    'tasks/cancel',
  ];
  // §3.8: exactly these results are CacheableResult.
  t.same(all.filter((m) => methodPolicy(m).cacheable).sort(), [
    'prompts/list',
    'resources/list',
    'resources/read',
    'resources/templates/list',
    'server/discover',
    'tools/list',
  ]);
  // §3.6: MRTR is allowed only on tools/call, prompts/get and resources/read.
  t.same(all.filter((m) => methodPolicy(m).kind === 'forward-input').sort(), ['prompts/get', 'resources/read', 'tools/call']);
  // §3.5: Mcp-Name is required for exactly these.
  t.same(all.filter((m) => methodPolicy(m).nameParam).sort(), ['prompts/get', 'resources/read', 'tasks/cancel', 'tasks/get', 'tasks/update', 'tools/call']);
});

t.test('unknown methods get the explicit policy', async (t) => {
  t.strictSame(UNKNOWN_METHOD_POLICY, { kind: 'forward' });
  const table = ['vendor/custom', 'tools/lists', 'TOOLS/LIST', '', 'toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf'];
  for (const m of table) t.equal(methodPolicy(m), UNKNOWN_METHOD_POLICY, JSON.stringify(m));
});
