/**
 * The lexical index on disk (issue 34): a snapshot a start loads instead of reading every document,
 * then brings up to date from the change log (index-sync.ts). The database stays the only store: a
 * snapshot is a cache of what the index derived from it, and one that is corrupt, truncated, of
 * another layout, of another database, older than the change log still holds, or simply not
 * matching the database after the catch-up is rebuilt from the database, never trusted.
 *
 * File layout (little-endian; every section starts at a multiple of 8 bytes so it is read in place
 * as a typed array):
 *
 *   0   8 bytes   magic "MXLEXIX\n"
 *   8   u32       SNAPSHOT_FORMAT
 *   12  u32       header length H
 *   16  H bytes   header, JSON (SnapshotHeader): versions, the database it was made from, the
 *                 change-log position it reflects, the index's counts, and where each section is
 *   ..            zero padding to a multiple of 8
 *   ..            body: the sections (typed arrays as they are in memory; a list of strings as its
 *                 UTF-16 offsets, i32, and its text in latin1 when every character fits, else UTF-16)
 *   end-32        SHA-256 of every byte before it (header and body)
 *
 * Writing: the index is serialised between two changes (a synchronous copy, lexical-index.ts
 * `serialise`), then hashed and written in slices with a turn of the event loop between them, to
 * `<file>.<pid>.tmp`, fsynced, renamed over the file, and the directory fsynced: a crash leaves the
 * old snapshot or the new one, never a torn one (and a torn one would fail its checksum).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LEXICAL_INDEX_VERSION, LexicalIndex, type Bm25Params, type RawArray, type SerialisedIndex } from './lexical-index.ts';

/** The file's own layout; the index's layout is LEXICAL_INDEX_VERSION, checked separately. */
export const SNAPSHOT_FORMAT = 1;
/**
 * What turned text into the lexemes the index holds: PostgreSQL's to_tsvector('english'), stored in
 * the catalog's tsvector columns (the index reads them; it never analyses text itself).
 */
export const ANALYZER_VERSION = 'postgresql-english-tsvector';

const MAGIC = Buffer.from('MXLEXIX\n', 'latin1');
const PREFIX = 16;
const DIGEST = 32;
/** Bytes hashed or written per turn of the event loop. */
const SLICE = 8 * 2 ** 20;

/** The database a snapshot belongs to, and its schema. */
export interface SnapshotIdentity {
  /** system_settings instance_id: another database (or a new one) is another instance. */
  instance: string;
  /** schema_migrations: how many, and the highest version. */
  migrations: { count: number; latest: number };
  /** The database's OID in its cluster: a database dropped and made again (a restore) has another. */
  database: string;
}

/** The change-log position an index reflects (index-sync.ts): horizon, and rows above it applied. */
export interface SnapshotPosition {
  horizon: bigint;
  applied: Map<number, bigint>;
  /**
   * The change log's sequence when the snapshot was taken: a database whose sequence is behind it
   * (a backup older than the snapshot restored in place) is not the one the snapshot was made from.
   */
  logSeq: string;
}

interface SectionEntry {
  name: string;
  kind: 'i32' | 'f32' | 'f64' | 'u8' | 'latin1' | 'utf16';
  offset: number;
  bytes: number;
}

export interface SnapshotHeader {
  format: number;
  lexicalVersion: number;
  analyzer: string;
  identity: SnapshotIdentity;
  position: { horizon: string; applied: [number, string][]; logSeq: string };
  params: Bm25Params;
  createdAt: string;
  documents: number;
  passages: number;
  lengthSum: number;
  /** The string lists: name -> number of strings. */
  strings: Record<string, number>;
  sections: SectionEntry[];
  bodyBytes: number;
}

export type SnapshotLoad =
  | { ok: true; index: LexicalIndex; position: SnapshotPosition; header: SnapshotHeader; bytes: number }
  | { ok: false; reason: string };

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));
const align8 = (n: number) => (n + 7) & ~7;

function kindOf(a: RawArray): SectionEntry['kind'] {
  if (a instanceof Int32Array) return 'i32';
  if (a instanceof Float32Array) return 'f32';
  if (a instanceof Float64Array) return 'f64';
  return 'u8';
}

/** A list of strings as offsets (UTF-16 code units) and text. */
function packStrings(values: string[]): { offsets: Int32Array; text: Buffer; kind: 'latin1' | 'utf16' } {
  const offsets = new Int32Array(values.length + 1);
  let n = 0;
  for (let i = 0; i < values.length; i++) {
    n += values[i].length;
    offsets[i + 1] = n;
  }
  const joined = values.join('');
  // eslint-disable-next-line no-control-regex
  const wide = /[^\x00-\xff]/.test(joined);
  return { offsets, text: Buffer.from(joined, wide ? 'utf16le' : 'latin1'), kind: wide ? 'utf16' : 'latin1' };
}

