/** Which source a coverage report is about, and its stable id (shared by the gateway and the clients). */
import { MAX_REF_CHARS, type Collector } from '../schemas/coverage.ts';
import type { SourceType } from '../schemas/common.ts';
import { uuidV5 } from '../util/ids.ts';

export interface SourceIdentity {
  collector: Collector;
  source_type: SourceType;
  source_account_id: string | null;
  source_ref: string;
}

const COVERAGE_NAMESPACE = '0c5e7a52-37b1-5c8e-9d0e-6b3f1a2c4d57';

/** The same collector, type, account and ref always give the same id, on every machine. */
export function coverageSourceId(identity: SourceIdentity): string {
  const s = sourceIdentity(identity);
  return uuidV5(JSON.stringify([s.collector, s.source_type, s.source_account_id ?? null, s.source_ref]), COVERAGE_NAMESPACE);
}

/** Text a report can carry: no NUL, at most `max` characters (a long path keeps its end, the informative part). */
export function fit(text: string, max: number, keepEnd = false): string {
  const clean = text.replace(/\u0000/g, '\uFFFD');
  if (clean.length <= max) return clean;
  // Never half a surrogate pair: the gateway would read it as U+FFFD and the text would differ from ours.
  if (keepEnd) return `…${clean.slice(clean.length - max + 1).replace(/^[\uDC00-\uDFFF]/, '')}`;
  return `${clean.slice(0, max - 1).replace(/[\uD800-\uDBFF]$/, '')}…`;
}

/** The identity as reports carry it (a ref longer than the limit keeps its end). */
export function sourceIdentity(s: SourceIdentity): SourceIdentity {
  return { collector: s.collector, source_type: s.source_type, source_account_id: s.source_account_id ?? null, source_ref: fit(s.source_ref, MAX_REF_CHARS, true) };
}
