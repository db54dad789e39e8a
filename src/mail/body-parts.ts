/**
 * The parts of an e-mail body (issue 40): the whole text is stored as written, and what is not the
 * author's own prose is *marked*, never removed. A part is a span of whole lines of the stored text
 * (offsets in UTF-16 code units, end exclusive, the last line's break not included):
 *
 * - `quote`: quoted lines (`> …`, blank lines between them included), and the message below an
 *   Outlook-style "-----Original Message-----" header block;
 * - `attribution`: the line introducing a quote ("On Tue, 3 Dec 2019, Ana <ana@…> wrote:", "Ana writes:"),
 *   also when a mailer wrapped it over two lines;
 * - `forward`: the header block of a forwarded or original message ("---------- Forwarded message
 *   ---------", "Begin forwarded message:", "-----Original Message-----", Outlook's underscore line, and
 *   the From:/Date:/Subject:/To:/Cc:/Sent: lines after it);
 * - `patch`: a diff: `git format-patch`'s `---` line, the diffstat and the `diff --git` hunks, or a bare
 *   unified diff (`--- a/…` `+++ b/…` `@@ … @@`) anywhere in the body;
 * - `signature`: from an RFC 3676 `-- ` line (or `--`, its trailing blank lost in transit) to the end
 *   of the message or the quote/footer that follows, and "Sent from my …" lines;
 * - `footer`: a mailing list's trailer (Mailman's underscore line and "… mailing list", a listinfo
 *   link, Google Groups' "You received this message because…").
 *
 * Pure and deterministic: the same text always gives the same parts (they are part of the document's
 * metadata, whose hash keys the gateway's idempotency). Parts never overlap and are in text order.
 * The search side reads the same spans (src/embedding/meaning.ts leaves quotes of stored messages,
 * signatures and footers out of vectors), so what the page folds is what the vector skips.
 */

// The kinds and their bound are part of the API (metadata.body_parts, src/schemas/common.ts): declared there.
export { BODY_PART_KINDS, MAX_BODY_PARTS, type BodyPartKind } from '../schemas/common.ts';
import { BODY_PART_KINDS, MAX_BODY_PARTS, type BodyPartKind } from '../schemas/common.ts';

export interface BodyPart {
  kind: BodyPartKind;
  start: number;
  end: number;
}


