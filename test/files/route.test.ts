/**
 * POST /v1/ingest/file end to end on the active backend (MEMEX_TEST_BACKEND): real object store on disk, real PDF
 * extraction, real tesseract OCR through the shared engine, real catalog. "Search finds it" is checked on the
 * document's chunks with the full-text index (chunks.tsv @@ plainto_tsquery), which is what GET /v1/search ranks.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/types.ts';
import { createOcrEngine, type OcrEngine } from '../../src/ocr/engine.ts';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { renderTextImage } from '../ocr/render-text.ts';
import { makeTextPdf } from './fixtures.ts';
import { fileUpload, multipart } from './multipart.ts';

let gw: TestGateway;
let engine: OcrEngine;

beforeAll(async () => {
  engine = createOcrEngine({ timeoutMs: 60_000 });
  gw = await startTestGateway({ files: { ocrEngine: engine } });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await engine?.close();
  await shutdownExtraction();
});

async function post(g: TestGateway, body: { payload: Buffer; headers: Record<string, string> }, token = TEST_TOKEN) {
  const res = await g.app.inject({
    method: 'POST',
    url: '/v1/ingest/file',
    payload: body.payload,
    headers: { ...body.headers, authorization: `Bearer ${token}` },
  });
  return { status: res.statusCode, headers: res.headers, json: () => res.json() as any };
}

/** True when the document's chunks match the words in the full-text index. */
async function chunksMatch(db: Database, docId: string, words: string): Promise<boolean> {
  const r = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
      WHERE cd.doc_id = $1 AND c.tsv @@ plainto_tsquery('english', $2)`,
    [docId, words],
  );
  return r.rows[0].n > 0;
}

async function doc(db: Database, docId: string) {
  const r = await db.query<Record<string, any>>('SELECT * FROM documents WHERE doc_id = $1', [docId]);
  return r.rows[0];
}

async function fileRow(db: Database, sha: string) {
  const r = await db.query<Record<string, any>>('SELECT * FROM files WHERE file_sha256 = $1', [sha]);
  return r.rows;
}

/** Every regular file under the store's sha256/ tree. */
async function storedObjects(root: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await fs.readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.push(p);
    }
  };
  await walk(path.join(root, 'sha256'));
  return out;
}

const meta = (p: string, extra: Record<string, unknown> = {}) => ({ path: p, mtime: 1767225600, tags: ['test'], ...extra });

describe('upload -> text is indexed', () => {
  it('a PDF: 202, headers, text in the document chunks, files row, attachment descriptor', async () => {
    const pdf = await makeTextPdf([['Quarterly invoice from Zanzibar Shipping', 'Total due 1234 EUR']]);
    const res = await post(gw, fileUpload(meta('/docs/invoice.pdf'), pdf, 'invoice.pdf', 'application/pdf'));
    expect(res.status).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({ duplicate: false, extraction_status: 'ready', version_number: 1 });
    expect(body.file_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(body.object_key).toBe(`sha256/${body.file_sha256.slice(0, 2)}/${body.file_sha256.slice(2, 4)}/${body.file_sha256}`);
    expect(res.headers['x-file-sha256']).toBe(body.file_sha256);
    expect(res.headers['x-object-key']).toBe(body.object_key);
    expect(body.file_ids).toEqual([body.file_sha256]);
    expect(await chunksMatch(gw.db, body.doc_id, 'Zanzibar shipping invoice')).toBe(true);
    expect(await chunksMatch(gw.db, body.doc_id, 'kangaroo')).toBe(false);

    const d = await doc(gw.db, body.doc_id);
    expect(d.source_type).toBe('localfs');
    expect(d.mime_type).toBe('application/pdf');
    expect(d.has_attachments).toBe(true);
    expect(d.attachment_count).toBe(1);
    expect(d.extraction_failed).toBe(false);
    expect(['enriched', 'indexed']).toContain(d.status);
    expect(d.metadata.attachments[0]).toMatchObject({
      index: 0,
      kind: 'pdf',
      role: 'attachment',
      mime_type: 'application/pdf',
      size_bytes: pdf.length,
      source_ref: { path: '/docs/invoice.pdf' },
      file: { sha256: body.file_sha256, object_key: body.object_key, storage_backend: 'local', enrichment_status: 'skipped' },
    });
    expect(d.metadata.workflow.map((s: { status: string }) => s.status)).toEqual(['submitted', 'extracting', 'extracted', 'enriching', 'enriched']);
    const [row] = await fileRow(gw.db, body.file_sha256);
    expect(row).toMatchObject({ object_key: body.object_key, storage_backend: 'local', size_bytes: expect.anything(), enrichment_status: 'skipped' });
    expect(Number(row.size_bytes)).toBe(pdf.length);
    // The stored object holds exactly the uploaded bytes.
    expect(Buffer.compare(await fs.readFile(path.join(gw.files!.config.localRoot, body.object_key)), pdf)).toBe(0);
  }, 60_000);

  it('a PNG with rendered text: OCR through the shared engine, words searchable, file enriched', async () => {
    const png = await renderTextImage('Receipt Marmalade Bakery\nLemon tart 4.50');
    const res = await post(gw, fileUpload(meta('/photos/receipt.png'), png, 'receipt.png', 'image/png'));
    expect(res.status).toBe(202);
    const body = res.json();
    expect(body.extraction_status).toBe('ready');
    expect(await chunksMatch(gw.db, body.doc_id, 'marmalade bakery')).toBe(true);
    const d = await doc(gw.db, body.doc_id);
    expect(d.metadata.attachments[0].kind).toBe('image');
    expect(d.metadata.attachments[0].ocr.text).toMatch(/Marmalade/i);
    expect(d.metadata.attachments[0].file.enrichment_status).toBe('enriched');
    const [row] = await fileRow(gw.db, body.file_sha256);
    expect(row.enrichment_status).toBe('enriched');
    expect(row.enrichment).toMatchObject({ method: 'ocr', extraction_status: 'ready' });
    expect(row.enrichment.ocr.chars).toBeGreaterThan(10);
  }, 120_000);

  it('a text file: its words are searchable; meta tags are in the text', async () => {
    const txt = Buffer.from('Notes from the meeting about the glacier expedition budget.\n');
    const res = await post(gw, fileUpload(meta('/notes/meeting.txt', { tags: ['expedition'] }), txt, 'meeting.txt', 'text/plain'));
    expect(res.status).toBe(202);
    const body = res.json();
    expect(await chunksMatch(gw.db, body.doc_id, 'glacier expedition budget')).toBe(true);
    expect((await doc(gw.db, body.doc_id)).text).toContain('Tags: expedition');
  });
});

describe('deduplication', () => {
  it('the same file twice is stored once: one object, one files row, 200 duplicate with the same document', async () => {
    const bytes = Buffer.from('Duplicate detection sample about pelicans.\n');
    const sha = (await import('node:crypto')).createHash('sha256').update(bytes).digest('hex');
    const before = (await storedObjects(gw.files!.config.localRoot)).length;
    const first = await post(gw, fileUpload(meta('/dup/a.txt'), bytes, 'a.txt'));
    const second = await post(gw, fileUpload(meta('/dup/a.txt'), bytes, 'a.txt'));
    expect(first.status).toBe(202);
    expect(second.status).toBe(200);
    expect(second.json()).toMatchObject({ duplicate: true, doc_id: first.json().doc_id, file_sha256: sha, extraction_status: 'ready' });
    expect(second.headers['x-file-sha256']).toBe(sha);
    expect((await storedObjects(gw.files!.config.localRoot)).length).toBe(before + 1);
    expect(await fileRow(gw.db, sha)).toHaveLength(1);
    const docs = await gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE external_id = 'localfs:/dup/a.txt'`);
    expect(docs.rows[0].n).toBe(1);

    // The same bytes at another path: a second document, still one object and one files row.
    const third = await post(gw, fileUpload(meta('/dup/copy-of-a.txt'), bytes, 'copy-of-a.txt'));
    expect(third.status).toBe(202);
    expect(third.json().doc_id).not.toBe(first.json().doc_id);
    expect((await storedObjects(gw.files!.config.localRoot)).length).toBe(before + 1);
    expect(await fileRow(gw.db, sha)).toHaveLength(1);
    const links = await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM document_files WHERE file_sha256 = $1', [sha]);
    expect(links.rows[0].n).toBe(2);
  });

  it('a file dropped on the web UI and then sent by memex ingest (or the other way round) is one document', async () => {
    const bytes = Buffer.from('Boarding pass for the night train to Vienna, seat 42.\n');
    const upload = (name: string) => fileUpload({ source: 'upload', path: `upload/${name}`, filename: name }, bytes, name);
    const dropped = await post(gw, upload('boarding.txt'));
    expect(dropped.status).toBe(202);
    const ingested = await post(gw, fileUpload(meta('/home/ann/travel/boarding.txt'), bytes, 'boarding.txt'));
    expect(ingested.status).toBe(200);
    expect(ingested.json()).toMatchObject({ duplicate: true, doc_id: dropped.json().doc_id });
    // Dropped again after that, under another name: still the document that holds these bytes.
    const again = await post(gw, upload('boarding (1).txt'));
    expect(again.json()).toMatchObject({ duplicate: true, doc_id: dropped.json().doc_id });
    // The same bytes under another name from disk are a copy of their own, as two files on disk are.
    const copy = await post(gw, fileUpload(meta('/home/ann/backup/pass.txt'), bytes, 'pass.txt'));
    expect(copy.status).toBe(202);
    expect(copy.json().doc_id).not.toBe(dropped.json().doc_id);

    // The other way round: sent by memex ingest first, then dropped on the web UI ("already stored").
    const receipt = Buffer.from('Receipt for the ferry to Lisbon, 18 euros.\n');
    const fromDisk = await post(gw, fileUpload(meta('/home/ann/receipts/ferry.txt'), receipt, 'ferry.txt'));
    expect(fromDisk.status).toBe(202);
    const droppedLater = await post(gw, fileUpload({ source: 'upload', path: 'upload/ferry.txt', filename: 'ferry.txt' }, receipt, 'ferry.txt'));
    expect(droppedLater.status).toBe(200);
    expect(droppedLater.json()).toMatchObject({ duplicate: true, doc_id: fromDisk.json().doc_id });
  });

  it('a changed file at the same path becomes version 2 and the old text is no longer indexed', async () => {
    const v1 = await post(gw, fileUpload(meta('/notes/plan.md'), Buffer.from('# Plan\nVisit the aquarium.'), 'plan.md'));
    const v2 = await post(gw, fileUpload(meta('/notes/plan.md'), Buffer.from('# Plan\nVisit the planetarium.'), 'plan.md'));
    expect(v1.status).toBe(202);
    expect(v2.status).toBe(202);
    expect(v2.json().version_number).toBe(2);
    expect(await chunksMatch(gw.db, v2.json().doc_id, 'planetarium')).toBe(true);
    expect(await chunksMatch(gw.db, v1.json().doc_id, 'aquarium')).toBe(false); // old version unlinked
    expect((await doc(gw.db, v1.json().doc_id)).is_active_version).toBe(false);
  });
});

