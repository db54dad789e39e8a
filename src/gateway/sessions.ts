/**
 * Sessions of the web UI (docs/ui.md, "Sign-in and the session"). Signing in with the access token, or
 * with the one-time code of `memex serve`'s link, opens a session: the browser gets a random secret in an
 * HttpOnly, SameSite=Strict cookie, which no script of the page can read, and which survives reloads and
 * new tabs. The server keeps only the secret's SHA-256, with the fingerprint of the access token of the
 * day, so a new token ends every session; a session unused for 30 days ends too.
 *
 * A browser attaches cookies on its own, also to requests another page starts: every POST, PUT, PATCH
 * and DELETE made with the cookie must carry X-CSRF-Token, a value derived from the secret that only
 * the page can learn (from GET /v1/session, whose answer other origins cannot read). SameSite=Strict keeps
 * other sites out already; the token also keeps out other origins of the same site (another port on
 * 127.0.0.1), which SameSite does not.
 *
 * Cookies ignore ports: on http://127.0.0.1 every local service (a dev server that logs its headers) also
 * receives the cookie. So a session is bound to the Host (name:port) it was signed in on: the host is folded
 * into the stored hash, and the cookie presented with any other Host is refused. The cookie is named after
 * the port (memex_session_8085), so two memex servers on one machine keep their own; over HTTPS it is
 * __Host-memex_session_PORT with Secure (docs/ui.md, "The cookie and other local ports").
 *
 * Bearer-token clients are untouched: a request with an Authorization header is judged by it alone.
 */
import crypto from 'node:crypto';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Queryable } from '../db/types.ts';
import { type CurrentSessionT, type SessionInfoT } from '../schemas/sessions.ts';
import { safeEqual, sha256Hex } from '../util/hash.ts';
import { newId } from '../util/ids.ts';
import type { SignInCodes } from './ui.ts';
import { ROUTES } from '../schemas/routes.ts';
import { ConflictError, ForbiddenError, NotFoundError, UnauthenticatedError } from '../util/errors.ts';

/** The cookie's name without the port (see sessionCookieName). */
export const SESSION_COOKIE = 'memex_session';
export const CSRF_HEADER = 'x-csrf-token';
/** A session ends after this long without use. */
export const SESSION_IDLE_MS = 30 * 86_400_000;
/** Last use is written at most this often (a page of the UI makes several requests a second). */
const TOUCH_EVERY_MS = 5 * 60_000;
const USER_AGENT_MAX = 256;
const SECRET_RE = /^[A-Za-z0-9_-]{43}$/;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The CSRF token of a session: derived from its secret, so nothing more is stored. */
export function csrfTokenFor(secret: string): string {
  return crypto.createHash('sha256').update(`memex-csrf\0${secret}`).digest('base64url');
}

/** The host a session is bound to: the request's Host header (name:port), lowercased. */
export function sessionHost(req: Pick<FastifyRequest, 'headers'>): string {
  return (req.headers.host ?? '').trim().toLowerCase().slice(0, 300);
}

/** The port part of a Host header, or the protocol's default port. */
function hostPort(host: string, https: boolean): string {
  const m = /:(\d{1,5})$/.exec(host);
  return m ? m[1] : https ? '443' : '80';
}

/**
 * The cookie's name for a request: memex_session_PORT (two memex servers on one machine do not overwrite
 * each other's cookie), with the __Host- prefix over HTTPS (the browser then insists on Secure, Path=/ and
 * no Domain, so no other host of the site can set it).
 */
export function sessionCookieName(req: Pick<FastifyRequest, 'headers' | 'protocol'>): string {
  const https = req.protocol === 'https';
  return `${https ? '__Host-' : ''}${SESSION_COOKIE}_${hostPort(sessionHost(req), https)}`;
}

function secretHash(secret: string, host: string): string {
  // The host is in the hash: the same secret sent with another Host names no session.
  return sha256Hex(`memex-session\0${host}\0${secret}`);
}

/** One cookie's value from a Cookie header. */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}

/** "Chrome on Linux": enough to tell one's own browsers apart in `memex sessions`. */
export function describeUserAgent(ua: string | null | undefined): string {
  if (!ua) return 'unknown browser';
  const browser = /Edg\//.test(ua)
    ? 'Edge'
    : /Firefox\//.test(ua)
      ? 'Firefox'
      : /Chrom(e|ium)\//.test(ua)
        ? /HeadlessChrome/.test(ua) ? 'Headless Chrome' : 'Chrome'
        : /Safari\//.test(ua)
          ? 'Safari'
          : /^curl\//.test(ua)
            ? 'curl'
            : 'a browser';
  const os = /Android/.test(ua)
    ? 'Android'
    : /iPhone|iPad/.test(ua)
      ? 'iOS'
      : /Windows/.test(ua)
        ? 'Windows'
        : /Mac OS X|Macintosh/.test(ua)
          ? 'macOS'
          : /Linux|X11/.test(ua)
            ? 'Linux'
            : '';
  return os ? `${browser} on ${os}` : browser;
}

export interface OpenedSession {
  session_id: string;
  secret: string;
  csrf_token: string;
}

