/**
 * FROZEN COPY, for bench/email/whole-body.ts only: the body cleaner memex used until issue 40 (it was
 * src/agent/collectors/email/clean-body.ts), so the bench can print what it kept of the same corpus.
 * Not used by memex.
 *
 * Body cleaning before hashing and submission (spec-notes B2.7): the text a person wrote in this
 * message, without the quoted conversation below it and without the signature.
 *
 * - Plain text is preferred; HTML is converted to text (html-to-text, images become their alt text,
 *   links their text) when there is no plain part.
 * - Quoted lines (`>`, `>>` …) are dropped, and everything from a reply/forward header line on
 *   ("On … wrote:", "From:", "Sent:", "-----Original Message-----", "Begin forwarded message:" …).
 * - A signature is cut at `-- `, `--`, `---` or a line of underscores, and lines such as "Sent from my
 *   iPhone" / "Get Outlook for iOS" and confidentiality boilerplate are dropped.
 *
 * Cleaning never empties a message that had text: if nothing survives (a message that is all quote,
 * a forward with no note), the uncleaned text is used, so nothing is lost.
 */
import { htmlToText } from 'html-to-text';

const REPLY_HEADER = [
  /^On .{3,300}wrote:?\s*$/i,
  /^On .{3,200}$/i, // "On Tue, 14 Nov 2023 at 09:12, Jane Doe <jane@…>" wrapped before "wrote:"
  /^(From|Sent|To|Subject|Date|Message-ID):\s/i,
  /^-{2,}\s*Original Message\s*-{2,}/i,
  /^Begin forwarded message:?/i,
  /^-{2,}\s*Forwarded message\s*-{2,}/i,
  /^Forwarded message/i,
];

const SIGNATURE_DELIMITER = /^(--|---|_{5,})$/;
const BOILERPLATE = [
  /^Sent from my /i,
  /^Sent from /i,
  /^Get Outlook for /i,
  /^Sent via /i,
  /^This email was sent from /i,
  /^(CONFIDENTIALITY NOTICE|This (e-?mail|message) (and any attachments )?(is|may be) confidential)/i,
];

export function htmlBodyToText(html: string): string {
  return htmlToText(html, {
    wordwrap: false,
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'style', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'head', format: 'skip' },
    ],
    formatters: {},
  })
    .replace(/\u00a0/g, ' ')
    .trim();
}

/** Image alt texts of an HTML body (kept as captions by the original; we add them as text lines). */
function imageCaptions(html: string): string[] {
  const out: string[] = [];
  for (const m of html.matchAll(/<img\b[^>]*\balt\s*=\s*("([^"]*)"|'([^']*)')/gi)) {
    const alt = (m[2] ?? m[3] ?? '').trim();
    if (alt) out.push(alt);
  }
  return out;
}

/** Removes quoted text, reply headers and signatures from plain text. */
export function stripQuotesAndSignature(text: string): string {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const kept: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    const trimmed = line.trim();
    if (/^>/.test(trimmed)) continue;
    // A reply header ends the author's text; a lone "On …" line only counts when quoted lines follow.
    if (REPLY_HEADER.some((re, idx) => re.test(trimmed) && (idx !== 1 || followedByQuote(lines, i)))) break;
    if (SIGNATURE_DELIMITER.test(trimmed) || line === '-- ') break;
    if (BOILERPLATE.some((re) => re.test(trimmed))) continue;
    kept.push(line);
  }
  return kept.join('\n').replace(/\n{3,}/g, '\n\n').trim();
}

function followedByQuote(lines: string[], i: number): boolean {
  for (let j = i + 1; j < Math.min(lines.length, i + 4); j++) {
    const t = lines[j].trim();
    if (t === '') continue;
    return t.startsWith('>') || /wrote:?\s*$/i.test(t);
  }
  return false;
}

export interface CleanBody {
  /** The cleaned text (never empty when the message had any text). */
  text: string;
  /** Where it came from. */
  source: 'plain' | 'html' | 'none';
  /** True when cleaning removed everything and the uncleaned text was kept instead. */
  uncleanedFallback: boolean;
  imageCaptions: string[];
}

export function cleanEmailBody(plain: string | null, html: string | null): CleanBody {
  const captions = html ? imageCaptions(html) : [];
  let raw = '';
  let source: CleanBody['source'] = 'none';
  if (plain && plain.trim()) {
    raw = plain;
    source = 'plain';
  } else if (html && html.trim()) {
    raw = htmlBodyToText(html);
    source = 'html';
  }
  const normalised = raw.replace(/\r\n?/g, '\n').trim();
  const cleaned = stripQuotesAndSignature(normalised);
  if (!cleaned && normalised) return { text: normalised, source, uncleanedFallback: true, imageCaptions: captions };
  return { text: cleaned, source, uncleanedFallback: false, imageCaptions: captions };
}
