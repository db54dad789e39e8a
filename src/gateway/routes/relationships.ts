/**
 * Relationship ranking (spec 4.5) and the self-person admin routes (spec 2.6: the self person is
 * detected automatically and can be overridden by a stored setting).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { displayNameOf, resolvePerson } from '../../relationships/people.ts';
import type { RelationshipService } from '../../relationships/service.ts';
import {
  clearSelfSetting,
  detectSelf,
  personByIdentifier,
  readSelfSetting,
  resolveSelf,
  writeSelfSetting,
} from '../../relationships/self.ts';
import { newestMessageAt, parseWindow, topRelationships, topRelationshipsAsOf } from '../../relationships/top.ts';
import { parseTimestamp } from '../../util/timestamp.ts';
import { DEFAULT_WINDOW, MAX_WINDOW_DAYS } from '../../schemas/relationships.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { InvalidRequestError, NotFoundError } from '../../util/errors.ts';

function windowError(raw: string) {
  return new InvalidRequestError({
    loc: ['query', 'window'],
    msg: `window must look like <days>d with 1 to ${MAX_WINDOW_DAYS} days (e.g. 90d) or be all, got "${raw.slice(0, 32)}"`,
  });
}

/** GET /v1/crm/relationships/top; registered in a scope whose guard app.ts chooses (spec 5.4). */
export const relationshipRoutes: FastifyPluginAsyncTypebox<{ service: RelationshipService }> = async (app, { service }) => {
  app.route({
    ...ROUTES.topRelationships,
    handler: async (req) => {
      const q = req.query;
      const raw = q.window ?? DEFAULT_WINDOW;
      const days = parseWindow(raw);
      if (days === null) throw windowError(raw);
      let asOf: Date | null = null;
      if (q.as_of !== undefined) {
        const v = q.as_of.trim().toLowerCase();
        asOf = v === 'latest' ? ((await newestMessageAt(service.db)) ?? new Date()) : parseTimestamp(q.as_of);
        if (!asOf) {
          throw new InvalidRequestError({ loc: ['query', 'as_of'], msg: 'as_of must be latest or an ISO 8601 date or date-time' });
        }
      }
      let selfId: string | null;
      if (q.self_person_id) {
        selfId = await resolvePerson(service.db, q.self_person_id);
        if (!selfId) throw new NotFoundError(`Self person ${q.self_person_id} not found`);
      } else {
        // No self person known: the edges of every self (those asked for by id before).
        selfId = (await service.self())?.person_id ?? null;
      }
      if (selfId) await service.ensureEdges(selfId);
      const limit = q.limit ?? 50;
      const offset = q.offset ?? 0;
      const ask = {
        days,
        limit,
        offset,
        personId: q.person_id,
        includeAutomated: q.include_automated ?? false,
        goneQuiet: q.gone_quiet ?? false,
        excludePersons: await ownerBesides(service, selfId),
      };
      // As of a moment: the ranking as it stood then, computed now (an archive's circle); else the stored edges.
      const top =
        asOf && selfId
          ? await topRelationshipsAsOf(service.db, selfId, { ...ask, asOf, halfLifeDays: service.config.halfLifeDays })
          : await topRelationships(service.db, selfId, { ...ask, now: asOf ?? undefined });
      return { self_person_id: selfId, ...top, window: Number.isFinite(days) ? `${days}d` : 'all', limit, offset };
    },
  });
};

/**
 * The owner's other persons (a SELF_IDENTIFIERS address that stayed a person of its own) when `selfId` is the
 * owner: never ranked as their contacts. Another person's ranking, asked for by id, keeps the owner.
 */
async function ownerBesides(service: RelationshipService, selfId: string | null): Promise<string[]> {
  if (!selfId) return [];
  const owner = await service.selfIds();
  return owner.includes(selfId) ? owner.filter((id) => id !== selfId) : [];
}

async function selfState(service: RelationshipService) {
  const db = service.db;
  const setting = await readSelfSetting(db);
  const resolvedOverride = setting ? await resolvePerson(db, setting.stored_person_id) : null;
  const detected = await detectSelf(db, service.config);
  const inUse = await resolveSelf(db, service.config);
  const id = inUse?.person_id ?? null;
  const name = id ? await displayNameOf(db, id) : null;
  let warning: string | null = null;
  if (setting && !resolvedOverride) warning = `stored self person ${setting.stored_person_id} no longer exists; using detection`;
  else if (!id) warning = 'self person not yet known: no override, no SELF_IDENTIFIERS match, no "me" contact card, no outbound messages';
  return {
    self_person_id: id,
    source: inUse?.source ?? null,
    display_name: name,
    override: setting
      ? { stored_person_id: setting.stored_person_id, resolved_person_id: resolvedOverride, source: setting.source, updated_at: setting.updated_at }
      : null,
    detected: detected ? { person_id: detected.person_id, source: detected.source, evidence: detected.evidence ?? {} } : null,
    warning,
  };
}

/** Admin routes for the self person; registered behind the gateway token. */
export const selfPersonRoutes: FastifyPluginAsyncTypebox<{ service: RelationshipService }> = async (app, { service }) => {
  app.route({
    ...ROUTES.getSelfPerson,
    handler: async () => selfState(service),
  });

  app.route({
    ...ROUTES.setSelfPerson,
    handler: async (req) => {
      const b = req.body;
      if ((b.person_id === undefined) === (b.identifier === undefined)) {
        throw new InvalidRequestError({ loc: ['body'], msg: 'Give exactly one of person_id or identifier' });
      }
      let id: string | null;
      if (b.person_id) {
        id = await resolvePerson(service.db, b.person_id);
        if (!id) throw new NotFoundError(`Person ${b.person_id} not found (or deleted)`);
      } else {
        id = await personByIdentifier(service.db, b.identifier!, b.identifier_type ?? null, service.config.phoneRegion);
        if (!id) throw new NotFoundError('No person has this identifier');
      }
      await writeSelfSetting(service.db, id, 'manual');
      service.requestFull();
      return selfState(service);
    },
  });

  app.route({
    ...ROUTES.clearSelfPerson,
    handler: async () => {
      if (await clearSelfSetting(service.db)) service.requestFull();
      return selfState(service);
    },
  });

  app.route({
    ...ROUTES.recomputeRelationships,
    handler: async () => service.recompute(),
  });
};
