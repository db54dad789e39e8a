/**
 * POST /v1/ocr (host-agent spec §4.2): multipart/form-data with a `file` part, or JSON {url}. The
 * response is the OCR result of spec §2.7. Every request counts in ocr_requests_total.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OcrError, type OcrErrorCode } from '../../ocr/engine.ts';
import type { AgentContext, AgentModule } from '../modules.ts';
import { urlForLog } from '../../util/url.ts';
import { fetchUrlBytes, UrlFetchError } from '../url-fetch.ts';

const OCR_STATUS: Record<OcrErrorCode, number> = {
  invalid_image: 400,
  image_too_large: 413,
  unsupported_language: 400,
  timeout: 504,
  busy: 503,
  closed: 503,
  engine_failure: 500,
};

export function ocrModule(ctx: AgentContext): AgentModule {
  const cfg = ctx.config.modules.ocr;
  return {
    name: 'ocr',
    enabled: cfg.enabled,
    permissions: () => ({}),
    status: () => (cfg.enabled ? 'ready' : 'disabled'),
    publicConfig: () => ({ languages: cfg.languages, timeout_ms: cfg.timeout_ms, pool_size: cfg.pool_size }),
    registerRoutes(app: FastifyInstance) {
      app.post('/v1/ocr', async (req: FastifyRequest, reply: FastifyReply) => {
        ctx.metrics.ocrRequestsTotal.inc();
        if (!cfg.enabled) return reply.code(503).send({ error: 'OCR module is disabled' });
        const t0 = performance.now();
        let image: Buffer;
        try {
          if (req.isMultipart()) {
            const part = await req.file({ limits: { fileSize: cfg.max_image_bytes, files: 1 } });
            if (!part || part.fieldname !== 'file') {
              part?.file.resume();
              return reply.code(400).send({ error: 'Multipart request must carry the image in a part named "file"' });
            }
            image = await part.toBuffer();
          } else {
            const body = req.body as { url?: unknown } | undefined;
            if (!body || typeof body !== 'object' || typeof body.url !== 'string' || body.url.trim() === '') {
              return reply.code(400).send({ error: 'Send multipart/form-data with a "file" part, or JSON {"url": "..."}' });
            }
            req.log.info({ url: urlForLog(body.url.trim()) }, 'OCR fetching an image by URL');
            const fetched = await fetchUrlBytes(body.url.trim(), {
              allowedHosts: cfg.allowed_url_hosts,
              maxBytes: cfg.max_image_bytes,
              timeoutMs: cfg.url_timeout_ms,
            });
            image = fetched.data;
          }
        } catch (err) {
          if (err instanceof UrlFetchError) return reply.code(err.status).send({ error: err.message });
          const code = (err as { code?: string }).code;
          if (code === 'FST_REQ_FILE_TOO_LARGE') {
            return reply.code(413).send({ error: `Image is larger than the limit of ${cfg.max_image_bytes} bytes` });
          }
          if (typeof code === 'string' && code.startsWith('FST_')) {
            return reply.code(400).send({ error: `Malformed multipart request: ${(err as Error).message}` });
          }
          throw err;
        }
        const readMs = performance.now() - t0;
        try {
          const result = await ctx.ocr().recognize(image, { readMs, languages: cfg.languages, timeoutMs: cfg.timeout_ms });
          return reply.send(result);
        } catch (err) {
          if (err instanceof OcrError) {
            const status = OCR_STATUS[err.code];
            if (status >= 500) req.log.warn({ code: err.code, err: err.message }, 'OCR failed');
            return reply.code(status).send({ error: err.message, code: err.code });
          }
          throw err;
        }
      });
    },
  };
}
