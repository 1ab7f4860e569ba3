/** Tool-name globs for per-tool rules: `*` matches any run of characters, `?` one character. */

/** Compiles a glob into an anchored RegExp. */
export function globToRegExp(glob: string): RegExp {
  const body = glob
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${body}$`, 's');
}

/** The first rule whose pattern matches `name` (exact names and globs, in the order given). */
export function firstMatch<T>(rules: ReadonlyArray<readonly [pattern: RegExp, value: T]>, name: string): T | undefined {
  for (const [re, value] of rules) if (re.test(name)) return value;
  return undefined;
}

/**
 * Whether every name `later` matches is matched by `earlier` too, so that a rule for `later` placed after one for
 * `earlier` can never apply (rules are first-match). Sound, not complete: `true` only when it is certain (a `*` of
 * `earlier` absorbs any run of `later`, a `?` one character or `?`), so a config check built on it never refuses a
 * rule that could match.
 */
export function globCovers(earlier: string, later: string): boolean {
  const a = earlier;
  const b = later;
  // covers[i][j]: a[i..] covers b[j..]; filled from the ends.
  let next: boolean[] = new Array<boolean>(b.length + 1).fill(false);
  next[b.length] = true;
  for (let i = a.length; i >= 0; i--) {
    const row: boolean[] = new Array<boolean>(b.length + 1).fill(false);
    for (let j = b.length; j >= 0; j--) {
      if (i === a.length) row[j] = j === b.length;
      else if (a[i] === '*') row[j] = (next[j] ?? false) || (j < b.length && (row[j + 1] ?? false));
      else if (j === b.length || b[j] === '*') row[j] = false;
      else if (a[i] === '?' || a[i] === b[j]) row[j] = next[j + 1] ?? false;
      else row[j] = false;
    }
    next = row;
  }
  return next[0] ?? false;
}
