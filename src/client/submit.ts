/**
 * The submitter: how the host agent's collectors send documents and files to the memex gateway (host-agent spec
 * §4.8, spec-notes B4.8), with the spec's retries. The agent configures it in src/agent/gateway-client.ts.
 *
 * - POST <ingest_path> for one document (Idempotency-Key header when the caller has a key),
 *   POST <ingest_path>:batch for several, POST <ingest_file_path> multipart (`meta` JSON + `upload`), and
 *   POST <ingest_file_path>:batch for several files (memex's gateway; pairs of `meta` + `upload`), and
 *   POST <ingest_path>/originals for the raw bytes of ingested messages (memex's gateway; pairs of `meta` + `original`).
 * - Authorization: Bearer <gateway.auth_token> when one is configured.
 * - The retries are `call`'s (src/client/call.ts `send`, `retryableAnswer`): 429, 503 and any refusal whose error
 *   envelope says `retryable` (a 507 full disk, a truncated upload) are asked again after 0.5 s then 1.0 s (three
 *   attempts in all); transport failures and per-attempt timeouts the same way. Uploads of files and originals
 *   get four attempts, 1 s, 3 s and 10 s apart, each of at least 120 s. When the attempts run out the client
 *   throws GatewayHttpError with status -1 and "Exceeded retry attempts" (the spec's contract), whose
 *   `describe()` names each attempt's status or timeout. Any other non-2xx fails at once with its status; the
 *   response body is logged (truncated) but never the document we sent, which holds the user's text.
 */
import { randomBytes } from 'node:crypto';
import { urlForLog } from '../util/url.ts';
import { fetchTransport, send, type RetriedAttempt } from './call.ts';
import { ClientError } from './errors.ts';

/** The shortest time an upload attempt is given (see GatewayClientOptions.uploadBackoffMs). */
const UPLOAD_ATTEMPT_MS = 120_000;

export interface GatewayLogger {
  warn(obj: object, msg?: string): void;
  debug?(obj: object, msg?: string): void;
}

/**
 * The spec's name for the client's error (host-agent spec §4.8): the one error of every client of the API
 * (src/client/errors.ts), so a collector and a CLI verb catch the same thing.
 */
export { ClientError as GatewayHttpError };

/** Any error as words for a person: a gateway error with its attempts, else its message. */
export function describeSubmitError(err: unknown): string {
  return err instanceof ClientError ? err.describe() : (err as Error).message;
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
  /**
   * Back-off for uploads of files and originals, default [1000, 3000, 10000] ms (four attempts), each attempt
   * given at least 120 s: an upload is many megabytes the server extracts, and under load three attempts in
   * 1.5 s lost attachments that a few seconds more would have stored.
   */
  uploadBackoffMs?: number[];
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
  /**
   * The raw bytes of ingested messages in one POST <ingest_path>/originals (memex's gateway; `meta` {doc_id, kind}
   * then `original`, repeated); the answer lists each original's result by position.
   * Optional: a client without it (a test double, another gateway) sends no originals.
   */
  uploadOriginals?<T = unknown>(originals: OriginalUpload[]): Promise<GatewayResponse<T>>;
  /**
   * What changed at the source for stored documents (POST /v1/documents/source-state: folder, flags,
   * deleted_at_source), at most 1,000 per call. Optional, as uploadOriginals.
   */
  sourceState?<T = unknown>(updates: object[]): Promise<GatewayResponse<T>>;
  /** Events and tasks (POST /v1/calendar/ingest, memex's gateway), as `memex import FILE.ics` sends them. Optional. */
  calendarIngest?<T = unknown>(body: { items: object[] }): Promise<GatewayResponse<T>>;
  /** Contact cards (POST /catalog/contacts/ingest), as `memex import FILE.vcf` sends them. Optional. */
  contactsIngest?<T = unknown>(body: object): Promise<GatewayResponse<T>>;
}

/** One message's original: the document version it was built into, and its bytes. */
export interface OriginalUpload {
  docId: string;
  kind: 'rfc822';
  data: Buffer | Uint8Array;
}

const MAX_LOGGED_BODY = 2000;

/** One part of a multipart/form-data body: a field (no filename) or a file. */
interface FormPart {
  name: string;
  data: string | Uint8Array;
  filename?: string;
  contentType?: string;
}

/** A header's quoted value as FormData writes it (the HTML standard's escapes for ", CR and LF). */
const quoted = (v: string) => `"${v.replace(/"/g, '%22').replace(/\r/g, '%0D').replace(/\n/g, '%0A')}"`;

/**
 * A multipart/form-data body in one buffer: what FormData would send, without its stream of a web stream per part,
 * which cost the importer more than a millisecond per message for a request of a hundred originals (issue 40).
 * Built once per request: a retry sends the same bytes. The boundary is random, as FormData's.
 */
