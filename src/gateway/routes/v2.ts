/**
 * v2 envelope ingestion (gateway spec 2.8, 4.1; spec-notes A2.8, A4.1): the envelope is validated
 * (schema_version 2.x, kind matching the route, source, payload) and the payload handed to the
 * catalog as it is. Documents answer IngestSubmissionResponse (202 new / 200 duplicate), persons
 * PersonIngestResponse. A batch is an array of envelopes, each validated and stored on its own.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import type { CatalogDocumentRequest } from '../../catalog/types.ts';
import { upsertPerson } from '../../people/upsert.ts';
import { personFromV2, v2PeopleSource, type PersonPayloadV2 } from '../../people/v2-person.ts';
import { SOURCE_TYPES, THREAD_SOURCE_TYPES, type ValidationErrorItemT } from '../../schemas/common.ts';
import { DocumentEnvelope, PersonEnvelope, type DocumentEnvelopeT, type PersonEnvelopeT, type PersonIngestResponseT, type V2BatchItemT } from '../../schemas/v2.ts';
import { normaliseText, sha256Hex } from '../../util/hash.ts';
import { cleanStrings } from '../../util/json-input.ts';
import { errorEnvelope } from '../errors.ts';
import { compileBodyValidator } from '../validation.ts';
import { CLEAN_ITEMS_IN_HANDLER } from '../input-guard.ts';
import { toUtcIso } from '../../util/timestamp.ts';
import { accountKeyPart, PrepareError } from '../../catalog/prepare.ts';
import { toValidationDetail } from '../validation.ts';
import { MemexError, type ErrorCode } from '../../util/errors.ts';
import { toSubmissionResponse } from './ingest.ts';
import { sendBatchResults } from '../batch-reply.ts';
import { DISK_FULL_CODE, DISK_FULL_STATUS, diskFullMessage, fullDiskOf, noteDiskFull } from '../../util/disk-full.ts';
import { ROUTES } from '../../schemas/routes.ts';


/** Failure of one envelope: a status and a 422-style detail list or a message. */
export class EnvelopeError extends MemexError {
  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    readonly detail: ValidationErrorItemT[] | null = null,
  ) {
    super(message, code, status);
  }
}

// Batch items are validated here with the same rules the single routes get from Fastify (compiled at first use).
const validateDocument = compileBodyValidator(DocumentEnvelope);
const validatePerson = compileBodyValidator(PersonEnvelope);

