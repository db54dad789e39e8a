/**
 * Where the time of `memex import mail` goes, part by part, on one generated Maildir (bench/email/corpus.ts),
 * all in this process so each part is timed alone:
 *
 *   node --import tsx bench/email/split.ts [--messages 2000] [--backend pglite|postgres|both] [--batch 100]
 *
 * 1. importer: read + parse + clean + redact + build (importMail with a gateway client that answers at once,
 *    so the batching and bookkeeping are counted but no HTTP), CPU ms per message;
 * 2. request: JSON.stringify of each batch as the gateway client sends it;
 * 3. route: POST /v1/ingest:batch through Fastify inject (JSON parse, input guard, validation, prepare,
 *    response serialisation) with a catalog that answers at once, ms per document;
 * 4. catalog: Catalog.ingestBatch on a fresh database of the backend, with the route's prepared items, ms per
 *    document (what the route hands to the catalog; mailcat's part).
 * CPU figures come from process.cpuUsage (user + system of this process).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { validateAgentConfig } from '../../src/agent/config.ts';
import { discoverSources, importMail } from '../../src/agent/collectors/email/mail-import.ts';
import type { GatewayClient } from '../../src/agent/gateway-client.ts';
import { Catalog } from '../../src/catalog/catalog.ts';
import type { IngestItem } from '../../src/catalog/ingest.ts';
import { loadServerConfig } from '../../src/config/server.ts';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { composeGateway } from '../../src/app/gateway-services.ts';
import { batchKeyOf } from '../../src/catalog/catalog.ts';
import { machineLine } from '../lib/server.ts';
import { generateCorpus, writeMaildir } from './corpus.ts';
import pg from 'pg';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '2000' },
    backend: { type: 'string', default: 'both' },
    batch: { type: 'string', default: '100' },
    seed: { type: 'string', default: '17' },
  },
});
const total = Number(values.messages);
const batchSize = Number(values.batch);
const backends = values.backend === 'both' ? (['postgres', 'pglite'] as const) : [values.backend as 'postgres' | 'pglite'];
const TOKEN = 'split-token-0123456789';

function cpuMs(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

async function measure<T>(fn: () => Promise<T>): Promise<{ wall: number; cpu: number; value: T }> {
  const c = process.cpuUsage();
  const t = performance.now();
  const value = await fn();
  return { wall: performance.now() - t, cpu: cpuMs(c), value };
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-split-'));
const corpus = generateCorpus({ messages: total, seed: Number(values.seed), domain: `split${values.seed}.example` });
const maildir = writeMaildir(path.join(work, 'Maildir'), corpus.messages);
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${total} messages, batches of ${batchSize}`);

const config = validateAgentConfig({ auth: { secret: 'split-agent-secret-0123456789' }, gateway: { base_url: 'http://127.0.0.1:1' } }, 'split', {});
const sources = await discoverSources(maildir);

// 1. The importer with a gateway that answers at once (each item accepted), documents kept for the next parts.
const batches: object[][] = [];
const instant: GatewayClient = {
  async submitDocument() {
    return { status: 202, body: { submission_id: 'x', doc_id: 'x', status: 'pending', duplicate: false } as any };
  },
  async submitBatch(docs) {
    batches.push(docs);
    return { status: 202, body: { results: docs.map((_, index) => ({ index, status_code: 202, submission: { submission_id: 'x', doc_id: 'x', duplicate: false }, error: null })) } as any };
  },
  async uploadFile() {
    return { status: 202, body: {} as any };
  },
  async uploadFiles(files) {
    return { status: 202, body: { results: files.map((_, index) => ({ index, status_code: 202, error: null })) } as any };
  },
};
// Warm-up (JIT, module loading) on a fifth, then the measured run.
await importMail(sources.slice(0, Math.ceil(sources.length / 5)), { gateway: instant, config, batchSize, attachments: false });
batches.length = 0;
const imp = await measure(() => importMail(sources, { gateway: instant, config, batchSize, attachments: false }));
console.log(`1. importer (read, parse, clean, redact, build, batch): ${(imp.cpu / total).toFixed(2)} ms CPU / message, ${(total / (imp.wall / 1000)).toFixed(0)} messages/s wall`);

// 2. The request body as the gateway client builds it.
let bodies: string[] = [];
const ser = await measure(async () => (bodies = batches.map((docs) => JSON.stringify({ documents: docs }))));
const bodyBytes = bodies.reduce((n, b) => n + Buffer.byteLength(b), 0);
console.log(`2. request JSON.stringify: ${(ser.cpu / total).toFixed(3)} ms CPU / message (${(bodyBytes / total / 1024).toFixed(1)} KiB / message)`);

// 3. The route with a catalog that answers at once.
const prepared: IngestItem[][] = [];
const stubCatalog = {
  async ingestBatch(items: IngestItem[]) {
    prepared.push(items);
    return {
      batch_id: '00000000-0000-0000-0000-000000000000',
      batch_status: 'completed',
      total_count: items.length,
      success_count: items.length,
      failure_count: 0,
      items: items.map((it) => ({
        index: it.index,
        ok: true,
        result: { submission_id: '00000000-0000-0000-0000-000000000000', doc_id: '00000000-0000-0000-0000-000000000000', external_id: it.request.external_id ?? it.request.source_id, version_number: 1, status: 'pending', thread_id: null, file_ids: [], duplicate: false, total_chunks: 1 },
      })),
    };
  },
};
{
  const db = await openDatabase({});
  const app: FastifyInstance = await composeGateway({ config: { ...loadServerConfig({ LOG_LEVEL: process.env.SPLIT_LOG ?? 'silent', AUTH_TOKEN: TOKEN }) }, db, catalog: stubCatalog as unknown as Catalog });
  await app.ready();
  const post = (payload: string) =>
    app.inject({ method: 'POST', url: '/v1/ingest:batch', headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, payload });
  for (const b of bodies.slice(0, 5)) await post(b); // warm-up
  prepared.length = 0;
  const route = await measure(async () => {
    for (const b of bodies) {
      const r = await post(b);
      if (r.statusCode !== 202) throw new Error(`route answered ${r.statusCode}: ${r.body.slice(0, 300)}`);
    }
  });
  console.log(`3. route POST /v1/ingest:batch without the catalog (inject): ${(route.cpu / total).toFixed(3)} ms CPU / document, ${(route.wall / total).toFixed(3)} ms wall`);
  await app.close();
  await db.close();
}

// 4. The catalog alone, per backend.
for (const backend of backends) {
  let db: Database;
  let drop = async () => {};
  if (backend === 'postgres') {
    const admin = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
    const name = `memex_split_${Date.now()}`;
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    await c.query(`CREATE DATABASE ${name}`);
    await c.end();
    const u = new URL(admin);
    u.pathname = `/${name}`;
    db = await openDatabase({ databaseUrl: u.toString() });
    drop = async () => {
      const d = new pg.Client({ connectionString: admin });
      await d.connect();
      await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await d.end();
    };
  } else {
    db = await openDatabase({ dataDir: path.join(work, 'pglite') });
  }
  const catalog = new Catalog(db, {});
  const cat = await measure(async () => {
    for (const items of prepared) await catalog.ingestBatch(items, batchKeyOf(items.map((i) => i.request)));
  });
  console.log(`4. catalog ingestBatch on ${backend}: ${(cat.wall / total).toFixed(2)} ms wall / document (${(total / (cat.wall / 1000)).toFixed(0)} documents/s), this process ${(cat.cpu / total).toFixed(2)} ms CPU / document`);
  await db.close();
  await drop();
}
console.log(`load after: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
fs.rmSync(work, { recursive: true, force: true });
