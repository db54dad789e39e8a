/**
 * Sends one built email (and optionally its attachments) to the gateway and classifies the outcome the
 * way spec-notes B2.5 does: 2xx accepted (duplicate flag from the answer); 429/5xx/transport and
 * exhausted retries (status -1) stay "submitted" and are retried on a later run; any other 4xx is a
 * final rejection.
 */
import { GatewayHttpError, type GatewayClient } from '../../gateway-client.ts';
import { attachmentUploads, type AttachmentUpload, type BuiltEmail } from '../../../mail/document.ts';
import type { MailAttachment } from '../../../mail/collected-message.ts';
import { uploadOriginals } from './originals.ts';

export type { SubmitOutcome } from './outcome.ts';
import type { SubmitOutcome } from './outcome.ts';

interface IngestAnswer {
  submission_id?: string;
  doc_id?: string;
  status?: string;
  duplicate?: boolean;
  version_number?: number;
  skipped?: string;
}

function classify(err: unknown): { status: 'rejected' | 'retry'; httpStatus: number; message: string; body: string | null } {
  if (err instanceof GatewayHttpError) {
    const retry = err.status === -1 || err.status === 429 || err.status >= 500;
    return { status: retry ? 'retry' : 'rejected', httpStatus: err.status, message: `${err.describe()}${err.body ? `: ${err.body.slice(0, 300)}` : ''}`, body: err.body ?? null };
  }
  return { status: 'retry', httpStatus: 0, message: (err as Error).message, body: null };
}

export interface SubmitOptions {
  attachments?: MailAttachment[];
  /** The message's raw RFC 5322 bytes, kept by the gateway as its original (originals.ts). */
  original?: Buffer;
  uploadAttachments?: boolean;
  maxAttachmentBytes?: number;
  /**
   * Called once the gateway has answered for the documents, before their attachments are uploaded (also when
   * the batch failed): a caller can send its next batch while this one's attachments are still on the way.
   */
  onAnswered?: () => void;
  /** Shared by the batches on their way (SubmitWindow): bounds the attachment upload requests at once. */
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
    versionNumber: null,
    skipped: null,
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
    out.versionNumber = res.body?.version_number ?? null;
    out.skipped = res.body?.skipped ?? null;
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
  // The attachments and the original side by side (see submitEmailBatch).
  await Promise.all([
    opts.uploadAttachments && attachments.length ? uploadAttachments(gateway, [{ built, attachments, outcome: out }], opts) : undefined,
    opts.original ? uploadOriginals(gateway, [{ original: opts.original, outcome: out }]) : undefined,
  ]);
  return out;
}

/** Attachment upload requests on their way at once for one batch (and per SubmitWindow slot). */
const ATTACHMENT_UPLOADS_IN_FLIGHT = 4;
/**
 * Files per POST <ingest_file_path>:batch (the memex gateway takes up to 32) and bytes per request: enough to
 * make one request of a batch's attachments, small enough that a retried request resends little.
 */
const FILES_PER_UPLOAD = 32;
const BYTES_PER_UPLOAD = 8 * 1024 * 1024;

interface BatchAnswer {
  results?: Array<{ index: number; status_code: number; submission: IngestAnswer | null; error: { message?: string } | null }>;
}

export interface BatchItem {
  built: BuiltEmail;
  attachments?: MailAttachment[];
  /** The message's raw bytes (its original). */
  original?: Buffer;
}

/**
 * Sends several emails in one POST <ingest_path>:batch (spec §4.8, "multiple when batch is enabled") and
 * maps the per-item results by index; attachments of accepted items are then uploaded, a few at a time. A
 * gateway without the batch route (404/405) gets single submissions instead (spec-notes B4.8).
 */
