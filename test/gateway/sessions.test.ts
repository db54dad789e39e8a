/**
 * Web UI sessions through the HTTP API (src/gateway/sessions.ts): signing in opens an HttpOnly,
 * SameSite=Strict cookie session that stands for the token; changes made with it need the CSRF token;
 * sessions can be listed and revoked, end when unused for long or when the token changes; bearer-token
 * clients are unaffected. Runs on both backends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignInCodes } from '../../src/gateway/ui.ts';
import { backend } from '../helpers/db.ts';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

const CHROME_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';

let gw: TestGateway;
const codes = new SignInCodes();

beforeAll(async () => {
  gw = await startTestGateway({ ui: { codes } });
});
afterAll(async () => {
  await gw?.close();
});

/** A request as a browser sends it: the cookie, no Authorization header. */
function asBrowser(method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, cookie: string, headers: Record<string, string> = {}, body?: unknown) {
  return gw.request(method, url, body, { authorization: '', cookie, ...headers });
}

async function signIn(ua = CHROME_UA) {
  const res = await gw.request('POST', '/v1/session', { token: TEST_TOKEN }, { authorization: '', 'user-agent': ua });
  expect(res.statusCode, res.body).toBe(200);
  const setCookie = String(res.headers['set-cookie']);
  const cookie = setCookie.split(';')[0];
  return { res, setCookie, cookie, csrf: res.json().csrf_token as string, id: res.json().session_id as string };
}

