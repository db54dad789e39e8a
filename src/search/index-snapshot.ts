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
 * Writing: the index is serialised between two changes (a synchronous copy, index/format.ts
 * `serialise`), then hashed and written in slices with a turn of the event loop between them, to
 * `<file>.<pid>.tmp`, fsynced, renamed over the file, and the directory fsynced: a crash leaves the
 * old snapshot or the new one, never a torn one (and a torn one would fail its checksum).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LEXICAL_INDEX_VERSION, LexicalIndex, type Bm25Params, type RawArray, type SerialisedIndex } from './index/lexical-index.ts';
import { buildStringHash } from './string-hash.ts';

/** The file's own layout; the index's layout is LEXICAL_INDEX_VERSION, checked separately. */
export const SNAPSHOT_FORMAT = 2;
/**
 * What turned text into the lexemes the index holds: PostgreSQL's to_tsvector('english'), stored in
 * the catalog's tsvector columns (the index reads them; it never analyses text itself).
 */
export const ANALYZER_VERSION = 'postgresql-english-tsvector';

const MAGIC = Buffer.from('MXLEXIX\n', 'latin1');
const PREFIX = 16;
const DIGEST = 32;
/** Bytes hashed per turn of the event loop (~1 ms of SHA-256). */
const SLICE = 2 ** 20;
/** Bytes per write call (written by libuv's threads, not the event loop). */
const WRITE_SLICE = 8 * 2 ** 20;

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

