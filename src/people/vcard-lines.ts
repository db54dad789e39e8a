/**
 * The content lines of a .vcf file, made readable for ical.js (which implements vCard 3.0 and 4.0) one
 * card and one property at a time, so that one bad property never costs the file.
 *
 * vCard 2.1 (Android, Outlook, old Nokia exports) is rewritten as 3.0: bare type parameters
 * (`TEL;WORK;VOICE`, `EMAIL;PREF;INTERNET`) become `TYPE=`, quoted-printable values (with `=` soft line
 * breaks, in their CHARSET) are decoded, and base64 values (`PHOTO;BASE64:` or `ENCODING=BASE64`, continued
 * on indented lines up to an empty line) become `ENCODING=b`. Empty parameters are dropped. A property
 * ical.js still cannot read is left out of its card and reported.
 */
import iconv from 'iconv-lite';

export interface VcfProblem {
  /** 1-based position of the card in the file. */
  card: number;
  /** 1-based line where the property starts. */
  line: number;
  property: string;
  reason: string;
}

export interface CardText {
  /** 1-based position in the file. */
  index: number;
  /** The card as 3.0/4.0 text ical.js can be given. */
  text: string;
  /** Each property line of `text` with its source line, for reporting. */
  properties: { text: string; line: number; name: string }[];
}

const ENCODINGS = new Set(['QUOTED-PRINTABLE', 'BASE64', 'B', '8BIT', '7BIT']);
/** Properties whose value has `;`-separated components. */
const STRUCTURED = new Set(['N', 'ADR', 'ORG', 'GENDER', 'CLIENTPIDMAP']);

interface Logical {
  text: string;
  line: number;
}

/** Splits `s` at `sep` outside double quotes. */
function splitOutsideQuotes(s: string, sep: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quoted = false;
  for (const ch of s) {
    if (ch === '"') quoted = !quoted;
    if (ch === sep && !quoted) {
      out.push(cur);
      cur = '';
    } else cur += ch;
  }
  out.push(cur);
  return out;
}

function colonOutsideQuotes(s: string): number {
  let quoted = false;
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '"') quoted = !quoted;
    else if (s[i] === ':' && !quoted) return i;
  }
  return -1;
}

function isQuotedPrintable(head: string): boolean {
  return /;\s*(encoding\s*=\s*)?quoted-printable\s*(;|$)/i.test(head);
}

/** Physical lines → logical lines: RFC folding, quoted-printable soft breaks, 2.1 base64 continuation. */
function logicalLines(text: string): Logical[] {
  const lines = text.replace(/\r\n?/g, '\n').split('\n');
  const out: Logical[] = [];
  let base64 = false;
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i];
    const last = out[out.length - 1];
    if (raw.trim() === '') {
      base64 = false; // 2.1 ends a base64 value with an empty line
      continue;
    }
    if (last && /^[ \t]/.test(raw)) {
      last.text += base64 ? raw.trim() : raw.slice(1);
      continue;
    }
    if (last && base64 && /^[A-Za-z0-9+/=]+$/.test(raw.trim()) && colonOutsideQuotes(raw) === -1) {
      last.text += raw.trim(); // unindented base64 continuation, as some exporters write it
      continue;
    }
    const entry = { text: raw, line: i + 1 };
    // A quoted-printable value ending in "=" continues on the next line.
    while (isQuotedPrintable(entry.text.slice(0, Math.max(0, colonOutsideQuotes(entry.text)))) && entry.text.endsWith('=') && i + 1 < lines.length) {
      entry.text = entry.text.slice(0, -1) + lines[++i].replace(/^[ \t]+/, '');
    }
    const colon = colonOutsideQuotes(entry.text);
    base64 = colon > 0 && /;\s*(encoding\s*=\s*)?(base64|b)\s*(;|:|$)/i.test(entry.text.slice(0, colon + 1));
    out.push(entry);
  }
  return out;
}

function decodeQuotedPrintable(value: string, charset: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '=' && /^[0-9A-Fa-f]{2}$/.test(value.slice(i + 1, i + 3))) {
      bytes.push(parseInt(value.slice(i + 1, i + 3), 16));
      i += 2;
    } else for (const b of Buffer.from(c, 'utf8')) bytes.push(b);
  }
  const buf = Buffer.from(bytes);
  return iconv.encodingExists(charset) ? iconv.decode(buf, charset) : buf.toString('utf8');
}

