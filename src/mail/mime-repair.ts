/**
 * Repairs applied to a message's bytes before the MIME parser (postal-mime, message.ts) reads it, for
 * mail that real clients write and the parser (with the runtime's TextDecoder) gets wrong:
 *
 * - Boundary delimiters followed by spaces or tabs. RFC 2046 §5.1.1 allows this "transport padding";
 *   mailparser's splitter did not see such a delimiter and lost every part after it. The padding is removed.
 * - Raw 8-bit bytes inside a Q encoded word (`=?iso-8859-1?Q?Fr<0xF6>sche?=`, written by broken
 *   mailers). They would be read as UTF-8 (U+FFFD); they are escaped as `=F6`, so the word's own charset
 *   decodes them, as mutt does.
 * - Charsets TextDecoder cannot read: UTF-7 (Outlook Express and old Exchange; refused on purpose by
 *   mail libraries because it can hide markup from HTML filters — memex only indexes text), DOS code pages
 *   (cp437, cp850…) and the rest of what iconv-lite knows and TextDecoder does not; and windows-1252 text
 *   with bytes 0x80–0x9F (curly quotes, €, dashes), which Node 20's TextDecoder reads as Latin-1 control
 *   characters. ISO-8859-1 and US-ASCII labels are windows-1252 to TextDecoder (WHATWG), as they were to
 *   mailparser. Encoded words and text parts in those charsets are decoded here with iconv-lite and written
 *   back as UTF-8.
 * - A multi-byte character split across two base64 encoded words whose first one is padded: the words are
 *   joined byte-wise into one (postal-mime only joins unpadded words; mailparser joined these too).
 * - Raw 8-bit header bytes that are not UTF-8 (old mbox files, broken mailers): read as windows-1252 and
 *   written as UTF-8, as mutt and notmuch fall back; both parsers would have shown U+FFFD.
 * - Trailing blanks on quoted-printable lines, which RFC 2045 §6.7 (3) says transport added: deleted, as
 *   mailparser did (postal-mime keeps them).
 * - Attachments in 7bit, 8bit, binary or quoted-printable: postal-mime reads a message line by line and
 *   gives such a part back with LF line ends and a final line break of its own, so its bytes (and SHA-256)
 *   would not be what the message carries. Their bytes are written as base64, exactly as they stand.
 */
import { isUtf8 } from 'node:buffer';
import iconv from 'iconv-lite';
import { headerParam, leafHeaderLines, mimeLeaves, replaceLeaves, type LeafReplacement, type MimeLeaf } from './mime-structure.ts';

const UTF7_NAMES = /^(?:utf-7|utf7|unicode-1-1-utf-7|x-unicode-2-0-utf-7|csunicode11utf7)$/i;
/** Node 20's TextDecoder reads windows-1252's 0x80–0x9F as C1 controls (fixed in later Node versions). */
const CP1252_MISREAD = new TextDecoder('windows-1252').decode(Uint8Array.of(0x80)) !== '\u20ac';
const C1_BYTES = /[\x80-\x9f]/;

type CharsetFix = 'utf7' | 'cp1252' | { iconv: string } | null;
const charsetFixes = new Map<string, CharsetFix>();

/** What a charset label needs before the parser's TextDecoder can read it (null: nothing). */
function charsetFix(charset: string): CharsetFix {
  const label = charset.trim().toLowerCase().replace(/\*.*$/, '');
  let fix = charsetFixes.get(label);
  if (fix !== undefined) return fix;
  fix = null;
  if (UTF7_NAMES.test(label)) fix = 'utf7';
  else if (label) {
    let encoding: string | null;
    try {
      encoding = new TextDecoder(label).encoding;
    } catch {
      encoding = null;
    }
    if (encoding === null) fix = iconv.encodingExists(label) ? { iconv: label } : null;
    else if (encoding === 'windows-1252' && CP1252_MISREAD) fix = 'cp1252';
  }
  if (charsetFixes.size < 1000) charsetFixes.set(label, fix);
  return fix;
}

