/**
 * The redaction precision fixtures (fixtures/redaction-lines.txt): each line with its personal data marked
 * `{{kind:text}}`, read into the plain input, the expected output and the expected spans. The test and
 * bench/redact/run.ts both score findPii against them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PII_MARKERS, type PiiKind, type PiiSpan } from '../../src/privacy/redact.ts';

export interface FixtureLine {
  section: string;
  /** Line number in the fixture file (1-based). */
  lineNo: number;
  input: string;
  expected: string;
  spans: PiiSpan[];
}

export const FIXTURE_FILE = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'redaction-lines.txt');

export function loadFixtures(file = FIXTURE_FILE): FixtureLine[] {
  const out: FixtureLine[] = [];
  let section = '';
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((fileLine, i) => {
      if (fileLine.startsWith('## ')) section = fileLine.slice(3).trim();
      if (fileLine.trim() === '' || fileLine.startsWith('#')) return;
      const line = fileLine.replace(/\\n/g, '\n');
      let input = '';
      let expected = '';
      const spans: PiiSpan[] = [];
      let at = 0;
      for (const m of line.matchAll(/\{\{(email|phone|account|ssn):(.+?)\}\}/g)) {
        const before = line.slice(at, m.index);
        input += before;
        expected += before;
        const kind = m[1] as PiiKind;
        spans.push({ start: input.length, end: input.length + m[2].length, kind });
        input += m[2];
        expected += PII_MARKERS[kind];
        at = m.index! + m[0].length;
      }
      input += line.slice(at);
      expected += line.slice(at);
      out.push({ section, lineNo: i + 1, input, expected, spans });
    });
  return out;
}

export interface Score {
  /** Marked spans found with the right kind. */
  truePositives: number;
  /** Found spans that touch no marked span: something that is not personal data was redacted. */
  falsePositives: number;
  /** Marked spans nothing was found on: personal data left in the text. */
  falseNegatives: number;
  /** Marked spans found under another kind (redacted, with the wrong marker). */
  wrongKind: number;
  /** Found spans that cover a marked span only in part (some of it left, or more taken). */
  wrongExtent: number;
}

export function score(expected: PiiSpan[], found: PiiSpan[]): Score {
  const s: Score = { truePositives: 0, falsePositives: 0, falseNegatives: 0, wrongKind: 0, wrongExtent: 0 };
  const touches = (a: PiiSpan, b: PiiSpan) => a.start < b.end && a.end > b.start;
  for (const e of expected) {
    const hit = found.filter((f) => touches(f, e));
    if (hit.length === 0) s.falseNegatives++;
    else if (hit.length !== 1 || hit[0].start !== e.start || hit[0].end !== e.end) s.wrongExtent++;
    else if (hit[0].kind !== e.kind) s.wrongKind++;
    else s.truePositives++;
  }
  for (const f of found) if (!expected.some((e) => touches(f, e))) s.falsePositives++;
  return s;
}
