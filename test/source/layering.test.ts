/**
 * The dependency rule of docs/architecture.md §2, checked by reading the imports of every .ts file under src/.
 *
 * ONE SOURCE: the rule is the two Markdown tables of docs/architecture.md §2, between `<!-- layers:begin -->` /
 * `<!-- layers:end -->` (each layer: where it lives, the layers it may import, the packages it is limited to) and
 * `<!-- packages:begin -->` / `<!-- packages:end -->` (packages reserved to one layer). This test parses them
 * (`parseLayerRules`) and enforces exactly what they say: nothing of the rule is repeated here, so the page and the
 * check cannot drift. Change a rule in the page; a table this test cannot read fails it.
 *
 * What the tables do not say, and this checker adds (also stated in §2):
 * - Any file under src/ outside the layers of the table is an error until the table gives it a layer.
 * - app.ts is the composition root that returns a not-yet-listening Fastify app, so it may `import type` from
 *   `fastify`; a value import of fastify outside proxy/ is still an error.
 * - A file's layer is its first folder under src/ (src/upstream/legacy/pool.ts is `upstream`, and imports any file of
 *   upstream). A layer is imported only through its index.ts (a deep import into another layer's files, subfolders
 *   included, is an error), and a directory layer's index.ts names what it exports (no `export *`), so that its public
 *   surface is explicit.
 * - Relative imports end in ".js", stay inside src/, and the layers form no cycle; a value import of a package must
 *   be a runtime dependency in package.json.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';

// ---------------------------------------------------------------------------------------------------------------
// The checker
// ---------------------------------------------------------------------------------------------------------------

/** One import or re-export found in a source file. */
interface ImportRef {
  specifier: string;
  /** `import type …` / `export type …`, or braces whose every member is `type X`: erased at runtime. */
  typeOnly: boolean;
  kind: 'import' | 'export-from' | 'side-effect' | 'dynamic';
  line: number;
  /** `export * from …` / `export * as ns from …`. */
  star?: boolean;
}

/** One broken rule. */
interface Violation {
  file: string;
  specifier: string;
  line: number;
  rule: string;
}

// ---------------------------------------------------------------------------------------------------------------
// The rule, read from docs/architecture.md §2
// ---------------------------------------------------------------------------------------------------------------

/** A layer's name, as the first column of the layers table spells it (`translate`, `app`, …). */
type Layer = string;

/** The dependency rule as the page states it. */
interface LayerRules {
  /** Directory layers: `src/<dir>/` → layer. */
  dirLayers: ReadonlyMap<string, Layer>;
  /** Root-file layers: `src/<file>` → layer. */
  fileLayers: ReadonlyMap<string, Layer>;
  /** Which layers each layer may import (itself always allowed). */
  allowed: ReadonlyMap<Layer, readonly Layer[]>;
  /** The packages a layer is limited to (`any`: every runtime dependency not reserved to another layer). */
  packages: ReadonlyMap<Layer, readonly string[] | 'any'>;
  /** Packages reserved to one layer: nobody else may import them. */
  owned: ReadonlyArray<{ patterns: readonly string[]; owner: Layer; label: string }>;
}

/** The text between `<!-- name:begin -->` and `<!-- name:end -->`, each present exactly once. */
function region(markdown: string, name: string): string {
  const begin = `<!-- ${name}:begin -->`;
  const end = `<!-- ${name}:end -->`;
  const i = markdown.indexOf(begin);
  const j = markdown.indexOf(end);
  if (i < 0 || j < 0 || j < i) throw new Error(`docs/architecture.md: no ${begin} … ${end} region`);
  if (markdown.indexOf(begin, i + 1) >= 0 || markdown.indexOf(end, j + 1) >= 0) throw new Error(`docs/architecture.md: the ${name} markers appear twice`);
  return markdown.slice(i + begin.length, j);
}

/** The rows of the one Markdown table in `text`, as header → cell (cells trimmed). */
function tableRows(text: string, what: string): Array<Record<string, string>> {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (lines.length < 2 || !lines.every((l) => l.startsWith('|') && l.endsWith('|'))) throw new Error(`${what}: the region holds one table and nothing else`);
  const cells = (l: string) =>
    l
      .slice(1, -1)
      .split('|')
      .map((c) => c.trim());
  const header = cells(lines[0] as string);
  if (!cells(lines[1] as string).every((c) => /^:?-+:?$/.test(c))) throw new Error(`${what}: the second line is not a table separator`);
  return lines.slice(2).map((l, n) => {
    const row = cells(l);
    if (row.length !== header.length) throw new Error(`${what}, row ${n + 1}: ${row.length} cells under ${header.length} headers`);
    return Object.fromEntries(header.map((h, k) => [h, row[k] as string]));
  });
}

