/**
 * Huge texts (issue 47): cleaning a 50 MB text file took the server's thread for seconds, and every search waited.
 * Text is now cleaned in pieces with turns of the event loop between them, only as far as it is kept, and
 * documents are loaded into the search index in slices: a search sent while a big text is being ingested is
 * answered first, and the big text is searchable to its last word afterwards. The result is the same text.
 */
import type { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanText, cleanTextWithin } from '../../src/files/decode.ts';
import { extractText, shutdownExtraction } from '../../src/files/extract.ts';
import { LocalObjectStore, type ObjectStore } from '../../src/files/object-store.ts';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { fileUpload } from './multipart.ts';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

const WORDS = ['harbor', 'lantern', 'meadow', 'copper', 'violet', 'orchard', 'canyon', 'ember', 'glacier', 'saffron'];
/** About `chars` characters of words, ten to a line, ending with `last`. */
function bigText(chars: number, last: string): string {
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < chars; i++) {
    const w = `${WORDS[i % WORDS.length]}${i % 997}`;
    parts.push(w, (i + 1) % 10 === 0 ? '\n' : ' ');
    n += w.length + 1;
  }
  parts.push(last);
  return parts.join('');
}

describe('cleaning text in pieces', () => {
  it('gives exactly cleanText cut at the limit, whatever the pieces', async () => {
    const alphabet = ['a', 'b', ' ', '\t', '\n', '\r', '\r\n', '\u0001', '\u00a0', 'é', '\n\n\n', '  \n', '\u000b', '\u007f'];
    let seed = 47;
    const rnd = (n: number) => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) % n;
    for (let t = 0; t < 3000; t++) {
      let s = '';
      for (let i = rnd(80); i > 0; i--) s += alphabet[rnd(alphabet.length)];
      const max = 1 + rnd(60);
      const want = cleanText(s);
      expect(await cleanTextWithin(s, max, 1 + rnd(12))).toEqual({ text: want.slice(0, max), truncated: want.length > max });
    }
  });

  it('keeps the event loop turning while a 20 MB text file is extracted', async () => {
    const buffer = Buffer.from(bigText(20_000_000, 'finale'));
    let turns = 0;
    let done = false;
    const extraction = extractText({ buffer, filename: 'big.txt' }).then((r) => ((done = true), r));
    // Before: decoding and cleaning ran in one go, so the extraction finished before any of these turns.
    for (let i = 0; i < 5; i++) {
      await new Promise((r) => setImmediate(r));
      if (!done) turns++;
    }
    expect(turns).toBe(5);
    const r = await extraction;
    expect(r.status).toBe('ready');
    expect(r.text).toBe(cleanText(buffer.toString('utf8')).slice(0, 5_000_000));
    expect(r.truncated).toBe(true);
    expect(r.warnings).toEqual(['text truncated at 5000000 characters']);
  });
});

describe(`ingesting a big text on ${backend}`, () => {
  let gw: TestGateway;
  let root: string;
  /** Called once an upload's stored object has been read back for extraction. */
  let onRead: (() => void) | undefined;
  beforeAll(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-big-text-'));
    const local = await LocalObjectStore.open({ root });
    // The store as an S3-like backend (no local path): extraction reads the object back as a stream, and the test
    // learns when that read is over, so it can send a search while the text is being ingested.
    const store: ObjectStore = {
      backend: local.backend,
      put: (s, o) => local.put(s, o),
      async get(key) {
        const stream: Readable = await local.get(key);
        stream.once('end', () => onRead?.());
        return stream;
      },
      has: (sha) => local.has(sha),
      delete: (key) => local.delete(key),
      putBeside: (k, n, b) => local.putBeside(k, n, b),
      getBeside: (k, n) => local.getBeside(k, n),
      deleteBeside: (k, n) => local.deleteBeside(k, n),
    };
    gw = await startTestGateway({ files: { store, dataDir: root } });
  }, 300_000);
  afterAll(async () => {
    await gw?.close();
    await shutdownExtraction();
    await fs.rm(root, { recursive: true, force: true });
  });

  const search = (q: string) =>
    gw.app.inject({ method: 'GET', url: `/v1/search?${new URLSearchParams({ q })}`, headers: { authorization: `Bearer ${TEST_TOKEN}` } });

  it('answers searches sent during the ingest first, and finds the last word of the text afterwards', async () => {
    expect((await search('harbor0')).statusCode).toBe(200); // the index is built before the race
    const text = Buffer.from(bigText(4_500_000, 'zanzibarquokka'));
    const order: string[] = [];
    let searched: Promise<unknown> | undefined;
    // A client searching four times while the text is being ingested, each time on a later turn of the event loop
    // (a timer), as requests from a real client arrive. On PGlite a search runs in one turn; before, the ingest
    // left one turn free between reading the text and the end of its transaction.
    onRead = () => {
      onRead = undefined;
      searched = (async () => {
        for (let i = 0; i < 4; i++) {
          await new Promise((r) => setTimeout(r, 0));
          order.push(`search ${(await search(`lantern${i}`)).statusCode}`);
        }
      })();
    };
    const body = fileUpload({ source: 'localfs', path: '/tmp/big.txt' }, text, 'big.txt', 'text/plain');
    const res = await gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
    order.push(`upload ${res.statusCode}`);
    await searched;
    expect(res.json().extraction_status).toBe('ready');
    expect(order).toEqual(['search 200', 'search 200', 'search 200', 'search 200', 'upload 202']);

    const found = (await search('zanzibarquokka')).json();
    expect(found.hits.map((h: { document_id: string }) => h.document_id)).toContain(res.json().doc_id);
  }, 300_000);

  it('finds the last line of a 100,000-line message', async () => {
    const lines = Array.from({ length: 100_000 }, (_, i) => `line ${i}: ${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]}${i % 991}`);
    lines.push('and finally the wombatcrescendo');
    const res = await gw.request('POST', '/v1/ingest', { source_type: 'chatapp', source_id: 'long-message', content: { data: lines.join('\n') } });
    expect(res.statusCode).toBeLessThan(300);
    const found = (await search('wombatcrescendo')).json();
    expect(found.hits.map((h: { document_id: string }) => h.document_id)).toContain(res.json().doc_id);
  }, 300_000);
});
