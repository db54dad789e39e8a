/**
 * A gateway on a throwaway database of the active backend, driven through Fastify's inject (no
 * sockets), with the test bearer token added to every request unless told otherwise.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { createObjectStore, loadFilesConfig, type FilesConfig } from '../../src/files/config.ts';
import type { ObjectStore } from '../../src/files/object-store.ts';
import type { OcrEngine } from '../../src/ocr/engine.ts';
import { Catalog } from '../../src/catalog/catalog.ts';
import { loadServerConfig, type ServerConfig } from '../../src/config/server.ts';
import type { Database } from '../../src/db/types.ts';
import { composeGateway, type GatewayServiceOptions } from '../../src/app/gateway-services.ts';
import { createTestDatabase, type TestDatabase } from './db.ts';

export const TEST_TOKEN = 'test-token-0123456789';

export interface TestGateway {
  app: FastifyInstance;
  db: Database;
  catalog: Catalog;
  testDb: TestDatabase;
  config: ServerConfig;
  /** Set when started with `files`: the store, its config and its folder (removed on close unless given). */
  files?: { store: ObjectStore; config: FilesConfig; dataDir: string; ocrEngine?: OcrEngine };
  request(
    method: 'GET' | 'POST' | 'PATCH' | 'DELETE' | 'PUT',
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ): Promise<LightMyRequestResponse & { body: string; json: () => any }>;
  close(): Promise<void>;
}

/** Sends requests through Fastify's inject with the test token (an empty header value removes it). */
export function injector(app: FastifyInstance): TestGateway['request'] {
  return async (method, url, body, headers = {}) => {
    const h: Record<string, string> = { authorization: `Bearer ${TEST_TOKEN}`, ...headers };
    for (const [k, v] of Object.entries(h)) if (v === '') delete h[k];
    const res = await app.inject({
      method,
      url,
      headers: h,
      ...(body === undefined ? {} : typeof body === 'string' ? { payload: body } : { payload: body as object }),
    });
    return res as any;
  };
}

/** The gateway over services built for a test (src/app/gateway-services.ts); closing it stops them. */
export const buildTestGateway = composeGateway;

export function testConfig(overrides: Partial<ServerConfig> = {}): ServerConfig {
  return { ...loadServerConfig({ LOG_LEVEL: 'silent', AUTH_TOKEN: TEST_TOKEN }), ...overrides };
}

export interface TestFilesOptions {
  /** Environment for loadFilesConfig (FILE_MAX_BYTES, OBJECT_STORE, …); DATA_DIR is the files data dir. */
  env?: Record<string, string>;
  /** Folder for the object store; a temp folder (removed on close) when absent. */
  dataDir?: string;
  /** The OCR engine (not closed by the helper); none when absent. */
  ocrEngine?: OcrEngine;
  /** A ready store, instead of the one from env. */
  store?: ObjectStore;
}

export async function startTestGateway(
  opts: {
    config?: Partial<ServerConfig>;
    testDb?: TestDatabase;
    dataDir?: string;
    files?: TestFilesOptions;
    /** The web UI's assets and sign-in codes (test/helpers/browser.ts builds the assets). */
    ui?: { dir?: string; codes?: GatewayServiceOptions['signInCodes'] };
    /** Where the gateway's log lines go (with config.logLevel set above silent). */
    logStream?: NodeJS.WritableStream;
  } = {},
): Promise<TestGateway> {
  const testDb = opts.testDb ?? (await createTestDatabase({ dataDir: opts.dataDir }));
  const config = testConfig(opts.config);
  const catalog = new Catalog(testDb.db, { phoneRegion: config.defaultPhoneRegion });
  let files: TestGateway['files'];
  let ownFilesDir: string | undefined;
  if (opts.files) {
    const dataDir = opts.files.dataDir ?? (ownFilesDir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-files-')));
    const filesConfig = loadFilesConfig({ ...opts.files.env }, dataDir);
    const store = opts.files.store ?? (await createObjectStore(filesConfig));
    files = { store, config: filesConfig, dataDir, ocrEngine: opts.files.ocrEngine };
  }
  const app = await buildTestGateway({
    config,
    db: testDb.db,
    catalog,
    files,
    uiDir: opts.ui?.dir,
    signInCodes: opts.ui?.codes,
    logStream: opts.logStream,
  });
  await app.ready();
  return {
    app,
    db: testDb.db,
    catalog,
    testDb,
    config,
    files,
    request: injector(app),
    async close() {
      await app.close();
      await testDb.drop();
      if (ownFilesDir) await fs.rm(ownFilesDir, { recursive: true, force: true });
    },
  };
}

/** A realistic v1 ingest body; override any field. */
export function noteBody(overrides: Record<string, unknown> = {}): Record<string, any> {
  return {
    source_type: 'note',
    source_id: `note-${Math.random().toString(36).slice(2)}`,
    title: 'Trip planning',
    content: { mime_type: 'text/plain', data: 'Book the train to Lisbon for the conference on the 12th.' },
    metadata: { folder: 'travel' },
    content_timestamp: '2026-03-01T10:15:00+02:00',
    ...overrides,
  };
}