/** The catalog request of a v2 document; idempotency from source type, external id and text hash. */
export function prepareV2Document(env: DocumentEnvelopeT): CatalogDocumentRequest {
  const p = env.payload;
  if (!(SOURCE_TYPES as readonly string[]).includes(env.source.source_type)) {
    throw new EnvelopeError(422, 'INGEST.INVALID_ENVELOPE', 'unknown source_type', [
      { loc: ['body', 'source', 'source_type'], msg: `Input should be one of: ${SOURCE_TYPES.join(', ')}`, type: 'enum' },
    ]);
  }
  const text = normaliseText(p.text);
  if (!text) {
    throw new EnvelopeError(422, 'INGEST.EMPTY_TEXT', 'payload.text is empty', [
      { loc: ['body', 'payload', 'text'], msg: 'payload.text is empty after normalisation', type: 'value_error.empty' },
    ]);
  }
  const textSha = p.text_sha256?.toLowerCase() ?? sha256Hex(p.text);
  const rel = p.relationships ?? {};
  const threadExternal = p.thread?.external_id ?? (rel.thread_id && !isUuidLike(rel.thread_id) ? rel.thread_id : null);
  const threadAllowed = (THREAD_SOURCE_TYPES as readonly string[]).includes(env.source.source_type);
  const f = p.facets ?? {};
  const overrides: { has_attachments?: boolean; attachment_count?: number } = {};
  if (typeof f.has_attachments === 'boolean') overrides.has_attachments = f.has_attachments;
  if (typeof f.attachment_count === 'number') overrides.attachment_count = f.attachment_count;
  return {
    idempotency_key: sha256Hex(`${env.source.source_type}:${p.external_id}:${textSha}${accountKeyPart(env.source.source_account_id)}`),
    source_type: env.source.source_type,
    source_provider: env.source.source_provider ?? null,
    source_account_id: env.source.source_account_id ?? null,
    source_id: p.external_id,
    external_id: p.external_id,
    content_sha256: textSha,
    text,
    title: p.title ?? null,
    mime_type: p.mime_type ?? 'text/plain',
    canonical_uri: p.canonical_uri ?? null,
    content_timestamp: toUtcIso(p.content_timestamp)!,
    content_timestamp_type: p.content_timestamp_type,
    content_created_at: toUtcIso(p.content_created_at),
    content_modified_at: toUtcIso(p.content_modified_at),
    people: (p.people ?? []).map((r) => ({ ...r })),
    thread_id: rel.thread_id && isUuidLike(rel.thread_id) ? rel.thread_id : null,
    thread:
      threadAllowed && (p.thread || threadExternal)
        ? {
            external_id: threadExternal ?? p.external_id,
            thread_type: p.thread?.thread_type ?? null,
            is_group: p.thread?.is_group ?? null,
            title: p.thread?.title ?? null,
            participants: p.thread?.participants ?? [],
            metadata: p.thread?.metadata ?? {},
          }
        : null,
    parent_doc_id: rel.parent_doc_id ?? null,
    source_doc_ids: rel.source_doc_ids ?? [],
    related_doc_ids: rel.related_doc_ids ?? [],
    has_location: f.has_location ?? null,
    has_due_date: f.has_due_date ?? null,
    due_date: toUtcIso(f.due_date),
    is_completed: f.is_completed ?? null,
    completed_at: toUtcIso(f.completed_at),
    facet_overrides: Object.keys(overrides).length ? overrides : null,
    metadata: p.metadata ?? {},
    intent: p.intent ?? null,
  };
}

function isUuidLike(s: string): boolean {
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
}

/** Upserts a v2 person through the people tables; stale versions are a 409. */
export async function ingestPersonEnvelope(catalog: Catalog, env: PersonEnvelopeT): Promise<PersonIngestResponseT> {
  const source = v2PeopleSource(env.source);
  const card = personFromV2(env.payload as PersonPayloadV2, catalog.phoneRegion);
  const blockedAs = { source_type: env.source.source_type, source_account_id: env.source.source_account_id ?? null };
  const outcome = await catalog.db.transaction((tx) => upsertPerson(tx, source, card, blockedAs));
  if (outcome.status === 'blocked') {
    return { person_id: null, external_id: card.external_id, version: card.version, status: 'skipped', deleted: false, skipped: outcome.skipped };
  }
  if (outcome.status === 'stale') {
    throw new EnvelopeError(409, 'PEOPLE.STALE_VERSION', `version ${card.version} is older than the stored version`);
  }
  if (!outcome.person_id) throw new EnvelopeError(404, 'PEOPLE.NOT_FOUND', 'no person with this external_id to delete');
  const deleted = outcome.status === 'deleted' || outcome.status === 'delete_unknown';
  return {
    person_id: outcome.person_id,
    external_id: card.external_id,
    version: card.version,
    status: deleted ? 'deleted' : 'upserted',
    deleted,
  };
}

/** Validation errors of batch item `index`, located as body[index].… */
function detailOf(errors: Parameters<typeof toValidationDetail>[0] | null | undefined, index: number): ValidationErrorItemT[] {
  return toValidationDetail(errors ?? [], 'body').map((d) => ({ ...d, loc: ['body', index, ...d.loc.slice(1)] }));
}

