/**
 * While no self person is known, the relationships page and every search asked the detection again (6-7 s
 * per call under load, issue 46). An unknown self person is now kept like a known one, until new documents
 * arrive (they may say who the owner is).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RelationshipService } from '../../src/relationships/service.ts';
import { backend } from '../helpers/db.ts';
import { noteBody } from '../helpers/gateway.ts';
import { countingDetections, startRelGateway, type RelGateway } from './helpers.ts';

let gw: RelGateway;
let counted: ReturnType<typeof countingDetections>;

beforeAll(async () => {
  gw = await startRelGateway();
  counted = countingDetections(gw.db);
}, 120_000);
afterAll(async () => gw?.close());

describe(`an unknown self person (${backend})`, () => {
  it('is detected once, not on every call, and again once new documents arrive', async () => {
    const service = new RelationshipService(counted.db, { refreshHours: 0 });
    try {
      expect(await service.self()).toBeNull();
      expect(counted.detections()).toBe(1);
      expect(await service.self()).toBeNull();
      expect(await service.self()).toBeNull();
      expect(counted.detections()).toBe(1);
      const r = await gw.request('POST', '/v1/ingest', noteBody({ source_id: 'n-unknown-self', content: { data: 'A note' } }));
      expect(r.statusCode).toBeLessThan(300);
      service.noteDocuments([r.json().doc_id]);
      await service.self();
      expect(counted.detections()).toBe(2);
    } finally {
      await service.close();
    }
  });
});
