/** searchableText: attachment OCR text and captions are chunked with the document (gateway spec 2.1). */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_ATTACHMENT_TEXT_CHARS, searchableText } from '../../src/catalog/ingest.ts';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

describe('searchableText', () => {
  it('appends OCR text and captions, labelled by file name or index', () => {
    const s = searchableText('see photo', [
      { index: 0, mime_type: 'image/png', filename: 'menu.png', ocr: { text: 'Soup of the day: leek' }, caption: 'a chalkboard menu' },
      { index: 1, mime_type: 'image/jpeg', ocr: 'plain string OCR' },
    ]);
    expect(s.startsWith('see photo\n\n')).toBe(true);
    expect(s).toContain('Attachment menu.png caption: a chalkboard menu');
    expect(s).toContain('Attachment menu.png text: Soup of the day: leek');
    expect(s).toContain('Attachment #1 text: plain string OCR');
  });

  it('leaves the text alone without attachment text, and never repeats text the document already holds', () => {
    expect(searchableText('hello', undefined)).toBe('hello');
    expect(searchableText('hello', [{ index: 0, mime_type: 'image/png' }])).toBe('hello');
    expect(searchableText('Filename: a.png\n\nOCR:\nTotal   due\n12 EUR', [{ index: 0, mime_type: 'image/png', ocr: { text: 'Total due 12 EUR' } }])).toBe(
      'Filename: a.png\n\nOCR:\nTotal   due\n12 EUR',
    );
    expect(searchableText('x', [null, 'junk', 42, { ocr: { text: 7 } }])).toBe('x');
  });

  it('bounds the appended text', () => {
    const big = 'word '.repeat(100_000);
    const s = searchableText('t', [{ index: 0, mime_type: 'image/png', ocr: { text: big } }, { index: 1, mime_type: 'image/png', ocr: { text: big + 'x' } }]);
    expect(s.length).toBeLessThan(MAX_ATTACHMENT_TEXT_CHARS + 200);
  });
});

describe('catalog versions index attachment text too', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway();
  }, 60_000);
  afterAll(async () => {
    await gw?.close();
  });

  it('a new version with an attachment carrying OCR text is found by it; documents.text is unchanged', async () => {
    const res = await gw.request('POST', '/v1/ingest', noteBody({ content: { mime_type: 'text/plain', data: 'scanned note' } }));
    const v2 = await gw.catalog.createVersion(res.json().doc_id, {
      attachments: [{ index: 0, kind: 'image', role: 'attachment', mime_type: 'image/png', ocr: { text: 'zebra crossing on Abbey Road' } }],
    });
    const hit = await gw.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
        WHERE cd.doc_id = $1 AND c.tsv @@ plainto_tsquery('english', 'zebra crossing')`,
      [v2.doc_id],
    );
    expect(hit.rows[0].n).toBe(1);
    const d = await gw.db.query<{ text: string; attachment_count: number }>('SELECT text, attachment_count FROM documents WHERE doc_id = $1', [v2.doc_id]);
    expect(d.rows[0]).toEqual({ text: 'scanned note', attachment_count: 1 });
  });
});
