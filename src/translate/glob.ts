/** Tool-name globs for per-tool rules: `*` matches any run of characters, `?` one character. */

/** Compiles a glob into an anchored RegExp. */
export function globToRegExp(glob: string): RegExp {
  const body = glob.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 's');
}

/** The first rule whose pattern matches `name` (exact names and globs, in the order given). */
export function firstMatch<T>(rules: ReadonlyArray<readonly [pattern: RegExp, value: T]>, name: string): T | undefined {
  for (const [re, value] of rules) if (re.test(name)) return value;
  return undefined;
}
