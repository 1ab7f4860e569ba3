/** translate/tally: counts per key that forget a key at zero. */
import t from 'tap';
import { Tally } from '../../src/translate/tally.js';

t.test('counts up and down per key; a key at zero is forgotten, and a stray remove never goes below zero', async (t) => {
  const tally = new Tally();
  t.equal(tally.of('a'), 0, 'nothing open');
  tally.add('a');
  tally.add('a');
  tally.add('b');
  t.equal(tally.of('a'), 2);
  t.equal(tally.of('b'), 1);
  tally.remove('a');
  t.equal(tally.of('a'), 1);
  tally.remove('a');
  tally.remove('a');
  t.equal(tally.of('a'), 0, 'a remove past zero stays at zero');
  tally.add('a');
  t.equal(tally.of('a'), 1, 'counting starts afresh');
  t.equal(tally.of('b'), 1, 'other keys untouched');
});
