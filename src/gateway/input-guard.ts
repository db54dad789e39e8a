/**
 * Hostile-input rules that apply to every route, before any handler sees a request (docs/architecture.md,
 * "Input rules"):
 *
 * - JSON bodies nested deeper than MAX_JSON_DEPTH levels are refused with a 422 when parsed; nothing after the
 *   parser (hashing, storage, responses) ever walks an unbounded structure.
 * - Lone UTF-16 surrogates (`"\ud800"` without its pair) become U+FFFD in every string of a body, query or path,
 *   keys included. PostgreSQL text cannot hold them and its JSON parser refuses them; this is the one rule for all
 *   fields, and it is what a text column would store anyway.
 * - NUL (U+0000) cannot be stored in PostgreSQL text. Identifier fields refuse it in their schema (a 422, see
 *   `Identifier` in src/schemas/common.ts); in every other string (content, titles, names, metadata) it is removed.
 *   That happens after validation, so an identifier with a NUL is refused rather than silently changed.
 *
 * All walks are iterative: the depth of user data never becomes the depth of the call stack.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { cleanStrings, MAX_JSON_DEPTH, tooDeepAt } from '../util/json-input.ts';
import { PrepareError } from '../catalog/prepare.ts';

/**
 * Route config of batch routes that validate each item in the handler: the body is left as sent, and the handler
 * applies cleanStrings to each item once it passed validation (so an identifier with a NUL is refused there too).
 */
export const CLEAN_ITEMS_IN_HANDLER = { cleanItemsInHandler: true } as const;

function cleanRequest(req: FastifyRequest): void {
  const perItem = (req.routeOptions.config as { cleanItemsInHandler?: boolean } | undefined)?.cleanItemsInHandler;
  if (!perItem && req.body !== undefined && req.body !== null) req.body = cleanStrings(req.body);
  if (req.query && typeof req.query === 'object') cleanStrings(req.query);
  if (req.params && typeof req.params === 'object') cleanStrings(req.params);
}

export function installInputGuard(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    parseJson(req, body as string, (err: Error | null, value?: unknown) => {
      if (err) return done(err, undefined);
      const loc = tooDeepAt(value);
      if (loc) {
        return done(
          new PrepareError(422, 'INPUT.TOO_DEEP', `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, ['body', ...loc], 'too_deep'),
          undefined,
        );
      }
      done(null, value);
    });
  });
  app.addHook('preHandler', async (req) => cleanRequest(req));
}
