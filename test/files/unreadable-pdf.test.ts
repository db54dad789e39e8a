/**
 * PDFs whose text layer is not text (issue 21 item 9): fonts without a Unicode map make pdf.js return
 * glyph codes, e.g. every letter shifted by 29 code points ("3HQČåQt" for "Peněžní"). The share of
 * word-like text tells them apart; such a PDF is OCRed from its rendered pages and marked `pdf-ocr`.
 */
import { describe, expect, it } from 'vitest';
import { extractText, type OcrFunction } from '../../src/files/extract.ts';
import { wordShare } from '../../src/files/word-share.mjs';
import { makeTextPdf } from './fixtures.ts';

/** What a font without ToUnicode yields: each letter's code 29 lower (spaces stay). */
const shifted = (s: string) => s.replace(/[A-Za-z]/g, (c) => String.fromCharCode(c.charCodeAt(0) - 29));

const LINES = ['Cash and cash equivalents at the end of the period', 'Payments received from customers during the year', 'Invoice number 2024 total amount due'];

function recordingOcr(text: string): { ocr: OcrFunction; calls: number } {
  const state: { ocr: OcrFunction; calls: number } = { calls: 0, ocr: async () => (state.calls++, { text, confidence: 0.9 }) };
  return state;
}

describe('unreadable PDF text layers', () => {
  it('word share: ordinary text scores high, glyph-code garbage low', () => {
    expect(wordShare(LINES.join('\n'))).toBeGreaterThan(0.9);
    expect(wordShare('Peněžní prostředky a peněžní ekvivalenty 2024')).toBeGreaterThan(0.9);
    expect(wordShare('我们周六出发吗？ 发票号码 12345')).toBeGreaterThan(0.9);
    expect(wordShare(shifted(LINES.join('\n')))).toBeLessThan(0.5);
    expect(wordShare('3HQČåQt SURVWĜHGN\\ D SHQČåQt HNYLYDOHQW\\')).toBeLessThan(0.5);
  });

  it('a PDF with a garbage text layer is OCRed from its rendered pages, marked pdf-ocr', async () => {
    const pdf = await makeTextPdf([LINES.map(shifted)]);
    const rec = recordingOcr('Cash and cash equivalents at the end of the period');
    const r = await extractText({ buffer: pdf, filename: 'statement.pdf' }, { ocr: rec.ocr, limits: { maxPixels: 2_000_000 } });
    expect(rec.calls).toBe(1);
    expect(r).toMatchObject({ status: 'ready', method: 'pdf-ocr', text: 'Cash and cash equivalents at the end of the period' });
    expect(r.warnings.join()).toMatch(/text layer looks unreadable \(\d+% word-like text\)/);
  });

  it('without OCR the garbage is kept, flagged as needing OCR; a readable PDF is never OCRed', async () => {
    const garbage = await extractText({ buffer: await makeTextPdf([LINES.map(shifted)]), filename: 'statement.pdf' });
    expect(garbage).toMatchObject({ status: 'ready', method: 'pdf-text', needsOcr: { kind: 'pdf', reason: 'text layer unreadable; OCR not available' } });
    const rec = recordingOcr('never');
    const fine = await extractText({ buffer: await makeTextPdf([LINES]), filename: 'statement.pdf' }, { ocr: rec.ocr });
    expect(fine).toMatchObject({ status: 'ready', method: 'pdf-text' });
    expect(fine.text).toContain('Payments received from customers');
    expect(rec.calls).toBe(0);
  });
});
