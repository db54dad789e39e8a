/**
 * Read-only access to a Messages `chat.db`.
 *
 * Opening: SQLite compiled to WebAssembly reads the file through a read-only VFS (src/sqlite/engine.ts):
 * files are opened O_RDONLY and every write is refused, so this process can never change the user's
 * database, and nothing is compiled at install. Messages keeps chat.db in WAL mode; we read the live file
 * with its -wal (recent messages included) without taking locks, so the app is never blocked. Each query
 * runs on a snapshot and is repeated when a checkpoint or WAL restart happened under it; a new snapshot is
 * taken when the files changed, so new messages are seen at once. (Haven copied the database with the
 * online-backup API first; that costs a full copy per run.)
 *
 * Schema drift: the columns that matter differ across macOS versions (no attributedBody or tapback
 * columns on old systems, date_edited / message_summary_info only since Ventura), so every optional
 * column is looked up with PRAGMA table_info and selected as NULL when missing.
 */
import os from 'node:os';
import { type SqlParams, SqliteSnapshot } from '../../../sqlite/engine.ts';
import { codedError } from '../../../util/errors.ts';

/** 2001-01-01T00:00:00Z in ms since the Unix epoch. */
export const APPLE_EPOCH_MS = 978_307_200_000;

/**
 * Converts an Apple-epoch time to UTC ISO, guessing the stored unit by magnitude.
 *
 * spec-notes B4.3 gives the thresholds "> 1e18 ns, > 1e12 µs, > 1e9 ms, else seconds", but those are
 * wrong for real data: a nanosecond date in 2026 is about 7.9e17, BELOW 1e18, and would be read as
 * microseconds (25,000 years out). We keep the same idea (largest unit first) with boundaries that
 * split the units correctly for every date from 2004 to well past 2100:
 *   >= 1e17 ns, >= 1e14 µs, >= 1e11 ms, else seconds (old databases; 1e11 s is year ~5170).
 * Only a nanosecond value before March 2004 would be misread, and Messages had no such rows.
 * 0, null, negative and non-finite values give null.
 */
