/**
 * No client-visible error is built outside the error catalog (docs/architecture.md §5, "One error table"): no file of
 * src/ but the catalog (translate/error-catalog.ts) and the one place that makes an entry's error object
 * (translate/gateway-error.ts) writes a JSON-RPC error object literal (`{ code: …, message: … }`), and none writes a
 * catalog message as a string of its own. The few literals that are no error of the gateway's are listed below, each
 * with why; an entry of that list that no longer matches fails too, so the list cannot outlive its reason.
 */
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import { ERROR_CATALOG } from '../../src/translate/error-catalog.js';
import { sourcesUnder, withoutComments } from '../helpers/source-files.js';

const root = new URL('../..', import.meta.url).pathname;
const srcDir = join(root, 'src');

/** Where errors are made: the table, and the one function that turns an entry into the error a client gets. */
const CATALOG_FILES = ['src/translate/error-catalog.ts', 'src/translate/gateway-error.ts'];

/**
 * Error-shaped literals that are not the gateway's own errors: `file` and a text the literal contains. Errors an upstream
 * answered are the upstream's: passed on with their code, or re-coded for the client's era keeping the upstream's
 * message (docs/errors.md § An upstream's own errors).
 */
const ALLOWED: Array<{ file: string; contains: string; why: string }> = [
  {
    file: 'src/translate/results-to-modern.ts',
    contains: 'code: ErrorCode.InvalidParams, message: error.message',
    why: "an upstream's missing resource, re-coded",
  },
  { file: 'src/translate/results-to-modern.ts', contains: 'code: ErrorCode.InternalError, message: error.message', why: "an upstream's -32042, re-coded" },
  { file: 'src/translate/results-to-modern.ts', contains: 'code: value.code, message:', why: "an upstream's error object, read defensively" },
  { file: 'src/translate/results-to-legacy.ts', contains: 'code: ErrorCode.MethodNotFound, message: error.message', why: "an upstream's -32021, re-coded" },
  { file: 'src/upstream/tracing.ts', contains: 'code: SpanStatusCode.ERROR', why: "an OpenTelemetry span's status, not a JSON-RPC error" },
  { file: 'src/demo/demo-server.ts', contains: 'Bad Request: no valid session', why: 'the bundled demo upstream answering as an upstream does' },
];

/** JSON-RPC error object literals: `{ code: <not a string>, message… }`, in either order or shorthand, across lines. */
function errorLiterals(text: string): string[] {
  const found = [
    ...text.matchAll(/\{\s*code:\s*[^\s'"`,{}][^,{}]*,\s*message\b[^}]*\}?/g),
    ...text.matchAll(/\{\s*message\b[^{}]*,\s*code:\s*[^\s'"`,{}][^,{}]*/g),
    ...text.matchAll(/\{\s*code\s*,\s*message\b[^{}]*\}/g),
  ];
  return found.map((m) => m[0].replace(/\s+/g, ' '));
}

/**
 * What of each catalog message would be a copy: a whole message as a string, or a template's text up to its first
 * placeholder when it says more than a generic opening ("Invalid params: " opens the validator's own wordings too).
 */
const messageTexts = Object.entries(ERROR_CATALOG)
  .map(([kind, spec]) => {
    const [head, ...rest] = spec.message.split('%s');
    return { kind, text: head as string, whole: rest.length === 0 };
  })
  .filter(({ text }) => text.length >= 12);

/** Whether a source writes a message text as a string literal of its own (any quote). */
function writes(source: string, { text, whole }: { text: string; whole: boolean }): boolean {
  return ["'", '"', '`'].some((q) => source.includes(whole ? q + text + q : q + text) && (whole || text.length >= 18));
}

const files = sourcesUnder(srcDir)
  .map((path) => ({ name: relative(root, path), text: withoutComments(readFileSync(path, 'utf8')) }))
  .filter((f) => !CATALOG_FILES.includes(f.name));

t.test('the check finds what it looks for', async (t) => {
  t.ok(files.length > 50, `read the sources (${files.length})`);
  t.same(errorLiterals("x = { code: ErrorCode.InternalError, message: 'Request cancelled' };"), [
    "{ code: ErrorCode.InternalError, message: 'Request cancelled' }",
  ]);
  t.equal(errorLiterals('respond(id, {\n  error: {\n    code: -32601,\n    message,\n  },\n})').length, 1, 'across lines, shorthand message');
  t.equal(errorLiterals("{ message: 'not here', code: ErrorCode.MethodNotFound }").length, 1, 'message first');
  t.equal(errorLiterals('const e = { code, message };').length, 1, 'shorthand');
  t.equal(errorLiterals("ctx.addIssue({ code: 'custom', message: 'bad' })").length, 0, "a zod issue's string code is no JSON-RPC error");
  t.equal(errorLiterals("catalogError('GW_REQUEST_CANCELLED')").length, 0);
});

t.test('no JSON-RPC error object is built outside the catalog', async (t) => {
  const used = new Set<number>();
  for (const f of files) {
    for (const literal of errorLiterals(f.text)) {
      const allowed = ALLOWED.findIndex((a) => a.file === f.name && literal.includes(a.contains));
      if (allowed >= 0) used.add(allowed);
      t.ok(allowed >= 0, `${f.name}: ${literal} — a catalog entry (catalogError, GatewayError), or an upstream's error on the list`);
    }
  }
  for (const [i, a] of ALLOWED.entries()) t.ok(used.has(i), `the allowance for ${a.file} (${a.why}) still matches a literal`);
});

t.test('no catalog message is written outside the catalog as a string of its own', async (t) => {
  t.ok(messageTexts.length > 60, `messages long enough to tell (${messageTexts.length})`);
  const cancelled = messageTexts.find((m) => m.kind === 'GW_REQUEST_CANCELLED');
  t.ok(cancelled && writes("const e = { error: 'Request cancelled' };", cancelled), 'a whole message written again is found');
  t.notOk(cancelled && writes("const e = 'Request cancelled by the user';", cancelled), 'a longer text that starts alike is not a copy');
  for (const f of files) {
    const copied = messageTexts.filter((m) => writes(f.text, m)).map((m) => `${m.kind} ("${m.text}…")`);
    t.same(copied, [], `${f.name} writes no catalog message of its own (take it from the catalog)`);
  }
});
