/**
 * The catalog's write path: documents with version history, threads, chunks, people links, submissions and
 * batches (gateway spec 2–4.6). Every document insertion is one transaction; a batch processes
 * its items in groups, each item inside a savepoint so one bad item never stops the others.
 * Reads are in reads.ts, progress (document, submission and batch status) in status.ts.
 */
import type { Database, Queryable } from '../db/types.ts';
import type { ErrorCode } from '../util/error-codes.ts';
import { boundTitle } from '../schemas/bounds.ts';
import { normaliseText, sha256Hex } from '../util/hash.ts';
import { MEMEX_NAMESPACE, isUuid, newId, uuidV5 } from '../util/ids.ts';
import { chunkText } from './chunking.ts';
import { refreshDocumentStatus } from '../embedding/store.ts';
import { ReaderSignal } from '../db/readers.ts';
import { DOC_COLUMNS } from './reads.ts';
import { attachmentColumns } from './attachments.ts';
import { ingestMany, isRetryable, planRounds, searchableText, storeChunks, type IngestItem } from './ingest.ts';
import {
  CatalogError,
  type AttachmentEntry,
  type BatchItemOutcome,
  type CatalogBatchResult,
  type CatalogDocumentRequest,
  type CatalogIngestResult,
} from './types.ts';
import { DISK_FULL_CODE, DISK_FULL_STATUS, diskFullMessage, fullDiskOf, noteDiskFull } from '../util/disk-full.ts';

export interface CatalogOptions {
  /** Region for reading national phone numbers in people[]. */
  phoneRegion?: string;
  /** Called after new chunks were queued for embedding (wakes the embedding worker). */
  onChunksQueued?: () => void;
  /**
   * Called after documents were stored, re-versioned or deleted, with their doc ids (e.g. so the
   * relationship scorer can refresh the people they touch). Never called for duplicates.
   */
  onDocumentsIngested?: (docIds: string[]) => void;
  /**
   * Items per transaction in a batch; batch counts become visible after each group. Default:
   * BATCH_GROUP_SIZE, and on PGlite PGLITE_READER_GROUP_SIZE while someone is reading (`readers`).
   */
  batchGroupSize?: number;
  /** The database's reader signal (src/db/readers.ts); the catalog makes its own when none is given. */
  readers?: ReaderSignal;
}

/** Items per transaction in a batch. */
export const BATCH_GROUP_SIZE = 100;

/**
 * PGlite has one connection in the gateway's thread: a search that arrives while a batch is written waits
 * for the transaction that is running (and is let in before the next one: src/db/pglite.ts). A group of 25
 * emails holds it about 20 ms where a group of 100 holds it about 55 ms, but writing a batch of 100 in four
 * transactions costs the import 15–28 % of its speed (docs/BENCHMARKS.md, "Searching while mail is
 * imported"). So a batch is written in small transactions only while someone is reading (src/db/readers.ts:
 * a search, an answer or a page of the UI in the last READER_WINDOW_MS), group by group.
 */
export const PGLITE_READER_GROUP_SIZE = 25;


export interface VersionChanges {
  text?: string;
  title?: string | null;
  metadata?: Record<string, unknown>;
  content_timestamp?: string;
  attachments?: AttachmentEntry[];
  /** Put every chunk of the new version back in the embedding queue, even already embedded ones. */
  requeue?: boolean;
}


function batchCounts(outcomes: BatchItemOutcome[], total: number) {
  const success = outcomes.filter((o) => o.ok).length;
  const failure = total - success;
  const status = failure === 0 ? 'completed' : success === 0 ? 'failed' : 'partial';
  return { success, failure, status };
}

/** Deterministic batch key: the item keys sorted and joined, so a retried batch is the same batch. */
export function batchKeyOf(items: CatalogDocumentRequest[]): string {
  return sha256Hex(items.map((i) => i.idempotency_key).sort().join('|'));
}

export class Catalog {
  readonly phoneRegion: string;

  constructor(
    readonly db: Database,
    private readonly opts: CatalogOptions = {},
  ) {
    this.phoneRegion = opts.phoneRegion ?? 'US';
    this.readers = opts.readers ?? new ReaderSignal();
  }

  /** Someone waiting for an answer: on PGlite, batches give way in small transactions for a while. */
  readonly readers: ReaderSignal;
  private blockedMessagesHandler?: (messageIds: string[]) => Promise<unknown>;

