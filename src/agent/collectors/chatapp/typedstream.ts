/**
 * Decoding of Messages `attributedBody` blobs into the plain message text.
 *
 * Since macOS Ventura many rows have an empty `message.text` and keep the text only in
 * `attributedBody`, an archived NSAttributedString. Two archive formats occur:
 *
 * 1. typedstream (NSArchiver, "streamtyped"): `04 0B "streamtyped" 81 E8 03 ...`. The string content of
 *    the NSString/NSMutableString object is written with the C-string type `+`: the shared type string
 *    `84 01 2B` followed by a length (one byte below 0x80; 0x81 + uint16 LE; 0x82 + uint32 LE) and that
 *    many UTF-8 BYTES. We locate the NSString class declaration, then the `+` marker after it.
 * 2. NSKeyedArchiver binary plist (bplist00): follow `$top.root` through `$objects` to `NSString` /
 *    `NS.string` / `NS.bytes`, then `NS.objects`/`NS.values`, then any plausible string object.
 *
 * Last resort for a recognised archive whose structure we could not follow: the longest printable run
 * that does not look like a class name. Unknown formats and garbage give null. Nothing here throws and
 * every loop is bounded by the blob length.
 */
import { isBplist, parseBplist, PlistUid, type PlistValue } from './bplist.ts';

const STREAMTYPED = new TextEncoder().encode('streamtyped');
const utf8Strict = new TextDecoder('utf-8', { fatal: true });
const utf8Lenient = new TextDecoder('utf-8', { fatal: false });

/** Typedstream tag bytes (signed -128..-110 in Apple's encoder). */
const TAG_INT16 = 0x81;
const TAG_INT32 = 0x82;
const TAG_NEW = 0x84;
const TYPE_CSTRING = 0x2b; // '+'
/** Real attributedBody blobs are a few KB; anything this large is not a message body worth decoding. */
export const MAX_BLOB_BYTES = 32 * 1024 * 1024;

/** Method used to obtain the text, recorded in document metadata (extraction.method). */
export type DecodeMethod = 'typedstream' | 'keyed_archiver' | 'printable_fallback';

export interface DecodeResult {
  text: string;
  method: DecodeMethod;
}

/** Decodes an attributedBody blob to its text, or null when it holds no readable text. */
export function decodeAttributedBody(blob: Uint8Array | null | undefined): string | null {
  return decodeAttributedBodyDetailed(blob)?.text ?? null;
}

export function decodeAttributedBodyDetailed(blob: Uint8Array | null | undefined): DecodeResult | null {
  try {
    if (!blob || blob.length === 0 || blob.length > MAX_BLOB_BYTES) return null;
    if (isTypedstream(blob)) {
      const text = clean(decodeTypedstreamString(blob));
      if (text) return { text, method: 'typedstream' };
      const fb = clean(printableFallback(blob));
      return fb ? { text: fb, method: 'printable_fallback' } : null;
    }
    if (isBplist(blob)) {
      const text = clean(decodeKeyedArchiverString(blob));
      if (text) return { text, method: 'keyed_archiver' };
      const fb = clean(printableFallback(blob));
      return fb ? { text: fb, method: 'printable_fallback' } : null;
    }
    return null;
  } catch {
    // Defensive: the helpers below are written not to throw, but a hostile blob must never escape.
    return null;
  }
}

export function isTypedstream(buf: Uint8Array): boolean {
  // Header: version byte (4 on every macOS), length byte 11, "streamtyped".
  if (buf.length < 2 + STREAMTYPED.length || buf[1] !== STREAMTYPED.length) return false;
  for (let i = 0; i < STREAMTYPED.length; i++) if (buf[2 + i] !== STREAMTYPED[i]) return false;
  return true;
}

/** Strips NULs and the object-replacement placeholders' surrounding whitespace; empty -> null. */
function clean(s: string | null): string | null {
  if (s == null) return null;
  const t = s.replace(/\u0000/g, '').trim();
  return t.length > 0 ? t : null;
}

/** Bounds-checked little cursor over a byte buffer. Reads past the end return null, never throw. */
class Cursor {
  constructor(
    private readonly buf: Uint8Array,
    public pos = 0,
  ) {}

  get remaining(): number {
    return this.buf.length - this.pos;
  }

  u8(): number | null {
    if (this.pos >= this.buf.length) return null;
    return this.buf[this.pos++];
  }

  uintLE(size: 2 | 4): number | null {
    if (this.remaining < size) return null;
    let v = 0;
    for (let i = size - 1; i >= 0; i--) v = v * 256 + this.buf[this.pos + i];
    this.pos += size;
    return v;
  }

