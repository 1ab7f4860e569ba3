/** translate/headers: 2026-07-28 header value rules (H2 §Value Encoding, §Server Validation; translation.md §3.5). */
import t from 'tap';
import { decodeHeaderValue, encodeHeaderValue, singleHeader } from '../../src/translate/headers.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

t.test('decodeHeaderValue accepts', async (t) => {
  const table: Array<[string, string, string]> = [
    ['plain method', 'tools/call', 'tools/call'],
    ['version', '2026-07-28', '2026-07-28'],
    ['uri', 'file:///tmp/a%20b.txt?x=1#y', 'file:///tmp/a%20b.txt?x=1#y'],
    ['inner space', 'my tool', 'my tool'],
    ['single char', 'x', 'x'],
    ['empty', '', ''],
    ['every visible ASCII char', '!"#$%&\'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~', '!"#$%&\'()*+,-./0123456789:;<=>?@AZ[\\]^_`az{|}~'],
    ['sentinel, ASCII', `=?base64?${b64('a')}?=`, 'a'],
    ['sentinel, unpadded', '=?base64?YQ?=', 'a'],
    ['sentinel, UTF-8', `=?base64?${b64('café ✓')}?=`, 'café ✓'],
    ['sentinel, emoji', `=?base64?${b64('🚀 launch')}?=`, '🚀 launch'],
    ['sentinel, leading/trailing spaces', `=?base64?${b64('  x  ')}?=`, '  x  '],
    ['sentinel, empty payload', '=?base64??=', ''],
    ['sentinel, value that itself looks like a sentinel', `=?base64?${b64('=?base64?YQ==?=')}?=`, '=?base64?YQ==?='],
    ['sentinel, newline inside', `=?base64?${b64('a\nb')}?=`, 'a\nb'],
    // Not a complete sentinel: it is ordinary visible ASCII and taken literally.
    ['unterminated sentinel is literal', '=?base64?YQ==', '=?base64?YQ=='],
  ];
  for (const [name, raw, want] of table) t.strictSame(decodeHeaderValue(raw), { ok: true, value: want }, name);
});

t.test('decodeHeaderValue rejects', async (t) => {
  const table: Array<[string, string, RegExp]> = [
    ['leading space', ' x', /base64/],
    ['trailing space', 'x ', /base64/],
    ['only a space', ' ', /base64/],
    ['tab', 'a\tb', /base64/],
    ['newline', 'a\nb', /base64/],
    ['NUL', 'a\u0000b', /base64/],
    ['DEL', 'a\u007fb', /base64/],
    ['non-ASCII', 'café', /base64/],
    ['emoji', '🚀', /base64/],
    ['sentinel, non-canonical trailing bits', '=?base64?YR==?=', /malformed/],
    ['sentinel, single base64 char', '=?base64?Y?=', /malformed/],
    ['sentinel, five chars', '=?base64?YWJjZ?=', /malformed/],
  ];
  for (const [name, raw, msg] of table) {
    const r = decodeHeaderValue(raw);
    t.equal(r.ok, false, name);
    if (!r.ok) t.match(r.message, msg, `${name}: message`);
  }
});

t.test('encodeHeaderValue', async (t) => {
  const table: Array<[string, string, boolean]> = [
    // [value, expected wire text, sentinel-encoded?]
    ['tools/call', 'tools/call', false],
    ['my tool', 'my tool', false],
    ['', `=?base64??=`, true],
    [' lead', `=?base64?${b64(' lead')}?=`, true],
    ['trail ', `=?base64?${b64('trail ')}?=`, true],
    ['café', `=?base64?${b64('café')}?=`, true],
    ['a\nb', `=?base64?${b64('a\nb')}?=`, true],
    ['=?base64?YQ==?=', `=?base64?${b64('=?base64?YQ==?=')}?=`, true],
  ];
  for (const [value, wire, sentinel] of table) {
    const enc = encodeHeaderValue(value);
    t.equal(enc, wire, `encode ${JSON.stringify(value)}`);
    t.equal(enc.startsWith('=?base64?'), sentinel, `${JSON.stringify(value)} sentinel`);
    t.strictSame(decodeHeaderValue(enc), { ok: true, value }, `round trip ${JSON.stringify(value)}`);
  }
});

t.test('singleHeader', async (t) => {
  const headers: Record<string, string | string[] | undefined> = {
    'mcp-method': 'tools/call',
    'mcp-name': ['a', 'b'],
    'mcp-one': ['only'],
    'mcp-none': [],
    'mcp-undef': undefined,
  };
  const table: Array<[string, string | undefined | null]> = [
    ['mcp-method', 'tools/call'],
    ['mcp-name', null],
    ['mcp-one', 'only'],
    ['mcp-none', null],
    ['mcp-undef', undefined],
    ['absent', undefined],
    ['MCP-METHOD', undefined], // the map has lower-case keys; the caller passes lower-case names
  ];
  for (const [name, want] of table) t.equal(singleHeader(headers, name), want, name);
});
