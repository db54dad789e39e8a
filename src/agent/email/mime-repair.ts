/**
 * Repairs applied to a message's bytes before mailparser reads it, for mail that real clients write
 * and mailparser (with its libraries) gets wrong:
 *
 * - Boundary delimiters followed by spaces or tabs. RFC 2046 §5.1.1 allows this "transport padding";
 *   mailsplit then does not see the delimiter and every part after it is lost. The padding is removed.
 * - Raw 8-bit bytes inside a Q encoded word (`=?iso-8859-1?Q?Fr<0xF6>sche?=`, written by broken
 *   mailers). They would be read as UTF-8 (U+FFFD); they are escaped as `=F6`, so the word's own charset
 *   decodes them, as mutt does.
 * - UTF-7 (Outlook Express and old Exchange). libmime refuses it on purpose (UTF-7 can hide markup from
 *   HTML filters); memex only indexes text, so encoded words and text parts in UTF-7 are decoded here and
 *   written back as UTF-8.
 */
import iconv from 'iconv-lite';
import { headerParam, leafHeaderLines, mimeLeaves, replaceLeaves, type LeafReplacement } from './mime-structure.ts';

const UTF7_NAMES = /^(?:utf-7|utf7|unicode-1-1-utf-7|x-unicode-2-0-utf-7|csunicode11utf7)$/i;

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

/** One encoded word rewritten: 8-bit bytes in a Q word escaped, UTF-7 words re-encoded as UTF-8. */
function repairEncodedWord(word: string, charset: string, enc: string, text: string): string {
  if (UTF7_NAMES.test(charset.replace(/\*.*$/, ''))) {
    const raw = /^q$/i.test(enc)
      ? text.replace(/_/g, ' ').replace(/=([0-9a-f]{2})/gi, (_m, h: string) => String.fromCharCode(parseInt(h, 16)))
      : Buffer.from(text, 'base64').toString('latin1');
    return `=?UTF-8?B?${Buffer.from(decodeUtf7(raw), 'utf8').toString('base64')}?=`;
  }
  if (/^q$/i.test(enc) && /[\x80-\xff]/.test(text)) {
    return `=?${charset}?${enc}?${text.replace(/[\x80-\xff]/g, (c) => `=${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`)}?=`;
  }
  return word;
}

/** Repairs the encoded words of a header block (latin1 text). */
export function repairHeaderBlock(block: string, opts: { utf7Charset?: boolean } = {}): string {
  let out = block.replace(/=\?([^?\s]+)\?([qQbB])\?([^?]*)\?=/g, (word, cs: string, enc: string, text: string) => repairEncodedWord(word, cs, enc, text));
  // A message whose own charset is UTF-7 may carry UTF-7 in its Subject without encoded words.
  if (opts.utf7Charset) {
    out = out.replace(/^(subject:)([^\r\n]*(?:\r?\n[ \t][^\r\n]*)*)/im, (_m, name: string, value: string) =>
      /\+[A-Za-z0-9+/]+-?/.test(value) && !/=\?/.test(value) ? `${name}=?UTF-8?B?${Buffer.from(decodeUtf7(value.trim()), 'utf8').toString('base64')}?=` : _m,
    );
  }
  return out;
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

/** Text parts in UTF-7, decoded and rewritten as UTF-8 (base64). */
function utf7Parts(s: string): LeafReplacement[] {
  const out: LeafReplacement[] = [];
  for (const leaf of mimeLeaves(s)) {
    const ct = leaf.headers.get('content-type') ?? '';
    const charset = headerParam(ct, 'charset');
    if (!charset || !UTF7_NAMES.test(charset) || !/^\s*text\//i.test(ct)) continue;
    const decoded = decodeUtf7(transferDecode(s.slice(leaf.bodyStart, leaf.end), leaf.headers.get('content-transfer-encoding')).toString('latin1'));
    const headerLines = leafHeaderLines(s, leaf).map((l) =>
      /^content-type\s*:/i.test(l) ? l.replace(/(charset\s*=\s*)("?)[^";\s]+\2/i, '$1"utf-8"') : l,
    );
    out.push({ leaf, headerLines, content: Buffer.from(decoded, 'utf8') });
  }
  return out;
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
  const utf7 = /charset\s*=\s*"?(?:unicode-1-1-|x-unicode-2-0-)?utf-?7/i.test(s) || /=\?(?:unicode-1-1-)?utf-?7\?/i.test(s);
  const eightBitWord = /=\?[^?\s]+\?[qQ]\?[^?]*[\x80-\xff]/.test(s);
  if (utf7 || eightBitWord) {
    // Header blocks: the message's and every part's.
    const leaves = mimeLeaves(s);
    const topType = /^content-type:([^\r\n]*(?:\r?\n[ \t][^\r\n]*)*)/im.exec(s.slice(0, leaves[0]?.bodyStart ?? s.length))?.[1] ?? '';
    const utf7Charset = UTF7_NAMES.test(headerParam(topType.replace(/\r?\n[ \t]+/g, ' '), 'charset') ?? '');
    const topEnd = /\r?\n\r?\n/.exec(s)?.index ?? s.length;
    const blocks = [[0, topEnd], ...leaves.map((l) => [l.headerStart, l.bodyStart])].sort((a, b) => a[0] - b[0]);
    let rebuilt = '';
    let at = 0;
    for (const [start, end] of blocks) {
      if (start < at) continue;
      rebuilt += s.slice(at, start) + repairHeaderBlock(s.slice(start, end), { utf7Charset: utf7Charset && start === 0 });
      at = end;
    }
    rebuilt += s.slice(at);
    if (rebuilt !== s) {
      s = rebuilt;
      changed = true;
    }
    if (utf7) {
      const parts = utf7Parts(s);
      if (parts.length) return replaceLeaves(Buffer.from(s, 'latin1'), s, parts);
    }
  }
  return changed ? Buffer.from(s, 'latin1') : message;
}
