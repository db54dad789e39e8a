/**
 * Builds Messages `chat.db` files with Apple's schema for tests and benchmarks, and writes
 * `attributedBody` blobs the way macOS does (typedstream NSAttributedString, or an NSKeyedArchiver
 * binary plist), so the collector's reader is exercised on the same bytes it meets on a Mac.
 *
 * Schema profiles follow the column sets that matter across macOS versions:
 * - `legacy`  (about OS X 10.10/10.11): dates in SECONDS since 2001, no attributedBody, no tapback
 *   columns (associated_message_*), no reply/thread columns, no edit columns.
 * - `high_sierra` (10.13-12): dates in NANOSECONDS, attributedBody, associated_message_*,
 *   expressive_send_style_id, reply_to_guid / thread_originator_guid (added in 11), no edit columns.
 * - `ventura` (13+): everything above plus date_edited, date_retracted, message_summary_info.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { ReadOnlyFileVfs, registerVfs, SqliteConnection, type SqliteStatement, type SqlParam } from '../../src/sqlite/engine.ts';

export type ChatSchemaProfile = 'legacy' | 'high_sierra' | 'ventura';

const APPLE_EPOCH_MS = 978_307_200_000;

// ---------------------------------------------------------------------------------------------
// typedstream writer
// ---------------------------------------------------------------------------------------------

/** Typedstream integer: one byte for -110..127, else 0x81 + int16 LE, else 0x82 + int32 LE. */
export function tsInt(v: number): number[] {
  if (v >= -110 && v <= 127) return [v & 0xff];
  if (v >= -32768 && v <= 32767) return [0x81, v & 0xff, (v >> 8) & 0xff];
  return [0x82, v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff];
}

function sharedString(s: string): number[] {
  const b = Buffer.from(s, 'utf8');
  return [0x84, ...tsInt(b.length), ...b];
}

export interface TypedstreamOptions {
  /** Outer class: macOS writes NSAttributedString for most messages, NSMutableAttributedString for some. */
  attributedClass?: 'NSAttributedString' | 'NSMutableAttributedString';
  /** Class of the inner string object. */
  stringClass?: 'NSString' | 'NSMutableString';
  /**
   * Force the 0x81 (uint16) length form even for lengths above 32767, as some archives in the wild
   * (and Haven's decoder) treat it as unsigned.
   */
  unsignedInt16Lengths?: boolean;
}

/**
 * Encodes `text` as an attributedBody typedstream blob like Messages writes it: header, class chain,
 * the NSString payload (`84 01 2B` + byte length + UTF-8), then one attribute run with
 * `__kIMMessagePartAttributeName` = 0 covering the whole string (run length in UTF-16 units).
 */
