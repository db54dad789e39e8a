/**
 * One error mapping for every route: invalid input is a 422 in the spec's shape, oversized bodies
 * 413, unknown routes 404 JSON; a 500 never carries a stack trace.
 */
import crypto from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ErrorEnvelopeT } from '../schemas/common.ts';
import { IndexNotReadyError } from '../search/search.ts';
import { toValidationDetail } from './validation.ts';
import { InvalidRequestError, MemexError } from '../util/errors.ts';
import { ERROR_CODES, errorCodeEntry, type ErrorCodeEntry } from '../util/error-codes.ts';
import { HostRefusedError } from '../util/request-host.ts';
import { DISK_FULL_CODE, DISK_FULL_STATUS, diskFullMessage, fullDiskOf, noteDiskFull } from '../util/disk-full.ts';

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

/**
 * Reads and drops what is left of a request body, up to `maxBytes`, so a client that sends the whole
 * body before reading the answer (Python's http.client, most HTTP libraries) gets the answer instead
 * of a connection cut under it ("broken pipe"). Past `maxBytes` the connection is closed after all.
 */
export function drainRequest(raw: IncomingMessage, maxBytes: number): Promise<void> {
  if (raw.complete || raw.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    let seen = 0;
    const finish = () => {
      raw.off('data', onData);
      raw.off('end', finish);
      raw.off('close', finish);
      raw.off('error', finish);
      resolve();
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) finish();
    };
    raw.on('data', onData);
    raw.on('end', finish);
    raw.on('close', finish);
    raw.on('error', finish);
    raw.resume();
  });
}

/** How much of an oversized body is read and dropped before answering 413 (beyond it, the connection is cut). */
export function oversizedDrainBytes(bodyLimit: number): number {
  return Math.max(64 * 1024 * 1024, 4 * bodyLimit);
}

/**
 * The body of a MemexError a client caused (status < 500): the spec's 422 shape (`detail` a list of
 * `{loc, msg, type}`), else `detail` the message and, as the code's entry in src/util/error-codes.ts says,
 * `error_code` or the spec's error envelope `error` beside it.
 */
export function memexErrorBody(err: MemexError, correlationPrefix = 'gw'): Record<string, unknown> {
  if (err instanceof InvalidRequestError) return { detail: err.problems.map((p) => ({ loc: p.loc, msg: p.msg, type: p.type ?? err.type })) };
  if (err.status === 422) return { detail: [{ loc: err.loc ?? ['body'], msg: err.message, type: err.type }] };
  const entry: ErrorCodeEntry = ERROR_CODES[err.code];
  if (entry.body === 'envelope') {
    const error = errorEnvelope(err.code, err.message, err.status, correlationPrefix);
    error.retryable = err.retryable;
    return { detail: err.message, error };
  }
  if (entry.body === 'error_code') return { detail: err.message, error_code: err.code };
  return { detail: err.message };
}

/**
 * What a multipart route met while reading its parts, as the error it throws: a MemexError as it is (a refused
 * meta, a store failure), a limit of @fastify/multipart (too many parts, files or fields) INGEST.MULTIPART_LIMIT
 * with its status and `limitNote` after the message, anything else (busboy: a truncated or malformed body)
 * INGEST.FILE_READ_FAILED. `retryable` overrides the refusal's flag for a client's mistake (status < 500).
 */
export function multipartRefusal(err: unknown, opts: { limitNote?: string; retryable?: boolean } = {}): MemexError {
  const e = err as { statusCode?: number; message?: string };
  const refusal =
    err instanceof MemexError ? err
    : e.statusCode && e.statusCode >= 400 && e.statusCode < 500 ? new MemexError(`${e.message ?? 'multipart limit exceeded'}${opts.limitNote ?? ''}`, 'INGEST.MULTIPART_LIMIT', e.statusCode, { cause: err })
    : new MemexError(`malformed multipart body: ${e.message ?? String(err)}`, 'INGEST.FILE_READ_FAILED', undefined, { cause: err });
  if (opts.retryable === undefined || refusal.status >= 500 || refusal.retryable === opts.retryable) return refusal;
  return new MemexError(refusal.message, refusal.code, refusal.status, { retryable: opts.retryable, cause: refusal });
}

