/**
 * Tests of parts that have not landed yet are tap `todo` (not a test file). tap does not run a `todo` test at all,
 * so `RUN_TODO=1` turns every such mark off and runs them as ordinary tests, to see where they stand.
 */

/** tap options for a test that is `todo` for `reason` (none when `reason` is undefined or `RUN_TODO=1`). */
export function todoOptions(reason: string | undefined): { todo?: string } {
  return reason !== undefined && process.env.RUN_TODO !== '1' ? { todo: reason } : {};
}