export function encodeTypedstream(text: string, opts: TypedstreamOptions = {}): Buffer {
  const attributedClass = opts.attributedClass ?? 'NSAttributedString';
  const stringClass = opts.stringClass ?? 'NSString';
  const utf8 = Buffer.from(text, 'utf8');
  const out: number[] = [0x04, ...sharedString('streamtyped').slice(1), ...tsInt(1000)];
  // Object table indices (0x92 + i): 0 = outer object, then classes in declaration order.
  const objTable: string[] = ['<root>'];
  const classRef = (name: string) => 0x92 + objTable.indexOf(name);
  out.push(...sharedString('@')); // type string table index 0 -> ref 0x92
  out.push(0x84); // new object
  const declareChain = (chain: string[]) => {
    for (const name of chain) {
      if (objTable.includes(name)) {
        out.push(classRef(name));
        return;
      }
      objTable.push(name);
      out.push(0x84, ...sharedString(name), ...tsInt(name === 'NSString' ? 1 : 0));
    }
    out.push(0x85); // end of class chain (nil superclass)
  };
  declareChain(
    attributedClass === 'NSMutableAttributedString'
      ? ['NSMutableAttributedString', 'NSAttributedString', 'NSObject']
      : ['NSAttributedString', 'NSObject'],
  );
  out.push(0x92); // type "@"
  out.push(0x84); // new string object
  objTable.push('<string>');
  declareChain(stringClass === 'NSMutableString' ? ['NSMutableString', 'NSString', 'NSObject'] : ['NSString', 'NSObject']);
  // The C-string payload: type "+", then the byte length, then UTF-8 bytes.
  out.push(0x84, 0x01, 0x2b);
  if (opts.unsignedInt16Lengths && utf8.length <= 0xffff && utf8.length >= 0x80) {
    out.push(0x81, utf8.length & 0xff, (utf8.length >> 8) & 0xff);
  } else {
    out.push(...tsInt(utf8.length));
  }
  for (const b of utf8) out.push(b);
  out.push(0x86); // end of string object
  // Attribute run: type "iI", location 1, length in UTF-16 code units.
  out.push(...sharedString('iI'), ...tsInt(1), ...tsInt(text.length));
  out.push(0x92, 0x84);
  objTable.push('<dict>');
  declareChain(['NSDictionary', 'NSObject']);
  out.push(...sharedString('i'), ...tsInt(1));
  out.push(0x92, 0x84, 0x96, 0x96, ...tsInt('__kIMMessagePartAttributeName'.length),
    ...Buffer.from('__kIMMessagePartAttributeName'), 0x86);
  out.push(0x92, 0x84);
  objTable.push('<number>');
  declareChain(['NSNumber', 'NSValue', 'NSObject']);
  out.push(...sharedString('*'), 0x84, 0x99, 0x99, 0x00, 0x86, 0x86, 0x86);
  return Buffer.from(out);
}

// ---------------------------------------------------------------------------------------------
// binary plist writer (bplist00) and NSKeyedArchiver archives
// ---------------------------------------------------------------------------------------------

export class Uid {
  constructor(readonly uid: number) {}
}
export type WPlist = null | boolean | number | string | Buffer | Uid | WPlist[] | { [k: string]: WPlist };

function intBytes(v: number): number[] {
  if (v >= 0 && v < 0x100) return [0x10, v];
  if (v >= 0 && v < 0x10000) return [0x11, v >> 8, v & 0xff];
  if (v >= 0 && v < 0x100000000) return [0x12, (v >>> 24) & 0xff, (v >>> 16) & 0xff, (v >>> 8) & 0xff, v & 0xff];
  const b = Buffer.alloc(9);
  b[0] = 0x13;
  b.writeBigInt64BE(BigInt(v), 1);
  return [...b];
}

function lenMarker(type: number, len: number): number[] {
  return len < 15 ? [(type << 4) | len] : [(type << 4) | 0x0f, ...intBytes(len)];
}

