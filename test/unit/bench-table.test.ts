/**
 * The opening table of docs/BENCHMARKS.md is written from bench/figures.json (scripts/bench-table.mjs): it must be
 * exactly what the records give, and each record must name a commit or say it has none, and point at details that
 * exist (a lab-notes heading, or a doc).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain ES module without type declarations
import { BENCHMARKS_FILE, readFigures, renderTable, withTable } from '../../scripts/bench-table.mjs';

const doc = fs.readFileSync(BENCHMARKS_FILE, 'utf8');
const records: Array<Record<string, string | null>> = readFigures();

describe('docs/BENCHMARKS.md current figures', () => {
  it('is the table bench/figures.json gives (run node scripts/bench-table.mjs after editing the records)', () => {
    expect(withTable(doc, records)).toBe(doc);
  });

  it('has one record per area, each complete, with its commit or "not recorded"', () => {
    expect(new Set(records.map((r) => r.area)).size).toBe(records.length);
    for (const r of records) {
      for (const key of ['area', 'figure', 'value', 'conditions', 'command', 'section']) expect(r[key], `${r.area}: ${key}`).toBeTruthy();
      if (r.commit !== null) expect(r.commit, r.area!).toMatch(/^[0-9a-f]{7}(-dirty)?$/);
      expect(['named', 'by_date', 'recorded', 'unknown']).toContain(r.commit_from);
    }
    expect(renderTable(records).split('\n')).toHaveLength(records.length + 2);
  });

  it("names details that exist: a lab-notes heading, or a file of the project", () => {
    const headings = doc.split('\n').filter((l) => l.startsWith('#')).map((l) => l.replace(/^#+ /, ''));
    for (const r of records) {
      const first = r.section!.split(' › ')[0].trim();
      const found = headings.some((h) => h.startsWith(first)) || fs.existsSync(path.resolve(path.dirname(BENCHMARKS_FILE), '..', first));
      expect(found, `${r.area}: section "${first}"`).toBe(true);
    }
  });
});