/** A cell's list of `code` names; `nothing`/`none` is the empty list, `any` stays `any` where allowed. */
function namesIn(cell: string | undefined, what: string, anyAllowed = false): string[] | 'any' {
  if (cell === undefined) throw new Error(`${what}: the column is missing`);
  if (cell === 'nothing' || cell === 'none') return [];
  if (cell === 'any' && anyAllowed) return 'any';
  return cell.split(',').map((part) => {
    const m = /^`([^`]+)`$/.exec(part.trim());
    if (!m) throw new Error(`${what}: "${part.trim()}" is not a \`name\` (nor nothing/none${anyAllowed ? '/any' : ''})`);
    return m[1] as string;
  });
}

function oneName(cell: string | undefined, what: string): string {
  const names = namesIn(cell, what);
  if (names === 'any' || names.length !== 1) throw new Error(`${what}: exactly one \`name\` expected`);
  return names[0] as string;
}

/** Parses the two tables of docs/architecture.md §2 (throws on anything it cannot read, naming the cell). */
function parseLayerRules(markdown: string): LayerRules {
  const dirLayers = new Map<string, Layer>();
  const fileLayers = new Map<string, Layer>();
  const allowed = new Map<Layer, Layer[]>();
  const packages = new Map<Layer, string[] | 'any'>();
  for (const row of tableRows(region(markdown, 'layers'), 'layers table')) {
    const layer = oneName(row.layer, 'layers table, column "layer"');
    const what = `layers table, layer ${layer}`;
    if (allowed.has(layer)) throw new Error(`${what}: listed twice`);
    const where = oneName(row.where, `${what}, column "where"`);
    const dir = /^src\/([\w-]+)\/$/.exec(where);
    const file = /^src\/([\w-]+\.ts)$/.exec(where);
    if (dir) dirLayers.set(dir[1] as string, layer);
    else if (file) fileLayers.set(file[1] as string, layer);
    else throw new Error(`${what}: "where" is src/<dir>/ or src/<file>.ts, not ${where}`);
    allowed.set(layer, namesIn(row['may import'], `${what}, column "may import"`) as string[]);
    packages.set(layer, namesIn(row.packages, `${what}, column "packages"`, true));
  }
  for (const [layer, to] of allowed) {
    for (const l of to) if (!allowed.has(l)) throw new Error(`layers table, layer ${layer}: may import ${l}, which is no layer of the table`);
  }
  const owned = tableRows(region(markdown, 'packages'), 'packages table').map((row) => {
    const patterns = namesIn(row.package, 'packages table, column "package"') as string[];
    const owner = oneName(row['only in'], `packages table, ${patterns.join(', ')}, column "only in"`);
    if (!allowed.has(owner)) throw new Error(`packages table, ${patterns.join(', ')}: ${owner} is no layer of the layers table`);
    return { patterns, owner, label: patterns.join(', ') };
  });
  return { dirLayers, fileLayers, allowed, packages, owned };
}

const BUILTINS = new Set(builtinModules);

/** Whether a table's package entry admits a specifier: the exact module, a package and its subpaths, `x/*`, or `node:*`. */
function admits(entry: string, spec: string): boolean {
  const pkg = packageName(spec);
  if (entry === 'node:*') return isBuiltin(pkg);
  if (entry.endsWith('/*')) return spec.startsWith(entry.slice(0, -1));
  return entry === spec || entry === pkg;
}

/** The package name of a bare specifier (`@scope/name/sub` → `@scope/name`, `node:fs/promises` → `node:fs`). */
function packageName(spec: string): string {
  if (spec.startsWith('node:')) return spec.split('/')[0] as string;
  const parts = spec.split('/');
  return spec.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] as string);
}
function isBuiltin(pkg: string): boolean {
  return pkg.startsWith('node:') || BUILTINS.has(pkg);
}
function isRelative(spec: string): boolean {
  return spec.startsWith('./') || spec.startsWith('../') || spec === '.' || spec === '..';
}

