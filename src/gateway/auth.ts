/**
 * Bearer-token guard (gateway spec 5): 401 when the header is missing or not a bearer token,
 * 403 when the token is wrong. Tokens are compared in constant time.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { safeEqual } from '../util/hash.ts';

/** `tokens`: one token, or several of which any is accepted (unset ones ignored; none set: open). */
export function bearerGuard(tokens: string | undefined | (string | undefined)[], what = 'token') {
  const accepted = [...new Set((Array.isArray(tokens) ? tokens : [tokens]).filter((t): t is string => !!t))];
  return async function guard(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (accepted.length === 0) return;
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
    if (!m) {
      reply.header('www-authenticate', 'Bearer');
      return reply.code(401).send({ detail: `Missing ${what}` });
    }
    const given = m[1].trim();
    // Every accepted token is compared, so the time taken says nothing about which one was close.
    let ok = false;
    for (const t of accepted) ok = safeEqual(given, t) || ok;
    if (!ok) {
      return reply.code(403).send({ detail: `Invalid ${what}` });
    }
  };
}
