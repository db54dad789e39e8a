/**
 * Splits mbox files into messages, streaming (an mbox can be gigabytes), the way mutt and Python's
 * `mailbox` module read the mbox family:
 *
 * - mboxo / mboxrd: a message starts at a `From ` line. No empty line is required before it (Python splits
 *   on every `From ` line; mutt on every one that parses as a From_ line with a date). A `From ` line in
 *   the middle of a message splits it when it follows an empty line, carries a date, or names only a
 *   sender (`From alice@example.org`), so a sentence that starts with "From " inside a body does not.
 *   `>From ` quoting (mboxrd and mboxo) is undone by removing one `>`.
 * - mboxcl / mboxcl2: a `Content-Length:` header gives the body's length. As mutt does, it is trusted when
 *   the file ends there or the next non-empty line is a `From ` line; the body is then taken as it is
 *   (its `From ` lines are text, not separators). A wrong count is ignored and the body split as above.
 *
 * Every message is yielded, with its index (1-based), its `From ` line (a date for messages whose Date
 * header is broken) and its byte offset; one larger than the limit is yielded as `oversized` with no
 * bytes, so callers can count and report it.
 */
import fs from 'node:fs';

export interface MboxMessage {
  /** 1-based position in the file. */
  index: number;
  /** The separator line without its line break, or null for text before the first `From ` line. */
  fromLine: string | null;
  /** Byte offset of the separator line (or of the message, when it has none). */
  offset: number;
  /** The message (empty when `oversized`). */
  bytes: Buffer;
  oversized: boolean;
}

export interface MboxOptions {
  /** Largest message kept in memory; larger ones are yielded as `oversized`. */
  maxMessageBytes: number;
  /** Byte offset to start reading at (where a message starts); offsets stay the file's. Default 0. */
  start?: number;
}

