/** translate/trace-context: strict W3C traceparent parsing, the _meta/header precedence, and _meta rewriting. */
import t from 'tap';
import {
  extractTrace,
  formatTraceparent,
  MAX_TRACESTATE_LENGTH,
  parseTraceparent,
  readTracestate,
  setTraceHeaders,
  TRACEPARENT,
  TRACESTATE,
  withTraceMeta,
} from '../../src/translate/trace-context.js';

const TP = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const TP2 = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00';

t.test('parseTraceparent accepts exactly version 00 with lowercase hex and non-zero ids', async (t) => {
  t.same(parseTraceparent(TP), { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', flags: 1 });
  t.equal(formatTraceparent('0af7651916cd43dd8448eb211c80319c', 'b7ad6b7169203331', 1), TP, 'formats back to the same text');
  for (const bad of [
    undefined,
    42,
    '',
    TP.toUpperCase(),
    `01${TP.slice(2)}`,
    `ff${TP.slice(2)}`,
    `${TP}-00`,
    TP.slice(0, 54),
    '00-00000000000000000000000000000000-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01',
    '00-0af7651916cd43dd8448eb211c80319g-b7ad6b7169203331-01',
    '00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0x',
    'x'.repeat(100_000),
  ]) {
    t.equal(parseTraceparent(bad), undefined, `refused: ${String(bad).slice(0, 60)}`);
  }
});

t.test('readTracestate keeps printable values up to the bound and drops the rest whole', async (t) => {
  t.equal(readTracestate('congo=t61rcWkgMzE,rojo=00f067aa0ba902b7'), 'congo=t61rcWkgMzE,rojo=00f067aa0ba902b7');
  t.equal(readTracestate('a'.repeat(MAX_TRACESTATE_LENGTH)), 'a'.repeat(MAX_TRACESTATE_LENGTH));
  t.equal(readTracestate('a'.repeat(MAX_TRACESTATE_LENGTH + 1)), undefined, 'too long');
  t.equal(readTracestate('a=b\nc=d'), undefined, 'control character');
  t.equal(readTracestate('a=é'), undefined, 'not ASCII');
  t.equal(readTracestate('   '), undefined, 'blank');
  t.equal(readTracestate(['a=b']), undefined, 'not a string');
});

t.test('extractTrace: _meta first, then the header; tracestate only from the source taken', async (t) => {
  t.equal(extractTrace({}, undefined), undefined, 'nothing');
  t.same(extractTrace({ traceparent: TP, tracestate: 'h=1' }, undefined), {
    carrier: { traceparent: TP, tracestate: 'h=1' },
    parent: parseTraceparent(TP),
    source: 'header',
  });
  t.same(
    extractTrace({ traceparent: TP, tracestate: 'h=1' }, { traceparent: TP2 }),
    { carrier: { traceparent: TP2 }, parent: parseTraceparent(TP2), source: 'meta' },
    '_meta wins, without the header tracestate',
  );
  t.same(extractTrace({ traceparent: TP }, { traceparent: 'junk', tracestate: 'm=1' })?.source, 'header', 'a malformed _meta value falls back to the header');
  t.equal(extractTrace({ traceparent: 'junk', tracestate: 'h=1' }, {}), undefined, 'a malformed header is no context');
  t.equal(extractTrace({ traceparent: [TP, TP2] }, undefined), undefined, 'a repeated traceparent names no one parent');
  t.equal(extractTrace({ traceparent: TP, tracestate: ['a=1', 'b=2'] }, undefined)?.carrier.tracestate, 'a=1,b=2', 'repeated tracestate lines are one list');
  t.same(
    extractTrace({ traceparent: TP, tracestate: 'x'.repeat(10_000) }, undefined)?.carrier,
    { traceparent: TP },
    'an oversized tracestate is dropped, the parent kept',
  );
});

t.test('withTraceMeta sets, replaces or strips the keys, and leaves params without them alone', async (t) => {
  const plain = { name: 'echo' };
  t.equal(withTraceMeta(plain, undefined), plain, 'untouched without a carrier or keys');
  t.equal(withTraceMeta(undefined, undefined), undefined);
  t.same(withTraceMeta(plain, { traceparent: TP }), { name: 'echo', _meta: { traceparent: TP } });
  t.same(withTraceMeta({ _meta: { a: 1, traceparent: 'junk', tracestate: 'x=1' } }, undefined), { _meta: { a: 1 } }, 'stripped');
  t.same(
    withTraceMeta({ _meta: { traceparent: TP2, tracestate: 'x=1' } }, { traceparent: TP, tracestate: 'y=2' }),
    { _meta: { traceparent: TP, tracestate: 'y=2' } },
    'replaced',
  );
  t.same(setTraceHeaders({ tracestate: 'old' }, { traceparent: TP }), { traceparent: TP }, 'a stale tracestate header goes');
});

t.test('the _meta keys and header names are the unprefixed W3C ones (2026-07-28 basic, General fields, _meta)', async (t) => {
  t.equal(TRACEPARENT, 'traceparent');
  t.equal(TRACESTATE, 'tracestate');
});
