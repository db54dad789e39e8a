/**
 * Reading a Google Takeout archive: a .zip (read entry by entry from its central directory, zip64 included, each
 * entry streamed through inflate to a file: a 10 GB mbox is never held in memory) or a .tgz (tar-stream over
 * gunzip). Only the entries a caller wants are written, under a folder of its choosing, with their paths confined
 * to it.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import tar from 'tar-stream';
import { codedError } from '../../util/errors.ts';

export class ArchiveError extends codedError('IMPORT.BAD_ARCHIVE') {}

export type ArchiveKind = 'zip' | 'tgz';

export function archiveKind(head: Buffer): ArchiveKind | null {
  if (head.length >= 4 && head.readUInt32LE(0) === 0x04034b50) return 'zip';
  if (head.length >= 2 && head[0] === 0x1f && head[1] === 0x8b) return 'tgz';
  return null;
}

/** The first entry's name of an archive's head: a zip's first local header, a tgz's first tar header. */
export function firstEntryName(head: Buffer): string | null {
  const kind = archiveKind(head);
  if (kind === 'zip') {
    if (head.length < 30) return null;
    const n = head.readUInt16LE(26);
    return head.subarray(30, 30 + n).toString('utf8');
  }
  if (kind === 'tgz') {
    try {
      const tarHead = zlib.gunzipSync(head, { finishFlush: zlib.constants.Z_SYNC_FLUSH });
      return tarHead.subarray(0, 100).toString('utf8').replace(/\0.*$/s, '');
    } catch {
      return null;
    }
  }
  return null;
}

/** A path inside `root` for an entry name, or null for one that would leave it (`../`, absolute). */
function confined(root: string, name: string): string | null {
  const clean = name.replace(/\\/g, '/');
  if (clean.startsWith('/') || clean.split('/').includes('..')) return null;
  const p = path.resolve(root, clean);
  return p.startsWith(path.resolve(root) + path.sep) ? p : null;
}

export interface ExtractResult {
  /** Every file entry's name (wanted or not). */
  names: string[];
  /** The written files, by entry name. */
  written: Map<string, string>;
}

export async function extractArchive(file: string, kind: ArchiveKind, root: string, want: (name: string) => boolean): Promise<ExtractResult> {
  return kind === 'zip' ? extractZip(file, root, want) : extractTgz(file, root, want);
}

async function extractTgz(file: string, root: string, want: (name: string) => boolean): Promise<ExtractResult> {
  const names: string[] = [];
  const written = new Map<string, string>();
  const ex = tar.extract();
  ex.on('entry', (header, stream, next) => {
    const done = (err?: unknown) => (err ? ex.destroy(err as Error) : next());
    if (header.type !== 'file') {
      stream.resume();
      stream.on('end', () => done());
      return;
    }
    names.push(header.name);
    const out = want(header.name) ? confined(root, header.name) : null;
    if (!out) {
      stream.resume();
      stream.on('end', () => done());
      return;
    }
    fs.mkdirSync(path.dirname(out), { recursive: true });
    pipeline(stream, fs.createWriteStream(out)).then(() => {
      written.set(header.name, out);
      done();
    }, done);
  });
  try {
    await pipeline(fs.createReadStream(file), zlib.createGunzip(), ex);
  } catch (err) {
    throw new ArchiveError(`cannot read the .tgz: ${(err as Error).message}`);
  }
  return { names, written };
}

interface ZipEntry {
  name: string;
  method: number;
  compressed: number;
  localOffset: number;
}

async function readAt(fd: fsp.FileHandle, pos: number, len: number): Promise<Buffer> {
  const buf = Buffer.alloc(len);
  const { bytesRead } = await fd.read(buf, 0, len, pos);
  return buf.subarray(0, bytesRead);
}

