/**
 * What of a chunk is worth a vector. The model is ~91 % of the time before a new store is searchable
 * by meaning (docs/BENCHMARKS.md), so it is not spent on text that carries no meaning of its own:
 *
 * - quoted lines (`> …`) and the "On … wrote:" line above them, when the chunk's message quotes a
 *   message that is in the store (an earlier message of its thread): that text gets its own vector
 *   there, and a reply's vector should say what the reply says;
 * - a signature (from a `-- ` line on) and lines such as "Sent from my iPhone";
 * - encoded leftovers: ASCII-armoured blocks (PGP signatures, keys, certificates) and base64 runs.
 * A chunk with no word left (no letter or digit) gets no vector. Short texts that are words ("ok",
 * "Budapest") keep theirs: a short note can still be what a question is about.
 *
 * An e-mail stored whole (issue 40) says where these are: its metadata.body_parts (src/mail/body-parts.ts).
 * When the chunk's document has them, they decide instead of the line patterns above: quote, attribution and
 * forward parts are left out when the message quotes a stored one, signature and footer parts always, so the
 * vector skips exactly what the document page folds or dims. Patches keep their vector (they are the
 * message's own content).
 *
 * The chunk stays in the lexical index whole; only the vector is skipped (the chunk is marked
 * embedded without one, like an empty chunk) or made from the text that remains. Identical chunk
 * texts are one chunk (chunks are shared by text hash), so each is embedded once already.
 */

import type { BodyPart, BodyPartKind } from '../mail/body-parts.ts';

const QUOTED = /^[ \t]*>/;
const ATTRIBUTION = /^[ \t]*(On .{3,300}(wrote|écrit|schrieb|escribió):?|.{3,200} wrote:)[ \t]*$/i;
/** RFC 3676's signature separator, dash dash space (a bare `--` is too often a divider in notes). */
const SIGNATURE = /^-- $/;
const BOILERPLATE = /^[ \t]*(Sent from my |Sent from (Mail|Outlook|Yahoo|Gmail)|Get Outlook for )/i;
const ARMOUR = /-----BEGIN [A-Z0-9 ]{3,40}-----[\s\S]*?(-----END [A-Z0-9 ]{3,40}-----|$)/g;
/** Base64 runs: 40+ characters of its alphabet with no space, mixing cases and digits (not a long word or a URL path). */
const BASE64_RUN = /(?<![\w/+=])[A-Za-z0-9+/]{40,}={0,2}(?![\w/+=])/g;
const WORD = /[\p{L}\p{N}]/u;

function looksEncoded(run: string): boolean {
  return /[A-Z]/.test(run) && /[a-z]/.test(run) && /[0-9]/.test(run);
}

/**
 * The chunk's text without what carries no meaning of its own; '' when no word is left.
 * `quotesStored`: the chunk's message quotes a message that is in the store.
 */
export function meaningfulText(text: string, opts: { quotesStored: boolean; parts?: BodyPart[] }): string {
  if (opts.parts) return meaningfulFromParts(text, opts.parts, opts.quotesStored);
  const unarmoured = text.replace(ARMOUR, '\n').replace(BASE64_RUN, (run) => (looksEncoded(run) ? ' ' : run));
  const kept: string[] = [];
  const lines = unarmoured.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (SIGNATURE.test(line)) break;
    if (BOILERPLATE.test(line)) continue;
    if (opts.quotesStored) {
      if (QUOTED.test(line)) continue;
      // The attribution line right above a quote.
      if (ATTRIBUTION.test(line) && lines.slice(i + 1).find((l) => l.trim() !== '')?.match(QUOTED)) continue;
    }
    kept.push(line);
  }
  const out = kept.join('\n').replace(/\n{3,}/g, '\n\n').trim();
  return WORD.test(out) ? out : '';
}

const ALWAYS_LEFT_OUT: ReadonlySet<BodyPartKind> = new Set(['signature', 'footer']);
const LEFT_OUT_WHEN_STORED: ReadonlySet<BodyPartKind> = new Set(['quote', 'attribution', 'forward']);

/** The text without its parts that carry no meaning of its own (spans relative to `text`), then unarmoured. */
function meaningfulFromParts(text: string, parts: BodyPart[], quotesStored: boolean): string {
  let kept = '';
  let at = 0;
  for (const p of parts) {
    if (!(ALWAYS_LEFT_OUT.has(p.kind) || (quotesStored && LEFT_OUT_WHEN_STORED.has(p.kind)))) continue;
    const start = Math.max(at, Math.min(p.start, text.length));
    const end = Math.max(start, Math.min(p.end, text.length));
    kept += text.slice(at, start);
    at = end;
  }
  kept += text.slice(at);
  const out = kept
    .replace(ARMOUR, '\n')
    .replace(BASE64_RUN, (run) => (looksEncoded(run) ? ' ' : run))
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return WORD.test(out) ? out : '';
}

/**
 * A document's parts as spans of one of its chunks (the chunk starts at `chunkStart` of the document text and
 * is `chunkLength` long); parts outside the chunk are dropped, those across its edges cut to it.
 */
export function partsInChunk(parts: BodyPart[], chunkStart: number, chunkLength: number): BodyPart[] {
  const out: BodyPart[] = [];
  for (const p of parts) {
    const start = Math.max(0, p.start - chunkStart);
    const end = Math.min(chunkLength, p.end - chunkStart);
    if (end > start) out.push({ kind: p.kind, start, end });
  }
  return out;
}

/** Whether the text has quoted lines (then whether its message quotes a stored one is asked). */
export function hasQuotedLines(text: string): boolean {
  return text.split('\n').some((l) => QUOTED.test(l));
}