export function appleTimeToIso(value: number | bigint | string | null | undefined): string | null {
  if (value === null || value === undefined) return null;
  let v: number;
  if (typeof value === 'bigint') v = Number(value);
  else if (typeof value === 'string') v = Number(value);
  else v = value;
  if (!Number.isFinite(v) || v <= 0) return null;
  let ms: number;
  if (v >= 1e17) ms = v / 1e6;
  else if (v >= 1e14) ms = v / 1e3;
  else if (v >= 1e11) ms = v;
  else ms = v * 1000;
  const d = new Date(APPLE_EPOCH_MS + Math.floor(ms));
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

export interface RawHandle {
  rowId: number;
  id: string;
  service: string | null;
  country: string | null;
}

export interface RawChat {
  rowId: number;
  guid: string;
  chatIdentifier: string | null;
  serviceName: string | null;
  displayName: string | null;
  /** 43 = group, 45 = one-to-one; null when the column is absent. */
  style: number | null;
  /** Handles joined to the chat, ordered by handle ROWID. Never includes the local account. */
  participants: RawHandle[];
}

export interface RawAttachment {
  rowId: number;
  guid: string;
  filename: string | null;
  mimeType: string | null;
  uti: string | null;
  transferName: string | null;
  totalBytes: number | null;
}

export interface RawMessage {
  rowId: number;
  guid: string;
  text: string | null;
  attributedBody: Uint8Array | null;
  handle: RawHandle | null;
  service: string | null;
  account: string | null;
  isFromMe: boolean;
  isRead: boolean;
  /** Apple times converted to UTC ISO (null when unset). */
  date: string | null;
  dateRead: string | null;
  dateDelivered: string | null;
  dateEdited: string | null;
  dateRetracted: string | null;
  /** Raw date_edited or date_retracted value, the larger (unit as stored), used as the edit watermark. */
  dateEditedRaw: number;
  associatedMessageGuid: string | null;
  associatedMessageType: number;
  replyToGuid: string | null;
  threadOriginatorGuid: string | null;
  expressiveSendStyleId: string | null;
  isAudioMessage: boolean;
  expireState: number | null;
  messageSummaryInfo: Uint8Array | null;
  chatId: number | null;
  attachments: RawAttachment[];
}

/** Optional message columns and the SQL expression used when a column is missing. */
const OPTIONAL_MESSAGE_COLUMNS = [
  'attributedBody',
  'date_read',
  'date_delivered',
  'is_read',
  'service',
  'account',
  'associated_message_guid',
  'associated_message_type',
  'reply_to_guid',
  'thread_originator_guid',
  'expressive_send_style_id',
  'is_audio_message',
  'expire_state',
  'message_summary_info',
  'date_edited',
  'date_retracted',
] as const;

export class ChatDbError extends codedError('AGENT.CHAT_DB') {}

export class ChatDb {
  private readonly db: SqliteSnapshot;
  private readonly columnCache = new Map<string, Set<string>>();
  private readonly messageSelect: string;

  private constructor(readonly path: string) {
    try {
      this.db = SqliteSnapshot.open(path);
    } catch (err) {
      throw new ChatDbError(`cannot open chat database ${path}: ${(err as Error).message}`);
    }
    for (const t of ['message', 'handle', 'chat', 'chat_message_join', 'chat_handle_join']) {
      if (this.columns(t).size === 0) {
        this.db.close();
        throw new ChatDbError(`${path} is not a Messages database (table ${t} missing)`);
      }
    }
    const cols = this.columns('message');
    const opt = OPTIONAL_MESSAGE_COLUMNS.map((c) => (cols.has(c.toLowerCase()) ? `m.${c} AS ${c}` : `NULL AS ${c}`));
    this.messageSelect = `SELECT m.ROWID AS row_id, m.guid AS guid, m.text AS text, m.handle_id AS handle_id,
        m.date AS date, m.is_from_me AS is_from_me, ${opt.join(', ')},
        h.ROWID AS h_rowid, h.id AS h_id, h.service AS h_service, ${this.has('handle', 'country') ? 'h.country' : 'NULL'} AS h_country,
        (SELECT cmj.chat_id FROM chat_message_join cmj WHERE cmj.message_id = m.ROWID ORDER BY cmj.chat_id LIMIT 1) AS chat_id
      FROM message m LEFT JOIN handle h ON h.ROWID = m.handle_id`;
  }

  /** Opens a chat.db read-only. Throws ChatDbError when the file is missing or not a Messages database. */
  static open(path: string): ChatDb {
    return new ChatDb(path);
  }

  /** All rows of one query, read on a consistent snapshot. */
  private all<T>(sql: string, ...params: SqlParams): T[] {
    return this.db.read((c) => c.all<T>(sql, ...params));
  }

  /** Lower-cased column names of a table (empty set when the table does not exist). */
  columns(table: string): Set<string> {
    let set = this.columnCache.get(table);
    if (!set) {
      const rows = this.all<{ name: string }>('SELECT name FROM pragma_table_info(?)', table);
      set = new Set(rows.map((r) => r.name.toLowerCase()));
      this.columnCache.set(table, set);
    }
    return set;
  }

  has(table: string, column: string): boolean {
    return this.columns(table).has(column.toLowerCase());
  }

  /** MAX(ROWID) of message, 0 when empty. */
  headRowId(): number {
    const [r] = this.all<{ v: number | null }>('SELECT MAX(ROWID) AS v FROM message');
    return r.v ?? 0;
  }

  /** MIN(ROWID) of message, 0 when empty. */
  minRowId(): number {
    const [r] = this.all<{ v: number | null }>('SELECT MIN(ROWID) AS v FROM message');
    return r.v ?? 0;
  }

  /** Messages with ROWID > cursor, ascending, at most `limit`, with handle, chat id and attachments. */
  messagesAfter(cursor: number, limit: number): RawMessage[] {
    const rows = this.all<Row>(`${this.messageSelect} WHERE m.ROWID > ? ORDER BY m.ROWID ASC LIMIT ?`, cursor, Math.max(0, Math.floor(limit)));
    return this.finish(rows);
  }

  /** Messages by guid (for reaction targets), ascending ROWID. */
  messagesByGuid(guids: string[]): RawMessage[] {
    if (guids.length === 0) return [];
    const rows = this.all<Row>(`${this.messageSelect} WHERE m.guid IN (SELECT value FROM json_each(?)) ORDER BY m.ROWID ASC`, JSON.stringify(guids));
    return this.finish(rows);
  }

  /**
   * Messages at or below `maxRowId` edited after `watermark` (raw date_edited value), ascending by
   * date_edited. Empty when the database has no date_edited column (pre-Ventura: no edits).
   */
  editedSince(watermark: number, maxRowId: number, limit: number): RawMessage[] {
    if (!this.has('message', 'date_edited')) return [];
    // An unsent part (date_retracted) changes a message in place too; the watermark covers both dates.
    const changedAt = this.editChangeExpr();
    const rows = this.all<Row>(
      `${this.messageSelect} WHERE ${changedAt} > ? AND m.ROWID <= ? ORDER BY ${changedAt} ASC, m.ROWID ASC LIMIT ?`,
      watermark,
      maxRowId,
      limit,
    );
    return this.finish(rows);
  }

  /** SQL for when a message row last changed in place: the larger of date_edited and date_retracted. */
  private editChangeExpr(prefix = 'm.'): string {
    const edited = `CAST(COALESCE(${prefix}date_edited, 0) AS REAL)`;
    if (!this.has('message', 'date_retracted')) return edited;
    return `MAX(${edited}, CAST(COALESCE(${prefix}date_retracted, 0) AS REAL))`;
  }

  /**
   * Tapback rows (associated_message_type 2000-2007 add, 3000-3007 remove) aimed at the given targets,
   * ascending ROWID. A tapback names its target as `bp:<guid>` or `p:<part>/<guid>`; a message has one
   * part for its text plus one per attachment, so the exact forms are enumerated and matched by equality
   * (Messages indexes associated_message_guid). Only rows above `afterRowId` are read: a reaction is always
   * written after its target.
   */
  reactionsFor(targets: { guid: string; parts: number }[], afterRowId: number): RawMessage[] {
    if (targets.length === 0 || !this.has('message', 'associated_message_guid')) return [];
    const forms: string[] = [];
    for (const t of targets) {
      forms.push(`bp:${t.guid}`);
      for (let i = 0; i < Math.max(1, t.parts); i++) forms.push(`p:${i}/${t.guid}`);
    }
    const rows = this.all<Row>(
      `${this.messageSelect}
         WHERE m.associated_message_guid IN (SELECT value FROM json_each(?)) AND m.ROWID > ?
           AND (m.associated_message_type BETWEEN 2000 AND 2007 OR m.associated_message_type BETWEEN 3000 AND 3007)
         ORDER BY m.ROWID ASC`,
      JSON.stringify(forms),
      afterRowId,
    );
    return this.finish(rows, false);
  }

  /**
   * Every message row in ROWID order, light (coverage, docs/coverage.md): ROWID, guid, whether it is a tapback,
   * and the raw time it last changed in place (edit or unsend; 0 when never).
   */
  rowSummaries(afterRowId: number, limit: number): { rowId: number; guid: string; reaction: boolean; changedRaw: number }[] {
    const type = this.has('message', 'associated_message_type') ? 'associated_message_type' : '0';
    const changed = this.has('message', 'date_edited') ? this.editChangeExpr('') : '0';
    const rows = this.all<{ row_id: number; guid: string; t: number | null; c: number | null }>(
      `SELECT ROWID AS row_id, guid, ${type} AS t, ${changed} AS c FROM message WHERE ROWID > ? ORDER BY ROWID ASC LIMIT ?`,
      afterRowId,
      Math.max(0, Math.floor(limit)),
    );
    return rows.map((r) => {
      const t = r.t ?? 0;
      return { rowId: r.row_id, guid: r.guid, reaction: (t >= 2000 && t <= 2007) || (t >= 3000 && t <= 3007), changedRaw: r.c ?? 0 };
    });
  }

  /** Largest raw date_edited / date_retracted value (0 when none or the columns are absent). */
  maxDateEdited(): number {
    if (!this.has('message', 'date_edited')) return 0;
    const [r] = this.all<{ v: number | null }>(`SELECT MAX(${this.editChangeExpr('')}) AS v FROM message`);
    return r.v ?? 0;
  }

  /** Chats by ROWID with their participants (ordered by handle ROWID). */
  chats(ids: Iterable<number>): Map<number, RawChat> {
    const list = [...new Set(ids)];
    const out = new Map<number, RawChat>();
    if (list.length === 0) return out;
    const style = this.has('chat', 'style') ? 'style' : 'NULL';
    const display = this.has('chat', 'display_name') ? 'display_name' : 'NULL';
    const chats = this.all<{
      row_id: number;
      guid: string;
      chat_identifier: string | null;
      service_name: string | null;
      display_name: string | null;
      style: number | null;
    }>(
      `SELECT ROWID AS row_id, guid, chat_identifier, service_name, ${display} AS display_name, ${style} AS style
         FROM chat WHERE ROWID IN (SELECT value FROM json_each(?))`,
      JSON.stringify(list),
    );
    for (const c of chats) {
      out.set(c.row_id, {
        rowId: c.row_id,
        guid: c.guid,
        chatIdentifier: c.chat_identifier,
        serviceName: c.service_name,
        displayName: c.display_name,
        style: c.style,
        participants: [],
      });
    }
    const country = this.has('handle', 'country') ? 'h.country' : 'NULL';
    const parts = this.all<{ chat_id: number; row_id: number; id: string; service: string | null; country: string | null }>(
      `SELECT chj.chat_id AS chat_id, h.ROWID AS row_id, h.id AS id, h.service AS service, ${country} AS country
         FROM chat_handle_join chj JOIN handle h ON h.ROWID = chj.handle_id
         WHERE chj.chat_id IN (SELECT value FROM json_each(?)) ORDER BY chj.chat_id, h.ROWID`,
      JSON.stringify(list),
    );
    for (const p of parts) {
      out.get(p.chat_id)?.participants.push({ rowId: p.row_id, id: p.id, service: p.service, country: p.country });
    }
    return out;
  }

  close(): void {
    this.db.close();
  }

  private finish(rows: Row[], withAttachments = true): RawMessage[] {
    const msgs = rows.map(toRawMessage);
    if (withAttachments && msgs.length > 0 && this.columns('message_attachment_join').size > 0 && this.columns('attachment').size > 0) {
      const byId = new Map(msgs.map((m) => [m.rowId, m]));
      const mime = this.has('attachment', 'mime_type') ? 'a.mime_type' : 'NULL';
      const uti = this.has('attachment', 'uti') ? 'a.uti' : 'NULL';
      const tname = this.has('attachment', 'transfer_name') ? 'a.transfer_name' : 'NULL';
      const total = this.has('attachment', 'total_bytes') ? 'a.total_bytes' : 'NULL';
      const atts = this.all<{
        message_id: number;
        row_id: number;
        guid: string;
        filename: string | null;
        mime_type: string | null;
        uti: string | null;
        transfer_name: string | null;
        total_bytes: number | null;
      }>(
        `SELECT maj.message_id AS message_id, a.ROWID AS row_id, a.guid AS guid, a.filename AS filename,
                ${mime} AS mime_type, ${uti} AS uti, ${tname} AS transfer_name, ${total} AS total_bytes
         FROM message_attachment_join maj JOIN attachment a ON a.ROWID = maj.attachment_id
         WHERE maj.message_id IN (SELECT value FROM json_each(?)) ORDER BY maj.message_id, a.ROWID`,
        JSON.stringify([...byId.keys()]),
      );
      for (const a of atts) {
        byId.get(a.message_id)?.attachments.push({
          rowId: a.row_id,
          guid: a.guid,
          filename: a.filename,
          mimeType: a.mime_type,
          uti: a.uti,
          transferName: a.transfer_name,
          totalBytes: a.total_bytes,
        });
      }
    }
    return msgs;
  }
}

interface Row {
  row_id: number;
  guid: string;
  text: string | null;
  handle_id: number | null;
  date: number | null;
  is_from_me: number | null;
  attributedBody: Uint8Array | null;
  date_read: number | null;
  date_delivered: number | null;
  is_read: number | null;
  service: string | null;
  account: string | null;
  associated_message_guid: string | null;
  associated_message_type: number | null;
  reply_to_guid: string | null;
  thread_originator_guid: string | null;
  expressive_send_style_id: string | null;
  is_audio_message: number | null;
  expire_state: number | null;
  message_summary_info: Uint8Array | null;
  date_edited: number | null;
  date_retracted: number | null;
  h_rowid: number | null;
  h_id: string | null;
  h_service: string | null;
  h_country: string | null;
  chat_id: number | null;
}

function blob(v: unknown): Uint8Array | null {
  return v instanceof Uint8Array && v.length > 0 ? v : null;
}

function toRawMessage(r: Row): RawMessage {
  return {
    rowId: r.row_id,
    guid: r.guid,
    text: typeof r.text === 'string' ? r.text : null,
    attributedBody: blob(r.attributedBody),
    handle: r.h_rowid != null && r.h_id ? { rowId: r.h_rowid, id: r.h_id, service: r.h_service, country: r.h_country } : null,
    service: r.service,
    account: r.account,
    isFromMe: r.is_from_me === 1,
    isRead: r.is_read === 1,
    date: appleTimeToIso(r.date),
    dateRead: appleTimeToIso(r.date_read),
    dateDelivered: appleTimeToIso(r.date_delivered),
    dateEdited: appleTimeToIso(r.date_edited),
    dateRetracted: appleTimeToIso(r.date_retracted),
    dateEditedRaw: Math.max(
      typeof r.date_edited === 'number' && r.date_edited > 0 ? r.date_edited : 0,
      typeof r.date_retracted === 'number' && r.date_retracted > 0 ? r.date_retracted : 0,
    ),
    associatedMessageGuid: r.associated_message_guid,
    associatedMessageType: r.associated_message_type ?? 0,
    replyToGuid: r.reply_to_guid,
    threadOriginatorGuid: r.thread_originator_guid,
    expressiveSendStyleId: r.expressive_send_style_id,
    isAudioMessage: r.is_audio_message === 1,
    expireState: r.expire_state,
    messageSummaryInfo: blob(r.message_summary_info),
    chatId: r.chat_id,
    attachments: [],
  };
}

/** Expands a leading `~/` (Messages stores attachment paths that way) against `home`. */
export function expandHome(p: string, home = os.homedir()): string {
  return p === '~' ? home : p.startsWith('~/') ? `${home}${p.slice(1)}` : p;
}