function unpackStrings(offsets: Int32Array, text: Buffer, kind: 'latin1' | 'utf16', count: number): string[] {
  const joined = text.toString(kind === 'utf16' ? 'utf16le' : 'latin1');
  if (offsets.length !== count + 1 || offsets[0] !== 0 || offsets[count] !== joined.length) throw new Error('snapshot strings are malformed');
  const out = new Array<string>(count);
  for (let i = 0; i < count; i++) {
    const a = offsets[i];
    const b = offsets[i + 1];
    if (b < a) throw new Error('snapshot strings are malformed');
    out[i] = joined.slice(a, b);
  }
  return out;
}

async function sha256Sliced(parts: Uint8Array[]): Promise<Buffer> {
  const h = crypto.createHash('sha256');
  for (const p of parts) {
    for (let at = 0; at < p.length; at += SLICE) {
      h.update(p.subarray(at, Math.min(p.length, at + SLICE)));
      if (p.length > SLICE) await yieldTurn();
    }
  }
  return h.digest();
}

const bytesOf = (a: ArrayBufferView) => new Uint8Array(a.buffer, a.byteOffset, a.byteLength);

export class IndexSnapshotFile {
  constructor(readonly file: string) {
    if (os.endianness() !== 'LE') throw new Error('index snapshots are written on little-endian machines only');
  }

  /**
   * Writes a serialised index atomically. `serialised` must not change meanwhile (lexical-index.ts
   * `serialise` returns fresh copies). Returns the file's size.
   */
  async save(serialised: SerialisedIndex, position: SnapshotPosition, identity: SnapshotIdentity): Promise<number> {
    const sections: { entry: SectionEntry; data: Uint8Array }[] = [];
    let offset = 0;
    const add = (name: string, kind: SectionEntry['kind'], data: Uint8Array) => {
      sections.push({ entry: { name, kind, offset, bytes: data.byteLength }, data });
      offset = align8(offset + data.byteLength);
    };
    for (const [name, a] of Object.entries(serialised.arrays)) add(name, kindOf(a), bytesOf(a));
    const strings: Record<string, number> = {};
    for (const [name, values] of Object.entries(serialised.strings)) {
      const p = packStrings(values);
      strings[name] = values.length;
      add(`${name}.off`, 'i32', bytesOf(p.offsets));
      add(`${name}.txt`, p.kind, p.text);
    }
    const header: SnapshotHeader = {
      format: SNAPSHOT_FORMAT,
      lexicalVersion: serialised.meta.version,
      analyzer: ANALYZER_VERSION,
      identity,
      position: {
        horizon: position.horizon.toString(),
        applied: [...position.applied].map(([seq, xid]) => [seq, xid.toString()]),
        logSeq: position.logSeq,
      },
      params: serialised.meta.params,
      createdAt: new Date().toISOString(),
      documents: serialised.meta.documents,
      passages: serialised.meta.passages,
      lengthSum: serialised.meta.lengthSum,
      strings,
      sections: sections.map((s) => s.entry),
      bodyBytes: offset,
    };
    const json = Buffer.from(JSON.stringify(header), 'utf8');
    const head = Buffer.alloc(align8(PREFIX + json.length));
    MAGIC.copy(head, 0);
    head.writeUInt32LE(SNAPSHOT_FORMAT, 8);
    head.writeUInt32LE(json.length, 12);
    json.copy(head, PREFIX);
    // The file as slices in order, padding included.
    const parts: Uint8Array[] = [head];
    let at = 0;
    for (const s of sections) {
      if (s.entry.offset > at) parts.push(new Uint8Array(s.entry.offset - at));
      parts.push(s.data);
      at = s.entry.offset + s.data.byteLength;
    }
    if (offset > at) parts.push(new Uint8Array(offset - at));
    const digest = await sha256Sliced(parts);
    parts.push(digest);

    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    const fh = await fs.promises.open(tmp, 'w', 0o600);
    let size = 0;
    try {
      for (const p of parts) {
        for (let from = 0; from < p.length; from += SLICE) {
          const piece = p.subarray(from, Math.min(p.length, from + SLICE));
          let done = 0;
          while (done < piece.length) done += (await fh.write(piece, done, piece.length - done)).bytesWritten;
          size += piece.length;
        }
      }
      await fh.sync();
    } catch (err) {
      await fh.close().catch(() => undefined);
      await fs.promises.rm(tmp, { force: true });
      throw err;
    }
    await fh.close();
    await fs.promises.rename(tmp, this.file);
    // The rename itself is durable once the directory is.
    const dir = await fs.promises.open(path.dirname(this.file), 'r');
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
    return size;
  }

