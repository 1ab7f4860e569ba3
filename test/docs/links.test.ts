/**
 * The documentation holds together: every relative link in README.md and docs/*.md names a file that exists and, with
 * a #fragment, a heading of that file (GitHub's anchors); every page of docs/ is linked from the README; the README
 * stays a front page.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join, normalize, relative } from 'node:path';
import t from 'tap';

const root = new URL('../..', import.meta.url).pathname;

/** GitHub's anchor for a heading: lower-cased, punctuation but `-` and `_` removed, spaces to `-`. */
export function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/`/g, '')
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of a Markdown file (duplicates numbered as GitHub does). */
function anchors(text: string): Set<string> {
  const out = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*)$/.exec(line);
    if (!m) continue;
    const a = anchorOf(m[1]!);
    const n = seen.get(a) ?? 0;
    seen.set(a, n + 1);
    out.add(n === 0 ? a : `${a}-${n}`);
  }
  return out;
}

/** The link targets of a Markdown file, outside code blocks and spans. */
function links(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const bare = line.replace(/`[^`]*`/g, '');
    for (const m of bare.matchAll(/\]\(([^)\s]+)\)/g)) out.push(m[1]!);
  }
  return out;
}

async function pages(): Promise<string[]> {
  const docs = (await readdir(join(root, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`);
  return ['README.md', ...docs];
}

t.test('anchorOf follows GitHub', async (t) => {
  t.equal(anchorOf('Quick start'), 'quick-start');
  t.equal(anchorOf('`--check`: validate a configuration'), '--check-validate-a-configuration');
  t.equal(anchorOf('Operations › Health'), 'operations--health');
});

t.test('every relative link resolves, file and heading', async (t) => {
  const broken: string[] = [];
  for (const page of await pages()) {
    const text = await readFile(join(root, page), 'utf8');
    for (const target of links(text)) {
      if (/^[a-z]+:/i.test(target)) continue; // http(s), mailto: not checked here (no network in CI)
      const [path, fragment] = target.split('#', 2) as [string, string | undefined];
      const file = path === '' ? join(root, page) : normalize(join(dirname(join(root, page)), path));
      if (!existsSync(file)) {
        broken.push(`${page}: ${target} (no file ${relative(root, file)})`);
        continue;
      }
      if (fragment && file.endsWith('.md') && !anchors(await readFile(file, 'utf8')).has(fragment)) {
        broken.push(`${page}: ${target} (no heading #${fragment} in ${relative(root, file)})`);
      }
    }
  }
  t.same(broken, [], 'no broken link');
});

t.test('every page of docs/ is linked from the README, and the README is a front page', async (t) => {
  const readme = await readFile(join(root, 'README.md'), 'utf8');
  const linked = new Set(links(readme).map((l) => normalize(l.split('#')[0]!)));
  for (const page of (await pages()).slice(1)) t.ok(linked.has(page), `README links ${page}`);
  const lines = readme.split('\n').length;
  t.ok(lines <= 260, `README is ${lines} lines (a front page: at most about 250)`);
});
