/**
 * A page of docs/ with a part generated from the code between two markers (docs/configuration.md from the
 * configuration schema, docs/errors.md from the error catalog): the part made anew, the prose around it kept.
 */

/** `page` with what lies between `begin` and `end` (markers included) replaced by `generated`. */
export function withGeneratedPart(page: string, generated: string, begin: string, end: string, name: string): string {
  const from = page.indexOf(begin);
  const to = page.indexOf(end);
  if (from < 0 || to < from) throw new Error(`${name} lacks the markers of its generated part (${begin} … ${end})`);
  return page.slice(0, from) + generated + page.slice(to + end.length);
}
