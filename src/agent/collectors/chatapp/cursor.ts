/**
 * Cursor state and the run loop of the chat collector (host-agent spec §4.3, spec-notes B4.3).
 *
 * State (JSON, atomic writes): cursor_rowid (last ROWID whose batch the gateway accepted), head_rowid
 * (MAX(ROWID) seen at the last run), floor_rowid (where history coverage starts), last_run, last_error,
 * plus edit_watermark (largest date_edited already handled).
 *
 * Modes on a fresh state: `backfill` starts at floor = MIN(ROWID) - 1 and walks up to head; `tail` starts
 * at head (history skipped). Later runs continue from the persisted cursor in either mode; a backfill on a
 * state that began as tail (floor above the oldest row) walks again from MIN(ROWID) - 1, and the version
 * tracker keeps already-sent messages from being resent.
 *
 * Each run reads ROWID > cursor ascending, batch_size rows per batch and at most max_rows rows, builds the
 * documents, submits them through the injected `submit` (the daemon passes its gateway client), and moves
 * the cursor only after the batch was accepted. A thrown submit or a retryable rejection stops the run
 * with last_error set and the cursor where it was, so the next run (or a restart) retries the same rows.
 * A non-retryable rejection of one document is recorded in errors[] and does not block the cursor (that
 * document would never be accepted).
 */
import fs from 'node:fs';
import { ChatDb, type RawChat, type RawMessage } from './chatdb.ts';
import {
  buildMessageDocument,
  foldReactions,
  isReactionRow,
  reactionTargetGuid,
  VersionTracker,
  writeJsonAtomic,
  type ChatDocument,
} from './document.ts';
import { codedError } from '../../../util/errors.ts';

export interface CursorState {
  cursor_rowid: number | null;
  head_rowid: number | null;
  floor_rowid: number | null;
  last_run: string | null;
  last_error: string | null;
  /** Raw date_edited value up to which edits have been handled. */
  edit_watermark: number;
}

export function emptyState(): CursorState {
  return { cursor_rowid: null, head_rowid: null, floor_rowid: null, last_run: null, last_error: null, edit_watermark: 0 };
}

const intOrNull = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? Math.floor(v) : null);

/** Reads the state file; a missing or corrupt file gives a fresh state (the run then re-initialises). */
export function loadState(file: string): CursorState {
  try {
    const raw = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    return {
      cursor_rowid: intOrNull(raw.cursor_rowid),
      head_rowid: intOrNull(raw.head_rowid),
      floor_rowid: intOrNull(raw.floor_rowid),
      last_run: typeof raw.last_run === 'string' ? raw.last_run : null,
      last_error: typeof raw.last_error === 'string' ? raw.last_error : null,
      edit_watermark: intOrNull(raw.edit_watermark) ?? 0,
    };
  } catch {
    return emptyState();
  }
}

export function saveState(file: string, state: CursorState): void {
  writeJsonAtomic(file, state);
}

/** Where the version hashes live for a given state file. */
export function versionsPathFor(statePath: string): string {
  return statePath.replace(/\.json$/i, '') + '.versions.json';
}

/** Per-document outcome reported by `submit`. */
export interface SubmitResult {
  ok: boolean;
  /** For a rejection: true when trying again later may succeed (429/503, transport). */
  retryable?: boolean;
  duplicate?: boolean;
  /** Accepted but nothing stored: the block list (blocked_source, blocked_identifier). */
  skipped?: string | null;
  error?: string;
}

/** What became of a message this run (coverage, docs/coverage.md), by guid. */
export type RunOutcome = { how: 'new' | 'updated' | 'blocked' } | { how: 'failed'; error: string };

/**
 * Sends documents to the gateway. Called with one document (batch=false) or an array (batch=true) and
 * returns one result or an array of results in the same order. Throwing means the whole call failed.
 */
export type SubmitFn = (docs: ChatDocument | ChatDocument[]) => Promise<SubmitResult | SubmitResult[]>;

export type MessageStatus = 'submitted' | 'skipped' | 'unchanged' | 'rejected' | 'failed';