  /**
   * Called after commit with the Message-IDs of messages the block list kept out, so attachments
   * uploaded before their message go as well (the gateway erases them with its forget service).
   */
  onBlockedMessages(handler: (messageIds: string[]) => Promise<unknown>): void {
    this.blockedMessagesHandler = handler;
  }

  private async afterBlocked(outcomes: BatchItemOutcome[]): Promise<void> {
    const ids = [...new Set(outcomes.flatMap((o) => (o.blockedMessage ? [o.blockedMessage] : [])))];
    if (ids.length > 0) await this.blockedMessagesHandler?.(ids);
  }

  /** Items per transaction of a batch now. */
  private groupSize(): number {
    if (this.opts.batchGroupSize) return this.opts.batchGroupSize;
    const reading = this.db.kind === 'pglite' && !this.readers.idle();
    return reading ? PGLITE_READER_GROUP_SIZE : BATCH_GROUP_SIZE;
  }

  // ---------------------------------------------------------------------------------------------
  // Ingestion

  /** Idempotent insertion of one document (spec 4.6 POST /v1/catalog/documents). */
  async ingest(req: CatalogDocumentRequest): Promise<CatalogIngestResult> {
    const [outcome] = await this.withRetry(() =>
      this.db.transaction((tx) => ingestMany(tx, [{ index: 0, request: req }], null, this.phoneRegion)),
    );
    if (!outcome.ok) throw new CatalogError(outcome.error!.status, outcome.error!.code, outcome.error!.message);
    await this.recheckStatus([outcome]);
    await this.afterBlocked([outcome]);
    if (!outcome.result!.duplicate && !outcome.result!.skipped) {
      this.opts.onChunksQueued?.();
      this.opts.onDocumentsIngested?.([outcome.result!.doc_id]);
    }
    return outcome.result!;
  }

  /**
   * Batch insertion with a batch record (spec 4.1 rule 3). `items` carry their index in the
   * client's request; `preparedFailures` counts items the gateway already rejected, so the batch
   * totals cover the whole request. The batch id is derived from its key: a retry is the same batch.
   * A batch of one group is stored in one transaction with its batch record; larger ones a group at
   * a time (ingestInGroups).
   */
  async ingestBatch(items: IngestItem[], batchKey: string, preparedFailures = 0): Promise<CatalogBatchResult> {
    const total = items.length + preparedFailures;
    const batchId = uuidV5(`batch:${batchKey}`, MEMEX_NAMESPACE);
    const groupSize = this.groupSize();
    const rounds = planRounds(items);
    // The usual batch (one group: at most groupSize items, no document twice) in one transaction with its
    // batch record: no savepoint, one commit. A failure rolls it all back and the batch takes the path below.
    const outcomes =
      (rounds.length === 1 && items.length <= groupSize
        ? await this.withRetry(() => this.ingestSingleGroup(items, batchId, batchKey, total, preparedFailures)).catch((err) => {
            if (isRetryable(err)) throw err;
            return null;
          })
        : null) ?? (await this.ingestInGroups(rounds, batchId, batchKey, total, preparedFailures));
    outcomes.sort((a, b) => a.index - b.index);
    await this.recheckStatus(outcomes);
    await this.afterBlocked(outcomes);
    const { success, failure, status } = batchCounts(outcomes, total);
    const stored = outcomes.filter((o) => o.ok && !o.result!.duplicate && !o.result!.skipped).map((o) => o.result!.doc_id);
    if (stored.length > 0) this.opts.onChunksQueued?.();
    if (stored.length > 0) this.opts.onDocumentsIngested?.(stored);
    return {
      batch_id: batchId,
      batch_status: status,
      total_count: total,
      success_count: success,
      failure_count: failure,
      items: outcomes,
    };
  }

  /** One transaction: the batch record, every item, the batch's final counts. Throws when any item's SQL fails. */
  private ingestSingleGroup(items: IngestItem[], batchId: string, batchKey: string, total: number, preparedFailures: number) {
    return this.db.transaction(async (tx) => {
      await this.openBatchRecord(tx, batchId, batchKey, total, preparedFailures);
      const outcomes = await ingestMany(tx, items, batchId, this.phoneRegion);
      await this.closeBatchRecord(tx, batchId, outcomes, total);
      return outcomes;
    });
  }

