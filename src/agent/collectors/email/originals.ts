/**
 * The originals of accepted messages (issue 40 item 1): once a batch of documents is answered, each
 * message's raw RFC 5322 bytes go to the gateway's POST <ingest_path>/originals, named by the doc_id of
 * its answer, so the store keeps the message as written beside what was built from it (docs/email-collectors.md,
 * "The original"). Duplicates send theirs too: mail stored before originals were kept gets them on the
 * next `memex import mail --rescan`, and the gateway stores the same bytes once.
 *
 * A gateway without the route (404/405, as the spec's) keeps no originals: the client stops sending them to
 * it. Any other failure makes the message retry, as a failed attachment does: its original is part of it.
 */
import { describeSubmitError, GatewayHttpError, type GatewayClient, type OriginalUpload } from '../../gateway-client.ts';
import type { SubmitOutcome } from './outcome.ts';

/** Originals per request and bytes per request: a batch of 100 messages is usually one request. */
const ORIGINALS_PER_REQUEST = 100;
const BYTES_PER_REQUEST = 16 * 1024 * 1024;

/** Gateways that answered 404/405 for the originals route. */
const withoutOriginals = new WeakSet<GatewayClient>();

export interface OriginalJob {
  original: Buffer;
  outcome: SubmitOutcome;
}

interface OriginalsAnswer {
  results?: Array<{ index: number; status_code: number; error: { message?: string } | null }>;
}

/** Sends the originals of accepted outcomes (those with a doc_id and nothing stored in their way). */
export async function uploadOriginals(gateway: GatewayClient, jobs: OriginalJob[]): Promise<void> {
  if (!gateway.uploadOriginals || withoutOriginals.has(gateway)) return;
  const todo = jobs.filter((j) => j.outcome.status === 'accepted' && j.outcome.docId && !j.outcome.skipped && j.original.length > 0);
  const requests: OriginalJob[][] = [];
  let bytes = 0;
  for (const j of todo) {
    const last = requests.at(-1);
    if (last && last.length < ORIGINALS_PER_REQUEST && bytes + j.original.length <= BYTES_PER_REQUEST) last.push(j);
    else {
      requests.push([j]);
      bytes = 0;
    }
    bytes += j.original.length;
  }
  for (const request of requests) {
    const fail = (j: OriginalJob, status: SubmitOutcome['status'], httpStatus: number, message: string) => {
      if (j.outcome.status !== 'accepted') return;
      Object.assign(j.outcome, { status, httpStatus, error: `original: ${message}` });
    };
    let answer: OriginalsAnswer;
    try {
      const upload: OriginalUpload[] = request.map((j) => ({ docId: j.outcome.docId!, kind: 'rfc822', data: j.original }));
      answer = (await gateway.uploadOriginals<OriginalsAnswer>(upload)).body ?? {};
    } catch (err) {
      if (err instanceof GatewayHttpError && (err.status === 404 || err.status === 405)) {
        withoutOriginals.add(gateway);
        return;
      }
      const e = err as GatewayHttpError;
      const retry = !(e instanceof GatewayHttpError) || e.status === -1 || e.status === 429 || e.status >= 500;
      for (const j of request) fail(j, retry ? 'retry' : 'rejected', e instanceof GatewayHttpError ? e.status : 0, describeSubmitError(e));
      continue;
    }
    const byIndex = new Map((answer.results ?? []).map((r) => [r.index, r]));
    request.forEach((j, i) => {
      const r = byIndex.get(i);
      if (r && r.status_code < 300) {
        j.outcome.originalStored = true;
        return;
      }
      const code = r?.status_code ?? 502;
      fail(j, code === 429 || code >= 500 ? 'retry' : 'rejected', code, r ? `Gateway answered ${code}: ${r.error?.message ?? ''}` : 'the answer has no result for it');
    });
  }
}
