/**
 * One error mapping for every route: invalid input is a 422 in the spec's shape, oversized bodies
 * 413, unknown routes 404 JSON; a 500 never carries a stack trace.
 */
import crypto from 'node:crypto';
import type { FastifyError, FastifyInstance } from 'fastify';
import { CatalogError } from '../catalog/types.ts';
import type { ErrorEnvelopeT } from '../schemas/common.ts';
import { IndexNotReadyError } from '../search/search.ts';
import { PrepareError } from './prepare.ts';
import { toValidationDetail } from './validation.ts';

export function correlationId(prefix: string): string {
  return `${prefix}_${new Date().toISOString()}_${crypto.randomBytes(4).toString('hex')}`;
}

export function errorEnvelope(
  code: string,
  message: string,
  status: number,
  prefix = 'gw',
  details: Record<string, unknown> = {},
): ErrorEnvelopeT {
  return { error_code: code, message, retryable: status >= 500 || status === 429, correlation_id: correlationId(prefix), details };
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ detail: `Not Found: ${req.method} ${req.url.split('?')[0]}` });
  });

  app.setErrorHandler((err: FastifyError & { validationContext?: string }, req, reply) => {
    if (err.validation) {
      return reply.code(422).send({ detail: toValidationDetail(err.validation as any, err.validationContext ?? 'body') });
    }
    if (err instanceof PrepareError) {
      if (err.status === 422) return reply.code(422).send({ detail: [{ loc: err.loc, msg: err.message, type: err.type }] });
      return reply.code(err.status).send({ detail: err.message, error: errorEnvelope(err.code, err.message, err.status) });
    }
    if (err instanceof IndexNotReadyError) {
      // `memex serve` answers searches from a complete index only; GET /v1/readyz tells when.
      const { done, total } = err.state;
      const progress = total > 0 ? Math.round((1000 * done) / total) / 1000 : 0;
      return reply.code(503).header('retry-after', '2').send({ detail: err.message, phase: 'index', progress });
    }
    if (err instanceof CatalogError) {
      if (err.status === 422) return reply.code(422).send({ detail: [{ loc: ['body'], msg: err.message, type: err.code }] });
      return reply.code(err.status).send({ detail: err.message, error_code: err.code });
    }
    switch (err.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return reply.code(422).send({ detail: [{ loc: ['body'], msg: `Malformed JSON: ${err.message}`, type: 'json_invalid' }] });
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return reply.code(422).send({ detail: [{ loc: ['body'], msg: 'Request body is empty', type: 'missing' }] });
      case 'FST_ERR_CTP_BODY_TOO_LARGE':
        return reply.code(413).send({ detail: `Request body is larger than the limit of ${app.initialConfig.bodyLimit} bytes` });
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return reply.code(415).send({ detail: `Unsupported Content-Type: ${req.headers['content-type'] ?? '(none)'}` });
    }
    const status = err.statusCode ?? 500;
    if (status === 422) return reply.code(422).send({ detail: [{ loc: ['body'], msg: err.message, type: 'value_error' }] });
    if (status >= 400 && status < 500) return reply.code(status).send({ detail: err.message });
    req.log.error({ err: { message: err.message, code: err.code, stack: err.stack } }, 'request failed');
    return reply.code(500).send({ detail: 'Internal Server Error', correlation_id: correlationId('gw_error') });
  });
}