export async function submitEmailBatch(gateway: GatewayClient, items: BatchItem[], opts: Omit<SubmitOptions, 'attachments'> = {}): Promise<SubmitOutcome[]> {
  if (items.length === 1) return [await submitEmail(gateway, items[0].built, { ...opts, attachments: items[0].attachments, original: items[0].original })];
  const started = performance.now();
  let answer: BatchAnswer;
  try {
    answer = (await gateway.submitBatch<BatchAnswer>(items.map((i) => i.built.document))).body ?? {};
  } catch (err) {
    if (err instanceof GatewayHttpError && (err.status === 404 || err.status === 405)) {
      const out: SubmitOutcome[] = [];
      for (const it of items) out.push(await submitEmail(gateway, it.built, { ...opts, onAnswered: undefined, attachments: it.attachments, original: it.original }));
      opts.onAnswered?.();
      return out;
    }
    opts.onAnswered?.();
    const c = classify(err);
    const latencyMs = (performance.now() - started) / items.length;
    return items.map(() => ({
      status: c.status, duplicate: false, httpStatus: c.httpStatus, docId: null, submissionId: null, gatewayStatus: null,
      versionNumber: null, skipped: null, error: c.message, responseBody: c.body, attachmentsUploaded: 0, attachmentsSkipped: [], latencyMs,
    }));
  }
  const latencyMs = (performance.now() - started) / items.length;
  const byIndex = new Map((answer.results ?? []).map((r) => [r.index, r]));
  const outs: SubmitOutcome[] = [];
  for (let i = 0; i < items.length; i++) {
    const r = byIndex.get(i);
    const base: SubmitOutcome = {
      status: 'accepted', duplicate: false, httpStatus: r?.status_code ?? 502, docId: null, submissionId: null, gatewayStatus: null,
      versionNumber: null, skipped: null, error: null, responseBody: null, attachmentsUploaded: 0, attachmentsSkipped: [], latencyMs,
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
      versionNumber: r.submission.version_number ?? null,
      skipped: r.submission.skipped ?? null,
    });
  }
  opts.onAnswered?.();
  const jobs = opts.uploadAttachments ? items.flatMap((it, i) => (outs[i].status === 'accepted' && it.attachments?.length ? [{ built: it.built, attachments: it.attachments, outcome: outs[i] }] : [])) : [];
  // The attachments and the originals (one request for the batch's, usually: the same bytes are one object on the
  // gateway) go side by side: one after the other, a batch stayed unfinished for both, and the window holds few
  // unfinished batches. An original stored for a message whose attachment then fails is kept: the message is sent
  // again and its original is the same object.
  await Promise.all([
    uploadAttachments(gateway, jobs, opts),
    uploadOriginals(gateway, items.flatMap((it, i) => (it.original ? [{ original: it.original, outcome: outs[i] }] : []))),
  ]);
  return outs;
}

/** Gateways that answered 404/405 for the file batch route: they get one upload per file from then on. */
const withoutFileBatch = new WeakSet<GatewayClient>();

interface AttachmentJob {
  built: BuiltEmail;
  attachments: MailAttachment[];
  /** The message's outcome: counts the uploaded files, and takes the first failure (the message is then retried or rejected). */
  outcome: SubmitOutcome;
}

/**
 * The attachments of accepted messages, several files per request (POST <ingest_file_path>:batch: one request and
 * one catalog transaction instead of one per file), a few requests at a time. A gateway without the batch route
 * (404/405) gets the spec's one upload per file; so does a request that holds only one file.
 */
