/**
 * Calendars (issue 42): ingest (`memex import FILE.ics` and the agent's calendar sources post here) and the agenda,
 * what happens between two instants (docs/calendar.md).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import { agenda } from '../../calendar/agenda.ts';
import { ingestCalendar } from '../../calendar/store.ts';
import { AGENDA_MAX_DAYS } from '../../schemas/calendar.ts';
import { parseTimestamp } from '../../util/timestamp.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { InvalidRequestError } from '../../util/errors.ts';

export const calendarRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog }> = async (app, { catalog }) => {
  app.route({
    ...ROUTES.calendarAgenda,
    handler: async (req) => {
      // The schema checked both are timestamps (a date alone is its day's 00:00 UTC).
      const from = parseTimestamp(req.query.from)!;
      const to = parseTimestamp(req.query.to)!;
      const refuse = (msg: string) => new InvalidRequestError({ loc: ['query', 'to'], msg });
      if (to.getTime() <= from.getTime()) throw refuse('to must be after from');
      if (to.getTime() - from.getTime() > AGENDA_MAX_DAYS * 86_400_000) throw refuse(`the range may be at most ${AGENDA_MAX_DAYS} days`);
      return agenda(catalog.db, from, to);
    },
  });

  app.route({
    ...ROUTES.calendarIngest,
    handler: async (req) => ingestCalendar(catalog, req.body.items),
  });
};
