/**
 * Email utilities (host-agent spec §4.5, spec-notes B2.2/B2.3/B4.5), all behind modules.mail.enabled
 * (503 {"error":"Email module is disabled"} when off). The logic lives in ../email/*; these handlers
 * only check input and map errors to 4xx.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { classifyIntent, emailMetadata, isNoiseEmail, redactPii, resolveRedactOptions } from '../../mail/analyze.ts';
import { EmailInputError, parseEmailFile, type ParsedEmail } from '../../mail/parse.ts';
import type { AgentContext, AgentModule } from '../modules.ts';

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const optString = (v: unknown) => v === undefined || v === null || typeof v === 'string';
const optStringList = (v: unknown) => v === undefined || v === null || (Array.isArray(v) && v.every((x) => typeof x === 'string'));

/** Checks the field types of a parsed-message object; returns an error message or null. */
function checkParsedFields(b: Record<string, unknown>): string | null {
  for (const k of ['subject', 'date', 'messageId', 'inReplyTo', 'listUnsubscribe', 'bodyPlainText', 'bodyHTML']) {
    if (!optString(b[k])) return `${k} must be a string or null`;
  }
  for (const k of ['from', 'to', 'cc', 'bcc', 'references']) {
    if (!optStringList(b[k])) return `${k} must be a list of strings`;
  }
  if (b.attachments !== undefined && b.attachments !== null && !Array.isArray(b.attachments)) return 'attachments must be a list';
  return null;
}

/** Folders /v1/email/parse may read: local sources' source_path plus modules.mail.allowed_roots. */
export function mailRoots(ctx: AgentContext): string[] {
  const mail = ctx.config.modules.mail;
  return [
    ...mail.sources.filter((s) => s.type === 'local' && s.source_path).map((s) => s.source_path!),
    ...mail.allowed_roots,
  ];
}

export function emailModule(ctx: AgentContext): AgentModule {
  const mail = ctx.config.modules.mail;
  return {
    name: 'mail',
    enabled: mail.enabled,
    permissions: () => ({}),
    status: () => (mail.enabled ? 'ready' : 'disabled'),
    publicConfig: () => ({ sources: mail.sources.map((s) => ({ id: s.id, type: s.type, enabled: s.enabled })) }),
    registerRoutes(app: FastifyInstance) {
      app.register(async (scoped) => {
        scoped.addHook('preHandler', async (_req, reply) => {
          if (!mail.enabled) return reply.code(503).send({ error: 'Email module is disabled' });
        });

        scoped.post('/v1/email/parse', async (req: FastifyRequest, reply: FastifyReply) => {
          const body = req.body;
          if (!isObject(body) || typeof body.path !== 'string' || body.path.trim() === '') {
            return reply.code(400).send({ error: 'Missing required field: path' });
          }
          try {
            return reply.send(await parseEmailFile(body.path, mailRoots(ctx)));
          } catch (err) {
            if (err instanceof EmailInputError) return reply.code(err.status).send({ error: err.message });
            throw err;
          }
        });

        scoped.post('/v1/email/metadata', async (req, reply) => {
          const body = req.body;
          if (!isObject(body)) return reply.code(400).send({ error: 'Request body must be a JSON object of parsed message fields' });
          const problem = checkParsedFields(body);
          if (problem) return reply.code(400).send({ error: problem });
          return reply.send(emailMetadata(body as Partial<ParsedEmail>));
        });

        scoped.post('/v1/email/classify-intent', async (req, reply) => {
          const body = req.body;
          if (!isObject(body) || typeof body.subject !== 'string' || typeof body.body !== 'string') {
            return reply.code(400).send({ error: 'Missing required fields: subject, body' });
          }
          if (!optString(body.sender)) return reply.code(400).send({ error: 'sender must be a string' });
          return reply.send(classifyIntent({ subject: body.subject, body: body.body, sender: body.sender as string | undefined }));
        });

        scoped.post('/v1/email/is-noise', async (req, reply) => {
          const body = req.body;
          if (!isObject(body)) return reply.code(400).send({ error: 'Request body must be a JSON object' });
          const problem = checkParsedFields(body);
          if (problem) return reply.code(400).send({ error: problem });
          return reply.send({
            is_noise: isNoiseEmail({
              subject: body.subject as string | undefined,
              from: body.from as string[] | undefined,
              listUnsubscribe: body.listUnsubscribe as string | undefined,
            }),
          });
        });

        scoped.post('/v1/email/redact-pii', async (req, reply) => {
          const body = req.body;
          if (!isObject(body) || typeof body.text !== 'string') return reply.code(400).send({ error: 'Missing required field: text' });
          let options;
          try {
            options = resolveRedactOptions(body.options);
          } catch (err) {
            return reply.code(400).send({ error: (err as Error).message });
          }
          return reply.send({ redacted_text: redactPii(body.text, options) });
        });
      });
    },
  };
}
