/**
 * The run recorder every collector and importer calls (docs/coverage.md): one per source and run. Each item of
 * the source is named once by its ref (a path, an IMAP UID, a chat.db ROWID) and ends in exactly one state —
 * stored (new, unchanged, updated), skipped with a reason, failed with its error, or pending — so the counts add
 * up by construction. A later call for the same ref replaces the earlier state (an item first waiting, then
 * stored). Items a collector knows only as a number (rows of a range it read in an earlier run) are added in
 * bulk. The report lists the items someone may want to act on, bounded; the rest are counted.
 */
import {
  MAX_MISSING_PER_REPORT,
  MAX_REASON_CHARS,
  MAX_REF_CHARS,
  MISSING_SKIP_REASONS,
  SKIP_REASONS,
  type CoverageRunReportT,
  type MissingItemT,
  type MissingState,
  type RunCountsT,
  type SkipReason,
} from '../schemas/coverage.ts';
import { newId } from '../util/ids.ts';
import { fit, sourceIdentity, type SourceIdentity } from './identity.ts';

export type StoredHow = 'new' | 'unchanged' | 'updated';
type State = StoredHow | MissingState;

interface Outcome {
  state: State;
  code: string;
  reason: string;
}

/** Stored outcomes carry nothing per item: one shared object each keeps a large run small. */
const STORED: Record<StoredHow, Outcome> = {
  new: { state: 'new', code: '', reason: '' },
  unchanged: { state: 'unchanged', code: '', reason: '' },
  updated: { state: 'updated', code: '', reason: '' },
};
const NOT_REACHED: Outcome = { state: 'pending', code: 'not_reached', reason: 'seen in the source but not handled by this run' };

/** Bytes of listed refs and reasons per report, so a report of long paths stays well inside the gateway's body limit. */
const MAX_LISTED_BYTES = 4 * 1024 * 1024;

/** How a collector classified the gateway's answer to one item. */
export interface GatewayVerdict {
  status: 'accepted' | 'rejected' | 'retry';
  duplicate?: boolean;
  versionNumber?: number | null;
  /** The answer's `skipped` (blocked_source, blocked_identifier): accepted, nothing stored. */
  skipped?: string | null;
  error?: string | null;
}

const BLOCKED_WHY: Record<string, string> = {
  blocked_source: 'its source is on the block list (forget with block)',
  blocked_identifier: 'a blocked person sent it or takes part in it (forget with block)',
};

export interface ReportOptions {
  /** Where the collector stands in the source (UIDVALIDITY, a ROWID): small, kept with the source. */
  cursor?: Record<string, string | number | boolean | null> | null;
  /** The run stopped early (the source could not be read, the gateway went away): why. */
  error?: string | null;
}

export class RunRecorder {
  readonly runId = newId();
  readonly startedAt = new Date();
  private readonly items = new Map<string, Outcome>();
  private readonly bulk = { new: 0, unchanged: 0, updated: 0, failed: 0, pending: 0, skipped: {} as Partial<Record<SkipReason, number>> };

  readonly source: SourceIdentity;

  constructor(source: SourceIdentity) {
    this.source = sourceIdentity(source);
  }

  /** An item of the source; pending until something else is said about it. */
  seen(ref: string): void {
    if (!this.items.has(ref)) this.items.set(ref, NOT_REACHED);
  }

  /** An item that left the source while the run read it (an expunged IMAP message): not counted at all. */
  gone(ref: string): void {
    this.items.delete(ref);
  }

  stored(ref: string, how: StoredHow): void {
    this.items.set(ref, STORED[how]);
  }

  /** Stored, told by the gateway's answer: a duplicate is unchanged, a version after the first an update. */
  storedAnswer(ref: string, answer: { duplicate?: boolean; version_number?: number | null }): void {
    this.stored(ref, answer.duplicate ? 'unchanged' : (answer.version_number ?? 1) > 1 ? 'updated' : 'new');
  }

  /**
   * The gateway's answer to a submitted item: accepted (stored, or skipped when the block list kept it out),
   * refused for good (failed), or not answered / busy (pending: sent again next run).
   */
  answered(ref: string, a: GatewayVerdict): void {
    if (a.status === 'accepted') {
      if (a.skipped) this.skipped(ref, 'blocked', BLOCKED_WHY[a.skipped] ?? a.skipped);
      else this.storedAnswer(ref, { duplicate: a.duplicate, version_number: a.versionNumber });
    } else if (a.status === 'rejected') this.failed(ref, a.error ?? 'refused by the gateway', 'rejected');
    else this.pending(ref, `not accepted yet (${a.error ?? 'gateway unavailable'}); sent again by the next run`, 'gateway_unavailable');
  }

  skipped(ref: string, reason: SkipReason, detail?: string): void {
    this.items.set(ref, { state: 'skipped', code: reason, reason: detail ?? reason.replace('_', ' ') });
  }

