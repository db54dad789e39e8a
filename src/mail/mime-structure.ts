/**
 * Where the parts of a MIME message lie in its bytes, numbered the IMAP way (RFC 3501 §6.4.5: "1",
 * "2", "2.1"…). postal-mime decodes messages (message.ts); this only locates parts so that a message can be repaired
 * before it is decoded (Apple Mail's `.partial.emlx` leaves attachment bodies out and names them by
 * these part numbers). Works on a latin1 string of the bytes, so string offsets are byte offsets.
 */

export interface MimeLeaf {
  /** IMAP part number ("1", "2.3"). */
  part: string;
  /** Header values (folding removed) by lowercased name; the first occurrence wins. */
  headers: Map<string, string>;
  /** Offsets of the header block, and of the body (up to, not including, the line break before the next delimiter). */
  headerStart: number;
  bodyStart: number;
  end: number;
}

const MAX_DEPTH = 32;

function parseHeaders(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of text.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (!out.has(name)) out.set(name, line.slice(colon + 1).trim());
  }
  return out;
}

/** A parameter of a structured header value (`boundary`, `filename`, `name`), unquoted; RFC 2231 `*` forms are not joined. */
export function headerParam(value: string | undefined, name: string): string | null {
  if (!value) return null;
  const re = new RegExp(`(?:^|;)\\s*${name}\\s*=\\s*(?:"((?:[^"\\\\]|\\\\.)*)"|([^;\\s]+))`, 'i');
  const m = re.exec(value);
  if (!m) return null;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2];
}

/** Every non-multipart part of the message in `s` (latin1 text of its bytes), in order. */
export function mimeLeaves(s: string): MimeLeaf[] {
  const out: MimeLeaf[] = [];
  const walk = (start: number, end: number, part: string, depth: number) => {
    // The header block ends at the first empty line; a part may also start with one (no headers).
    let headerEnd: number;
    let bodyStart: number;
    const blank = /\r?\n\r?\n/g;
    if (s.startsWith('\r\n', start) || s.startsWith('\n', start)) {
      headerEnd = start;
      bodyStart = start + (s[start] === '\r' ? 2 : 1);
    } else {
      blank.lastIndex = start;
      const m = blank.exec(s);
      if (!m || m.index >= end) {
        headerEnd = end;
        bodyStart = end;
      } else {
        headerEnd = m.index;
        bodyStart = m.index + m[0].length;
      }
    }
    const headers = parseHeaders(s.slice(start, headerEnd));
    const type = (headers.get('content-type') ?? '').toLowerCase();
    const boundary = type.startsWith('multipart/') ? headerParam(headers.get('content-type'), 'boundary') : null;
    if (!boundary || depth >= MAX_DEPTH) {
      out.push({ part: part || '1', headers, headerStart: start, bodyStart, end });
      return;
    }
    const delim = `--${boundary}`;
    let childStart = -1;
    let n = 0;
    let pos = bodyStart;
    while (pos < end) {
      let nl = s.indexOf('\n', pos);
      if (nl === -1 || nl >= end) nl = end;
      const line = s.slice(pos, nl).replace(/\r$/, '');
      if (line.startsWith(delim)) {
        const rest = line.slice(delim.length);
        const closing = /^--[ \t]*$/.test(rest);
        if (closing || /^[ \t]*$/.test(rest)) {
          if (childStart >= 0) {
            // The line break before a delimiter belongs to the delimiter.
            const childEnd = pos > childStart ? pos - (s[pos - 2] === '\r' ? 2 : 1) : pos;
            n++;
            walk(childStart, Math.max(childStart, childEnd), part ? `${part}.${n}` : String(n), depth + 1);
          }
          if (closing) return;
          childStart = nl + 1;
        }
      }
      pos = nl + 1;
    }
    if (childStart >= 0 && childStart < end) {
      n++;
      walk(childStart, end, part ? `${part}.${n}` : String(n), depth + 1);
    }
  };
  walk(0, s.length, '', 0);
  return out;
}

export interface LeafReplacement {
  leaf: MimeLeaf;
  /** The part's new header lines (no line breaks at the end); a Content-Transfer-Encoding: base64 is added. */
  headerLines: string[];
  /** The decoded content, written as base64. */
  content: Buffer;
}

/** Header lines of a part's header block, each with its folding kept (joined with the message's line break). */
export function leafHeaderLines(s: string, leaf: MimeLeaf): string[] {
  const eol = s.includes('\r\n') ? '\r\n' : '\n';
  return s
    .slice(leaf.headerStart, leaf.bodyStart)
    .replace(/\r?\n[ \t]+/g, (m) => m.replace(/\r?\n/, '\u0000'))
    .split(/\r?\n/)
    .filter((l) => l !== '')
    .map((l) => l.replace(/\u0000/g, eol));
}

/** The message with the given parts' headers and bodies replaced (bodies as base64), in message order. */
export function replaceLeaves(message: Buffer, s: string, replacements: LeafReplacement[]): Buffer {
  if (replacements.length === 0) return message;
  const eol = s.includes('\r\n') ? '\r\n' : '\n';
  const pieces: Buffer[] = [];
  let at = 0;
  for (const r of [...replacements].sort((a, b) => a.leaf.headerStart - b.leaf.headerStart)) {
    const lines = r.headerLines.filter((l) => !/^content-transfer-encoding\s*:/i.test(l));
    lines.push('Content-Transfer-Encoding: base64');
    const b64 = r.content.toString('base64').replace(/(.{76})(?=.)/g, `$1${eol}`);
    pieces.push(message.subarray(at, r.leaf.headerStart), Buffer.from(lines.join(eol) + eol + eol + b64, 'latin1'));
    at = r.leaf.end;
  }
  pieces.push(message.subarray(at));
  return Buffer.concat(pieces);
}