/** Serialises a value tree to bplist00 (every node becomes its own object; no sharing). */
export function encodeBplist(root: WPlist): Buffer {
  const objects: number[][] = [];
  // First flatten to assign indices (pre-order), then encode with refs.
  const nodes: WPlist[] = [];
  const children = new Map<number, number[]>();
  const visit = (v: WPlist): number => {
    const idx = nodes.length;
    nodes.push(v);
    if (Array.isArray(v)) children.set(idx, v.map(visit));
    else if (v && typeof v === 'object' && !(v instanceof Uid) && !Buffer.isBuffer(v)) {
      const keys = Object.keys(v);
      const k = keys.map((key) => visit(key));
      const vals = keys.map((key) => visit((v as { [k: string]: WPlist })[key]));
      children.set(idx, [...k, ...vals]);
    }
    return idx;
  };
  visit(root);
  const refSize = nodes.length < 256 ? 1 : nodes.length < 65536 ? 2 : 4;
  const ref = (i: number) => (refSize === 1 ? [i] : refSize === 2 ? [i >> 8, i & 0xff] : [(i >>> 24) & 0xff, (i >>> 16) & 0xff, (i >>> 8) & 0xff, i & 0xff]);
  nodes.forEach((v, i) => {
    if (v === null) objects.push([0x00]);
    else if (v === false) objects.push([0x08]);
    else if (v === true) objects.push([0x09]);
    else if (typeof v === 'number') {
      if (Number.isInteger(v)) objects.push(intBytes(v));
      else {
        const b = Buffer.alloc(9);
        b[0] = 0x23;
        b.writeDoubleBE(v, 1);
        objects.push([...b]);
      }
    } else if (typeof v === 'string') {
      if (/^[\x00-\x7f]*$/.test(v)) objects.push([...lenMarker(0x5, v.length), ...Buffer.from(v, 'latin1')]);
      else {
        const b = Buffer.alloc(v.length * 2);
        for (let j = 0; j < v.length; j++) b.writeUInt16BE(v.charCodeAt(j), j * 2);
        objects.push([...lenMarker(0x6, v.length), ...b]);
      }
    } else if (Buffer.isBuffer(v)) objects.push([...lenMarker(0x4, v.length), ...v]);
    else if (v instanceof Uid) {
      objects.push(v.uid < 256 ? [0x80, v.uid] : v.uid < 65536 ? [0x81, v.uid >> 8, v.uid & 0xff] : [0x83, ...intBytes(v.uid).slice(1)]);
    } else if (Array.isArray(v)) objects.push([...lenMarker(0xa, v.length), ...children.get(i)!.flatMap(ref)]);
    else objects.push([...lenMarker(0xd, Object.keys(v).length), ...children.get(i)!.flatMap(ref)]);
  });
  const header = Buffer.from('bplist00', 'latin1');
  const offsets: number[] = [];
  let pos = header.length;
  for (const o of objects) {
    offsets.push(pos);
    pos += o.length;
  }
  const offsetTableStart = pos;
  const offsetSize = pos < 256 ? 1 : pos < 65536 ? 2 : 4;
  const offBytes = offsets.flatMap((o) =>
    offsetSize === 1 ? [o] : offsetSize === 2 ? [o >> 8, o & 0xff] : [(o >>> 24) & 0xff, (o >>> 16) & 0xff, (o >>> 8) & 0xff, o & 0xff],
  );
  const trailer = Buffer.alloc(32);
  trailer[6] = offsetSize;
  trailer[7] = refSize;
  trailer.writeBigUInt64BE(BigInt(objects.length), 8);
  trailer.writeBigUInt64BE(0n, 16);
  trailer.writeBigUInt64BE(BigInt(offsetTableStart), 24);
  return Buffer.concat([header, Buffer.from(objects.flat()), Buffer.from(offBytes), trailer]);
}

/** An NSKeyedArchiver archive of an NSAttributedString (optionally with an NSMutableString inside). */
export function encodeKeyedArchiverAttributedString(text: string, opts: { mutableString?: boolean } = {}): Buffer {
  const objects: WPlist[] = ['$null'];
  if (opts.mutableString) {
    objects.push(
      { NSString: new Uid(2), NSAttributes: new Uid(0), $class: new Uid(5) },
      { 'NS.string': new Uid(3), $class: new Uid(4) },
      text,
      { $classname: 'NSMutableString', $classes: ['NSMutableString', 'NSString', 'NSObject'] },
      { $classname: 'NSAttributedString', $classes: ['NSAttributedString', 'NSObject'] },
    );
  } else {
    objects.push(
      { NSString: new Uid(2), NSAttributes: new Uid(0), $class: new Uid(3) },
      text,
      { $classname: 'NSAttributedString', $classes: ['NSAttributedString', 'NSObject'] },
    );
  }
  return encodeBplist({ $version: 100000, $archiver: 'NSKeyedArchiver', $top: { root: new Uid(1) }, $objects: objects });
}

/** A message_summary_info plist like Ventura writes for an edited message ('ec' = edit history). */
export function encodeEditSummary(previousTexts: string[], editedAtNs: number[]): Buffer {
  return encodeBplist({
    ec: { '0': previousTexts.map((t, i) => ({ d: editedAtNs[i] ?? 0, t: encodeTypedstream(t) })) },
    ep: [0],
    otr: { '0': { le: previousTexts[0]?.length ?? 0, lo: 0 } },
  });
}