  /**
   * Reads and verifies the snapshot: layout, checksum, versions and BM25 parameters. Whether it
   * belongs to the database and is not older than its change log is the caller's check (it needs
   * the database); `{ ok: false, reason }` for anything not usable, including no file.
   */
  async load(params: Bm25Params): Promise<SnapshotLoad> {
    let buf: Buffer;
    try {
      buf = await fs.promises.readFile(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: false, reason: 'no snapshot' };
      return { ok: false, reason: `unreadable: ${(err as Error).message}` };
    }
    try {
      return await this.parse(buf, params);
    } catch (err) {
      return { ok: false, reason: `malformed: ${(err as Error).message}` };
    }
  }

  private async parse(buf: Buffer, params: Bm25Params): Promise<SnapshotLoad> {
    const bad = (reason: string): SnapshotLoad => ({ ok: false, reason });
    if (buf.length < PREFIX + DIGEST || !buf.subarray(0, 8).equals(MAGIC)) return bad('not an index snapshot');
    const format = buf.readUInt32LE(8);
    if (format !== SNAPSHOT_FORMAT) return bad(`snapshot format ${format}, this version reads ${SNAPSHOT_FORMAT}`);
    const jsonLen = buf.readUInt32LE(12);
    if (PREFIX + jsonLen > buf.length - DIGEST) return bad('truncated (header)');
    const bodyAt = align8(PREFIX + jsonLen);
    let header: SnapshotHeader;
    try {
      header = JSON.parse(buf.toString('utf8', PREFIX, PREFIX + jsonLen));
    } catch {
      return bad('header is not valid JSON');
    }
    if (typeof header.bodyBytes !== 'number' || bodyAt + header.bodyBytes + DIGEST !== buf.length) return bad('truncated or extended (size does not match the header)');
    const digest = await sha256Sliced([buf.subarray(0, buf.length - DIGEST)]);
    if (!digest.equals(buf.subarray(buf.length - DIGEST))) return bad('checksum mismatch');
    if (header.lexicalVersion !== LEXICAL_INDEX_VERSION) return bad(`index version ${header.lexicalVersion}, this version builds ${LEXICAL_INDEX_VERSION}`);
    if (header.analyzer !== ANALYZER_VERSION) return bad(`analyzer ${header.analyzer}, this version uses ${ANALYZER_VERSION}`);
    const p = header.params;
    if (!p || p.k1 !== params.k1 || p.b !== params.b || p.titleWeight !== params.titleWeight) return bad('other BM25 parameters');

    // Sections in place when the buffer is aligned (a large readFile buffer is), else one copy.
    const body = buf.byteOffset % 8 === 0 ? buf.subarray(bodyAt) : Buffer.from(buf.subarray(bodyAt));
    const arrays: Record<string, RawArray> = {};
    const texts = new Map<string, { data: Buffer; kind: 'latin1' | 'utf16' }>();
    for (const s of header.sections) {
      if (s.offset % 8 !== 0 || s.offset < 0 || s.bytes < 0 || s.offset + s.bytes > header.bodyBytes) return bad(`section ${s.name} out of bounds`);
      const at = body.byteOffset + s.offset;
      const width = s.kind === 'f64' ? 8 : s.kind === 'i32' || s.kind === 'f32' ? 4 : 1;
      if (s.bytes % width !== 0) return bad(`section ${s.name} has a partial element`);
      const n = s.bytes / width;
      if (s.kind === 'i32') arrays[s.name] = new Int32Array(body.buffer, at, n);
      else if (s.kind === 'f32') arrays[s.name] = new Float32Array(body.buffer, at, n);
      else if (s.kind === 'f64') arrays[s.name] = new Float64Array(body.buffer, at, n);
      else if (s.kind === 'u8') arrays[s.name] = new Uint8Array(body.buffer, at, n);
      else texts.set(s.name, { data: body.subarray(s.offset, s.offset + s.bytes), kind: s.kind });
    }
    const strings: Record<string, string[]> = {};
    for (const [name, count] of Object.entries(header.strings)) {
      const off = arrays[`${name}.off`];
      const txt = texts.get(`${name}.txt`);
      if (!(off instanceof Int32Array) || !txt) return bad(`strings ${name} missing`);
      strings[name] = unpackStrings(off, txt.data, txt.kind, count);
    }
    const index = LexicalIndex.deserialise({
      meta: { version: header.lexicalVersion, params: header.params, documents: header.documents, passages: header.passages, lengthSum: header.lengthSum },
      arrays,
      strings,
    });
    const position: SnapshotPosition = {
      horizon: BigInt(header.position.horizon),
      applied: new Map(header.position.applied.map(([seq, xid]) => [seq, BigInt(xid)])),
      logSeq: String(header.position.logSeq),
    };
    return { ok: true, index, position, header, bytes: buf.length };
  }

  /** Deletes the snapshot (after a forget: nothing erased may stay on disk). */
  remove(): void {
    fs.rmSync(this.file, { force: true });
  }
}
