/**
 * `--record`: a bench's figure written to bench/figures.json (its area's record replaced, or added at the end) and
 * the opening table of docs/BENCHMARKS.md written again from it (scripts/bench-table.mjs). The record is stamped
 * with the commit of this checkout, `-dirty` when src/ or bench/ has uncommitted changes: a figure says what it
 * measured.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
// @ts-expect-error plain ES module without type declarations
import { BENCHMARKS_FILE, FIGURES_FILE, readFigures, withTable } from '../../scripts/bench-table.mjs';
import { ROOT } from './server.ts';

export interface FigureRecord {
  /** The table's first column; a record with the same area is replaced. */
  area: string;
  figure: string;
  value: string;
  conditions: string;
  command: string;
  /** The lab-notes heading (docs/BENCHMARKS.md) with the details. */
  section: string;
}

/** The checkout's commit, short, with `-dirty` when src/ or bench/ differs from it. */
export function measuredCommit(root = ROOT): string {
  const git = (...args: string[]) => execFileSync('git', ['-C', root, ...args], { encoding: 'utf8' }).trim();
  const head = git('rev-parse', '--short=7', 'HEAD');
  return git('status', '--porcelain', '--', 'src', 'bench') ? `${head}-dirty` : head;
}

export function recordFigure(figure: FigureRecord, commit = measuredCommit()): void {
  const records: (FigureRecord & { commit: string | null; commit_from: string })[] = readFigures();
  const record = { ...figure, commit, commit_from: 'recorded' };
  const at = records.findIndex((r) => r.area === figure.area);
  if (at >= 0) records[at] = record;
  else records.push(record);
  fs.writeFileSync(FIGURES_FILE, `${JSON.stringify(records, null, 2)}\n`);
  fs.writeFileSync(BENCHMARKS_FILE, withTable(fs.readFileSync(BENCHMARKS_FILE, 'utf8'), records));
  console.log(`recorded "${figure.area}" (${commit}) in bench/figures.json and docs/BENCHMARKS.md`);
}
