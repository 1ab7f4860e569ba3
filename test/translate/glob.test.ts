/** translate/glob: tool-name globs for per-tool rules. */
import t from 'tap';
import { firstMatch, globCovers, globToRegExp } from '../../src/translate/glob.js';

t.test('globToRegExp', async (t) => {
  // [glob, names that match, names that do not]
  const table: Array<[string, string[], string[]]> = [
    ['*', ['', 'a', 'any/thing', 'multi\nline'], []],
    ['slow', ['slow'], ['slower', 'xslow', 'SLOW', '']],
    ['slow_*', ['slow_', 'slow_a', 'slow_a_b'], ['slow', 'fast_a', 'xslow_a']],
    ['*_report', ['_report', 'weekly_report'], ['weekly_reports', 'report']],
    ['a*b*c', ['abc', 'aXXbYYc', 'a/b/c'], ['ab', 'acb', 'abcd']],
    ['tool?', ['tool1', 'toolX', 'tool.'], ['tool', 'tool12']],
    ['??', ['ab', '12'], ['a', 'abc']],
    ['?*', ['a', 'abc'], ['']],
    // Regex metacharacters in names are literal.
    ['get.user', ['get.user'], ['getXuser', 'get-user']],
    ['a+b', ['a+b'], ['aab', 'ab']],
    ['fn(x)', ['fn(x)'], ['fnx', 'fn(x']],
    ['[ab]', ['[ab]'], ['a', 'b']],
    ['{a,b}', ['{a,b}'], ['a', 'b']],
    ['x{2}', ['x{2}'], ['xx']],
    ['a|b', ['a|b'], ['a', 'b']],
    ['^start$', ['^start$'], ['start']],
    ['cost$', ['cost$'], ['cost']],
    ['back\\slash', ['back\\slash'], ['backslash', 'back/slash']],
    ['dot.*', ['dot.', 'dot.anything'], ['dot', 'dotx']],
    ['.*', ['.', '.hidden'], ['', 'x']],
    ['ns/tool-*', ['ns/tool-1', 'ns/tool-'], ['ns/tool', 'ns/tool1']],
  ];
  for (const [glob, yes, no] of table) {
    const re = globToRegExp(glob);
    for (const n of yes) t.ok(re.test(n), `${JSON.stringify(glob)} matches ${JSON.stringify(n)}`);
    for (const n of no) t.notOk(re.test(n), `${JSON.stringify(glob)} does not match ${JSON.stringify(n)}`);
  }
});

t.test('globToRegExp is anchored and stateless', async (t) => {
  const re = globToRegExp('a*');
  t.equal(re.global, false, 'no g flag, so test() has no lastIndex state');
  t.equal(re.sticky, false);
  t.ok(re.test('abc'));
  t.ok(re.test('abc'), 'same answer twice');
  t.notOk(globToRegExp('b').test('abc'), 'not a substring search');
});

t.test('firstMatch', async (t) => {
  const rules = [
    [globToRegExp('slow_report'), 'exact'],
    [globToRegExp('slow_*'), 'slow-glob'],
    [globToRegExp('*'), 'catch-all'],
  ] as const;
  const table: Array<[string, string]> = [
    ['slow_report', 'exact'],
    ['slow_other', 'slow-glob'],
    ['fast', 'catch-all'],
  ];
  for (const [name, want] of table) t.equal(firstMatch(rules, name), want, name);

  const reversed = [...rules].reverse();
  t.equal(firstMatch(reversed, 'slow_report'), 'catch-all', 'order given wins, not specificity');
  t.equal(firstMatch([], 'x'), undefined, 'no rules');
  t.equal(firstMatch([[globToRegExp('a'), 1]], 'b'), undefined, 'no match');
  t.equal(
    firstMatch(
      [
        [globToRegExp('a'), 0],
        [globToRegExp('*'), 1],
      ],
      'a',
    ),
    0,
    'falsy value is still a match',
  );
});

t.test('globCovers: a later rule the earlier one makes dead', async (t) => {
  // [earlier, later, covered]
  const table: Array<[string, string, boolean]> = [
    ['*', 'slow', true],
    ['*', '*', true],
    ['*', 'a*b?', true],
    ['slow_*', 'slow_report', true],
    ['slow_*', 'slow_*_x', true],
    ['*_report', 'weekly_report', true],
    ['tool?', 'tool1', true],
    ['tool?', 'tool?', true],
    ['a*', 'a?', true],
    ['*a*', '*a?*', true],
    ['slow', 'slow', true],
    ['slow', 'slower', false],
    ['slow_*', 'slow', false],
    ['slow_*', '*', false],
    ['tool?', 'tool*', false],
    ['tool1', 'tool?', false],
    ['?', '*', false],
    ['a*b', 'a*', false],
    ['get.user', 'getXuser', false],
  ];
  for (const [earlier, later, covered] of table) t.equal(globCovers(earlier, later), covered, `${earlier} covers ${later}: ${covered}`);
});

t.test('globCovers never claims a cover that a name disproves', async (t) => {
  // Every glob over {a, b, *, ?} up to 4 characters against every other, checked on every name over {a, b, c} up to
  // 5 characters: whenever globCovers says "covered", each name the later glob matches, the earlier matches too.
  const globs = words(['a', 'b', '*', '?'], 4);
  const names = words(['a', 'b', 'c'], 5);
  const compiled = new Map(globs.map((g) => [g, globToRegExp(g)] as const));
  let claims = 0;
  let wrong = 0;
  for (const earlier of globs) {
    for (const later of globs) {
      if (!globCovers(earlier, later)) continue;
      claims++;
      const e = compiled.get(earlier) as RegExp;
      const l = compiled.get(later) as RegExp;
      if (names.some((n) => l.test(n) && !e.test(n))) wrong++;
    }
  }
  t.equal(wrong, 0, 'no false cover');
  t.ok(claims > globs.length, 'covers found beyond each glob covering itself');
});

function words(alphabet: readonly string[], max: number): string[] {
  const out = [''];
  let layer = [''];
  for (let n = 1; n <= max; n++) {
    layer = layer.flatMap((w) => alphabet.map((c) => w + c));
    out.push(...layer);
  }
  return out;
}
