/** Calendar ingest (issue 42): `memex import FILE.ics` and the agent's calendar sources post here. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import { ingestCalendar } from '../../calendar/store.ts';
import { ValidationErrorBody } from '../../schemas/common.ts';
import { CalendarIngestRequest, CalendarIngestResponse } from '../../schemas/calendar.ts';

export const calendarRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog }> = async (app, { catalog }) => {
  app.post(
    '/v1/calendar/ingest',
    {
      schema: {
        tags: ['ingest'],
        summary: 'Store calendar events and tasks (documents) and the occurrences of recurring events',
        body: CalendarIngestRequest,
        response: { 200: CalendarIngestResponse, 422: ValidationErrorBody },
      },
    },
    async (req) => ingestCalendar(catalog, req.body.items),
  );
};