async function uploadAttachments(gateway: GatewayClient, jobs: AttachmentJob[], opts: SubmitOptions): Promise<void> {
  const max = opts.maxAttachmentBytes ?? Number.MAX_SAFE_INTEGER;
  const files: { up: AttachmentUpload; job: AttachmentJob }[] = [];
  for (const job of jobs) {
    job.outcome.attachmentsUploaded = 0;
    job.outcome.attachmentsSkipped = [];
    for (const up of attachmentUploads(job.built, job.attachments)) {
      // An empty part has no file to store (the gateway answers 400 upload is empty): the message's
      // metadata.attachments entry (size_bytes 0) is its record; nothing is lost, so it is no failure (issue 48).
      if (up.data.length === 0) continue;
      if (up.data.length > max) job.outcome.attachmentsSkipped.push(`${up.meta.filename} (${up.data.length} bytes > ${max})`);
      else files.push({ up, job });
    }
  }
  const requests: (typeof files)[] = [];
  let bytes = 0;
  for (const f of files) {
    const last = requests.at(-1);
    if (last && last.length < FILES_PER_UPLOAD && bytes + f.up.data.length <= BYTES_PER_UPLOAD) last.push(f);
    else {
      requests.push([f]);
      bytes = 0;
    }
    bytes += f.up.data.length;
  }
  const settle = (f: (typeof files)[number], failure: ReturnType<typeof classify> | null) => {
    const o = f.job.outcome;
    if (!failure) o.attachmentsUploaded++;
    else if (o.status === 'accepted') {
      Object.assign(o, { status: failure.status, httpStatus: failure.httpStatus, error: `attachment ${f.up.meta.filename}: ${failure.message}`, responseBody: failure.body });
    }
  };
  const one = async (f: (typeof files)[number]) => {
    try {
      await gateway.uploadFile(f.up.meta, f.up.data, { idempotencyKey: f.up.idempotencyKey, filename: f.up.meta.filename, contentType: f.up.meta.mime_type });
      settle(f, null);
    } catch (err) {
      settle(f, classify(err));
    }
  };
  const send = async (request: typeof files) => {
    if (request.length === 1 || withoutFileBatch.has(gateway)) {
      for (const f of request) await one(f);
      return;
    }
    let answer: FileBatchAnswer;
    try {
      answer = (await gateway.uploadFiles<FileBatchAnswer>(request.map((f) => ({ meta: f.up.meta, data: f.up.data, filename: f.up.meta.filename, contentType: f.up.meta.mime_type })))).body ?? {};
    } catch (err) {
      if (err instanceof GatewayHttpError && (err.status === 404 || err.status === 405)) {
        withoutFileBatch.add(gateway);
        for (const f of request) await one(f);
        return;
      }
      const failure = classify(err);
      for (const f of request) settle(f, failure);
      return;
    }
    const byIndex = new Map((answer.results ?? []).map((r) => [r.index, r]));
    request.forEach((f, i) => {
      const r = byIndex.get(i);
      if (r && r.status_code < 300) return settle(f, null);
      const code = r?.status_code ?? 502;
      const message = r ? `Gateway answered ${code}: ${r.error?.message ?? JSON.stringify(r.detail ?? []).slice(0, 300)}` : 'batch answer has no result for this file';
      settle(f, { status: code === 429 || code >= 500 ? 'retry' : 'rejected', httpStatus: code, message, body: r ? JSON.stringify(r.error ?? r.detail ?? {}).slice(0, 2000) : null });
    });
  };
  let next = 0;
  const worker = async () => {
    while (next < requests.length) {
      const request = requests[next++];
      await (opts.uploadLimiter ? opts.uploadLimiter.run(() => send(request)) : send(request));
    }
  };
  await Promise.all(Array.from({ length: Math.min(ATTACHMENT_UPLOADS_IN_FLIGHT, requests.length) }, worker));
}

interface FileBatchAnswer {
  results?: Array<{ index: number; status_code: number; error: { message?: string } | null; detail?: unknown[] }>;
}

/**
 * Batches on their way to the gateway. A batch holds one of `slots` until the gateway answers for its
 * documents; its attachments then upload while the next batches go. At most `slots × unfinishedPerSlot`
 * batches are unfinished at once, which bounds the messages (and attachment bytes) held in memory.
 */
export class SubmitWindow {
  /** Attachment upload requests at once over all batches: as many as `slots` batches would send. */
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