describe('failed extraction keeps the file and the document', () => {
  it('a corrupt PDF: 202 extraction_status failed, extraction_failed + error_details, object stored', async () => {
    const good = await makeTextPdf([['this will be cut']]);
    const corrupt = Buffer.concat([good.subarray(0, 40), Buffer.from('garbage'.repeat(20))]);
    const res = await post(gw, fileUpload(meta('/docs/broken.pdf'), corrupt, 'broken.pdf', 'application/pdf'));
    expect(res.status).toBe(202);
    const body = res.json();
    expect(body.extraction_status).toBe('failed');
    const d = await doc(gw.db, body.doc_id);
    expect(d.extraction_failed).toBe(true);
    expect(d.error_details).toMatchObject({ code: 'EXTRACTION_FAILED' });
    expect(d.is_active_version).toBe(true);
    expect(d.text).toContain('broken.pdf'); // still findable by its name
    expect(await gw.files!.store.has(body.file_sha256)).toBe(true);
    expect(await fileRow(gw.db, body.file_sha256)).toHaveLength(1);
  }, 60_000);

  it('a truncated PNG: 202 extraction_status failed, file enrichment failed, document kept', async () => {
    const png = await renderTextImage('never read');
    const truncated = png.subarray(0, Math.floor(png.length / 2));
    const res = await post(gw, fileUpload(meta('/photos/cut.png'), truncated, 'cut.png', 'image/png'));
    expect(res.status).toBe(202);
    const body = res.json();
    expect(body.extraction_status).toBe('failed');
    const d = await doc(gw.db, body.doc_id);
    expect(d.extraction_failed).toBe(true);
    expect(d.error_details.message).toMatch(/PNG|truncated|image/i);
    const [row] = await fileRow(gw.db, body.file_sha256);
    expect(row.enrichment_status).toBe('failed');
    expect(await gw.files!.store.has(body.file_sha256)).toBe(true);
  });
});