export interface ActiveSession {
  session_id: string;
  csrf_token: string;
  /** Its last use was just written: the cookie's lifetime is renewed with it. */
  touched: boolean;
}

interface SessionRow {
  session_id: string;
  created_at: Date | string;
  last_seen_at: Date | string;
  user_agent: string | null;
}

const iso = (v: Date | string) => new Date(v).toISOString();

/** The sessions table (migration 125) for one access token. */
export class WebSessions {
  private readonly fingerprint: string;

  constructor(
    private readonly db: Queryable,
    token: string | undefined,
    readonly idleMs = SESSION_IDLE_MS,
  ) {
    this.fingerprint = sha256Hex(`memex-session-token\0${token ?? ''}`);
  }

  private cutoff(now = Date.now()): string {
    return new Date(now - this.idleMs).toISOString();
  }

  /** Opens a session bound to `host` (sessionHost of the signing-in request). */
  async open(host: string, userAgent?: string): Promise<OpenedSession> {
    const secret = crypto.randomBytes(32).toString('base64url');
    const id = newId();
    await this.db.query(
      `INSERT INTO web_sessions (session_id, secret_hash, token_fingerprint, user_agent) VALUES ($1, $2, $3, $4)`,
      [id, secretHash(secret, host), this.fingerprint, userAgent ? userAgent.slice(0, USER_AGENT_MAX) : null],
    );
    return { session_id: id, secret, csrf_token: csrfTokenFor(secret) };
  }

  /**
   * The live session a cookie names, or null (unknown, revoked, expired, opened with another token, or
   * opened on another host than `host`).
   */
  async check(secret: string, host: string, now = Date.now()): Promise<ActiveSession | null> {
    if (!SECRET_RE.test(secret)) return null;
    const r = await this.db.query<{ session_id: string; last_seen_at: Date | string }>(
      `SELECT session_id, last_seen_at FROM web_sessions
        WHERE secret_hash = $1 AND token_fingerprint = $2 AND last_seen_at > $3::timestamptz`,
      [secretHash(secret, host), this.fingerprint, this.cutoff(now)],
    );
    const row = r.rows[0];
    if (!row) return null;
    const touched = now - new Date(row.last_seen_at).getTime() > TOUCH_EVERY_MS;
    if (touched) await this.db.query('UPDATE web_sessions SET last_seen_at = now() WHERE session_id = $1', [row.session_id]);
    return { session_id: row.session_id, csrf_token: csrfTokenFor(secret), touched };
  }

  /** Live sessions, most recently used first. */
  async list(currentId?: string | null): Promise<SessionInfoT[]> {
    const r = await this.db.query<SessionRow>(
      `SELECT session_id, created_at, last_seen_at, user_agent FROM web_sessions
        WHERE token_fingerprint = $1 AND last_seen_at > $2::timestamptz ORDER BY last_seen_at DESC, created_at DESC`,
      [this.fingerprint, this.cutoff()],
    );
    return r.rows.map((s) => ({
      session_id: s.session_id,
      created_at: iso(s.created_at),
      last_seen_at: iso(s.last_seen_at),
      expires_at: new Date(new Date(s.last_seen_at).getTime() + this.idleMs).toISOString(),
      user_agent: s.user_agent,
      browser: describeUserAgent(s.user_agent),
      current: s.session_id === currentId,
    }));
  }

  /** Ends one session (by id); false when there is none. */
  async revoke(sessionId: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM web_sessions WHERE session_id = $1', [sessionId])).rowCount > 0;
  }

  /** Ends every session; how many there were. */
  async revokeAll(): Promise<number> {
    return (await this.db.query('DELETE FROM web_sessions')).rowCount;
  }

  /** Removes ended sessions: expired, or opened with an earlier access token. */
  async purge(): Promise<number> {
    return (
      await this.db.query('DELETE FROM web_sessions WHERE token_fingerprint <> $1 OR last_seen_at <= $2::timestamptz', [
        this.fingerprint,
        this.cutoff(),
      ])
    ).rowCount;
  }
}

function cookie(req: FastifyRequest, value: string, maxAgeSeconds: number): string {
  // Secure only over HTTPS: on http://127.0.0.1 a Secure cookie would not be stored at all.
  return `${sessionCookieName(req)}=${value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${req.protocol === 'https' ? '; Secure' : ''}`;
}

function setSessionCookie(req: FastifyRequest, reply: FastifyReply, secret: string, idleMs: number): void {
  reply.header('set-cookie', cookie(req, secret, Math.floor(idleMs / 1000)));
}

function clearSessionCookie(req: FastifyRequest, reply: FastifyReply): void {
  reply.header('set-cookie', cookie(req, '', 0));
}

/** The web session a request was let in by (set by sessionAuth), if it came with the cookie. */
const requestSessions = new WeakMap<FastifyRequest, ActiveSession>();
export function sessionOf(req: FastifyRequest): ActiveSession | undefined {
  return requestSessions.get(req);
}

