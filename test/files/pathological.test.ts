/**
 * Pathological files (issue 22): HTML conversion runs in a worker thread within a time budget, and a file over the
 * budget is stored with extraction_failed and the reason instead of stalling the server; deeply nested JSON is
 * extracted without recursion.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractText, shutdownExtraction } from '../../src/files/extract.ts';
import { htmlToReadable } from '../../src/files/html-convert.ts';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { fileUpload } from './multipart.ts';

/** 50,000 nested <div>s: seconds of work for an HTML-to-text converter. */
const NESTED = '<html><body>' + '<div>'.repeat(50_000) + 'deep' + '</div>'.repeat(50_000) + '</body></html>';
const LIMITS = { maxHtmlChars: 8_000_000, htmlTimeoutMs: 600_000, maxMemoryMb: 512 };

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ files: { env: { EXTRACT_HTML_TIMEOUT_MS: '200' } } });
});
afterAll(async () => {
  await gw?.close();
  await shutdownExtraction();
});

describe('HTML conversion off the event loop', () => {
  it('keeps the event loop turning while a pathological page converts', async () => {
    let ticks = 0;
    let converted = false;
    const conversion = htmlToReadable(NESTED, LIMITS, []).then(() => (converted = true));
    // On the calling thread the conversion would finish before any of these turns could run.
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setImmediate(r));
      if (!converted) ticks++;
    }
    expect(ticks).toBe(5);
    await conversion;
  });

  it('converts ordinary HTML and cuts HTML over the size budget with a warning', async () => {
    const warnings: string[] = [];
    const text = await htmlToReadable('<html><body><h1>Menu</h1><script>x()</script><p>Soup of the day</p></body></html>', LIMITS, warnings);
    expect(text).toMatch(/Menu/);
    expect(text).toMatch(/Soup of the day/);
    expect(text).not.toMatch(/x\(\)/);
    expect(warnings).toEqual([]);
    const cut = await htmlToReadable(`<p>${'word '.repeat(1000)}</p>`, { ...LIMITS, maxHtmlChars: 1000 }, warnings);
    expect(cut.length).toBeLessThan(1000);
    expect(warnings).toEqual(['HTML cut at 1000 characters before conversion']);
  });
});

describe('deeply nested JSON files', () => {
  it('extracts a JSON file nested 100,000 levels deep', async () => {
    const json = '{"a":'.repeat(100_000) + '"bottom"' + '}'.repeat(100_000);
    const r = await extractText({ buffer: Buffer.from(json), filename: 'deep.json' });
    expect(r.status).toBe('ready');
    expect(r.method).toBe('json');
    expect(r.text).toMatch(/^a\.a\.a/);
  });
});

describe(`POST /v1/ingest/file with pathological HTML on ${backend}`, () => {
  it('stores a page over the time budget with extraction_failed and the reason', async () => {
    const body = fileUpload({ source: 'localfs', path: '/tmp/nested.html' }, Buffer.from(NESTED), 'nested.html', 'text/html');
    const res = await gw.app.inject({
      method: 'POST',
      url: '/v1/ingest/file',
      payload: body.payload,
      headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(res.statusCode).toBe(202);
    expect(res.json().extraction_status).toBe('failed');
    const row = (await gw.db.query<any>('SELECT extraction_failed, error_details FROM documents WHERE doc_id = $1', [res.json().doc_id])).rows[0];
    expect(row.extraction_failed).toBe(true);
    expect(JSON.stringify(row.error_details)).toMatch(/HTML conversion exceeded its time budget of 200 ms/);
    // The server still answers, and the next ordinary page converts on a fresh worker.
    const ok = fileUpload({ source: 'localfs', path: '/tmp/ok.html' }, Buffer.from('<p>Train times to Lisbon</p>'), 'ok.html', 'text/html');
    const next = await gw.app.inject({
      method: 'POST',
      url: '/v1/ingest/file',
      payload: ok.payload,
      headers: { ...ok.headers, authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(next.statusCode).toBe(202);
    expect(next.json().extraction_status).toBe('ready');
  });
});
