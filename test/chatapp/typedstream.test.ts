import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseBplist, PlistUid } from '../../src/agent/collectors/chatapp/bplist.ts';
import {
  decodeAttributedBody,
  decodeAttributedBodyDetailed,
} from '../../src/agent/collectors/chatapp/typedstream.ts';
import {
  encodeBplist,
  encodeKeyedArchiverAttributedString,
  encodeTypedstream,
  Uid,
} from '../helpers/chatdb-builder.ts';

/**
 * attributedBody of a real Messages row holding "Hello World" (macOS 13), as published by several
 * chat.db tools; the writer in the helpers must produce these exact bytes.
 */
const REAL_HELLO_WORLD =
  '040b73747265616d747970656481e803840140848484124e5341747472696275746564537472696e67008484084e534f626a656374' +
  '008592848484084e53537472696e67019484012b0b48656c6c6f20576f726c648684026949010b928484840c4e5344696374696f6e' +
  '617279009484016901928496961d5f5f6b494d4d657373616765506172744174747269627574654e616d658692848484084e534e75' +
  '6d626572008484074e5356616c7565009484012a84999900868686';

describe('typedstream attributedBody', () => {
  it('decodes the bytes macOS writes, and the test writer reproduces them exactly', () => {
    const real = Buffer.from(REAL_HELLO_WORLD, 'hex');
    expect(decodeAttributedBodyDetailed(real)).toEqual({ text: 'Hello World', method: 'typedstream' });
    expect(encodeTypedstream('Hello World').toString('hex')).toBe(REAL_HELLO_WORLD);
  });

  const samples: [string, string][] = [
    ['emoji', 'Running late 🏃‍♀️💨 see you at 7 👍🏽'],
    ['CJK', '明天下午三点在咖啡馆见面吧，好吗？'],
    ['Cyrillic', 'Привет! Как дела? Увидимся завтра.'],
    ['Arabic + Hebrew', 'مرحبا بالعالم — שלום עולם'],
    ['Japanese + flags', 'おはようございます 🇯🇵🇫🇷'],
    ['newlines and quotes', 'line one\nline "two"\n\ttabbed'],
  ];
  for (const [name, text] of samples) {
    it(`round-trips ${name} text (lengths counted in UTF-8 bytes)`, () => {
      expect(decodeAttributedBody(encodeTypedstream(text))).toBe(text);
    });
  }

  it('reads every length-prefix size: 1 byte, 0x81 + uint16, 0x82 + uint32', () => {
    const cases: [string, number][] = [
      ['a'.repeat(127), 0x7f], // largest single-byte length
      ['b'.repeat(128), 0x81],
      ['é'.repeat(100), 0x81], // 100 chars but 200 bytes: the prefix counts bytes
      ['c'.repeat(30_000), 0x81],
      ['d'.repeat(65_535), 0x82], // above int16: Apple's writer switches to 0x82
      ['€'.repeat(30_000), 0x82], // 90,000 bytes
      ['e'.repeat(200_000), 0x82],
    ];
    for (const [text, prefix] of cases) {
      const blob = encodeTypedstream(text);
      const at = blob.indexOf(Buffer.from([0x84, 0x01, 0x2b])) + 3;
      expect(blob[at]).toBe(prefix);
      expect(decodeAttributedBody(blob)).toBe(text);
    }
  });

  it('treats a 0x81 length as unsigned 16-bit (lengths 32768..65535)', () => {
    const text = 'f'.repeat(50_000);
    const blob = encodeTypedstream(text, { unsignedInt16Lengths: true });
    const at = blob.indexOf(Buffer.from([0x84, 0x01, 0x2b])) + 3;
    expect(blob[at]).toBe(0x81);
    expect(decodeAttributedBody(blob)).toBe(text);
  });

  it('handles NSMutableAttributedString with an NSMutableString inside', () => {
    const text = 'Edited: see the 📎 below';
    const blob = encodeTypedstream(text, { attributedClass: 'NSMutableAttributedString', stringClass: 'NSMutableString' });
    expect(blob.includes(Buffer.from('NSMutableString'))).toBe(true);
    expect(decodeAttributedBody(blob)).toBe(text);
  });

  it('trims whitespace and yields null for an empty string', () => {
    expect(decodeAttributedBody(encodeTypedstream('  padded  '))).toBe('padded');
    expect(decodeAttributedBody(encodeTypedstream(''))).toBeNull();
    expect(decodeAttributedBody(encodeTypedstream('   \n '))).toBeNull();
  });

  it('falls back to the longest printable run when the length prefix is corrupt', () => {
    const blob = encodeTypedstream('Meet me at the station');
    const at = blob.indexOf(Buffer.from([0x84, 0x01, 0x2b])) + 3;
    blob[at] = 0x90; // a tag byte, not a length
    expect(decodeAttributedBodyDetailed(blob)).toEqual({ text: 'Meet me at the station', method: 'printable_fallback' });
  });

  it('returns null for empty input, random garbage and a header with no text', () => {
    expect(decodeAttributedBody(null)).toBeNull();
    expect(decodeAttributedBody(undefined)).toBeNull();
    expect(decodeAttributedBody(new Uint8Array())).toBeNull();
    for (let i = 0; i < 50; i++) {
      const garbage = crypto.randomBytes(10 + i * 20);
      expect(decodeAttributedBody(garbage)).toBeNull();
    }
    // Header and class chain only: no NSString payload.
    const headerOnly = encodeTypedstream('x').subarray(0, 60);
    expect(decodeAttributedBody(headerOnly)).toBeNull();
  });

  it('never throws or hangs on mutated and truncated blobs', () => {
    const base = encodeTypedstream('The quick brown fox 🦊 jumps over the lazy dog');
    for (let i = 0; i < 3000; i++) {
      const b = Buffer.from(base);
      const flips = 1 + (i % 5);
      for (let j = 0; j < flips; j++) b[crypto.randomInt(b.length)] = crypto.randomInt(256);
      const cut = b.subarray(0, crypto.randomInt(b.length + 1));
      const out = decodeAttributedBody(cut);
      expect(out === null || typeof out === 'string').toBe(true);
    }
    // A length that points far past the end.
    const huge = Buffer.concat([base.subarray(0, base.indexOf(Buffer.from([0x84, 0x01, 0x2b])) + 3), Buffer.from([0x82, 0xff, 0xff, 0xff, 0x7f]), Buffer.from('tail')]);
    expect(() => decodeAttributedBody(huge)).not.toThrow();
  });
});

