/**
 * Bytes to text: charset detection and decoding, and the cleaning every extracted text goes through.
 */
import chardet from 'chardet';
import iconv from 'iconv-lite';

/** WHATWG treats these labels as windows-1252; so do browsers, and so do we. */
const LATIN1_LABELS = new Set(['iso-8859-1', 'iso8859-1', 'latin1', 'latin-1', 'l1', 'us-ascii', 'ascii', 'cp819', 'ibm819']);

function normaliseCharset(label: string): string | undefined {
  const l = label.trim().toLowerCase();
  if (LATIN1_LABELS.has(l)) return 'windows-1252';
  if (l === 'utf8') return 'utf-8';
  return iconv.encodingExists(l) ? l : undefined;
}

function htmlDeclaredCharset(b: Buffer): string | undefined {
  const head = b.subarray(0, 4096).toString('latin1');
  const m =
    /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)/i.exec(head) ?? /<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:+-]+)/i.exec(head);
  return m ? normaliseCharset(m[1]) : undefined;
}

/** UTF-32 without a byte-order mark: ASCII-range text has three NULs in every four bytes. */
export function bomlessUtf32(head: Buffer): 'utf-32le' | 'utf-32be' | undefined {
  const groups = Math.floor(Math.min(head.length, 8192) / 4);
  if (groups < 2) return undefined;
  let le = 0;
  let be = 0;
  for (let i = 0; i < groups * 4; i += 4) {
    if (head[i + 2] === 0 && head[i + 3] === 0 && (head[i + 1] !== 0 || head[i] !== 0)) le++;
    if (head[i] === 0 && head[i + 1] === 0 && (head[i + 2] !== 0 || head[i + 3] !== 0)) be++;
  }
  if (le > groups * 0.9) return 'utf-32le';
  if (be > groups * 0.9) return 'utf-32be';
  return undefined;
}

/** ISO-2022-JP (7-bit with escape sequences, so also valid UTF-8): recognised by its designations. */
function iso2022(b: Buffer): 'iso-2022-jp' | undefined {
  const head = b.subarray(0, 64 * 1024).toString('latin1');
  return /\x1b(\$[@B]|\$\(D|\([BJI])/.test(head) && /\x1b\$[@B(]/.test(head) ? 'iso-2022-jp' : undefined;
}

/** The encoding the bytes declare for themselves: an XML declaration (any text), or (HTML) a meta charset. */
function declaredCharset(b: Buffer, html: boolean): string | undefined {
  const head = b.subarray(0, 4096).toString('latin1');
  const xml = /^\s*<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9_.:+-]+)["']/i.exec(head);
  let declared = xml ? normaliseCharset(xml[1]) : html ? htmlDeclaredCharset(b) : undefined;
  // A declared UTF-16/32 cannot describe ASCII-compatible bytes that spell out the declaration.
  if (declared && /^(utf-?16|utf-?32|ucs-?2)/i.test(declared)) declared = undefined;
  return declared;
}

/** Decoding by byte-order mark (UTF-32 before UTF-16: FF FE 00 00 starts both). */
function decodeByBom(b: Buffer): { text: string; charset: string } | undefined {
  if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return { text: b.subarray(3).toString('utf8'), charset: 'utf-8' };
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xfe && b[2] === 0 && b[3] === 0) return { text: iconv.decode(b.subarray(4), 'utf-32le'), charset: 'utf-32le' };
  if (b.length >= 4 && b[0] === 0 && b[1] === 0 && b[2] === 0xfe && b[3] === 0xff) return { text: iconv.decode(b.subarray(4), 'utf-32be'), charset: 'utf-32be' };
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0xfe) return { text: iconv.decode(b.subarray(2), 'utf-16le'), charset: 'utf-16le' };
  if (b.length >= 2 && b[0] === 0xfe && b[1] === 0xff) return { text: iconv.decode(b.subarray(2), 'utf-16be'), charset: 'utf-16be' };
  return undefined;
}

/**
 * Decodes bytes to text: a BOM wins; then the encoding the document declares (`<?xml encoding?>`, and for HTML
 * `<meta charset>`); then UTF-32 without BOM and ISO-2022-JP by their byte patterns; then valid UTF-8; then a
 * statistical guess (chardet), decoded with iconv-lite; windows-1252 as the last resort (never fails, keeps every byte).
 */