  /**
   * A batch a group at a time (one transaction each, so the batch counts rise as groups finish); a group that
   * fails is redone one item at a time, each in a savepoint.
   */
  private async ingestInGroups(
    rounds: IngestItem[][],
    batchId: string,
    batchKey: string,
    total: number,
    preparedFailures: number,
  ): Promise<BatchItemOutcome[]> {
    await this.openBatchRecord(this.db, batchId, batchKey, total, preparedFailures);
    const outcomes: BatchItemOutcome[] = [];
    for (const round of rounds) {
      // The size is taken group by group: a reader who arrives during a long batch gets small transactions.
      for (let g = 0; g < round.length; ) {
        const group = round.slice(g, g + this.groupSize());
        g += group.length;
        const groupOutcomes = await this.withRetry(() =>
          this.db.transaction(async (tx) => {
            const out = await this.ingestGroup(tx, group, batchId);
            const ok = out.filter((o) => o.ok).length;
            await tx.query(
              `UPDATE ingest_batches SET success_count = success_count + $2, failure_count = failure_count + $3,
                      updated_at = now() WHERE batch_id = $1`,
              [batchId, ok, out.length - ok],
            );
            return out;
          }),
        );
        outcomes.push(...groupOutcomes);
      }
    }
    await this.closeBatchRecord(this.db, batchId, outcomes, total);
    return outcomes;
  }

  /** The batch record in state processing (a retried batch starts its counts again). */
  private async openBatchRecord(q: Queryable, batchId: string, batchKey: string, total: number, preparedFailures: number) {
    await q.query(
      `INSERT INTO ingest_batches (batch_id, idempotency_key, status, total_count, success_count, failure_count)
       VALUES ($1, $2, 'processing', $3, 0, $4)
       ON CONFLICT (idempotency_key) DO UPDATE
         SET status = 'processing', total_count = GREATEST(ingest_batches.total_count, EXCLUDED.total_count),
             success_count = 0, failure_count = EXCLUDED.failure_count, updated_at = now()`,
      [batchId, batchKey, total, preparedFailures],
    );
  }

  private async closeBatchRecord(q: Queryable, batchId: string, outcomes: BatchItemOutcome[], total: number) {
    const { success, failure, status } = batchCounts(outcomes, total);
    const errors = outcomes.filter((o) => !o.ok).map((o) => ({ index: o.index, ...o.error }));
    await q.query(
      `UPDATE ingest_batches SET status = $2, success_count = $3, failure_count = $4, error_details = $5,
              updated_at = now() WHERE batch_id = $1`,
      [batchId, status, success, failure, errors.length ? JSON.stringify({ errors }) : null],
    );
  }

  /** The whole group in one go; if that fails, one item at a time so only bad items fail. */
  private async ingestGroup(tx: Queryable, group: IngestItem[], batchId: string): Promise<BatchItemOutcome[]> {
    await tx.query('SAVEPOINT ingest_group');
    try {
      const out = await ingestMany(tx, group, batchId, this.phoneRegion);
      await tx.query('RELEASE SAVEPOINT ingest_group');
      return out;
    } catch (err) {
      await tx.query('ROLLBACK TO SAVEPOINT ingest_group');
      if (isRetryable(err)) throw err;
    }
    const out: BatchItemOutcome[] = [];
    for (const item of group) {
      await tx.query('SAVEPOINT ingest_item');
      try {
        out.push(...(await ingestMany(tx, [item], batchId, this.phoneRegion)));
        await tx.query('RELEASE SAVEPOINT ingest_item');
      } catch (err) {
        await tx.query('ROLLBACK TO SAVEPOINT ingest_item');
        if (isRetryable(err)) throw err;
        out.push({ index: item.index, ok: false, error: toItemError(err) });
      }
    }
    return out;
  }

  /**
   * Documents that share a chunk still waiting for a vector: a worker may have embedded it while
   * they were being stored, and its status refresh could not see their links yet. Now that they
   * are committed, promote the ones whose chunks are all embedded.
   */
  private async recheckStatus(outcomes: BatchItemOutcome[]): Promise<void> {
    const docIds = outcomes.filter((o) => o.ok && o.recheck).map((o) => o.result!.doc_id);
    if (docIds.length === 0) return;
    await this.withRetry(() => this.db.transaction((tx) => refreshDocumentStatus(tx, { docIds })));
  }

