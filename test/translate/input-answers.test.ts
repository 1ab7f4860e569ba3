/**
 * translate/input-answers: what a client answers to an input request is checked against what was asked (the answer's
 * shape per method, an accepted form's content against the requested schema, keys never asked).
 */
import t from 'tap';
import { checkInputAnswers, inputAnswerProblem, type AskedInput } from '../../src/translate/input-answers.js';

t.test('inputAnswerProblem: an accepted form against the requested schema', async (t) => {
  const params = {
    message: 'Book?',
    requestedSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 2, maxLength: 5 },
        guests: { type: 'integer', minimum: 1, maximum: 8 },
        price: { type: 'number' },
        ok: { type: 'boolean' },
        size: { type: 'string', enum: ['s', 'm'] },
        tier: { type: 'string', oneOf: [{ const: 'gold', title: 'Gold' }] },
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, maxItems: 2 },
      },
      required: ['name', 'ok'],
    },
  };
  const table: Array<[string, unknown, RegExp | undefined]> = [
    ['all good', { action: 'accept', content: { name: 'Ann', ok: true, guests: 2, price: 1.5, size: 's', tier: 'gold', tags: ['a'] } }, undefined],
    ['decline needs no content', { action: 'decline' }, undefined],
    ['cancel needs no content', { action: 'cancel' }, undefined],
    ['required missing', { action: 'accept', content: { name: 'Ann' } }, /content\.ok: required/],
    ['no content but required', { action: 'accept' }, /content\.name: required/],
    ['a key the schema does not name (JSON Schema allows it)', { action: 'accept', content: { name: 'Ann', ok: true, admin: true } }, undefined],
    ['string for a boolean', { action: 'accept', content: { name: 'Ann', ok: 'true' } }, /content\.ok: expected a boolean/],
    ['too short', { action: 'accept', content: { name: 'A', ok: true } }, /content\.name: shorter than 2/],
    ['too long', { action: 'accept', content: { name: 'Annabel', ok: true } }, /longer than 5/],
    ['integer not integral', { action: 'accept', content: { name: 'Ann', ok: true, guests: 1.5 } }, /expected an integer/],
    ['integer over maximum', { action: 'accept', content: { name: 'Ann', ok: true, guests: 9 } }, /more than 8/],
    ['enum miss', { action: 'accept', content: { name: 'Ann', ok: true, size: 'xl' } }, /not one of the allowed values/],
    ['oneOf miss', { action: 'accept', content: { name: 'Ann', ok: true, tier: 'tin' } }, /not one of the allowed values/],
    ['multi-select miss', { action: 'accept', content: { name: 'Ann', ok: true, tags: ['c'] } }, /content\.tags: not one of/],
    ['multi-select too many', { action: 'accept', content: { name: 'Ann', ok: true, tags: ['a', 'b', 'a'] } }, /more than 2 items/],
    ['number as string', { action: 'accept', content: { name: 'Ann', ok: true, price: '1' } }, /expected a number/],
  ];
  for (const [name, r, want] of table) {
    const p = inputAnswerProblem('elicitation/create', params, r);
    if (want) t.match(p, want, name);
    else t.equal(p, undefined, name);
  }
  const closed = { ...params, requestedSchema: { ...(params.requestedSchema as object), additionalProperties: false } };
  t.match(
    inputAnswerProblem('elicitation/create', closed, { action: 'accept', content: { name: 'Ann', ok: true, admin: true } }),
    /content\.admin: not in the requested schema/,
    'additionalProperties: false refuses a key not named',
  );
  t.equal(inputAnswerProblem('elicitation/create', { mode: 'url', url: 'https://x' }, { action: 'accept' }), undefined, 'URL mode: accept without content');
  t.match(
    inputAnswerProblem('elicitation/create', { mode: 'url', url: 'https://x' }, { action: 'accept', content: { a: 'b' } }),
    /URL-mode/,
    'URL mode: no content',
  );
  t.equal(inputAnswerProblem('elicitation/create', undefined, { action: 'accept', content: { anything: 1 } }), undefined, 'no schema asked: shape only');
  t.notMatch(
    inputAnswerProblem('elicitation/create', params, { action: 'accept', content: { name: 'secret-value', ok: 'nope' } }) ?? '',
    /secret-value|nope/,
    'the message never repeats a value',
  );
});

t.test('checkInputAnswers: unknown keys refused or ignored, answered keys passed over, the first bad answer refused', async (t) => {
  const asked = (key: string): AskedInput => (key === 'k1' ? { method: 'roots/list' } : key === 'old' ? 'answered' : undefined);
  t.doesNotThrow(() => checkInputAnswers({ k1: { roots: [] }, old: 'whatever' }, asked, 'refuse'), 'answered keys are not checked');
  t.throws(() => checkInputAnswers({ k1: { roots: [] }, nope: {} }, asked, 'refuse'), { kind: 'GW_UNKNOWN_INPUT_KEY', message: /key "nope" was not asked/ });
  t.doesNotThrow(() => checkInputAnswers({ k1: { roots: [] }, nope: { ignored: true } }, asked, 'ignore'), 'tasks/update: unknown keys ignored');
  t.throws(() => checkInputAnswers({ k1: { roots: 'x' } }, asked, 'ignore'), {
    kind: 'GW_INVALID_INPUT_RESPONSE',
    message: /input request "k1" is invalid \(roots: /,
  });
  const long = `${'x'.repeat(500)}\u0007`;
  t.throws(() => checkInputAnswers({ [long]: {} }, asked, 'refuse'), { message: /"x{64}…" was not asked/ }, 'a long key is cut short in the message');
});
