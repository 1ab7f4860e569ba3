/** translate/era: which protocol era a request belongs to (translation.md §3.1). */
import t from 'tap';
import { classifyEra, metaProtocolVersion, type Era, type EraSignals } from '../../src/translate/era.js';
import { K, LEGACY, MODERN, MODERN_WIRE } from '../fixtures/translate-wire.js';

const legacyInitialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: LEGACY, capabilities: {}, clientInfo: { name: 'old', version: '1' } },
};
const modernToolsList = MODERN_WIRE.request('tools/list').body;
const plainToolsList = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
const metaOnly = (v: unknown) => ({ jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: { [K.protocolVersion]: v } } });

t.test('classifyEra', async (t) => {
  const table: Array<[string, EraSignals, Era]> = [
    ['GET is legacy even with modern markers', { httpMethod: 'GET', protocolVersionHeader: MODERN, body: modernToolsList }, 'legacy'],
    ['DELETE is legacy', { httpMethod: 'DELETE', protocolVersionHeader: MODERN, body: undefined }, 'legacy'],
    ['lower-case get is legacy', { httpMethod: 'get', protocolVersionHeader: undefined, body: undefined }, 'legacy'],
    ['PUT is legacy', { httpMethod: 'PUT', protocolVersionHeader: MODERN, body: modernToolsList }, 'legacy'],
    [
      'batch array with a modern header is a (malformed) modern request',
      { httpMethod: 'POST', protocolVersionHeader: MODERN, body: [modernToolsList] },
      'modern',
    ],
    ['batch array without a modern header is legacy', { httpMethod: 'POST', protocolVersionHeader: '2025-03-26', body: [modernToolsList] }, 'legacy'],
    ['empty batch is legacy', { httpMethod: 'POST', protocolVersionHeader: undefined, body: [] }, 'legacy'],
    ['initialize without markers is legacy', { httpMethod: 'POST', protocolVersionHeader: undefined, body: legacyInitialize }, 'legacy'],
    ['initialize with a legacy header is legacy', { httpMethod: 'POST', protocolVersionHeader: LEGACY, body: legacyInitialize }, 'legacy'],
    [
      'initialize with the modern header is modern (removed method, 404)',
      { httpMethod: 'POST', protocolVersionHeader: MODERN, body: legacyInitialize },
      'modern',
    ],
    [
      'initialize with modern _meta is modern',
      { httpMethod: 'POST', protocolVersionHeader: undefined, body: MODERN_WIRE.request('initialize').body },
      'modern',
    ],
    ['legacy header 2025-11-25', { httpMethod: 'POST', protocolVersionHeader: '2025-11-25', body: plainToolsList }, 'legacy'],
    ['legacy header 2025-06-18', { httpMethod: 'POST', protocolVersionHeader: '2025-06-18', body: plainToolsList }, 'legacy'],
    ['legacy header 2025-03-26', { httpMethod: 'POST', protocolVersionHeader: '2025-03-26', body: plainToolsList }, 'legacy'],
    ['legacy header 2024-11-05', { httpMethod: 'POST', protocolVersionHeader: '2024-11-05', body: plainToolsList }, 'legacy'],
    ['modern header and _meta', { httpMethod: 'POST', protocolVersionHeader: MODERN, body: modernToolsList }, 'modern'],
    ['lower-case post is POST', { httpMethod: 'post', protocolVersionHeader: MODERN, body: modernToolsList }, 'modern'],
    ['modern header only', { httpMethod: 'POST', protocolVersionHeader: MODERN, body: plainToolsList }, 'modern'],
    ['_meta only, no header', { httpMethod: 'POST', protocolVersionHeader: undefined, body: modernToolsList }, 'modern'],
    ['_meta wins over a legacy header', { httpMethod: 'POST', protocolVersionHeader: LEGACY, body: modernToolsList }, 'modern'],
    ['_meta with an unknown future version', { httpMethod: 'POST', protocolVersionHeader: undefined, body: metaOnly('2099-01-01') }, 'modern'],
    ['_meta version of a wrong type still marks modern', { httpMethod: 'POST', protocolVersionHeader: undefined, body: metaOnly(7) }, 'modern'],
    ['unknown future header', { httpMethod: 'POST', protocolVersionHeader: '2027-03-01', body: plainToolsList }, 'modern'],
    ['garbage header is not legacy', { httpMethod: 'POST', protocolVersionHeader: 'banana', body: plainToolsList }, 'modern'],
    ['empty header is absent', { httpMethod: 'POST', protocolVersionHeader: '', body: plainToolsList }, 'legacy'],
    ['no markers at all', { httpMethod: 'POST', protocolVersionHeader: undefined, body: plainToolsList }, 'legacy'],
    ['POSTed response is legacy', { httpMethod: 'POST', protocolVersionHeader: undefined, body: { jsonrpc: '2.0', id: 1, result: {} } }, 'legacy'],
    [
      'notifications/initialized is legacy',
      { httpMethod: 'POST', protocolVersionHeader: LEGACY, body: { jsonrpc: '2.0', method: 'notifications/initialized' } },
      'legacy',
    ],
    ['non-object body', { httpMethod: 'POST', protocolVersionHeader: undefined, body: 'hello' }, 'legacy'],
    [
      '_meta not an object',
      { httpMethod: 'POST', protocolVersionHeader: undefined, body: { jsonrpc: '2.0', id: 1, method: 'x', params: { _meta: 'v' } } },
      'legacy',
    ],
  ];
  for (const [name, signals, want] of table) t.equal(classifyEra(signals), want, name);
});

t.test('metaProtocolVersion', async (t) => {
  const table: Array<[string, unknown, unknown]> = [
    ['modern body', modernToolsList, MODERN],
    ['future version', metaOnly('2099-01-01'), '2099-01-01'],
    ['non-string kept as is', metaOnly(5), 5],
    ['no params', plainToolsList, undefined],
    ['params not an object', { method: 'x', params: [1] }, undefined],
    ['_meta absent', { method: 'x', params: {} }, undefined],
    ['_meta array', { method: 'x', params: { _meta: [] } }, undefined],
    ['key absent', { method: 'x', params: { _meta: { progressToken: 1 } } }, undefined],
    ['not an object', 'x', undefined],
    ['null', null, undefined],
    ['array', [modernToolsList], undefined],
  ];
  for (const [name, body, want] of table) t.equal(metaProtocolVersion(body), want, name);
});
