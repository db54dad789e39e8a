/**
 * POST /v1/ingest/file:batch on the active backend (MEMEX_TEST_BACKEND): several files in one multipart request
 * (meta, upload, meta, upload, …) get exactly what one upload each would get — the same documents, file rows and
 * answers — and one bad file never stops the others.
 */
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { MAX_META_BYTES } from '../../src/files/meta.ts';
import { FILE_BATCH_MAX_FILES } from '../../src/schemas/files.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { makeTextPdf } from './fixtures.ts';
import { fileUpload, multipart, type Part } from './multipart.ts';

let batchGw: TestGateway;
let singleGw: TestGateway;

beforeAll(async () => {
  batchGw = await startTestGateway({ files: {} });
  singleGw = await startTestGateway({ files: {} });
}, 60_000);

afterAll(async () => {
  await batchGw?.close();
  await singleGw?.close();
  await shutdownExtraction();
});

async function post(g: TestGateway, url: string, body: { payload: Buffer; headers: Record<string, string> }) {
  const res = await g.app.inject({ method: 'POST', url, payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
  return { status: res.statusCode, json: () => res.json() as any };
}

interface FileSpec {
  meta: Record<string, unknown>;
  bytes: Buffer;
  filename: string;
  contentType?: string;
}

const pairs = (files: FileSpec[]): Part[] =>
  files.flatMap((f) => [
    { name: 'meta', value: JSON.stringify(f.meta) },
    { name: 'upload', value: f.bytes, filename: f.filename, contentType: f.contentType },
  ]);

const meta = (p: string, extra: Record<string, unknown> = {}) => ({ path: p, mtime: 1767225600, ...extra });
const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** What a user sees of a stored file document, without ids and times. */
async function documentView(g: TestGateway, docId: string) {
  const d = (await g.db.query<Record<string, any>>('SELECT * FROM documents WHERE doc_id = $1', [docId])).rows[0];
  const attachment = { ...d.metadata.attachments[0] };
  delete attachment.file?.created_at;
  const file = (await g.db.query<Record<string, any>>(
    `SELECT f.enrichment_status, f.size_bytes::int AS size, f.enrichment->>'method' AS method FROM files f
       JOIN document_files df ON df.file_sha256 = f.file_sha256 WHERE df.doc_id = $1`,
    [docId],
  )).rows;
  return {
    text: d.text,
    title: d.title,
    mime_type: d.mime_type,
    source_type: d.source_type,
    external_id: d.external_id,
    status: d.status,
    has_attachments: d.has_attachments,
    attachment_count: d.attachment_count,
    extraction: d.metadata.extraction,
    workflow: d.metadata.workflow.map((w: { status: string }) => w.status),
    attachment: JSON.stringify(attachment, Object.keys(attachment).sort()),
    file,
  };
}

describe('a batch of files', () => {
  it('stores each file as the single route would: same documents, file rows and answers; a resend is all duplicates', async () => {
    const files: FileSpec[] = [
      { meta: meta('/batch/notes.txt', { tags: ['kayak'] }), bytes: Buffer.from('Notes about the kayak trip to the fjord.\n'), filename: 'notes.txt', contentType: 'text/plain' },
      { meta: meta('/batch/report.pdf'), bytes: await makeTextPdf([['Quarterly report on lighthouse maintenance']]), filename: 'report.pdf', contentType: 'application/pdf' },
      { meta: meta('/batch/copy-of-notes.txt'), bytes: Buffer.from('Notes about the kayak trip to the fjord.\n'), filename: 'copy-of-notes.txt', contentType: 'text/plain' },
      { meta: meta('/batch/broken.pdf'), bytes: Buffer.from('%PDF-1.7 this is not really a pdf'), filename: 'broken.pdf', contentType: 'application/pdf' },
    ];
    const res = await post(batchGw, '/v1/ingest/file:batch', multipart(pairs(files)));
    expect(res.status).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({ total_count: 4, success_count: 4, failure_count: 0 });
    expect(body.results.map((r: any) => [r.index, r.status_code, r.filename, r.error])).toEqual(files.map((f, i) => [i, 202, f.filename, null]));

    for (const [i, f] of files.entries()) {
      const single = await post(singleGw, '/v1/ingest/file', fileUpload(f.meta, f.bytes, f.filename, f.contentType));
      expect(single.status).toBe(202);
      const fromBatch = body.results[i].submission;
      expect(fromBatch).toMatchObject({
        file_sha256: sha(f.bytes),
        extraction_status: single.json().extraction_status,
        status: single.json().status,
        duplicate: false,
        version_number: 1,
      });
      expect(await documentView(batchGw, fromBatch.doc_id)).toEqual(await documentView(singleGw, single.json().doc_id));
    }
    // The two copies of the same bytes share one stored object and one files row.
    const rows = await batchGw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM files WHERE file_sha256 = $1', [sha(files[0].bytes)]);
    expect(rows.rows[0].n).toBe(1);

    const again = await post(batchGw, '/v1/ingest/file:batch', multipart(pairs(files)));
    expect(again.status).toBe(202);
    expect(again.json().results.map((r: any) => [r.status_code, r.submission.duplicate, r.submission.doc_id])).toEqual(
      body.results.map((r: any) => [200, true, r.submission.doc_id]),
    );
  });

  it('a binary attachment that starts like UTF-16 (FF FE) is stored as binary, not a 500', async () => {
    // Found by the 100,000-message mail bench: 2 of 10,127 random attachments began with FF FE.
    let x = 5;
    const noise = Buffer.from(Array.from({ length: 4000 }, () => ((x = (x * 1103515245 + 12345) & 0x7fffffff) >> 16) & 0xff));
    const files: FileSpec[] = [
      { meta: meta('/bom/data.bin'), bytes: Buffer.concat([Buffer.from([0xff, 0xfe]), noise]), filename: 'data.bin', contentType: 'application/octet-stream' },
      { meta: meta('/bom/note.txt'), bytes: Buffer.from('A note about the lighthouse keeper.\n'), filename: 'note.txt', contentType: 'text/plain' },
    ];
    const res = await post(batchGw, '/v1/ingest/file:batch', multipart(pairs(files)));
    expect(res.status).toBe(202);
    expect(res.json().results.map((r: any) => [r.status_code, r.submission.extraction_status])).toEqual([[202, 'failed'], [202, 'ready']]);
  });

  it('a bad file is answered on its own and nothing of it is stored; the good ones go in (207)', async () => {
    const small = await startTestGateway({ files: { env: { FILE_MAX_BYTES: '4kb' } } });
    try {
      const good = Buffer.from('A good file about migrating cranes.\n');
      const res = await post(
        small,
        '/v1/ingest/file:batch',
        multipart([
          { name: 'meta', value: JSON.stringify(meta('/mixed/good.txt')) },
          { name: 'upload', value: good, filename: 'good.txt', contentType: 'text/plain' },
          { name: 'meta', value: JSON.stringify({ filename: 'no-path.txt' }) },
          { name: 'upload', value: Buffer.from('no path in its meta'), filename: 'no-path.txt' },
          { name: 'meta', value: JSON.stringify(meta('/mixed/big.txt')) },
          { name: 'upload', value: Buffer.alloc(4097, 'b'), filename: 'big.txt' },
          { name: 'upload', value: Buffer.from('an upload without its meta'), filename: 'orphan.txt' },
          { name: 'meta', value: JSON.stringify(meta('/mixed/huge-meta.txt', { tags: ['x'.repeat(MAX_META_BYTES)] })) },
          { name: 'upload', value: Buffer.from('a file whose meta is too long'), filename: 'huge-meta.txt' },
          { name: 'meta', value: JSON.stringify(meta('/mixed/last.txt')) },
        ]),
      );
      expect(res.status).toBe(207);
      const body = res.json();
      expect(body).toMatchObject({ total_count: 6, success_count: 1, failure_count: 5 });
      expect(body.results.map((r: any) => r.status_code)).toEqual([202, 422, 413, 422, 422, 422]);
      expect(body.results[4].detail[0]).toMatchObject({ loc: ['body', 'meta'], type: 'too_long' });
      expect(body.results[1].detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc: ['body', 'meta', 'path'] })]));
      expect(body.results[2].error).toMatchObject({ error_code: 'INGEST.FILE_TOO_LARGE', retryable: false });
      expect(body.results[3].detail[0]).toMatchObject({ loc: ['body', 'meta'], type: 'missing' });
      expect(body.results[5].detail[0]).toMatchObject({ loc: ['body', 'upload'], type: 'missing' });

      const n = await small.db.query<{ f: number; d: number }>('SELECT (SELECT count(*)::int FROM files) AS f, (SELECT count(*)::int FROM documents) AS d');
      expect(n.rows[0]).toEqual({ f: 1, d: 1 });
      const objects = await fs.readdir(path.join(small.files!.config.localRoot, 'sha256'), { recursive: true, withFileTypes: true });
      expect(objects.filter((e) => e.isFile())).toHaveLength(1);
      expect(await fs.readdir(path.join(small.files!.config.localRoot, 'tmp'))).toEqual([]);
    } finally {
      await small.close();
    }
  });

  it('an empty file is answered on its own (400 upload is empty); the files beside it are stored (issue 48)', async () => {
    const mail = { source: 'email', message_id: '<empty-part@example.org>' };
    const files: FileSpec[] = [
      { meta: meta('/empty-part/patch.diff', mail), bytes: Buffer.from('--- a/setup.c\n+++ b/setup.c\n+ octeon fix\n'), filename: 'patch.diff', contentType: 'text/plain' },
      { meta: meta('/empty-part/empty.txt', mail), bytes: Buffer.alloc(0), filename: 'empty.txt', contentType: 'text/plain' },
      { meta: meta('/empty-part/key.asc.txt', mail), bytes: Buffer.from('a public key block, as text\n'), filename: 'key.asc.txt', contentType: 'text/plain' },
    ];
    const res = await post(batchGw, '/v1/ingest/file:batch', multipart(pairs(files)));
    expect(res.status).toBe(207);
    const body = res.json();
    expect(body).toMatchObject({ total_count: 3, success_count: 2, failure_count: 1 });
    expect(body.results.map((r: any) => r.status_code)).toEqual([202, 400, 202]);
    expect(body.results[1].error).toMatchObject({ error_code: 'INGEST.EMPTY_FILE', message: 'upload is empty', retryable: false });
    for (const i of [0, 2]) {
      const d = await batchGw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE doc_id = $1', [body.results[i].submission.doc_id]);
      expect(d.rows[0].n).toBe(1);
    }
    const stored = await batchGw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM files WHERE file_sha256 = ANY($1::text[])', [[sha(files[0].bytes), sha(files[2].bytes)]]);
    expect(stored.rows[0].n).toBe(2);
  });

  it(`refuses more than ${FILE_BATCH_MAX_FILES} files, a body that is not multipart, and one without files, with a 4xx`, async () => {
    const many = Array.from({ length: FILE_BATCH_MAX_FILES + 1 }, (_, i) => ({
      meta: meta(`/many/${i}.txt`),
      bytes: Buffer.from(`file number ${i}`),
      filename: `${i}.txt`,
    }));
    // The meta as a file part, as FormData sends a Blob: the most files allowed go in, one more is refused.
    const asFileParts = (files: FileSpec[]) =>
      multipart(pairs(files).map((p) => (p.name === 'meta' ? { ...p, filename: 'blob', contentType: 'application/json' } : p)));
    const most = await post(batchGw, '/v1/ingest/file:batch', asFileParts(many.slice(0, FILE_BATCH_MAX_FILES)));
    expect(most.status).toBe(202);
    expect(most.json().success_count).toBe(FILE_BATCH_MAX_FILES);
    const tooMany = await post(batchGw, '/v1/ingest/file:batch', asFileParts(many.map((f) => ({ ...f, meta: meta(`/too-many/${f.filename}`) }))));
    expect(tooMany.status).toBe(413);
    expect(tooMany.json().error).toMatchObject({ error_code: 'INGEST.MULTIPART_LIMIT', retryable: false });

    const json = await batchGw.app.inject({
      method: 'POST',
      url: '/v1/ingest/file:batch',
      payload: { path: '/x' },
      headers: { authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(json.statusCode).toBe(422);

    const empty = await post(batchGw, '/v1/ingest/file:batch', multipart([{ name: 'note', value: 'nothing here' }]));
    expect(empty.status).toBe(422);
    expect(empty.json().detail[0]).toMatchObject({ loc: ['body', 'upload'], type: 'missing' });

    const truncated = multipart(pairs(many.slice(0, 2)));
    const cut = await post(batchGw, '/v1/ingest/file:batch', { headers: truncated.headers, payload: truncated.payload.subarray(0, truncated.payload.length - 60) });
    expect(cut.status).toBe(400);
  });
});
