/**
 * The catalog's internal HTTP API (gateway spec 4.6), mounted under /v1/catalog/* for deployments
 * that split roles. The gateway itself calls the same Catalog in-process.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ROUTES } from '../schemas/routes.ts';
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
  app.route({
    ...ROUTES.catalogStoreEmbeddings,
    handler: async (req) => {
      const body = req.body;
      const items = 'embeddings' in body ? body.embeddings : [body];
      // A refused embedding is an EmbeddingStoreError: 422 in the validation shape, 400, 404 or 409 with its message.
      const r = await storeEmbeddings(db, items);
      return { stored: r.stored, indexed_doc_ids: r.indexedDocIds, chunk_id: items.length === 1 ? items[0].chunk_id : undefined, status: 'embedded' as const };
    },
  });

  app.route({
    ...ROUTES.catalogAddDocument,
    handler: async (req, reply) => {
      const r = await catalog.ingest(req.body as CatalogDocumentRequest);
      return reply.code(r.duplicate || r.skipped ? 200 : 202).send(r);
    },
  });

  app.route({
    ...ROUTES.catalogAddDocuments,
    handler: async (req, reply) => {
      const docs = req.body.documents as CatalogDocumentRequest[];
      const key = req.body.batch_idempotency_key ?? sha256Hex(docs.map((d) => d.idempotency_key).sort().join('|'));
      const r = await catalog.ingestBatch(docs.map((request, index) => ({ index, request })), key);
      return reply.code(r.failure_count === 0 ? 202 : 207).send(r);
    },
  });

  app.route({
    ...ROUTES.catalogAddVersion,
    handler: async (req) => catalog.createVersion(req.params.doc_id, req.body as any),
  });

  app.route({
    ...ROUTES.catalogDocumentStatus,
    handler: async (req) => {
      const s = await documentStatus(catalog.db, req.params.doc_id);
      if (!s) throw new NotFoundError('Document not found');
      return s;
    },
  });

  app.route({
    ...ROUTES.catalogSubmissionStatus,
    handler: async (req) => {
      const s = await submissionStatus(catalog.db, req.params.submission_id);
      if (!s) throw new NotFoundError('Submission not found');
      return s;
    },
  });

  app.route({
    ...ROUTES.catalogDeleteDocument,
    handler: async (req, reply) =>
      reply.code(202).send(await catalog.deleteDocument(req.params.doc_id)),
  });
};
