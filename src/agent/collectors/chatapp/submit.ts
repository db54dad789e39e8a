/**
 * The chat collector's `submit` over the agent's gateway client (spec-notes B4.3 "Batch submission",
 * B4.8).
 *
 * Outcome mapping (the core moves its cursor past non-retryable rejections, stops on retryable ones):
 * - accepted (200 duplicate / 202) -> ok.
 * - 429/503/transport: the client already retried three times and throws status -1 -> retryable.
 * - other 5xx, 401/403 (a wrong token is fixed by the user; the messages must not be skipped for it),
 *   a non-HTTP error -> retryable: the run stops, the cursor stays, nothing is lost.
 * - other 4xx (e.g. 422 for one malformed document) -> not retryable: that document would never be
 *   accepted, so it is reported and the cursor moves on.
 *
 * Batch mode posts {documents} to `<ingest_path>:batch` and maps the per-item results by index (a
 * missing index is retryable). A 404/405 from the batch route means the gateway has none: the adapter
 * falls back to single posts for good. A 4xx of the whole batch request (e.g. 413, or a schema error of
 * one item failing the whole body) is retried one document at a time so one bad message never blocks the
 * others.
 */
import type { GatewayClient } from '../../gateway-client.ts';
import { GatewayHttpError } from '../../gateway-client.ts';
import type { SubmitFn, SubmitResult } from './cursor.ts';
import type { ChatDocument } from './document.ts';

export interface GatewaySubmitOptions {
  /** Runs before a document is sent (OCR of image attachments). Must not throw. */
  enrich?: (docs: ChatDocument[]) => Promise<void>;
  log?: { warn(obj: object, msg?: string): void };
}

export interface GatewaySubmit extends SubmitFn {
  /** True once the batch route answered 404/405 and single posts are used instead. */
  readonly batchUnsupported: boolean;
}

interface SubmissionBody {
  doc_id?: string;
  duplicate?: boolean;
  skipped?: string;
}

interface BatchBody {
  results?: Array<{
    index: number;
    status_code: number;
    submission: SubmissionBody | null;
    error: { error_code?: string; message?: string; retryable?: boolean } | null;
  }>;
}

function retryableStatus(status: number): boolean {
  return status === -1 || status === 401 || status === 403 || status === 408 || status === 429 || status >= 500;
}

export function errorResult(err: unknown): SubmitResult {
  if (err instanceof GatewayHttpError) {
    const detail = err.status === -1 ? `gateway unavailable: ${err.describe()}` : `gateway answered ${err.status}`;
    return { ok: false, retryable: retryableStatus(err.status), error: err.body ? `${detail}: ${err.body.slice(0, 300)}` : detail };
  }
  return { ok: false, retryable: true, error: (err as Error)?.message ?? String(err) };
}

export function createGatewaySubmit(gateway: GatewayClient, opts: GatewaySubmitOptions = {}): GatewaySubmit {
  let batchUnsupported = false;

  const single = async (doc: ChatDocument): Promise<SubmitResult> => {
    try {
      const res = await gateway.submitDocument<SubmissionBody>(doc);
      return { ok: true, duplicate: res.body?.duplicate === true, skipped: res.body?.skipped ?? null };
    } catch (err) {
      return errorResult(err);
    }
  };

  const singles = async (docs: ChatDocument[]): Promise<SubmitResult[]> => {
    const out: SubmitResult[] = [];
    for (const d of docs) {
      const r = await single(d);
      out.push(r);
      // The core stops at the first retryable failure; do not keep hammering a gateway that is down.
      if (!r.ok && r.retryable) break;
    }
    return out;
  };

  const submit = (async (input: ChatDocument | ChatDocument[]) => {
    const docs = Array.isArray(input) ? input : [input];
    if (opts.enrich) await opts.enrich(docs);
    if (!Array.isArray(input)) return single(input);
    if (batchUnsupported) return singles(docs);
    let res;
    try {
      res = await gateway.submitBatch<BatchBody>(docs);
    } catch (err) {
      if (err instanceof GatewayHttpError && (err.status === 404 || err.status === 405)) {
        batchUnsupported = true;
        opts.log?.warn({ status: err.status }, 'gateway has no batch route; sending documents one at a time');
        return singles(docs);
      }
      if (err instanceof GatewayHttpError && err.status >= 400 && err.status < 500 && !retryableStatus(err.status)) {
        return singles(docs);
      }
      const r = errorResult(err);
      return docs.map(() => r);
    }
    const byIndex = new Map((res.body?.results ?? []).map((r) => [r.index, r]));
    return docs.map((_d, i): SubmitResult => {
      const item = byIndex.get(i);
      if (!item) return { ok: false, retryable: true, error: 'INGEST.BATCH_MISSING_RESULT' };
      if (!item.error) return { ok: true, duplicate: item.submission?.duplicate === true, skipped: item.submission?.skipped ?? null };
      const message = `${item.status_code} ${item.error.error_code ?? ''} ${item.error.message ?? ''}`.trim();
      return { ok: false, retryable: item.error.retryable === true || retryableStatus(item.status_code), error: message };
    });
  }) as GatewaySubmit;
  Object.defineProperty(submit, 'batchUnsupported', { get: () => batchUnsupported });
  return submit;
}
