/** POST /v1/forget: erase a person, a document, a source or an identifier (docs/forget.md). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type ForgetService, type ForgetTarget } from '../../forget/forget.ts';
import { type ForgetRequestT } from '../../schemas/forget.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { InvalidRequestError } from '../../util/errors.ts';

const TARGET_FIELDS = ['person_id', 'doc_id', 'source_type', 'identifier'] as const;

function targetOf(body: ForgetRequestT): ForgetTarget | string {
  const given = TARGET_FIELDS.filter((f) => body[f] !== undefined);
  if (given.length !== 1) return `Give exactly one of ${TARGET_FIELDS.join(', ')} (got ${given.length ? given.join(', ') : 'none'})`;
  if (body.source_account_id !== undefined && given[0] !== 'source_type') return 'source_account_id goes with source_type only';
  if (body.identifier_type !== undefined && given[0] !== 'identifier') return 'identifier_type goes with identifier only';
  if (body.person_id) return { person_id: body.person_id };
  if (body.doc_id) return { doc_id: body.doc_id };
  if (body.source_type) return { source_type: body.source_type, source_account_id: body.source_account_id ?? null };
  return { identifier: body.identifier!, identifier_type: body.identifier_type ?? null };
}

export const forgetRoutes: FastifyPluginAsyncTypebox<{ service: ForgetService }> = async (app, { service }) => {
  app.route({
    ...ROUTES.forget,
    handler: async (req) => {
      const target = targetOf(req.body);
      if (typeof target === 'string') throw new InvalidRequestError({ loc: ['body'], msg: target });
      // A target that does not exist is a ForgetNotFoundError: 404 through the shared error mapping.
      const result = await service.forget(target, { dryRun: req.body.dry_run ?? false, block: req.body.block ?? false });
      req.log.info({ dry_run: result.dry_run, target: Object.keys(target)[0], removed: result.removed }, 'forget');
      return { ...result, target: target as Record<string, unknown> };
    },
  });
};
