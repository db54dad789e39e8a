#!/usr/bin/env node
// The opening table of docs/BENCHMARKS.md ("Current figures"), written from bench/figures.json: one record per
// area with the figure, its value, the conditions, the command that measured it, the lab-notes section with the
// details, and the commit it measured. A bench run with `--record` replaces its area's record
// (bench/lib/record.ts, stamped with the checkout's commit); older records carry the commit named in their
// conditions, or the head of main at the date they give ("by date"). test/unit/bench-table.test.ts fails when the
// table and the records disagree.
//
//   node scripts/bench-table.mjs           rewrite the table
//   node scripts/bench-table.mjs --check   exit 1 when the table is not what the records give
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const FIGURES_FILE = path.join(ROOT, 'bench', 'figures.json');
export const BENCHMARKS_FILE = path.join(ROOT, 'docs', 'BENCHMARKS.md');
const START = '<!-- figures:start (written by `node scripts/bench-table.mjs` from bench/figures.json: edit those, not this) -->';
const END = '<!-- figures:end -->';

function commitCell(r) {
  if (!r.commit) return 'not recorded';
  return r.commit_from === 'by_date' ? `${r.commit} (by date)` : r.commit;
}

/** The table as markdown, in the records' order. */
export function renderTable(records) {
  const head = ['| area | figure | value | conditions (backend, size, load) | command | section | commit |', '|---|---|---|---|---|---|---|'];
  const rows = records.map((r) => `| ${[r.area, r.figure, r.value, r.conditions, r.command, r.section, commitCell(r)].join(' | ')} |`);
  return [...head, ...rows].join('\n');
}

/** BENCHMARKS.md with its table replaced by the one the records give. */
export function withTable(markdown, records) {
  const a = markdown.indexOf(START);
  const b = markdown.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${path.relative(ROOT, BENCHMARKS_FILE)} has no ${START} … ${END} block`);
  return `${markdown.slice(0, a + START.length)}\n${renderTable(records)}\n${markdown.slice(b)}`;
}

export function readFigures() {
  return JSON.parse(fs.readFileSync(FIGURES_FILE, 'utf8'));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const current = fs.readFileSync(BENCHMARKS_FILE, 'utf8');
  const next = withTable(current, readFigures());
  if (process.argv.includes('--check')) {
    if (next !== current) {
      console.error('docs/BENCHMARKS.md: the figures table differs from bench/figures.json (run node scripts/bench-table.mjs)');
      process.exit(1);
    }
  } else if (next !== current) {
    fs.writeFileSync(BENCHMARKS_FILE, next);
    console.log('docs/BENCHMARKS.md: figures table written');
  }
}
