/** KeyMinter: input keys unique for a call's or a task's life. */
import t from 'tap';
import { INPUT_KEY_HINT, KeyMinter } from '../../src/translate/index.js';

t.test('KeyMinter takes the upstream hint while it is unused, then mints its own', async (t) => {
  const keys = new KeyMinter();
  const hinted = { _meta: { [INPUT_KEY_HINT]: 'confirm' } };
  t.equal(keys.mint('elicitation/create', hinted), 'confirm');
  const again = keys.mint('elicitation/create', hinted);
  t.not(again, 'confirm', 'a hint already used is never handed out twice');
  t.equal(again, 'elicitation-1');
  t.equal(keys.mint('sampling/createMessage', undefined), 'sampling-2');
});

t.test('KeyMinter never collides with a hint that looks like a minted key', async (t) => {
  const keys = new KeyMinter();
  t.equal(keys.mint('elicitation/create', { _meta: { [INPUT_KEY_HINT]: 'elicitation-1' } }), 'elicitation-1');
  t.equal(keys.mint('elicitation/create', undefined), 'elicitation-2');
  t.equal(keys.mint('roots/list', { _meta: { [INPUT_KEY_HINT]: 'not a valid key!' } }), 'roots-3', 'an invalid hint is ignored');
});
