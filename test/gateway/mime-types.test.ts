/**
 * A sender's MIME type is stored as the server reads it, at every entry point (issue 47 item 1): the
 * part of POST /v1/ingest/file and its meta, metadata.attachments of POST /v1/ingest and of a v2
 * envelope, and a v2 document's own mime_type. What the document view answers is that stored form.
 */
import crypto from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { fileUpload } from '../files/multipart.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
const HOSTILE = ['image/svg+xml x', 'image/svg+xml,', 'image/svg+xml ,', 'image/svg+xml(x)'];
const svg = (i: number) => Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(${i})</script></svg>`);
const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await shutdownExtraction();
});

describe('stored MIME types', () => {
  it('an uploaded file: its part type and its meta type', async () => {
    for (const [i, type] of HOSTILE.entries()) {
      const bytes = svg(i);
      // The part's Content-Type is hostile; so is the meta's mime_type of every other one.
      const meta: Record<string, unknown> = { filename: `c${i}.svg`, source: 'localfs', path: `/tmp/c${i}.svg` };
      if (i % 2) meta.mime_type = type;
      const body = fileUpload(meta, bytes, `c${i}.svg`, type);
      const res = await gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
      expect(res.statusCode, res.body).toBeLessThan(300);
      const row = (await gw.db.query<{ mime_type: string }>('SELECT mime_type FROM files WHERE file_sha256 = $1', [sha(bytes)])).rows[0];
      expect(row.mime_type, type).toBe('application/octet-stream');
      const view = (await gw.request('GET', `/v1/doc/${res.json().doc_id}/view`)).json();
      expect(view.document.metadata.file.content_type).not.toMatch(/svg/);
      for (const a of view.attachments) expect(a.mime_type ?? '').not.toMatch(/svg/);
    }
    // A well-formed type is kept, lower case, without parameters.
    const png = Buffer.from('not really a png, a text');
    const body = fileUpload({ filename: 'notes.txt', source: 'localfs', path: '/tmp/notes.txt' }, png, 'notes.txt', 'Text/Plain; charset=UTF-8');
    const res = await gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
    expect(res.statusCode, res.body).toBeLessThan(300);
    expect((await gw.db.query<{ mime_type: string }>('SELECT mime_type FROM files WHERE file_sha256 = $1', [sha(png)])).rows[0].mime_type).toBe('text/plain');
  });

  it("an email's attachment entries (v1) and a v2 document's type and attachments", async () => {
    const attachments = [...HOSTILE, 'IMAGE/PNG; name="x.png"'].map((t, i) => ({ index: i, kind: 'image', role: 'attachment', mime_type: t, filename: `a${i}.svg` }));
    const v1 = await gw.request('POST', '/v1/ingest', {
      source_type: 'email',
      source_id: 'mime-v1',
      content: { data: 'Charts attached.' },
      metadata: { message_id: '<mime-v1@x.example>', attachments },
    });
    expect(v1.statusCode, v1.body).toBe(202);
    const expected = [...HOSTILE.map(() => 'application/octet-stream'), 'image/png'];
    const stored = (await gw.db.query<{ metadata: any }>('SELECT metadata FROM documents WHERE doc_id = $1', [v1.json().doc_id])).rows[0].metadata;
    expect(stored.attachments.map((a: any) => a.mime_type)).toEqual(expected);
    const view = (await gw.request('GET', `/v1/doc/${v1.json().doc_id}/view`)).json();
    expect(view.attachments.map((a: any) => a.mime_type)).toEqual(expected);

    const v2 = await gw.request('POST', '/v2/ingest:batch', [
      {
        schema_version: '2.0',
        kind: 'document',
        source: { source_type: 'email' },
        payload: {
          external_id: 'mime-v2',
          text: 'Charts attached.',
          mime_type: 'image/svg+xml x',
          content_timestamp: '2026-01-01T00:00:00Z',
          content_timestamp_type: 'sent',
          metadata: { message_id: '<mime-v2@x.example>', attachments },
        },
      },
    ]);
    expect(v2.statusCode, v2.body).toBe(202);
    const [result] = v2.json().results;
    expect(result.status_code, JSON.stringify(result)).toBe(202);
    const row = (await gw.db.query<{ mime_type: string; metadata: any }>('SELECT mime_type, metadata FROM documents WHERE doc_id = $1', [result.document.doc_id])).rows[0];
    expect(row.mime_type).toBe('application/octet-stream');
    expect(row.metadata.attachments.map((a: any) => a.mime_type)).toEqual(expected);
  });

  it('an entry stored before the types were normalised is answered normalised', async () => {
    const v1 = await gw.request('POST', '/v1/ingest', {
      source_type: 'email',
      source_id: 'mime-old',
      content: { data: 'An old message.' },
      metadata: { message_id: '<mime-old@x.example>', attachments: [{ index: 0, kind: 'image', mime_type: 'image/png', filename: 'a.svg' }] },
    });
    const id = v1.json().doc_id;
    // As a row written by the code before this change holds it.
    await gw.db.query(`UPDATE documents SET metadata = jsonb_set(metadata, '{attachments,0,mime_type}', '"image/svg+xml x"') WHERE doc_id = $1`, [id]);
    const view = (await gw.request('GET', `/v1/doc/${id}/view`)).json();
    expect(view.attachments[0].mime_type).toBe('application/octet-stream');
  });
});
