/**
 * Every value a file of src/ exports is used by another file: an `export` is a promise that something outside the file
 * needs the name, so one that only its own file uses is dead surface to read past. Values are exported functions,
 * classes, constants and variables (types are left out: an options interface is exported to name an exported
 * function's parameter). "Another file" is any source of the project: src/, test/, bench/, scripts/ and examples/; a
 * layer's index.ts re-exporting a name counts as a use. A layer index's own exports are checked by
 * test/translate/index.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import ts from 'typescript';

const root = new URL('../..', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(path);
    return /\.(ts|mts|mjs|js)$/.test(path) && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** The names of the values a source file exports by declaration (`export function f`, `export const a, b`, `export class C`). */
function exportedValues(text: string): string[] {
  const file = ts.createSourceFile('x.ts', text, ts.ScriptTarget.Latest, true);
  const names: string[] = [];
  for (const s of file.statements) {
    if (!ts.canHaveModifiers(s) || !ts.getModifiers(s)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword)) continue;
    if ((ts.isFunctionDeclaration(s) || ts.isClassDeclaration(s)) && s.name) names.push(s.name.text);
    if (ts.isVariableStatement(s)) for (const d of s.declarationList.declarations) if (ts.isIdentifier(d.name)) names.push(d.name.text);
  }
  return names;
}

/** `name` as a word of `text` (not part of a longer identifier). */
function mentions(text: string, name: string): boolean {
  return new RegExp(`(?<![\\w$])${name.replace(/\$/g, '\\$')}(?![\\w$])`).test(text);
}

/** The exported values of `src` files that no other file of `all` mentions, as `file: name`. */
function unusedExports(src: ReadonlyMap<string, string>, all: ReadonlyMap<string, string>): string[] {
  const out: string[] = [];
  for (const [file, text] of src) {
    if (file.endsWith('/index.ts')) continue;
    for (const name of exportedValues(text)) {
      let used = false;
      for (const [other, body] of all) if (other !== file && mentions(body, name)) used = true;
      if (!used) out.push(`${file}: ${name}`);
    }
  }
  return out;
}

function read(paths: string[]): Map<string, string> {
  return new Map(paths.map((p) => [relative(root, p), readFileSync(p, 'utf8')]));
}

t.test('every value a file of src/ exports is used by another file', async (t) => {
  const src = read(sources(join(root, 'src')));
  const all = read(['src', 'test', 'bench', 'scripts', 'examples'].flatMap((d) => sources(join(root, d))));
  t.ok(src.size > 50 && all.size > src.size, 'the sources are found');
  t.strictSame(unusedExports(src, all), [], 'no export only its own file uses (drop the `export`)');
});

t.test('self-check: an export only its own file uses is found, one used elsewhere is not', async (t) => {
  t.strictSame(exportedValues('export const a = 1, b = 2;\nexport function f() {}\nexport class C {}\nexport interface I {}\nconst x = 1;'), [
    'a',
    'b',
    'f',
    'C',
  ]);
  const src = new Map([
    ['src/a.ts', 'export const used = 1;\nexport function lonely() { return used; }\nexport const ab = 2;'],
    ['src/x/index.ts', "export { thing } from './thing.js';"],
  ]);
  const all = new Map([...src, ['test/a.test.ts', "import { used } from '../src/a.js';\nconst abc = 3;"]]);
  t.strictSame(unusedExports(src, all), ['src/a.ts: lonely', 'src/a.ts: ab'], 'a longer identifier is no use of a name');
});
