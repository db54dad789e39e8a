/**
 * Text files in the encoding they declare (issue 21 item 8): XML by its `<?xml … encoding=…?>`, HTML by
 * `<meta charset>` / `http-equiv`; UTF-32 (with or without BOM) and ISO-2022-JP recognised by their bytes
 * instead of being guessed (or refused as binary).
 */
import iconv from 'iconv-lite';
import { describe, expect, it } from 'vitest';
import { extractText } from '../../src/files/extract.ts';

const xml = (encoding: string, text: string) =>
  Buffer.concat([Buffer.from(`<?xml version="1.0" encoding="${encoding}"?>\n<doc><p>`), iconv.encode(text, encoding), Buffer.from('</p></doc>\n')]);

describe('declared and pattern-recognised encodings', () => {
  it.each([
    ['KOI8-R', 'Съешь же ещё этих мягких французских булок, да выпей чаю'],
    ['IBM866', 'Съешь же ещё этих мягких французских булок, да выпей чаю'],
    ['IBM855', 'Съешь же ещё этих мягких французских булок'],
    ['ISO-8859-7', 'Ξεσκεπάζω την ψυχοφθόρα βδελυγμία'],
    ['ISO-8859-8', 'דג סקרן שט בים מאוכזב ולפתע מצא חברה'],
  ])('XML declaring %s is decoded in it', async (encoding, text) => {
    const r = await extractText({ buffer: xml(encoding, text), filename: 'doc.xml' });
    expect(r.status).toBe('ready');
    expect(r.charset).toBe(encoding.toLowerCase());
    expect(r.text).toContain(text);
  });

  it('HTML declaring its charset in a meta tag (charset= or http-equiv) is decoded in it', async () => {
    const text = 'Съешь же ещё этих мягких французских булок';
    const page = (meta: string) => Buffer.concat([Buffer.from(`<!doctype html><html><head>${meta}<title>t</title></head><body><p>`), iconv.encode(text, 'windows-1251'), Buffer.from('</p></body></html>')]);
    for (const meta of ['<meta charset="windows-1251">', '<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">']) {
      const r = await extractText({ buffer: page(meta), filename: 'page.html' });
      expect(r.text).toContain(text);
    }
  });

  it('UTF-32 without a BOM (LE and BE) and with one is text, not binary', async () => {
    const text = 'Plain words in UTF-32: naïve café, 日本語.';
    const le = iconv.encode(text, 'utf-32le');
    const be = iconv.encode(text, 'utf-32be');
    for (const [buf, cs] of [[le, 'utf-32le'], [be, 'utf-32be'], [Buffer.concat([Buffer.from([0xff, 0xfe, 0, 0]), le]), 'utf-32le']] as const) {
      const r = await extractText({ buffer: buf, filename: 'notes.txt' });
      expect(r).toMatchObject({ status: 'ready', charset: cs, text });
    }
  });

  it('ISO-2022-JP is decoded, not read as ASCII with its escapes stripped', async () => {
    // 日本語のテキスト: ESC $ B switches to JIS X 0208, ESC ( B back to ASCII.
    const jis = Buffer.from('\x1b$BF|K\\8l$N%F%-%9%H\x1b(B (memo)\n', 'latin1');
    const r = await extractText({ buffer: jis, filename: 'memo.txt' });
    expect(r).toMatchObject({ status: 'ready', charset: 'iso-2022-jp' });
    expect(r.text).toBe('日本語のテキスト (memo)');
  });
});