// ---------------------------------------------------------------------------------------------
// chat.db builder
// ---------------------------------------------------------------------------------------------

function messageColumns(profile: ChatSchemaProfile): string[] {
  const cols = [
    'ROWID INTEGER PRIMARY KEY AUTOINCREMENT',
    'guid TEXT UNIQUE NOT NULL',
    'text TEXT',
    'replace INTEGER DEFAULT 0',
    'service_center TEXT',
    'handle_id INTEGER DEFAULT 0',
    'subject TEXT',
    'country TEXT',
  ];
  if (profile !== 'legacy') cols.push('attributedBody BLOB');
  cols.push(
    'version INTEGER DEFAULT 0',
    'type INTEGER DEFAULT 0',
    'service TEXT',
    'account TEXT',
    'account_guid TEXT',
    'error INTEGER DEFAULT 0',
    'date INTEGER',
    'date_read INTEGER',
    'date_delivered INTEGER',
    'is_delivered INTEGER DEFAULT 0',
    'is_finished INTEGER DEFAULT 0',
    'is_emote INTEGER DEFAULT 0',
    'is_from_me INTEGER DEFAULT 0',
    'is_empty INTEGER DEFAULT 0',
    'is_delayed INTEGER DEFAULT 0',
    'is_auto_reply INTEGER DEFAULT 0',
    'is_prepared INTEGER DEFAULT 0',
    'is_read INTEGER DEFAULT 0',
    'is_system_message INTEGER DEFAULT 0',
    'is_sent INTEGER DEFAULT 0',
    'has_dd_results INTEGER DEFAULT 0',
    'is_service_message INTEGER DEFAULT 0',
    'is_forward INTEGER DEFAULT 0',
    'was_downgraded INTEGER DEFAULT 0',
    'is_archive INTEGER DEFAULT 0',
    'cache_has_attachments INTEGER DEFAULT 0',
    'cache_roomnames TEXT',
    'was_data_detected INTEGER DEFAULT 0',
    'was_deduplicated INTEGER DEFAULT 0',
    'is_audio_message INTEGER DEFAULT 0',
    'is_played INTEGER DEFAULT 0',
    'date_played INTEGER',
    'item_type INTEGER DEFAULT 0',
    'other_handle INTEGER DEFAULT 0',
    'group_title TEXT',
    'group_action_type INTEGER DEFAULT 0',
    'share_status INTEGER DEFAULT 0',
    'share_direction INTEGER DEFAULT 0',
    'is_expirable INTEGER DEFAULT 0',
    'expire_state INTEGER DEFAULT 0',
    'message_action_type INTEGER DEFAULT 0',
    'message_source INTEGER DEFAULT 0',
  );
  if (profile !== 'legacy') {
    cols.push(
      'associated_message_guid TEXT DEFAULT NULL',
      'associated_message_type INTEGER DEFAULT 0',
      'balloon_bundle_id TEXT DEFAULT NULL',
      'payload_data BLOB',
      'expressive_send_style_id TEXT DEFAULT NULL',
      'associated_message_range_location INTEGER DEFAULT 0',
      'associated_message_range_length INTEGER DEFAULT 0',
      'time_expressive_send_played INTEGER DEFAULT 0',
      'message_summary_info BLOB DEFAULT NULL',
      'ck_sync_state INTEGER DEFAULT 0',
      'ck_record_id TEXT DEFAULT NULL',
      'ck_record_change_tag TEXT DEFAULT NULL',
      'destination_caller_id TEXT DEFAULT NULL',
      'reply_to_guid TEXT DEFAULT NULL',
      'sort_id INTEGER DEFAULT 0',
      'is_spam INTEGER DEFAULT 0',
      'has_unseen_mention INTEGER DEFAULT 0',
      'thread_originator_guid TEXT DEFAULT NULL',
      'thread_originator_part TEXT DEFAULT NULL',
    );
  }
  if (profile === 'ventura') {
    cols.push(
      'syndication_ranges TEXT DEFAULT NULL',
      'synced_syndication_ranges TEXT DEFAULT NULL',
      'was_delivered_quietly INTEGER DEFAULT 0',
      'did_notify_recipient INTEGER DEFAULT 0',
      'date_retracted INTEGER DEFAULT 0',
      'date_edited INTEGER DEFAULT 0',
      'was_detonated INTEGER DEFAULT 0',
      'part_count INTEGER',
      'is_stewie INTEGER DEFAULT 0',
      'is_kt_verified INTEGER DEFAULT 0',
      'is_sos INTEGER DEFAULT 0',
      'is_critical INTEGER DEFAULT 0',
    );
  }
  // message_summary_info appeared with Monterey-era columns, but only Ventura fills it for edits; the
  // high_sierra profile stands for the older layout without it.
  return profile === 'high_sierra' ? cols.filter((c) => !c.startsWith('message_summary_info')) : cols;
}