  /** Retries a transaction that lost a race (deadlock, concurrent insert of the same row). */
  private async withRetry<T>(fn: () => Promise<T>, attempts = 4): Promise<T> {
    for (let i = 1; ; i++) {
      try {
        return await fn();
      } catch (err) {
        if (i >= attempts || !isRetryable(err)) throw err;
        await new Promise((r) => setTimeout(r, 5 * i + Math.random() * 20));
      }
    }
  }


  private async supersede(tx: Queryable, oldDocId: string, newDocId: string | null): Promise<void> {
    await tx.query(
      `UPDATE documents SET is_active_version = false, superseded_at = now(), superseded_by_id = $2,
              updated_at = now() WHERE doc_id = $1`,
      [oldDocId, newDocId],
    );
    await tx.query('DELETE FROM chunk_documents WHERE doc_id = $1', [oldDocId]);
  }


  // ---------------------------------------------------------------------------------------------
  // Versions, updates, deletes

  /**
   * A new version of a document with changed text, metadata, timestamp or attachments (spec 4.6
   * PATCH …/version). The old version becomes inactive and loses its chunk links; chunks are
   * rebuilt for the new one. Only the active version can be changed.
   */
  async createVersion(
    docId: string,
    changes: VersionChanges,
  ): Promise<{
    doc_id: string;
    previous_version_id: string;
    external_id: string;
    version_number: number;
    thread_id: string | null;
    status: string;
    file_ids: string[];
    chunks_queued: number;
  }> {
    if (!isUuid(docId)) throw new CatalogError(422, 'UPDATE.INVALID_DOC_ID', 'doc_id must be a UUID');
    const out = await this.db.transaction(async (tx) => {
      const cur = await tx.query<Record<string, any>>(`SELECT ${DOC_COLUMNS} FROM documents WHERE doc_id = $1 FOR UPDATE`, [
        docId,
      ]);
      const old = cur.rows[0];
      if (!old) throw new CatalogError(404, 'DOCUMENT.NOT_FOUND', 'Document not found');
      if (!old.is_active_version) {
        throw new CatalogError(
          409,
          'DOCUMENT.NOT_ACTIVE',
          old.superseded_by_id
            ? `Document is not the active version; the active one is ${await this.activeIdOf(tx, docId)}`
            : 'Document was deleted',
        );
      }
      const text = changes.text !== undefined ? normaliseText(changes.text) : old.text;
      const newDocId = newId();
      const metadata: Record<string, unknown> = { ...(old.metadata ?? {}), ...(changes.metadata ?? {}) };
      if (changes.attachments) metadata.attachments = changes.attachments;
      const chunks = chunkText(searchableText(text, metadata.attachments));
      if (chunks.length === 0) throw new CatalogError(422, 'INGEST.EMPTY_TEXT', 'text is empty after normalisation');
      const ts = changes.content_timestamp ?? (old.content_timestamp as Date).toISOString();
      metadata.timestamps = {
        ...((metadata.timestamps as object) ?? {}),
        primary: { value: ts, type: old.content_timestamp_type },
      };
      metadata.ingested_at = new Date().toISOString();
      const facets = changes.attachments ? attachmentColumns(metadata) : null;
      await this.supersede(tx, docId, newDocId);
      await tx.query(
        `INSERT INTO documents (${DOC_COLUMNS})
         SELECT $2, external_id, source_type, source_provider, source_account_id, version_number + 1, doc_id, true,
                NULL, NULL, NULL, $3, $4, $5, mime_type, canonical_uri, $6, content_timestamp_type, content_created_at,
                content_modified_at, people, thread_id, parent_doc_id, source_doc_ids, related_doc_ids,
                $7, $8, has_location, has_due_date, due_date, is_completed, completed_at, $9, 'extracting',
                extraction_failed, enrichment_failed, error_details, intent, relevance_score, intent_status,
                NULL, NULL, NULL, now(), now(), now()
           FROM documents WHERE doc_id = $1`,
        [
          docId, newDocId, changes.title !== undefined ? boundTitle(changes.title) : old.title, text, sha256Hex(text), ts,
          facets ? facets.has_attachments : old.has_attachments, facets ? facets.attachment_count : old.attachment_count,
          JSON.stringify(metadata),
        ],
      );
      // People links and file links follow the new version.
      await tx.query(
        `INSERT INTO document_people (doc_id, person_id, role) SELECT $2, person_id, role FROM document_people
          WHERE doc_id = $1 ON CONFLICT DO NOTHING`,
        [docId, newDocId],
      );
      await tx.query(
        `INSERT INTO document_files (doc_id, file_sha256, role) SELECT $2, file_sha256, role FROM document_files
          WHERE doc_id = $1 ON CONFLICT DO NOTHING`,
        [docId, newDocId],
      );
      const { pending } = await storeChunks(tx, [{ docId: newDocId, chunks, at: ts }], changes.requeue ?? false);
      const queued = pending.get(newDocId) ?? 0;
      const status = queued === 0 ? 'indexed' : 'enriched';
      await tx.query('UPDATE documents SET status = $2 WHERE doc_id = $1', [newDocId, status]);
      const files = await tx.query<{ file_sha256: string }>('SELECT file_sha256 FROM document_files WHERE doc_id = $1', [
        newDocId,
      ]);
      return {
        doc_id: newDocId,
        previous_version_id: docId,
        external_id: old.external_id as string,
        version_number: (old.version_number as number) + 1,
        thread_id: old.thread_id as string | null,
        status,
        file_ids: files.rows.map((f) => f.file_sha256),
        chunks_queued: queued,
      };
    });
    if (out.chunks_queued > 0) this.opts.onChunksQueued?.();
    this.opts.onDocumentsIngested?.([out.doc_id, docId]);
    return out;
  }

