/**
 * The pieces of a retrieved passage that an answer may quote: sentences of prose, and whole lines
 * of key-value or tabular text (a booking's "Confirmation: CDR-48213", an invoice row), each with
 * its character span in the passage so a citation can mark exactly what was quoted.
 *
 * Never a unit: metadata lines — a file document's `Filename:`/`Source Path:`/`Modified:`/`Tags:`
 * header (documents stored before the header left the text still carry it), e-mail header lines of
 * a quoted or forwarded message, "On … wrote:" reply introductions, "Sent from my …" lines.
 * Labels that only say where text came from (`OCR:`, `Caption:`, `Attachment x.pdf text:`) are cut
 * off and the text after them kept. Quoted lines (`> …`) are units marked `quoted`, their `>`
 * markers removed from the text shown, so an answer can prefer the original message.
 */

export interface AnswerUnit {
  /** The text as an answer shows it: whitespace squashed, quote markers removed. */
  text: string;
  /** Span in the passage text, end exclusive (covers the raw text, markers included). */
  start: number;
  end: number;
  /** A line of key-value or tabular text, or a sentence of prose. */
  kind: 'line' | 'sentence';
  /** From a quoted part of a reply (`> …`). */
  quoted: boolean;
}

/** Lines that are metadata, never content (file header of spec-notes A4.1, mail headers, reply intros). */
const METADATA_LINE = [
  /^(Filename|Source Path|Modified|Tags)\s*:/i,
  /^(From|To|Cc|Bcc|Sent|Date|Subject|Reply-To|Message-ID)\s*:/i,
  /^On\s.{3,300}\bwrote:?$/i,
  /^.{0,200}\b(wrote|writes|said|schrieb|escreveu|escribió|a écrit):$/i, // "Ana <ana@…> writes:", other reply introductions
  /^-{2,}\s*(Original|Forwarded) Message\s*-{2,}$/i,
  /^Begin forwarded message:?$/i,
  /^(Sent from|Get Outlook for|Sent via)\s/i,
  /^(--|---|_{5,}|={5,}|-{5,})$/,
  // Greetings and closings name the addressee or say nothing.
  /^(hi|hello|hey|dear|good (morning|afternoon|evening))(\s+((mr|mrs|ms|dr|prof)\.|[\p{L}'’-]+)){0,4}\s*[,!:]?$/iu,
  /^(kind regards|best regards|regards|best wishes|best|cheers|thanks|thank you|many thanks|yours( sincerely| truly)?|sincerely|love|warmly|all the best)[,.!]?$/i,
];

/** Labels that introduce content: cut, the rest of the line (if any) kept. */
const CONTENT_LABEL = /^(OCR|Caption|Attachment\s.{1,200}?\s(?:caption|text))\s*:\s*/i;

/** `Key: value` with a short key: a line of its own. */
const KEY_VALUE = /^[\p{L}#][\p{L}\p{N} .,/&()'#+-]{0,40}:\s+\S/u;
/** Columns of a table (three spaces or a tab inside the line), or a list item. */
const TABULAR = /\S(?: {3,}|\t)\S/;
const LIST_ITEM = /^([-*•·▪–]|\d{1,2}[.)])\s+\S/u;
/** A wrapped line of prose is joined with the next when at least this long. */
const WRAPPED_LINE = 40;

/** Words after which a full stop does not end a sentence. */
const ABBREVIATIONS = new Set(
  'mr mrs ms dr prof st sr jr no nr vs etc e.g i.e approx appt dept est fig inc ltd co corp jan feb mar apr jun jul aug sep sept oct nov dec mon tue tues wed thu thur thurs fri sat sun a.m p.m ca cf av ave rd tel'.split(
    ' ',
  ),
);

interface Line {
  start: number;
  end: number;
  /** Offset of the content after quote markers and a content label. */
  from: number;
  quoted: boolean;
  kind: 'skip' | 'blank' | 'line' | 'prose';
}

function classify(text: string, start: number, end: number): Line {
  const raw = text.slice(start, end);
  let from = start + (raw.length - raw.trimStart().length);
  let quoted = false;
  const q = /^(\s*>)+\s?/.exec(text.slice(from, end));
  if (q) {
    quoted = true;
    from += q[0].length;
  }
  let body = text.slice(from, end).trimEnd();
  const label = CONTENT_LABEL.exec(body);
  if (label) {
    from += label[0].length;
    body = body.slice(label[0].length);
  }
  if (body.trim() === '') return { start, end, from, quoted, kind: label ? 'skip' : 'blank' };
  if (METADATA_LINE.some((re) => re.test(body.trim()))) return { start, end, from, quoted, kind: 'skip' };
  const kind = KEY_VALUE.test(body) || TABULAR.test(body) || LIST_ITEM.test(body) ? 'line' : 'prose';
  return { start, end, from, quoted, kind };
}

/** Text of [from, to) with quote markers removed and whitespace squashed, and each output character's source offset. */
function clean(text: string, from: number, to: number): { s: string; at: number[] } {
  let s = '';
  const at: number[] = [];
  let i = from;
  let space = false;
  while (i < to) {
    const ch = text[i];
    if (ch === '\n') {
      // A line break inside a unit, and the next line's quote markers, read as one space.
      i++;
      while (i < to && /[\s>]/.test(text[i]) && text[i] !== '\n') i++;
      space = true;
      continue;
    }
    if (/\s/.test(ch)) {
      space = true;
      i++;
      continue;
    }
    if (space && s.length > 0) {
      s += ' ';
      at.push(i - 1);
    }
    space = false;
    s += ch;
    at.push(i);
    i++;
  }
  return { s, at };
}

/** Sentence ends in squashed prose: after . ! ? (and closing quotes/brackets) before a capital, digit or opening quote. */
function sentenceEnds(s: string): number[] {
  const ends: number[] = [];
  const re = /[.!?…]+["'”’)\]]*(?= +["'“‘(\[]?[\p{Lu}\p{N}])/gu;
  for (let m = re.exec(s); m; m = re.exec(s)) {
    const end = m.index + m[0].length;
    if (m[0][0] === '.') {
      const before = /([\p{L}.]+)$/u.exec(s.slice(Math.max(0, m.index - 12), m.index));
      const word = before?.[1].toLowerCase().replace(/^\.+/, '') ?? '';
      // "Dr. Silva", "e.g. this", a single initial ("J. Smith").
      if (ABBREVIATIONS.has(word) || /^\p{L}$/u.test(word)) continue;
    }
    ends.push(end);
  }
  return ends;
}

function push(out: AnswerUnit[], text: string, from: number, to: number, kind: AnswerUnit['kind'], quoted: boolean): void {
  const { s, at } = clean(text, from, to);
  if (!s) return;
  if (kind === 'line') {
    out.push({ text: s, start: at[0], end: at[s.length - 1] + 1, kind, quoted });
    return;
  }
  let a = 0;
  for (const e of [...sentenceEnds(s), s.length]) {
    const piece = s.slice(a, e).trim();
    if (piece) {
      const lead = s.slice(a, e).length - s.slice(a, e).trimStart().length;
      const first = a + lead;
      const last = first + piece.length - 1;
      out.push({ text: piece, start: at[first], end: at[last] + 1, kind, quoted });
    }
    a = e;
  }
}

/** The units of a passage, in text order. */
export function answerUnits(text: string): AnswerUnit[] {
  const lines: Line[] = [];
  let pos = 0;
  while (pos <= text.length) {
    const nl = text.indexOf('\n', pos);
    const end = nl < 0 ? text.length : nl;
    lines.push(classify(text, pos, end));
    if (nl < 0) break;
    pos = nl + 1;
  }
  const out: AnswerUnit[] = [];
  let para: Line[] = [];
  const flush = () => {
    if (para.length) push(out, text, para[0].from, para[para.length - 1].end, 'sentence', para[0].quoted);
    para = [];
  };
  for (const line of lines) {
    if (line.kind !== 'prose') flush();
    if (line.kind === 'line') push(out, text, line.from, line.end, 'line', line.quoted);
    if (line.kind !== 'prose') continue;
    const prev = para[para.length - 1];
    // Prose wrapped over lines reads as one paragraph; a short line ("Hi Ana,") stands alone.
    if (prev && (prev.quoted !== line.quoted || prev.end - prev.from < WRAPPED_LINE)) flush();
    para.push(line);
  }
  flush();
  return out;
}