/** Optional metric hooks: imsg_messages_total{status} and imsg_attachments_total. */
export interface ChatMetrics {
  messages?(status: MessageStatus, count: number): void;
  attachments?(count: number): void;
}

export interface RunOptions {
  dbPath: string;
  statePath: string;
  /** Defaults to versionsPathFor(statePath). */
  versionsPath?: string;
  mode: 'backfill' | 'tail';
  batch?: boolean;
  /** Rows per batch (and documents per gateway call when batch=true). Default 100. */
  batchSize?: number;
  /** Upper bound of rows read in this run. Default: no bound. */
  maxRows?: number;
  submit: SubmitFn;
  /** Home directory for `~/` attachment paths (default os.homedir()). */
  homeDir?: string;
  metrics?: ChatMetrics;
  now?: () => Date;
  /** Filled with what became of each message sent this run (coverage). */
  outcomes?: Map<string, RunOutcome>;
}

export interface RunError {
  row_id?: number;
  guid?: string;
  error: string;
}

export interface RunStats {
  status: 'ok' | 'partial' | 'error';
  mode: 'backfill' | 'tail';
  /** Message rows read (reactions included). */
  processed: number;
  /** Documents accepted by the gateway. */
  submitted: number;
  /** Rows with nothing to ingest plus documents unchanged since their last accepted version. */
  skipped: number;
  /** Tapback rows folded into their targets. */
  reactions: number;
  /** Edited messages resubmitted. */
  edits: number;
  /** Attachment entries in accepted documents. */
  attachments: number;
  rejected: number;
  batches: number;
  cursor_rowid: number;
  head_rowid: number;
  floor_rowid: number;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  errors: RunError[];
}

export class CollectorBusyError extends codedError('AGENT.COLLECTOR_BUSY') {
  constructor() {
    super('Collector is already running');
  }
}

const running = new Set<string>();

class BatchFailed extends codedError('AGENT.BATCH_FAILED') {}

export const DEFAULT_BATCH_SIZE = 100;
const TRACKER_SAVE_INTERVAL_MS = 30_000;

/** One collector run. Throws CollectorBusyError when a run on the same state is in progress, and
 * ChatDbError when the database cannot be opened (last_error is recorded first). */
export async function runChatCollector(opts: RunOptions): Promise<RunStats> {
  if (running.has(opts.statePath)) throw new CollectorBusyError();
  running.add(opts.statePath);
  try {
    return await run(opts);
  } finally {
    running.delete(opts.statePath);
  }
}

