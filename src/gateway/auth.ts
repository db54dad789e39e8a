/**
 * Bearer-token guard (gateway spec 5): 401 when the header is missing or not a bearer token,
 * 403 when the token is wrong (thrown: src/gateway/errors.ts writes the body). Tokens are compared in constant time. Where the access token is
 * accepted, so is the web UI's session cookie (src/gateway/sessions.ts) on a request without the header.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { safeEqual } from '../util/hash.ts';
import { sessionAuth, type WebSessions } from './sessions.ts';
import { ForbiddenError, UnauthenticatedError } from '../util/errors.ts';

/**
 * `tokens`: one token, or several of which any is accepted (unset ones ignored; none set: open).
 * `sessions`: web sessions stand for the access token here.
 */
export function bearerGuard(tokens: string | undefined | (string | undefined)[], what = 'token', sessions?: WebSessions) {
  const accepted = [...new Set((Array.isArray(tokens) ? tokens : [tokens]).filter((t): t is string => !!t))];
  return async function guard(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    if (accepted.length === 0) return;
    const header = req.headers.authorization;
    if (header === undefined && sessions) {
      if ((await sessionAuth(sessions, req, reply)) === 'ok') return;
    }
    const m = typeof header === 'string' ? /^Bearer\s+(.+)$/i.exec(header.trim()) : null;
    if (!m) {
      reply.header('www-authenticate', 'Bearer');
      throw new UnauthenticatedError(`Missing ${what}`);
    }
    const given = m[1].trim();
    // Every accepted token is compared, so the time taken says nothing about which one was close.
    let ok = false;
    for (const t of accepted) ok = safeEqual(given, t) || ok;
    if (!ok) throw new ForbiddenError(`Invalid ${what}`);
  };
}
