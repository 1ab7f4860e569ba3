/**
 * translate/request-state: the gateway's MRTR `requestState` (2026-07-28 basic/patterns/mrtr §Server Requirements:
 * integrity, expiry, binding). The principal is bound by the MAC and never carried.
 */
import { createHmac } from 'node:crypto';
import t from 'tap';
import { decodeRequestState, encodeRequestState, type RequestStateClaims, type RequestStateFailure } from '../../src/translate/request-state.js';

const key = new Uint8Array(32).fill(7);
const otherKey = new Uint8Array(32).fill(8);
const now = 1_700_000_000_000;
const claims: RequestStateClaims = { hold: 'hold-1', inst: 'gwi_a', method: 'tools/call', name: 'deploy', round: 2, exp: now + 60_000 };
const SUB = 'principal-a';
const expect = { sub: SUB, method: claims.method, name: claims.name };
const LABEL = 'mcp-tasks-gateway/request-state/v2';

/** A token signed with `key` for `sub` over an arbitrary payload text (to reach the checks behind the signature). */
function signed(payloadText: string, k: Uint8Array = key, sub = SUB): string {
  const payload = Buffer.from(payloadText, 'utf8').toString('base64url');
  return `${payload}.${createHmac('sha256', k).update(`${LABEL}\n${sub.length}:${sub}\n${payload}`).digest('base64url')}`;
}
const B64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
/** Replaces the character at `i` with another base64url character whose 6-bit value differs in the high bit. */
function flipAt(s: string, i: number): string {
  const c = B64URL[B64URL.indexOf(s[i] as string) ^ 0b100000] as string;
  return s.slice(0, i) + c + s.slice(i + 1);
}

t.test('encodeRequestState format', async (t) => {
  const tok = encodeRequestState(claims, SUB, key);
  t.match(tok, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/, 'base64url(json).base64url(hmac-sha256), no padding');
  const [payload] = tok.split('.');
  t.strictSame(
    JSON.parse(Buffer.from(payload as string, 'base64url').toString('utf8')),
    { v: 2, ...claims },
    'payload is the versioned claims, without the principal',
  );
  t.notMatch(Buffer.from(payload as string, 'base64url').toString('utf8'), SUB, 'the principal is not carried');
  t.equal(tok, signed(JSON.stringify({ v: 2, ...claims })), 'the MAC covers label, principal and payload');
  t.equal(encodeRequestState(claims, SUB, key), tok, 'deterministic for the same claims, principal and key');
  t.not(encodeRequestState(claims, SUB, otherKey), tok, 'depends on the key');
  t.not(encodeRequestState(claims, 'principal-b', key), tok, 'depends on the principal');
  t.not(encodeRequestState({ ...claims, round: 3 }, SUB, key), tok, 'depends on the round');
  t.equal(encodeRequestState(claims, SUB, Buffer.from(key)), tok, 'a Buffer key is the same key');
});

t.test('round trip', async (t) => {
  const table: Array<[string, RequestStateClaims, string]> = [
    ['fixture', claims, SUB],
    ['resource uri as name', { ...claims, method: 'resources/read', name: 'file:///a b/ü.txt' }, SUB],
    ['unicode everywhere', { hold: 'h✓', inst: 'gwi_ü', method: 'prompts/get', name: '名前', round: 0, exp: now + 1 }, 'sübject'],
    ['empty name', { ...claims, name: '' }, SUB],
    ['anonymous', claims, 'anonymous'],
  ];
  for (const [name, c, sub] of table) {
    const r = decodeRequestState(encodeRequestState(c, sub, key), key, now, { sub, method: c.method, name: c.name });
    t.strictSame(r, { ok: true, value: c }, name);
  }
});

