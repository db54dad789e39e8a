/**
 * The submitter: how the host agent's collectors send documents and files to the memex gateway (host-agent spec
 * §4.8, spec-notes B4.8), with the spec's retries. The agent configures it in src/agent/gateway-client.ts.
 *
 * - POST <ingest_path> for one document (Idempotency-Key header when the caller has a key),
 *   POST <ingest_path>:batch for several, POST <ingest_file_path> multipart (`meta` JSON + `upload`), and
 *   POST <ingest_file_path>:batch for several files (memex's gateway; pairs of `meta` + `upload`).
 * - Authorization: Bearer <gateway.auth_token> when one is configured.
 * - 429 and 503 are retried after 0.5 s then 1.0 s (three attempts in all); transport failures and
 *   per-attempt timeouts are retried the same way. When the attempts run out the client throws
 *   GatewayHttpError with status -1 and "Exceeded retry attempts" (the spec's contract). Any other
 *   non-2xx fails at once with its status; the response body is logged (truncated) but never the
 *   document we sent, which holds the user's text.
 */
import { urlForLog } from '../util/url.ts';

export interface GatewayLogger {
  warn(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

export class GatewayHttpError extends Error {
  override name = 'GatewayHttpError';
  constructor(
    /** HTTP status, or -1 when the retry attempts ran out. */
    readonly status: number,
    message: string,
    /** Response body text of the last attempt (truncated), when there was one. */
    readonly body?: string,
    /** Statuses (or 0 for transport errors) of every attempt made. */
    readonly attempts: number[] = [],
  ) {
    super(message);
  }
}

export interface GatewayResponse<T = unknown> {
  status: number;
  body: T;
}

export interface GatewayClientOptions {
  baseUrl: string;
  ingestPath?: string;
  ingestFilePath?: string;
  /** Seconds per attempt (config gateway.timeout). */
  timeoutSeconds?: number;
  authToken?: string;
  /** Where the token came from (SVC_GATEWAY_TOKEN, AUTH_TOKEN, gateway.auth_token), named when the gateway refuses it. */
  authTokenSource?: string;
  /** Back-off before attempt 2 and 3; default [500, 1000] ms. */
  backoffMs?: number[];
  /** Injectable for tests; defaults to setTimeout. */
  sleep?: (ms: number) => Promise<void>;
  logger?: GatewayLogger;
  fetchImpl?: typeof fetch;
}

export interface FileUploadMeta {
  source: string;
  path: string;
  filename: string;
  mime_type: string;
  sha256: string;
  size: number;
  [key: string]: unknown;
}

/** One file of an upload: its meta, bytes, and the name and type its part carries. */
export interface FileUpload {
  meta: FileUploadMeta;
  data: Buffer | Uint8Array;
  filename?: string;
  contentType?: string;
}

export interface GatewayClient {
  submitDocument<T = unknown>(doc: object, opts?: { idempotencyKey?: string }): Promise<GatewayResponse<T>>;
  submitBatch<T = unknown>(docs: object[]): Promise<GatewayResponse<T>>;
  uploadFile<T = unknown>(
    meta: FileUploadMeta,
    data: Buffer | Uint8Array,
    opts?: { idempotencyKey?: string; filename?: string; contentType?: string },
  ): Promise<GatewayResponse<T>>;
  /** Several files in one POST <ingest_file_path>:batch; the answer lists each file's result by position. */
  uploadFiles<T = unknown>(files: FileUpload[]): Promise<GatewayResponse<T>>;
}

const RETRYABLE = new Set([429, 503]);
const MAX_LOGGED_BODY = 2000;

/** The multipart body of an upload: `meta` then `upload` for each file, in order. */
function fileForm(files: FileUpload[]): FormData {
  const form = new FormData();
  for (const f of files) {
    const bytes = new Uint8Array(f.data.buffer, f.data.byteOffset, f.data.byteLength);
    form.append('meta', new Blob([JSON.stringify(f.meta)], { type: 'application/json' }));
    form.append('upload', new Blob([bytes], { type: f.contentType ?? f.meta.mime_type ?? 'application/octet-stream' }), f.filename ?? f.meta.filename);
  }
  return form;
}

export function createGatewayClient(opts: GatewayClientOptions): GatewayClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const ingestPath = opts.ingestPath ?? '/v1/ingest';
  const ingestFilePath = opts.ingestFilePath ?? '/v1/ingest/file';
  const timeoutMs = Math.round((opts.timeoutSeconds ?? 30) * 1000);
  const backoff = opts.backoffMs ?? [500, 1000];
  const maxAttempts = backoff.length + 1;
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const doFetch = opts.fetchImpl ?? fetch;
  const log = opts.logger;

  function headers(extra: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', ...extra };
    if (opts.authToken) h.authorization = `Bearer ${opts.authToken}`;
    return h;
  }

  /** What a 401/403 means for the user: which token was sent, or that none was. */
  function refusal(status: number): string {
    if (status !== 401 && status !== 403) return '';
    if (!opts.authToken) return ': no gateway token is configured (set AUTH_TOKEN or SVC_GATEWAY_TOKEN, or gateway.auth_token)';
    return `: the gateway refused the token from ${opts.authTokenSource ?? 'the client options'}`;
  }

  async function send<T>(path: string, makeInit: () => RequestInit): Promise<GatewayResponse<T>> {
    const url = base + path;
    const statuses: number[] = [];
    let lastBody: string | undefined;
    for (let attempt = 1; attempt <= maxAttempts; attempt++) {
      if (attempt > 1) await sleep(backoff[attempt - 2]);
      let res: Response;
      try {
        res = await doFetch(url, { ...makeInit(), signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
      } catch (err) {
        statuses.push(0);
        const reason = (err as Error).name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : (err as Error).message;
        log?.warn({ url: urlForLog(url), attempt, reason }, 'gateway request failed');
        continue;
      }
      const text = await res.text().catch(() => '');
      statuses.push(res.status);
      if (res.ok) {
        let body: unknown = text;
        try {
          body = text ? JSON.parse(text) : null;
        } catch {
          // Not JSON: hand back the text.
        }
        return { status: res.status, body: body as T };
      }
      lastBody = text.slice(0, MAX_LOGGED_BODY);
      if (RETRYABLE.has(res.status)) {
        log?.warn({ url: urlForLog(url), attempt, status: res.status }, 'gateway asked to retry');
        continue;
      }
      log?.warn({ url: urlForLog(url), status: res.status, response: lastBody }, 'gateway rejected the request');
      throw new GatewayHttpError(res.status, `Gateway answered ${res.status}${refusal(res.status)}`, lastBody, statuses);
    }
    throw new GatewayHttpError(-1, 'Exceeded retry attempts', lastBody, statuses);
  }

  return {
    submitDocument(doc, o = {}) {
      const body = JSON.stringify(doc);
      const extra: Record<string, string> = { 'content-type': 'application/json' };
      if (o.idempotencyKey) extra['idempotency-key'] = o.idempotencyKey;
      return send(ingestPath, () => ({ method: 'POST', headers: headers(extra), body }));
    },
    submitBatch(docs) {
      const body = JSON.stringify({ documents: docs });
      return send(`${ingestPath}:batch`, () => ({ method: 'POST', headers: headers({ 'content-type': 'application/json' }), body }));
    },
    uploadFile(meta, data, o = {}) {
      const extra: Record<string, string> = {};
      if (o.idempotencyKey) extra['idempotency-key'] = o.idempotencyKey;
      // A fresh FormData per attempt: a body stream cannot be sent twice.
      return send(ingestFilePath, () => ({ method: 'POST', headers: headers(extra), body: fileForm([{ meta, data, ...o }]) }));
    },
    uploadFiles(files) {
      return send(`${ingestFilePath}:batch`, () => ({ method: 'POST', headers: headers({}), body: fileForm(files) }));
    },
  };
}