  bytes(n: number): Uint8Array | null {
    if (n < 0 || n > this.remaining) return null;
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  /** A typedstream length: one byte < 0x80, or 0x81 + uint16 LE, or 0x82 + uint32 LE. */
  length(): number | null {
    const b = this.u8();
    if (b === null) return null;
    if (b < 0x80) return b;
    if (b === TAG_INT16) return this.uintLE(2);
    if (b === TAG_INT32) return this.uintLE(4);
    return null;
  }
}

function indexOf(buf: Uint8Array, needle: Uint8Array, from = 0): number {
  outer: for (let i = Math.max(0, from); i <= buf.length - needle.length; i++) {
    for (let j = 0; j < needle.length; j++) if (buf[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

const CLASS_MARKERS = ['NSString', 'NSMutableString'].map((name) => {
  const bytes = new TextEncoder().encode(name);
  // A new class name is written as the shared-string tag, its length, then the bytes.
  return Uint8Array.from([TAG_NEW, bytes.length, ...bytes]);
});

/** Reads a `+` C-string payload at `pos` (pointing at the '+' byte); null unless valid UTF-8 in bounds. */
function readCString(buf: Uint8Array, pos: number): string | null {
  const c = new Cursor(buf, pos + 1);
  const len = c.length();
  if (len === null) return null;
  const bytes = c.bytes(len);
  if (!bytes) return null;
  try {
    return utf8Strict.decode(bytes);
  } catch {
    return null;
  }
}

/** Finds the NSString payload of a typedstream NSAttributedString; null when no candidate decodes. */
export function decodeTypedstreamString(buf: Uint8Array): string | null {
  const starts: number[] = [];
  for (const marker of CLASS_MARKERS) {
    const at = indexOf(buf, marker, 2 + STREAMTYPED.length);
    if (at >= 0) starts.push(at + marker.length);
  }
  starts.sort((a, b) => a - b);
  // Preferred: the new shared type string "+" (84 01 2B) after the class declaration.
  // Then: any '+' after the class (Haven's rule). Then: "84 01 2B" anywhere after the header.
  const plusType = Uint8Array.from([TAG_NEW, 0x01, TYPE_CSTRING]);
  for (const start of starts) {
    const at = indexOf(buf, plusType, start);
    if (at >= 0) {
      const s = readCString(buf, at + 2);
      if (s !== null) return s;
    }
  }
  for (const start of starts) {
    // Bounded: the '+' follows the class chain within a few dozen bytes.
    const limit = Math.min(buf.length, start + 64);
    for (let i = start; i < limit; i++) {
      if (buf[i] !== TYPE_CSTRING) continue;
      const s = readCString(buf, i);
      if (s !== null) return s;
    }
  }
  const at = indexOf(buf, plusType, 2 + STREAMTYPED.length);
  if (at >= 0) return readCString(buf, at + 2);
  return null;
}

const MAX_RESOLVE_DEPTH = 12;

/** Follows an NSKeyedArchiver archive to its string; null when it is not a keyed archive with text. */
export function decodeKeyedArchiverString(buf: Uint8Array): string | null {
  const top = parseBplist(buf);
  if (!isDict(top)) return null;
  const objects = top['$objects'];
  if (!Array.isArray(objects)) return null;
  const resolve = (v: PlistValue | undefined): PlistValue | undefined =>
    v instanceof PlistUid ? (v.uid < objects.length ? objects[v.uid] : undefined) : v;

  const seen = new Set<PlistValue>();
  const textOf = (v: PlistValue | undefined, depth: number): string | null => {
    const o = resolve(v);
    if (o === undefined || o === null || depth > MAX_RESOLVE_DEPTH) return null;
    if (typeof o === 'string') return o === '$null' ? null : o;
    if (o instanceof Uint8Array) {
      try {
        return utf8Strict.decode(o);
      } catch {
        return null;
      }
    }
    if (typeof o !== 'object' || seen.has(o)) return null;
    seen.add(o);
    if (isDict(o)) {
      for (const key of ['NSString', 'NS.string', 'NS.bytes']) {
        if (key in o) {
          const s = textOf(o[key], depth + 1);
          if (s) return s;
        }
      }
      for (const key of ['NS.objects', 'NS.values']) {
        const arr = resolve(o[key]);
        if (Array.isArray(arr)) {
          for (const item of arr) {
            const s = textOf(item, depth + 1);
            if (s) return s;
          }
        }
      }
    }
    return null;
  };

  const topDict = top['$top'];
  if (isDict(topDict)) {
    const root = 'root' in topDict ? topDict['root'] : Object.values(topDict)[0];
    const s = textOf(root, 0);
    if (s) return s;
  }
  // Fall back to the longest string object that is not archiver bookkeeping.
  let best: string | null = null;
  for (const o of objects) {
    if (typeof o === 'string' && !looksLikeClassName(o) && (best === null || o.length > best.length)) best = o;
  }
  return best;
}

function isDict(v: PlistValue | undefined): v is { [key: string]: PlistValue } {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) &&
    !(v instanceof PlistUid) && !(v instanceof Date);
}

function looksLikeClassName(s: string): boolean {
  return (
    s === '$null' ||
    /^(NS|__k)[A-Za-z0-9_.]*$/.test(s) ||
    /^\$[A-Za-z]+$/.test(s) ||
    s === 'streamtyped' ||
    s.startsWith('bplist') ||
    /^(IM|__k)[A-Za-z]*AttributeName$/.test(s)
  );
}

/**
 * Longest printable run of the blob read as UTF-8, ignoring class names. Used only for blobs that carry
 * a recognised archive header, so random bytes do not become "text".
 */
export function printableFallback(buf: Uint8Array): string | null {
  const text = utf8Lenient.decode(buf);
  let best: string | null = null;
  // Split on control characters and the replacement character produced by invalid bytes.
  for (const run of text.split(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\ufffd]+/)) {
    const t = run.trim();
    let t2 = t;
    // In a typedstream the text follows '+' and a length byte that may itself be printable.
    if (t2.startsWith('+') && t2.length > 2) t2 = t2.slice(2).trim();
    if (t2.length < 2 || looksLikeClassName(t2)) continue;
    // Type-encoding strings such as "iI" or "@" are bookkeeping too.
    if (t2.length <= 4 && /^[@#:*+^\[\]{}()iIcCsSlLqQfdBv]+$/.test(t2)) continue;
    // A run that is a class name followed by a stray byte (e.g. "NSObject\u0085") is still bookkeeping.
    if (/^(NS|__k)\w+$/.test(t2.replace(/[^\w]/g, ''))) continue;
    if (!/[\p{L}\p{N}\p{So}]/u.test(t2)) continue;
    if (best === null || t2.length > best.length) best = t2;
  }
  return best;
}