t.test('refusals', async (t) => {
  const tok = encodeRequestState(claims, SUB, key);
  const [payload, sig] = tok.split('.') as [string, string];
  const otherPayload = Buffer.from(JSON.stringify({ v: 2, ...claims, hold: 'hold-2' }), 'utf8').toString('base64url');

  // [name, token, key, now, expect, reason]
  const table: Array<[string, string, Uint8Array, number, typeof expect, RequestStateFailure]> = [
    ['tampered payload (re-encoded claims, old signature)', `${otherPayload}.${sig}`, key, now, expect, 'bad-signature'],
    ['tampered payload (one character)', `${flipAt(payload, 10)}.${sig}`, key, now, expect, 'bad-signature'],
    ['tampered signature (first character)', `${payload}.${flipAt(sig, 0)}`, key, now, expect, 'bad-signature'],
    ['tampered signature (middle character)', `${payload}.${flipAt(sig, 20)}`, key, now, expect, 'bad-signature'],
    ['appended -TAMPERED', `${tok}-TAMPERED`, key, now, expect, 'bad-signature'],
    ['signature truncated', `${payload}.${sig.slice(0, -4)}`, key, now, expect, 'bad-signature'],
    ['signature empty', `${payload}.`, key, now, expect, 'bad-signature'],
    ['wrong key', tok, otherKey, now, expect, 'bad-signature'],
    ['expired: now = exp', tok, key, claims.exp, expect, 'expired'],
    ['expired: now > exp', tok, key, claims.exp + 1, expect, 'expired'],
    // Another principal's genuine state fails exactly as a forged one does.
    ['principal mismatch', tok, key, now, { ...expect, sub: 'principal-b' }, 'bad-signature'],
    ['principal prefix', tok, key, now, { ...expect, sub: 'principal-' }, 'bad-signature'],
    ['signed for another principal', signed(JSON.stringify({ v: 2, ...claims }), key, 'principal-b'), key, now, expect, 'bad-signature'],
    [
      'the old format (principal in the payload, MAC without it)',
      `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`,
      key,
      now,
      expect,
      'bad-signature',
    ],
    ['method mismatch', tok, key, now, { ...expect, method: 'prompts/get' }, 'mismatch'],
    ['name mismatch', tok, key, now, { ...expect, name: 'deploy2' }, 'mismatch'],
    ['empty', '', key, now, expect, 'malformed'],
    ['no dot', payload, key, now, expect, 'malformed'],
    ['leading dot', `.${sig}`, key, now, expect, 'malformed'],
    ['two dots', `${payload}.${sig}.x`, key, now, expect, 'malformed'],
    ['just a dot', '.', key, now, expect, 'malformed'],
    ['oversize (4097 chars)', `${payload}.${sig}`.padEnd(4097, 'A'), key, now, expect, 'malformed'],
    ['oversize even with a valid signature', encodeRequestState({ ...claims, hold: 'h'.repeat(4000) }, SUB, key), key, now, expect, 'malformed'],
    ['signed but not JSON', signed('not json {'), key, now, expect, 'malformed'],
    ['signed JSON array', signed('[1,2]'), key, now, expect, 'malformed'],
    ['signed but wrong version', signed(JSON.stringify({ ...claims, v: 1 })), key, now, expect, 'malformed'],
    ['signed but no version', signed(JSON.stringify(claims)), key, now, expect, 'malformed'],
    ['signed but round missing', signed(JSON.stringify({ v: 2, ...claims, round: undefined })), key, now, expect, 'malformed'],
    ['signed but exp a string', signed(JSON.stringify({ v: 2, ...claims, exp: String(claims.exp) })), key, now, expect, 'malformed'],
    ['signed but hold a number', signed(JSON.stringify({ v: 2, ...claims, hold: 1 })), key, now, expect, 'malformed'],
    ['signed but no holding instance', signed(JSON.stringify({ v: 2, ...claims, inst: undefined })), key, now, expect, 'malformed'],
  ];
  for (const [name, token, k, at, exp, reason] of table) {
    t.strictSame(decodeRequestState(token, k, at, exp), { ok: false, reason }, name);
  }
});

t.test('precedence of checks', async (t) => {
  const tok = encodeRequestState(claims, SUB, key);
  t.strictSame(
    decodeRequestState(tok, otherKey, claims.exp + 1, { ...expect, name: 'x' }),
    { ok: false, reason: 'bad-signature' },
    'signature before expiry and binding',
  );
  t.strictSame(decodeRequestState(tok, key, claims.exp + 1, { ...expect, sub: 'x' }), { ok: false, reason: 'bad-signature' }, 'the principal before expiry');
  t.strictSame(decodeRequestState(tok, key, claims.exp + 1, { ...expect, name: 'x' }), { ok: false, reason: 'expired' }, 'expiry before binding');
  t.strictSame(decodeRequestState(tok, key, claims.exp - 1, expect).ok, true, 'one millisecond before exp is fine');
  t.strictSame(decodeRequestState(tok, key, now, expect), { ok: true, value: claims }, 'extra claim fields are not returned (none here)');
  const extra = signed(JSON.stringify({ v: 2, ...claims, admin: true }));
  t.strictSame(decodeRequestState(extra, key, now, expect), { ok: true, value: claims }, 'unknown signed fields are dropped from the value');
});

// The signature text must be the one encoding the gateway produced. Node's base64url decoder ignores trailing
// junk and the unused low bits of the last character, so these different tokens decode to the same MAC bytes.
t.test('non-canonical signature encodings are refused', async (t) => {
  const tok = encodeRequestState(claims, SUB, key);
  const last = tok.at(-1) as string;
  const sameBits = B64URL[B64URL.indexOf(last) ^ 0b1] as string; // differs only in a bit that base64 decoding discards
  const table: Array<[string, string]> = [
    ['"=" appended', `${tok}=`],
    ['"==" appended', `${tok}==`],
    ['"!" appended', `${tok}!`],
    ['space appended', `${tok} `],
    ['last character altered in its unused bits', tok.slice(0, -1) + sameBits],
  ];
  for (const [name, token] of table) {
    t.not(token, tok, `${name}: a different token`);
    t.strictSame(decodeRequestState(token, key, now, expect), { ok: false, reason: 'bad-signature' }, name);
  }
});
