/**
 * Sends one built email (and optionally its attachments) to the gateway and classifies the outcome the
 * way spec-notes B2.5 does: 2xx accepted (duplicate flag from the answer); 429/5xx/transport and
 * exhausted retries (status -1) stay "submitted" and are retried on a later run; any other 4xx is a
 * final rejection.
 */
import { GatewayHttpError, type GatewayClient } from '../../gateway-client.ts';
import { attachmentUploads, type BuiltEmail } from './document.ts';
import type { MailAttachment } from './message.ts';

export interface SubmitOutcome {
  status: 'accepted' | 'rejected' | 'retry';
  duplicate: boolean;
  httpStatus: number;
  docId: string | null;
  submissionId: string | null;
  gatewayStatus: string | null;
  error: string | null;
  /** Response body text of a rejection (truncated by the client). */
  responseBody: string | null;
  attachmentsUploaded: number;
  attachmentsSkipped: string[];
  latencyMs: number;
}

interface IngestAnswer {
  submission_id?: string;
  doc_id?: string;
  status?: string;
  duplicate?: boolean;
}

function classify(err: unknown): { status: 'rejected' | 'retry'; httpStatus: number; message: string; body: string | null } {
  if (err instanceof GatewayHttpError) {
    const retry = err.status === -1 || err.status === 429 || err.status >= 500;
    return { status: retry ? 'retry' : 'rejected', httpStatus: err.status, message: `${err.message}${err.body ? `: ${err.body.slice(0, 300)}` : ''}`, body: err.body ?? null };
  }
  return { status: 'retry', httpStatus: 0, message: (err as Error).message, body: null };
}

export interface SubmitOptions {
  attachments?: MailAttachment[];
  uploadAttachments?: boolean;
  maxAttachmentBytes?: number;
  /**
   * Called once the gateway has answered for the documents, before their attachments are uploaded (also when
   * the batch failed): a caller can send its next batch while this one's attachments are still on the way.
   */
  onAnswered?: () => void;
  /** Shared by the batches on their way (SubmitWindow): bounds the messages uploading attachments at once. */
  uploadLimiter?: Limiter;
}

export async function submitEmail(gateway: GatewayClient, built: BuiltEmail, opts: SubmitOptions = {}): Promise<SubmitOutcome> {
  const started = performance.now();
  const out: SubmitOutcome = {
    status: 'accepted',
    duplicate: false,
    httpStatus: 0,
    docId: null,
    submissionId: null,
    gatewayStatus: null,
    error: null,
    responseBody: null,
    attachmentsUploaded: 0,
    attachmentsSkipped: [],
    latencyMs: 0,
  };
  try {
    const res = await gateway.submitDocument<IngestAnswer>(built.document, { idempotencyKey: built.idempotencyKey });
    out.httpStatus = res.status;
    out.duplicate = res.body?.duplicate === true;
    out.docId = res.body?.doc_id ?? null;
    out.submissionId = res.body?.submission_id ?? null;
    out.gatewayStatus = res.body?.status ?? null;
  } catch (err) {
    const c = classify(err);
    out.status = c.status;
    out.httpStatus = c.httpStatus;
    out.error = c.message;
    out.responseBody = c.body;
    out.latencyMs = performance.now() - started;
    opts.onAnswered?.();
    return out;
  }
  out.latencyMs = performance.now() - started;
  opts.onAnswered?.();

  const attachments = opts.attachments ?? [];
  if (opts.uploadAttachments && attachments.length) {
    const up = await uploadAttachments(gateway, built, attachments, opts);
    Object.assign(out, up.patch);
  }
  return out;
}

/** Messages uploading attachments at once for one batch (and per SubmitWindow slot). */
const ATTACHMENT_UPLOADS_IN_FLIGHT = 4;

interface BatchAnswer {
  results?: Array<{ index: number; status_code: number; submission: IngestAnswer | null; error: { message?: string } | null }>;
}

export interface BatchItem {
  built: BuiltEmail;
  attachments?: MailAttachment[];
}

/**
 * Sends several emails in one POST <ingest_path>:batch (spec §4.8, "multiple when batch is enabled") and
 * maps the per-item results by index; attachments of accepted items are then uploaded, a few at a time. A
 * gateway without the batch route (404/405) gets single submissions instead (spec-notes B4.8).
 */
