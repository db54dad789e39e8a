/**
 * The catalog's internal HTTP API (gateway spec 4.6), mounted under /v1/catalog/* for deployments
 * that split roles. The gateway itself calls the same Catalog in-process.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  CatalogBatch,
  CatalogBatchResponse,
  CatalogDeleteResponse,
  CatalogDocParams,
  CatalogDocument,
  CatalogDocumentStatus,
  CatalogEmbeddingsRequest,
  CatalogEmbeddingsResponse,
  CatalogIngestResponse,
  CatalogSubmissionParams,
  CatalogVersionRequest,
  CatalogVersionResponse,
} from '../schemas/catalog.ts';
import { DiskFullBody, ErrorMessage, ValidationErrorBody } from '../schemas/common.ts';
import { IngestStatusResponse } from '../schemas/ingest.ts';
import { sha256Hex } from '../util/hash.ts';
import type { Database } from '../db/types.ts';
import { storeEmbeddings } from '../embedding/index.ts';
import type { Catalog } from './catalog.ts';
import { documentStatus, submissionStatus } from './status.ts';
import type { CatalogDocumentRequest } from './types.ts';
import { NotFoundError } from '../util/errors.ts';

export const catalogRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog; db: Database }> = async (
  app,
  { catalog, db },
) => {
  app.post(
    '/v1/catalog/embeddings',
    {
      schema: {
        tags: ['catalog'],
        summary: 'Store chunk vectors; documents whose chunks all have one become indexed',
        body: CatalogEmbeddingsRequest,
        response: { 200: CatalogEmbeddingsResponse, 400: ErrorMessage, 404: ErrorMessage, 409: ErrorMessage, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const body = req.body;
      const items = 'embeddings' in body ? body.embeddings : [body];
      // A refused embedding is an EmbeddingStoreError: 422 in the validation shape, 400, 404 or 409 with its message.
      const r = await storeEmbeddings(db, items);
      return { stored: r.stored, indexed_doc_ids: r.indexedDocIds, chunk_id: items.length === 1 ? items[0].chunk_id : undefined, status: 'embedded' as const };
    },
  );

  app.post(
    '/v1/catalog/documents',
    {
      schema: {
        tags: ['catalog'],
        summary: 'Idempotent insertion of one document (202 stored, 200 already stored or kept out)',
        body: CatalogDocument,
        response: { 200: CatalogIngestResponse, 202: CatalogIngestResponse, 422: ValidationErrorBody, 507: DiskFullBody },
      },
    },
    async (req, reply) => {
      const r = await catalog.ingest(req.body as CatalogDocumentRequest);
      return reply.code(r.duplicate || r.skipped ? 200 : 202).send(r);
    },
  );

  app.post(
    '/v1/catalog/documents/batch',
    {
      schema: {
        tags: ['catalog'],
        summary: 'Batch insertion with a batch record (202 all stored, 207 some failed)',
        body: CatalogBatch,
        response: { 202: CatalogBatchResponse, 207: CatalogBatchResponse, 422: ValidationErrorBody },
      },
    },
    async (req, reply) => {
      const docs = req.body.documents as CatalogDocumentRequest[];
      const key = req.body.batch_idempotency_key ?? sha256Hex(docs.map((d) => d.idempotency_key).sort().join('|'));
      const r = await catalog.ingestBatch(docs.map((request, index) => ({ index, request })), key);
      return reply.code(r.failure_count === 0 ? 202 : 207).send(r);
    },
  );

  app.patch(
    '/v1/catalog/documents/:doc_id/version',
    {
      schema: {
        tags: ['catalog'],
        summary: 'A new version of a document (404 unknown, 409 not the active version)',
        params: CatalogDocParams,
        body: CatalogVersionRequest,
        response: { 200: CatalogVersionResponse, 404: ErrorMessage, 409: ErrorMessage, 422: ValidationErrorBody },
      },
    },
    async (req) => catalog.createVersion(req.params.doc_id, req.body as any),
  );

  app.get(
    '/v1/catalog/documents/:doc_id/status',
    {
      schema: {
        tags: ['catalog'],
        summary: 'Status and chunk counts of a document',
        params: CatalogDocParams,
        response: { 200: CatalogDocumentStatus, 404: ErrorMessage, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const s = await documentStatus(catalog.db, req.params.doc_id);
      if (!s) throw new NotFoundError('Document not found');
      return s;
    },
  );

  app.get(
    '/v1/catalog/submissions/:submission_id',
    {
      schema: {
        tags: ['catalog'],
        summary: 'Submission (or batch) state and embedding progress',
        params: CatalogSubmissionParams,
        response: { 200: IngestStatusResponse, 404: ErrorMessage, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const s = await submissionStatus(catalog.db, req.params.submission_id);
      if (!s) throw new NotFoundError('Submission not found');
      return s;
    },
  );

  app.delete(
    '/v1/catalog/documents/:doc_id',
    {
      schema: {
        tags: ['catalog'],
        summary: 'Soft-delete a document (accepted: 202)',
        params: CatalogDocParams,
        response: { 202: CatalogDeleteResponse, 404: ErrorMessage, 422: ValidationErrorBody },
      },
    },
    async (req, reply) =>
    reply.code(202).send(await catalog.deleteDocument(req.params.doc_id)),
  );
};
