/**
 * Redaction precision and cost (issue 30).
 *
 *   node --import tsx bench/redact/run.ts
 *
 * 1. The annotated fixtures (test/privacy/fixtures/redaction-lines.txt, the lines the rules were tuned on,
 *    and redaction-heldout.txt, scored apart): true positives, false positives (something that is not
 *    personal data redacted), false negatives (personal data left), wrong marker and wrong extent, per
 *    section, for the precise redactor (src/privacy/redact.ts) and for the spec's patterns (spec-notes B2.3).
 * 2. SciFact's 5,183 abstracts (../shared/data/scifact): scientific text full of numbers, ranges, trial ids
 *    and gene names, with a few contact addresses and phone numbers. How many markers each redactor places,
 *    by kind (--examples prints each with its context, to tell true from false by eye).
 * 3. Cost: ms per 100 KB of text for both, on the abstracts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { findPii, type PiiKind, type PiiSpan } from '../../src/privacy/redact.ts';
import { FIXTURE_FILE, loadFixtures, score, type FixtureLine, type Score } from '../../test/privacy/fixtures.ts';

/** The spec's patterns (spec-notes B2.3), in its order, as spans. */
function specPatterns(text: string): PiiSpan[] {
  const spans: PiiSpan[] = [];
  const rules: [RegExp, PiiKind][] = [
    [/[\w.-]+@[\w.-]+/g, 'email'],
    [/\b\d{3}[-.]?\d{3}[-.]?\d{4}\b/g, 'phone'],
    [/\(\d{3}\)\s*\d{3}[-.]?\d{4}/g, 'phone'],
    [/\+\d{1,3}\s*\d{3}[-.]?\d{3}[-.]?\d{4}/g, 'phone'],
    [/\b\d{8,}\b/g, 'account'],
    [/\b\d{3}-\d{2}-\d{4}\b/g, 'ssn'],
  ];
  // Each rule sees the text the earlier ones left (markers stand in for what they took).
  let work = text;
  for (const [re, kind] of rules) {
    work = work.replace(re, (m, at: number) => {
      spans.push({ start: at, end: at + m.length, kind });
      return '\u0000'.repeat(m.length);
    });
  }
  return spans.sort((a, b) => a.start - b.start);
}

type Finder = (text: string) => PiiSpan[];
const finders: [string, Finder][] = [
  ['precise (src/privacy/redact.ts)', (t) => findPii(t)],
  ['spec patterns (spec-notes B2.3)', specPatterns],
];

const add = (a: Score, b: Score): Score => ({
  truePositives: a.truePositives + b.truePositives,
  falsePositives: a.falsePositives + b.falsePositives,
  falseNegatives: a.falseNegatives + b.falseNegatives,
  wrongKind: a.wrongKind + b.wrongKind,
  wrongExtent: a.wrongExtent + b.wrongExtent,
});
const zero: Score = { truePositives: 0, falsePositives: 0, falseNegatives: 0, wrongKind: 0, wrongExtent: 0 };

function table(title: string, lines: FixtureLine[]) {
  const marked = lines.reduce((n, l) => n + l.spans.length, 0);
  console.log(`\n${title}: ${lines.length} lines, ${marked} marked spans`);
  console.log('| redactor | section | TP | FP | FN | wrong marker | wrong extent |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [name, find] of finders) {
    const bySection = new Map<string, Score>();
    for (const l of lines) bySection.set(l.section, add(bySection.get(l.section) ?? zero, score(l.spans, find(l.input))));
    const total = [...bySection.values()].reduce(add, zero);
    for (const [section, s] of bySection) {
      console.log(`| ${name} | ${section} | ${s.truePositives} | ${s.falsePositives} | ${s.falseNegatives} | ${s.wrongKind} | ${s.wrongExtent} |`);
    }
    console.log(`| ${name} | **all** | ${total.truePositives} | ${total.falsePositives} | ${total.falseNegatives} | ${total.wrongKind} | ${total.wrongExtent} |`);
  }
}

console.log(`machine: ${os.cpus()[0]?.model ?? '?'} x${os.cpus().length}, node ${process.version}, load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
table('tuned fixtures (redaction-lines.txt)', loadFixtures());
table('held-out fixtures (redaction-heldout.txt)', loadFixtures(FIXTURE_FILE.replace('redaction-lines.txt', 'redaction-heldout.txt')));

const corpusFile = path.resolve(import.meta.dirname, '../../../shared/data/scifact/corpus.jsonl');
if (fs.existsSync(corpusFile)) {
  const texts = fs
    .readFileSync(corpusFile, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const d = JSON.parse(l) as { title: string; text: string };
      return `${d.title}\n${d.text}`;
    });
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);
  console.log(`\nSciFact abstracts: ${texts.length} texts, ${(bytes / 1e6).toFixed(1)} MB (numbers everywhere; a few contact addresses and phones)`);
  console.log('| redactor | markers | texts with a marker | by kind | ms per 100 KB (best of 3) |');
  console.log('|---|---|---|---|---|');
  for (const [name, find] of finders) {
    let markers = 0;
    let withMarker = 0;
    const kinds: Record<string, number> = {};
    const examples: string[] = [];
    for (const t of texts) {
      const spans = find(t);
      markers += spans.length;
      if (spans.length) withMarker++;
      for (const s of spans) {
        kinds[s.kind] = (kinds[s.kind] ?? 0) + 1;
        examples.push(`${s.kind}: …${t.slice(Math.max(0, s.start - 25), s.end + 15).replace(/\s+/g, ' ')}…`);
      }
    }
    let best = Infinity;
    for (let round = 0; round < 3; round++) {
      const t0 = performance.now();
      for (const t of texts) find(t);
      best = Math.min(best, performance.now() - t0);
    }
    const kindText = Object.entries(kinds).map(([k, n]) => `${k} ${n}`).join(', ') || '-';
    console.log(`| ${name} | ${markers} | ${withMarker} | ${kindText} | ${((best / bytes) * 1e5).toFixed(2)} |`);
    if (process.argv.includes('--examples')) for (const e of examples) console.log(`    ${e}`);
  }
} else {
  console.log(`\n(SciFact corpus not found at ${corpusFile}: skipped)`);
}