const QUOTE_LINE = /^[ \t]*>/;
const ATTRIBUTION_STRONG = /^[ \t]*On\s.{3,300}\b(wrote|writes|said):?[ \t]*$/i;
/** "On Tue, 14 Nov 2023 at 09:12, Jane Doe <jane@…>" wrapped before its "wrote:". */
const ATTRIBUTION_HEAD = /^[ \t]*On\s.{3,300}$/i;
const ATTRIBUTION_TAIL = /^[ \t]*.{0,120}\b(wrote|writes|said):?[ \t]*$/i;
const ATTRIBUTION_WEAK = /^[ \t]*.{1,250}\b(wrote|writes|said|schrieb|escreveu|escribió|a écrit|ha scritto|skrev|napisał)[ \t]*:[ \t]*$/iu;
const ATTRIBUTION_QUOTING = /^[ \t]*(Quoting|Citing) .{1,250}:[ \t]*$/i;
const FORWARD_MARK = [
  /^[ \t]*-{2,}[ \t]*(Original Message|Forwarded message|Forwarded Message|Mensaje original|Message d'origine|Ursprüngliche Nachricht)[ \t]*-{2,}[ \t]*$/i,
  /^[ \t]*Begin forwarded message:?[ \t]*$/i,
];
const ORIGINAL_MARK = /Original Message|Mensaje original|Message d'origine|Ursprüngliche Nachricht/i;
const OUTLOOK_RULE = /^_{10,}[ \t]*$/;
const HEADER_LINE = /^[ \t]*\*?(From|Sent|To|Cc|Bcc|Subject|Date|Reply-To|Message-ID|Von|Gesendet|An|Betreff|De|Envoyé|À|Objet|Enviado|Para|Asunto)\*?[ \t]*:/i;
const SIGNATURE_LINE = /^--[ \t]?$/;
const MOBILE_SIGNATURE = /^[ \t]*(Sent from my |Sent from (Mail|Outlook|Yahoo|Gmail|ProtonMail)|Get Outlook for |Sent via )/i;
const FOOTER_RULE = /^[ \t]*(_{20,}|-{20,}|={20,})[ \t]*$/;
const FOOTER_TEXT = /(mailing list|listinfo|lists\.[\w.-]+\/|mailman|To unsubscribe|unsubscribe from this group|You received this message because you are subscribed)/i;
const GOOGLE_GROUPS = /^[ \t]*You received this message because you are subscribed to the Google Groups/i;
/** A diffstat line: ` path/to/file.c | 12 ++++--` or ` bin/x | Bin 0 -> 12 bytes`. */
const DIFFSTAT = /^ \S.*\|\s+(\d+ ?[+-]*|Bin( \d+ -> \d+ bytes)?)\s*$/;
const DIFFSTAT_SUMMARY = /^ \d+ files? changed(, \d+ insertions?\(\+\))?(, \d+ deletions?\(-\))?\s*$/;
const DIFF_START = /^(diff --git |diff -[a-zA-Z]+ |Index: \S)/;
const DIFF_HEADER = /^(diff |index [0-9a-f]|--- |\+\+\+ |new file mode|deleted file mode|old mode|new mode|similarity index|dissimilarity index|rename (from|to) |copy (from|to) |Binary files |GIT binary patch|literal \d|delta \d|={5,}$|Index: )/;
const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

interface Lines {
  text: string;
  starts: number[];
  ends: number[];
}

function splitLines(text: string): Lines {
  const starts: number[] = [];
  const ends: number[] = [];
  let pos = 0;
  for (;;) {
    const nl = text.indexOf('\n', pos);
    starts.push(pos);
    ends.push(nl < 0 ? text.length : nl);
    if (nl < 0) break;
    pos = nl + 1;
  }
  return { text, starts, ends };
}

/** The parts of a (normalised: LF line breaks) body text. */
export function bodyParts(text: string): BodyPart[] {
  if (!text) return [];
  const L = splitLines(text);
  const n = L.starts.length;
  const line = (i: number) => L.text.slice(L.starts[i], L.ends[i]);
  const blank = (i: number) => line(i).trim() === '';
  /** Kind of each line; null: the author's own text. */
  const kind: (BodyPartKind | null)[] = new Array(n).fill(null);
  const nextNonBlank = (i: number): number => {
    let j = i;
    while (j < n && blank(j)) j++;
    return j;
  };

  // 1. Patches: format-patch's `---` + diffstat + diffs, and bare unified diffs (a quoted diff, `> +x`, is a quote).
  for (let i = 0; i < n; i++) {
    if (kind[i] !== null) continue;
    const l = line(i);
    if (l === '---' && startsPatch(i + 1)) {
      const end = patchEnd(i + 1);
      for (let k = i; k < end; k++) kind[k] = 'patch';
      i = end - 1;
    } else if (DIFF_START.test(l) || (l.startsWith('--- ') && i + 2 < n && line(i + 1).startsWith('+++ ') && HUNK.test(line(i + 2)))) {
      const end = diffEnd(i);
      if (end > i + 1) {
        for (let k = i; k < end; k++) kind[k] = 'patch';
        i = end - 1;
      }
    }
  }
  // 2. Quoted lines (a diff's context line ` > x` is the patch's), blank lines between two quoted lines included.
  for (let i = 0; i < n; i++) if (kind[i] === null && QUOTE_LINE.test(line(i))) kind[i] = 'quote';
  for (let i = 0; i < n; i++) {
    if (kind[i] !== 'quote') continue;
    const j = nextNonBlank(i + 1);
    if (j < n && j > i + 1 && kind[j] === 'quote' && kind.slice(i + 1, j).every((k) => k === null)) for (let k = i + 1; k < j; k++) kind[k] = 'quote';
  }

  function startsPatch(from: number): boolean {
    // The diffstat (or the diff itself) follows format-patch's `---` within a few lines.
    for (let j = from; j < Math.min(n, from + 3); j++) {
      if (kind[j] !== null) return false;
      const l = line(j);
      if (DIFFSTAT.test(l) || DIFFSTAT_SUMMARY.test(l) || DIFF_START.test(l)) return true;
      if (l.trim() !== '') return false;
    }
    return false;
  }
  /** End (exclusive line index) of a format-patch tail: diffstat, summary, blank lines and diffs. */
  function patchEnd(from: number): number {
    let i = from;
    while (i < n && kind[i] === null) {
      const l = line(i);
      if (DIFF_START.test(l)) {
        i = diffEnd(i);
        continue;
      }
      if (l.trim() === '' || DIFFSTAT.test(l) || DIFFSTAT_SUMMARY.test(l) || /^ (create|delete|rename|copy|mode change) /.test(l)) {
        i++;
        continue;
      }
      break;
    }
    // Trailing blank lines belong to what follows.
    while (i > from && blank(i - 1)) i--;
    return i;
  }
  /** End (exclusive) of a diff starting at line `from` (its headers and hunks, counted by the hunk headers). */
  function diffEnd(from: number): number {
    let i = from;
    while (i < n && kind[i] === null) {
      const l = line(i);
      const h = HUNK.exec(l);
      if (h) {
        let oldLeft = h[2] === undefined ? 1 : Number(h[2]);
        let newLeft = h[4] === undefined ? 1 : Number(h[4]);
        i++;
        while (i < n && kind[i] === null && (oldLeft > 0 || newLeft > 0)) {
          const c = line(i)[0];
          if (c === '-') oldLeft--;
          else if (c === '+') newLeft--;
          else if (c === '\\') {
            // "\ No newline at end of file"
          } else if (c === ' ' || c === undefined) {
            oldLeft--;
            newLeft--;
          } else break;
          i++;
        }
        if (i < n && line(i).startsWith('\\ ')) i++;
        continue;
      }
      // `--- a/x` counts only with its `+++ b/x`: a lone `---` line after a diff is text again.
      const header = l.startsWith('--- ') ? i + 1 < n && line(i + 1).startsWith('+++ ') : l.startsWith('+++ ') ? i > from && line(i - 1).startsWith('--- ') : DIFF_HEADER.test(l);
      if (header) {
        i++;
        continue;
      }
      break;
    }
    return i;
  }

  // 3. List footers: a rule followed by list words, or Google Groups' paragraph; to the end of the text.
  for (let i = 0; i < n; i++) {
    if (kind[i] !== null) continue;
    const l = line(i);
    const ruled = FOOTER_RULE.test(l) && [1, 2, 3].some((d) => i + d < n && kind[i + d] === null && FOOTER_TEXT.test(line(i + d)));
    const groups = GOOGLE_GROUPS.test(l);
    if (!ruled && !groups) continue;
    let start = i;
    // Google Groups puts its paragraph after a `-- ` line: that line is the footer's, not a signature.
    if (groups) {
      const p = prevNonBlank(i - 1);
      if (p >= 0 && SIGNATURE_LINE.test(line(p)) && kind[p] === null) start = p;
    }
    let end = i + 1;
    while (end < n && kind[end] === null) end++;
    while (end > i + 1 && blank(end - 1)) end--;
    for (let k = start; k < end; k++) kind[k] = 'footer';
    i = end - 1;
  }
  function prevNonBlank(i: number): number {
    let j = i;
    while (j >= 0 && blank(j)) j--;
    return j;
  }

  // 4. Forward and original-message header blocks; an original message's body below is a quote.
  for (let i = 0; i < n; i++) {
    if (kind[i] !== null) continue;
    const l = line(i);
    const marked = FORWARD_MARK.some((re) => re.test(l));
    const first = nextNonBlank(i + 1);
    const headed = first < n && kind[first] === null && HEADER_LINE.test(line(first));
    const outlook = OUTLOOK_RULE.test(l) && headed;
    if (!marked && !outlook) continue;
    // The header block: header lines and their wrapped continuations, up to a blank or other line.
    let j = i + 1;
    if (headed) {
      j = first;
      while (j < n && kind[j] === null && !blank(j) && (HEADER_LINE.test(line(j)) || (j > first && /^[ \t]/.test(line(j))))) j++;
    }
    for (let k = i; k < j; k++) kind[k] = 'forward';
    // Outlook's reply: what follows its header block is the message replied to, unquoted.
    if (outlook || ORIGINAL_MARK.test(l)) {
      for (let k = j; k < n && kind[k] === null; k++) kind[k] = 'quote';
    }
    i = j - 1;
  }

  // 5. Attributions: the line (or wrapped pair) right above a quote, or an "On … wrote:" line.
  for (let i = 0; i < n; i++) {
    if (kind[i] !== null) continue;
    const l = line(i);
    const next = nextNonBlank(i + 1);
    const beforeQuote = next < n && kind[next] === 'quote';
    if (ATTRIBUTION_STRONG.test(l) || ((ATTRIBUTION_WEAK.test(l) || ATTRIBUTION_QUOTING.test(l)) && beforeQuote)) {
      kind[i] = 'attribution';
      continue;
    }
    if (ATTRIBUTION_HEAD.test(l) && i + 1 < n && kind[i + 1] === null && ATTRIBUTION_TAIL.test(line(i + 1)) && l.length + line(i + 1).length < 400) {
      const after = nextNonBlank(i + 2);
      if (after >= n || kind[after] === 'quote' || /\b(wrote|writes):?[ \t]*$/i.test(line(i + 1))) {
        kind[i] = kind[i + 1] = 'attribution';
        i++;
      }
    }
  }

  // 6. Signatures: from `-- ` to the end, or to the blank line before a quote, attribution, forward or footer.
  for (let i = 0; i < n; i++) {
    if (kind[i] !== null) continue;
    const l = line(i);
    if (MOBILE_SIGNATURE.test(l)) {
      kind[i] = 'signature';
      continue;
    }
    if (!SIGNATURE_LINE.test(l)) continue;
    let end = i + 1;
    while (end < n && kind[end] === null) {
      if (blank(end)) {
        const j = nextNonBlank(end);
        if (j < n && kind[j] !== null) break;
      }
      end++;
    }
    // A bare `--` with a long text after it is a divider, not a signature (RFC 3676's is `-- `).
    if (l === '--' && end - i > 16) continue;
    while (end > i + 1 && blank(end - 1)) end--;
    for (let k = i; k < end; k++) kind[k] = 'signature';
    i = end - 1;
  }

  // Lines of one kind in a row are one part; blank lines never start or end one.
  const parts: BodyPart[] = [];
  for (let i = 0; i < n; i++) {
    const k = kind[i];
    if (k === null) continue;
    let j = i;
    while (j + 1 < n && kind[j + 1] === k) j++;
    let a = i;
    let b = j;
    while (a <= b && blank(a)) a++;
    while (b >= a && blank(b)) b--;
    if (a <= b) parts.push({ kind: k, start: L.starts[a], end: L.ends[b] });
    i = j;
  }
  return capParts(parts);
}

/** Past MAX_BODY_PARTS, neighbouring parts of one kind are merged over the text between them, then cut. */
function capParts(parts: BodyPart[]): BodyPart[] {
  if (parts.length <= MAX_BODY_PARTS) return parts;
  const merged: BodyPart[] = [];
  for (const p of parts) {
    const last = merged[merged.length - 1];
    if (last && last.kind === p.kind) last.end = p.end;
    else merged.push({ ...p });
  }
  return merged.slice(0, MAX_BODY_PARTS);
}

/** Parts read back from stored metadata: well-formed, inside the text, in order and not overlapping; others dropped. */
export function validBodyParts(value: unknown, textLength: number): BodyPart[] {
  if (!Array.isArray(value)) return [];
  const out: BodyPart[] = [];
  let at = 0;
  for (const v of value) {
    if (!v || typeof v !== 'object') continue;
    const { kind, start, end } = v as Record<string, unknown>;
    if (typeof kind !== 'string' || !(BODY_PART_KINDS as readonly string[]).includes(kind)) continue;
    if (!Number.isInteger(start) || !Number.isInteger(end)) continue;
    const s = start as number;
    const e = Math.min(end as number, textLength);
    if (s < at || e <= s) continue;
    out.push({ kind: kind as BodyPartKind, start: s, end: e });
    at = e;
  }
  return out;
}
