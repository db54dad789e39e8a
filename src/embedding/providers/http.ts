/**
 * Remote embedding APIs: Ollama (/api/embed, falling back to the older /api/embeddings) and any
 * OpenAI-compatible /v1/embeddings. Shared: per-request timeout, retries with exponential back-off
 * and jitter on 429/5xx/network errors (Retry-After honoured), batching of texts per request.
 */
import type { EmbeddingConfig } from '../config.ts';
import { prepareEgress } from '../../privacy/egress.ts';
import { EmbeddingRequestError, ProviderUnavailableError, type Embedder } from '../types.ts';
import { codedError } from '../../util/errors.ts';

export interface HttpOptions {
  timeoutMs: number;
  maxRetries: number;
  /** First back-off in ms (doubles per attempt); tests lower it. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

class HttpStatusError extends codedError('EMBEDDING.PROVIDER_HTTP') {
  /** `httpStatus`: the provider's answer (`status` is memex's own, src/util/error-codes.ts). */
  constructor(readonly httpStatus: number, readonly body: string, readonly retryAfterMs: number | undefined) {
    super(`HTTP ${httpStatus}`);
  }
}

function parseRetryAfter(v: string | null): number | undefined {
  if (!v) return undefined;
  if (/^\d+(\.\d+)?$/.test(v.trim())) return Number(v) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : Math.max(0, t - Date.now());
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** POSTs JSON and returns the parsed answer, retrying what is worth retrying. */
export async function postJson(url: string, body: unknown, headers: Record<string, string>, opt: HttpOptions): Promise<any> {
  const base = opt.baseDelayMs ?? 500;
  const cap = opt.maxDelayMs ?? 30_000;
  let lastErr: unknown;
  // A remote API gets the copy the egress policy allows (src/privacy/egress.ts); a local one the original.
  const payload = JSON.stringify(prepareEgress(url, 'embedding', body));
  for (let attempt = 0; attempt <= opt.maxRetries; attempt++) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: payload,
        signal: AbortSignal.timeout(opt.timeoutMs),
      });
      const text = await res.text();
      if (!res.ok) throw new HttpStatusError(res.status, text.slice(0, 300), parseRetryAfter(res.headers.get('retry-after')));
      try {
        return JSON.parse(text);
      } catch {
        throw new EmbeddingRequestError(`${url} answered with invalid JSON`);
      }
    } catch (err) {
      lastErr = err;
      const retryable =
        err instanceof HttpStatusError ? err.httpStatus === 429 || err.httpStatus >= 500 : !(err instanceof EmbeddingRequestError);
      if (!retryable) break;
      if (attempt === opt.maxRetries) break;
      const backoff = Math.min(cap, base * 2 ** attempt) * (0.75 + Math.random() * 0.5);
      const ra = err instanceof HttpStatusError ? err.retryAfterMs : undefined;
      await sleep(ra !== undefined ? Math.min(Math.max(ra, backoff / 4), 60_000) : backoff);
    }
  }
  if (lastErr instanceof HttpStatusError) {
    // The body may echo input text; keep only its first line's start out of logs' way.
    const msg = `${url} answered HTTP ${lastErr.httpStatus}: ${lastErr.body.split('\n')[0].slice(0, 200)}`;
    if (lastErr.httpStatus === 429 || lastErr.httpStatus >= 500) throw new ProviderUnavailableError(msg);
    throw new EmbeddingRequestError(msg);
  }
  if (lastErr instanceof EmbeddingRequestError) throw lastErr;
  const e = lastErr as Error;
  throw new ProviderUnavailableError(`${url} unreachable: ${e?.name === 'TimeoutError' ? `timed out after ${opt.timeoutMs} ms` : e?.message}`);
}

function isVector(v: unknown): v is number[] {
  return Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'number' && Number.isFinite(x));
}

async function inBatches(texts: string[], size: number, fn: (part: string[]) => Promise<number[][]>): Promise<number[][]> {
  const out: number[][] = [];
  for (let i = 0; i < texts.length; i += size) out.push(...(await fn(texts.slice(i, i + size))));
  return out;
}

