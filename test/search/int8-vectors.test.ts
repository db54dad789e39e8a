/**
 * The SIMD dot products of the in-memory k-NN (src/search/int8-vectors.ts): exactly the integer sums
 * a plain loop gives, for any dimension count (padding), many rows (the memory grows, never past its
 * bound), more slots than one kernel call takes, and the extremes of both ranges; a slot beyond the
 * rows is refused.
 */
import { describe, expect, it } from 'vitest';
import { Int8Vectors } from '../../src/search/int8-vectors.ts';

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}
const rnd = rng(11);
const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));

function reference(rows: Int8Array[], query: Int16Array, slots: Int32Array): number[] {
  return Array.from(slots, (s) => rows[s].reduce((sum, x, d) => sum + x * query[d], 0));
}

describe('Int8Vectors', () => {
  for (const dims of [1, 16, 37, 512]) {
    it(`gives the plain loop's sums at ${dims} dimensions`, () => {
      const v = new Int8Vectors(dims);
      const rows = Array.from({ length: 300 }, () => Int8Array.from({ length: dims }, () => int(-127, 127)));
      rows.forEach((r, s) => v.set(s, r));
      const query = Int16Array.from({ length: dims }, () => int(-16_383, 16_383));
      const slots = Int32Array.from({ length: 1_000 }, () => int(0, rows.length - 1));
      const out = new Int32Array(slots.length);
      v.dots(query, slots, out);
      expect([...out]).toEqual(reference(rows, query, slots));
    });
  }

  it('holds rows written after it grew, and more slots than one kernel call takes', () => {
    const dims = 48;
    const v = new Int8Vectors(dims);
    const rows: Int8Array[] = [];
    for (let s = 0; s < 5_000; s++) {
      rows.push(Int8Array.from({ length: dims }, () => int(-127, 127)));
      v.set(s, rows[s]);
    }
    // Overwriting a row replaces it.
    rows[7] = Int8Array.from({ length: dims }, (_, d) => (d % 2 === 0 ? 127 : -127));
    v.set(7, rows[7]);
    const query = Int16Array.from({ length: dims }, () => int(-16_383, 16_383));
    const slots = Int32Array.from({ length: 10_000 }, (_, i) => (i * 7919) % rows.length);
    const out = new Int32Array(slots.length);
    v.dots(query, slots, out);
    expect([...out]).toEqual(reference(rows, query, slots));
  });

  it('sums the extremes without overflow (127 × 16,383 × 512 fits in int32)', () => {
    const v = new Int8Vectors(512);
    v.set(0, new Int8Array(512).fill(127));
    v.set(1, new Int8Array(512).fill(-127));
    const out = new Int32Array(2);
    v.dots(new Int16Array(512).fill(16_383), Int32Array.of(0, 1), out);
    expect([...out]).toEqual([127 * 16_383 * 512, -127 * 16_383 * 512]);
  });

  it('never reserves room for more rows than its bound', () => {
    const dims = 512;
    const v = new Int8Vectors(dims, 600);
    for (let s = 0; s < 600; s++) v.set(s, new Int8Array(dims).fill(1));
    // Doubling past 512 rows would reserve 1,024 (8 pages of 64 KiB); the bound keeps it to 600
    // (5 pages), plus the scratch page.
    expect(v.bytes).toBeLessThanOrEqual(65_536 + Math.ceil((600 * dims) / 65_536) * 65_536);
    expect(() => v.set(600, new Int8Array(dims))).toThrow(/beyond 600 rows/);
  });

  it('refuses a slot beyond its rows and a query of the wrong length', () => {
    const v = new Int8Vectors(16);
    v.set(0, new Int8Array(16).fill(1));
    expect(() => v.dots(new Int16Array(16), Int32Array.of(1_000_000), new Int32Array(1))).toThrow(/out of range/);
    expect(() => v.dots(new Int16Array(15), Int32Array.of(0), new Int32Array(1))).toThrow(/query of 15/);
    expect(() => v.set(1, new Int8Array(3))).toThrow(/3 values for 16/);
  });
});