/**
 * For the bearer guard (src/gateway/auth.ts): judges a request that has no Authorization header but the
 * session cookie. Returns 'none' when there is no cookie (the guard then answers as before), 'ok' when
 * the request may go on; throws (401, 403) when the session or its CSRF header does not let it in.
 */
export async function sessionAuth(sessions: WebSessions, req: FastifyRequest, reply: FastifyReply): Promise<'none' | 'ok'> {
  const secret = readCookie(req.headers.cookie, sessionCookieName(req));
  if (!secret) return 'none';
  const session = await sessions.check(secret, sessionHost(req));
  if (!session) {
    clearSessionCookie(req, reply);
    throw new UnauthenticatedError('The session has ended (signed out, revoked or expired) or is not for this address: sign in again');
  }
  if (!SAFE_METHODS.has(req.method)) {
    const given = req.headers[CSRF_HEADER];
    if (typeof given !== 'string' || !safeEqual(given, session.csrf_token)) {
      throw new ForbiddenError(`A request made with the session cookie needs the ${CSRF_HEADER} header of GET /v1/session`);
    }
  }
  if (session.touched) setSessionCookie(req, reply, secret, sessions.idleMs);
  requestSessions.set(req, session);
  return 'ok';
}

function current(req: FastifyRequest, version: string): CurrentSessionT {
  const s = sessionOf(req);
  return { signed_in: true, version, session_id: s?.session_id ?? null, csrf_token: s?.csrf_token ?? null };
}

/** Signing in: no guard (the token or a one-time code is the proof). */
export const signInRoutes: FastifyPluginAsyncTypebox<{
  sessions: WebSessions;
  codes: SignInCodes;
  token: string | undefined;
  version: string;
}> = async (app, { sessions, codes, token, version }) => {
  async function start(req: FastifyRequest, reply: FastifyReply): Promise<CurrentSessionT> {
    const opened = await sessions.open(sessionHost(req), req.headers['user-agent']);
    setSessionCookie(req, reply, opened.secret, sessions.idleMs);
    return { signed_in: true, version, session_id: opened.session_id, csrf_token: opened.csrf_token };
  }

  app.route({
    ...ROUTES.signIn,
    preValidation: async (req) => {
      req.body ??= {};
    },
    handler: async (req, reply) => {
      reply.header('cache-control', 'no-store');
      if (!token) return { signed_in: true, version, session_id: null, csrf_token: null }; // an open gateway
      const given = (req.body?.token ?? '').trim();
      if (!given) throw new UnauthenticatedError('Sign in with the access token: none was given');
      if (!safeEqual(given, token)) throw new ForbiddenError('That token is not valid');
      return start(req, reply);
    },
  });

  app.route({
    ...ROUTES.redeemSignInCode,
    handler: async (req, reply) => {
      reply.header('cache-control', 'no-store');
      if (!token || !codes.redeem(req.body.code)) {
        throw new ForbiddenError('This sign-in link was already used or has expired: sign in with the token');
      }
      return start(req, reply);
    },
  });
};

/** Behind the guard: the current session, signing out, listing and revoking sessions, and sign-in links. */
export const sessionRoutes: FastifyPluginAsyncTypebox<{
  sessions: WebSessions;
  codes: SignInCodes;
  token: string | undefined;
  version: string;
}> = async (app, { sessions, codes, token, version }) => {
  app.route({
    ...ROUTES.createSignInLink,
    handler: async (req, reply) => {
      reply.header('cache-control', 'no-store');
      // Only a holder of the token mints links: a stolen cookie must not turn into new sessions.
      if (sessionOf(req)) throw new ForbiddenError('A sign-in link is given for the bearer token only (`memex signin-link`)');
      if (!token) throw new ConflictError('This server has no access token: the web UI needs no sign-in');
      const now = Date.now();
      const code = codes.issue(now);
      // The address the client asked by: the session the link opens is bound to that host (sessionHost).
      return { url: `${req.protocol}://${sessionHost(req)}/#signin=${code}`, expires_at: new Date(now + codes.ttlMs).toISOString() };
    },
  });


  app.route({
    ...ROUTES.currentSession,
    handler: async (req, reply) => {
      reply.header('cache-control', 'no-store');
      return current(req, version);
    },
  });

  app.route({
    ...ROUTES.signOut,
    handler: async (req, reply) => {
      const s = sessionOf(req);
      clearSessionCookie(req, reply);
      return { revoked: s && (await sessions.revoke(s.session_id)) ? 1 : 0 };
    },
  });

  app.route({
    ...ROUTES.listSessions,
    handler: async (req) => ({ sessions: await sessions.list(sessionOf(req)?.session_id) }),
  });

  app.route({
    ...ROUTES.revokeSession,
    handler: async (req, reply) => {
      if (!(await sessions.revoke(req.params.session_id))) throw new NotFoundError('No such session');
      if (sessionOf(req)?.session_id === req.params.session_id) clearSessionCookie(req, reply);
      return { revoked: 1 };
    },
  });

  app.route({
    ...ROUTES.revokeOtherSessions,
    handler: async (req, reply) => {
      if (sessionOf(req)) clearSessionCookie(req, reply);
      return { revoked: await sessions.revokeAll() };
    },
  });
};
