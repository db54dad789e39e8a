/**
 * QueryEmbeddings (src/search/query-embeddings.ts): one model call per normalised query text,
 * shared by concurrent searches and remembered; a wait bounded by the budget gives up without
 * cancelling a call another search still waits for.
 */
import { describe, expect, it } from 'vitest';
import { normaliseQuery, QueryEmbeddings } from '../../src/search/query-embeddings.ts';
import type { QueryEmbedder } from '../../src/search/types.ts';

/** An embedder that answers when `release` is called, recording the texts and signals it was given. */
function slowEmbedder() {
  const calls: { text: string; signal?: AbortSignal }[] = [];
  let release: () => void = () => undefined;
  const gate = new Promise<void>((r) => (release = r));
  const embedder: QueryEmbedder = {
    name: 'test',
    dimensions: 2,
    embed: async (texts, _kind, opts) => {
      calls.push({ text: texts[0], signal: opts?.signal });
      await gate;
      return [[1, texts[0].length]];
    },
  };
  return { embedder, calls, release: () => release() };
}

describe('QueryEmbeddings', () => {
  it('normalises the text it embeds and keys on: NFC, trimmed, single spaces', () => {
    expect(normaliseQuery('  cafe\u0301   au\tlait ')).toBe('café au lait');
  });

  it('shares one model call between concurrent identical queries, then answers from memory', async () => {
    const { embedder, calls, release } = slowEmbedder();
    const e = new QueryEmbeddings(10);
    const a = e.embed(embedder, 'hello  world');
    const b = e.embed(embedder, ' hello world');
    release();
    expect(await a.vector).toEqual(await b.vector);
    expect(calls.map((c) => c.text)).toEqual(['hello world']);
    await e.embed(embedder, 'hello world').vector;
    expect(e.calls).toBe(1);
    e.clear();
    await e.embed(embedder, 'hello world').vector;
    expect(e.calls).toBe(2);
  });

  it('gives up past the budget; the call is aborted only when no search waits for it any more', async () => {
    const { embedder, calls, release } = slowEmbedder();
    const e = new QueryEmbeddings(10);
    const waiting = e.embed(embedder, 'late');
    expect(await e.withinBudget(embedder, 'late', 5)).toBeUndefined();
    expect(calls[0].signal?.aborted).toBe(false);
    waiting.abandon();
    expect(calls[0].signal?.aborted).toBe(true);
    release();
  });
});