export function multipartBody(parts: FormPart[]): { body: Buffer; contentType: string } {
  const boundary = `----memex-${randomBytes(16).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name=${quoted(p.name)}`;
    if (p.filename !== undefined) head += `; filename=${quoted(p.filename)}\r\nContent-Type: ${p.contentType ?? 'application/octet-stream'}`;
    chunks.push(Buffer.from(`${head}\r\n\r\n`), typeof p.data === 'string' ? Buffer.from(p.data) : Buffer.from(p.data.buffer, p.data.byteOffset, p.data.byteLength), CRLF);
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
const CRLF = Buffer.from('\r\n');

/** The multipart body of an upload: `meta` (a JSON file part, as FormData sent a Blob) then `upload` for each file, in order. */
function fileForm(files: FileUpload[]) {
  return multipartBody(files.flatMap((f) => [
    { name: 'meta', data: JSON.stringify(f.meta), filename: 'blob', contentType: 'application/json' },
    { name: 'upload', data: f.data, filename: f.filename ?? f.meta.filename, contentType: f.contentType ?? f.meta.mime_type ?? 'application/octet-stream' },
  ]));
}

/** The multipart body of originals: `meta` ({doc_id, kind}, a field) then `original` for each. */
function originalForm(originals: OriginalUpload[]) {
  return multipartBody(originals.flatMap((o) => [
    { name: 'meta', data: JSON.stringify({ doc_id: o.docId, kind: o.kind }) },
    { name: 'original', data: o.data, filename: 'message.eml', contentType: 'message/rfc822' },
  ]));
}

/** fetch's "fetch failed" with the system error under it (ECONNREFUSED, ECONNRESET, …). */
function transportFailure(err: Error): string {
  const cause = (err as { cause?: { code?: string; message?: string; errors?: { code?: string }[] } }).cause;
  const code = cause?.code ?? cause?.errors?.find((e) => e.code)?.code;
  return code ? `${err.message} (${code})` : cause?.message ? `${err.message} (${cause.message})` : err.message;
}

export function createGatewayClient(opts: GatewayClientOptions): GatewayClient {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const ingestPath = opts.ingestPath ?? '/v1/ingest';
  const ingestFilePath = opts.ingestFilePath ?? '/v1/ingest/file';
  const timeoutMs = Math.round((opts.timeoutSeconds ?? 30) * 1000);
  const documentRetries = { backoff: opts.backoffMs ?? [500, 1000], timeoutMs };
  const uploadRetries = { backoff: opts.uploadBackoffMs ?? [1000, 3000, 10000], timeoutMs: Math.max(timeoutMs, UPLOAD_ATTEMPT_MS) };
  const sleep = opts.sleep;
  const transport = fetchTransport(base, { redirect: 'error', fetch: opts.fetchImpl, failure: transportFailure });
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

  /** POSTs `body` (JSON text, or a multipart body built once: every attempt sends the same bytes) with the retries given. */
  async function post<T>(path: string, body: string | FormData | Uint8Array, extra: Record<string, string>, retries = documentRetries): Promise<GatewayResponse<T>> {
    const url = urlForLog(base + path);
    const onRetryable = ({ attempt, status, reason }: RetriedAttempt) =>
      status === 0 ? log?.warn({ url, attempt, reason }, 'gateway request failed') : log?.warn({ url, attempt, status }, 'gateway asked to retry');
    const answer = await send(transport, { method: 'POST', path, headers: headers(extra), body }, {
      timeoutMs: retries.timeoutMs,
      retries: { backoffMs: retries.backoff, sleep, onRetryable },
    });
    if (answer.status >= 200 && answer.status < 300) {
      let parsed: unknown = answer.text;
      try {
        parsed = answer.text ? JSON.parse(answer.text) : null;
      } catch {
        // Not JSON: hand back the text.
      }
      return { status: answer.status, body: parsed as T };
    }
    const response = answer.text.slice(0, MAX_LOGGED_BODY);
    log?.warn({ url, status: answer.status, response }, 'gateway rejected the request');
    throw new ClientError(answer.status, `Gateway answered ${answer.status}${refusal(answer.status)}`, response, answer.attempts);
  }

  const json = { 'content-type': 'application/json' };
  return {
    submitDocument(doc, o = {}) {
      return post(ingestPath, JSON.stringify(doc), o.idempotencyKey ? { ...json, 'idempotency-key': o.idempotencyKey } : json);
    },
    submitBatch(docs) {
      return post(`${ingestPath}:batch`, JSON.stringify({ documents: docs }), json);
    },
    sourceState(updates) {
      return post('/v1/documents/source-state', JSON.stringify({ updates }), json);
    },
    calendarIngest(payload) {
      return post('/v1/calendar/ingest', JSON.stringify(payload), json);
    },
    contactsIngest(payload) {
      return post('/catalog/contacts/ingest', JSON.stringify(payload), json);
    },
    uploadFile(meta, data, o = {}) {
      const { body, contentType } = fileForm([{ meta, data, ...o }]);
      return post(ingestFilePath, body, o.idempotencyKey ? { 'idempotency-key': o.idempotencyKey, 'content-type': contentType } : { 'content-type': contentType }, uploadRetries);
    },
    uploadFiles(files) {
      const { body, contentType } = fileForm(files);
      return post(`${ingestFilePath}:batch`, body, { 'content-type': contentType }, uploadRetries);
    },
    uploadOriginals(originals) {
      const { body, contentType } = originalForm(originals);
      return post(`${ingestPath}/originals`, body, { 'content-type': contentType }, uploadRetries);
    },
  };
}