function schemaSql(profile: ChatSchemaProfile): string {
  const cmjDate = profile === 'legacy' ? '' : ', message_date INTEGER DEFAULT 0';
  return `
CREATE TABLE _SqliteDatabaseProperties (key TEXT, value TEXT, UNIQUE(key));
CREATE TABLE handle (ROWID INTEGER PRIMARY KEY AUTOINCREMENT UNIQUE, id TEXT NOT NULL, country TEXT, service TEXT NOT NULL,
  uncanonicalized_id TEXT${profile === 'legacy' ? '' : ', person_centric_id TEXT'}, UNIQUE (id, service));
CREATE TABLE chat (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL, style INTEGER, state INTEGER,
  account_id TEXT, properties BLOB, chat_identifier TEXT, service_name TEXT, room_name TEXT, account_login TEXT,
  is_archived INTEGER DEFAULT 0, last_addressed_handle TEXT, display_name TEXT, group_id TEXT,
  is_filtered INTEGER DEFAULT 0, successful_query INTEGER${profile === 'legacy' ? '' : ', engram_id TEXT, server_change_token TEXT, ck_sync_state INTEGER DEFAULT 0, original_group_id TEXT, last_read_message_timestamp INTEGER DEFAULT 0'});
CREATE TABLE message (${messageColumns(profile).join(', ')});
CREATE TABLE chat_handle_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE,
  handle_id INTEGER REFERENCES handle (ROWID) ON DELETE CASCADE, UNIQUE(chat_id, handle_id));
CREATE TABLE chat_message_join (chat_id INTEGER REFERENCES chat (ROWID) ON DELETE CASCADE,
  message_id INTEGER REFERENCES message (ROWID) ON DELETE CASCADE${cmjDate}, PRIMARY KEY (chat_id, message_id));
CREATE TABLE attachment (ROWID INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT UNIQUE NOT NULL, created_date INTEGER DEFAULT 0,
  start_date INTEGER DEFAULT 0, filename TEXT, uti TEXT, mime_type TEXT, transfer_state INTEGER DEFAULT 0,
  is_outgoing INTEGER DEFAULT 0, user_info BLOB, transfer_name TEXT, total_bytes INTEGER DEFAULT 0,
  is_sticker INTEGER DEFAULT 0, sticker_user_info BLOB, attribution_info BLOB, hide_attachment INTEGER DEFAULT 0);
CREATE TABLE message_attachment_join (message_id INTEGER REFERENCES message (ROWID) ON DELETE CASCADE,
  attachment_id INTEGER REFERENCES attachment (ROWID) ON DELETE CASCADE, UNIQUE(message_id, attachment_id));
CREATE INDEX message_idx_handle ON message(handle_id, date);
CREATE INDEX message_idx_date ON message(date);
CREATE INDEX chat_message_join_idx_message_id_only ON chat_message_join(message_id);
CREATE INDEX chat_handle_join_idx_handle_id ON chat_handle_join(handle_id);
CREATE INDEX message_attachment_join_idx_message_id ON message_attachment_join(message_id);
CREATE INDEX message_attachment_join_idx_attachment_id ON message_attachment_join(attachment_id);
${profile === 'legacy' ? '' : 'CREATE INDEX message_idx_associated_message ON message(associated_message_guid) WHERE associated_message_guid IS NOT NULL;'}
INSERT INTO _SqliteDatabaseProperties (key, value) VALUES ('_ClientVersion', '${profile === 'legacy' ? '10013' : profile === 'high_sierra' ? '14006' : '18026'}');
`;
}

