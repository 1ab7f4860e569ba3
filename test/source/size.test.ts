/**
 * The source stays walkable (docs/architecture.md): no file of src/ over 650 lines and no function over 150, so that
 * each file keeps one job and each function can be read at once. Functions are every function declaration, method,
 * accessor, constructor, function expression and arrow function, measured from its first line to its last.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import t from 'tap';
import ts from 'typescript';

const root = new URL('../..', import.meta.url).pathname;
const MAX_FILE_LINES = 650;
const MAX_FUNCTION_LINES = 150;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** Every function-like node of a file with its line span. */
function functions(file: ts.SourceFile): Array<{ name: string; lines: number }> {
  const out: Array<{ name: string; lines: number }> = [];
  const visit = (node: ts.Node) => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const start = file.getLineAndCharacterOfPosition(node.getStart(file)).line;
      const end = file.getLineAndCharacterOfPosition(node.getEnd()).line;
      const name = node.name && ts.isIdentifier(node.name) ? node.name.text : ts.SyntaxKind[node.kind];
      out.push({ name: `${name} (line ${start + 1})`, lines: end - start + 1 });
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

t.test(`no file of src/ over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES}`, async (t) => {
  const files = sources(join(root, 'src'));
  t.ok(files.length > 50, 'the sources are found');
  for (const path of files) {
    const text = readFileSync(path, 'utf8');
    const name = relative(root, path);
    const lines = text.split('\n').length;
    t.ok(lines <= MAX_FILE_LINES, `${name}: ${lines} lines`);
    const file = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
    for (const f of functions(file)) if (f.lines > MAX_FUNCTION_LINES) t.fail(`${name}: ${f.name} is ${f.lines} lines`);
  }
});
