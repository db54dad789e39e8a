/**
 * `memex sessions` as a user runs it (bin/memex.js in a child process): the web UI's signed-in browsers
 * listed and revoked through the running server, then on the database once the server has stopped.
 */
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServerConfig } from '../../src/config/server.ts';
import { signInNotice } from '../../src/gateway/ui.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { runMemex } from '../helpers/memex-bin.ts';

const TOKEN = 'sessions-cli-token-0123456789';
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const FIREFOX = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_1; rv:133.0) Gecko/20100101 Firefox/133.0';

let dir: string;
let server: RunningServer | undefined;
let databaseUrl: string | undefined;
let dropDb: (() => Promise<void>) | undefined;
const saved = { ...process.env };
/** What the server wrote on stderr while starting (a test's stderr is not a terminal). */
let startOutput = '';

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-sessions-cli-'));
  process.env.EMBEDDING_PROVIDER = 'hash';
  process.env.EMBEDDING_WORKER = 'false';
  if (backend === 'postgres') {
    const created = await createServerDatabase();
    databaseUrl = created.url;
    dropDb = created.drop;
  }
  const config = { ...loadServerConfig({ DATA_DIR: path.join(dir, 'data'), PORT: '0', LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), databaseUrl };
  const write = process.stderr.write;
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    startOutput += String(chunk);
    return (write as (...a: unknown[]) => boolean).call(process.stderr, chunk, ...rest);
  }) as typeof process.stderr.write;
  try {
    server = await startServer(config, 'all');
  } finally {
    process.stderr.write = write;
  }
}, 120_000);

afterAll(async () => {
  await server?.close();
  await dropDb?.();
  process.env = saved;
  await fs.rm(dir, { recursive: true, force: true });
});

/** The command as a user runs it; `url` unset: as on the server's machine with nothing running. */
async function memex(args: string[], url: string | undefined = server?.url, verb = 'sessions'): Promise<{ code: number | null; out: string; err: string }> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    AUTH_TOKEN: TOKEN,
    DATA_DIR: path.join(dir, 'data'),
    ...(url ? { MEMEX_URL: url } : { PORT: '1' }), // nothing listens on port 1
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  };
  const r = await runMemex([verb, ...args], env);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