export interface AttachmentSpec {
  filename?: string | null;
  mimeType?: string | null;
  uti?: string | null;
  transferName?: string | null;
  totalBytes?: number;
  guid?: string;
}

export interface MessageSpec {
  guid?: string;
  chatId?: number | null;
  handleId?: number;
  /** Stored in `text`. */
  text?: string | null;
  /** Stored only in attributedBody (typedstream unless a blob is given); `text` stays NULL. */
  bodyOnly?: string;
  attributedBody?: Buffer | null;
  isFromMe?: boolean;
  date?: Date | null;
  dateRead?: Date | null;
  dateDelivered?: Date | null;
  isRead?: boolean;
  service?: string;
  account?: string | null;
  associatedMessageGuid?: string | null;
  associatedMessageType?: number;
  replyToGuid?: string | null;
  threadOriginatorGuid?: string | null;
  expressiveSendStyleId?: string | null;
  isAudioMessage?: boolean;
  attachments?: AttachmentSpec[];
}

/**
 * The test side writes fixtures through the same WebAssembly SQLite as the reader, with a VFS that may write.
 * There is no shared memory, so the builder holds the database in EXCLUSIVE locking mode; in WAL mode its commits
 * land in the -wal file (like Messages') until a checkpoint or close() moves them into chat.db.
 */
class WritableFileVfs extends ReadOnlyFileVfs {
  constructor() {
    super('memex-test-writable');
  }
  protected override openFd(filename: string, flags: number): number {
    const create = (flags & 0x4) !== 0;
    return fs.openSync(filename, fs.existsSync(filename) || !create ? 'r+' : 'w+');
  }
  protected override outFlags(flags: number): number {
    return flags;
  }
  protected override writableAccess(): number {
    return 1;
  }
  override jWrite(pFile: number, pData: Uint8Array, iOffset: number): number {
    const f = this.files.get(pFile);
    if (!f) return 10;
    fs.writeSync(f.fd, pData, 0, pData.length, iOffset);
    return 0;
  }
  override jTruncate(pFile: number, size: number): number {
    const f = this.files.get(pFile);
    if (!f) return 10;
    fs.ftruncateSync(f.fd, size);
    return 0;
  }
  override jDelete(filename: string): number {
    fs.rmSync(filename, { force: true });
    return 0;
  }
}
const writableVfs = new WritableFileVfs();
registerVfs(writableVfs);

/** Opens `file` for writing (created when missing). */
export function openWritable(file: string): SqliteConnection {
  const db = new SqliteConnection(file, { vfs: writableVfs.name });
  db.exec('PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY');
  return db;
}

export class ChatDbBuilder {
  readonly db: SqliteConnection;
  private readonly stmts = new Map<string, SqliteStatement>();

  /** Prepared statements are cached: the benchmark generator inserts hundreds of thousands of rows. */
  private stmt(sql: string): SqliteStatement {
    let st = this.stmts.get(sql);
    if (!st) this.stmts.set(sql, (st = this.db.prepare(sql)));
    return st;
  }

  private constructor(
    readonly file: string,
    readonly profile: ChatSchemaProfile,
  ) {
    this.db = openWritable(file);
  }

