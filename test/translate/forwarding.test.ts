/** translate/forwarding: params, progress token and request-stream relay rules of a forwarded modern request. */
import t from 'tap';
import { LOG_LEVELS } from '../../src/translate/constants.js';
import { legacyParams, logLevelPasses, progressTokenOf, relayedOnRequestStream } from '../../src/translate/forwarding.js';
import type { ModernRequest } from '../../src/translate/modern-request.js';

const request = (params: Record<string, unknown>): ModernRequest => ({
  id: 1,
  method: 'tools/call',
  policy: { kind: 'forward-input', nameParam: 'name' },
  params,
  envelope: { protocolVersion: '2026-07-28', clientCapabilities: {} },
});

t.test('legacyParams drops a modern client’s task and keeps everything else', async (t) => {
  t.same(legacyParams(request({ name: 'x', arguments: { a: 1 }, task: { ttl: 5 }, _meta: { progressToken: 'p' } })), {
    name: 'x',
    arguments: { a: 1 },
    _meta: { progressToken: 'p' },
  });
  const params = { name: 'x', arguments: {} };
  t.same(legacyParams(request(params)), params, 'without task: the same params');
  t.not(legacyParams(request(params)), params, 'a copy, the request is not mutated');
});

t.test('progressTokenOf', async (t) => {
  const table: Array<[string, Record<string, unknown>, string | number | undefined]> = [
    ['string token', { _meta: { progressToken: 'abc' } }, 'abc'],
    ['number token', { _meta: { progressToken: 0 } }, 0],
    ['no _meta', {}, undefined],
    ['_meta not an object', { _meta: 'x' }, undefined],
    ['object token is no token', { _meta: { progressToken: { a: 1 } } }, undefined],
    ['null token', { _meta: { progressToken: null } }, undefined],
  ];
  for (const [name, params, want] of table) t.equal(progressTokenOf(params), want, name);
});

t.test('logLevelPasses ranks the spec levels in order', async (t) => {
  t.same(LOG_LEVELS, ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']);
  for (const [i, minimum] of LOG_LEVELS.entries()) {
    for (const [j, level] of LOG_LEVELS.entries()) t.equal(logLevelPasses(level, minimum), j >= i, `${level} for ${minimum}`);
  }
  t.equal(logLevelPasses('verbose', 'debug'), false, 'an unknown level ranks below debug');
  t.equal(logLevelPasses('verbose', 'loud'), true, 'both unknown: equal rank');
  t.equal(logLevelPasses('debug', 'loud'), true, 'an unknown minimum lets every known level through');
});

t.test('relayedOnRequestStream', async (t) => {
  const progress = (token: unknown) => ({ jsonrpc: '2.0' as const, method: 'notifications/progress', params: { progressToken: token, progress: 1 } });
  const log = (level?: unknown) => ({
    jsonrpc: '2.0' as const,
    method: 'notifications/message',
    params: level === undefined ? { data: 'x' } : { level, data: 'x' },
  });
  const table: Array<[string, Parameters<typeof relayedOnRequestStream>[0], string | number | undefined, string | undefined, boolean]> = [
    ['progress for the client’s token', progress('c'), 'c', undefined, true],
    ['progress for a numeric token', progress(7), 7, undefined, true],
    ['progress for the gateway’s own token', progress('gw-1'), 'c', undefined, false],
    ['progress when the client sent no token', progress('gw-1'), undefined, undefined, false],
    ['a token of another type', progress('7'), 7, undefined, false],
    ['log at the asked level', log('warning'), undefined, 'warning', true],
    ['log above the asked level', log('error'), undefined, 'warning', true],
    ['log below the asked level', log('info'), undefined, 'warning', false],
    ['log without a level counts as info', log(), undefined, 'info', true],
    ['log without a level, client asked notice', log(), undefined, 'notice', false],
    ['log with a non-string level counts as info', log(3), undefined, 'debug', true],
    ['log when the client asked for none', log('emergency'), undefined, undefined, false],
    ['elicitation/complete has no counterpart', { jsonrpc: '2.0', method: 'notifications/elicitation/complete', params: {} }, 'c', 'debug', false],
    ['list changes belong on a listen stream', { jsonrpc: '2.0', method: 'notifications/tools/list_changed' }, 'c', 'debug', false],
  ];
  for (const [name, n, progressToken, logLevel, want] of table) t.equal(relayedOnRequestStream(n, { progressToken, logLevel }), want, name);
});
