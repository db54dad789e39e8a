/**
 * Bearer-token guard (gateway spec 5): 401 when the header is missing or not a bearer token,
 * 403 when the token is wrong. Tokens are compared in constant time.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { safeEqual } from '../util/hash.ts';

export function bearerGuard(token: string | undefined, what = 'token') {
  return async function guard(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (!token) return;
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
    if (!m) {
      reply.header('www-authenticate', 'Bearer');
      return reply.code(401).send({ detail: `Missing ${what}` });
    }
    if (!safeEqual(m[1].trim(), token)) {
      return reply.code(403).send({ detail: `Invalid ${what}` });
    }
  };
}