/** The prefix of the correlation ids in a route's error envelopes: its `config.correlationPrefix`, else `gw`. */
function correlationPrefixOf(req: FastifyRequest): string {
  return (req.routeOptions.config as { correlationPrefix?: string } | undefined)?.correlationPrefix ?? 'gw';
}

/** A MemexError as the answer its code's entry says: the status, the body and a Retry-After when it has one. */
function sendMemexError(req: FastifyRequest, reply: FastifyReply, err: MemexError) {
  const after = errorCodeEntry(err.code).retryAfterSeconds;
  if (after !== undefined) reply.header('retry-after', String(after));
  return reply.code(err.status).send(memexErrorBody(err, correlationPrefixOf(req)));
}

/** A refusal on /mcp, as the MCP transport itself answers: a JSON-RPC error. */
function mcpErrorBody(message: string) {
  return { jsonrpc: '2.0', error: { code: -32000, message }, id: null };
}

export function installErrorHandling(app: FastifyInstance): void {
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ detail: `Not Found: ${req.method} ${req.url.split('?')[0]}` });
  });

  app.setErrorHandler(async (err: FastifyError & { validationContext?: string }, req, reply) => {
    if (err.validation) {
      return reply.code(422).send({ detail: toValidationDetail(err.validation, err.validationContext ?? 'body') });
    }
    if (err instanceof IndexNotReadyError) {
      // `memex serve` answers searches from a complete index only; GET /v1/readyz tells when.
      const { done, total } = err.state;
      const progress = total > 0 ? Math.round((1000 * done) / total) / 1000 : 0;
      return reply.code(503).header('retry-after', '2').send({ detail: err.message, phase: 'index', progress });
    }
    if (err instanceof HostRefusedError && req.url.split('?')[0].replace(/\/+$/, '') === '/mcp') {
      return reply.code(err.status).send(mcpErrorBody(err.message));
    }
    // Every other error of ours that a client caused: its status and the body its code's entry says.
    if (err instanceof MemexError && err.status < 500) return sendMemexError(req, reply, err);
    switch (err.code) {
      case 'FST_ERR_CTP_INVALID_JSON_BODY':
        return reply.code(422).send({ detail: [{ loc: ['body'], msg: `Malformed JSON: ${err.message}`, type: 'json_invalid' }] });
      case 'FST_ERR_CTP_EMPTY_JSON_BODY':
        return reply.code(422).send({ detail: [{ loc: ['body'], msg: 'Request body is empty', type: 'missing' }] });
      case 'FST_ERR_CTP_BODY_TOO_LARGE': {
        // The answer waits for the rest of the body (dropped): cutting the connection while the client
        // still sends makes most clients report a broken pipe instead of this 413.
        const limit = app.initialConfig.bodyLimit ?? 0;
        await drainRequest(req.raw, oversizedDrainBytes(limit));
        const message = `Request body is larger than the limit of ${limit} bytes (BODY_LIMIT)`;
        reply.code(413).header('connection', 'close');
        if (req.url.split('?')[0] === '/mcp') return reply.send(mcpErrorBody(message));
        return reply.send({ detail: message });
      }
      case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
        return reply.code(415).send({ detail: `Unsupported Content-Type: ${req.headers['content-type'] ?? '(none)'}` });
    }
    const full = fullDiskOf(err);
    if (full) {
      // A server condition, answered as one; the connection stays usable (the body was read or is drained).
      noteDiskFull(full);
      await drainRequest(req.raw, oversizedDrainBytes(app.initialConfig.bodyLimit ?? 0));
      const message = diskFullMessage(full);
      return reply.code(DISK_FULL_STATUS).send({ detail: message, error: errorEnvelope(DISK_FULL_CODE, message, DISK_FULL_STATUS, correlationPrefixOf(req)) });
    }
    // A server condition the table answers with an envelope (the object store or the OCR engine unavailable).
    if (err instanceof MemexError && errorCodeEntry(err.code).body === 'envelope') return sendMemexError(req, reply, err);
    const status = err.statusCode ?? 500;
    if (status === 422) return reply.code(422).send({ detail: [{ loc: ['body'], msg: err.message, type: 'value_error' }] });
    if (status >= 400 && status < 500) return reply.code(status).send({ detail: err.message });
    req.log.error({ err: { message: err.message, code: err.code, stack: err.stack } }, 'request failed');
    return reply.code(500).send({ detail: 'Internal Server Error', correlation_id: correlationId('gw_error') });
  });
}