  private async activeIdOf(tx: Queryable, docId: string): Promise<string | null> {
    const r = await tx.query<{ doc_id: string }>(
      `SELECT a.doc_id FROM documents d JOIN documents a
          ON a.source_type = d.source_type AND coalesce(a.source_provider, '') = coalesce(d.source_provider, '')
         AND coalesce(a.source_account_id, '') = coalesce(d.source_account_id, '') AND a.external_id = d.external_id
       WHERE d.doc_id = $1 AND a.is_active_version`,
      [docId],
    );
    return r.rows[0]?.doc_id ?? null;
  }

  /** Soft delete (spec 3, document versions): inactive, chunk and file links removed. */
  async deleteDocument(docId: string): Promise<{ doc_id: string; status: 'deleted' }> {
    if (!isUuid(docId)) throw new CatalogError(422, 'DOCUMENT.INVALID_ID', 'doc_id must be a UUID');
    const out = await this.db.transaction(async (tx) => {
      const r = await tx.query<{ is_active_version: boolean }>(
        'SELECT is_active_version FROM documents WHERE doc_id = $1 FOR UPDATE',
        [docId],
      );
      if (!r.rows[0]) throw new CatalogError(404, 'DOCUMENT.NOT_FOUND', 'Document not found');
      await tx.query(
        `UPDATE documents SET is_active_version = false, deleted_at = coalesce(deleted_at, now()), updated_at = now()
          WHERE doc_id = $1`,
        [docId],
      );
      await tx.query('DELETE FROM chunk_documents WHERE doc_id = $1', [docId]);
      await tx.query('DELETE FROM document_files WHERE doc_id = $1', [docId]);
      return { doc_id: docId, status: 'deleted' as const };
    });
    this.opts.onDocumentsIngested?.([docId]);
    return out;
  }
}

function toItemError(err: unknown): { code: ErrorCode; message: string; status: number } {
  if (err instanceof CatalogError) return { code: err.code, message: err.message, status: err.status };
  const e = err as { code?: string; message?: string };
  // PostgreSQL constraint violations are the client's data, not a server fault.
  if (e.code && /^23/.test(e.code)) {
    return { code: 'INGEST.CONSTRAINT_VIOLATION', message: e.message ?? 'constraint violation', status: 422 };
  }
  const full = fullDiskOf(err);
  if (full) {
    noteDiskFull(full);
    return { code: DISK_FULL_CODE, message: diskFullMessage(full), status: DISK_FULL_STATUS };
  }
  return { code: 'INGEST.BATCH_UNEXPECTED_ERROR', message: 'unexpected error while cataloging', status: 500 };
}