/**
 * The UI's only way to the data: the public HTTP API with the bearer token. The token lives in
 * sessionStorage (per tab, gone when the tab closes, never sent by the browser on its own, so no
 * cross-site request can use it); see docs/ui.md.
 */
const KEY = 'memex.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
    message: string,
  ) {
    super(message);
  }
}

export function getToken(): string | null {
  return sessionStorage.getItem(KEY);
}

export function setToken(token: string): void {
  sessionStorage.setItem(KEY, token);
  window.dispatchEvent(new Event('memex:auth'));
}

export function signOut(): void {
  sessionStorage.removeItem(KEY);
  window.dispatchEvent(new Event('memex:auth'));
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
  /** Send without the token (sign-in link). */
  anonymous?: boolean;
  /** Send this token instead of the stored one (checking a token before keeping it). */
  token?: string;
}

export async function api<T = any>(path: string, opts: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = {};
  const token = opts.token ?? getToken();
  if (!opts.anonymous && token) headers.authorization = `Bearer ${token}`;
  let body: BodyInit | undefined;
  if (opts.body !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const res = await fetch(path, { method: opts.method ?? 'GET', headers, body, signal: opts.signal });
  const type = res.headers.get('content-type') ?? '';
  const data = type.includes('json') ? await res.json() : await res.text();
  if (!opts.anonymous && opts.token === undefined && (res.status === 401 || res.status === 403)) signOut();
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

/** Fetches a stored file with the token and hands it to the browser as a download. */
export async function download(path: string, filename: string): Promise<void> {
  const res = await fetch(path, { headers: { authorization: `Bearer ${getToken() ?? ''}` } });
  if (!res.ok) throw new ApiError(res.status, null, `download failed (HTTP ${res.status})`);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export interface UploadProgress {
  loaded: number;
  total: number;
}

/** POST /v1/ingest/file with upload progress (fetch has none for request bodies). */
export function uploadFile(file: File, onProgress: (p: UploadProgress) => void): Promise<any> {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    const mtime = file.lastModified ? Math.floor(file.lastModified / 1000) : undefined;
    form.append('meta', JSON.stringify({ source: 'upload', path: `upload/${file.name}`, filename: file.name, ...(mtime ? { mtime } : {}) }));
    form.append('upload', file, file.name);
    const xhr = new XMLHttpRequest();
    xhr.open('POST', '/v1/ingest/file');
    xhr.setRequestHeader('authorization', `Bearer ${getToken() ?? ''}`);
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => onProgress({ loaded: e.loaded, total: e.lengthComputable ? e.total : file.size });
    xhr.onload = () => {
      if (xhr.status === 401 || xhr.status === 403) signOut();
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.response);
      else reject(new ApiError(xhr.status, xhr.response, describeError(xhr.status, xhr.response)));
    };
    xhr.onerror = () => reject(new ApiError(0, null, 'network error'));
    xhr.send(form);
  });
}