async function run(opts: RunOptions): Promise<RunStats> {
  const now = opts.now ?? (() => new Date());
  const started = now();
  const t0 = performance.now();
  const batchSize = Math.max(1, Math.floor(opts.batchSize ?? DEFAULT_BATCH_SIZE));
  const maxRows = opts.maxRows !== undefined && opts.maxRows >= 0 ? Math.floor(opts.maxRows) : Number.MAX_SAFE_INTEGER;
  const versionsPath = opts.versionsPath ?? versionsPathFor(opts.statePath);
  const state = loadState(opts.statePath);

  let db: ChatDb;
  try {
    db = ChatDb.open(opts.dbPath);
  } catch (err) {
    state.last_run = started.toISOString();
    state.last_error = (err as Error).message;
    saveState(opts.statePath, state);
    throw err;
  }
  const tracker = VersionTracker.load(versionsPath);
  const stats: RunStats = {
    status: 'ok',
    mode: opts.mode,
    processed: 0,
    submitted: 0,
    skipped: 0,
    reactions: 0,
    edits: 0,
    attachments: 0,
    rejected: 0,
    batches: 0,
    cursor_rowid: 0,
    head_rowid: 0,
    floor_rowid: 0,
    started_at: started.toISOString(),
    finished_at: started.toISOString(),
    duration_ms: 0,
    errors: [],
  };
  let lastTrackerSave = performance.now();
  const count = (status: MessageStatus, n = 1) => {
    if (n > 0) opts.metrics?.messages?.(status, n);
  };

  try {
    const head = db.headRowId();
    const floor0 = Math.max(0, db.minRowId() - 1);
    state.head_rowid = head;
    if (state.cursor_rowid === null) {
      // Fresh state: backfill walks history from the oldest row, tail skips it.
      const start = opts.mode === 'backfill' ? floor0 : head;
      state.cursor_rowid = start;
      state.floor_rowid = start;
      if (opts.mode === 'tail') state.edit_watermark = db.maxDateEdited();
    } else if (opts.mode === 'backfill' && (state.floor_rowid ?? 0) > floor0) {
      state.cursor_rowid = floor0;
      state.floor_rowid = floor0;
    }
    if (state.cursor_rowid > head && head > 0) {
      // The database was replaced by a smaller one (restore, new Mac): follow it instead of stalling.
      state.cursor_rowid = head;
    }

    const chatCache = new Map<number, RawChat>();
    const chatsFor = (msgs: RawMessage[]) => {
      const missing = msgs.map((m) => m.chatId).filter((id): id is number => id !== null && !chatCache.has(id));
      for (const [id, c] of db.chats(missing)) chatCache.set(id, c);
    };

    /** Builds documents for `targets` with their standing reactions; returns those that changed. */
    const buildChanged = (targets: RawMessage[]): { docs: ChatDocument[]; guids: string[]; empty: number; unchanged: number } => {
      chatsFor(targets);
      const minRow = Math.min(...targets.map((t) => t.rowId));
      // Parts: the text plus one per attachment (one spare for a text+attachments layout we did not foresee).
      const reactionRows = db.reactionsFor(targets.map((t) => ({ guid: t.guid, parts: t.attachments.length + 2 })), minRow);
      const reactions = foldReactions(reactionRows);
      const docs: ChatDocument[] = [];
      const guids: string[] = [];
      let empty = 0;
      let unchanged = 0;
      for (const t of targets) {
        const chat = t.chatId !== null ? (chatCache.get(t.chatId) ?? null) : null;
        const doc = buildMessageDocument(t, chat, { reactions: reactions.get(t.guid) ?? [], homeDir: opts.homeDir });
        if (!doc) empty++;
        else if (!tracker.changed(t.guid, doc)) unchanged++;
        else {
          docs.push(doc);
          guids.push(t.guid);
        }
      }
      return { docs, guids, empty, unchanged };
    };

    /** Submits documents; throws BatchFailed when the batch must be retried later. */
    const submitAll = async (docs: ChatDocument[], guids: string[], rows: Map<string, number>) => {
      const results: SubmitResult[] = [];
      if (docs.length === 0) return;
      if (opts.batch) {
        const r = await opts.submit(docs);
        const arr = Array.isArray(r) ? r : [r];
        for (let i = 0; i < docs.length; i++) results.push(arr[i] ?? { ok: false, retryable: true, error: 'missing result' });
      } else {
        for (const d of docs) {
          const r = await opts.submit(d);
          const one = Array.isArray(r) ? r[0] : r;
          results.push(one ?? { ok: false, retryable: true, error: 'missing result' });
          if (!one?.ok && one?.retryable !== false) break;
        }
      }
      let retry: string | null = null;
      docs.forEach((doc, i) => {
        const res = results[i];
        if (res?.ok) {
          opts.outcomes?.set(guids[i], res.skipped ? { how: 'blocked' } : { how: tracker.has(guids[i]) ? 'updated' : 'new' });
          tracker.record(guids[i], doc);
          stats.submitted++;
          stats.attachments += doc.metadata.attachment_count;
          count('submitted');
          opts.metrics?.attachments?.(doc.metadata.attachment_count);
        } else if (res && res.retryable === false) {
          stats.rejected++;
          count('rejected');
          opts.outcomes?.set(guids[i], { how: 'failed', error: res.error ?? 'rejected' });
          stats.errors.push({ row_id: rows.get(guids[i]), guid: guids[i], error: res.error ?? 'rejected' });
        } else {
          retry ??= res?.error ?? 'not submitted';
        }
      });
      if (retry !== null) {
        count('failed', docs.length - results.filter((r) => r.ok || r.retryable === false).length);
        throw new BatchFailed(`gateway did not accept the batch: ${retry}`);
      }
    };

    // 1. Edited messages at or below the cursor (edits rewrite rows in place, the cursor never sees them).
    for (;;) {
      const edited = db.editedSince(state.edit_watermark, state.cursor_rowid, batchSize);
      if (edited.length === 0) break;
      const candidates = edited.filter((m) => !isReactionRow(m));
      const { docs, guids, empty, unchanged } = candidates.length ? buildChanged(candidates) : { docs: [], guids: [], empty: 0, unchanged: 0 };
      stats.skipped += empty + unchanged;
      count('unchanged', unchanged);
      await submitAll(docs, guids, new Map(candidates.map((m) => [m.guid, m.rowId])));
      stats.edits += docs.length;
      state.edit_watermark = Math.max(state.edit_watermark, ...edited.map((m) => m.dateEditedRaw));
      saveState(opts.statePath, state);
      if (edited.length < batchSize) break;
    }

    // 2. New rows above the cursor.
    while (stats.processed < maxRows) {
      const rows = db.messagesAfter(state.cursor_rowid, Math.min(batchSize, maxRows - stats.processed));
      if (rows.length === 0) break;
      stats.batches++;
      const regular = rows.filter((m) => !isReactionRow(m));
      const reactionRows = rows.filter(isReactionRow);
      stats.reactions += reactionRows.length;
      // Targets of tapbacks that are not in this batch are rebuilt and resent with the new reactions.
      const inBatch = new Set(regular.map((m) => m.guid));
      const outside = [...new Set(reactionRows.map((r) => reactionTargetGuid(r.associatedMessageGuid)).filter(
        (g): g is string => g !== null && !inBatch.has(g),
      ))];
      const targets = [...regular, ...db.messagesByGuid(outside).filter((m) => !isReactionRow(m))];
      const { docs, guids, empty, unchanged } = targets.length ? buildChanged(targets) : { docs: [], guids: [], empty: 0, unchanged: 0 };
      stats.skipped += empty + unchanged;
      count('skipped', empty);
      count('unchanged', unchanged);
      await submitAll(docs, guids, new Map(targets.map((m) => [m.guid, m.rowId])));
      stats.processed += rows.length;
      state.cursor_rowid = rows[rows.length - 1].rowId;
      state.head_rowid = Math.max(head, state.cursor_rowid);
      state.last_error = null;
      saveState(opts.statePath, state);
      // The tracker file grows with every message; rewriting it per batch would be quadratic. Losing its
      // tail in a crash only means a later unchanged rebuild is sent again (and deduplicated).
      if (performance.now() - lastTrackerSave > TRACKER_SAVE_INTERVAL_MS) {
        tracker.save(versionsPath);
        lastTrackerSave = performance.now();
      }
    }
    state.last_error = null;
    if (stats.rejected > 0) stats.status = 'partial';
  } catch (err) {
    stats.status = 'error';
    const message = err instanceof Error ? err.message : String(err);
    state.last_error = message;
    stats.errors.push({ error: message });
  } finally {
    try {
      state.head_rowid = Math.max(db.headRowId(), state.cursor_rowid ?? 0);
    } catch {
      // keep the head read at the start
    }
    db.close();
    const finished = now();
    state.last_run = finished.toISOString();
    saveState(opts.statePath, state);
    tracker.save(versionsPath);
    stats.cursor_rowid = state.cursor_rowid ?? 0;
    stats.head_rowid = state.head_rowid ?? 0;
    stats.floor_rowid = state.floor_rowid ?? 0;
    stats.finished_at = finished.toISOString();
    stats.duration_ms = Math.round(performance.now() - t0);
  }
  return stats;
}


/** The state the daemon's GET /v1/collectors/chatapp/state returns. */
export function readCollectorState(statePath: string): Omit<CursorState, 'edit_watermark'> {
  const { edit_watermark: _ignored, ...rest } = loadState(statePath);
  return rest;
}
