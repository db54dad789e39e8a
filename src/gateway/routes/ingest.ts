/** Ingestion routes of the gateway (spec 4.1): single documents, batches, status. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { batchKeyOf, type Catalog } from '../../catalog/catalog.ts';
import { submissionStatus } from '../../catalog/status.ts';
import type { CatalogDocumentRequest, CatalogIngestResult } from '../../catalog/types.ts';
import { type ValidationErrorItemT } from '../../schemas/common.ts';
import { IngestRequest, type BatchItemResultT, type IngestSubmissionResponseT } from '../../schemas/ingest.ts';
import { cleanStrings } from '../../util/json-input.ts';
import { errorEnvelope } from '../errors.ts';
import { CLEAN_ITEMS_IN_HANDLER } from '../input-guard.ts';
import { PrepareError, prepareIngest } from '../../catalog/prepare.ts';
import { compileBodyValidator, toValidationDetail } from '../validation.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { NotFoundError } from '../../util/errors.ts';

// A batch is checked in two steps (spec 4.1 rules 3–4, §7): the request must be a batch (an object
// whose `documents` is an array of 1–1000 objects, else the whole request is a 422), then every
// item is validated on its own against IngestRequest, so one bad item fails alone. The OpenAPI
// document still shows the items as IngestRequest.
const BatchEnvelope = Type.Object({
  documents: Type.Array(Type.Object({}), { minItems: 1, maxItems: 1000 }),
});
const validateBatchEnvelope = compileBodyValidator(BatchEnvelope);
const validateItem = compileBodyValidator(IngestRequest);

/** Item `index`'s failure in the batch result shape: the 422 items with `loc` into that item. */
function itemFailure(index: number, status: number, code: string, message: string, detail: ValidationErrorItemT[]): BatchItemResultT {
  const located = detail.map((d) => ({ ...d, loc: ['body', 'documents', index, ...d.loc.slice(1)] }));
  return {
    index,
    status_code: status,
    content_sha256: null,
    submission: null,
    error: errorEnvelope(code, message, status, 'gw_ingest_batch', { loc: located[0]?.loc, detail: located }),
  };
}

export function toSubmissionResponse(r: CatalogIngestResult): IngestSubmissionResponseT {
  return {
    submission_id: r.submission_id,
    doc_id: r.doc_id,
    external_id: r.external_id,
    version_number: r.version_number,
    status: r.status,
    thread_id: r.thread_id,
    file_ids: r.file_ids,
    duplicate: r.duplicate,
    ...(r.skipped ? { skipped: r.skipped } : {}),
    total_chunks: r.total_chunks,
  };
}


export const ingestRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog }> = async (app, { catalog }) => {
  app.route({
    ...ROUTES.ingest,
    handler: async (req, reply) => {
      const prepared = prepareIngest(req.body);
      const result = await catalog.ingest(prepared);
      reply.header('x-content-sha256', prepared.content_sha256);
      return reply.code(result.duplicate || result.skipped ? 200 : 202).send(toSubmissionResponse(result));
    },
  });

  app.route({
    ...ROUTES.ingestBatch,
    config: CLEAN_ITEMS_IN_HANDLER,
    validatorCompiler: ({ httpPart }) =>
      (httpPart === 'body' ? validateBatchEnvelope : () => true) as ReturnType<typeof compileBodyValidator>,
    handler: async (req, reply) => {
      const docs = req.body.documents;
      const results: BatchItemResultT[] = [];
      const prepared: { index: number; request: CatalogDocumentRequest }[] = [];
      docs.forEach((doc, index) => {
        if (!validateItem(doc)) {
          const detail = toValidationDetail(validateItem.errors ?? [], 'body');
          results.push(itemFailure(index, 422, 'INGEST.VALIDATION_ERROR', 'invalid document', detail));
          return;
        }
        cleanStrings(doc);
        try {
          prepared.push({ index, request: prepareIngest(doc) });
        } catch (err) {
          if (!(err instanceof PrepareError)) throw err;
          results.push(itemFailure(index, err.status, err.code, err.message, [{ loc: err.loc, msg: err.message, type: err.type }]));
        }
      });

      // One document: the single-document flow (spec 4.1 rule 3), reported in the batch shape.
      if (docs.length === 1) {
        if (prepared.length === 1) {
          const r = await catalog.ingest(prepared[0].request);
          results.push({
            index: 0,
            status_code: r.duplicate || r.skipped ? 200 : 202,
            content_sha256: prepared[0].request.content_sha256,
            submission: toSubmissionResponse(r),
            error: null,
          });
        }
        const ok = results[0].error === null;
        return reply.code(ok ? 202 : 207).send({
          batch_id: null,
          batch_status: ok ? 'completed' : 'failed',
          total_count: 1,
          success_count: ok ? 1 : 0,
          failure_count: ok ? 0 : 1,
          results,
        });
      }

      const failedEarly = results.length;
      const batch = prepared.length
        ? await catalog.ingestBatch(prepared, batchKeyOf(prepared.map((p) => p.request)), failedEarly)
        : null;
      const shaOf = new Map(prepared.map((p) => [p.index, p.request.content_sha256]));
      for (const item of batch?.items ?? []) {
        results.push(
          item.ok
            ? {
                index: item.index,
                status_code: item.result!.duplicate || item.result!.skipped ? 200 : 202,
                content_sha256: shaOf.get(item.index) ?? null,
                submission: toSubmissionResponse(item.result!),
                error: null,
              }
            : {
                index: item.index,
                status_code: item.error!.status,
                content_sha256: shaOf.get(item.index) ?? null,
                submission: null,
                error: errorEnvelope(item.error!.code, item.error!.message, item.error!.status, 'gw_ingest_batch'),
              },
        );
      }
      results.sort((a, b) => a.index - b.index);
      const success = results.filter((r) => r.error === null).length;
      const failure = results.length - success;
      return reply.code(failure === 0 ? 202 : 207).send({
        batch_id: batch?.batch_id ?? null,
        batch_status: (batch?.batch_status as 'completed' | 'partial' | 'failed') ?? 'failed',
        total_count: results.length,
        success_count: success,
        failure_count: failure,
        results,
      });
    },
  });

  app.route({
    ...ROUTES.submissionStatus,
    handler: async (req) => {
      const status = await submissionStatus(catalog.db, req.params.submission_id);
      if (!status) throw new NotFoundError('Submission not found');
      return status;
    },
  });
};

