/**
 * mbox splitting (issue 21 item 6) as mutt and Python's mailbox read the family: mboxo/mboxrd without an
 * empty line before `From `, `>From ` unquoting, mboxcl2 bodies delimited by Content-Length (with
 * unquoted `From ` lines inside), wrong counts ignored, CRLF files, every message counted.
 */
import { describe, expect, it } from 'vitest';
import { splitMbox, type MboxMessage } from '../../src/mail/mbox.ts';

async function split(data: string | Buffer, opts: { chunk?: number; max?: number } = {}): Promise<MboxMessage[]> {
  const buf = Buffer.isBuffer(data) ? data : Buffer.from(data, 'latin1');
  const size = opts.chunk ?? buf.length;
  async function* chunks() {
    for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
  }
  const out: MboxMessage[] = [];
  for await (const m of splitMbox(chunks(), { maxMessageBytes: opts.max ?? 1 << 20 })) out.push(m);
  return out;
}

const subjects = (ms: MboxMessage[]) => ms.map((m) => /^Subject: (.*)$/m.exec(m.bytes.toString('latin1'))?.[1] ?? null);

describe('mbox splitting', () => {
  it('minimal mbox: From lines with no empty line before them still start messages', async () => {
    const data = [
      'From alice@example.org Mon Mar  4 10:00:00 2024\nSubject: one\n\nfirst body\n',
      'From bob@example.org Mon Mar  4 11:00:00 2024\nSubject: two\n\nsecond body\n',
      'From carol@example.org\nSubject: three\n\nthird body\n',
    ].join('');
    const ms = await split(data);
    expect(subjects(ms)).toEqual(['one', 'two', 'three']);
    expect(ms.map((m) => m.fromLine)).toEqual([
      'From alice@example.org Mon Mar  4 10:00:00 2024',
      'From bob@example.org Mon Mar  4 11:00:00 2024',
      'From carol@example.org',
    ]);
    expect(ms[0].bytes.toString()).toBe('Subject: one\n\nfirst body\n');
  });

  it('a body sentence starting with "From " does not split; >From quoting is undone (one level)', async () => {
    const data =
      'From a@example.org Mon Mar  4 10:00:00 2024\nSubject: quoted\n\nWe met in Rome.\nFrom there we drove north.\n>From the quoted line.\n>>From twice quoted.\n\n' +
      'From b@example.org Mon Mar  4 10:05:00 2024\nSubject: next\n\nbody\n';
    const ms = await split(data);
    expect(subjects(ms)).toEqual(['quoted', 'next']);
    const body = ms[0].bytes.toString();
    expect(body).toContain('\nFrom there we drove north.\nFrom the quoted line.\n>From twice quoted.\n');
    expect(body.endsWith('>From twice quoted.\n')).toBe(true); // the separator's empty line is not the message's
  });

  it('mboxcl2: Content-Length bodies keep unquoted From lines; a wrong count is ignored', async () => {
    const body1 = 'Forwarded log:\n\nFrom x@example.org Mon Mar  4 09:00:00 2024\nSubject: not a message\n\nend of log\n';
    const body3 = 'short\n';
    const data =
      `From a@example.org Mon Mar  4 10:00:00 2024\nSubject: counted\nContent-Length: ${Buffer.byteLength(body1)}\n\n${body1}\n` +
      `From b@example.org Mon Mar  4 10:01:00 2024\nSubject: zero\nContent-Length: 0\n\n\n` +
      // A count far too large: ignored, the message is split as mboxo.
      `From c@example.org Mon Mar  4 10:02:00 2024\nSubject: wrong count\nContent-Length: 9999\n\n${body3}\n` +
      `From d@example.org Mon Mar  4 10:03:00 2024\nSubject: after\nContent-Length: 3\n\nabc`;
    for (const chunk of [undefined, 7]) {
      const ms = await split(data, { chunk });
      expect(subjects(ms)).toEqual(['counted', 'zero', 'wrong count', 'after']);
      expect(ms[0].bytes.toString()).toContain(body1);
      expect(ms[0].bytes.toString().endsWith('end of log\n')).toBe(true);
      expect(ms[2].bytes.toString()).toBe('Subject: wrong count\nContent-Length: 9999\n\nshort\n');
      expect(ms[3].bytes.toString().endsWith('\n\nabc')).toBe(true);
    }
  });

  it('a count that ends inside a line, or on a line that is not From, is not trusted', async () => {
    const data =
      'From a@example.org Mon Mar  4 10:00:00 2024\nSubject: a\nContent-Length: 4\n\nhello world\n' +
      'From b@example.org Mon Mar  4 10:01:00 2024\nSubject: b\nContent-Length: 6\n\nline1\nline2\n' +
      'From c@example.org Mon Mar  4 10:02:00 2024\nSubject: c\n\nc\n';
    const ms = await split(data);
    expect(subjects(ms)).toEqual(['a', 'b', 'c']);
    expect(ms[1].bytes.toString()).toBe('Subject: b\nContent-Length: 6\n\nline1\nline2\n');
  });

  it('CRLF files, text before the first From line, and an oversized message are all counted', async () => {
    const big = 'x'.repeat(300) + '\r\n';
    const data = 'stray header: junk\r\n\r\nFrom a@example.org Mon Mar  4 10:00:00 2024\r\nSubject: one\r\n\r\nbody\r\n\r\nFrom b@example.org Mon Mar  4 10:01:00 2024\r\nSubject: big\r\n\r\n' + big.repeat(10) + '\r\nFrom c@example.org Mon Mar  4 10:02:00 2024\r\nSubject: three\r\n\r\nbody\r\n';
    const ms = await split(data, { max: 1000, chunk: 64 });
    expect(ms.map((m) => m.index)).toEqual([1, 2, 3, 4]);
    expect(ms[0].fromLine).toBeNull();
    expect(ms[1].bytes.toString()).toBe('Subject: one\r\n\r\nbody\r\n');
    expect(ms[2]).toMatchObject({ oversized: true, bytes: Buffer.alloc(0) });
    expect(subjects([ms[3]])).toEqual(['three']);
    expect(ms[3].offset).toBe(data.indexOf('From c@'));
  });
});
