/**
 * The text of a message's body as written (issue 40): the text/plain part, or the text of the HTML
 * part when there is no plain part (html-to-text: images become their alt text, links their text,
 * blockquotes `> ` lines). Nothing is cut: quoted text, signatures, patches, attributions, forwarded
 * headers and list footers stay in the text and are marked as parts (src/mail/body-parts.ts).
 *
 * (Until issue 40 a cleaner cut the body at the first `--`/`---`/underscore line and at the first
 * "On … wrote:"/"From:" line and dropped quoted lines: 37 % of the characters of a list's mail were
 * kept and format-patch mails lost their diff.)
 */
import { htmlToText } from 'html-to-text';
import { cleanString } from '../util/json-input.ts';

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

export interface BodyText {
  /** The whole body: LF line breaks, trimmed, NULs removed (as the gateway stores text, so spans agree). */
  text: string;
  /** Where it came from. */
  source: 'plain' | 'html' | 'none';
  imageCaptions: string[];
}

export function emailBodyText(plain: string | null, html: string | null): BodyText {
  const captions = html ? imageCaptions(html) : [];
  let raw = '';
  let source: BodyText['source'] = 'none';
  if (plain && plain.trim()) {
    raw = plain;
    source = 'plain';
  } else if (html && html.trim()) {
    raw = htmlBodyToText(html);
    source = 'html';
  }
  return { text: cleanString(raw).replace(/\r\n?/g, '\n').trim(), source, imageCaptions: captions };
}