describe(`web sessions on ${backend}`, () => {
  it('signing in sets an HttpOnly, SameSite=Strict cookie that is not the token, and answers without the token', async () => {
    const { res, setCookie, cookie, csrf } = await signIn();
    expect(setCookie).toMatch(/^memex_session_80=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=2592000$/);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).not.toContain(TEST_TOKEN);
    expect(cookie).not.toContain(TEST_TOKEN);
    expect(csrf).toMatch(/^[A-Za-z0-9_-]{43}$/);
    // The cookie alone reads data, and GET /v1/session answers the same CSRF token again.
    const who = await asBrowser('GET', '/v1/session', cookie);
    expect(who.json()).toMatchObject({ signed_in: true, csrf_token: csrf, session_id: res.json().session_id });
    expect((await asBrowser('GET', '/v1/search?q=anything', cookie)).statusCode).toBe(200);
    // Nothing but the hash of the secret is stored.
    const stored = await gw.db.query<Record<string, string>>('SELECT * FROM web_sessions');
    expect(JSON.stringify(stored.rows)).not.toContain(cookie.split('=')[1]);
  });

  it('refuses a wrong token, a made-up cookie and a one-time code used twice', async () => {
    const wrong = await gw.request('POST', '/v1/session', { token: 'not-the-token' }, { authorization: '' });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.headers['set-cookie']).toBeUndefined();
    const madeUp = await asBrowser('GET', '/v1/search?q=x', 'memex_session_80=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA');
    expect(madeUp.statusCode).toBe(401);
    expect(String(madeUp.headers['set-cookie'])).toMatch(/^memex_session_80=; .*Max-Age=0/);
    expect((await asBrowser('GET', '/v1/search?q=x', 'memex_session_80=<script>')).statusCode).toBe(401);
    const code = codes.issue();
    const first = await gw.request('POST', '/v1/session/redeem', { code }, { authorization: '' });
    expect(first.statusCode).toBe(200);
    expect(first.body).not.toContain(TEST_TOKEN);
    expect(String(first.headers['set-cookie'])).toMatch(/^memex_session_80=[A-Za-z0-9_-]{43}; .*HttpOnly; SameSite=Strict/);
    expect((await gw.request('POST', '/v1/session/redeem', { code }, { authorization: '' })).statusCode).toBe(403);
    // No token at all is 401 (no credentials), as a wrong one is 403; an over-long one is malformed.
    for (const missing of [{}, { token: '' }, { token: '   ' }]) {
      const res = await gw.request('POST', '/v1/session', missing, { authorization: '' });
      expect(res.statusCode, JSON.stringify(missing)).toBe(401);
      expect(res.json().detail).toMatch(/none was given/);
      expect(res.headers['set-cookie']).toBeUndefined();
    }
    const noBody = await gw.app.inject({ method: 'POST', url: '/v1/session' });
    expect(noBody.statusCode, noBody.body).toBe(401);
    expect((await gw.request('POST', '/v1/session', { token: 'x'.repeat(513) }, { authorization: '' })).statusCode).toBe(422);
  });

  it('needs the CSRF token for every change made with the cookie, and nothing changes without it', async () => {
    const { cookie, csrf } = await signIn();
    const note = noteBody({ source_id: 'csrf-probe', content: { data: 'Written through the session' } });
    for (const headers of [{}, { 'x-csrf-token': 'wrong' }, { 'x-csrf-token': `${csrf}x` }] as Record<string, string>[]) {
      const refused = await asBrowser('POST', '/v1/ingest', cookie, headers, note);
      expect(refused.statusCode).toBe(403);
      expect(refused.json().detail).toMatch(/x-csrf-token/);
    }
    expect((await gw.request('GET', '/v1/documents?source_type=note')).json().documents.map((d: any) => d.external_id)).not.toContain('csrf-probe');
    const ok = await asBrowser('POST', '/v1/ingest', cookie, { 'x-csrf-token': csrf }, note);
    expect(ok.statusCode, ok.body).toBe(202);
    // Another session's CSRF token is no good either.
    const other = await signIn();
    expect((await asBrowser('POST', '/v1/ingest', cookie, { 'x-csrf-token': other.csrf }, note)).statusCode).toBe(403);
  });

  it('leaves bearer-token clients as they were: the header decides, a cookie beside it changes nothing', async () => {
    const { cookie } = await signIn();
    const bearer = await gw.request('POST', '/v1/ingest', noteBody({ source_id: 'bearer-still' }));
    expect(bearer.statusCode).toBe(202); // no CSRF token needed
    expect((await gw.request('GET', '/v1/session')).json()).toMatchObject({ signed_in: true, session_id: null, csrf_token: null });
    // A wrong bearer token is refused even with a good cookie.
    expect((await gw.request('GET', '/v1/search?q=x', undefined, { authorization: 'Bearer nope', cookie })).statusCode).toBe(403);
    expect((await gw.request('GET', '/v1/search?q=x', undefined, { authorization: '' })).statusCode).toBe(401);
  });

  it('lists sessions, newest use first, and revokes one, all, or the own one on sign-out', async () => {
    await gw.request('DELETE', '/v1/sessions');
    const a = await signIn(CHROME_UA);
    const b = await signIn('Mozilla/5.0 (Macintosh; Intel Mac OS X 14_1) Gecko/20100101 Firefox/133.0');
    const list = (await asBrowser('GET', '/v1/sessions', a.cookie)).json().sessions;
    expect(list.map((s: any) => s.session_id).sort()).toEqual([a.id, b.id].sort());
    expect(list.find((s: any) => s.session_id === a.id)).toMatchObject({ browser: 'Chrome on Linux', current: true });
    expect(list.find((s: any) => s.session_id === b.id)).toMatchObject({ browser: 'Firefox on macOS', current: false });
    expect(JSON.stringify(list)).not.toMatch(/secret|hash|fingerprint/);

    // Revoking b ends it at its next request; a goes on.
    const del = await asBrowser('DELETE', `/v1/sessions/${b.id}`, a.cookie, { 'x-csrf-token': a.csrf });
    expect(del.json()).toEqual({ revoked: 1 });
    expect((await asBrowser('GET', '/v1/search?q=x', b.cookie)).statusCode).toBe(401);
    expect((await asBrowser('GET', '/v1/search?q=x', a.cookie)).statusCode).toBe(200);
    expect((await gw.request('DELETE', `/v1/sessions/${b.id}`)).statusCode).toBe(404);
    expect((await gw.request('DELETE', '/v1/sessions/not-a-uuid')).statusCode).toBe(422);

    // Signing out ends the session on the server, not only in the browser.
    const out = await asBrowser('DELETE', '/v1/session', a.cookie, { 'x-csrf-token': a.csrf });
    expect(out.json()).toEqual({ revoked: 1 });
    expect(String(out.headers['set-cookie'])).toMatch(/^memex_session_80=; .*Max-Age=0/);
    expect((await asBrowser('GET', '/v1/search?q=x', a.cookie)).statusCode).toBe(401);

    const c = await signIn();
    const d = await signIn();
    expect((await gw.request('DELETE', '/v1/sessions')).json()).toEqual({ revoked: 2 });
    for (const s of [c, d]) expect((await asBrowser('GET', '/v1/session', s.cookie)).statusCode).toBe(401);
  });

  it('binds a session to the host:port it was signed in on: the cookie is refused with any other Host', async () => {
    const res = await gw.request('POST', '/v1/session', { token: TEST_TOKEN }, { authorization: '', host: '127.0.0.1:8085' });
    const setCookie = String(res.headers['set-cookie']);
    // Named after the port, so two memex servers on one machine keep their own cookie.
    expect(setCookie).toMatch(/^memex_session_8085=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=2592000$/);
    const secret = setCookie.split(';')[0].split('=')[1];
    const on = (host: string, name = 'memex_session_8085') =>
      gw.request('GET', '/v1/search?q=x', undefined, { authorization: '', host, cookie: `${name}=${secret}` });
    expect((await on('127.0.0.1:8085')).statusCode).toBe(200);
    expect((await on('127.0.0.1:8085'.toUpperCase())).statusCode).toBe(200);
    // The value another local port received, replayed under the name that port's Host gives: refused.
    for (const [host, name] of [
      ['127.0.0.1:3000', 'memex_session_3000'],
      ['localhost:8085', 'memex_session_8085'],
      ['127.0.0.1:3000', 'memex_session_8085'],
    ]) {
      const refused = await on(host, name);
      expect(refused.statusCode, `${host} ${name}`).toBe(401);
    }
    // Refusing it elsewhere did not end it where it belongs.
    expect((await on('127.0.0.1:8085')).statusCode).toBe(200);
  });

  it('gives a fresh one-time sign-in link for the bearer token only, which signs in once', async () => {
    expect((await gw.request('POST', '/v1/session/link', undefined, { authorization: '' })).statusCode).toBe(401);
    expect((await gw.request('POST', '/v1/session/link', undefined, { authorization: 'Bearer nope' })).statusCode).toBe(403);
    const viaCookie = await signIn();
    const refused = await asBrowser('POST', '/v1/session/link', viaCookie.cookie, { 'x-csrf-token': viaCookie.csrf });
    expect(refused.statusCode).toBe(403);
    expect(refused.body).not.toContain('signin=');

    const res = await gw.request('POST', '/v1/session/link', undefined, { host: '127.0.0.1:8085' });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const { url, expires_at } = res.json();
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:8085\/#signin=[A-Za-z0-9_-]{32}$/);
    expect(new Date(expires_at).getTime()).toBeGreaterThan(Date.now() + 23 * 3600_000);
    const code = url.split('#signin=')[1];
    const first = await gw.request('POST', '/v1/session/redeem', { code }, { authorization: '', host: '127.0.0.1:8085' });
    expect(first.statusCode, first.body).toBe(200);
    expect(String(first.headers['set-cookie'])).toMatch(/^memex_session_8085=/);
    expect((await gw.request('POST', '/v1/session/redeem', { code }, { authorization: '' })).statusCode).toBe(403);
  });

  it('ends a session unused for 30 days, and every session when the token changes', async () => {
    const idle = await signIn();
    await gw.db.query(`UPDATE web_sessions SET last_seen_at = now() - interval '31 days' WHERE session_id = $1`, [idle.id]);
    expect((await asBrowser('GET', '/v1/session', idle.cookie)).statusCode).toBe(401);
    // Used 10 minutes ago: still good, and its cookie is renewed for another 30 days.
    const recent = await signIn();
    await gw.db.query(`UPDATE web_sessions SET last_seen_at = now() - interval '10 minutes' WHERE session_id = $1`, [recent.id]);
    const renewed = await asBrowser('GET', '/v1/session', recent.cookie);
    expect(renewed.statusCode).toBe(200);
    expect(String(renewed.headers['set-cookie'])).toMatch(/Max-Age=2592000/);

    // The same database served with another token: the old sessions are refused, then purged at start.
    const other = await startTestGateway({ testDb: gw.testDb, config: { authToken: 'a-new-token-9876543210' } });
    const refused = await other.request('GET', '/v1/session', undefined, { authorization: '', cookie: recent.cookie });
    expect(refused.statusCode).toBe(401);
    const left = await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM web_sessions');
    expect(left.rows[0].n).toBe(0);
    await other.app.close();
  });
});
