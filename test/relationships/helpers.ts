/** A gateway whose catalog feeds the relationship service, on the active test backend. */
import { Catalog } from '../../src/catalog/catalog.ts';
import type { Database } from '../../src/db/types.ts';
import type { ServerConfig } from '../../src/config/server.ts';
import type { RelationshipConfig } from '../../src/relationships/config.ts';
import { RelationshipService } from '../../src/relationships/service.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { buildTestGateway, injector, testConfig, type TestGateway } from '../helpers/gateway.ts';

export interface RelGateway extends TestGateway {
  service: RelationshipService;
}

export async function startRelGateway(
  opts: { rel?: Partial<RelationshipConfig>; config?: Partial<ServerConfig>; testDb?: TestDatabase } = {},
): Promise<RelGateway> {
  const testDb = opts.testDb ?? (await createTestDatabase());
  const config = testConfig(opts.config);
  // A long debounce by default: tests call service.flush() to decide when the refresh happens.
  const service = new RelationshipService(testDb.db, { debounceMs: 600_000, maxDelayMs: 600_000, refreshHours: 0, ...opts.rel });
  const catalog = new Catalog(testDb.db, {
    phoneRegion: config.defaultPhoneRegion,
    onDocumentsIngested: (ids) => service.noteDocuments(ids),
  });
  let app;
  try {
    app = await buildTestGateway({ config, db: testDb.db, catalog, relationships: service });
    await app.ready();
  } catch (err) {
    await service.close();
    await testDb.drop();
    throw err;
  }
  return {
    app,
    db: testDb.db,
    catalog,
    testDb,
    config,
    service,
    request: injector(app),
    async close() {
      await app.close();
      await testDb.drop();
    },
  };
}

/**
 * `db` with the owner detections counted: the read of outbound messages (`is_from_me`) each one makes on the
 * way to the database.
 */
export function countingDetections(db: Database): { db: Database; detections: () => number } {
  let n = 0;
  const counted = new Proxy(db, {
    get(target, key) {
      if (key === 'query') {
        return (sql: string, ...rest: unknown[]) => {
          if (sql.includes('is_from_me')) n++;
          return (target.query as (...a: unknown[]) => unknown)(sql, ...rest);
        };
      }
      const v = Reflect.get(target, key);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  }) as Database;
  return { db: counted, detections: () => n };
}
