/** Document routes of the gateway (spec 4.2). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import { DetailMessage as NotFound, ValidationErrorBody } from '../../schemas/common.ts';
import {
  DocIdParams,
  DocumentListQuery,
  DocumentListResponse,
  type DocumentListItemT,
  DocumentUpdateRequest,
  DocumentUpdateResponse,
  DocumentViewQuery,
  DocumentViewResponse,
  StoredDocument,
  type StoredDocumentT,
} from '../../schemas/documents.ts';
import { documentView } from '../../catalog/document-view.ts';
import { getDocument, listDocuments } from '../../catalog/reads.ts';
import { parseFilters } from '../../catalog/filters.ts';
import { NotFoundError } from '../../util/errors.ts';


export const documentRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog; phoneRegion?: string }> = async (app, { catalog, phoneRegion }) => {
  app.get(
    '/v1/documents',
    {
      schema: {
        tags: ['documents'],
        summary: 'Active documents, newest first, narrowed by the filters of GET /v1/search',
        querystring: DocumentListQuery,
        response: { 200: DocumentListResponse, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const { start_date, end_date, person, source_type, has_attachments, thread_id, person_id, limit, offset } = req.query;
      // has_attachments=false is the declared default (spec 4.2): the same as leaving it out, no filter.
      const attachments = has_attachments ? true : undefined;
      // A filter value it cannot read is a FilterError: 422 at ['query', field] through the shared error mapping.
      const filters = parseFilters({ start_date, end_date, person, source_type, has_attachments: attachments, thread_id }, phoneRegion);
      const q = req.query;
      const { documents, total } = await listDocuments(catalog.db, { ...filters, person_id, limit, offset });
      return { documents: documents as DocumentListItemT[], count: documents.length, total, limit: q.limit, offset: q.offset };
    },
  );

  app.get(
    '/v1/doc/:doc_id',
    {
      schema: {
        tags: ['documents'],
        summary: 'The stored document record (any version, by id)',
        params: DocIdParams,
        response: { 200: StoredDocument, 404: NotFound, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const doc = await getDocument(catalog.db, req.params.doc_id);
      if (!doc) throw new NotFoundError('Document not found');
      return doc as StoredDocumentT;
    },
  );

  app.get(
    '/v1/doc/:doc_id/view',
    {
      schema: {
        tags: ['documents'],
        summary: 'A document with its linked people, versions and neighbouring thread messages (the web UI\'s document view)',
        params: DocIdParams,
        querystring: DocumentViewQuery,
        response: { 200: DocumentViewResponse, 404: NotFound, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const view = await documentView(catalog.db, req.params.doc_id, req.query.chunk_id);
      if (!view) throw new NotFoundError('Document not found');
      return view;
    },
  );

  app.patch(
    '/v1/documents/:doc_id',
    {
      schema: {
        tags: ['documents'],
        summary: 'Edit text and metadata: creates a new version and queues its chunks for embedding',
        params: DocIdParams,
        body: DocumentUpdateRequest,
        response: { 200: DocumentUpdateResponse, 404: NotFound, 409: NotFound, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const b = req.body;
      const v = await catalog.createVersion(req.params.doc_id, {
        text: b.text,
        metadata: b.metadata,
        requeue: b.requeue_for_embedding ?? true,
      });
      return {
        doc_id: v.doc_id,
        status: 'updated',
        chunks_requeued: v.chunks_queued,
        previous_version_id: v.previous_version_id,
        version_number: v.version_number,
      };
    },
  );
};