/** `bytes` in `charset` as text, when the parser would misread them; null when it reads them right. */
function transcoded(bytes: Buffer, charset: string): string | null {
  const fix = charsetFix(charset);
  if (fix === null) return null;
  if (fix === 'utf7') return iconv.decode(bytes, 'utf7');
  if (fix === 'cp1252') return C1_BYTES.test(bytes.toString('latin1')) ? iconv.decode(bytes, 'windows-1252') : null;
  return iconv.decode(bytes, fix.iconv);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Removes transport padding after the boundary delimiters the message declares. */
export function stripBoundaryPadding(s: string): string {
  if (!/^--[^\r\n]*?[ \t]+\r?$/m.test(s)) return s;
  const boundaries = new Set<string>();
  for (const m of s.matchAll(/boundary\s*=\s*(?:"([^"\r\n]+)"|([^;\s"]+))/gi)) boundaries.add(m[1] ?? m[2]);
  let out = s;
  for (const b of boundaries) {
    out = out.replace(new RegExp(`^(--${escapeRegExp(b)}(?:--)?)[ \\t]+(?=\\r?$)`, 'gm'), '$1');
  }
  return out;
}

function decodeUtf7(text: string): string {
  return iconv.decode(Buffer.from(text, 'latin1'), 'utf7');
}

function wordBytes(enc: string, text: string): Buffer {
  return /^q$/i.test(enc)
    ? Buffer.from(text.replace(/_/g, ' ').replace(/=([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16))), 'latin1')
    : Buffer.from(text, 'base64');
}

const utf8Word = (text: string) => `=?UTF-8?B?${Buffer.from(text, 'utf8').toString('base64')}?=`;

/** One encoded word rewritten: 8-bit bytes in a Q word escaped; words in a charset the parser misreads as UTF-8. */
function repairEncodedWord(word: string, charset: string, enc: string, text: string): string {
  if (charsetFix(charset) !== null) {
    const decoded = transcoded(wordBytes(enc, text), charset);
    if (decoded !== null) return utf8Word(decoded);
  }
  if (/^q$/i.test(enc) && /[\x80-\xff]/.test(text)) {
    return `=?${charset}?${enc}?${text.replace(/[\x80-\xff]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}?=`;
  }
  return word;
}

/** A padded base64 word followed by another word of the same charset: the case postal-mime does not join. */
const SPLIT_B_WORDS = /=\?([^?\s]+)\?[bB]\?[^?]*=\?=(?:[ \t]|\r?\n[ \t])+=\?\1\?[bB]\?/i;

/** Runs of base64 words of one charset joined byte-wise into one word (a character may be split between them). */
function joinSplitWords(block: string): string {
  return block.replace(/=\?([^?\s]+)\?[bB]\?[^?]*\?=(?:(?:[ \t]|\r?\n[ \t])+=\?\1\?[bB]\?[^?]*\?=)+/gi, (run, charset: string) => {
    const bytes = Buffer.concat([...run.matchAll(/=\?[^?\s]+\?[bB]\?([^?]*)\?=/g)].map((m) => Buffer.from(m[1], 'base64')));
    return `=?${charset}?B?${bytes.toString('base64')}?=`;
  });
}

/** Raw 8-bit bytes of a header block's lines read as windows-1252 where a line is not UTF-8 (latin1 text in and out). */
function rawHeaderBytes(block: string): string {
  if (!/[\x80-\xff]/.test(block)) return block;
  return block.replace(/[^\r\n]*[\x80-\xff][^\r\n]*/g, (line) => {
    const bytes = Buffer.from(line, 'latin1');
    return isUtf8(bytes) ? line : Buffer.from(iconv.decode(bytes, 'windows-1252'), 'utf8').toString('latin1');
  });
}