function checkDims(e: Embedder, vecs: number[][]): number[][] {
  for (const v of vecs) {
    if (!isVector(v)) throw new EmbeddingRequestError(`${e.name}: answer holds a value that is not a vector of numbers`);
    if (e.dimensions === 0) e.dimensions = v.length;
    if (v.length !== e.dimensions) {
      throw new EmbeddingRequestError(`${e.name}: got a vector of ${v.length} dimensions, expected ${e.dimensions}`);
    }
  }
  return vecs;
}

function prefixed(cfg: EmbeddingConfig, texts: string[], kind: 'query' | 'passage'): string[] {
  const p = kind === 'query' ? cfg.queryPrefix : cfg.passagePrefix;
  return p ? texts.map((t) => p + t) : texts;
}

export function createOllamaEmbedder(cfg: EmbeddingConfig, opt?: Partial<HttpOptions>): Embedder {
  const http: HttpOptions = { timeoutMs: cfg.timeoutMs, maxRetries: cfg.maxRetries, ...opt };
  let legacy = false; // an Ollama older than 0.3 has only /api/embeddings (one prompt per call)
  const e: Embedder = {
    name: `ollama:${cfg.model}`,
    dimensions: cfg.dimensions ?? 0,
    async embed(texts, kind = 'passage') {
      if (texts.length === 0) return [];
      const input = prefixed(cfg, texts, kind);
      if (!legacy) {
        try {
          return checkDims(
            e,
            await inBatches(input, cfg.httpBatch, async (part) => {
              const r = await postJson(`${cfg.ollamaBaseUrl}/api/embed`, { model: cfg.model, input: part }, {}, http);
              if (!Array.isArray(r?.embeddings) || r.embeddings.length !== part.length) {
                throw new EmbeddingRequestError(`ollama /api/embed answered without ${part.length} embeddings`);
              }
              return r.embeddings;
            }),
          );
        } catch (err) {
          if (!(err instanceof EmbeddingRequestError && /HTTP 404/.test(err.message) && !/model/i.test(err.message))) throw err;
          legacy = true;
        }
      }
      const out: number[][] = [];
      for (const prompt of input) {
        const r = await postJson(`${cfg.ollamaBaseUrl}/api/embeddings`, { model: cfg.model, prompt }, {}, http);
        out.push(r?.embedding);
      }
      return checkDims(e, out);
    },
  };
  return e;
}

export function openaiEmbeddingsUrl(base: string): string {
  return /\/v\d+$/.test(base) ? `${base}/embeddings` : `${base}/v1/embeddings`;
}

export function createOpenAIEmbedder(cfg: EmbeddingConfig, opt?: Partial<HttpOptions>): Embedder {
  const http: HttpOptions = { timeoutMs: cfg.timeoutMs, maxRetries: cfg.maxRetries, ...opt };
  const url = openaiEmbeddingsUrl(cfg.openaiBaseUrl);
  const headers: Record<string, string> = cfg.openaiApiKey ? { authorization: `Bearer ${cfg.openaiApiKey}` } : {};
  const e: Embedder = {
    name: `openai:${cfg.model}`,
    dimensions: cfg.dimensions ?? 0,
    async embed(texts, kind = 'passage') {
      if (texts.length === 0) return [];
      const input = prefixed(cfg, texts, kind);
      return checkDims(
        e,
        await inBatches(input, cfg.httpBatch, async (part) => {
          const body: Record<string, unknown> = { model: cfg.model, input: part, encoding_format: 'float' };
          if (cfg.dimensions) body.dimensions = cfg.dimensions;
          const r = await postJson(url, body, headers, http);
          if (!Array.isArray(r?.data) || r.data.length !== part.length) {
            throw new EmbeddingRequestError(`${url} answered without ${part.length} embeddings`);
          }
          // The API may return items out of order; `index` is authoritative.
          const sorted = [...r.data].sort((a: any, b: any) => (a.index ?? 0) - (b.index ?? 0));
          return sorted.map((d: any) => d.embedding);
        }),
      );
    },
  };
  return e;
}