export interface SectionEntry {
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

/** A section of a snapshot file: a typed array as it is in memory, or text. */
export interface SnapshotSection {
  name: string;
  kind: SectionEntry['kind'];
  data: Uint8Array;
}

/** A snapshot file's header fields that every kind of snapshot has (the rest is the kind's own). */
interface FileHeader {
  sections: SectionEntry[];
  bodyBytes: number;
}

/** Adds a list of strings as its offsets and text sections. */
export function stringSections(name: string, values: string[]): SnapshotSection[] {
  const p = packStrings(values);
  return [
    { name: `${name}.off`, kind: 'i32', data: bytesOf(p.offsets) },
    { name: `${name}.txt`, kind: p.kind, data: p.text },
  ];
}

export const arraySection = (name: string, a: RawArray): SnapshotSection => ({ name, kind: kindOf(a), data: bytesOf(a) });

/**
 * Writes `header` and `sections` to `file` atomically: to `<file>.<pid>.tmp`, hashed and written in
 * slices with a turn of the event loop between them, fsynced, renamed over the file, the directory
 * fsynced. Returns the file's size.
 */
export async function writeSnapshotFile(file: string, magic: Buffer, format: number, fields: object, list: SnapshotSection[]): Promise<number> {
  const sections: { entry: SectionEntry; data: Uint8Array }[] = [];
  let offset = 0;
  for (const s of list) {
    sections.push({ entry: { name: s.name, kind: s.kind, offset, bytes: s.data.byteLength }, data: s.data });
    offset = align8(offset + s.data.byteLength);
  }
  const header = { ...fields, format, sections: sections.map((s) => s.entry), bodyBytes: offset };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const head = Buffer.alloc(align8(PREFIX + json.length));
  magic.copy(head, 0);
  head.writeUInt32LE(format, 8);
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

  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await fs.promises.open(tmp, 'w', 0o600);
  let size = 0;
  try {
    for (const p of parts) {
      for (let from = 0; from < p.length; from += WRITE_SLICE) {
        const piece = p.subarray(from, Math.min(p.length, from + WRITE_SLICE));
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
  await fs.promises.rename(tmp, file);
  // The rename itself is durable once the directory is.
  const dir = await fs.promises.open(path.dirname(file), 'r');
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  return size;
}

export type SnapshotRead<H> =
  | { ok: true; header: H; arrays: Record<string, RawArray>; strings: (name: string, count: number) => string[] | null; bytes: number }
  | { ok: false; reason: string };

/**
 * Reads `file` with one readFile and checks its layout, size and checksum; its sections are typed
 * arrays over the file's buffer (no copy). `{ ok: false, reason }` for anything not usable,
 * including no file ('no snapshot').
 */
export async function readSnapshotFile<H extends FileHeader>(file: string, magic: Buffer, format: number): Promise<SnapshotRead<H>> {
  let buf: Buffer;
  try {
    buf = await readWhole(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: false, reason: 'no snapshot' };
    return { ok: false, reason: `unreadable: ${(err as Error).message}` };
  }
  try {
    return await parseSnapshotFile<H>(buf, magic, format);
  } catch (err) {
    return { ok: false, reason: `malformed: ${(err as Error).message}` };
  }
}

/**
 * The file in one buffer of its own (offset 0, so sections are aligned), read with as few read
 * calls as the kernel allows (readFile reads in 512 KiB steps: 1.7 s for 81 MiB at load 15).
 */
async function readWhole(file: string): Promise<Buffer> {
  const fh = await fs.promises.open(file, 'r');
  try {
    const { size } = await fh.stat();
    const buf = Buffer.allocUnsafeSlow(size);
    let done = 0;
    while (done < size) {
      const { bytesRead } = await fh.read(buf, done, Math.min(size - done, 2 ** 30), done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    return done === size ? buf : buf.subarray(0, done);
  } finally {
    await fh.close();
  }
}

async function parseSnapshotFile<H extends FileHeader>(buf: Buffer, magic: Buffer, format: number): Promise<SnapshotRead<H>> {
  const bad = (reason: string): SnapshotRead<H> => ({ ok: false, reason });
  if (buf.length < PREFIX + DIGEST || !buf.subarray(0, 8).equals(magic)) return bad('not an index snapshot');
  const found = buf.readUInt32LE(8);
  if (found !== format) return bad(`snapshot format ${found}, this version reads ${format}`);
  const jsonLen = buf.readUInt32LE(12);
  if (PREFIX + jsonLen > buf.length - DIGEST) return bad('truncated (header)');
  const bodyAt = align8(PREFIX + jsonLen);
  let header: H;
  try {
    header = JSON.parse(buf.toString('utf8', PREFIX, PREFIX + jsonLen));
  } catch {
    return bad('header is not valid JSON');
  }
  if (typeof header.bodyBytes !== 'number' || bodyAt + header.bodyBytes + DIGEST !== buf.length) return bad('truncated or extended (size does not match the header)');
  const digest = await sha256Sliced([buf.subarray(0, buf.length - DIGEST)]);
  if (!digest.equals(buf.subarray(buf.length - DIGEST))) return bad('checksum mismatch');

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
  const strings = (name: string, count: number): string[] | null => {
    const off = arrays[`${name}.off`];
    const txt = texts.get(`${name}.txt`);
    if (!(off instanceof Int32Array) || !txt) return null;
    return unpackStrings(off, txt.data, txt.kind, count);
  };
  return { ok: true, header, arrays, strings, bytes: buf.length };
}

export class IndexSnapshotFile {
  constructor(readonly file: string) {
    if (os.endianness() !== 'LE') throw new Error('index snapshots are written on little-endian machines only');
  }

  /**
   * Writes a serialised index atomically. `serialised` must not change meanwhile (index/format.ts
   * `serialise` returns fresh copies). The lookup tables of its hashed string lists are made here,
   * a list per turn of the event loop. Returns the file's size.
   */
  async save(serialised: SerialisedIndex, position: SnapshotPosition, identity: SnapshotIdentity): Promise<number> {
    const list: SnapshotSection[] = [];
    for (const [name, a] of Object.entries(serialised.arrays)) list.push(arraySection(name, a));
    const strings: Record<string, number> = {};
    for (const [name, values] of Object.entries(serialised.strings)) {
      strings[name] = values.length;
      list.push(...stringSections(name, values));
      if (serialised.hashed.includes(name)) list.push(arraySection(`${name}.hash`, buildStringHash(values)));
      await yieldTurn();
    }
    const fields: Omit<SnapshotHeader, 'format' | 'sections' | 'bodyBytes'> = {
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
    };
    return writeSnapshotFile(this.file, MAGIC, SNAPSHOT_FORMAT, fields, list);
  }

  /**
   * Reads and verifies the snapshot: layout, checksum, versions and BM25 parameters. Whether it
   * belongs to the database and is not older than its change log is the caller's check (it needs
   * the database); `{ ok: false, reason }` for anything not usable, including no file.
   */
  async load(params: Bm25Params): Promise<SnapshotLoad> {
    const read = await readSnapshotFile<SnapshotHeader>(this.file, MAGIC, SNAPSHOT_FORMAT);
    if (!read.ok) return read;
    try {
      return this.decode(read, params);
    } catch (err) {
      return { ok: false, reason: `malformed: ${(err as Error).message}` };
    }
  }

  private decode(read: Extract<SnapshotRead<SnapshotHeader>, { ok: true }>, params: Bm25Params): SnapshotLoad {
    const bad = (reason: string): SnapshotLoad => ({ ok: false, reason });
    const { header, arrays } = read;
    if (header.lexicalVersion !== LEXICAL_INDEX_VERSION) return bad(`index version ${header.lexicalVersion}, this version builds ${LEXICAL_INDEX_VERSION}`);
    if (header.analyzer !== ANALYZER_VERSION) return bad(`analyzer ${header.analyzer}, this version uses ${ANALYZER_VERSION}`);
    const p = header.params;
    if (!p || p.k1 !== params.k1 || p.b !== params.b || p.titleWeight !== params.titleWeight) return bad('other BM25 parameters');
    const strings: Record<string, string[]> = {};
    for (const [name, count] of Object.entries(header.strings)) {
      const values = read.strings(name, count);
      if (values === null) return bad(`strings ${name} missing`);
      strings[name] = values;
    }
    const hashed = Object.keys(header.strings).filter((name) => arrays[`${name}.hash`] !== undefined);
    const index = LexicalIndex.deserialise({
      meta: { version: header.lexicalVersion, params: header.params, documents: header.documents, passages: header.passages, lengthSum: header.lengthSum },
      arrays,
      strings,
      hashed,
    });
    const position: SnapshotPosition = {
      horizon: BigInt(header.position.horizon),
      applied: new Map(header.position.applied.map(([seq, xid]) => [seq, BigInt(xid)])),
      logSeq: String(header.position.logSeq),
    };
    return { ok: true, index, position, header, bytes: read.bytes };
  }

  /** Deletes the snapshot (after a forget: nothing erased may stay on disk). */
  remove(): void {
    fs.rmSync(this.file, { force: true });
  }
}

/**
 * Removes what a snapshot write killed half-way left beside `file`: `<file>.<pid>.tmp` of a process
 * that is no longer running (a live writer's own file is left alone). Run at start and by garbage
 * collection; returns the names removed.
 */
export function removeStaleSnapshotTemps(file: string, dryRun = false): string[] {
  const dir = path.dirname(file);
  const prefix = `${path.basename(file)}.`;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const name of names) {
    const m = name.startsWith(prefix) ? /^(\d+)\.tmp$/.exec(name.slice(prefix.length)) : null;
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || processRunning(pid)) continue;
    if (!dryRun) fs.rmSync(path.join(dir, name), { force: true });
    removed.push(name);
  }
  return removed;
}

/** The snapshots of the search index in DATA_DIR (src/search/*-snapshot*.ts write them). */
export const SEARCH_SNAPSHOT_FILES = ['search-index.snapshot', 'search-vectors.snapshot'];

/** removeStaleSnapshotTemps for every search snapshot in `dataDir` (at start and by `memex gc`). */
export function removeStaleSearchSnapshotTemps(dataDir: string, dryRun = false): string[] {
  return SEARCH_SNAPSHOT_FILES.flatMap((name) => removeStaleSnapshotTemps(path.join(dataDir, name), dryRun));
}

function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}
