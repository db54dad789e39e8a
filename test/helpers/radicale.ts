/**
 * A real, throwaway CalDAV/CardDAV server for tests: Debian's `radicale` (installed by scripts/install-tools.sh),
 * on 127.0.0.1 and a free port, `auth type = none` (any user name is taken, the principal is `/<user>/`), storage
 * in a temp dir that stop() removes. Collections and members are made with plain HTTP (MKCALENDAR, MKCOL, PUT,
 * DELETE), as a calendar app would make them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { waitFor } from './wait.ts';

export const RADICALE_BIN = '/usr/bin/radicale';

export function radicaleUnavailableReason(): string | null {
  return fs.existsSync(RADICALE_BIN) ? null : `${RADICALE_BIN} is missing (run scripts/install-tools.sh)`;
}

export interface RadicaleServer {
  url: string;
  /** MKCALENDAR /<user>/<name>/ holding the given components (VEVENT, VTODO). */
  makeCalendar(user: string, name: string, components?: string[], displayName?: string): Promise<void>;
  /** An address book /<user>/<name>/ (extended MKCOL). */
  makeAddressBook(user: string, name: string): Promise<void>;
  /** PUT of a member (an .ics or .vcf), as the user. */
  put(user: string, memberPath: string, text: string): Promise<void>;
  remove(user: string, memberPath: string): Promise<void>;
  /** DELETE of a whole collection. */
  removeCollection(user: string, name: string): Promise<void>;
  log(): string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const basic = (user: string) => `Basic ${Buffer.from(`${user}:x`).toString('base64')}`;

export interface SeedCalendar {
  user: string;
  name: string;
  displayName?: string;
  components?: string[];
  /** Member file name → iCalendar text. */
  members: Record<string, string>;
}

/**
 * Starts Radicale. `seed` writes calendars into its storage before it starts (Radicale's own layout: a folder per
 * collection with `.Radicale.props`, a file per member), as a server that holds a big calendar already: 5,000 PUTs
 * would take minutes.
 */
export async function startRadicale(opts: { seed?: SeedCalendar[] } = {}): Promise<RadicaleServer> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-radicale-'));
  for (const c of opts.seed ?? []) {
    const at = path.join(dir, 'collections', 'collection-root', c.user, c.name);
    fs.mkdirSync(at, { recursive: true });
    const props: Record<string, string> = { tag: 'VCALENDAR', 'C:supported-calendar-component-set': (c.components ?? ['VEVENT']).join(',') };
    if (c.displayName) props['D:displayname'] = c.displayName;
    fs.writeFileSync(path.join(at, '.Radicale.props'), JSON.stringify(props));
    for (const [file, text] of Object.entries(c.members)) fs.writeFileSync(path.join(at, file), text);
  }
  const port = await freePort();
  fs.writeFileSync(
    path.join(dir, 'config'),
    `[server]\nhosts = 127.0.0.1:${port}\n[auth]\ntype = none\n[storage]\nfilesystem_folder = ${path.join(dir, 'collections')}\n[logging]\nlevel = warning\n`,
  );
  let log = '';
  const child: ChildProcess = spawn(RADICALE_BIN, ['--config', path.join(dir, 'config')], { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.on('data', (d) => (log += d));
  child.stderr?.on('data', (d) => (log += d));
  const url = `http://127.0.0.1:${port}`;
  // Until it answers HTTP (any status); an exit stops the wait at once with Radicale's own words.
  await waitFor(
    `radicale on ${url}`,
    async () => {
      if (child.exitCode !== null) return true;
      await fetch(url, { signal: AbortSignal.timeout(1000) });
      return true;
    },
    60_000,
    100,
  ).catch((err) => {
    throw new Error(`${(err as Error).message}: ${log.slice(-1000)}`);
  });
  if (child.exitCode !== null) throw new Error(`radicale exited (${child.exitCode}): ${log.slice(-1000)}`);

  async function call(method: string, user: string, p: string, body?: string, type?: string): Promise<void> {
    const res = await fetch(`${url}/${user}/${p}`, {
      method,
      headers: { authorization: basic(user), ...(type ? { 'content-type': type } : {}) },
      body,
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} /${user}/${p}: ${res.status} ${text.slice(0, 300)}`);
  }

  return {
    url,
    async makeCalendar(user, name, components = ['VEVENT', 'VTODO'], displayName) {
      const comps = components.map((c) => `<C:comp name="${c}"/>`).join('');
      const display = displayName ? `<D:displayname>${displayName}</D:displayname>` : '';
      await call(
        'MKCALENDAR',
        user,
        `${name}/`,
        `<?xml version="1.0"?><C:mkcalendar xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:set><D:prop>${display}<C:supported-calendar-component-set>${comps}</C:supported-calendar-component-set></D:prop></D:set></C:mkcalendar>`,
        'application/xml',
      );
    },
    async makeAddressBook(user, name) {
      await call(
        'MKCOL',
        user,
        `${name}/`,
        `<?xml version="1.0"?><D:mkcol xmlns:D="DAV:" xmlns:A="urn:ietf:params:xml:ns:carddav"><D:set><D:prop><D:resourcetype><D:collection/><A:addressbook/></D:resourcetype></D:prop></D:set></D:mkcol>`,
        'application/xml',
      );
    },
    put: (user, p, text) => call('PUT', user, p, text, p.endsWith('.vcf') ? 'text/vcard' : 'text/calendar'),
    remove: (user, p) => call('DELETE', user, p),
    removeCollection: (user, name) => call('DELETE', user, `${name}/`),
    log: () => log,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
        if (child.exitCode === null) child.kill('SIGKILL');
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