describe('NSKeyedArchiver attributedBody', () => {
  it('follows $top.root to NSString', () => {
    expect(decodeAttributedBodyDetailed(encodeKeyedArchiverAttributedString('Dinner at 8?'))).toEqual({
      text: 'Dinner at 8?',
      method: 'keyed_archiver',
    });
  });

  it('resolves NS.string inside an NSMutableString and keeps non-Latin text (UTF-16 in the plist)', () => {
    const text = 'Спасибо! 谢谢 🙏';
    expect(decodeAttributedBody(encodeKeyedArchiverAttributedString(text, { mutableString: true }))).toBe(text);
  });

  it('falls back to the longest non-class string when the root is unusable', () => {
    const blob = encodeBplist({
      $version: 100000,
      $archiver: 'NSKeyedArchiver',
      $top: { root: new Uid(99) },
      $objects: ['$null', 'NSAttributedString', 'the actual message text', '__kIMMessagePartAttributeName'],
    });
    expect(decodeAttributedBody(blob)).toBe('the actual message text');
  });

  it('reads a plain bplist and survives hostile ones', () => {
    const v = parseBplist(encodeBplist({ a: [1, 'two', new Uid(3)], b: true, c: 'ü' }));
    expect(v).toMatchObject({ a: [1, 'two', new PlistUid(3)], b: true, c: 'ü' });

    // Self-referencing array: object 0 is an array whose only element is object 0.
    const cyclic = Buffer.concat([
      Buffer.from('bplist00'),
      Buffer.from([0xa1, 0x00]), // array of 1 ref -> 0
      Buffer.from([0x08]), // offset table: object 0 at 8
      trailer(1, 1, 1, 0, 10),
    ]);
    expect(parseBplist(cyclic)).toEqual([null]);

    // A DAG where every level references the next twice: exponential without memoisation.
    const n = 60;
    const objs: Buffer[] = [];
    for (let i = 0; i < n - 1; i++) objs.push(Buffer.from([0xa2, i + 1, i + 1]));
    objs.push(Buffer.from([0x10, 0x07]));
    const offsets: number[] = [];
    let pos = 8;
    for (const o of objs) {
      offsets.push(pos);
      pos += o.length;
    }
    const dag = Buffer.concat([Buffer.from('bplist00'), ...objs, Buffer.from(offsets), trailer(1, 1, n, 0, pos)]);
    // Without memoisation this would not finish (2^59 visits); the test timeout catches a regression.
    expect(parseBplist(dag)).not.toBeNull();

    // Trailer claiming absurd counts and offsets.
    expect(parseBplist(Buffer.concat([Buffer.from('bplist00'), Buffer.from([0x08]), trailer(1, 1, 2 ** 40, 0, 8)]))).toBeNull();
    expect(parseBplist(Buffer.concat([Buffer.from('bplist00'), Buffer.from([0x5f, 0x10, 0xff]), Buffer.from([8]), trailer(1, 1, 1, 0, 11)]))).toBeNull();
  });

  it('never throws on mutated keyed archives', () => {
    const base = encodeKeyedArchiverAttributedString('keyed archive text ✅', { mutableString: true });
    for (let i = 0; i < 2000; i++) {
      const b = Buffer.from(base);
      for (let j = 0; j < 1 + (i % 4); j++) b[8 + crypto.randomInt(b.length - 8)] = crypto.randomInt(256);
      const out = decodeAttributedBody(b);
      expect(out === null || typeof out === 'string').toBe(true);
    }
  });
});

function trailer(offsetSize: number, refSize: number, numObjects: number, top: number, offsetTable: number): Buffer {
  const t = Buffer.alloc(32);
  t[6] = offsetSize;
  t[7] = refSize;
  t.writeBigUInt64BE(BigInt(numObjects), 8);
  t.writeBigUInt64BE(BigInt(top), 16);
  t.writeBigUInt64BE(BigInt(offsetTable), 24);
  return t;
}
