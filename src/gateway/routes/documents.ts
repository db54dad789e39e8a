/** Document routes of the gateway (spec 4.2). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import { type DocumentListItemT, type StoredDocumentT } from '../../schemas/documents.ts';
import { documentView } from '../../catalog/document-view.ts';
import { getDocument, listDocuments } from '../../catalog/reads.ts';
import { FilterError, parseFilters } from '../../catalog/filters.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { NotFoundError } from '../../util/errors.ts';


export const documentRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog; phoneRegion?: string }> = async (app, { catalog, phoneRegion }) => {
  app.route({
    ...ROUTES.listDocuments,
    handler: async (req) => {
      const { start_date, end_date, person, source_type, has_attachments, thread_id, person_id, limit, offset } = req.query;
      // has_attachments=false is the declared default (spec 4.2): the same as leaving it out, no filter.
      const attachments = has_attachments ? true : undefined;
      // A filter value it cannot read is a FilterError: 422 at ['query', field] through the shared error mapping.
      const filters = parseFilters({ start_date, end_date, person, source_type, has_attachments: attachments, thread_id }, phoneRegion);
      const q = req.query;
      const { documents, total } = await listDocuments(catalog.db, { ...filters, person_id, limit, offset });
      return { documents: documents as DocumentListItemT[], count: documents.length, total, limit: q.limit, offset: q.offset };
    },
  });

  app.route({
    ...ROUTES.getDocument,
    handler: async (req) => {
      const doc = await getDocument(catalog.db, req.params.doc_id);
      if (!doc) throw new NotFoundError('Document not found');
      return doc as StoredDocumentT;
    },
  });

  app.route({
    ...ROUTES.documentView,
    handler: async (req) => {
      const view = await documentView(catalog.db, req.params.doc_id, req.query.chunk_id);
      if (!view) throw new NotFoundError('Document not found');
      return view;
    },
  });

  app.route({
    ...ROUTES.updateDocument,
    handler: async (req) => {
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
  });
};

