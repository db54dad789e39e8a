/**
 * Owner detection (the self person, read from the newest messages) runs once for any number of
 * concurrent searches, and a search past its half-minute cache is answered with the last list
 * while one refresh runs behind it. Before, eight searches arriving as the cache expired each ran
 * the detection and held every search for 5-8 s at 300,000 documents (docs/BENCHMARKS.md).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Database } from '../../src/db/types.ts';
import { RelationshipService } from '../../src/relationships/service.ts';
import { backend } from '../helpers/db.ts';
import { loadHistory, type Loaded } from './fixture.ts';
import { countingDetections, startRelGateway, type RelGateway } from './helpers.ts';

let gw: RelGateway;
let h: Loaded;
let counted: ReturnType<typeof countingDetections>;
/** Detections run so far. */
const detections = () => counted.detections();
let counting: Database;

beforeAll(async () => {
  gw = await startRelGateway();
  h = await loadHistory(gw, new Date(Math.floor(Date.now() / 60_000) * 60_000));
  counted = countingDetections(gw.db);
  counting = counted.db;
}, 120_000);
afterAll(async () => {
  vi.restoreAllMocks();
  await gw?.close();
});

describe(`owner detection under concurrent searches (${backend})`, () => {
  it('eight callers at once share one detection; past the cache the last list answers while one refresh runs', async () => {
    const service = new RelationshipService(counting, { refreshHours: 0 });
    try {
      const first = await Promise.all(Array.from({ length: 8 }, () => service.selfIds()));
      expect(detections()).toBe(1);
      for (const ids of first) expect(ids).toEqual([h.ids.me]);

      // A minute later the list and the self person are stale: eight more callers get it at once, one refresh runs.
      const now = Date.now();
      vi.spyOn(Date, 'now').mockReturnValue(now + 61_000);
      let answered = 0;
      const later = Array.from({ length: 8 }, () => service.selfIds().then((ids) => (answered++, ids)));
      await Promise.resolve();
      await Promise.resolve();
      // Answered from the last list before the refresh's first statement could come back.
      expect(answered).toBe(8);
      for (const ids of await Promise.all(later)) expect(ids).toEqual([h.ids.me]);
      await vi.waitFor(() => expect(detections()).toBe(2));
      // The refreshed list is cached again: nothing more runs.
      await service.selfIds();
      expect(detections()).toBe(2);
    } finally {
      vi.restoreAllMocks();
      await service.close();
    }
  });
});