describe('limits and bad requests', () => {
  it('413 above FILE_MAX_BYTES, and nothing is stored (no object, no temp file, no row, no document)', async () => {
    const small = await startTestGateway({ files: { env: { FILE_MAX_BYTES: '4kb' } } });
    try {
      const ok = await post(small, fileUpload(meta('/x/ok.txt'), Buffer.alloc(4096, 'a'), 'ok.txt'));
      expect(ok.status).toBe(202); // exactly the limit is accepted
      const res = await post(small, fileUpload(meta('/x/big.txt'), Buffer.alloc(4097, 'b'), 'big.txt'));
      expect(res.status).toBe(413);
      expect(res.json().error).toMatchObject({ error_code: 'INGEST.FILE_TOO_LARGE', retryable: false });
      expect(await storedObjects(small.files!.config.localRoot)).toHaveLength(1);
      expect(await fs.readdir(path.join(small.files!.config.localRoot, 'tmp'))).toEqual([]);
      const n = await small.db.query<{ f: number; d: number }>(
        'SELECT (SELECT count(*)::int FROM files) AS f, (SELECT count(*)::int FROM documents) AS d',
      );
      expect(n.rows[0]).toEqual({ f: 1, d: 1 });
    } finally {
      await small.close();
    }
  });

  it('422 when meta or upload is missing, or meta is not valid JSON / lacks path', async () => {
    const onlyUpload = await post(gw, multipart([{ name: 'upload', value: Buffer.from('hello'), filename: 'h.txt' }]));
    expect(onlyUpload.status).toBe(422);
    expect(onlyUpload.json().detail).toEqual([expect.objectContaining({ loc: ['body', 'meta'], type: 'missing' })]);

    const onlyMeta = await post(gw, multipart([{ name: 'meta', value: JSON.stringify(meta('/a.txt')) }]));
    expect(onlyMeta.status).toBe(422);
    expect(onlyMeta.json().detail).toEqual([expect.objectContaining({ loc: ['body', 'upload'], type: 'missing' })]);

    const badJson = await post(gw, multipart([
      { name: 'meta', value: '{"path": "/a.txt",' },
      { name: 'upload', value: Buffer.from('hello'), filename: 'h.txt' },
    ]));
    expect(badJson.status).toBe(422);
    expect(badJson.json().detail[0]).toMatchObject({ loc: ['body', 'meta'], type: 'json_invalid' });

    const noPath = await post(gw, multipart([
      { name: 'meta', value: JSON.stringify({ tags: ['x'] }) },
      { name: 'upload', value: Buffer.from('hello'), filename: 'h.txt' },
    ]));
    expect(noPath.status).toBe(422);
    expect(noPath.json().detail[0].loc).toEqual(['body', 'meta', 'path']);

    const json = await gw.request('POST', '/v1/ingest/file', { path: '/a.txt' });
    expect(json.statusCode).toBe(422);

    const anon = await post(gw, fileUpload(meta('/a.txt'), Buffer.from('x'), 'a.txt'), 'wrong-token');
    expect(anon.status).toBe(403);
  });

  it('an empty upload is 400 INGEST.EMPTY_FILE; a malformed multipart body is a 400, never a 500', async () => {
    const empty = await post(gw, fileUpload(meta('/e.txt'), Buffer.alloc(0), 'e.txt'));
    expect(empty.status).toBe(400);
    expect(empty.json().error.error_code).toBe('INGEST.EMPTY_FILE');
    const body = fileUpload(meta('/m.txt'), Buffer.from('cut short'), 'm.txt');
    const cut = await post(gw, { ...body, payload: body.payload.subarray(0, body.payload.length - 30) });
    expect(cut.status).toBeGreaterThanOrEqual(400);
    expect(cut.status).toBeLessThan(500);
  });

  it('meta may arrive after the upload (curl -F order is up to the client)', async () => {
    const res = await post(gw, multipart([
      { name: 'upload', value: Buffer.from('Late meta about an ocelot.'), filename: 'late.txt' },
      { name: 'meta', value: JSON.stringify(meta('/late.txt')) },
    ]));
    expect(res.status).toBe(202);
    expect(await chunksMatch(gw.db, res.json().doc_id, 'ocelot')).toBe(true);
  });
});

