import { codedError } from '../util/errors.ts';

/** What every embedding provider offers. Vectors come back in the order of `texts`. */
export interface Embedder {
  /** Stored per vector (chunk_embeddings.model); a query is only compared with vectors of the same name. */
  name: string;
  /** Length of every vector; 0 until a provider that learns it from its first answer has answered. */
  dimensions: number;
  /**
   * 'query' and 'passage' select the configured prefixes of models that need them (e5, bge).
   * `signal`: a job still waiting for a model thread is dropped when it aborts (the thread pool;
   * other providers ignore it).
   */
  embed(texts: string[], kind?: 'query' | 'passage', opts?: { signal?: AbortSignal }): Promise<number[][]>;
  close?(): Promise<void>;
}

/**
 * The provider cannot be reached or keeps refusing (network error, timeout, 429/5xx after all
 * retries). The worker puts the chunks back to pending and backs off instead of failing them:
 * `failed` is for input the model rejects, not for an outage.
 */
export class ProviderUnavailableError extends codedError('EMBEDDING.PROVIDER_UNAVAILABLE') {
  override name = 'ProviderUnavailableError';
}

/** The provider rejected the input (4xx other than 429, malformed answer). Chunks become `failed`. */
export class EmbeddingRequestError extends codedError('EMBEDDING.REQUEST_REFUSED') {
  override name = 'EmbeddingRequestError';
}

export function l2normalize(v: number[]): number[] {
  let s = 0;
  for (const x of v) s += x * x;
  const n = Math.sqrt(s);
  return n > 0 ? v.map((x) => x / n) : v;
}

export function cosine(a: number[], b: number[]): number {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}
