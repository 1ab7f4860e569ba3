// `npm run build`, but only when dist/ is older than what it is built from: `npm ci` has just built it (through
// `prepare`), and building again cost `npm run demo` 25 of its 31 seconds.
//
// Stale means: dist/cli.js is missing, or some file under src/, or tsconfig.json, tsconfig.build.json or
// package.json, was modified after it. tsc writes every output on each build, so dist/cli.js's time is the build's.
// A failed build (tsc emits even with errors) has that time set back to the epoch, so the next run builds again.
//
// Plain file times rather than `tsc --build` and a .tsbuildinfo: the build stays the one `npm run build` and the
// Dockerfile run, nothing but compiled sources lands in dist/ (the package test checks that), and an up-to-date
// check costs a directory walk, not loading the compiler.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync, utimesSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Newest modification time (ms) under `path` and the file that has it; none when the path does not exist. */
function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return undefined;
  }
  if (!stat.isDirectory()) return { file: path, mtimeMs: stat.mtimeMs };
  let best;
  for (const entry of readdirSync(path)) {
    const found = newest(join(path, entry));
    if (found && (!best || found.mtimeMs > best.mtimeMs)) best = found;
  }
  return best;
}

/** Why dist/ under `root` needs building, or undefined when it is up to date. */
export function staleReason(root) {
  const output = join(root, 'dist', 'cli.js');
  const built = newest(output);
  if (!built) return `${relative(root, output)} does not exist`;
  for (const input of ['src', 'tsconfig.json', 'tsconfig.build.json', 'package.json']) {
    const found = newest(join(root, input));
    if (found && found.mtimeMs > built.mtimeMs) return `${relative(root, found.file)} is newer than ${relative(root, output)}`;
  }
  return undefined;
}

/** Builds `root` with `npm run build` when stale; returns the process exit code. */
export function buildIfStale(root, write = (line) => process.stdout.write(`${line}\n`)) {
  const reason = staleReason(root);
  if (reason === undefined) {
    write('build-if-stale: dist/ is up to date');
    return 0;
  }
  write(`build-if-stale: ${reason}: building`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const run = spawnSync(npm, ['run', 'build'], { cwd: root, stdio: 'inherit', shell: process.platform === 'win32' });
  const code = run.status ?? 1;
  if (code !== 0) {
    try {
      utimesSync(join(root, 'dist', 'cli.js'), 0, 0);
    } catch {
      // Nothing emitted: the next run finds dist/cli.js missing.
    }
  }
  return code;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = buildIfStale(process.cwd());
}