function escapeText(value: string, structured: boolean): string {
  const v = value.replace(/\\/g, '\\\\').replace(/\r?\n/g, '\\n');
  return structured ? v : v.replace(/([,;])/g, '\\$1');
}

function quoteParam(v: string): string {
  return /[:;,]/.test(v) ? `"${v.replace(/"/g, '')}"` : v;
}

/**
 * One property line rewritten for ical.js: 2.1 parameters and encodings made 3.0. Returns the line
 * unchanged when there is nothing to do.
 */
export function normaliseProperty(line: string): string {
  const colon = colonOutsideQuotes(line);
  if (colon <= 0) return line;
  const head = line.slice(0, colon);
  let value = line.slice(colon + 1);
  const [nameWithGroup, ...rawParams] = splitOutsideQuotes(head, ';');
  const name = nameWithGroup.slice(nameWithGroup.lastIndexOf('.') + 1).toUpperCase();
  const needsWork = rawParams.some((p) => p.trim() === '' || !p.includes('=') || /^(encoding|charset)\s*=/i.test(p.trim()));
  if (!needsWork) return line;
  const types: string[] = [];
  const params: string[] = [];
  let encoding: string | null = null;
  let charset = 'utf-8';
  for (const p of rawParams.map((x) => x.trim()).filter(Boolean)) {
    const eq = p.indexOf('=');
    if (eq === -1) {
      if (ENCODINGS.has(p.toUpperCase())) encoding = p.toUpperCase();
      else types.push(p);
      continue;
    }
    const key = p.slice(0, eq).trim().toUpperCase();
    const val = p.slice(eq + 1).trim();
    if (key === 'ENCODING') encoding = val.replace(/"/g, '').toUpperCase();
    else if (key === 'CHARSET') charset = val.replace(/"/g, '');
    else if (key === 'TYPE') types.push(...splitOutsideQuotes(val, ',').map((t) => t.replace(/"/g, '')));
    else params.push(`${key}=${val}`);
  }
  if (encoding === 'QUOTED-PRINTABLE') {
    const structured = STRUCTURED.has(name);
    const parts = structured ? value.split(';') : [value];
    value = parts.map((part) => escapeText(decodeQuotedPrintable(part, charset), structured)).join(';');
  } else if (encoding === 'BASE64' || encoding === 'B') {
    value = value.replace(/\s+/g, '');
    params.push('ENCODING=b');
  }
  if (types.length) params.push(`TYPE=${types.filter(Boolean).map(quoteParam).join(',')}`);
  return [nameWithGroup, ...params].join(';') + ':' + value;
}

/** The cards of a .vcf text, each as text ical.js can be given (2.1 rewritten as 3.0). */
export function vcardTexts(text: string): CardText[] {
  const cards: CardText[] = [];
  let cur: { props: { text: string; line: number; name: string }[]; version: string | null } | null = null;
  for (const l of logicalLines(text)) {
    const t = l.text.trim();
    if (/^begin\s*:\s*vcard$/i.test(t)) {
      cur = { props: [], version: null };
      continue;
    }
    if (/^end\s*:\s*vcard$/i.test(t)) {
      if (cur) {
        // A 2.1 card (or one without VERSION) is given to ical.js as 3.0.
        const version = cur.version === '4.0' ? '4.0' : '3.0';
        const body = cur.props.map((p) => p.text);
        cards.push({ index: cards.length + 1, text: ['BEGIN:VCARD', `VERSION:${version}`, ...body, 'END:VCARD'].join('\r\n') + '\r\n', properties: cur.props });
      }
      cur = null;
      continue;
    }
    if (!cur) continue;
    const v = /^version\s*:\s*(\S+)$/i.exec(t);
    if (v) {
      cur.version = v[1];
      continue;
    }
    const colon = colonOutsideQuotes(l.text);
    const name = (colon > 0 ? splitOutsideQuotes(l.text.slice(0, colon), ';')[0] : l.text.split(/[;:]/)[0]).trim().toUpperCase() || '(empty)';
    cur.props.push({ text: normaliseProperty(l.text), line: l.line, name });
  }
  return cards;
}