async function signIn(userAgent: string): Promise<{ id: string; cookie: string }> {
  const res = await fetch(`${server!.url}/v1/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': userAgent },
    body: JSON.stringify({ token: TOKEN }),
  });
  expect(res.status).toBe(200);
  return { id: ((await res.json()) as { session_id: string }).session_id, cookie: res.headers.get('set-cookie')!.split(';')[0] };
}

const status = async (cookie: string) => (await fetch(`${server!.url}/v1/session`, { headers: { cookie } })).status;

describe(`memex sessions (${backend})`, () => {
  it('lists the signed-in browsers and revokes one by its id, then all', async () => {
    const chrome = await signIn(CHROME);
    const firefox = await signIn(FIREFOX);
    const list = await memex([]);
    expect(list.code, list.err).toBe(0);
    expect(list.out).toMatch(/^2 web sessions/);
    expect(list.out).toMatch(new RegExp(`${chrome.id}  Chrome on Linux +signed in \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC  last used just now`));
    expect(list.out).toContain(`${firefox.id}  Firefox on macOS`);
    expect(list.out).not.toContain(TOKEN);
    const json = JSON.parse((await memex(['--json'])).out);
    expect(json.sessions.map((s: { session_id: string }) => s.session_id).sort()).toEqual([chrome.id, firefox.id].sort());

    const revoked = await memex(['revoke', firefox.id.slice(0, 8)]);
    expect(revoked.code, revoked.err).toBe(0);
    expect(revoked.out).toContain(`revoked ${firefox.id} (Firefox on macOS`);
    expect(await status(firefox.cookie)).toBe(401);
    expect(await status(chrome.cookie)).toBe(200);

    const unknown = await memex(['revoke', '00000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain('no session "00000000"');
    const usage = await memex(['revoke']);
    expect(usage.code).toBe(2);
    expect(usage.err).toContain('revoke takes session ids or --all');

    const all = await memex(['revoke', '--all']);
    expect(all.out).toContain('revoked 1 web session');
    expect(await status(chrome.cookie)).toBe(401);
    expect((await memex([])).out).toContain('no web sessions');
  });

  it('refuses a session cookie sent with the Host of another port, over real HTTP', async () => {
    const { cookie } = await signIn(CHROME);
    const port = new URL(server!.url!).port;
    expect(cookie).toMatch(new RegExp(`^memex_session_${port}=`));
    const secret = cookie.split('=')[1];
    /** A GET over node:http, whose Host header may be set (fetch sets its own). */
    const get = (pathname: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        http.get(`${server!.url}${pathname}`, { headers }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        }).on('error', reject);
      });
    expect(await get('/v1/session', { cookie, host: `127.0.0.1:${port}` })).toBe(200);
    // What a dev server on another port of 127.0.0.1 received, replayed to memex: useless.
    const other = String(Number(port) === 3000 ? 3001 : 3000);
    expect(await get('/v1/session', { cookie: `memex_session_${other}=${secret}`, host: `127.0.0.1:${other}` })).toBe(401);
    expect(await get('/v1/session', { cookie, host: `127.0.0.1:${other}` })).toBe(401);
    expect(await get('/v1/session', { cookie, host: `localhost:${port}` })).toBe(401);
    expect(await status(cookie)).toBe(200);
    expect((await memex(['revoke', '--all'])).code).toBe(0);
  });

  it('starts without printing a sign-in link when stderr is not a terminal, and `memex signin-link` gives one', async () => {
    expect(startOutput).not.toContain('#signin=');
    expect(startOutput).toContain('memex signin-link');
    // To a terminal, the start message carries the link.
    expect(signInNotice('http://127.0.0.1:8085', true, () => 'CODE')).toContain('http://127.0.0.1:8085/#signin=CODE');
    expect(signInNotice('http://127.0.0.1:8085', false, () => 'CODE')).not.toContain('CODE');

    const link = await memex([], server!.url, 'signin-link');
    expect(link.code, link.err).toBe(0);
    const url = link.out.trim();
    expect(url).toMatch(new RegExp(`^${server!.url}/#signin=[A-Za-z0-9_-]{32}$`));
    expect(link.err).toMatch(/one-time sign-in link .* valid until \d{4}-\d\d-\d\d/);
    const code = url.split('#signin=')[1];
    const redeem = (c: string) =>
      fetch(`${server!.url}/v1/session/redeem`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code: c }) });
    const first = await redeem(code);
    expect(first.status).toBe(200);
    expect(await status(first.headers.get('set-cookie')!.split(';')[0])).toBe(200);
    expect((await redeem(code)).status).toBe(403);

    const wrong = await runMemex(['signin-link'], { PATH: process.env.PATH, HOME: process.env.HOME, MEMEX_URL: server!.url, AUTH_TOKEN: 'wrong-token' });
    expect(wrong.code).toBe(1);
    expect(wrong.stdout).not.toContain('signin=');
    expect(wrong.stderr).toMatch(/memex signin-link: .*403|token/i);
    const none = await runMemex(['signin-link'], { PATH: process.env.PATH, HOME: process.env.HOME, MEMEX_URL: 'http://127.0.0.1:1', AUTH_TOKEN: TOKEN });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain('no memex server answers');
    expect((await memex(['revoke', '--all'])).code).toBe(0);
  });

  it('works on the database when no server runs', async () => {
    const kept = await signIn(CHROME);
    await server!.close();
    server = undefined;
    const list = await memex([], undefined);
    expect(list.code, list.err).toBe(0);
    expect(list.out).toContain(`${kept.id}  Chrome on Linux`);
    const all = await memex(['revoke', '--all'], undefined);
    expect(all.out).toContain('revoked 1 web session');
    expect((await memex([], undefined)).out).toContain('no web sessions');
  });
});
