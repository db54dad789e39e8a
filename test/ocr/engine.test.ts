import { afterAll, describe, expect, it } from 'vitest';
import { createOcrEngine, OcrError, type OcrResult } from '../../src/ocr/engine.ts';
import { toBmp, toPbm } from '../files/fixtures.ts';
import { renderTextImage } from './render-text.ts';

const engine = createOcrEngine({ languages: ['en'], timeoutMs: 60_000, poolSize: 1 });
afterAll(() => engine.close());

function expectBoxesInUnitSquare(result: OcrResult): void {
  expect(result.ocr_boxes.length).toBeGreaterThan(0);
  for (const box of result.ocr_boxes) {
    expect(box.level).toBe('line');
    expect(box.bbox).toHaveLength(4);
    for (const v of box.bbox) {
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThanOrEqual(1);
    }
    const [x, y, w, h] = box.bbox;
    expect(x + w).toBeLessThanOrEqual(1.0001);
    expect(y + h).toBeLessThanOrEqual(1.0001);
    expect(box.confidence).toBeGreaterThanOrEqual(0);
    expect(box.confidence).toBeLessThanOrEqual(1);
  }
}

describe('OCR engine (tesseract.js, offline traineddata)', () => {
  it('reads BMP and PBM (which sharp cannot decode) as well as PNG', async () => {
    const png = await renderTextImage('Invoice 4711 paid');
    for (const img of [await toBmp(png), await toPbm(png)]) {
      const result = await engine.recognize(img);
      expect(result.ocr_text).toMatch(/Invoice 4711 paid/);
      expect(result.image.width).toBeGreaterThan(100);
    }
  });

  it('recovers rendered text with one line box per text line, in reading order', async () => {
    const img = await renderTextImage('Quarterly report 2024\nRevenue grew by 17 percent');
    const result = await engine.recognize(img);
    expect(result.ocr_text).toMatch(/Quarterly report 2024/);
    expect(result.ocr_text).toMatch(/Revenue grew by 17 percent/);
    expectBoxesInUnitSquare(result);
    expect(result.ocr_boxes).toHaveLength(2);
    // The second line sits below the first.
    expect(result.ocr_boxes[1].bbox[1]).toBeGreaterThan(result.ocr_boxes[0].bbox[1]);
    expect(result.ocr_boxes[0].confidence).toBeGreaterThan(0.6);
    expect(result.lang).toBe('en');
    expect(result.tooling.vision).toMatch(/^tesseract\.js\//);
    expect(result.timings_ms.ocr).toBeGreaterThanOrEqual(0);
    expect(result.timings_ms.total).toBeGreaterThanOrEqual(result.timings_ms.ocr);
    expect(result.timings_ms.read).toBeUndefined();
  });

  it('reads JPEG as well as PNG and reports read time when given', async () => {
    const img = await renderTextImage('Meeting moved to Thursday', { format: 'jpeg' });
    const result = await engine.recognize(img, { readMs: 3 });
    expect(result.ocr_text).toMatch(/Meeting moved to Thursday/);
    expect(result.timings_ms.read).toBe(3);
  });

  it('rejects bytes that are not an image', async () => {
    await expect(engine.recognize(Buffer.from('definitely not a picture'))).rejects.toMatchObject({
      code: 'invalid_image',
    });
    await expect(engine.recognize(Buffer.alloc(0))).rejects.toBeInstanceOf(OcrError);
  });

  it('refuses images over the pixel cap before OCR, with the dimensions in the message', async () => {
    const small = createOcrEngine({ maxPixels: 10_000 });
    try {
      const img = await renderTextImage('too big');
      await expect(small.recognize(img)).rejects.toThrow(/pixels\); the limit is 10000 pixels/);
    } finally {
      await small.close();
    }
  });

  it('refuses a language whose traineddata is not installed', () => {
    expect(() => createOcrEngine({ languages: ['xx_missing'] })).toThrow(/not installed/);
  });

  it('times out a slow image, replaces the worker, and recognises the next image', async () => {
    const strict = createOcrEngine({ timeoutMs: 60_000 });
    try {
      // Warm the worker so the timed-out call is OCR, not start-up.
      await strict.recognize(await renderTextImage('warm up'));
      const big = await renderTextImage(Array.from({ length: 12 }, (_, i) => `line ${i} of a long page`).join('\n'));
      await expect(strict.recognize(big, { timeoutMs: 1 })).rejects.toMatchObject({ code: 'timeout' });
      const after = await strict.recognize(await renderTextImage('Still working'));
      expect(after.ocr_text).toMatch(/Still working/);
    } finally {
      await strict.close();
    }
  });

  it('refuses work after close', async () => {
    const e = createOcrEngine();
    await e.close();
    await expect(e.recognize(await renderTextImage('x'))).rejects.toMatchObject({ code: 'closed' });
  });
});
