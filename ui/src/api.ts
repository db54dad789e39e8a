/**
 * The UI's only way to the data: the public HTTP API, signed in by a web session (docs/ui.md). The
 * session is an HttpOnly cookie the browser keeps and sends by itself: no script here ever holds the
 * token or the session's secret, and a reload or a new tab is still signed in. Every change (POST, PUT,
 * PATCH, DELETE) also carries the session's CSRF token, which signing in and GET /v1/session answer.
 */
// The route table's names and paths and the typed `call` (browser-safe, no schema is bundled); the API's own
// types are type-only imports, erased in the build.
import { createCall, fetchTransport, pathOf, type Call, type Refusal, type Transport } from '../../src/client/call.ts';
import { ClientError } from '../../src/client/errors.ts';
import type { FileIngestResponseT } from '../../src/schemas/files.ts';
import type { CurrentSessionT } from '../../src/schemas/sessions.ts';

/** A request the server refused (its status, its body's words as the message), or could not be sent (status 0). */
export { ClientError };

export type SessionState = 'unknown' | 'signed-in' | 'signed-out';

let state: SessionState = 'unknown';
let csrfToken: string | null = null;
/** Other tabs of this browser share the session: tell them when it starts or ends. */
const tabs = typeof BroadcastChannel === 'function' ? new BroadcastChannel('memex-session') : null;

export function sessionState(): SessionState {
  return state;
}

function setState(next: SessionState, session: CurrentSessionT | null, tell: boolean): void {
  csrfToken = session?.csrf_token ?? null;
  const changed = next !== state;
  state = next;
  if (changed) window.dispatchEvent(new Event('memex:auth'));
  if (tell) tabs?.postMessage(next);
}

/** Asks the server whether this browser is signed in (at start, and when another tab signs in or out). */
export async function checkSession(): Promise<SessionState> {
  try {
    setState('signed-in', await signInCall('currentSession', {}), false);
  } catch (err) {
    setState('signed-out', null, false);
    if (!(err instanceof ClientError) || err.status !== 401) throw err;
  }
  return state;
}
tabs?.addEventListener('message', () => void checkSession().catch(() => {}));

/** Signs in with the access token: the server answers with the session cookie (the token is not kept). */
export async function signIn(token: string): Promise<void> {
  setState('signed-in', await signInCall('signIn', { body: { token } }), true);
}

/** Signs in with the one-time code of `memex serve`'s link. */
export async function redeemCode(code: string): Promise<void> {
  setState('signed-in', await signInCall('redeemSignInCode', { body: { code } }), true);
}

/** Ends the session on the server (not just in this tab) and clears its cookie. */
export async function signOut(): Promise<void> {
  try {
    await signInCall('signOut', {});
  } finally {
    setState('signed-out', null, true);
  }
}

/** A readable message from the API's error bodies ({detail: string} or {detail: [{loc, msg}]}). */
export function describeError(status: number, body: unknown): string {
  const detail = (body as { detail?: unknown; message?: unknown } | null)?.detail ?? (body as { message?: unknown } | null)?.message;
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail.map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).slice(1).join('.') || 'request'}: ${d.msg}`).join('; ');
  }
  return `request failed (HTTP ${status})`;
}

/** Headers every request of the page sends: the CSRF token on changes. */
function sessionHeaders(method: string): Record<string, string> {
  return method !== 'GET' && method !== 'HEAD' && csrfToken ? { 'x-csrf-token': csrfToken } : {};
}

/** The session ended on the server (signed out elsewhere, revoked, expired): back to the sign-in page. */
function sessionEnded(): void {
  if (state === 'signed-in') setState('signed-out', null, true);
}

const toServer = fetchTransport();

/** The page's requests: the CSRF token on changes; a 401 ends the session here too, unless it answers a sign-in. */
function sessionTransport(signingIn: boolean): Transport {
  return async (req) => {
    const answer = await toServer({ ...req, headers: { ...req.headers, ...sessionHeaders(req.method) } });
    if (!signingIn && answer.status === 401) sessionEnded();
    return answer;
  };
}

const refusal: Refusal = ({ answer, body }) => new ClientError(answer.status, describeError(answer.status, body), answer.text);

const sessionCall = createCall(sessionTransport(false), { refusal });

/**
 * An operation of the route table (src/schemas/operations.ts), e.g. `call('search', { query: { q } })`. Query
 * values that are empty ('', null) are left out, as the page's forms leave a field empty to mean "any".
 */
export const call: Call = (op, input, options) => {
  const query = (input as { query?: Record<string, unknown> }).query;
  const kept = query && Object.fromEntries(Object.entries(query).filter(([, v]) => v !== undefined && v !== null && v !== ''));
  return sessionCall(op, (query ? { ...input, query: kept } : input) as typeof input, options);
};
/** `call` for the sign-in requests themselves: their 401 is an answer, not the end of the session. */
const signInCall = createCall(sessionTransport(true), { refusal });

/** Query string from defined, non-empty values (for the page's own links, e.g. #/search?q=…). */
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
}

/** Where a stored file downloads (the session cookie goes with a plain link). */
export function fileUrl(sha256: string): string {
  return pathOf('downloadFile', { sha256 });
}

/**
 * A stored raster image to show in the page: the server reads its type from the bytes and serves it
 * sandboxed (404 for SVG and everything that is not a PNG, JPEG, GIF, WebP or BMP).
 */
export function imageUrl(sha256: string): string {
  return pathOf('fileImage', { sha256 });
}

/** A stored image's or PDF's thumbnail (a small WebP made by the server; 404 for other files). */
export function thumbnailUrl(sha256: string): string {
  return pathOf('fileThumbnail', { sha256 });
}

export interface UploadProgress {
  loaded: number;
  total: number;
}

/** POST /v1/ingest/file with upload progress (fetch has none for request bodies). */
export function uploadFile(file: File, onProgress: (p: UploadProgress) => void): Promise<FileIngestResponseT> {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    const mtime = file.lastModified ? Math.floor(file.lastModified / 1000) : undefined;
    form.append('meta', JSON.stringify({ source: 'upload', path: `upload/${file.name}`, filename: file.name, ...(mtime ? { mtime } : {}) }));
    form.append('upload', file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', pathOf('ingestFile'));
    for (const [k, v] of Object.entries(sessionHeaders('POST'))) xhr.setRequestHeader(k, v);
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : file.size });
    xhr.onload = () => {
      if (xhr.status === 401) sessionEnded();
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.response);
      else reject(new ClientError(xhr.status, describeError(xhr.status, xhr.response), JSON.stringify(xhr.response)));
    };
    xhr.onerror = () => reject(new ClientError(0, 'network error'));
    xhr.send(form);
  });
}
