/**
 * docs/errors.md against the error catalog, both ways (as fastify's Errors.md against its errors.js): the page is what
 * `npm run errors` makes of the catalog, every entry has its row with its JSON-RPC code and HTTP status, every code
 * the page lists is an entry, and no page of the documentation names a code the catalog does not have.
 */
import { readFile, readdir } from 'node:fs/promises';
import t from 'tap';
import { BEGIN, END, ERRORS_PAGE, errorTables, withErrorTables } from '../../scripts/error-docs.js';
import { ERROR_CATALOG, type ErrorKind } from '../../src/translate/error-catalog.js';

const root = new URL('../..', import.meta.url);
const page = await readFile(ERRORS_PAGE, 'utf8');

/** The rows of the page's table of entries, read from the Markdown itself (not from the generator). */
function pageRows(text: string): Map<string, { rpc: string; status: string }> {
  const rows = new Map<string, { rpc: string; status: string }>();
  for (const m of text.matchAll(/^\| `(GW_[A-Z0-9_]+)` \| (-?\d+) \| (\d+)[^|]*\|/gm))
    rows.set(m[1] as string, { rpc: m[2] as string, status: m[3] as string });
  return rows;
}

t.test('the page is what the generator makes of the catalog (npm run errors)', async (t) => {
  t.ok(page.includes(BEGIN) && page.includes(END), 'the page has the markers of its generated part');
  t.equal(page, withErrorTables(page), 'docs/errors.md is up to date: run `npm run errors` after changing the catalog');
  t.throws(() => withErrorTables('# no markers'), /lacks the markers/);
});

t.test('every entry is on the page, and every code on the page is an entry', async (t) => {
  const rows = pageRows(page);
  for (const [kind, spec] of Object.entries(ERROR_CATALOG)) {
    const row = rows.get(kind);
    t.ok(row, `${kind} has its row on docs/errors.md`);
    if (row) t.same([Number(row.rpc), Number(row.status)], [spec.rpc, spec.status], `${kind}: the page's JSON-RPC code and HTTP status are the catalog's`);
  }
  for (const kind of rows.keys()) t.ok(Object.hasOwn(ERROR_CATALOG, kind), `${kind}, listed on the page, is a catalog entry`);
  t.equal(rows.size, Object.keys(ERROR_CATALOG).length, 'one row per entry');
});

t.test('the page check fails when catalog and page disagree', async (t) => {
  // A page that lost a row, and one with a row the catalog does not have, are told apart from the page as it is.
  const lost = page.replace(/^\| `GW_TASK_UNKNOWN` .*\n/m, '');
  t.notOk(pageRows(lost).has('GW_TASK_UNKNOWN'), 'a removed row is missing');
  const extra = `${page}\n| \`GW_NOT_AN_ENTRY\` | -32603 | 500 | — | \`x\` | x. |\n`;
  t.notOk(Object.hasOwn(ERROR_CATALOG, [...pageRows(extra).keys()].at(-1) as ErrorKind), 'a row beyond the catalog is found');
  t.not(withErrorTables(lost), lost, 'the generator puts a lost row back');
  t.ok(errorTables().startsWith(BEGIN) && errorTables().endsWith(END));
});

t.test('no page of the documentation names a code the catalog does not have', async (t) => {
  const docs = (await readdir(new URL('docs/', root))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  // CHANGELOG.md is left out: history names codes as they were.
  for (const file of ['README.md', ...docs]) {
    const text = await readFile(new URL(file, root), 'utf8');
    for (const m of text.matchAll(/\bGW_[A-Z0-9_]*[A-Z0-9]\b/g)) t.ok(Object.hasOwn(ERROR_CATALOG, m[0]), `${file}: ${m[0]} is a catalog entry`);
  }
});