export async function submitEmailBatch(gateway: GatewayClient, items: BatchItem[], opts: Omit<SubmitOptions, 'attachments'> = {}): Promise<SubmitOutcome[]> {
  if (items.length === 1) return [await submitEmail(gateway, items[0].built, { ...opts, attachments: items[0].attachments })];
  const started = performance.now();
  let answer: BatchAnswer;
  try {
    answer = (await gateway.submitBatch<BatchAnswer>(items.map((i) => i.built.document))).body ?? {};
  } catch (err) {
    if (err instanceof GatewayHttpError && (err.status === 404 || err.status === 405)) {
      const out: SubmitOutcome[] = [];
      for (const it of items) out.push(await submitEmail(gateway, it.built, { ...opts, onAnswered: undefined, attachments: it.attachments }));
      opts.onAnswered?.();
      return out;
    }
    opts.onAnswered?.();
    const c = classify(err);
    const latencyMs = (performance.now() - started) / items.length;
    return items.map(() => ({
      status: c.status, duplicate: false, httpStatus: c.httpStatus, docId: null, submissionId: null, gatewayStatus: null,
      error: c.message, responseBody: c.body, attachmentsUploaded: 0, attachmentsSkipped: [], latencyMs,
    }));
  }
  const latencyMs = (performance.now() - started) / items.length;
  const byIndex = new Map((answer.results ?? []).map((r) => [r.index, r]));
  const outs: SubmitOutcome[] = [];
  for (let i = 0; i < items.length; i++) {
    const r = byIndex.get(i);
    const base: SubmitOutcome = {
      status: 'accepted', duplicate: false, httpStatus: r?.status_code ?? 502, docId: null, submissionId: null, gatewayStatus: null,
      error: null, responseBody: null, attachmentsUploaded: 0, attachmentsSkipped: [], latencyMs,
    };
    if (!r) {
      outs.push({ ...base, status: 'retry', error: 'batch answer has no result for this item' });
      continue;
    }
    if (r.status_code >= 300 || !r.submission) {
      const retry = r.status_code === 429 || r.status_code >= 500;
      const body = JSON.stringify(r.error ?? {}).slice(0, 2000);
      outs.push({ ...base, status: retry ? 'retry' : 'rejected', error: `Gateway answered ${r.status_code}: ${r.error?.message ?? ''}`.trim(), responseBody: body });
      continue;
    }
    outs.push({
      ...base,
      duplicate: r.submission.duplicate === true,
      docId: r.submission.doc_id ?? null,
      submissionId: r.submission.submission_id ?? null,
      gatewayStatus: r.submission.status ?? null,
    });
  }
  opts.onAnswered?.();
  // Attachments of the accepted items, a few uploads at a time (not one by one after each message).
  if (opts.uploadAttachments) {
    const jobs = items.map((it, i) => ({ it, i })).filter(({ it, i }) => outs[i].status === 'accepted' && (it.attachments?.length ?? 0) > 0);
    let next = 0;
    const worker = async () => {
      while (next < jobs.length) {
        const { it, i } = jobs[next++];
        const upload = () => uploadAttachments(gateway, it.built, it.attachments!, opts);
        const up = await (opts.uploadLimiter ? opts.uploadLimiter.run(upload) : upload());
        Object.assign(outs[i], up.patch);
      }
    };
    await Promise.all(Array.from({ length: Math.min(ATTACHMENT_UPLOADS_IN_FLIGHT, jobs.length) }, worker));
  }
  return outs;
}

async function uploadAttachments(gateway: GatewayClient, built: BuiltEmail, attachments: MailAttachment[], opts: SubmitOptions): Promise<{ patch: Partial<SubmitOutcome> }> {
  const max = opts.maxAttachmentBytes ?? Number.MAX_SAFE_INTEGER;
  const patch: Partial<SubmitOutcome> = { attachmentsUploaded: 0, attachmentsSkipped: [] };
  for (const up of attachmentUploads(built, attachments)) {
    if (up.data.length > max) {
      patch.attachmentsSkipped!.push(`${up.meta.filename} (${up.data.length} bytes > ${max})`);
      continue;
    }
    try {
      await gateway.uploadFile(up.meta, up.data, { idempotencyKey: up.idempotencyKey, filename: up.meta.filename, contentType: up.meta.mime_type });
      patch.attachmentsUploaded!++;
    } catch (err) {
      const c = classify(err);
      return { patch: { ...patch, status: c.status, httpStatus: c.httpStatus, error: `attachment ${up.meta.filename}: ${c.message}`, responseBody: c.body } };
    }
  }
  return { patch };
}

/**
 * Batches on their way to the gateway. A batch holds one of `slots` until the gateway answers for its
 * documents; its attachments then upload while the next batches go. At most `slots × unfinishedPerSlot`
 * batches are unfinished at once, which bounds the messages (and attachment bytes) held in memory.
 */
export class SubmitWindow {
  /** Messages uploading attachments at once over all batches: as many as `slots` batches would upload. */
  readonly uploads: Limiter;
  private readonly unfinished = new Set<Promise<void>>();
  private awaitingAnswer = 0;
  private wake: (() => void) | null = null;

  constructor(
    private readonly slots: number,
    private readonly unfinishedPerSlot = 3,
  ) {
    this.uploads = new Limiter(slots * ATTACHMENT_UPLOADS_IN_FLIGHT);
  }

  /** Starts `send(onAnswered)` (which must call onAnswered once the documents are answered) and waits for room for the next batch. */
  async add(send: (onAnswered: () => void) => Promise<void>): Promise<void> {
    this.awaitingAnswer++;
    let answered = false;
    const onAnswered = () => {
      if (answered) return;
      answered = true;
      this.awaitingAnswer--;
      this.wake?.();
    };
    const p = send(onAnswered).finally(() => {
      onAnswered();
      this.unfinished.delete(p);
    });
    this.unfinished.add(p);
    while (this.awaitingAnswer >= this.slots || this.unfinished.size >= this.slots * this.unfinishedPerSlot) {
      const woken = new Promise<void>((r) => (this.wake = r));
      await Promise.race([...this.unfinished, woken]);
      this.wake = null;
    }
  }

  /** Waits until every batch has finished (a failed one rejects here). */
  async drain(): Promise<void> {
    await Promise.all(this.unfinished);
  }
}

/** Runs at most `max` tasks at once; the others wait their turn in order. */
export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(private readonly max: number) {}

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active < this.max) this.active++;
    else await new Promise<void>((r) => this.waiting.push(r)); // the finishing task hands over its place
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
