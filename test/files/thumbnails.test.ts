/**
 * GET /v1/files/{sha256}/thumbnail on the active backend: a stored image and a PDF's first page as a small
 * WebP (bounded in pixels and bytes), made once and kept beside the object, removed by forget and by
 * garbage collection; other files have none; the route needs a signed-in client.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { PDFDocument, rgb } from 'pdf-lib';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { LocalObjectStore, objectKeyFor } from '../../src/files/object-store.ts';
import { THUMBNAIL_MAX_BYTES, THUMBNAIL_MAX_PX } from '../../src/files/thumbnails.ts';
import { collectGarbage } from '../../src/maintenance/gc.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { makePng } from './fixtures.ts';
import { fileUpload } from './multipart.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await shutdownExtraction();
});

async function upload(bytes: Buffer, filename: string, mime: string): Promise<{ sha: string; docId: string }> {
  const body = fileUpload({ path: `/docs/${filename}`, mtime: 1767225600 }, bytes, filename, mime);
  const res = await gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
  expect(res.statusCode, res.body).toBeLessThan(300);
  const j = res.json();
  return { sha: j.file_sha256 ?? j.file?.file_sha256, docId: j.doc_id };
}

/** Page 1 black on its top half, page 2 white: the thumbnail shows page 1. */
async function twoPagePdf(): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const p1 = doc.addPage([595, 842]);
  p1.drawRectangle({ x: 0, y: 421, width: 595, height: 421, color: rgb(0, 0, 0) });
  doc.addPage([595, 842]);
  return Buffer.from(await doc.save());
}

function besidePath(sha: string): string {
  return `${(gw.files!.store as LocalObjectStore).localPath(objectKeyFor(sha))}.thumb.webp`;
}

async function exists(p: string): Promise<boolean> {
  return fs.stat(p).then(() => true, () => false);
}

describe('thumbnails', () => {
  it("shows a PDF's first page, at most 320 px and 64 KB, kept beside the object", async () => {
    const { sha } = await upload(await twoPagePdf(), 'letter.pdf', 'application/pdf');
    const res = await gw.request('GET', `/v1/files/${sha}/thumbnail`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['content-type']).toBe('image/webp');
    expect(res.rawPayload.length).toBeLessThanOrEqual(THUMBNAIL_MAX_BYTES);
    const meta = await sharp(res.rawPayload).metadata();
    expect(meta.format).toBe('webp');
    expect(meta.height).toBe(THUMBNAIL_MAX_PX);
    expect(meta.width).toBe(Math.round((THUMBNAIL_MAX_PX * 595) / 842));
    // Top half black, bottom half white: page 1, rendered.
    const { data, info } = await sharp(res.rawPayload).greyscale().raw().toBuffer({ resolveWithObject: true });
    const at = (x: number, y: number) => data[(y * info.width + x) * info.channels];
    expect(at(info.width >> 1, info.height >> 2)).toBeLessThan(40);
    expect(at(info.width >> 1, (3 * info.height) >> 2)).toBeGreaterThan(215);
    // Made once: kept beside the object, and that copy is what the next request answers.
    const kept = besidePath(sha);
    expect(await fs.readFile(kept)).toEqual(res.rawPayload);
    await fs.writeFile(kept, Buffer.from(await sharp({ create: { width: 8, height: 8, channels: 3, background: '#f00' } }).webp().toBuffer()));
    expect((await sharp((await gw.request('GET', `/v1/files/${sha}/thumbnail`)).rawPayload).metadata()).width).toBe(8);
  });

  it('shrinks a large image within the bounds, even one that compresses badly', async () => {
    const { sha } = await upload(makePng(2400, 1200), 'noise.png', 'image/png');
    const res = await gw.request('GET', `/v1/files/${sha}/thumbnail`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.rawPayload.length).toBeLessThanOrEqual(THUMBNAIL_MAX_BYTES);
    const meta = await sharp(res.rawPayload).metadata();
    expect(Math.max(meta.width!, meta.height!)).toBeLessThanOrEqual(THUMBNAIL_MAX_PX);
    expect(meta.width! / meta.height!).toBeCloseTo(2, 1);
  });

  it('answers many asked at once (made a few at a time), the same one asked twice made once', async () => {
    const shas = [];
    for (let i = 0; i < 5; i++) shas.push((await upload(makePng(200 + i * 10, 100), `many-${i}.png`, 'image/png')).sha);
    const answers = await Promise.all([...shas, shas[0]].map((s) => gw.request('GET', `/v1/files/${s}/thumbnail`)));
    expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(answers[5].rawPayload).toEqual(answers[0].rawPayload);
    expect((await sharp(answers[4].rawPayload).metadata()).width).toBe(240);
  });

  it('has none for a text file or an unknown hash, and none without signing in', async () => {
    const { sha } = await upload(Buffer.from('Just words, nothing to look at.'), 'words.txt', 'text/plain');
    expect((await gw.request('GET', `/v1/files/${sha}/thumbnail`)).statusCode).toBe(404);
    expect(await exists(besidePath(sha))).toBe(false);
    expect((await gw.request('GET', `/v1/files/${'e'.repeat(64)}/thumbnail`)).statusCode).toBe(404);
    const png = await upload(makePng(40, 40), 'small.png', 'image/png');
    expect((await gw.request('GET', `/v1/files/${png.sha}/thumbnail`, undefined, { authorization: '' })).statusCode).toBe(401);
  });

  it('goes when the document is forgotten', async () => {
    const { sha, docId } = await upload(makePng(500, 300), 'holiday.png', 'image/png');
    expect((await gw.request('GET', `/v1/files/${sha}/thumbnail`)).statusCode).toBe(200);
    expect(await exists(besidePath(sha))).toBe(true);
    const res = await gw.request('POST', '/v1/forget', { doc_id: docId });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().removed.files).toBe(1);
    expect(await exists(besidePath(sha))).toBe(false);
    expect((await gw.request('GET', `/v1/files/${sha}/thumbnail`)).statusCode).toBe(404);
  });

  it('goes with its object in garbage collection, and a thumbnail left without one goes too', async () => {
    const { sha } = await upload(makePng(300, 300), 'unused.png', 'image/png');
    expect((await gw.request('GET', `/v1/files/${sha}/thumbnail`)).statusCode).toBe(200);
    // No document uses the file any more (as when its only version was replaced): the file is garbage.
    await gw.db.query('DELETE FROM document_files WHERE file_sha256 = $1', [sha]);
    const stray = `${(gw.files!.store as LocalObjectStore).localPath(objectKeyFor('f'.repeat(64)))}.thumb.webp`;
    await fs.mkdir(path.dirname(stray), { recursive: true });
    await fs.writeFile(stray, 'left behind');
    const r = await collectGarbage(gw.db, gw.files!.store, { graceMs: -60_000 });
    expect(r.files).toBeGreaterThanOrEqual(1);
    expect(await exists(besidePath(sha))).toBe(false);
    expect(await exists(stray)).toBe(false);
  });
});
