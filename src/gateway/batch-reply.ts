import type { FastifyReply } from 'fastify';

/**
 * The answer of a batch route whose items are answered one by one: 202 when every item succeeded, else 207 (multi-
 * status), with the counts. Items carry `error: null` when they succeeded.
 */
export function sendBatchResults<T extends { error: unknown }>(reply: FastifyReply, results: T[]) {
  const success = results.filter((r) => r.error === null).length;
  return reply.code(success === results.length ? 202 : 207).send({
    total_count: results.length,
    success_count: success,
    failure_count: results.length - success,
    results,
  });
}