  /** Creates a new chat.db at `file` (overwriting) with the given schema profile. */
  static create(file: string, profile: ChatSchemaProfile = 'ventura', opts: { wal?: boolean } = {}): ChatDbBuilder {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
    const b = new ChatDbBuilder(file, profile);
    // Messages keeps chat.db in WAL mode; the reader must cope with that.
    if (opts.wal !== false) b.db.pragma('journal_mode = WAL');
    b.db.exec(schemaSql(profile));
    return b;
  }

  /** Reopens an existing fixture to add rows (between collector runs). */
  static open(file: string, profile: ChatSchemaProfile): ChatDbBuilder {
    return new ChatDbBuilder(file, profile);
  }

  /** Apple time for `d` in this profile's unit: seconds (legacy) or nanoseconds since 2001 as a bigint. */
  appleTime(d: Date | null | undefined): number | bigint {
    if (!d) return 0;
    const ms = d.getTime() - APPLE_EPOCH_MS;
    if (this.profile === 'legacy') return Math.floor(ms / 1000);
    return BigInt(ms) * 1_000_000n;
  }

  addHandle(id: string, service = id.includes('@') ? 'iMessage' : 'SMS', country: string | null = 'us'): number {
    const cols = this.profile === 'legacy' ? '' : ', person_centric_id';
    const vals = this.profile === 'legacy' ? '' : ', NULL';
    const r = this
      .stmt(`INSERT INTO handle (id, country, service, uncanonicalized_id${cols}) VALUES (?, ?, ?, ?${vals})`)
      .run(id, country, service, id);
    return Number(r.lastInsertRowid);
  }

  addChat(spec: {
    guid?: string;
    chatIdentifier: string;
    displayName?: string | null;
    serviceName?: string;
    group?: boolean;
    handles: number[];
  }): number {
    const group = spec.group ?? spec.handles.length > 1;
    const service = spec.serviceName ?? 'iMessage';
    const guid = spec.guid ?? `${service};${group ? '+' : '-'};${spec.chatIdentifier}`;
    const r = this
      .stmt(
        `INSERT INTO chat (guid, style, state, account_id, chat_identifier, service_name, room_name, display_name, group_id)
         VALUES (?, ?, 3, ?, ?, ?, ?, ?, ?)`,
      )
      .run(guid, group ? 43 : 45, crypto.randomUUID().toUpperCase(), spec.chatIdentifier, service,
        group ? spec.chatIdentifier : null, spec.displayName ?? (group ? '' : null), crypto.randomUUID().toUpperCase());
    const chatId = Number(r.lastInsertRowid);
    const join = this.stmt('INSERT INTO chat_handle_join (chat_id, handle_id) VALUES (?, ?)');
    for (const h of spec.handles) join.run(chatId, h);
    return chatId;
  }

