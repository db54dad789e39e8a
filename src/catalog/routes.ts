/**
 * The catalog's internal HTTP API (gateway spec 4.6), mounted under /v1/catalog/* for deployments
 * that split roles. The gateway itself calls the same Catalog in-process.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { CatalogBatch, CatalogDocument, CatalogVersionRequest } from '../schemas/catalog.ts';
import { sha256Hex } from '../util/hash.ts';
import type { Database } from '../db/types.ts';
import { EmbeddingStoreError, storeEmbeddings } from '../embedding/index.ts';
import type { Catalog } from './catalog.ts';
import type { CatalogDocumentRequest } from './types.ts';

const DocParams = Type.Object({ doc_id: Type.String({ format: 'uuid' }) });

const EmbeddingItem = Type.Object({
  chunk_id: Type.String({ format: 'uuid' }),
  model: Type.String({ minLength: 1 }),
  vector: Type.Array(Type.Number(), { minItems: 1, maxItems: 8192 }),
  dimensions: Type.Optional(Type.Integer({ minimum: 1 })),
});
/** One embedding (spec-notes A4.6) or several at once. */
const EmbeddingsBody = Type.Union([
  EmbeddingItem,
  Type.Object({ embeddings: Type.Array(EmbeddingItem, { minItems: 1, maxItems: 1000 }) }),
]);

export const catalogRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog; db: Database }> = async (
  app,
  { catalog, db },
) => {
  app.post('/v1/catalog/embeddings', { schema: { tags: ['catalog'], body: EmbeddingsBody } }, async (req, reply) => {
    const body = req.body as any;
    const items = 'embeddings' in body ? body.embeddings : [body];
    try {
      const r = await storeEmbeddings(db, items);
      return { stored: r.stored, indexed_doc_ids: r.indexedDocIds, chunk_id: items.length === 1 ? items[0].chunk_id : undefined, status: 'embedded' };
    } catch (err) {
      if (err instanceof EmbeddingStoreError) {
        // Every 422 carries the validation shape; the other statuses (400, 404, 409) keep a message.
        if (err.status === 422) return reply.code(422).send({ detail: [{ loc: ['body'], msg: err.message, type: 'value_error' }] });
        return reply.code(err.status).send({ detail: err.message });
      }
      throw err;
    }
  });

  app.post('/v1/catalog/documents', { schema: { tags: ['catalog'], body: CatalogDocument } }, async (req, reply) => {
    const r = await catalog.ingest(req.body as CatalogDocumentRequest);
    return reply.code(r.duplicate ? 200 : 202).send(r);
  });

  app.post('/v1/catalog/documents/batch', { schema: { tags: ['catalog'], body: CatalogBatch } }, async (req, reply) => {
    const docs = req.body.documents as CatalogDocumentRequest[];
    const key = req.body.batch_idempotency_key ?? sha256Hex(docs.map((d) => d.idempotency_key).sort().join('|'));
    const r = await catalog.ingestBatch(docs.map((request, index) => ({ index, request })), key);
    return reply.code(r.failure_count === 0 ? 202 : 207).send(r);
  });

  app.patch(
    '/v1/catalog/documents/:doc_id/version',
    { schema: { tags: ['catalog'], params: DocParams, body: CatalogVersionRequest } },
    async (req) => catalog.createVersion(req.params.doc_id, req.body as any),
  );

  app.get(
    '/v1/catalog/documents/:doc_id/status',
    { schema: { tags: ['catalog'], params: DocParams } },
    async (req, reply) => {
      const s = await catalog.documentStatus(req.params.doc_id);
      return s ?? reply.code(404).send({ detail: 'Document not found' });
    },
  );

  app.get(
    '/v1/catalog/submissions/:submission_id',
    { schema: { tags: ['catalog'], params: Type.Object({ submission_id: Type.String({ format: 'uuid' }) }) } },
    async (req, reply) => {
      const s = await catalog.submissionStatus(req.params.submission_id);
      return s ?? reply.code(404).send({ detail: 'Submission not found' });
    },
  );

  app.delete(
    '/v1/catalog/documents/:doc_id',
    {
      schema: {
        tags: ['catalog'],
        summary: 'Soft-delete a document (accepted: 202)',
        params: DocParams,
        response: { 202: Type.Object({}, { additionalProperties: true }) },
      },
    },
    async (req, reply) =>
    reply.code(202).send(await catalog.deleteDocument(req.params.doc_id)),
  );
};
