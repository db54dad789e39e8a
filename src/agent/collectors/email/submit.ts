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
    return out;
  }
  out.latencyMs = performance.now() - started;

  const attachments = opts.attachments ?? [];
  if (opts.uploadAttachments && attachments.length) {
    const max = opts.maxAttachmentBytes ?? Number.MAX_SAFE_INTEGER;
    const uploads = attachmentUploads(built, attachments);
    for (const up of uploads) {
      if (up.data.length > max) {
        out.attachmentsSkipped.push(`${up.meta.filename} (${up.data.length} bytes > ${max})`);
        continue;
      }
      try {
        await gateway.uploadFile(up.meta, up.data, { idempotencyKey: up.idempotencyKey, filename: up.meta.filename, contentType: up.meta.mime_type });
        out.attachmentsUploaded++;
      } catch (err) {
        // The document is in; the attachment is not. The message is not done until it is, so the
        // whole message is retried later (the document resend is a gateway duplicate).
        const c = classify(err);
        out.status = c.status;
        out.httpStatus = c.httpStatus;
        out.error = `attachment ${up.meta.filename}: ${c.message}`;
        out.responseBody = c.body;
        return out;
      }
    }
  }
  return out;
}
