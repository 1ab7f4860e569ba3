/**
 * Guard for the translate unit ring: every module in src/translate has its own translate-<module>.test.ts (a module
 * without one is a todo), every runtime export of a tested module is exercised there by name, and the layer's
 * index re-exports every runtime export by name.
 */
import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import t from 'tap';

const here = dirname(fileURLToPath(import.meta.url));
const srcDir = join(here, '..', '..', 'src', 'translate');
const modules = readdirSync(srcDir)
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && f !== 'index.ts')
  .map((f) => f.slice(0, -3))
  .sort();

t.ok(modules.length >= 11, `found the translate modules (${modules.join(', ')})`);

for (const mod of modules) {
  t.test(mod, async (t) => {
    const testFile = join(here, `translate-${mod}.test.ts`);
    // A module another developer is still writing has no unit test yet: reported as todo, not as a failure.
    t.ok(
      existsSync(testFile),
      `test/unit/translate-${mod}.test.ts exists`,
      existsSync(testFile) ? {} : { todo: `no unit tests yet for src/translate/${mod}.ts` },
    );
    if (!existsSync(testFile)) return;
    const testSource = readFileSync(testFile, 'utf8');
    const exported = Object.keys(await import(pathToFileURL(join(srcDir, `${mod}.ts`)).href));
    t.ok(exported.length > 0, `${mod} has runtime exports`);
    for (const name of exported) {
      t.match(testSource, new RegExp(`\\b${name}\\b`), `${mod}.${name} is exercised in translate-${mod}.test.ts`);
    }
  });
}

t.test('index re-exports every runtime export of every module, by name', async (t) => {
  const index = readFileSync(join(srcDir, 'index.ts'), 'utf8');
  t.notMatch(index, /export \*/, 'named exports only (docs/architecture.md §2)');
  const fromIndex = new Set(Object.keys(await import(pathToFileURL(join(srcDir, 'index.ts')).href)));
  for (const mod of modules) {
    t.match(index, new RegExp(`from '\\./${mod}\\.js'`), `${mod} is re-exported`);
    for (const name of Object.keys(await import(pathToFileURL(join(srcDir, `${mod}.ts`)).href))) {
      t.ok(fromIndex.has(name), `${mod}.${name} is exported by the index`);
    }
  }
});
