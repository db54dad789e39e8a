/**
 * POST /v1/ingest/file with OBJECT_STORE=s3 (against s3rver, see s3-store.test.ts for what that fake does and does
 * not prove): the object goes to the bucket, extraction reads it back from S3, the document and files row record the
 * s3 backend, and a repeat upload is a duplicate.
 */
import fs from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { makeTextPdf } from './fixtures.ts';
import { fileUpload } from './multipart.ts';

let dir: string;
let s3: { run(): Promise<AddressInfo>; close(): Promise<void> };
let gw: TestGateway;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-route-s3-'));
  s3 = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: path.join(dir, 'server'), configureBuckets: [{ name: 'memex-files' }] });
  const addr = await s3.run();
  gw = await startTestGateway({
    files: {
      dataDir: path.join(dir, 'data'),
      env: {
        OBJECT_STORE: 's3',
        S3_ENDPOINT: `http://127.0.0.1:${addr.port}`,
        S3_BUCKET: 'memex-files',
        S3_ACCESS_KEY_ID: 'S3RVER',
        S3_SECRET_ACCESS_KEY: 'S3RVER',
      },
    },
  });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  (gw?.files?.store as { destroy?: () => void } | undefined)?.destroy?.();
  await s3?.close().catch(() => {});
  await shutdownExtraction();
  await fs.rm(dir, { recursive: true, force: true });
});

it('stores in the bucket, extracts from S3, indexes the text; the second upload is a duplicate', async () => {
  const pdf = await makeTextPdf([['Tenancy agreement for the lighthouse cottage']]);
  const post = () =>
    gw.app.inject({
      method: 'POST',
      url: '/v1/ingest/file',
      ...(() => {
        const b = fileUpload({ path: '/contracts/tenancy.pdf' }, pdf, 'tenancy.pdf', 'application/pdf');
        return { payload: b.payload, headers: { ...b.headers, authorization: `Bearer ${TEST_TOKEN}` } };
      })(),
    });
  const first = await post();
  expect(first.statusCode).toBe(202);
  const body = first.json();
  expect(body.extraction_status).toBe('ready');
  expect(gw.files!.store.backend).toBe('s3');
  expect(await gw.files!.store.has(body.file_sha256)).toBe(true);
  // Nothing of the upload stays on local disk: the spool folder is empty.
  expect(await fs.readdir(path.join(dir, 'data', 'objects', 's3-spool'))).toEqual([]);
  const hit = await gw.db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
      WHERE cd.doc_id = $1 AND c.tsv @@ plainto_tsquery('english', 'lighthouse cottage tenancy')`,
    [body.doc_id],
  );
  expect(hit.rows[0].n).toBe(1);
  const row = await gw.db.query<{ storage_backend: string }>('SELECT storage_backend FROM files WHERE file_sha256 = $1', [body.file_sha256]);
  expect(row.rows).toEqual([{ storage_backend: 's3' }]);
  const second = await post();
  expect(second.statusCode).toBe(200);
  expect(second.json()).toMatchObject({ duplicate: true, doc_id: body.doc_id });
}, 60_000);
