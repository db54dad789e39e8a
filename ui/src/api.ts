/**
 * The UI's only way to the data: the public HTTP API, signed in by a web session (docs/ui.md). The
 * session is an HttpOnly cookie the browser keeps and sends by itself: no script here ever holds the
 * token or the session's secret, and a reload or a new tab is still signed in. Every change (POST, PUT,
 * PATCH, DELETE) also carries the session's CSRF token, which signing in and GET /v1/session answer.
 */
// Type-only imports of the API's own schemas: erased in the build, no server code is bundled.
import type { FileIngestResponseT } from '../../src/schemas/files.ts';
import type { CurrentSessionT } from '../../src/schemas/sessions.ts';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    message: string,
  ) {
    super(message);
  }
}

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
    setState('signed-in', await api<CurrentSessionT>('/v1/session', { signIn: true }), false);
  } catch (err) {
    setState('signed-out', null, false);
    if (!(err instanceof ApiError) || err.status !== 401) throw err;
  }
  return state;
}
tabs?.addEventListener('message', () => void checkSession().catch(() => {}));

/** Signs in with the access token: the server answers with the session cookie (the token is not kept). */
export async function signIn(token: string): Promise<void> {
  setState('signed-in', await api<CurrentSessionT>('/v1/session', { method: 'POST', body: { token }, signIn: true }), true);
}

/** Signs in with the one-time code of `memex serve`'s link. */
export async function redeemCode(code: string): Promise<void> {
  setState('signed-in', await api<CurrentSessionT>('/v1/session/redeem', { method: 'POST', body: { code }, signIn: true }), true);
}

/** Ends the session on the server (not just in this tab) and clears its cookie. */
export async function signOut(): Promise<void> {
  try {
    await api('/v1/session', { method: 'DELETE', signIn: true });
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

export interface RequestOptions {
  method?: string;
  body?: unknown;
  signal?: AbortSignal;
  /** A request of the sign-in itself: its 401 is an answer, not the end of the session. */
  signIn?: boolean;
}

/** Headers every request of the page sends: the CSRF token on changes. */
function sessionHeaders(method: string): Record<string, string> {
  return method !== 'GET' && method !== 'HEAD' && csrfToken ? { 'x-csrf-token': csrfToken } : {};
}

/** The session ended on the server (signed out elsewhere, revoked, expired): back to the sign-in page. */
function sessionEnded(): void {
  if (state === 'signed-in') setState('signed-out', null, true);
}

export async function api<T = unknown>(path: string, opts: RequestOptions = {}): Promise<T> {
  const method = opts.method ?? 'GET';
  const headers = sessionHeaders(method);
  let body: BodyInit | undefined;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const res = await fetch(path, { method, headers, body, signal: opts.signal, credentials: 'same-origin' });
  const type = res.headers.get('content-type') ?? '';
  const data = type.includes('json') ? await res.json() : await res.text();
  if (!opts.signIn && res.status === 401) sessionEnded();
  if (!res.ok) throw new ApiError(res.status, data, describeError(res.status, data));
  return data as T;
}

/** Query string from defined, non-empty values. */
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
}

/** Where a stored file downloads (the session cookie goes with a plain link). */
export function fileUrl(sha256: string): string {
  return `/v1/files/${encodeURIComponent(sha256)}`;
}

/**
 * A stored raster image to show in the page: the server reads its type from the bytes and serves it
 * sandboxed (404 for SVG and everything that is not a PNG, JPEG, GIF, WebP or BMP).
 */
export function imageUrl(sha256: string): string {
  return `/v1/files/${encodeURIComponent(sha256)}/image`;
}

/** A stored image's or PDF's thumbnail (a small WebP made by the server; 404 for other files). */
export function thumbnailUrl(sha256: string): string {
  return `/v1/files/${encodeURIComponent(sha256)}/thumbnail`;
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
    xhr.open('POST', '/v1/ingest/file');
    for (const [k, v] of Object.entries(sessionHeaders('POST'))) xhr.setRequestHeader(k, v);
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : file.size });
    xhr.onload = () => {
      if (xhr.status === 401) sessionEnded();
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.response);
      else reject(new ApiError(xhr.status, xhr.response, describeError(xhr.status, xhr.response)));
    };
    xhr.onerror = () => reject(new ApiError(0, null, 'network error'));
    xhr.send(form);
  });
}
