/**
 * Coverage of the Messages collector (docs/coverage.md): every message row of chat.db — tapbacks, edited and
 * unsent messages included — ends a run in one state. Rows at or below the floor were left out by a `tail`
 * start (excluded); tapbacks are folded into their message; a row with nothing to store (a system row) is
 * empty; a message whose version the collector recorded is stored (new or updated this run, else unchanged);
 * one the block list kept out is blocked; one the gateway refused for good is failed; rows above the cursor
 * are pending (the gateway stopped the run, or max_rows). The refusals and block-list answers are kept in a
 * small ledger beside the collector state, so later runs count them the same way.
 */
import fs from 'node:fs';
import { RunRecorder } from '../../../coverage/recorder.ts';
import type { SourceIdentity } from '../../../coverage/identity.ts';
import type { Census, LastRunView } from '../../../coverage/reconcile.ts';
import { ChatDb } from './chatdb.ts';
import { versionsPathFor, type RunOutcome, type RunStats } from './cursor.ts';
import { editInfo, VersionTracker } from './document.ts';
import { writeJsonAtomic } from '../../../util/fs.ts';

const PAGE = 5000;
/** Refused messages remembered; more are counted as failed by the run that met them only. */
const MAX_LEDGER = 20_000;

export function chatCoverageSource(dbPath: string): SourceIdentity {
  return { collector: 'chatapp', source_type: 'chatapp', source_account_id: null, source_ref: dbPath };
}

interface Ledger {
  version: 1;
  rejected: Record<string, { row_id: number | null; error: string }>;
  blocked: string[];
}

export const ledgerPathFor = (statePath: string) => statePath.replace(/\.json$/i, '') + '.coverage.json';

function loadLedger(file: string): Ledger {
  try {
    const raw = JSON.parse(fs.readFileSync(file, 'utf8')) as Ledger;
    if (raw?.version === 1 && raw.rejected && Array.isArray(raw.blocked)) return raw;
  } catch {
    // none yet
  }
  return { version: 1, rejected: {}, blocked: [] };
}

/** Edited and unsent messages among the rows that changed in place. */
function editCounts(db: ChatDb, guids: string[]): { edited: number; unsent: number } {
  let edited = 0;
  let unsent = 0;
  for (let i = 0; i < guids.length; i += 500) {
    for (const m of db.messagesByGuid(guids.slice(i, i + 500))) {
      const e = editInfo(m);
      if (e.retracted) unsent++;
      else if (e.edited) edited++;
    }
  }
  return { edited, unsent };
}

function* allRows(db: ChatDb) {
  let after = 0;
  for (;;) {
    const rows = db.rowSummaries(after, PAGE);
    yield* rows;
    if (rows.length < PAGE) return;
    after = rows[rows.length - 1].rowId;
  }
}

export interface ChatRunCoverage {
  recorder: RunRecorder;
  cursor: Record<string, number>;
}

/** The whole database as the run left it, from the run's outcomes, the version tracker and the ledger. */
export function chatRunCoverage(opts: { dbPath: string; statePath: string; stats: RunStats; outcomes: Map<string, RunOutcome>; recorder?: RunRecorder }): ChatRunCoverage {
  const ledgerPath = ledgerPathFor(opts.statePath);
  const ledger = loadLedger(ledgerPath);
  const blocked = new Set(ledger.blocked);
  for (const [guid, o] of opts.outcomes) {
    if (o.how === 'failed') ledger.rejected[guid] = { row_id: null, error: o.error.slice(0, 500) };
    else {
      delete ledger.rejected[guid];
      if (o.how === 'blocked') blocked.add(guid);
      else blocked.delete(guid);
    }
  }
  const keys = Object.keys(ledger.rejected);
  for (const k of keys.slice(0, Math.max(0, keys.length - MAX_LEDGER))) delete ledger.rejected[k];
  ledger.blocked = [...blocked].slice(-MAX_LEDGER * 5);
  writeJsonAtomic(ledgerPath, ledger);

  const tracker = VersionTracker.load(versionsPathFor(opts.statePath));
  const rec = opts.recorder ?? new RunRecorder(chatCoverageSource(opts.dbPath));
  const { floor_rowid: floor, cursor_rowid: cursor, status } = opts.stats;
  const stopped = status === 'error' ? (opts.stats.errors[opts.stats.errors.length - 1]?.error ?? 'the gateway did not accept') : null;
  const db = ChatDb.open(opts.dbPath);
  let watermark = 0;
  let head = 0;
  const changed: string[] = [];
  try {
    for (const r of allRows(db)) {
      head = r.rowId;
      const ref = `ROWID=${r.rowId}`;
      if (r.changedRaw > 0 && !r.reaction) changed.push(r.guid);
      if (r.rowId <= floor) rec.addBulk('skipped', 1, 'excluded');
      else if (r.rowId > cursor) {
        if (stopped) rec.pending(ref, `not accepted yet (${stopped}); sent again by the next run`, 'gateway_unavailable');
        else rec.pending(ref, 'not reached by this run (max_rows); the next run reads it', 'not_reached');
      } else {
        watermark = Math.max(watermark, r.changedRaw);
        const o = opts.outcomes.get(r.guid);
        if (r.reaction) rec.addBulk('skipped', 1, 'folded');
        else if (o && o.how !== 'failed') {
          if (o.how === 'blocked') rec.addBulk('skipped', 1, 'blocked');
          else rec.addBulk(o.how, 1);
        } else if (ledger.rejected[r.guid]) rec.failed(ref, `refused by the gateway: ${ledger.rejected[r.guid].error}`, 'rejected');
        else if (blocked.has(r.guid)) rec.addBulk('skipped', 1, 'blocked');
        else if (tracker.has(r.guid)) rec.addBulk('unchanged', 1);
        else rec.addBulk('skipped', 1, 'empty');
      }
    }
    const edits = editCounts(db, changed);
    return { recorder: rec, cursor: { cursor_rowid: cursor, floor_rowid: floor, head_rowid: head, edit_watermark: watermark, ...edits } };
  } finally {
    db.close();
  }
}

/**
 * Recount of chat.db (nothing imported): message rows (tapbacks included), how many are edited or unsent, how
 * many arrived after the last run's head and how many changed in place (edited, unsent) since it.
 */
export function chatCensus(dbPath: string, last: LastRunView): Census {
  const db = ChatDb.open(dbPath);
  try {
    const lastHead = typeof last.cursor?.head_rowid === 'number' ? last.cursor.head_rowid : null;
    const lastMark = typeof last.cursor?.edit_watermark === 'number' ? last.cursor.edit_watermark : null;
    let rows = 0;
    let reactions = 0;
    let added = 0;
    let changedSince = 0;
    let head = 0;
    const changed: string[] = [];
    for (const r of allRows(db)) {
      rows++;
      head = r.rowId;
      if (r.reaction) reactions++;
      else if (r.changedRaw > 0) changed.push(r.guid);
      if (lastHead !== null && r.rowId > lastHead) added++;
      else if (lastMark !== null && r.changedRaw > lastMark) changedSince++;
    }
    const edits = editCounts(db, changed);
    return {
      in_source: rows,
      added: lastHead === null ? null : added,
      removed: lastHead === null || last.in_source === null ? null : Math.max(0, last.in_source - (rows - added)),
      changed: lastMark === null ? null : changedSince,
      facts: { messages: rows - reactions, tapbacks: reactions, edited: edits.edited, unsent: edits.unsent, head_rowid: head },
    };
  } finally {
    db.close();
  }
}
