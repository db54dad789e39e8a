/** Search, ask and general context routes of the gateway (spec 4.3, limits of spec 8). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { FilterError, parseFilters } from '../../catalog/filters.ts';
import type { Search } from '../../search/search.ts';
import { ValidationErrorBody } from '../../schemas/common.ts';
import { Loose, SearchQuery, SearchResponseSchema } from '../../schemas/search.ts';

/** Ask reads at most this many hits; a larger k is read as this (as the original did), not refused. */
export const ASK_MAX_K = 20;

export const AskRequest = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 2000 }),
  k: Type.Optional(
    Type.Integer({ minimum: 1, default: 5, description: `Hits the answer is drawn from (spec 8: default 5); above ${ASK_MAX_K} is read as ${ASK_MAX_K}` }),
  ),
});

export const AskCitation = Type.Object(
  {
    document_id: Type.String(),
    chunk_id: Type.String(),
    score: Type.Number({ description: 'Retrieval score of the hit quoted' }),
    title: Type.Union([Type.String(), Type.Null()]),
    source_type: Type.String(),
    content_timestamp: Type.String(),
    quote: Type.String({ description: 'The text the answer quotes from the chunk' }),
    start: Type.Integer({ description: 'Start of the quote in the chunk text' }),
    end: Type.Integer({ description: 'End of the quote in the chunk text (exclusive)' }),
    doc_start: Type.Union([Type.Integer(), Type.Null()], { description: 'Start of the quote in the document text' }),
    doc_end: Type.Union([Type.Integer(), Type.Null()], { description: 'End of the quote in the document text (exclusive)' }),
  },
  { additionalProperties: true },
);

export const AskResponseSchema = Type.Object(
  {
    query: Type.String(),
    answer: Type.String({ description: 'The answer; each quoted part is followed by its marker [n], n naming citations[n-1]' }),
    citations: Type.Array(AskCitation),
    answer_mode: Type.Union([Type.Literal('extractive'), Type.Literal('llm'), Type.Literal('none')], {
      description: 'extractive: quoted from the documents; llm: written by the configured model from quoted units; none: nothing answers',
    }),
    llm_error: Type.Optional(Type.String()),
    llm_fallback: Type.Optional(
      Type.Union([Type.Literal('timeout'), Type.Literal('unreachable'), Type.Literal('http_error'), Type.Literal('empty')], {
        description: 'Why the configured model\'s answer was not used (the answer is extractive)',
      }),
    ),
    legs: Type.Optional(Loose),
  },
  { additionalProperties: true },
);

export const searchRoutes: FastifyPluginAsyncTypebox<{ search: Search; phoneRegion?: string; selfIds?: () => Promise<string[]> }> = async (
  app,
  { search, phoneRegion, selfIds },
) => {
  app.get(
    '/v1/search',
    {
      schema: {
        tags: ['search'],
        summary: 'Hybrid search (BM25 + vectors) with filters, facets and thread context',
        querystring: SearchQuery,
        response: { 200: SearchResponseSchema, 422: ValidationErrorBody },
      },
    },
    async (req, reply) => {
      const q = req.query;
      let filters;
      try {
        filters = parseFilters(q, phoneRegion);
      } catch (err) {
        if (!(err instanceof FilterError)) throw err;
        return reply.code(422).send({ detail: [{ loc: ['query', err.field], msg: err.message, type: 'value_error' }] });
      }
      if (q.q.trim() === '') {
        return reply
          .code(422)
          .send({ detail: [{ loc: ['query', 'q'], msg: 'Query must contain text', type: 'string_too_short' }] });
      }
      const result = await search.search({ q: q.q, k: q.k, filters, context_window: q.context_window, group: q.group });
      // The owner is in nearly every message and no contact (issue 35): never in the person facet.
      const owner = selfIds ? new Set(await selfIds()) : new Set<string>();
      if (owner.size > 0) result.facets.person = result.facets.person.filter((f) => !owner.has(String(f.value)));
      return result as any;
    },
  );

  app.post(
    '/v1/ask',
    {
      schema: {
        tags: ['search'],
        summary: 'Answer a question from the retrieved documents, with citations',
        body: AskRequest,
        response: { 200: AskResponseSchema, 422: ValidationErrorBody },
      },
    },
    async (req, reply) => {
      if (req.body.query.trim() === '') {
        return reply
          .code(422)
          .send({ detail: [{ loc: ['body', 'query'], msg: 'Query must contain text', type: 'string_too_short' }] });
      }
      return search.ask(req.body.query, Math.min(req.body.k ?? 5, ASK_MAX_K));
    },
  );
};
