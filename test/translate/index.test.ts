/**
 * Guard for the translate unit ring and the layer indexes: every module in src/translate has its own
 * test/translate/<module>.test.ts (a module without one is a todo), every runtime export of a tested module is exercised
 * there by name; and every layer's index.ts exports only names some file outside that layer imports through it
 * (other layers, app.ts/cli.ts/index.ts, tests, scripts, bench, examples): an index is the layer's public surface,
 * not a list of everything (issue #24). Tests are white-box and import a layer's other names from their module.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';
import ts from 'typescript';

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, '..', '..', 'src', 'translate');
const modules = readdirSync(srcDir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && f !== 'index.ts')
  .map((f) => f.slice(0, -3))
  .sort();

t.ok(modules.length >= 11, `found the translate modules (${modules.join(', ')})`);

for (const mod of modules) {
  t.test(mod, async (t) => {
    const testName = `${mod}.test.ts`;
    const testFile = join(here, testName);
    // A module another developer is still writing has no unit test yet: reported as todo, not as a failure.
    t.ok(existsSync(testFile), `test/translate/${testName} exists`, existsSync(testFile) ? {} : { todo: `no unit tests yet for src/translate/${mod}.ts` });
    if (!existsSync(testFile)) return;
    const testSource = readFileSync(testFile, 'utf8');
    const exported = Object.keys(await import(pathToFileURL(join(srcDir, `${mod}.ts`)).href));
    t.ok(exported.length > 0, `${mod} has runtime exports`);
    for (const name of exported) {
      t.match(testSource, new RegExp(`\\b${name}\\b`), `${mod}.${name} is exercised in ${testName}`);
    }
  });
}

// ---------------------------------------------------------------------------------------------------------------
// No dead exports: every name a layer's index.ts exports is imported by some file outside that layer
// ---------------------------------------------------------------------------------------------------------------

const root = join(here, '..', '..');
const srcRoot = join(root, 'src');
/** Directory layers with an index.ts (docs/architecture.md §2): their index is their public surface. */
const indexLayers = readdirSync(srcRoot, { withFileTypes: true })
  .filter((e) => e.isDirectory() && existsSync(join(srcRoot, e.name, 'index.ts')))
  .map((e) => e.name)
  .sort();
/** Where a layer's users live: the other layers and root files of src/, and the tests, scripts, bench and examples. */
const USER_DIRS = ['src', 'test', 'scripts', 'bench', 'examples'];

function codeFiles(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : codeFiles(path);
    return /\.(ts|mts|mjs|js)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

/** The layer of a file: the first folder under src/ (a root file of src/ is its own), `null` outside src/. */
function layerOf(file: string): string | null {
  const rel = relative(srcRoot, file);
  return rel.startsWith('..') ? null : rel.split(sep)[0]!;
}

/** The index layer a module specifier of `from` points at (`…/src/<layer>/index.js` or `…/src/<layer>`), if any. */
function indexLayerOf(from: string, specifier: string): string | null {
  if (!specifier.startsWith('.')) return null;
  const target = resolve(dirname(from), specifier).replace(/\.(js|ts)$/, '');
  return indexLayers.find((l) => target === join(srcRoot, l, 'index') || target === join(srcRoot, l)) ?? null;
}

/** Each index layer → the names files outside it import (or re-export, or `import('…').Name`) through its index. */
function importedThroughIndexes(): Map<string, Set<string>> {
  const used = new Map(indexLayers.map((l) => [l, new Set<string>()]));
  for (const file of USER_DIRS.flatMap((d) => codeFiles(join(root, d)))) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const note = (specifier: string, names: readonly string[]) => {
      const layer = indexLayerOf(file, specifier);
      if (layer && layer !== layerOf(file)) for (const name of names) used.get(layer)!.add(name);
    };
    const visit = (node: ts.Node) => {
      if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
        const bindings = node.importClause?.namedBindings;
        if (bindings && ts.isNamedImports(bindings))
          note(
            node.moduleSpecifier.text,
            bindings.elements.map((e) => (e.propertyName ?? e.name).text),
          );
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
        if (node.exportClause && ts.isNamedExports(node.exportClause)) {
          note(
            node.moduleSpecifier.text,
            node.exportClause.elements.map((e) => (e.propertyName ?? e.name).text),
          );
        }
      } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal) && node.qualifier) {
        note(node.argument.literal.text, [node.qualifier.getText(source).split('.')[0]!]);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return used;
}

/** The names an index.ts exports (values and types), as written in its `export { … } from` lists. */
function indexExports(layer: string): string[] {
  const file = join(srcRoot, layer, 'index.ts');
  const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  return source.statements.flatMap((s) =>
    ts.isExportDeclaration(s) && s.exportClause && ts.isNamedExports(s.exportClause) ? s.exportClause.elements.map((e) => e.name.text) : [],
  );
}

t.test('every name a layer index exports is imported by a file outside that layer (no dead exports)', async (t) => {
  t.ok(indexLayers.includes('translate') && indexLayers.length >= 6, `found the layer indexes (${indexLayers.join(', ')})`);
  const used = importedThroughIndexes();
  for (const layer of indexLayers) {
    const index = readFileSync(join(srcRoot, layer, 'index.ts'), 'utf8');
    t.notMatch(index, /export \*/, `src/${layer}/index.ts: named exports only (docs/architecture.md §2)`);
    const exported = indexExports(layer);
    t.ok(exported.length > 0, `src/${layer}/index.ts exports names`);
    for (const name of exported) {
      // A name only this layer (or a test) needs is imported from its module, not exported by the index.
      t.ok(used.get(layer)!.has(name), `src/${layer}/index.ts: ${name} is imported through the index by a file outside ${layer}/`);
    }
  }
});
