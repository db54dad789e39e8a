import { describe, expect, it } from 'vitest';
import { loadSearchConfig } from '../../src/search/config.ts';
import { boostFactor, fuse, lexicalDecidesPage, MAX_BOOST, SOURCE_WEIGHTS } from '../../src/search/fusion.ts';

/** Small seeded generator, so a failure names the case that broke. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}

const NOW = new Date('2026-06-01T00:00:00Z');
const SOURCES = [...Object.keys(SOURCE_WEIGHTS), 'note', 'file'];

describe('lexicalDecidesPage: the vector leg is skipped only when it cannot add a document to the page', () => {
  it('MAX_BOOST is the largest factor boostFactor gives', () => {
    const newest = { content_timestamp: NOW, has_attachments: true, source_type: 'email' };
    expect(boostFactor(newest, NOW)).toBeCloseTo(MAX_BOOST, 12);
    for (const source_type of SOURCES) {
      for (const ageDays of [0, 3, 10, 100]) {
        const d = { content_timestamp: new Date(NOW.getTime() - ageDays * 86_400_000), has_attachments: ageDays % 2 === 0, source_type };
        expect(boostFactor(d, NOW)).toBeLessThanOrEqual(MAX_BOOST);
        expect(boostFactor(d, NOW)).toBeGreaterThanOrEqual(1);
      }
    }
  });

  it('fewer lexical candidates than the page, no positive score, or weights that let vectors lead: the leg runs', () => {
    const cfg = { lexicalWeight: 1, vectorWeight: 0.02 };
    const strong = Array.from({ length: 10 }, (_, i) => ({ score: 10 - i * 0.1 }));
    expect(lexicalDecidesPage(strong, 10, cfg, true)).toBe(true);
    expect(lexicalDecidesPage(strong.slice(0, 9), 10, cfg, true)).toBe(false);
    expect(lexicalDecidesPage([], 1, cfg, true)).toBe(false);
    expect(lexicalDecidesPage(strong.map(() => ({ score: 0 })), 10, cfg, true)).toBe(false);
    expect(lexicalDecidesPage(strong, 10, { lexicalWeight: 1, vectorWeight: 1 }, true)).toBe(false);
    // The tenth at 2 % of the best: a vector-only document (<= 0.02 x MAX_BOOST) could pass it.
    const weakTail = [...strong.slice(0, 9), { score: 0.2 }];
    expect(lexicalDecidesPage(weakTail, 10, cfg, true)).toBe(false);
    expect(lexicalDecidesPage(weakTail, 9, cfg, true)).toBe(true);
  });

  it('whenever it says so, fusing in any vector candidates puts no vector-only document on the page (random cases)', () => {
    const cfg = loadSearchConfig({});
    let decided = 0;
    let vectorOnlyOnPages = 0;
    for (let seed = 1; seed <= 3000; seed++) {
      const r = rng(seed);
      const k = 1 + Math.floor(r() * 12);
      const weights = { ...cfg, lexicalWeight: 0.5 + r(), vectorWeight: r() < 0.5 ? 0.02 : r() * 0.6 };
      const boosts = r() < 0.8;
      const nLex = Math.floor(r() * 30);
      // Scores spread over a few orders of magnitude, ties included.
      const lexical = Array.from({ length: nLex }, (_, i) => ({
        doc_id: `l${String(i).padStart(3, '0')}`,
        chunk_id: `c${i}`,
        score: r() < 0.1 ? 1 : Math.exp(-6 * r()),
      })).sort((a, b) => b.score - a.score);
      // Vector candidates: some lexical documents, some found by the vector leg only, all above the floor.
      const vector = Array.from({ length: Math.floor(r() * 20) }, (_, i) => ({
        doc_id: r() < 0.4 && nLex > 0 ? lexical[Math.floor(r() * nLex)].doc_id : `v${String(i).padStart(3, '0')}`,
        chunk_id: `vc${i}`,
        similarity: weights.vectorMinSimilarity + r() * (1 - weights.vectorMinSimilarity),
      }));
      const attrs = new Map<string, { content_timestamp: Date; has_attachments: boolean; source_type: string }>();
      const attrOf = (id: string) => {
        if (!attrs.has(id)) {
          attrs.set(id, {
            content_timestamp: new Date(NOW.getTime() - Math.floor(r() * 60) * 86_400_000),
            has_attachments: r() < 0.3,
            source_type: SOURCES[Math.floor(r() * SOURCES.length)],
          });
        }
        return attrs.get(id)!;
      };
      // The page as search.ts ranks it: fuse, boost, sort, first k.
      const page = fuse(lexical, vector, weights)
        .map((c) => ({ c, score: c.fused * (boosts ? boostFactor(attrOf(c.doc_id), NOW) : 1) }))
        .sort((x, y) => y.score - x.score || y.c.fused - x.c.fused || x.c.doc_id.localeCompare(y.c.doc_id))
        .slice(0, k);
      const vectorOnly = page.filter((p) => p.c.lexical === null).length;
      if (lexicalDecidesPage(lexical, k, weights, boosts)) {
        decided++;
        expect({ seed, vectorOnly }).toEqual({ seed, vectorOnly: 0 });
      } else if (vectorOnly > 0) {
        vectorOnlyOnPages++;
      }
    }
    // Both sides of the rule occurred, so the property was not checked vacuously.
    expect(decided).toBeGreaterThan(300);
    expect(vectorOnlyOnPages).toBeGreaterThan(100);
  });
});

describe('SEARCH_VECTOR_LEG', () => {
  it('defaults to auto, accepts always, refuses anything else', () => {
    expect(loadSearchConfig({}).vectorLeg).toBe('auto');
    expect(loadSearchConfig({ SEARCH_VECTOR_LEG: 'Always' }).vectorLeg).toBe('always');
    expect(() => loadSearchConfig({ SEARCH_VECTOR_LEG: 'sometimes' })).toThrow(/SEARCH_VECTOR_LEG must be auto or always, got "sometimes"/);
  });
});
