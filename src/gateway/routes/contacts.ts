/**
 * Contact synchronisation (spec 4.4). The ingest route is registered behind the catalog token
 * (CATALOG_TOKEN, falling back to AUTH_TOKEN: spec-notes A5); the export behind the gateway token.
 */
import { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import { getChangeToken } from '../../people/change-tokens.ts';
import { DEFAULT_CONTACT_SOURCE, ingestContacts } from '../../people/contacts.ts';
import { decodeExportToken, planExport } from '../../identity/records.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { InvalidRequestError } from '../../util/errors.ts';

export const contactIngestRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog }> = async (app, { catalog }) => {
  app.route({
    ...ROUTES.contactsIngest,
    handler: async (req) =>
      ingestContacts(catalog, req.body, {
        // The error code only: messages of constraint errors quote identifiers.
        onCardError: (index, err) => req.log.warn({ index, code: (err as { code?: string }).code ?? 'error' }, 'contact card failed'),
      }),
  });

  app.route({
    ...ROUTES.contactsChangeToken,
    handler: async (req) => {
      const source = req.query.source ?? DEFAULT_CONTACT_SOURCE;
      const t = await getChangeToken(catalog.db, source, req.query.device_id);
      return { source, device_id: req.query.device_id, change_token: t?.change_token ?? null, updated_at: t?.updated_at ?? null };
    },
  });
};

export const contactExportRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog }> = async (app, { catalog }) => {
  app.route({
    ...ROUTES.contactsExport,
    handler: async (req, reply) => {
      let since: string | null = null;
      if (req.query.since_token !== undefined && !req.query.full) {
        since = decodeExportToken(req.query.since_token);
        if (!since) {
          throw new InvalidRequestError({ loc: ['query', 'since_token'], msg: 'since_token is not a token this server issued nor an ISO 8601 timestamp' });
        }
      }
      const plan = await planExport(catalog.db, { since, full: req.query.full ?? false });
      async function* lines() {
        for await (const person of plan.pages) yield `${JSON.stringify(person)}\n`;
      }
      reply.header('content-type', 'application/x-ndjson; charset=utf-8');
      if (plan.nextToken) reply.header('x-since-token-next', plan.nextToken);
      return reply.send(Readable.from(lines(), { objectMode: false, highWaterMark: 64 * 1024 }) as any);
    },
  });
};