/** Blanks out whole-line `//` comments and block comments that start a line (JSDoc), keeping line numbers. */
function stripComments(source: string): string {
  const blank = (m: string) => m.replace(/[^\n]/g, ' ');
  return source.replace(/^[ \t]*\/\*[\s\S]*?\*\//gm, blank).replace(/^[ \t]*\/\/.*$/gm, blank);
}

const IMPORT_RE = /^[ \t]*import\s+(type\s+)?((?:[\w$]+\s*,\s*)?(?:\*\s*as\s+[\w$]+|\{[^}]*\}|[\w$]+))\s*from\s*(['"])([^'"\n]+)\3/gm;
const EXPORT_FROM_RE = /^[ \t]*export\s+(type\s+)?(\*(?:\s*as\s+[\w$]+)?|\{[^}]*\})\s*from\s*(['"])([^'"\n]+)\3/gm;
const SIDE_EFFECT_RE = /^[ \t]*import\s*(['"])([^'"\n]+)\1/gm;
const DYNAMIC_RE = /\bimport\s*\(\s*(['"`])([^'"`\n]+)\1\s*\)/g;

/** Every import, re-export, side-effect import and literal dynamic import in a source text. */
function parseImports(source: string): ImportRef[] {
  const text = stripComments(source);
  const lineAt = (index: number) => text.slice(0, index).split('\n').length;
  const found: ImportRef[] = [];
  const allTypeMembers = (clause: string) => {
    const m = /^\{([^}]*)\}$/.exec(clause.trim());
    if (!m) return false;
    const members = (m[1] as string)
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    return members.length > 0 && members.every((s) => /^type\s/.test(s));
  };
  for (const m of text.matchAll(IMPORT_RE)) {
    const clause = m[2] as string;
    found.push({ specifier: m[4] as string, typeOnly: Boolean(m[1]) || allTypeMembers(clause), kind: 'import', line: lineAt(m.index ?? 0) });
  }
  for (const m of text.matchAll(EXPORT_FROM_RE)) {
    const clause = m[2] as string;
    found.push({
      specifier: m[4] as string,
      typeOnly: Boolean(m[1]) || allTypeMembers(clause),
      kind: 'export-from',
      line: lineAt(m.index ?? 0),
      star: clause.startsWith('*'),
    });
  }
  for (const m of text.matchAll(SIDE_EFFECT_RE)) {
    found.push({ specifier: m[2] as string, typeOnly: false, kind: 'side-effect', line: lineAt(m.index ?? 0) });
  }
  for (const m of text.matchAll(DYNAMIC_RE)) {
    found.push({ specifier: m[2] as string, typeOnly: false, kind: 'dynamic', line: lineAt(m.index ?? 0) });
  }
  return found.sort((a, b) => a.line - b.line);
}

/** The layer of a path relative to src/ (posix separators), or undefined. */
function layerOf(rules: LayerRules, rel: string): Layer | undefined {
  const [first, ...rest] = rel.split('/');
  if (rest.length === 0) return rules.fileLayers.get((first as string).replace(/\.js$/, '.ts'));
  return rules.dirLayers.get(first as string);
}

interface CheckResult {
  violations: Violation[];
  /** Layer → layer edges actually present, with one example each. */
  edges: Map<string, { file: string; specifier: string; line: number }>;
  importCount: number;
}

/**
 * Checks a set of files (path relative to src/, posix → source text) against `rules`. `runtimeDeps` are the
 * package.json dependencies a value import may use (undefined: not checked).
 */
function checkSources(files: ReadonlyMap<string, string>, rules: LayerRules, runtimeDeps?: ReadonlySet<string>): CheckResult {
  const violations: Violation[] = [];
  const edges: CheckResult['edges'] = new Map();
  let importCount = 0;
  const v = (file: string, ref: ImportRef | undefined, rule: string) =>
    violations.push({ file: `src/${file}`, specifier: ref?.specifier ?? '', line: ref?.line ?? 0, rule });
  const importersOf = (to: Layer) => [...rules.allowed].filter(([, ls]) => ls.includes(to)).map(([l]) => l);

  for (const [file, source] of files) {
    const layer = layerOf(rules, file);
    if (!layer) {
      v(file, undefined, 'file is in no known layer (give it a row in the layers table of docs/architecture.md §2)');
      continue;
    }
    const isLayerIndex = [...rules.dirLayers.keys()].some((d) => file === `${d}/index.ts`);
    const mayImport = rules.allowed.get(layer) ?? [];
    const limitedTo = rules.packages.get(layer) ?? [];
    for (const ref of parseImports(source)) {
      importCount++;
      const spec = ref.specifier;
      if (isLayerIndex && ref.star) v(file, ref, "a layer's index.ts names its exports (no export *)");
      if (isRelative(spec)) {
        if (!spec.endsWith('.js') && !spec.endsWith('.json')) v(file, ref, 'relative import must end in ".js"');
        const target = posix.normalize(posix.join(posix.dirname(file), spec));
        if (target.startsWith('../') || target === '..') {
          v(file, ref, 'relative import leaves src/');
          continue;
        }
        const to = layerOf(rules, target);
        if (!to) {
          v(file, ref, `imports ${target}, which is in no known layer`);
          continue;
        }
        if (to === layer) continue;
        // A layer with an index.ts is imported through it only (demo/ has none: cli.ts picks its files).
        const toDir = target.split('/')[0] as string;
        if (target.includes('/') && files.has(`${toDir}/index.ts`) && target.replace(/\.ts$/, '.js') !== `${toDir}/index.js`) {
          v(file, ref, `imports ${target} past ${toDir}/index.ts (a layer is imported only through its index.ts)`);
        }
        const key = `${layer}>${to}`;
        if (!edges.has(key)) edges.set(key, { file: `src/${file}`, specifier: spec, line: ref.line });
        if (!mayImport.includes(to)) {
          v(
            file,
            ref,
            `${layer} may not import ${to} (${layer} may import: ${mayImport.join(', ') || 'nothing'}; ${to} is imported only by: ${importersOf(to).join(', ') || 'nobody'})`,
          );
        }
        continue;
      }
      // A package or built-in.
      const pkg = packageName(spec);
      if (limitedTo !== 'any' && !limitedTo.some((entry) => admits(entry, spec))) {
        v(file, ref, limitedTo.length ? `${layer} imports no package except ${limitedTo.join(', ')}` : `${layer} imports no package`);
        continue;
      }
      for (const { patterns, owner, label } of rules.owned) {
        if (!patterns.some((p) => admits(p, spec)) || layer === owner) continue;
        if (layer === 'app' && pkg === 'fastify' && ref.typeOnly) continue; // composition root types its return value
        v(file, ref, `only ${owner}/ imports ${label}`);
      }
      if (runtimeDeps && !ref.typeOnly && !isBuiltin(pkg) && !runtimeDeps.has(pkg)) {
        v(file, ref, `${pkg} is not a runtime dependency in package.json (value imports from src/ ship to users)`);
      }
    }
  }

  // No cycles between layers.
  const graph = new Map<string, string[]>();
  for (const key of edges.keys()) {
    const [from, to] = key.split('>') as [string, string];
    graph.set(from, [...(graph.get(from) ?? []), to]);
  }
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const seenCycles = new Set<string>();
  const visit = (n: string) => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 'open') {
        const cycle = [...stack.slice(stack.indexOf(m)), m];
        const id = [...cycle.slice(0, -1)].sort().join(',');
        if (!seenCycles.has(id)) {
          seenCycles.add(id);
          const example = edges.get(`${n}>${m}`);
          violations.push({
            file: example?.file ?? '',
            specifier: example?.specifier ?? '',
            line: example?.line ?? 0,
            rule: `layer cycle ${cycle.join(' → ')} (${cycle
              .slice(0, -1)
              .map((a, i) => {
                const e = edges.get(`${a}>${cycle[i + 1]}`);
                return `${a}→${cycle[i + 1]} via ${e?.file}:${e?.line} '${e?.specifier}'`;
              })
              .join('; ')})`,
          });
        }
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...graph.keys()].sort()) if (!state.has(n)) visit(n);

  return { violations, edges, importCount };
}

/**
 * Reservations of the packages table that their own layer never imports: a stale row (docs/architecture.md §2 says every
 * entry is imported by its layer). One string per unused entry, naming it and its layer.
 */
function unusedReservations(files: ReadonlyMap<string, string>, rules: LayerRules): string[] {
  const used = new Set<string>();
  for (const [file, source] of files) {
    const layer = layerOf(rules, file);
    if (layer === undefined) continue;
    for (const ref of parseImports(source)) {
      if (isRelative(ref.specifier)) continue;
      for (const { patterns, owner } of rules.owned) {
        if (owner !== layer) continue;
        for (const p of patterns) if (admits(p, ref.specifier)) used.add(`${owner}\0${p}`);
      }
    }
  }
  const unused: string[] = [];
  for (const { patterns, owner } of rules.owned) {
    for (const p of patterns) if (!used.has(`${owner}\0${p}`)) unused.push(`\`${p}\` is reserved to ${owner} but no file of ${owner} imports it`);
  }
  return unused;
}

const describe = (x: Violation) => `${x.file}:${x.line} '${x.specifier}': ${x.rule}`;

// ---------------------------------------------------------------------------------------------------------------
// The real source tree
// ---------------------------------------------------------------------------------------------------------------

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const srcDir = join(root, 'src');

/** The rule: the tables of docs/architecture.md §2 (the one source; see the head of this file). */
const RULES = parseLayerRules(readFileSync(join(root, 'docs', 'architecture.md'), 'utf8'));

function readTree(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.set(relative(dir, p).split(sep).join('/'), readFileSync(p, 'utf8'));
    }
  };
  walk(dir);
  return new Map([...out].sort(([a], [b]) => a.localeCompare(b)));
}

const pkgJson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
const runtimeDeps = new Set([
  ...Object.keys(pkgJson.dependencies ?? {}),
  ...Object.keys(pkgJson.peerDependencies ?? {}),
  ...Object.keys(pkgJson.optionalDependencies ?? {}),
]);

/**
 * Known violations that are real bugs reported to the team: asserted, but as todo, so the suite stays green while
 * they are open. Anything else fails.
 */
const KNOWN_BUGS: ReadonlyArray<[match: (x: Violation) => boolean, todo: string]> = [];

t.test('src/ obeys the dependency rule', async (t) => {
  const files = readTree(srcDir);
  const { violations, edges, importCount } = checkSources(files, RULES, runtimeDeps);

  // Not vacuous: the tree and its imports were actually read.
  t.ok(files.size >= 20, `read ${files.size} files`);
  t.ok(importCount >= 50, `parsed ${importCount} imports`);
  const translateIndex = parseImports(files.get('translate/index.ts') ?? '');
  t.ok(
    translateIndex.some((r) => r.specifier === './constants.js' && r.kind === 'export-from'),
    'export … from is parsed',
  );
  t.ok(edges.has('proxy>translate'), 'proxy → translate edge seen (multi-line imports parsed)');
  t.ok(
    [...files.keys()].some((f) => f.startsWith('upstream/legacy/')),
    'files in a subfolder of a layer are read (src/upstream/legacy/)',
  );
  t.ok(edges.has('app>proxy'), 'app → proxy edge seen');

  const unexpected: Violation[] = [];
  for (const x of violations) {
    const known = KNOWN_BUGS.find(([match]) => match(x));
    if (known) t.fail(describe(x), { todo: known[1] });
    else unexpected.push(x);
  }
  for (const x of unexpected) t.fail(describe(x));
  t.equal(unexpected.length, 0, `${unexpected.length} violation(s) of the dependency rule`);

  t.comment(
    `layer edges: ${[...edges.keys()]
      .map((k) => k.replace('>', '→'))
      .sort()
      .join(', ')}`,
  );
});

t.test('every reservation of the packages table is used by its layer', async (t) => {
  t.strictSame(unusedReservations(readTree(srcDir), RULES), [], 'no stale row in docs/architecture.md §2');
});

// ---------------------------------------------------------------------------------------------------------------
// Self-check: the checker catches what it must, so that the test above cannot pass vacuously
// ---------------------------------------------------------------------------------------------------------------

t.test('parseImports', async (t) => {
  const src = [
    `/**`,
    ` * import nope from 'in-a-doc-comment';`,
    ` */`,
    `// import alsoNope from 'in-a-line-comment';`,
    `import a from 'pkg-default';`,
    `import * as ns from 'pkg-ns';`,
    `import def, { x as y } from 'pkg-mixed';`,
    `import type { T } from 'pkg-type';`,
    `import { type U, type V } from 'pkg-inline-types';`,
    `import { type W, w } from 'pkg-some-types';`,
    `import {`,
    `  m1,`,
    `  type M2,`,
    `} from "pkg-multiline";`,
    `import 'pkg-side-effect';`,
    `export * from './all.js';`,
    `export * as grouped from './grouped.js';`,
    `export { e1, e2 as e3 } from './named.js';`,
    `export type { ET } from './types.js';`,
    `export const notAnImport = 'from "nowhere"';`,
    `export function f() { return import('pkg-dynamic'); }`,
    `const lazy = await import(\`pkg-template\`);`,
    `export { local };`,
  ].join('\n');
  const got = parseImports(src).map((r) => [r.specifier, r.kind, r.typeOnly, r.line]);
  t.strictSame(got, [
    ['pkg-default', 'import', false, 5],
    ['pkg-ns', 'import', false, 6],
    ['pkg-mixed', 'import', false, 7],
    ['pkg-type', 'import', true, 8],
    ['pkg-inline-types', 'import', true, 9],
    ['pkg-some-types', 'import', false, 10],
    ['pkg-multiline', 'import', false, 11],
    ['pkg-side-effect', 'side-effect', false, 15],
    ['./all.js', 'export-from', false, 16],
    ['./grouped.js', 'export-from', false, 17],
    ['./named.js', 'export-from', false, 18],
    ['./types.js', 'export-from', true, 19],
    ['pkg-dynamic', 'dynamic', false, 21],
    ['pkg-template', 'dynamic', false, 22],
  ]);
  t.equal(packageName('@fastify/reply-from/lib/x.js'), '@fastify/reply-from');
  t.equal(packageName('eventsource-parser/stream'), 'eventsource-parser');
  t.equal(packageName('node:fs/promises'), 'node:fs');
  t.equal(layerOf(RULES, 'translate/glob.ts'), 'translate');
  t.equal(layerOf(RULES, 'app.ts'), 'app');
  t.equal(layerOf(RULES, 'upstream/legacy/pool.ts'), 'upstream', "a subfolder is its first folder's layer");
  t.equal(layerOf(RULES, 'metrics/x.ts'), undefined);
  t.equal(layerOf(RULES, 'extra.ts'), undefined);
});

t.test('self-check: an unused reservation is caught', async (t) => {
  const rules = parseLayerRules(
    [
      '<!-- layers:begin -->',
      '| layer | where | may import | packages |',
      '|---|---|---|---|',
      '| `store` | `src/store/` | nothing | any |',
      '| `proxy` | `src/proxy/` | nothing | any |',
      '<!-- layers:end -->',
      '<!-- packages:begin -->',
      '| package | only in | why |',
      '|---|---|---|',
      '| `ioredis`, `lru-cache` | `store` | x |',
      '| `@fastify/*` | `proxy` | y |',
      '<!-- packages:end -->',
    ].join('\n'),
  );
  const files = new Map([
    ['store/a.ts', `import Redis from 'ioredis';`],
    ['proxy/b.ts', `import { LRUCache } from 'lru-cache';\nimport proxy from '@fastify/http-proxy';`],
  ]);
  t.strictSame(
    unusedReservations(files, rules),
    ['`lru-cache` is reserved to store but no file of store imports it'],
    'an import by another layer does not count',
  );
});

t.test('self-check: synthetic violations are caught', async (t) => {
  const files = new Map<string, string>([
    [
      'translate/bad.ts',
      [
        `import Fastify from 'fastify';`,
        `import { readFile } from 'node:fs/promises';`,
        `import pino from 'pino';`,
        `import type { X } from '../proxy/index.js';`,
        `import { y } from './y';`,
        `export * from '../store/index.js';`,
        `import { createHash } from 'node:crypto';`,
        `import { z } from 'zod';`,
        `import { TaskV1Schema } from '@modelcontextprotocol/ext-tasks/core/v1';`,
        `import { TaskV2Schema } from '@modelcontextprotocol/ext-tasks/core/v2';`,
        `import { createTaskSession } from '@modelcontextprotocol/ext-tasks/client';`,
      ].join('\n'),
    ],
    ['translate/y.ts', `export const y = 1;`],
    ['translate/index.ts', `export { y } from './y.js';`],
    ['store/s.ts', `import { z } from '../tasks/index.js';\nimport Redis from 'ioredis';\nimport { request } from 'undici';`],
    [
      'tasks/index.ts',
      [
        `import {`,
        `  a,`,
        `  type B,`,
        `} from '../proxy/index.js';`,
        `import { c } from '../config/index.js';`,
        `import 'fastify';`,
        `import { u } from '../upstream/index.js';`,
        `import { pool } from '../upstream/legacy/pool.js';`,
      ].join('\n'),
    ],
    [
      'upstream/index.ts',
      `import { trace } from '@opentelemetry/api';\nimport { t } from '../tasks/index.js';\nimport { l } from 'lru-cache';\nexport * from './legacy.js';\nexport * as all from './all.js';\nexport { named } from './named.js';`,
    ],
    [
      'demo/deep.ts',
      `import { g } from '../translate/glob.js';\nimport type { T } from '../translate/tasks.js';\nimport { ok } from '../translate/index.js';\nimport { same } from './d.js';`,
    ],
    [
      'proxy/index.ts',
      `import Fastify from 'fastify';\nimport rf from '@fastify/reply-from';\nexport async function f() { return import('lru-cache'); }\nimport { C } from '@opentelemetry/api';`,
    ],
    ['demo/d.ts', `import { Registry } from 'prom-client';\nimport { translate } from '../translate/index.ts';`],
    ['config/index.ts', `export const config = 1;`],
    ['store/index.ts', `export const s = 1;`],
    ['index.ts', `export { d } from './demo/d.js';\nexport { config } from './config/index.js';\nexport * from '../outside.js';`],
    ['app.ts', `import type { FastifyInstance } from 'fastify';\nimport Fastify from 'fastify';\nimport { config } from './config/index.js';`],
    ['cli.ts', `import('./demo/d.js');\nimport { config } from './config/index.js';\nimport { s } from './store/index.js';\nimport { l } from 'left-pad';`],
    ['version.ts', `import { x } from './translate/index.js';`],
    ['metrics/m.ts', `export const m = 1;`],
  ]);
  const { violations } = checkSources(
    files,
    RULES,
    new Set([
      'fastify',
      '@fastify/reply-from',
      'lru-cache',
      'ioredis',
      'undici',
      '@opentelemetry/api',
      'prom-client',
      'zod',
      '@modelcontextprotocol/ext-tasks',
    ]),
  );
  const lines = violations.map(describe);

  // [file, specifier, rule pattern]
  const expected: Array<[string, string, RegExp]> = [
    ['src/translate/bad.ts', 'fastify', /translate imports no package except node:crypto/],
    ['src/translate/bad.ts', 'node:fs/promises', /translate imports no package/],
    ['src/translate/bad.ts', 'pino', /translate imports no package/],
    ['src/translate/bad.ts', '@modelcontextprotocol/ext-tasks/client', /translate imports no package/],
    ['src/translate/bad.ts', '../proxy/index.js', /translate may not import proxy/],
    ['src/translate/bad.ts', './y', /must end in "\.js"/],
    ['src/translate/bad.ts', '../store/index.js', /translate may not import store/],
    ['src/store/s.ts', '../tasks/index.js', /store may not import tasks/],
    ['src/store/s.ts', 'undici', /store imports no package except node:\*, lru-cache, ioredis/],
    ['src/tasks/index.ts', '../proxy/index.js', /tasks may not import proxy/],
    ['src/tasks/index.ts', '../config/index.js', /tasks may not import config .*config is imported only by: store-setup, app, cli\)/],
    ['src/tasks/index.ts', 'fastify', /only proxy\/ imports fastify/],
    ['src/upstream/index.ts', './legacy.js', /names its exports \(no export \*\)/],
    ['src/upstream/index.ts', './all.js', /names its exports \(no export \*\)/],
    ['src/demo/deep.ts', '../translate/glob.js', /past translate\/index\.ts/],
    ['src/demo/deep.ts', '../translate/tasks.js', /past translate\/index\.ts/],
    ['src/tasks/index.ts', '../upstream/legacy/pool.js', /past upstream\/index\.ts/],
    ['src/upstream/index.ts', '../tasks/index.js', /upstream may not import tasks/],
    ['src/upstream/index.ts', 'lru-cache', /only store\/ imports lru-cache/],
    ['src/proxy/index.ts', 'lru-cache', /only store\/ imports lru-cache/],
    ['src/proxy/index.ts', '@opentelemetry/api', /only upstream\/ imports @opentelemetry\/\*/],
    ['src/demo/d.ts', 'prom-client', /only proxy\/ imports prom-client/],
    ['src/demo/d.ts', '../translate/index.ts', /must end in "\.js"/],
    ['src/index.ts', './demo/d.js', /index may not import demo .*demo is imported only by: cli\)/],
    ['src/index.ts', './config/index.js', /index may not import config .*config is imported only by: store-setup, app, cli\)/],
    ['src/index.ts', '../outside.js', /leaves src\//],
    ['src/app.ts', 'fastify', /only proxy\/ imports fastify/],
    ['src/cli.ts', 'left-pad', /not a runtime dependency/],
    ['src/version.ts', './translate/index.js', /version may not import translate/],
    ['src/metrics/m.ts', '', /no known layer/],
    ['', '', /layer cycle (tasks → upstream → tasks|upstream → tasks → upstream)/],
  ];
  for (const [file, spec, rule] of expected) {
    t.ok(
      violations.some((x) => (file === '' || x.file === file) && (spec === '' || x.specifier === spec) && rule.test(x.rule)),
      `caught: ${file || '*'} '${spec}' ${rule}`,
    );
  }
  t.equal(violations.length, expected.length, `no unexpected findings:\n${lines.join('\n')}`);

  // Allowed on purpose: none of these may be reported.
  const allowed: Array<[string, string]> = [
    ['src/translate/bad.ts', 'node:crypto'],
    ['src/translate/bad.ts', 'zod'],
    ['src/translate/bad.ts', '@modelcontextprotocol/ext-tasks/core/v1'],
    ['src/translate/bad.ts', '@modelcontextprotocol/ext-tasks/core/v2'],
    ['src/store/s.ts', 'ioredis'],
    ['src/upstream/index.ts', '@opentelemetry/api'],
    ['src/proxy/index.ts', 'fastify'],
    ['src/proxy/index.ts', '@fastify/reply-from'],
    ['src/app.ts', './config/index.js'],
    ['src/cli.ts', './demo/d.js'],
    ['src/cli.ts', './config/index.js'],
    ['src/tasks/index.ts', '../upstream/index.js'],
    ['src/upstream/index.ts', './named.js'],
    ['src/demo/deep.ts', '../translate/index.js'],
    ['src/demo/deep.ts', './d.js'],
  ];
  for (const [file, spec] of allowed)
    t.notOk(
      violations.some((x) => x.file === file && x.specifier === spec),
      `allowed: ${file} '${spec}'`,
    );
  t.ok(
    violations.some((x) => x.file === 'src/app.ts' && x.line === 2),
    'app.ts: the value import (line 2) is the one reported, not the type import',
  );
});

t.test('self-check: a clean tree has no findings', async (t) => {
  const files = new Map<string, string>([
    ['translate/index.ts', `export { a } from './a.js';`],
    ['tasks/runner.ts', `import { u } from '../upstream/index.js';\nimport { near } from './near.js';`],
    ['translate/a.ts', `import { createHmac } from 'node:crypto';\nexport const a = 1;`],
    ['store/index.ts', `import type { A } from '../translate/index.js';\nimport { LRUCache } from 'lru-cache';`],
    [
      'upstream/index.ts',
      `import { a } from '../translate/index.js';\nimport { GATEWAY_NAME } from '../version.js';\nexport { LegacyUpstreamClient } from './legacy/client.js';`,
    ],
    [
      'upstream/legacy/client.ts',
      `import { a } from '../../translate/index.js';\nimport type { UpstreamClient } from '../client.js';\nimport { pool } from './pool.js';\nimport { headers } from '../modern/tool-headers.js';`,
    ],
    ['upstream/stdio/host.ts', `import { exchange } from '../http.js';\nimport { GATEWAY_NAME } from '../../version.js';`],
    ['tasks/index.ts', `import { a } from '../translate/index.js';\nimport type { S } from '../store/index.js';\nimport { u } from '../upstream/index.js';`],
    ['proxy/index.ts', `import Fastify from 'fastify';\nimport { t } from '../tasks/index.js';`],
    ['config/index.ts', `import { z } from 'zod';`],
    ['app.ts', `import type { FastifyInstance } from 'fastify';\nimport { buildEdge } from './proxy/index.js';\nimport type { C } from './config/index.js';`],
    ['cli.ts', `import { buildGateway } from './app.js';\nconst d = await import('./demo/d.js');`],
    ['demo/d.ts', `import { createServer } from 'node:http';`],
    ['version.ts', `export const V = '1';`],
    ['index.ts', `export * from './translate/index.js';\nexport { buildGateway } from './app.js';`],
  ]);
  const { violations, edges } = checkSources(files, RULES, new Set(['fastify', 'lru-cache', 'zod']));
  t.strictSame(violations.map(describe), []);
  t.ok(edges.size >= 8, 'edges were built');
});

// ---------------------------------------------------------------------------------------------------------------
// The rule's source: docs/architecture.md §2 is read whole, and nothing else can be
// ---------------------------------------------------------------------------------------------------------------

t.test('the rule as docs/architecture.md §2 states it', async (t) => {
  // Not vacuous: the page's tables were read, row by row.
  t.strictSame([...RULES.allowed.keys()].sort(), [
    'app',
    'cli',
    'config',
    'demo',
    'index',
    'proxy',
    'store',
    'store-setup',
    'tasks',
    'translate',
    'upstream',
    'version',
  ]);
  t.strictSame(RULES.allowed.get('translate'), [], 'translate imports no layer');
  t.ok(RULES.allowed.get('tasks')?.includes('upstream'), 'tasks may import upstream');
  t.notOk(RULES.allowed.get('upstream')?.includes('tasks'), 'upstream may not import tasks');
  t.ok((RULES.packages.get('translate') as string[]).includes('zod'), 'translate is limited to its packages');
  t.equal(RULES.packages.get('proxy'), 'any');
  t.ok(
    RULES.owned.some((o) => o.owner === 'proxy' && o.patterns.includes('@fastify/*')),
    'the packages table was read',
  );

  // Every layer of the table exists, and the allowed graph itself has no cycle (else a cycle could be legal).
  for (const [dir, layer] of RULES.dirLayers) t.ok(existsSync(join(srcDir, dir)), `layer ${layer}: src/${dir}/ exists`);
  for (const [file, layer] of RULES.fileLayers) t.ok(existsSync(join(srcDir, file)), `layer ${layer}: src/${file} exists`);
  const seen = new Set<string>();
  const open = new Set<string>();
  const cycle = (l: string): boolean => {
    if (open.has(l)) return true;
    if (seen.has(l)) return false;
    open.add(l);
    const found = (RULES.allowed.get(l) ?? []).some(cycle);
    open.delete(l);
    seen.add(l);
    return found;
  };
  t.notOk([...RULES.allowed.keys()].some(cycle), 'the "may import" column has no cycle');
});

t.test('self-check: parseLayerRules reads the tables and refuses what it cannot read', async (t) => {
  const page = (layers: string, packages = '| `x` | `b` | why |') =>
    [
      '# P',
      '<!-- layers:begin -->',
      '| layer | where | may import | packages |',
      '|---|---|---|---|',
      layers,
      '<!-- layers:end -->',
      'text',
      '<!-- packages:begin -->',
      '| package | only in | why |',
      '|---|---|---|',
      packages,
      '<!-- packages:end -->',
    ].join('\n');
  const ok = parseLayerRules(page('| `a` | `src/a/` | nothing | `node:*`, `zod` |\n| `b` | `src/b.ts` | `a` | any |', '| `x`, `@y/*` | `b` | why |'));
  t.strictSame([...ok.dirLayers], [['a', 'a']]);
  t.strictSame([...ok.fileLayers], [['b.ts', 'b']]);
  t.strictSame(
    [...ok.allowed],
    [
      ['a', []],
      ['b', ['a']],
    ],
  );
  t.strictSame(
    [...ok.packages],
    [
      ['a', ['node:*', 'zod']],
      ['b', 'any'],
    ],
  );
  t.strictSame(ok.owned, [{ patterns: ['x', '@y/*'], owner: 'b', label: 'x, @y/*' }]);
  t.ok(admits('node:*', 'node:fs/promises') && admits('node:*', 'fs') && admits('zod', 'zod/v4') && admits('@y/*', '@y/z/w'));
  t.notOk(admits('node:*', 'zod') || admits('zod', 'zodiac') || admits('@m/e/core/v1', '@m/e/client') || admits('@y/*', '@yy/z'));

  t.throws(() => parseLayerRules('# no markers'), /no <!-- layers:begin -->/);
  t.throws(() => parseLayerRules(page('| `a` | `src/a/` | `zz` | any |')), /may import zz, which is no layer/);
  t.throws(() => parseLayerRules(page('| `a` | `src/a/` | translate | any |')), /"translate" is not a `name`/);
  t.throws(() => parseLayerRules(page('| `a` | `src/a/` | nothing |')), /3 cells under 4 headers/);
  t.throws(() => parseLayerRules(page('| `a` | `lib/a/` | nothing | any |')), /"where" is src\/<dir>\/ or src\/<file>\.ts/);
  t.throws(() => parseLayerRules(page('| `a` | `src/a/` | nothing | any |\n| `a` | `src/b/` | nothing | any |')), /listed twice/);
  t.throws(() => parseLayerRules(page('| `a` | `src/a/` | nothing | any |', '| `x` | `q` | why |')), /q is no layer/);
  t.throws(() => parseLayerRules(page('| `a` | `src/a/` | nothing | any |\nprose inside')), /one table and nothing else/);
  t.throws(() => parseLayerRules(`${page('| `a` | `src/a/` | nothing | any |')}\n<!-- layers:begin -->`), /appear twice/);
});