describe('attachments in documents', () => {
  it('facets: attachments with role attachment are counted, inline ones are not', async () => {
    const res = await gw.request('POST', '/v1/ingest', noteBody({
      metadata: {
        attachments: [
          { index: 0, kind: 'image', role: 'attachment', mime_type: 'image/png', size_bytes: 10 },
          { index: 1, kind: 'pdf', role: 'attachment', mime_type: 'application/pdf', size_bytes: 20 },
          { index: 2, kind: 'image', role: 'inline', mime_type: 'image/gif' },
        ],
      },
    }));
    expect(res.statusCode).toBe(202);
    const d = await doc(gw.db, res.json().doc_id);
    expect(d.has_attachments).toBe(true);
    expect(d.attachment_count).toBe(2);

    const none = await gw.request('POST', '/v1/ingest', noteBody({ metadata: { attachments: [] } }));
    const dn = await doc(gw.db, none.json().doc_id);
    expect(dn.has_attachments).toBe(false);
    expect(dn.attachment_count).toBe(0);

    const list = await gw.request('GET', '/v1/documents?has_attachments=true&limit=100');
    if (list.statusCode === 200) {
      const ids = list.json().documents.map((x: { doc_id?: string; metadata: any }) => x.doc_id);
      if (ids.every(Boolean)) expect(ids).toContain(res.json().doc_id);
    }
  });

  it('a v1 message is found by the OCR text and caption of its screenshot; documents.text stays the message', async () => {
    const res = await gw.request('POST', '/v1/ingest', noteBody({
      source_type: 'chatapp',
      content: { mime_type: 'text/plain', data: 'look at this' },
      metadata: {
        attachments: [
          {
            index: 0, kind: 'image', role: 'attachment', mime_type: 'image/png', size_bytes: 1234,
            ocr: { text: 'Boarding pass gate B42 flight to Reykjavik', confidence: 0.9, language: 'en' },
            caption: 'a boarding pass on a phone screen',
          },
        ],
      },
    }));
    expect(res.statusCode).toBe(202);
    const id = res.json().doc_id;
    expect(await chunksMatch(gw.db, id, 'Reykjavik boarding')).toBe(true);
    expect(await chunksMatch(gw.db, id, 'phone screen')).toBe(true);
    const d = await doc(gw.db, id);
    expect(d.text).toBe('look at this');
    expect(d.has_attachments).toBe(true);
  });

  it('a file document does not index its OCR text twice', async () => {
    const png = await renderTextImage('Gooseberry jam label');
    const res = await post(gw, fileUpload(meta('/photos/jam.png'), png, 'jam.png', 'image/png'));
    expect(res.status).toBe(202);
    const r = await gw.db.query<{ text: string }>(
      `SELECT c.text FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id WHERE cd.doc_id = $1`,
      [res.json().doc_id],
    );
    const all = r.rows.map((x) => x.text).join('\n');
    expect(all).toMatch(/Gooseberry/i);
    expect(all.match(/Gooseberry/gi)!.length).toBe(1);
  }, 60_000);
});

