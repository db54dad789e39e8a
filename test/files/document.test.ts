import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildFileDocument, sha256Hex } from '../../src/files/document.ts';
import { extractText } from '../../src/files/extract.ts';
import { parseFileMeta, type FileMeta } from '../../src/files/meta.ts';
import { LocalObjectStore } from '../../src/files/object-store.ts';
import { makePng, makeTextPdf } from './fixtures.ts';

let root: string;
let store: LocalObjectStore;
beforeAll(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-doc-'));
  store = await LocalObjectStore.open({ root });
});
afterAll(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

function meta(m: Record<string, unknown>): FileMeta {
  const r = parseFileMeta(m);
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.meta;
}

/** The route's sequence: store the stream, extract from the stored object, build the document. */
async function ingest(bytes: Buffer, m: FileMeta, upload?: { filename?: string; mimeType?: string }) {
  const stored = await store.put(Readable.from([bytes]), { maxBytes: 10_000_000, filename: upload?.filename });
  const extraction = await extractText({ path: store.localPath(stored.objectKey), filename: m.filename ?? upload?.filename ?? path.basename(m.path), mimeType: upload?.mimeType });
  return { stored, extraction, doc: buildFileDocument({ meta: m, stored, backend: store.backend, upload, extraction, now: new Date('2026-01-02T03:04:05Z') }) };
}

describe('buildFileDocument', () => {
  it('a PDF: tags, extracted text, metadata and the attachment descriptor; name, path and time stay out of the text', async () => {
    const pdf = await makeTextPdf([['Rent contract for flat 3B', 'Monthly rent 1200']]);
    const m = meta({ path: '/home/ada/Docs/contract.pdf', mtime: 1700000000, tags: ['home', 'legal'] });
    const { doc, stored } = await ingest(pdf, m, { filename: 'contract.pdf', mimeType: 'application/octet-stream' });
    // The name is the title, the path and time are metadata: as text they were searched and quoted as content.
    expect(doc.text).toBe(['Tags: home, legal', '', 'Rent contract for flat 3B\nMonthly rent 1200'].join('\n'));
    expect(doc.text).not.toMatch(/Filename:|Source Path:|Modified:|\/home\/ada|2023-11-14/);
    expect(doc).toMatchObject({
      source_type: 'localfs',
      source_provider: 'filesystem',
      source_id: '/home/ada/Docs/contract.pdf',
      external_id: 'localfs:/home/ada/Docs/contract.pdf',
      title: 'contract.pdf',
      mime_type: 'application/pdf', // from the magic bytes, not the generic upload type
      content_timestamp: '2023-11-14T22:13:20.000Z',
      content_timestamp_type: 'modified',
      has_attachments: true,
      attachment_count: 1,
      extraction_failed: false,
      error_details: null,
      file: { file_sha256: stored.sha256, object_key: stored.objectKey, extraction_status: 'ready' },
    });
    expect(doc.text_sha256).toBe(sha256Hex(doc.text));
    expect(doc.metadata).toMatchObject({
      source: 'localfs',
      localfs: { path: '/home/ada/Docs/contract.pdf', filename: 'contract.pdf', tags: ['home', 'legal'], mtime: '2023-11-14T22:13:20.000Z' },
      file: { sha256: stored.sha256, object_key: stored.objectKey, size_bytes: pdf.length, content_type: 'application/pdf' },
      extraction: { status: 'ready', method: 'pdf-text', pages: 1 },
      ingested_at: '2026-01-02T03:04:05.000Z',
    });
    expect(doc.metadata.attachments).toEqual([
      {
        index: 0,
        kind: 'pdf',
        role: 'attachment',
        mime_type: 'application/pdf',
        size_bytes: pdf.length,
        filename: 'contract.pdf',
        source_ref: { path: '/home/ada/Docs/contract.pdf' },
        file: { sha256: stored.sha256, object_key: stored.objectKey, storage_backend: 'local', enrichment_status: 'skipped' },
      },
    ]);
  });

  it('identity is the path: a changed file is a new version of the same document; the same bytes are a duplicate', async () => {
    const m = meta({ path: '/notes/todo.txt', mtime: 1700000000 });
    const v1 = await ingest(Buffer.from('buy milk'), m);
    const again = await ingest(Buffer.from('buy milk'), m);
    const v2 = await ingest(Buffer.from('buy milk and eggs'), meta({ path: '/notes/todo.txt', mtime: 1700000100 }));
    expect(again.stored.existed).toBe(true);
    expect(again.doc.idempotency_key).toBe(v1.doc.idempotency_key);
    expect(v2.doc.external_id).toBe(v1.doc.external_id);
    expect(v2.doc.idempotency_key).not.toBe(v1.doc.idempotency_key);
    // Same content at another path is another file on disk: another document, one stored object.
    const elsewhere = await ingest(Buffer.from('buy milk'), meta({ path: '/backup/todo.txt' }));
    expect(elsewhere.doc.external_id).toBe('localfs:/backup/todo.txt');
    expect(elsewhere.stored.objectKey).toBe(v1.stored.objectKey);
  });

  it('email attachments: identity from message id and content; enrichment from the collector is used', async () => {
    const png = makePng(30, 30);
    const m = meta({
      source: 'email_local',
      path: 'email/m1@example.com/receipt.png',
      filename: 'receipt.png',
      mime_type: 'image/png',
      message_id: 'm1@example.com',
      content_id: 'cid-1',
      intent: { primary_intent: 'receipt', confidence: 0.8 },
      relevance_score: 0.6,
      enrichment: { ocr_text: 'TOTAL 42.00 EUR', caption: 'a shop receipt' },
    });
    const { doc, stored, extraction } = await ingest(png, m, { filename: 'receipt.png', mimeType: 'image/png' });
    expect(extraction.status).toBe('failed'); // no OCR engine plugged in here
    expect(doc.source_type).toBe('email_local');
    expect(doc.external_id).toBe(`email-attachment:m1@example.com:${stored.sha256}`);
    expect(doc.text).toContain('Caption: a shop receipt');
    expect(doc.text).toContain('OCR:\nTOTAL 42.00 EUR');
    expect(doc.extraction_failed).toBe(false);
    expect(doc.metadata.extraction).toMatchObject({ status: 'ready', method: 'collector-ocr' });
    expect(doc.metadata.email).toEqual({ message_id: 'm1@example.com', content_id: 'cid-1' });
    expect(doc.intent).toEqual({ primary_intent: 'receipt', confidence: 0.8 });
    expect(doc.relevance_score).toBe(0.6);
    expect(doc.metadata.attachments[0]).toMatchObject({
      kind: 'image',
      source_ref: { path: 'email/m1@example.com/receipt.png', message_attachment_id: 'cid-1' },
      ocr: { text: 'TOTAL 42.00 EUR', confidence: null, language: null },
      caption: 'a shop receipt',
      image: { width: 30, height: 30 },
      file: { enrichment_status: 'enriched' },
    });
  });

  it('OCR run by us goes into the text and the descriptor', async () => {
    const png = makePng(20, 20);
    const m = meta({ path: '/pics/shot.png' });
    const stored = await store.put(Readable.from([png]), { maxBytes: 1e6 });
    const extraction = await extractText({ buffer: png, filename: 'shot.png' }, { ocr: async () => ({ text: 'Meeting at 5pm', confidence: 0.91, language: 'eng' }) });
    const doc = buildFileDocument({ meta: m, stored, backend: 'local', extraction });
    expect(doc.text.endsWith('OCR:\nMeeting at 5pm')).toBe(true);
    expect(doc.metadata.attachments[0]).toMatchObject({ kind: 'image', ocr: { text: 'Meeting at 5pm', confidence: 0.91, language: 'eng' }, file: { enrichment_status: 'enriched' } });
  });

  it('a failed extraction keeps the file and the document, with a placeholder body and error details', async () => {
    const m = meta({ path: '/docs/broken.pdf', mtime: '2024-05-01T12:00:00Z' });
    const { doc } = await ingest(Buffer.from('%PDF-1.4\nthis is not really a pdf'), m);
    expect(doc.extraction_failed).toBe(true);
    expect(doc.file.extraction_status).toBe('failed');
    expect(doc.text.split('\n').pop()).toMatch(/^\[file\] broken\.pdf \(application\/pdf\): not a valid PDF/);
    expect(doc.error_details).toMatchObject({ code: 'EXTRACTION_FAILED', method: 'pdf-text' });
    expect((doc.error_details as { message: string }).message).toMatch(/not a valid PDF/);
    expect(doc.metadata.extraction).toMatchObject({ status: 'failed' });

    const img = await ingest(makePng(8, 8), meta({ path: '/pics/x.png' }));
    expect(img.doc.text.split('\n').pop()).toBe('[image] x.png (image/png): OCR not available');
    expect(img.doc.metadata.attachments[0].file.enrichment_status).toBe('pending'); // OCR can still be done later
    expect(img.doc.metadata.extraction).toMatchObject({ needs_ocr: { kind: 'image', imageType: 'png' } });
  });

  it('filename falls back to the upload name, then the path; no mtime means now; a sha256 mismatch is flagged', async () => {
    const m = meta({ path: '/a/b/report.md', sha256: '0'.repeat(64) });
    const up = await ingest(Buffer.from('# Report'), m, { filename: 'uploaded-name.md' });
    expect(up.doc.title).toBe('uploaded-name.md');
    expect(up.doc.content_timestamp).toBe('2026-01-02T03:04:05.000Z');
    expect(up.doc.content_modified_at).toBeNull();
    expect((up.doc.metadata.extraction as { warnings: string[] }).warnings.join()).toContain('does not match the upload');
    const byPath = await ingest(Buffer.from('# Report 2'), meta({ path: '/a/b/report2.md' }));
    expect(byPath.doc.title).toBe('report2.md');
    expect(byPath.doc.mime_type).toBe('text/markdown');
  });
});
