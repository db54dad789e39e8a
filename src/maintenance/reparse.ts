/**
 * `memex reindex --reparse` (issue 40 item 3): every stored message rebuilt from its original.
 *
 * For each active email document with an original (src/catalog/originals.ts), the bytes are parsed and built
 * by the collectors' own code (parseCollectedMessage, buildEmailDocument: whatever text and metadata they make
 * now) under the document's own source id, and go through the gateway's ingest path (validation, prepareIngest,
 * catalog.ingest), as a collector's resend would: a result that differs becomes a new version of the same
 * document, an equal one is a duplicate. The new version is linked to the same original.
 *
 * What the original cannot tell is taken from the stored document: the mailbox the local collector recorded,
 * a date that came from outside the message (mbox `From ` line, .emlx plist, IMAP internal date), and the
 * redaction of a store whose text was redacted when it was collected (kept redacted: a reparse never undoes a
 * choice the person made).
 */
import { buildEmailDocument } from '../mail/document.ts';
import { parseCollectedMessage } from '../mail/collected-message.ts';
import type { Catalog } from '../catalog/catalog.ts';
import { linkOriginals, originalOf, ORIGINAL_MAX_BYTES, ORIGINAL_SOURCE_TYPES } from '../catalog/originals.ts';
import type { Database } from '../db/types.ts';
import { readObject, type ObjectStore } from '../files/object-store.ts';
import { prepareIngest } from '../catalog/prepare.ts';
import { cleanStrings } from '../util/json-input.ts';
import type { RedactOptions } from '../agent/config.ts';

export interface ReparseResult {
  /** Documents whose rebuilt text or metadata differed: stored as a new version. */
  repaired: number;
  unchanged: number;
  /** Originals that could not be read, parsed or stored again (named in `failures`, first 50). */
  failed: number;
  /** Active email documents without an original (stored before originals were kept: `memex import mail --rescan`). */
  without_original: number;
  failures: { doc_id: string; reason: string }[];
  duration_ms: number;
}

const NO_REDACTION: RedactOptions = { emails: false, phones: false, account_numbers: false, ssn: false };
const ALL_REDACTION: RedactOptions = { emails: true, phones: true, account_numbers: true, ssn: true };
const PAGE = 200;

/**
 * The check a rebuilt document passes before it is stored: the gateway's own for an ingest body
 * (`compileBodyValidator(IngestRequest)`, src/gateway/validation.ts), given by the caller so that whole-store
 * operations take nothing from the gateway above them.
 */
export type IngestBodyCheck = ((body: unknown) => boolean) & { errors?: unknown[] | null };

interface StoredEmail {
  doc_id: string;
  source_type: 'email' | 'email_local';
  external_id: string;
  text: string;
  metadata: Record<string, unknown> | null;
  content_timestamp: Date | string | null;
}

export async function reparseEmail(
  deps: { db: Database; store: ObjectStore; catalog: Catalog; validate: IngestBodyCheck },
  opts: { onProgress?: (done: number, result: ReparseResult) => void } = {},
): Promise<ReparseResult> {
  const started = Date.now();
  const result: ReparseResult = { repaired: 0, unchanged: 0, failed: 0, without_original: 0, failures: [], duration_ms: 0 };
  const fail = (docId: string, reason: string) => {
    result.failed++;
    if (result.failures.length < 50) result.failures.push({ doc_id: docId, reason: reason.slice(0, 300) });
  };
  let after = '00000000-0000-0000-0000-000000000000';
  let done = 0;
  for (;;) {
    const page = (
      await deps.db.query<StoredEmail>(
        `SELECT doc_id, source_type, external_id, text, metadata, content_timestamp FROM documents
          WHERE is_active_version AND source_type = ANY($1::text[]) AND doc_id > $2 ORDER BY doc_id LIMIT $3`,
        [[...ORIGINAL_SOURCE_TYPES], after, PAGE],
      )
    ).rows;
    if (page.length === 0) break;
    after = page[page.length - 1].doc_id;
    for (const doc of page) {
      done++;
      const original = await originalOf(deps.db, doc.doc_id);
      if (!original) {
        result.without_original++;
        continue;
      }
      try {
        const bytes = await readObject(deps.store, original.object_key, ORIGINAL_MAX_BYTES);
        const msg = await parseCollectedMessage(bytes);
        const meta = doc.metadata ?? {};
        const storedAt = doc.content_timestamp instanceof Date ? doc.content_timestamp.toISOString().replace(/\.\d{3}Z$/, 'Z') : doc.content_timestamp;
        // A date from outside the message (mbox From line, plist, file time, IMAP) is the stored one.
        const outsideDate = typeof meta.date_source === 'string' && meta.date_source !== 'received';
        if (outsideDate && storedAt && msg.dateSource !== 'date_header') {
          msg.date = storedAt;
          msg.dateSource = meta.date_source === 'imap_internal_date' ? null : (meta.date_source as typeof msg.dateSource);
        }
        const redaction = doc.text.includes('_REDACTED]') ? ALL_REDACTION : NO_REDACTION;
        const built = buildEmailDocument(
          msg,
          {
            sourceType: doc.source_type,
            prefix: doc.source_type === 'email' ? 'email_imap' : 'email',
            redaction,
            mailbox: typeof meta.mailbox === 'string' ? meta.mailbox : null,
            fallbackTimestamp: meta.date_source === 'imap_internal_date' ? storedAt : null,
          },
          { sourceIdOverride: doc.external_id },
        );
        const body = JSON.parse(JSON.stringify(built.document)) as Record<string, unknown>;
        if (!deps.validate(body)) throw new Error(`the rebuilt document is not valid: ${JSON.stringify(deps.validate.errors?.[0] ?? {}).slice(0, 200)}`);
        cleanStrings(body);
        const out = await deps.catalog.ingest(prepareIngest(body as never));
        if (out.skipped) {
          result.unchanged++;
          continue;
        }
        if (out.duplicate) result.unchanged++;
        else result.repaired++;
        // The new version was built from the same bytes.
        await deps.db.transaction((tx) =>
          linkOriginals(tx, deps.store.backend, [{ docId: out.doc_id, kind: original.kind, stored: { sha256: original.file_sha256, objectKey: original.object_key, sizeBytes: original.size_bytes, existed: true } }]),
        );
      } catch (err) {
        fail(doc.doc_id, (err as Error).message);
      }
    }
    opts.onProgress?.(done, result);
    if (page.length < PAGE) break;
  }
  result.duration_ms = Date.now() - started;
  return result;
}
