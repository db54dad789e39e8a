/**
 * A hash table of strings held in one Int32Array (open addressing, linear probing): string -> its
 * position in a list. Made when a snapshot is written (index-snapshot.ts) and read back in place,
 * so a start finds a document, term or chunk by its text without building a Map of every one
 * (building the Maps was most of a snapshot's load: ~180 CPU-ms per 100k documents).
 *
 * The table only ever points into its list; entries of the list set to null later (a document
 * removed) no longer match. Positions added after it was made live in the owner's own Map.
 */

/** FNV-1a over UTF-16 code units. */
export function stringHash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The table for `values` (position i holds values[i]): twice as many slots as values, a power of two. */
export function buildStringHash(values: readonly (string | null)[]): Int32Array {
  let cap = 2;
  while (cap < 2 * values.length) cap *= 2;
  const table = new Int32Array(cap).fill(-1);
  const mask = cap - 1;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v === null) continue;
    let at = stringHash(v) & mask;
    while (table[at] !== -1) at = (at + 1) & mask;
    table[at] = i;
  }
  return table;
}

/** Position of `v` in `values` through `table`, or undefined. */
export function findInStringHash(table: Int32Array, values: readonly (string | null)[], v: string): number | undefined {
  const mask = table.length - 1;
  let at = stringHash(v) & mask;
  for (;;) {
    const i = table[at];
    if (i === -1) return undefined;
    if (values[i] === v) return i;
    at = (at + 1) & mask;
  }
}

/** Whether `table` can be a table made by buildStringHash for `count` values (a power of two, room, in range). */
export function validStringHash(table: Int32Array, count: number): boolean {
  const n = table.length;
  if (n < 2 || (n & (n - 1)) !== 0 || n < 2 * count) return false;
  let empty = 0;
  for (let i = 0; i < n; i++) {
    const x = table[i];
    if (x === -1) empty++;
    else if (x < 0 || x >= count) return false;
  }
  return empty > 0;
}
