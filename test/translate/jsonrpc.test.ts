/** translate/jsonrpc: JSON-RPC 2.0 guards and builders, era-neutral. */
import t from 'tap';
import {
  errorResponse,
  isErrorResponse,
  isNotification,
  isObject,
  putOwn,
  isRequest,
  isResponse,
  paramsOf,
  requestIdOf,
  resultResponse,
} from '../../src/translate/jsonrpc.js';

const request = { jsonrpc: '2.0', id: 1, method: 'tools/list' };
const stringIdRequest = { jsonrpc: '2.0', id: 'a-1', method: 'tools/call', params: { name: 'x' } };
const notification = { jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 1 } };
const result = { jsonrpc: '2.0', id: 1, result: {} };
const error = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'bad' } };

t.test('isObject', async (t) => {
  const table: Array<[unknown, boolean]> = [
    [{}, true],
    [{ a: 1 }, true],
    [Object.create(null), true],
    [[], false],
    [null, false],
    [undefined, false],
    ['{}', false],
    [1, false],
    [true, false],
  ];
  for (const [v, want] of table) t.equal(isObject(v), want, JSON.stringify(v) ?? String(v));
});

t.test('putOwn sets an own member, __proto__ included, as JSON.parse does', async (t) => {
  const parsed = JSON.parse('{"a":1,"__proto__":{"polluted":true}}') as Record<string, unknown>;
  const copy: Record<string, unknown> = {};
  for (const k of Object.keys(parsed)) putOwn(copy, k, parsed[k]);
  t.same(Object.keys(copy), ['a', '__proto__']);
  t.equal(Object.getPrototypeOf(copy), Object.prototype, 'the prototype is untouched');
  t.equal((copy as { polluted?: boolean }).polluted, undefined);
  t.equal(JSON.stringify(copy), '{"a":1,"__proto__":{"polluted":true}}');
});

t.test('message classification', async (t) => {
  // [message, isRequest, isNotification, isResponse, isErrorResponse]
  const table: Array<[string, unknown, boolean, boolean, boolean, boolean]> = [
    ['request, numeric id', request, true, false, false, false],
    ['request, string id', stringIdRequest, true, false, false, false],
    ['request, id 0', { ...request, id: 0 }, true, false, false, false],
    ['notification', notification, false, true, false, false],
    ['result response', result, false, false, true, false],
    ['error response, null id', error, false, false, true, true],
    ['error response, error not an object', { jsonrpc: '2.0', id: 1, error: 'x' }, false, false, true, false],
    ['method + null id: neither request nor notification', { jsonrpc: '2.0', id: null, method: 'x' }, false, false, false, false],
    ['method + object id', { jsonrpc: '2.0', id: {}, method: 'x' }, false, false, false, false],
    ['method + infinite id', { jsonrpc: '2.0', id: Infinity, method: 'x' }, false, false, false, false],
    ['method not a string', { jsonrpc: '2.0', id: 1, method: 5 }, false, false, false, false],
    ['response with a method is not a response', { jsonrpc: '2.0', id: 1, method: 'x', result: {} }, true, false, false, false],
    ['neither result nor error', { jsonrpc: '2.0', id: 1 }, false, false, false, false],
    ['batch array', [request], false, false, false, false],
    ['null', null, false, false, false, false],
    ['string', 'x', false, false, false, false],
  ];
  for (const [name, m, req, note, resp, err] of table) {
    t.test(name, async (t) => {
      t.equal(isRequest(m), req, 'isRequest');
      t.equal(isNotification(m), note, 'isNotification');
      t.equal(isResponse(m), resp, 'isResponse');
      t.equal(isErrorResponse(m), err, 'isErrorResponse');
    });
  }
});

t.test('builders', async (t) => {
  t.strictSame(errorResponse(7, { code: -32601, message: 'nope' }), { jsonrpc: '2.0', id: 7, error: { code: -32601, message: 'nope' } });
  t.strictSame(errorResponse(null, { code: -32700, message: 'parse', data: { at: 3 } }), {
    jsonrpc: '2.0',
    id: null,
    error: { code: -32700, message: 'parse', data: { at: 3 } },
  });
  t.strictSame(resultResponse('r', { resultType: 'complete' }), { jsonrpc: '2.0', id: 'r', result: { resultType: 'complete' } });
  t.ok(isErrorResponse(errorResponse(1, { code: 1, message: 'm' })), 'built error response is recognised');
  t.ok(isResponse(resultResponse(1, {})), 'built result response is recognised');
});

t.test('paramsOf', async (t) => {
  const p = { name: 'x' };
  t.equal(paramsOf({ params: p }), p, 'returns the same object');
  const table: Array<[string, unknown]> = [
    ['absent', undefined],
    ['null', null],
    ['array', [1]],
    ['string', 'x'],
  ];
  for (const [name, params] of table) t.strictSame(paramsOf({ params }), {}, name);
  t.strictSame(paramsOf({}), {}, 'no params key');
});

t.test('requestIdOf', async (t) => {
  const table: Array<[string, unknown, unknown]> = [
    ['string id', { jsonrpc: '2.0', id: 'a', method: 'm' }, 'a'],
    ['number id', { jsonrpc: '2.0', id: 7, method: 'm' }, 7],
    ['zero', { id: 0 }, 0],
    ['null id', { id: null }, null],
    ['no id', { method: 'm' }, null],
    ['NaN', { id: Number.NaN }, null],
    ['Infinity', { id: Number.POSITIVE_INFINITY }, null],
    ['object id', { id: { x: 1 } }, null],
    ['boolean id', { id: true }, null],
    ['array body', [{ id: 1 }], null],
    ['not an object', 'x', null],
    ['undefined', undefined, null],
  ];
  for (const [name, body, want] of table) t.equal(requestIdOf(body), want, name);
});
