/**
 * A small, defensive reader for Apple binary property lists ("bplist00").
 *
 * Why hand-written: the `plist` package only reads XML plists, and `bplist-parser` decodes eagerly and
 * recursively without memoisation, so a hostile blob whose containers share children (a DAG) costs
 * exponential time and a self-referencing array overflows the stack. Messages stores NSKeyedArchiver
 * archives (attributedBody on some systems, message_summary_info) in this format, and we read them from
 * a database we do not control. This reader decodes each object at most once, detects cycles, caps the
 * number of objects and the nesting depth, and checks every offset against the buffer. It never throws:
 * `parseBplist` returns null for anything it cannot read.
 */
import { codedError } from '../../../util/errors.ts';

/** A UID reference (NSKeyedArchiver uses these to point into `$objects`). */
export class PlistUid {
  constructor(readonly uid: number) {}
}

export type PlistValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Date
  | Uint8Array
  | PlistUid
  | PlistValue[]
  | { [key: string]: PlistValue };

const MAGIC = 'bplist00';
/** Limits keep a hostile archive from costing more than a few milliseconds. */
const MAX_OBJECTS = 200_000;
const MAX_DEPTH = 64;
/** 2001-01-01T00:00:00Z in ms since the Unix epoch. */
const APPLE_EPOCH_MS = 978_307_200_000;

class BplistError extends codedError('AGENT.BPLIST') {}

/** Parses a bplist00 buffer; returns the top object or null when the buffer is not a readable bplist. */
export function parseBplist(buf: Uint8Array): PlistValue | null {
  try {
    return new BplistReader(buf).top();
  } catch {
    return null;
  }
}

export function isBplist(buf: Uint8Array | null | undefined): boolean {
  if (!buf || buf.length < MAGIC.length + 32) return false;
  for (let i = 0; i < MAGIC.length; i++) if (buf[i] !== MAGIC.charCodeAt(i)) return false;
  return true;
}

class BplistReader {
  private readonly view: DataView;
  private readonly offsetSize: number;
  private readonly refSize: number;
  private readonly numObjects: number;
  private readonly topObject: number;
  private readonly offsetTable: number;
  private readonly cache = new Map<number, PlistValue>();
  private readonly inProgress = new Set<number>();

  constructor(private readonly buf: Uint8Array) {
    if (!isBplist(buf)) throw new BplistError('not a bplist00');
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const t = buf.length - 32;
    this.offsetSize = buf[t + 6];
    this.refSize = buf[t + 7];
    this.numObjects = this.safeInt(this.view.getBigUint64(t + 8));
    this.topObject = this.safeInt(this.view.getBigUint64(t + 16));
    this.offsetTable = this.safeInt(this.view.getBigUint64(t + 24));
    if (![1, 2, 4, 8].includes(this.offsetSize) || ![1, 2, 4, 8].includes(this.refSize)) {
      throw new BplistError('bad trailer sizes');
    }
    if (this.numObjects < 1 || this.numObjects > MAX_OBJECTS) throw new BplistError('bad object count');
    if (this.topObject >= this.numObjects) throw new BplistError('bad top object');
    if (this.offsetTable < MAGIC.length || this.offsetTable + this.numObjects * this.offsetSize > t) {
      throw new BplistError('offset table out of bounds');
    }
  }

  top(): PlistValue {
    return this.object(this.topObject, 0);
  }

  private safeInt(v: bigint): number {
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new BplistError('integer too large');
    return Number(v);
  }

  /** Reads an unsigned big-endian integer of `size` bytes at `pos` (bounds-checked). */
  private uint(pos: number, size: number): number {
    if (pos < 0 || pos + size > this.buf.length) throw new BplistError('read out of bounds');
    switch (size) {
      case 1:
        return this.buf[pos];
      case 2:
        return this.view.getUint16(pos);
      case 4:
        return this.view.getUint32(pos);
      case 8:
        return this.safeInt(this.view.getBigUint64(pos));
      default:
        throw new BplistError('bad integer size');
    }
  }

  private ref(pos: number): number {
    const r = this.uint(pos, this.refSize);
    if (r >= this.numObjects) throw new BplistError('object reference out of range');
    return r;
  }