export const v2Routes: FastifyPluginAsyncTypebox<{ catalog: Catalog }> = async (app, { catalog }) => {
  app.route({
    ...ROUTES.v2IngestDocument,
    handler: async (req, reply) => {
      let prepared: CatalogDocumentRequest;
      try {
        prepared = prepareV2Document(req.body);
      } catch (err) {
        rethrow(err);
      }
      const result = await catalog.ingest(prepared);
      return reply.code(result.duplicate || result.skipped ? 200 : 202).send(toSubmissionResponse(result));
    },
  });

  app.route({
    ...ROUTES.v2IngestPerson,
    handler: async (req) => {
      try {
        return await ingestPersonEnvelope(catalog, req.body);
      } catch (err) {
        rethrow(err);
      }
    },
  });

  app.route({
    ...ROUTES.v2IngestBatch,
    config: CLEAN_ITEMS_IN_HANDLER,
    handler: async (req, reply) => {
      const results: V2BatchItemT[] = [];
      for (const [index, env] of (req.body as unknown[]).entries()) {
        results.push(await batchItem(catalog, index, env));
      }
      return sendBatchResults(reply, results);
    },
  });
};

async function batchItem(catalog: Catalog, index: number, env: unknown): Promise<V2BatchItemT> {
  const declared = env && typeof env === 'object' ? (env as { kind?: unknown }).kind : undefined;
  const kind = typeof declared === 'string' ? declared : null;
  const fail = (status: number, code: string, message: string, detail: ValidationErrorItemT[] | null = null): V2BatchItemT => ({
    index,
    kind,
    status_code: status,
    document: null,
    person: null,
    error: errorEnvelope(code, message, status, 'gw_ingest_v2_batch', detail ? { detail } : {}),
  });
  try {
    if (kind === 'document') {
      // Ajv fills defaults in place: validate a copy so the caller's object stays as sent.
      const copy = structuredClone(env);
      if (!validateDocument(copy)) return fail(422, 'INGEST.INVALID_ENVELOPE', 'invalid document envelope', detailOf(validateDocument.errors, index));
      cleanStrings(copy);
      const r = await catalog.ingest(prepareV2Document(copy as DocumentEnvelopeT));
      return { index, kind, status_code: r.duplicate || r.skipped ? 200 : 202, document: toSubmissionResponse(r), person: null, error: null };
    }
    if (kind === 'person') {
      const copy = structuredClone(env);
      if (!validatePerson(copy)) return fail(422, 'INGEST.INVALID_ENVELOPE', 'invalid person envelope', detailOf(validatePerson.errors, index));
      cleanStrings(copy);
      const r = await ingestPersonEnvelope(catalog, copy as PersonEnvelopeT);
      return { index, kind, status_code: 200, document: null, person: r, error: null };
    }
    return fail(422, 'INGEST.INVALID_ENVELOPE', 'kind must be document or person', [
      { loc: ['body', index, 'kind'], msg: 'Input should be one of: document, person', type: 'enum' },
    ]);
  } catch (err) {
    if (err instanceof EnvelopeError) return fail(err.status, err.code, err.message, err.detail);
    if (err instanceof PrepareError) return fail(err.status, err.code, err.message);
    const e = err as { status?: number; code?: string; message?: string };
    if (typeof e.status === 'number' && e.status < 500) return fail(e.status, e.code ?? 'INGEST.REJECTED', e.message ?? 'rejected');
    const full = fullDiskOf(err);
    if (full) {
      noteDiskFull(full);
      return fail(DISK_FULL_STATUS, DISK_FULL_CODE, diskFullMessage(full));
    }
    return fail(500, 'INGEST.BATCH_UNEXPECTED_ERROR', 'unexpected error while cataloging');
  }
}

/** Single routes answer through the shared error handler (422 detail list, or detail + error envelope). */
function rethrow(err: unknown): never {
  if (err instanceof EnvelopeError) {
    const d = err.detail?.[0];
    throw new PrepareError(err.status, err.code, d?.msg ?? err.message, d?.loc ?? ['body'], d?.type ?? 'value_error');
  }
  throw err;
}