const FROM_ = /^From \S+/;
// asctime as mbox writers put it: "Tue Apr  7 10:00:00 2026", optionally with a zone before the year.
const FROM_DATE = /^From \S+\s+(?:\S+\s+)?(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\s+(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+\d{1,2}\s+\d{1,2}:\d{2}/i;

function isBlank(line: Buffer): boolean {
  return line.length === 0 || (line.length === 1 && line[0] === 0x0a) || (line.length === 2 && line[0] === 0x0d && line[1] === 0x0a);
}

function startsWithFrom(line: Buffer): boolean {
  return line.length >= 5 && line[0] === 0x46 && line[1] === 0x72 && line[2] === 0x6f && line[3] === 0x6d && line[4] === 0x20;
}

function text(line: Buffer, max = 200): string {
  return line.subarray(0, Math.min(line.length, max)).toString('latin1').replace(/\r?\n$/, '');
}

/** A `From ` line that starts a message; `afterBlank`/`atStart` relax the test to any `From ` line. */
function isSeparator(line: Buffer, afterBlank: boolean): boolean {
  if (!startsWithFrom(line)) return false;
  if (afterBlank) return true;
  const t = text(line);
  return FROM_DATE.test(t) || /^From \S+\s*$/.test(t);
}

interface Current {
  fromLine: string | null;
  offset: number;
  lines: Buffer[];
  size: number;
  oversized: boolean;
  inHeaders: boolean;
  contentLength: number | null;
}

/** Splits an mbox byte stream into messages. */
export async function* splitMbox(input: AsyncIterable<Buffer>, opts: MboxOptions): AsyncGenerator<MboxMessage> {
  let index = 0;
  let offset = opts.start ?? 0; // byte offset of the line being handled
  let prevBlank = true; // the start of the file counts as after an empty line
  let cur: Current | null = null;
  // Counted (Content-Length) body: lines taken on trust, and the empty lines seen after the count ran out.
  let counted: { remaining: number; lines: Buffer[]; blanks: Buffer[] } | null = null;
  const out: MboxMessage[] = [];

  const start = (fromLine: string | null, at: number): Current => ({ fromLine, offset: at, lines: [], size: 0, oversized: false, inHeaders: true, contentLength: null });
  const push = (c: Current, line: Buffer) => {
    if (c.oversized) return;
    if (c.size + line.length > opts.maxMessageBytes) {
      c.oversized = true;
      c.lines = [];
      return;
    }
    c.lines.push(line);
    c.size += line.length;
  };
  const finish = (trimBlank: boolean) => {
    if (!cur) return;
    const c = cur;
    cur = null;
    // The empty line before the next "From " belongs to the separator.
    if (trimBlank && c.lines.length && isBlank(c.lines[c.lines.length - 1])) c.lines.pop();
    // Text before the first From line is a message only when it holds something.
    if (c.fromLine === null && !c.oversized && c.lines.every(isBlank)) return;
    index++;
    out.push({ index, fromLine: c.fromLine, offset: c.offset, bytes: c.oversized ? Buffer.alloc(0) : Buffer.concat(c.lines), oversized: c.oversized });
  };

  const scanLine = (line: Buffer, at: number) => {
    if (isSeparator(line, prevBlank || cur === null)) {
      finish(true);
      cur = start(text(line), at);
      prevBlank = false;
      return;
    }
    cur ??= start(null, at);
    let l = line;
    if (l[0] === 0x3e && /^>+From /.test(text(l, 80))) l = l.subarray(1);
    push(cur, l);
    prevBlank = isBlank(line);
    if (cur.inHeaders) {
      if (prevBlank) {
        cur.inHeaders = false;
        if (cur.contentLength !== null && !cur.oversized) counted = { remaining: cur.contentLength, lines: [], blanks: [] };
      } else {
        const m = /^content-length:\s*(\d{1,12})\s*$/i.exec(text(line, 64));
        if (m) cur.contentLength = Number(m[1]);
      }
    }
  };

  // The count did not hold: the counted lines are read again as ordinary lines.
  const distrust = (more: Buffer[], at: number) => {
    const c = counted!;
    counted = null;
    const replay = [...c.lines, ...c.blanks, ...more];
    let pos = at - replay.reduce((n, l) => n + l.length, 0);
    const c2 = cur as Current | null;
    if (c2) {
      c2.contentLength = null;
      if (!c2.oversized) {
        for (const l of c.lines) c2.size -= l.length;
        c2.lines.splice(c2.lines.length - c.lines.length, c.lines.length);
      }
    }
    // Through handle(): a replayed line may start a message with its own Content-Length.
    for (const l of replay) {
      handle(l, pos);
      pos += l.length;
    }
  };

  function handle(line: Buffer, at: number): void {
    if (counted) {
      if (counted.remaining > 0) {
        counted.lines.push(line);
        push(cur!, line);
        counted.remaining -= line.length;
        if (counted.remaining < 0) distrust([], at + line.length); // the count ends inside a line
        return;
      }
      if (isBlank(line)) {
        counted.blanks.push(line);
        return;
      }
      if (startsWithFrom(line)) {
        counted = null;
        finish(false);
        cur = start(text(line), at);
        prevBlank = false;
        return;
      }
      distrust([line], at + line.length);
      return;
    }
    scanLine(line, at);
  }

  let carry = Buffer.alloc(0);
  for await (const chunk of input) {
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    let pos = 0;
    for (;;) {
      const nl = buf.indexOf(0x0a, pos);
      if (nl === -1) break;
      handle(buf.subarray(pos, nl + 1), offset);
      offset += nl + 1 - pos;
      pos = nl + 1;
    }
    carry = Buffer.from(buf.subarray(pos));
    while (out.length) yield out.shift()!;
  }
  if (carry.length) {
    handle(carry, offset);
    offset += carry.length;
  }
  for (;;) {
    const c = counted as { remaining: number } | null;
    if (c && c.remaining > 0) {
      distrust([], offset); // the file ends inside the counted body: the count was wrong
      continue;
    }
    counted = null;
    finish(!c); // a count that ran out at the end of the file gives the exact body
    break;
  }
  while (out.length) yield out.shift()!;
}

/** Splits the mbox file at `file` (from `opts.start`, numbering the first message read 1). */
export function readMboxFile(file: string, opts: MboxOptions): AsyncGenerator<MboxMessage> {
  return splitMbox(fs.createReadStream(file, { highWaterMark: 1 << 20, start: opts.start ?? 0 }) as AsyncIterable<Buffer>, opts);
}
