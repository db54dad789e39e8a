/**
 * A small reader of zip archives (PKWARE APPNOTE: end of central directory, central directory, local headers;
 * methods stored and deflate), enough for chat exports with their media. A truncated or damaged archive throws a
 * ZipError that says what is wrong; nothing is read past the file's end. Zip64 archives are refused by name.
 */
import fs from 'node:fs';
import zlib from 'node:zlib';
import { codedError } from '../../util/errors.ts';

export class ZipError extends codedError('IMPORT.BAD_ARCHIVE') {
  override name = 'ZipError';
}

export interface ZipEntry {
  name: string;
  method: number;
  compressedSize: number;
  size: number;
  crc32: number;
  localOffset: number;
  /** DOS date/time of the entry as a local wall-clock time, or null. */
  modified: { y: number; mo: number; d: number; h: number; mi: number; s: number } | null;
}

const EOCD_SIG = 0x06054b50;
const CEN_SIG = 0x02014b50;
const LOC_SIG = 0x04034b50;

/** True when the bytes start like a zip archive (a local file header, or the end record of an empty one). */
export function looksLikeZip(head: Buffer): boolean {
  return head.length >= 4 && (head.readUInt32LE(0) === LOC_SIG || head.readUInt32LE(0) === EOCD_SIG);
}

export class ZipReader {
  readonly entries: ZipEntry[] = [];
  private constructor(private readonly fd: number, private readonly size: number) {}

  static open(file: string): ZipReader {
    const fd = fs.openSync(file, 'r');
    try {
      const z = new ZipReader(fd, fs.fstatSync(fd).size);
      z.readDirectory();
      return z;
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }

  close(): void {
    fs.closeSync(this.fd);
  }

  private read(pos: number, len: number): Buffer {
    if (pos < 0 || pos + len > this.size) throw new ZipError('the archive is truncated (an entry runs past its end)');
    const buf = Buffer.alloc(len);
    fs.readSync(this.fd, buf, 0, len, pos);
    return buf;
  }

  private readDirectory(): void {
    const tailLen = Math.min(this.size, 22 + 65_535);
    const tail = this.read(this.size - tailLen, tailLen);
    let at = -1;
    for (let i = tail.length - 22; i >= 0; i--) if (tail.readUInt32LE(i) === EOCD_SIG) { at = i; break; }
    if (at < 0) throw new ZipError('the archive is truncated or not a zip (no end of central directory record)');
    const count = tail.readUInt16LE(at + 10);
    const cdSize = tail.readUInt32LE(at + 12);
    const cdOffset = tail.readUInt32LE(at + 16);
    if (count === 0xffff || cdOffset === 0xffffffff) throw new ZipError('Zip64 archives are not supported');
    const cd = this.read(cdOffset, cdSize);
    let p = 0;
    for (let n = 0; n < count; n++) {
      if (p + 46 > cd.length || cd.readUInt32LE(p) !== CEN_SIG) throw new ZipError('the central directory is damaged');
      const method = cd.readUInt16LE(p + 10);
      const time = cd.readUInt16LE(p + 12);
      const date = cd.readUInt16LE(p + 14);
      const nameLen = cd.readUInt16LE(p + 28);
      const extraLen = cd.readUInt16LE(p + 30);
      const commentLen = cd.readUInt16LE(p + 32);
      const name = cd.subarray(p + 46, p + 46 + nameLen).toString('utf8');
      this.entries.push({
        name,
        method,
        crc32: cd.readUInt32LE(p + 16),
        compressedSize: cd.readUInt32LE(p + 20),
        size: cd.readUInt32LE(p + 24),
        localOffset: cd.readUInt32LE(p + 42),
        modified: date
          ? { y: 1980 + (date >> 9), mo: (date >> 5) & 15, d: date & 31, h: time >> 11, mi: (time >> 5) & 63, s: (time & 31) * 2 }
          : null,
      });
      p += 46 + nameLen + extraLen + commentLen;
    }
  }

  /** The bytes of an entry, at most `maxBytes` (a larger entry throws). */
  readEntry(e: ZipEntry, maxBytes = 512 * 1024 * 1024): Buffer {
    if (e.size > maxBytes) throw new ZipError(`${e.name} is larger than ${maxBytes} bytes`);
    const loc = this.read(e.localOffset, 30);
    if (loc.readUInt32LE(0) !== LOC_SIG) throw new ZipError(`${e.name}: damaged local header`);
    const start = e.localOffset + 30 + loc.readUInt16LE(26) + loc.readUInt16LE(28);
    const raw = this.read(start, e.compressedSize);
    let data: Buffer;
    if (e.method === 0) data = raw;
    else if (e.method === 8) {
      try {
        data = zlib.inflateRawSync(raw, { maxOutputLength: Math.max(1, maxBytes) });
      } catch (err) {
        throw new ZipError(`${e.name}: damaged compressed data (${(err as Error).message})`);
      }
    } else throw new ZipError(`${e.name}: compression method ${e.method} is not supported`);
    if (data.length !== e.size || zlib.crc32(data) >>> 0 !== e.crc32 >>> 0) throw new ZipError(`${e.name}: damaged (size or CRC does not match)`);
    return data;
  }
}

/** A zip archive of the given files (deflated unless `store`), for tests and the bench's generated exports. */
export function buildZip(files: { name: string; data: Buffer | string; store?: boolean }[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const f of files) {
    const data = typeof f.data === 'string' ? Buffer.from(f.data, 'utf8') : f.data;
    const packed = f.store ? data : zlib.deflateRawSync(data);
    const name = Buffer.from(f.name, 'utf8');
    const crc = zlib.crc32(data) >>> 0;
    const method = f.store ? 0 : 8;
    const loc = Buffer.alloc(30);
    loc.writeUInt32LE(LOC_SIG, 0);
    loc.writeUInt16LE(20, 4);
    loc.writeUInt16LE(0x0800, 6); // UTF-8 names
    loc.writeUInt16LE(method, 8);
    loc.writeUInt16LE(0, 10);
    loc.writeUInt16LE((2023 - 1980) << 9 | 3 << 5 | 12, 12);
    loc.writeUInt32LE(crc, 14);
    loc.writeUInt32LE(packed.length, 18);
    loc.writeUInt32LE(data.length, 22);
    loc.writeUInt16LE(name.length, 26);
    loc.writeUInt16LE(0, 28);
    const cen = Buffer.alloc(46);
    cen.writeUInt32LE(CEN_SIG, 0);
    cen.writeUInt16LE(20, 4);
    cen.writeUInt16LE(20, 6);
    cen.writeUInt16LE(0x0800, 8);
    cen.writeUInt16LE(method, 10);
    cen.writeUInt16LE(0, 12);
    cen.writeUInt16LE((2023 - 1980) << 9 | 3 << 5 | 12, 14);
    cen.writeUInt32LE(crc, 16);
    cen.writeUInt32LE(packed.length, 20);
    cen.writeUInt32LE(data.length, 24);
    cen.writeUInt16LE(name.length, 28);
    cen.writeUInt32LE(offset, 42);
    locals.push(loc, name, packed);
    centrals.push(cen, name);
    offset += loc.length + name.length + packed.length;
  }
  const cd = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(EOCD_SIG, 0);
  end.writeUInt16LE(files.length, 8);
  end.writeUInt16LE(files.length, 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, end]);
}