async function zipEntries(fd: fsp.FileHandle, size: number): Promise<ZipEntry[]> {
  const tailLen = Math.min(size, 65_557);
  const tail = await readAt(fd, size - tailLen, tailLen);
  let eocd = -1;
  for (let i = tail.length - 22; i >= 0; i--) if (tail.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
  if (eocd < 0) throw new ArchiveError('no end of central directory: the .zip is truncated or not a zip');
  let count = tail.readUInt16LE(eocd + 10);
  let cdSize = tail.readUInt32LE(eocd + 12);
  let cdOffset = tail.readUInt32LE(eocd + 16);
  // zip64: the locator sits just before the end record.
  if (eocd >= 20 && tail.readUInt32LE(eocd - 20) === 0x07064b50) {
    const z64 = Number(tail.readBigUInt64LE(eocd - 20 + 8));
    const rec = await readAt(fd, z64, 56);
    if (rec.readUInt32LE(0) === 0x06064b50) {
      count = Number(rec.readBigUInt64LE(32));
      cdSize = Number(rec.readBigUInt64LE(40));
      cdOffset = Number(rec.readBigUInt64LE(48));
    }
  }
  if (cdOffset + cdSize > size) throw new ArchiveError('the central directory lies past the end of the file: the .zip is truncated');
  const cd = await readAt(fd, cdOffset, cdSize);
  const entries: ZipEntry[] = [];
  let p = 0;
  for (let i = 0; i < count && p + 46 <= cd.length; i++) {
    if (cd.readUInt32LE(p) !== 0x02014b50) throw new ArchiveError('damaged central directory');
    const method = cd.readUInt16LE(p + 10);
    let compressed = cd.readUInt32LE(p + 20);
    let uncompressed = cd.readUInt32LE(p + 24);
    const nameLen = cd.readUInt16LE(p + 28);
    const extraLen = cd.readUInt16LE(p + 30);
    const commentLen = cd.readUInt16LE(p + 32);
    let localOffset = cd.readUInt32LE(p + 42);
    const name = cd.subarray(p + 46, p + 46 + nameLen).toString('utf8');
    // zip64 extra field (id 1): the 0xFFFFFFFF sizes and offset, in that order.
    let e = p + 46 + nameLen;
    const end = e + extraLen;
    while (e + 4 <= end) {
      const id = cd.readUInt16LE(e);
      const len = cd.readUInt16LE(e + 2);
      if (id === 1) {
        let q = e + 4;
        if (uncompressed === 0xffffffff) (uncompressed = Number(cd.readBigUInt64LE(q)), (q += 8));
        if (compressed === 0xffffffff) (compressed = Number(cd.readBigUInt64LE(q)), (q += 8));
        if (localOffset === 0xffffffff) localOffset = Number(cd.readBigUInt64LE(q));
      }
      e += 4 + len;
    }
    if (!name.endsWith('/')) entries.push({ name, method, compressed, localOffset });
    p = end + commentLen;
  }
  return entries;
}

async function extractZip(file: string, root: string, want: (name: string) => boolean): Promise<ExtractResult> {
  const fd = await fsp.open(file, 'r');
  const written = new Map<string, string>();
  try {
    const size = (await fd.stat()).size;
    const entries = await zipEntries(fd, size);
    for (const en of entries) {
      if (!want(en.name)) continue;
      const out = confined(root, en.name);
      if (!out) continue;
      const lh = await readAt(fd, en.localOffset, 30);
      if (lh.length < 30 || lh.readUInt32LE(0) !== 0x04034b50) throw new ArchiveError(`${en.name}: damaged entry`);
      const start = en.localOffset + 30 + lh.readUInt16LE(26) + lh.readUInt16LE(28);
      if (start + en.compressed > size) throw new ArchiveError(`${en.name}: the entry runs past the end of the file (truncated .zip)`);
      if (en.method !== 0 && en.method !== 8) throw new ArchiveError(`${en.name}: compression method ${en.method} is not supported`);
      await fsp.mkdir(path.dirname(out), { recursive: true });
      const src = en.compressed ? fs.createReadStream(file, { start, end: start + en.compressed - 1 }) : null;
      if (!src) await fsp.writeFile(out, '');
      else if (en.method === 0) await pipeline(src, fs.createWriteStream(out));
      else await pipeline(src, zlib.createInflateRaw(), fs.createWriteStream(out));
      written.set(en.name, out);
    }
    return { names: entries.map((e) => e.name), written };
  } catch (err) {
    if (err instanceof ArchiveError) throw err;
    throw new ArchiveError(`cannot read the .zip: ${(err as Error).message}`);
  } finally {
    await fd.close();
  }
}