describe('signature parts of signed mail', () => {
  it('an email attachment upload that is a signature part answers 200 skipped: no document, no file kept', async () => {
    const before = (await storedObjects(gw.files!.config.localRoot)).length;
    const sig = Buffer.from('-----BEGIN PGP SIGNATURE-----\n\niQEzBAEBCAAdFiEEsignedbyorchard\n-----END PGP SIGNATURE-----\n');
    const cases = [
      { meta: { source: 'email', path: 'email/m1/signature.asc', filename: 'signature.asc', mime_type: 'application/pgp-signature', message_id: '<m1@example.org>' }, name: 'signature.asc', type: 'application/pgp-signature' },
      { meta: { source: 'email_local', path: 'email_local/m2/smime.p7s', message_id: 'm2@example.org' }, name: 'smime.p7s', type: 'application/pkcs7-signature' },
      { meta: { source: 'email', path: 'email/m3/x.p7s', mime_type: 'application/x-pkcs7-signature', message_id: 'm3@example.org' }, name: 'x.p7s', type: 'application/octet-stream' },
    ];
    for (const [i, c] of cases.entries()) {
      const res = await post(gw, fileUpload(c.meta, Buffer.concat([sig, Buffer.from(String(i))]), c.name, c.type));
      expect(res.status).toBe(200);
      expect(res.json()).toMatchObject({ skipped: 'email_signature', doc_id: '' });
    }
    const docs = await gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE text LIKE '%signedbyorchard%' OR title IN ('signature.asc', 'smime.p7s', 'x.p7s')`);
    expect(docs.rows[0].n).toBe(0);
    expect((await storedObjects(gw.files!.config.localRoot)).length).toBe(before);

    // Not mail: a file called signature.asc in a folder is a document like any other.
    const local = await post(gw, fileUpload(meta('/keys/signature.asc'), Buffer.concat([sig, Buffer.from('local')]), 'signature.asc'));
    expect(local.status).toBe(202);
  });
});

describe('OCR unavailable', () => {
  it('a busy OCR pool answers 503 retryable without creating a document; the retry succeeds', async () => {
    const tight = createOcrEngine({ poolSize: 1, maxQueue: 0, timeoutMs: 60_000 });
    const g = await startTestGateway({ files: { ocrEngine: tight } });
    try {
      const a = await renderTextImage('First picture about herons');
      const b = await renderTextImage('Second picture about otters');
      const [ra, rb] = await Promise.all([
        post(g, fileUpload(meta('/p/a.png'), a, 'a.png')),
        post(g, fileUpload(meta('/p/b.png'), b, 'b.png')),
      ]);
      const statuses = [ra.status, rb.status].sort();
      expect(statuses).toEqual([202, 503]);
      const busy = ra.status === 503 ? ra : rb;
      expect(busy.json().error).toMatchObject({ error_code: 'INGEST.OCR_UNAVAILABLE', retryable: true });
      expect(busy.headers['retry-after']).toBeDefined();
      const docs = await g.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents');
      expect(docs.rows[0].n).toBe(1);
      const pending = await g.db.query<{ enrichment_status: string }>(
        `SELECT enrichment_status FROM files WHERE enrichment_status NOT IN ('enriched')`,
      );
      expect(pending.rows.map((x) => x.enrichment_status)).toEqual(['pending']);
      // The client retries: now it goes through.
      const retry = await post(g, fileUpload(meta(busy === ra ? '/p/a.png' : '/p/b.png'), busy === ra ? a : b, 'x.png'));
      expect(retry.status).toBe(202);
      expect(retry.json().extraction_status).toBe('ready');
    } finally {
      await g.close();
      await tight.close();
    }
  }, 120_000);
});
