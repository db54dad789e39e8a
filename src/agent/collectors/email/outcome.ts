/** What submitting one message came to (submit.ts), shared with the originals upload (originals.ts). */
export interface SubmitOutcome {
  status: 'accepted' | 'rejected' | 'retry';
  duplicate: boolean;
  httpStatus: number;
  docId: string | null;
  submissionId: string | null;
  gatewayStatus: string | null;
  /** The version the gateway stored (1 for a new document), when it answered one. */
  versionNumber: number | null;
  /** Why the gateway stored nothing although it accepted (a forget's block list: blocked_source, blocked_identifier). */
  skipped: string | null;
  error: string | null;
  /** Response body text of a rejection (truncated by the client). */
  responseBody: string | null;
  attachmentsUploaded: number;
  attachmentsSkipped: string[];
  /** The gateway keeps the message's original (POST <ingest_path>/originals answered for it). */
  originalStored?: boolean;
  latencyMs: number;
}
