/**
 * A decompression-bomb PDF (issue 47): a small PDF whose FlateDecode content stream inflates to 600 MB. pdf.js
 * inflates streams into buffers outside the JavaScript heap, so a worker thread's heap limit did not bound it (the
 * server's memory grew by the inflated size and kept much of it). Now PDF extraction runs in its own process whose
 * memory is measured and which is killed past EXTRACT_MAX_MEMORY_MB: the upload is answered, the document is stored
 * with extraction_failed and the reason, the next PDF is read by a fresh process, and the server's memory stays put.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { makeInflatingPdf, makeTextPdf } from './fixtures.ts';
import { fileUpload } from './multipart.ts';

const MB = 1024 * 1024;
let gw: TestGateway;
beforeAll(async () => {
  // A low limit keeps the test short: the bomb is stopped at 128 MB instead of 512 MB.
  gw = await startTestGateway({ files: { env: { EXTRACT_MAX_MEMORY_MB: '128' } } });
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await shutdownExtraction();
});

async function upload(bytes: Buffer, name: string) {
  const body = fileUpload({ source: 'localfs', path: `/tmp/${name}` }, bytes, name, 'application/pdf');
  return gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
}

describe(`a decompression-bomb PDF on ${backend}`, () => {
  it('fails only its own extraction, within the memory limit, and leaves the server as it was', async () => {
    const bomb = await makeInflatingPdf(600, 'detonation');
    expect(bomb.length).toBeLessThan(2 * MB);
    // Warm up first (a normal PDF), so the baseline includes what any PDF upload loads.
    expect((await upload(await makeTextPdf([['warm up']]), 'warm.pdf')).json().extraction_status).toBe('ready');
    const before = process.memoryUsage.rss();

    const res = await upload(bomb, 'bomb.pdf');
    expect(res.statusCode).toBe(202);
    expect(res.json().extraction_status).toBe('failed');
    const row = (await gw.db.query<any>('SELECT extraction_failed, error_details FROM documents WHERE doc_id = $1', [res.json().doc_id])).rows[0];
    expect(row.extraction_failed).toBe(true);
    expect(JSON.stringify(row.error_details)).toMatch(/PDF extraction exceeded the 128 MB memory limit/);

    // The server's own memory did not take the inflated stream (600 MB); a generous bound, not a measurement.
    expect(process.memoryUsage.rss() - before).toBeLessThan(250 * MB);

    // The server keeps answering, and the next PDF is read by a fresh extraction process.
    const next = await upload(await makeTextPdf([['Ferry timetable to Tangier']]), 'next.pdf');
    expect(next.statusCode).toBe(202);
    expect(next.json().extraction_status).toBe('ready');
    const search = await gw.app.inject({ method: 'GET', url: '/v1/search?q=Tangier', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(search.statusCode).toBe(200);
  }, 300_000);
});