export function decodeText(b: Buffer, opts: { html?: boolean } = {}): { text: string; charset: string; warnings: string[] } {
  const warnings: string[] = [];
  const bom = decodeByBom(b);
  if (bom) return { ...bom, warnings };
  const declared = declaredCharset(b, !!opts.html);
  if (declared) return { text: iconv.decode(b, declared), charset: declared, warnings };
  const utf32 = bomlessUtf32(b);
  if (utf32) return { text: iconv.decode(b, utf32), charset: utf32, warnings };
  const jis = iso2022(b);
  if (jis) return { text: new TextDecoder(jis).decode(b), charset: jis, warnings };
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(b), charset: 'utf-8', warnings };
  } catch {
    /* not UTF-8 */
  }
  const guess = chardet.detect(b.subarray(0, 1024 * 1024));
  const cs = guess ? normaliseCharset(guess) : undefined;
  if (cs && cs !== 'utf-8') return { text: iconv.decode(b, cs), charset: cs, warnings };
  warnings.push('character set not recognised; decoded as windows-1252');
  return { text: iconv.decode(b, 'windows-1252'), charset: 'windows-1252', warnings };
}

/** LF line ends, no NULs or stray control characters (they break PostgreSQL text and tsvector). */
export function cleanText(s: string): string {
  return s
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/g, '')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** Characters that cleanText keeps and does not trim: one of them after a cut means the cut is not at the end. */
const KEPT_VISIBLE = /[^\s\u0000-\u0008\u000b\u000e-\u001f\u007f]/g;
/** Characters a piece may end after without changing what cleanText does across the cut (CR, blanks and controls excluded). */
const SAFE_BEFORE_CUT = /[^\s\u0000-\u001f\u007f]/;

/**
 * cleanText(s) cut at `max` characters, the same text, computed in pieces of about `piece` characters with a turn of
 * the event loop between them, and only as far as the cut needs (issue 47: cleaning a 50 MB text file took the
 * server's thread for seconds, most of it for text beyond the 5 M characters kept). A piece ends after a newline (or,
 * in a line longer than a piece, after a visible character), so no replacement spans two pieces except runs of
 * newlines, which are collapsed again once joined.
 */
export async function cleanTextWithin(s: string, max: number, piece = 1 << 18): Promise<{ text: string; truncated: boolean }> {
  const out: string[] = [];
  let cleaned = 0;
  let at = 0;
  while (at < s.length && cleaned <= max + 2) {
    let end = Math.min(s.length, at + piece);
    if (end < s.length) {
      const nl = s.lastIndexOf('\n', end - 1);
      if (nl >= at) end = nl + 1;
      else {
        let p = end;
        while (p > at + 1 && !SAFE_BEFORE_CUT.test(s[p - 1])) p--;
        end = SAFE_BEFORE_CUT.test(s[p - 1]) ? p : s.length;
      }
    }
    let part = s
      .slice(at, end)
      .replace(/\r\n?/g, '\n')
      .replace(/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/g, '')
      .replace(/[ \t]+\n/g, '\n');
    if (cleaned === 0) part = part.trimStart();
    // A run of newlines across the cut: joined with the piece before and collapsed again, so lengths stay exact.
    if (part.startsWith('\n') && out.length > 0 && out[out.length - 1].endsWith('\n')) {
      cleaned -= out[out.length - 1].length;
      part = out.pop()! + part;
    }
    part = part.replace(/\n{3,}/g, '\n\n');
    out.push(part);
    cleaned += part.length;
    at = end;
    if (at < s.length) await new Promise((resolve) => setImmediate(resolve));
  }
  let text = out.join('');
  // Stopped early: the rest counts only if something visible is left in it (else the whole text ends here, trimmed).
  KEPT_VISIBLE.lastIndex = at;
  const more = at < s.length && KEPT_VISIBLE.test(s);
  if (!more) text = text.trimEnd();
  if (text.length > max) return { text: text.slice(0, max), truncated: true };
  return { text, truncated: false };
}