  failed(ref: string, error: string, code = 'error'): void {
    this.items.set(ref, { state: 'failed', code, reason: error });
  }

  /** Seen but not stored yet; the next run tries again. */
  pending(ref: string, why: string, code = 'waiting'): void {
    this.items.set(ref, { state: 'pending', code, reason: why });
  }

  /** What the recorder holds for an item, if anything. */
  stateOf(ref: string): State | undefined {
    return this.items.get(ref)?.state;
  }

  /** Items counted without being named: a range of chat.db rows handled by earlier runs, and the like. */
  addBulk(state: StoredHow | 'failed' | 'pending', n: number): void;
  addBulk(state: 'skipped', n: number, reason: SkipReason): void;
  addBulk(state: StoredHow | MissingState, n: number, reason?: SkipReason): void {
    if (n <= 0) return;
    if (state === 'skipped') this.bulk.skipped[reason!] = (this.bulk.skipped[reason!] ?? 0) + n;
    else this.bulk[state] += n;
  }

  get size(): number {
    return this.items.size;
  }

  counts(): RunCountsT {
    const stored = { new: this.bulk.new, unchanged: this.bulk.unchanged, updated: this.bulk.updated };
    const skipped: Partial<Record<SkipReason, number>> = { ...this.bulk.skipped };
    let failed = this.bulk.failed;
    let pending = this.bulk.pending;
    for (const o of this.items.values()) {
      if (o.state === 'new' || o.state === 'unchanged' || o.state === 'updated') stored[o.state]++;
      else if (o.state === 'skipped') skipped[o.code as SkipReason] = (skipped[o.code as SkipReason] ?? 0) + 1;
      else if (o.state === 'failed') failed++;
      else pending++;
    }
    const inSource =
      stored.new + stored.unchanged + stored.updated + SKIP_REASONS.reduce((n, r) => n + (skipped[r] ?? 0), 0) + failed + pending;
    return { in_source: inSource, stored, skipped, failed, pending };
  }

  /** Items listed in `missing`: failed first, then pending, then skipped as unsupported or too large. */
  private missing(): { listed: MissingItemT[]; unlisted: number } {
    const order: MissingState[] = ['failed', 'pending', 'skipped'];
    const listed: MissingItemT[] = [];
    let unlisted = this.bulk.failed + this.bulk.pending + MISSING_SKIP_REASONS.reduce((n, r) => n + (this.bulk.skipped[r] ?? 0), 0);
    let bytes = 0;
    for (const state of order) {
      for (const [ref, o] of this.items) {
        if (o.state !== state || (state === 'skipped' && !(MISSING_SKIP_REASONS as readonly string[]).includes(o.code))) continue;
        const item: MissingItemT = { ref: fit(ref, MAX_REF_CHARS, true), state, reason_code: o.code, reason: fit(o.reason, MAX_REASON_CHARS) };
        const size = Buffer.byteLength(item.ref) + Buffer.byteLength(item.reason) + 64;
        if (listed.length >= MAX_MISSING_PER_REPORT || bytes + size > MAX_LISTED_BYTES) unlisted++;
        else {
          listed.push(item);
          bytes += size;
        }
      }
    }
    return { listed, unlisted };
  }

  /** The report for POST /v1/coverage/runs. */
  report(opts: ReportOptions = {}): CoverageRunReportT {
    const counts = this.counts();
    const { listed, unlisted } = this.missing();
    const troubled = counts.failed + counts.pending + listed.length + unlisted > 0;
    return {
      run_id: this.runId,
      collector: this.source.collector,
      source_type: this.source.source_type,
      source_account_id: this.source.source_account_id,
      source_ref: this.source.source_ref,
      started_at: this.startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      status: opts.error ? 'failed' : troubled ? 'partial' : 'completed',
      error: opts.error ? fit(opts.error, MAX_REASON_CHARS) : null,
      counts,
      missing: listed,
      missing_unlisted: unlisted,
      cursor: opts.cursor ?? null,
    };
  }
}

/** "11 in the source: 10 stored (2 new), 1 failed" — one line for a terminal. */
export function describeCounts(c: RunCountsT): string {
  const stored = c.stored.new + c.stored.unchanged + c.stored.updated;
  const parts = [`${stored} stored${c.stored.new || c.stored.updated ? ` (${[c.stored.new ? `${c.stored.new} new` : '', c.stored.updated ? `${c.stored.updated} updated` : ''].filter(Boolean).join(', ')})` : ''}`];
  const skipped = SKIP_REASONS.filter((r) => c.skipped[r]).map((r) => `${c.skipped[r]} ${r.replace('_', ' ')}`);
  if (skipped.length) parts.push(`skipped ${skipped.join(', ')}`);
  if (c.failed) parts.push(`${c.failed} failed`);
  if (c.pending) parts.push(`${c.pending} pending`);
  return `${c.in_source} in the source: ${parts.join('; ')}`;
}