  addMessage(spec: MessageSpec): { rowId: number; guid: string } {
    const guid = spec.guid ?? crypto.randomUUID().toUpperCase();
    const row: Record<string, unknown> = {
      guid,
      text: spec.bodyOnly !== undefined ? null : (spec.text ?? null),
      handle_id: spec.handleId ?? 0,
      service: spec.service ?? 'iMessage',
      account: spec.account === undefined ? 'E:me@icloud.com' : spec.account,
      date: this.appleTime(spec.date ?? new Date()),
      date_read: this.appleTime(spec.dateRead),
      date_delivered: this.appleTime(spec.dateDelivered),
      is_from_me: spec.isFromMe ? 1 : 0,
      is_read: spec.isRead ?? !spec.isFromMe ? 1 : 0,
      is_sent: spec.isFromMe ? 1 : 0,
      is_delivered: 1,
      is_finished: 1,
      cache_has_attachments: spec.attachments?.length ? 1 : 0,
      is_audio_message: spec.isAudioMessage ? 1 : 0,
    };
    if (this.profile !== 'legacy') {
      let body = spec.attributedBody ?? null;
      if (!body && spec.bodyOnly !== undefined) body = encodeTypedstream(spec.bodyOnly);
      else if (!body && spec.text) body = encodeTypedstream(spec.text);
      row.attributedBody = body;
      row.associated_message_guid = spec.associatedMessageGuid ?? null;
      row.associated_message_type = spec.associatedMessageType ?? 0;
      row.expressive_send_style_id = spec.expressiveSendStyleId ?? null;
      row.reply_to_guid = spec.replyToGuid ?? null;
      row.thread_originator_guid = spec.threadOriginatorGuid ?? null;
    } else if (spec.bodyOnly !== undefined) {
      throw new Error('legacy chat.db has no attributedBody column');
    }
    const keys = Object.keys(row);
    const r = this
      .stmt(`INSERT INTO message (${keys.join(', ')}) VALUES (${keys.map((k) => '@' + k).join(', ')})`)
      .run(row as Record<string, SqlParam>);
    const rowId = Number(r.lastInsertRowid);
    if (spec.chatId != null) {
      if (this.profile === 'legacy') {
        this.stmt('INSERT INTO chat_message_join (chat_id, message_id) VALUES (?, ?)').run(spec.chatId, rowId);
      } else {
        this
          .stmt('INSERT INTO chat_message_join (chat_id, message_id, message_date) VALUES (?, ?, ?)')
          .run(spec.chatId, rowId, row.date as bigint);
      }
    }
    for (const a of spec.attachments ?? []) {
      const ar = this
        .stmt(
          `INSERT INTO attachment (guid, created_date, filename, uti, mime_type, transfer_state, is_outgoing, transfer_name, total_bytes)
           VALUES (?, ?, ?, ?, ?, 5, ?, ?, ?)`,
        )
        .run(a.guid ?? `at_0_${crypto.randomUUID().toUpperCase()}`, this.profile === 'legacy' ? (row.date as number) : Number((row.date as bigint) / 1_000_000_000n),
          a.filename ?? null, a.uti ?? null, a.mimeType ?? null, spec.isFromMe ? 1 : 0,
          a.transferName ?? (a.filename ? path.basename(a.filename) : null), a.totalBytes ?? 0);
      this
        .stmt('INSERT INTO message_attachment_join (message_id, attachment_id) VALUES (?, ?)')
        .run(rowId, Number(ar.lastInsertRowid));
    }
    return { rowId, guid };
  }

  /** Edits a message in place the way Ventura does: new text + attributedBody, date_edited, summary info. */
  editMessage(rowId: number, newText: string, editedAt: Date): void {
    if (this.profile !== 'ventura') throw new Error('only ventura chat.db files record edits');
    const prev = this.stmt('SELECT text FROM message WHERE ROWID = ?').get(rowId) as { text: string | null };
    const at = this.appleTime(editedAt) as bigint;
    this
      .stmt('UPDATE message SET text = ?, attributedBody = ?, date_edited = ?, message_summary_info = ? WHERE ROWID = ?')
      .run(newText, encodeTypedstream(newText), at, encodeEditSummary([prev?.text ?? '', newText], [0, Number(at)]), rowId);
  }

  /**
   * Unsends parts of a message as Ventura does: `rp` in message_summary_info lists the unsent part
   * indexes and date_edited is the time; unsending the whole message also clears its text.
   */
  unsendMessage(rowId: number, unsentAt: Date, parts: number[] = [0], whole = true): void {
    if (this.profile !== 'ventura') throw new Error('only ventura chat.db files record unsent messages');
    const at = this.appleTime(unsentAt) as bigint;
    const summary = encodeBplist({ rp: parts, ec: {}, otr: {} });
    if (whole) {
      this.stmt('UPDATE message SET text = NULL, attributedBody = NULL, date_edited = ?, message_summary_info = ? WHERE ROWID = ?').run(at, summary, rowId);
    } else {
      this.stmt('UPDATE message SET date_edited = ?, message_summary_info = ? WHERE ROWID = ?').run(at, summary, rowId);
    }
  }

  close(): void {
    this.db.close();
  }
}
