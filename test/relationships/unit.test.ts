import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/server.ts';
import { loadRelationshipConfig } from '../../src/relationships/config.ts';
import { decayBucket, relationshipScore } from '../../src/relationships/score.ts';
import { parseWindow } from '../../src/relationships/top.ts';

const zero = { days_since_last_message: 0, messages_30d: 0, distinct_threads_90d: 0, attachments_30d: 0, avg_reply_latency_seconds: null };

describe('decay bucket (spec 2.6, whole days)', () => {
  it.each([
    [0, 0], [0.5, 0], [1, 0], [1.99, 0], [2, 1], [7, 1], [7.99, 1], [8, 2], [30, 2], [30.5, 2], [31, 3], [90, 3],
    [91, 4], [180, 4], [180.99, 4], [181, 5], [4000, 5], [-1, 0],
  ])('%s days -> bucket %s', (days, bucket) => {
    expect(decayBucket(days)).toBe(bucket);
  });
});

describe('score formula', () => {
  it('recency alone: 45 points now, halving every half-life, continuously', () => {
    expect(relationshipScore(zero, 30).score).toBe(45);
    expect(relationshipScore({ ...zero, days_since_last_message: 30 }, 30).score).toBe(22.5);
    expect(relationshipScore({ ...zero, days_since_last_message: 60 }, 30).score).toBe(11.25);
    expect(relationshipScore({ ...zero, days_since_last_message: 7 }, 7).score).toBe(22.5);
    // No steps: a day more always costs something.
    const a = relationshipScore({ ...zero, days_since_last_message: 13.9 }, 30).score;
    const b = relationshipScore({ ...zero, days_since_last_message: 14.1 }, 30).score;
    expect(a).toBeGreaterThan(b);
    expect(a - b).toBeLessThan(0.5);
  });

  it('volume, breadth and attachments saturate', () => {
    const s = (f: Partial<typeof zero>) => relationshipScore({ ...zero, days_since_last_message: 1e6, ...f }, 30).score;
    expect(s({ messages_30d: 10 })).toBeCloseTo(30 * (1 - Math.exp(-1)), 3);
    expect(s({ distinct_threads_90d: 2 })).toBeCloseTo(15 * (1 - Math.exp(-1)), 3);
    expect(s({ attachments_30d: 3 })).toBeCloseTo(10 * (1 - Math.exp(-1)), 3);
    // Diminishing returns: the 1000th message adds almost nothing, the full score stays below 100.
    expect(s({ messages_30d: 1000 }) - s({ messages_30d: 999 })).toBeLessThan(1e-3);
    const max = relationshipScore({ days_since_last_message: 0, messages_30d: 1e4, distinct_threads_90d: 1e3, attachments_30d: 1e3, avg_reply_latency_seconds: 0 }, 30);
    expect(max.score).toBe(100);
  });

  it('reply latency: full score for instant replies, -12.5 % after a day, never below 75 %', () => {
    expect(relationshipScore({ ...zero, avg_reply_latency_seconds: 0 }, 30).score).toBe(45);
    expect(relationshipScore({ ...zero, avg_reply_latency_seconds: 86400 }, 30).score).toBe(39.375);
    expect(relationshipScore({ ...zero, avg_reply_latency_seconds: 86400 }, 30).components.reply_factor).toBe(0.875);
    expect(relationshipScore({ ...zero, avg_reply_latency_seconds: 1e9 }, 30).score).toBeCloseTo(33.75, 3);
  });

  it('components explain the score', () => {
    const { score, components } = relationshipScore(
      { days_since_last_message: 3, messages_30d: 12, distinct_threads_90d: 2, attachments_30d: 1, avg_reply_latency_seconds: 3600 },
      30,
    );
    const rebuilt =
      100 * (0.45 * components.recency + 0.3 * components.volume + 0.15 * components.breadth + 0.1 * components.attachments) *
      components.reply_factor;
    expect(score).toBeCloseTo(rebuilt, 3);
    expect(components.base).toBeCloseTo(score / components.reply_factor, 3);
  });
});

describe('window parsing', () => {
  it.each([
    ['90d', 90], ['1d', 1], ['3650d', 3650], [' 30D ', 30], ['007d', 7], [undefined, 90],
  ])('%j -> %s days', (raw, days) => expect(parseWindow(raw as string | undefined)).toBe(days));
  it.each(['0d', '3651d', '90', 'd', '-1d', '1.5d', '90 d', '90days', '', '99999999999d', '1w'])('%j is rejected', (raw) =>
    expect(parseWindow(raw)).toBeNull(),
  );
});

describe('relationship config', () => {
  it('reads the environment', () => {
    const c = loadRelationshipConfig({
      RELATIONSHIP_HALF_LIFE_DAYS: '14',
      SELF_IDENTIFIERS: ' me@example.com , +1 508 410 9571 ,',
      RELATIONSHIPS_REQUIRE_CATALOG_TOKEN: 'true',
      RELATIONSHIP_DEBOUNCE_MS: '500',
      RELATIONSHIP_REFRESH_HOURS: '0',
      DEFAULT_PHONE_REGION: 'gb',
    });
    expect(c).toMatchObject({
      halfLifeDays: 14,
      selfIdentifiers: ['me@example.com', '+1 508 410 9571'],
      requireCatalogToken: true,
      debounceMs: 500,
      refreshHours: 0,
      phoneRegion: 'GB',
    });
    expect(loadRelationshipConfig({})).toMatchObject({ halfLifeDays: 30, selfIdentifiers: [], requireCatalogToken: false });
  });
  it.each([
    ['RELATIONSHIP_HALF_LIFE_DAYS', '0'],
    ['RELATIONSHIP_HALF_LIFE_DAYS', 'soon'],
    ['RELATIONSHIPS_REQUIRE_CATALOG_TOKEN', 'maybe'],
    ['RELATIONSHIP_DEBOUNCE_MS', '-1'],
  ])('%s=%s is a clear error', (key, value) => {
    expect(() => loadRelationshipConfig({ [key]: value })).toThrow(ConfigError);
  });
});
