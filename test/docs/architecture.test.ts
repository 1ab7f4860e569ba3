/**
 * docs/architecture.md is cited by section from the code: every `docs/architecture.md §N` in src/, test/ and docs/
 * names a numbered section (`## N. Title`) that exists, and a citation that names a rule in quotes
 * (`docs/architecture.md §5 "bounded by construction"`) names one that section states. The page's own `§N` references
 * are held to the same rule, and the old form of citation (the architecture page outside this repository) is gone.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

const root = fileURLToPath(new URL('../..', import.meta.url));
const page = 'docs/architecture.md';
const self = relative(root, fileURLToPath(import.meta.url))
  .split(sep)
  .join('/');

/** The numbered sections of a page: number → its heading and text (up to the next `## `). */
export function sectionsOf(markdown: string): Map<number, { title: string; text: string }> {
  const out = new Map<number, { title: string; text: string }>();
  let current: { title: string; text: string } | undefined;
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const h2 = !fenced && /^##\s+(.*)$/.exec(line);
    if (h2) {
      const m = /^(\d+)\.\s+(.+)$/.exec(h2[1] as string);
      current = m ? { title: m[2] as string, text: '' } : undefined;
      if (m) {
        if (out.has(Number(m[1]))) throw new Error(`${page}: section ${m[1]} twice`);
        out.set(Number(m[1]), current as { title: string; text: string });
      }
      continue;
    }
    if (current) current.text += `${line}\n`;
  }
  return out;
}

/** Text as a reader sees it, for matching a quoted rule name: no emphasis or code marks, one space, lower case. */
const plain = (s: string) => s.replace(/[*`_]/g, '').replace(/\s+/g, ' ').toLowerCase();

interface Citation {
  file: string;
  line: number;
  section: number;
  rule?: string;
}

const CITATION = /docs\/architecture\.md §(\d+)(?:\s+"([^"]+)")?/g;
// Built from parts, so that this file does not match itself.
const OLD_FORM = new RegExp(`\\b${'ARCHI'}TECTURE(?:\\.md)?\\s*§`);

function citationsIn(file: string, text: string): Citation[] {
  const out: Citation[] = [];
  text.split('\n').forEach((line, i) => {
    for (const m of line.matchAll(CITATION)) {
      out.push({ file, line: i + 1, section: Number(m[1]), ...(m[2] ? { rule: m[2] } : {}) });
    }
  });
  return out;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.name === 'node_modules' || e.name.startsWith('.')) continue;
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/\.(ts|md|js|mjs)$/.test(e.name)) out.push(relative(root, p).split(sep).join('/'));
    }
  };
  walk(join(root, dir));
  return out;
}

const sections = sectionsOf(readFileSync(join(root, page), 'utf8'));

t.test('the page has numbered sections, 1 to N without gaps', async (t) => {
  const numbers = [...sections.keys()];
  t.ok(numbers.length >= 5, `${numbers.length} numbered sections`);
  t.strictSame(
    numbers,
    numbers.map((_, i) => i + 1),
    'numbered 1, 2, 3, … in order',
  );
});

t.test('every citation of docs/architecture.md names a section that exists, and the rule it quotes', async (t) => {
  const files = ['src', 'test', 'docs'].flatMap(filesUnder).filter((f) => f !== self && f !== page);
  const citations: Citation[] = [];
  const stale: string[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    citations.push(...citationsIn(file, text));
    text.split('\n').forEach((line, i) => {
      if (OLD_FORM.test(line)) stale.push(`${file}:${i + 1}: ${line.trim()}`);
    });
  }
  // Not vacuous: the citations the code makes today were found.
  t.ok(citations.length >= 14, `${citations.length} citations found`);
  t.ok(new Set(citations.map((c) => c.file)).size >= 10, 'in at least ten files');
  t.ok(
    citations.some((c) => c.rule),
    'some quote a rule',
  );

  for (const c of citations) {
    const where = `${c.file}:${c.line} §${c.section}${c.rule ? ` "${c.rule}"` : ''}`;
    const s = sections.get(c.section);
    if (!s) {
      t.fail(`${where}: ${page} has no section ${c.section}`);
      continue;
    }
    if (c.rule && !plain(s.text).includes(plain(c.rule))) t.fail(`${where}: section ${c.section} (${s.title}) does not state "${c.rule}"`);
  }
  t.strictSame(stale, [], `citations use the form "${page} §N"`);
});

t.test("the page's own § references name its sections", async (t) => {
  const text = readFileSync(join(root, page), 'utf8');
  const refs = [...text.matchAll(/§(\d+)/g)].map((m) => Number(m[1]));
  t.ok(refs.length > 0, `${refs.length} references`);
  for (const n of refs) t.ok(sections.has(n), `§${n} exists`);
});

t.test('self-check: sections and citations are read as meant', async (t) => {
  const md = ['# T', '## 1. One', 'a **Rule  name** here', '```', '## 9. in a fence', '```', '## Unnumbered', 'x', '## 2. Two', 'b'].join('\n');
  const s = sectionsOf(md);
  t.strictSame([...s.keys()], [1, 2]);
  t.ok(plain(s.get(1)?.text ?? '').includes(plain('rule name')), 'a quoted rule matches across emphasis and spacing');
  t.notOk(s.get(1)?.text.includes('x'), 'an unnumbered section ends the one before it');
  t.strictSame(citationsIn('f.ts', ' * see (docs/architecture.md §5 "bounded by construction") and docs/architecture.md §2.'), [
    { file: 'f.ts', line: 1, section: 5, rule: 'bounded by construction' },
    { file: 'f.ts', line: 1, section: 2 },
  ]);
  t.ok(OLD_FORM.test(`(${'ARCHI'}TECTURE §4)`) && OLD_FORM.test(`${'ARCHI'}TECTURE.md §2`), 'the old form is recognised');
  t.throws(() => sectionsOf('## 1. A\n## 1. B'), /section 1 twice/);
});