/** Repairs the encoded words and raw 8-bit bytes of a header block (latin1 text). */
export function repairHeaderBlock(block: string, opts: { utf7Charset?: boolean } = {}): string {
  let out = SPLIT_B_WORDS.test(block) ? joinSplitWords(block) : block;
  out = out.replace(/=\?([^?\s]+)\?([qQbB])\?([^?]*)\?=/g, (word, cs: string, enc: string, text: string) => repairEncodedWord(word, cs, enc, text));
  // A message whose own charset is UTF-7 may carry UTF-7 in its Subject without encoded words.
  if (opts.utf7Charset) {
    out = out.replace(/^(subject:)([^\r\n]*(?:\r?\n[ \t][^\r\n]*)*)/im, (_m, name: string, value: string) =>
      /\+[A-Za-z0-9+/]+-?/.test(value) && !/=\?/.test(value) ? `${name}${utf8Word(decodeUtf7(value.trim()))}` : _m,
    );
  }
  return rawHeaderBytes(out);
}

function transferDecode(body: string, encoding: string | undefined): Buffer {
  const enc = (encoding ?? '').trim().toLowerCase();
  if (enc === 'base64') return Buffer.from(body.replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
  if (enc === 'quoted-printable') {
    const bytes = body.replace(/=\r?\n/g, '').replace(/=([0-9a-fA-F]{2})/g, (_m, h: string) => String.fromCharCode(parseInt(h, 16)));
    return Buffer.from(bytes, 'latin1');
  }
  return Buffer.from(body, 'latin1');
}

const PASS_THROUGH_ENCODINGS = /^(?:|7bit|8bit|binary|quoted-printable)$/;

function mimeType(leaf: MimeLeaf): string {
  return (leaf.headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
}

/** Text parts in a charset the parser misreads, decoded and rewritten as UTF-8 (base64). */
function transcodedParts(s: string, leaves: MimeLeaf[]): LeafReplacement[] {
  const out: LeafReplacement[] = [];
  for (const leaf of leaves) {
    const ct = leaf.headers.get('content-type') ?? '';
    const charset = headerParam(ct, 'charset');
    if (!charset || charsetFix(charset) === null || !/^\s*text\//i.test(ct)) continue;
    const decoded = transcoded(transferDecode(s.slice(leaf.bodyStart, leaf.end), leaf.headers.get('content-transfer-encoding')), charset);
    if (decoded === null) continue;
    const headerLines = leafHeaderLines(s, leaf).map((l) =>
      /^content-type\s*:/i.test(l) ? l.replace(/(charset\s*=\s*)("?)[^";\s]+\2/i, '$1"utf-8"') : l,
    );
    out.push({ leaf, headerLines, content: Buffer.from(decoded, 'utf8') });
  }
  return out;
}

/** Parts the parser lists as attachments whose bytes are not base64: rewritten as base64, bytes as they stand. */
function passThroughAttachments(s: string, leaves: MimeLeaf[], skip: Set<MimeLeaf>): LeafReplacement[] {
  const out: LeafReplacement[] = [];
  for (const leaf of leaves) {
    // The message itself (a single-part message) keeps its header block as it is.
    if (leaf.headerStart === 0 || skip.has(leaf) || leaf.end <= leaf.bodyStart) continue;
    const type = mimeType(leaf);
    const attached = /^attachment\b/i.test((leaf.headers.get('content-disposition') ?? '').trim());
    if ((type === 'text/plain' || type === 'text/html' || type === '') && !attached) continue;
    if (type.startsWith('multipart/')) continue;
    const cte = (leaf.headers.get('content-transfer-encoding') ?? '').trim().toLowerCase();
    if (!PASS_THROUGH_ENCODINGS.test(cte)) continue;
    out.push({ leaf, headerLines: leafHeaderLines(s, leaf), content: transferDecode(s.slice(leaf.bodyStart, leaf.end), cte) });
  }
  return out;
}

/** Header block ends (index of the blank line) for the message and every part. */
function headerBlocks(s: string, leaves: MimeLeaf[]): [number, number][] {
  const topEnd = /\r?\n\r?\n/.exec(s)?.index ?? s.length;
  return [[0, topEnd] as [number, number], ...leaves.map((l) => [l.headerStart, l.bodyStart] as [number, number])].sort((a, b) => a[0] - b[0]);
}

/**
 * Quoted-printable bodies without the trailing blanks of their lines: RFC 2045 §6.7 (3) says such blanks
 * were added in transport and must be deleted (a real one is written `=20`); mailparser did, postal-mime
 * does not.
 */
function stripQpPadding(s: string, leaves: MimeLeaf[]): string {
  let out = s;
  for (const leaf of [...leaves].reverse()) {
    if ((leaf.headers.get('content-transfer-encoding') ?? '').trim().toLowerCase() !== 'quoted-printable') continue;
    const body = out.slice(leaf.bodyStart, leaf.end);
    const stripped = body.replace(/[ \t]+(?=\r?\n|$)/g, '');
    if (stripped !== body) out = out.slice(0, leaf.bodyStart) + stripped + out.slice(leaf.end);
  }
  return out;
}

const ATTACHMENT_HINT = /^content-(?:disposition:[ \t]*attachment|type:[ \t]*(?!text\/(?:plain|html)\b|multipart\/))/im;

function anyCharsetNeedsFix(s: string, re: RegExp): boolean {
  for (const m of s.matchAll(re)) if (charsetFix(m[1]) !== null) return true;
  return false;
}

/** The message with the repairs above applied; the same Buffer when none was needed. */
export function repairMime(message: Buffer): Buffer {
  let s = message.toString('latin1');
  let changed = false;
  const padded = stripBoundaryPadding(s);
  if (padded !== s) {
    s = padded;
    changed = true;
  }
  const topEnd = /\r?\n\r?\n/.exec(s)?.index ?? s.length;
  const utf7 = /charset\s*=\s*"?(?:unicode-1-1-|x-unicode-2-0-)?utf-?7/i.test(s) || /=\?(?:unicode-1-1-)?utf-?7\?/i.test(s);
  const headerFix =
    utf7 ||
    /=\?[^?\s]+\?[qQ]\?[^?]*[\x80-\xff]/.test(s) ||
    SPLIT_B_WORDS.test(s) ||
    /[\x80-\xff]/.test(s.slice(0, topEnd)) ||
    anyCharsetNeedsFix(s, /=\?([^?\s]+)\?[qQbB]\?/g);
  const bodyFix = utf7 || ATTACHMENT_HINT.test(s) || anyCharsetNeedsFix(s, /charset\s*=\s*"?([^"\s;]+)/gi);
  const qpFix = /quoted-printable/i.test(s) && /[ \t]\r?\n/.test(s.slice(topEnd));
  if (!headerFix && !bodyFix && !qpFix) return changed ? Buffer.from(s, 'latin1') : message;
  let leaves = mimeLeaves(s);
  if (qpFix) {
    const stripped = stripQpPadding(s, leaves);
    if (stripped !== s) {
      s = stripped;
      changed = true;
      leaves = mimeLeaves(s);
    }
  }
  if (headerFix) {
    // Header blocks: the message's and every part's.
    const topType = /^content-type:([^\r\n]*(?:\r?\n[ \t][^\r\n]*)*)/im.exec(s.slice(0, leaves[0]?.bodyStart ?? s.length))?.[1] ?? '';
    const utf7Charset = UTF7_NAMES.test(headerParam(topType.replace(/\r?\n[ \t]+/g, ' '), 'charset') ?? '');
    let rebuilt = '';
    let at = 0;
    for (const [start, end] of headerBlocks(s, leaves)) {
      if (start < at) continue;
      rebuilt += s.slice(at, start) + repairHeaderBlock(s.slice(start, end), { utf7Charset: utf7Charset && start === 0 });
      at = end;
    }
    rebuilt += s.slice(at);
    if (rebuilt !== s) {
      s = rebuilt;
      changed = true;
      if (bodyFix) leaves = mimeLeaves(s);
    }
  }
  if (bodyFix) {
    const text = transcodedParts(s, leaves);
    const replacements = [...text, ...passThroughAttachments(s, leaves, new Set(text.map((r) => r.leaf)))];
    if (replacements.length) return replaceLeaves(Buffer.from(s, 'latin1'), s, replacements);
  }
  return changed ? Buffer.from(s, 'latin1') : message;
}
