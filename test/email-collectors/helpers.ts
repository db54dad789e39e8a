/**
 * Shared set-up for collector tests: a LIVE gateway (real catalog on the test database backend, listening
 * on a loopback port), a recorder standing in for POST /v1/ingest/file (that route is being built on
 * another branch; the recorder parses the real multipart request the agent sends), and agent servers
 * wired to both.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { createGatewayClient, type GatewayClient } from '../../src/agent/gateway-client.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { testConfig } from '../agent/helpers.ts';

export { SECRET, auth } from '../agent/helpers.ts';

export interface LiveGateway {
  gw: TestGateway;
  url: string;
  close(): Promise<void>;
}

export async function startLiveGateway(): Promise<LiveGateway> {
  const gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = gw.app.server.address() as { port: number };
  return { gw, url: `http://127.0.0.1:${addr.port}`, close: () => gw.close() };
}

export interface RecordedUpload {
  headers: http.IncomingHttpHeaders;
  meta: Record<string, any>;
  filename: string | null;
  contentType: string | null;
  data: Buffer;
}

/**
 * Records multipart uploads as the spec's file route would receive them; answers 202 (200 for a repeat). Like a
 * gateway that follows the spec only, it has no file batch route (404), so clients fall back to one upload per file.
 */
export async function startUploadRecorder(): Promise<{ url: string; uploads: RecordedUpload[]; close(): Promise<void> }> {
  const uploads: RecordedUpload[] = [];
  const seen = new Set<string>();
  const server = http.createServer((req, res) => {
    if (req.url?.endsWith(':batch')) {
      req.resume();
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ detail: `Not Found: POST ${req.url}` }));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      try {
        const body = Buffer.concat(chunks);
        const form = await new Response(body, { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
        const metaPart = form.get('meta');
        const upload = form.get('upload') as File | null;
        const meta = JSON.parse(typeof metaPart === 'string' ? metaPart : await (metaPart as Blob).text());
        const data = upload ? Buffer.from(await upload.arrayBuffer()) : Buffer.alloc(0);
        uploads.push({ headers: req.headers, meta, filename: upload?.name ?? null, contentType: upload?.type ?? null, data });
        const key = String(req.headers['idempotency-key']);
        const dup = seen.has(key);
        seen.add(key);
        res.writeHead(dup ? 200 : 202, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ submission_id: 'file-sub', doc_id: 'file-doc', status: 'submitted', duplicate: dup, file_ids: [], total_chunks: 0 }));
      } catch (err) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: (err as Error).message }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, uploads, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Documents go to `docsUrl` (the live gateway); uploads go to `filesUrl` (the recorder). */
export function splitGatewayClient(docsUrl: string, filesUrl: string, token = TEST_TOKEN): GatewayClient {
  const fast = { backoffMs: [20, 40], uploadBackoffMs: [20, 40, 80] };
  const docs = createGatewayClient({ baseUrl: docsUrl, authToken: token, ...fast });
  const files = createGatewayClient({ baseUrl: filesUrl, authToken: token, ...fast });
  return { submitDocument: docs.submitDocument, submitBatch: docs.submitBatch, uploadFile: files.uploadFile, uploadFiles: files.uploadFiles };
}

export function tmpDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export function mailConfig(stateDir: string, mail: Record<string, unknown>, gatewayUrl = 'http://127.0.0.1:9') {
  return testConfig({
    gateway: { base_url: gatewayUrl, auth_token: TEST_TOKEN },
    modules: {
      mail: {
        enabled: true,
        state: {
          run_state_path: path.join(stateDir, 'state.json'),
          rejected_log_path: path.join(stateDir, 'rejected.log'),
          lock_file_path: path.join(stateDir, 'collector.lock'),
        },
        ...mail,
      },
    },
  });
}

export async function agentWith(config: ReturnType<typeof testConfig>, gateway: GatewayClient): Promise<AgentServer> {
  const app = await createAgentServer(config, { logger: false, gateway });
  await app.ready();
  return app;
}

/** An output stream for a CLI verb that keeps what it was given (not a terminal). */
export function textSink(): { write(s: string): boolean; isTTY: false; readonly text: string } {
  let text = '';
  return { write: (s: string) => ((text += s), true), isTTY: false, get text() { return text; } };
}

/** The source tags (unread, flagged, replied) of a test domain's mail: "n:tag", n the number of simpleMessage(n). */
export async function sourceTags(live: LiveGateway, domain: string): Promise<string[]> {
  const r = await live.gw.db.query<{ external_id: string; tag: string }>(
    `SELECT d.external_id, t.tag FROM document_tags t JOIN documents d ON d.doc_id = t.doc_id AND d.is_active_version
      WHERE d.external_id LIKE $1 AND t.origin = 'source' ORDER BY 1, 2`,
    [`%@${domain}%`],
  );
  return r.rows.map((x) => `${/(\d+)@/.exec(x.external_id)?.[1] ?? x.external_id}:${x.tag}`);
}

/** How many versions of a test domain's local mail the gateway holds (a flag change is no new version). */
export async function localMailVersions(live: LiveGateway, domain: string): Promise<number> {
  const r = await live.gw.db.query<{ n: string }>(`SELECT count(*) AS n FROM documents WHERE source_type = 'email_local' AND external_id LIKE $1`, [`%@${domain}%`]);
  return Number(r.rows[0].n);
}