  private object(index: number, depth: number): PlistValue {
    const cached = this.cache.get(index);
    if (cached !== undefined) return cached;
    // A cycle or an over-deep structure reads as null instead of recursing forever.
    if (this.inProgress.has(index) || depth > MAX_DEPTH) return null;
    this.inProgress.add(index);
    try {
      const value = this.decode(index, depth);
      this.cache.set(index, value);
      return value;
    } finally {
      this.inProgress.delete(index);
    }
  }

  /** Length of a variable-size object: low nibble, or 0xF followed by an int object. Returns [len, dataStart]. */
  private length(pos: number, nibble: number): [number, number] {
    if (nibble !== 0x0f) return [nibble, pos + 1];
    const marker = this.uint(pos + 1, 1);
    if (marker >> 4 !== 0x1) throw new BplistError('bad length marker');
    const size = 1 << (marker & 0x0f);
    if (size > 8) throw new BplistError('length too large');
    return [this.uint(pos + 2, size), pos + 2 + size];
  }

  private bytes(start: number, len: number): Uint8Array {
    if (len < 0 || start + len > this.buf.length) throw new BplistError('data out of bounds');
    return this.buf.subarray(start, start + len);
  }

  private decode(index: number, depth: number): PlistValue {
    const pos = this.uint(this.offsetTable + index * this.offsetSize, this.offsetSize);
    const marker = this.uint(pos, 1);
    const type = marker >> 4;
    const nib = marker & 0x0f;
    switch (type) {
      case 0x0:
        if (marker === 0x08) return false;
        if (marker === 0x09) return true;
        return null;
      case 0x1: {
        const size = 1 << nib;
        if (size === 8) {
          const v = this.view.getBigInt64(this.checked(pos + 1, 8));
          return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
        }
        if (size === 16) {
          // 128-bit integers: keep the low 64 bits (Apple only writes these for unsigned 64-bit values).
          return this.view.getBigUint64(this.checked(pos + 9, 8));
        }
        return this.uint(pos + 1, size);
      }
      case 0x2:
        if (nib === 2) return this.view.getFloat32(this.checked(pos + 1, 4));
        if (nib === 3) return this.view.getFloat64(this.checked(pos + 1, 8));
        throw new BplistError('bad real size');
      case 0x3:
        if (marker !== 0x33) throw new BplistError('bad date');
        return new Date(APPLE_EPOCH_MS + this.view.getFloat64(this.checked(pos + 1, 8)) * 1000);
      case 0x4: {
        const [len, start] = this.length(pos, nib);
        return this.bytes(start, len);
      }
      case 0x5: {
        const [len, start] = this.length(pos, nib);
        return new TextDecoder('latin1').decode(this.bytes(start, len));
      }
      case 0x6: {
        const [len, start] = this.length(pos, nib);
        const b = this.bytes(start, len * 2);
        let s = '';
        for (let i = 0; i < len; i++) s += String.fromCharCode((b[i * 2] << 8) | b[i * 2 + 1]);
        return s;
      }
      case 0x8:
        // UIDs are nib+1 bytes; Apple writes 1, 2, 4 or 8.
        return new PlistUid(this.uint(pos + 1, nib + 1));
      case 0xa:
      case 0xc: {
        const [len, start] = this.length(pos, nib);
        this.bytes(start, len * this.refSize);
        const out: PlistValue[] = [];
        for (let i = 0; i < len; i++) out.push(this.object(this.ref(start + i * this.refSize), depth + 1));
        return out;
      }
      case 0xd: {
        const [len, start] = this.length(pos, nib);
        this.bytes(start, len * 2 * this.refSize);
        const out: { [key: string]: PlistValue } = Object.create(null);
        for (let i = 0; i < len; i++) {
          const key = this.object(this.ref(start + i * this.refSize), depth + 1);
          if (typeof key !== 'string') continue;
          out[key] = this.object(this.ref(start + (len + i) * this.refSize), depth + 1);
        }
        return out;
      }
      default:
        throw new BplistError(`unknown object type 0x${type.toString(16)}`);
    }
  }

  private checked(pos: number, len: number): number {
    if (pos < 0 || pos + len > this.buf.length) throw new BplistError('read out of bounds');
    return pos;
  }
}
