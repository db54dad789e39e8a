/**
 * A real, throwaway Dovecot IMAP server for tests (Debian `dovecot-imapd`, installed by
 * scripts/install-dovecot.sh). Each call writes its own config into a temp dir (listen on
 * 127.0.0.1 and a free port, no TLS, plaintext LOGIN allowed, passwd-file passdb, static userdb,
 * maildir storage), starts `dovecot -F` as a child process and resolves once the IMAP greeting
 * arrives. Nothing is shared with a system Dovecot: base_dir, state_dir and logs live in the temp
 * dir, which stop() removes.
 *
 * XOAUTH2/OAUTHBEARER: give a user `xoauth2: { token }` and the helper also starts a tiny local
 * HTTP server answering Dovecot's oauth2 passdb token introspection (RFC 7662 style POST
 * `token=...`): the listed token is active for that user, any other token is inactive.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const DOVECOT_BIN = '/usr/sbin/dovecot';

/** Why Dovecot tests cannot run here, or null when they can. */
export function dovecotUnavailableReason(): string | null {
  if (!fs.existsSync(DOVECOT_BIN)) return `${DOVECOT_BIN} is missing (run scripts/install-dovecot.sh)`;
  if (!fs.existsSync('/usr/lib/dovecot/imap')) return '/usr/lib/dovecot/imap is missing (install dovecot-imapd)';
  return null;
}

export interface DovecotUser {
  user: string;
  password: string;
  /** Accept this bearer token for the user over AUTHENTICATE XOAUTH2 / OAUTHBEARER. */
  xoauth2?: { token: string };
}

/** A message to seed: raw RFC 5322 text, optionally with IMAP flags and an internal date. */
export type SeedMessage = string | Buffer | { raw: string | Buffer; flags?: string[]; internalDate?: Date };

export interface StartDovecotOptions {
  users: DovecotUser[];
  /** Messages to put in place before start: { user: { mailbox ("INBOX", "Archive", "Work/2024"): messages } }. */
  maildirs?: Record<string, Record<string, SeedMessage[]>>;
  /** Verbose auth logging into log() (also on with MEMEX_DOVECOT_DEBUG=1). */
  debug?: boolean;
}

export interface DovecotServer {
  host: string;
  port: number;
  /** Maildir root of a user (INBOX is the root; other folders are Maildir++ ".Name" dirs). */
  maildirRoot(user: string): string;
  /** Delivers a message into a mailbox while the server runs (as an MTA would: a file in new/ or cur/). */
  deliver(user: string, mailbox: string, message: SeedMessage): string;
  /** Dovecot's log so far (for failure messages). */
  log(): string;
  /** Delivers a message through Dovecot itself (doveadm save, as LMTP would): IDLE sessions hear of it at once. */
  save(user: string, mailbox: string, raw: string | Buffer): Promise<void>;
  /** Message bodies fetched per finished IMAP session, from the logout lines (imap_logout_format): their sum. */
  bodiesFetched(): number;
  /** IMAP sessions logged in and not yet ended (login lines minus logout lines): 0 once every count is in. */
  openSessions(): number;
  /** Ends every IMAP session of `user` (doveadm kick): a dropped connection as clients see one. */
  kick(user: string): Promise<void>;
  /** Stops Dovecot and starts it again on the same port and mail (a server restart). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const FLAG_LETTERS: Record<string, string> = {
  '\\Draft': 'D',
  '\\Flagged': 'F',
  '\\Answered': 'R',
  '\\Seen': 'S',
  '\\Deleted': 'T',
};

let seq = 0;

/** Kills the processes Dovecot titled as this instance's ("dovecot-<instance>/imap", "…/anvil", …), found in /proc. */
function endInstanceProcesses(instance: string): void {
  const prefix = `dovecot-${instance}/`;
  for (const pid of fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    let cmd: string;
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (!cmd.startsWith(prefix)) continue;
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      /* gone meanwhile */
    }
  }
}

/** Maildir++ directory of a mailbox: INBOX is the root, "A/B" is ".A.B". */
function mailboxDir(root: string, mailbox: string): string {
  if (mailbox.toUpperCase() === 'INBOX') return root;
  if (/[.\0]|^\/|\/$|\/\//.test(mailbox)) throw new Error(`unsupported test mailbox name: ${mailbox}`);
  return path.join(root, '.' + mailbox.split('/').join('.'));
}

function writeMessage(root: string, mailbox: string, msg: SeedMessage, owner: { uid: number; gid: number }): string {
  const dir = ensureMailbox(root, mailbox, owner);
  const m = typeof msg === 'string' || Buffer.isBuffer(msg) ? { raw: msg } : msg;
  const base = `${Math.floor(Date.now() / 1000)}.M${++seq}P${process.pid}R${crypto.randomBytes(4).toString('hex')}.memex-test`;
  // With flags the message is already "seen by a client" (cur/ with an info suffix); without, it is
  // freshly delivered (new/), as an MTA leaves it.
  const file = m.flags
    ? path.join(dir, 'cur', `${base}:2,${m.flags.map((f) => FLAG_LETTERS[f] ?? '').sort().join('')}`)
    : path.join(dir, 'new', base);
  const tmp = path.join(dir, 'tmp', base);
  fs.writeFileSync(tmp, m.raw);
  if (m.internalDate) fs.utimesSync(tmp, m.internalDate, m.internalDate);
  fs.chownSync(tmp, owner.uid, owner.gid);
  fs.renameSync(tmp, file); // atomic, as maildir delivery requires
  return file;
}

/** Creates a mailbox's maildir (and its cur/new/tmp), owned by the mail user; returns its path. */
function ensureMailbox(root: string, mailbox: string, owner: { uid: number; gid: number }): string {
  const dir = mailboxDir(root, mailbox);
  for (const d of [path.dirname(root), root, dir, ...['cur', 'new', 'tmp'].map((s) => path.join(dir, s))]) {
    if (!fs.existsSync(d)) {
      fs.mkdirSync(d);
      fs.chownSync(d, owner.uid, owner.gid);
    }
  }
  return dir;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Resolves when an IMAP greeting ("* OK") arrives on host:port, retrying until the deadline. */
async function waitForGreeting(port: number, deadline: number, exited: () => string | null): Promise<void> {
  for (;;) {
    const why = exited();
    if (why) throw new Error(why);
    const ok = await new Promise<boolean>((resolve) => {
      const sock = net.connect({ host: '127.0.0.1', port });
      let buf = '';
      const done = (v: boolean) => {
        sock.destroy();
        resolve(v);
      };
      sock.setTimeout(1000, () => done(false));
      sock.on('data', (d) => {
        buf += d.toString('latin1');
        if (buf.includes('\r\n')) done(buf.startsWith('* OK'));
      });
      sock.on('error', () => done(false));
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`Dovecot gave no IMAP greeting on 127.0.0.1:${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The oauth2 introspection endpoint Dovecot's auth process asks about bearer tokens. */
async function startIntrospection(users: DovecotUser[]): Promise<{ url: string; close(): Promise<void> }> {
  const tokens = new Map<string, string>();
  for (const u of users) if (u.xoauth2) tokens.set(u.xoauth2.token, u.user);
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => {
      body += c;
      if (body.length > 65536) req.destroy();
    });
    req.on('end', () => {
      // Dovecot asks with GET <tokeninfo_url><token> (introspection_mode = get appends the same
      // way) or POSTs a form body "token=<token>" (introspection_mode = post).
      const query = new URL(req.url ?? '/', 'http://127.0.0.1').searchParams.get('token');
      const token = query ?? new URLSearchParams(body).get('token') ?? '';
      const user = tokens.get(token);
      const answer = user ? { active: true, username: user } : { active: false };
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(answer));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/introspect`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function assertSafe(value: string, what: string): void {
  // Values go into a passwd-file and a config: no separators, no newlines.
  if (!value || /[:\r\n\0\s"]/.test(value)) throw new Error(`unsupported test ${what}: ${JSON.stringify(value)}`);
}

/** Starts a throwaway Dovecot; always call stop() (e.g. in afterAll). */
export async function startDovecot(opts: StartDovecotOptions): Promise<DovecotServer> {
  const reason = dovecotUnavailableReason();
  if (reason) throw new Error(reason);
  for (const u of opts.users) {
    assertSafe(u.user, 'user name');
    assertSafe(u.password, 'password');
    if (u.xoauth2) assertSafe(u.xoauth2.token, 'token');
  }

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-dovecot-'));
  // Dovecot's unprivileged login/imap processes must reach their sockets and the mail dirs.
  fs.chmodSync(dir, 0o755);
  const isRoot = process.getuid?.() === 0;
  // As root, mail is owned by the system user `mail` (uid/gid 8), the lowest uid Dovecot accepts
  // with first_valid_uid = 8. As another user, Dovecot runs every process as that user.
  const owner = isRoot ? { uid: 8, gid: 8 } : { uid: process.getuid!(), gid: process.getgid!() };
  const selfName = os.userInfo().username;

  const mailRoot = path.join(dir, 'mail');
  fs.mkdirSync(mailRoot);
  fs.chownSync(mailRoot, owner.uid, owner.gid);
  const maildirRoot = (user: string) => path.join(mailRoot, user, 'Maildir');
  for (const u of opts.users) ensureMailbox(maildirRoot(u.user), 'INBOX', owner);
  for (const [user, boxes] of Object.entries(opts.maildirs ?? {})) {
    if (!opts.users.some((u) => u.user === user)) throw new Error(`maildirs names unknown user ${user}`);
    for (const [box, msgs] of Object.entries(boxes)) {
      // Creating the dir makes the folder exist even with no messages.
      ensureMailbox(maildirRoot(user), box, owner);
      for (const m of msgs) writeMessage(maildirRoot(user), box, m, owner);
    }
  }

  const passwdFile = path.join(dir, 'passwd');
  fs.writeFileSync(passwdFile, opts.users.map((u) => `${u.user}:{PLAIN}${u.password}::::::\n`).join(''), { mode: 0o644 });

  const useOauth = opts.users.some((u) => u.xoauth2);
  const introspection = useOauth ? await startIntrospection(opts.users) : null;
  if (introspection) {
    fs.writeFileSync(
      path.join(dir, 'oauth2.conf.ext'),
      [
        `introspection_mode = post`,
        `introspection_url = ${introspection.url}`,
        `username_attribute = username`,
        `active_attribute = active`,
        `active_value = true`,
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
  }

  const logFile = path.join(dir, 'dovecot.log');
  const confFile = path.join(dir, 'dovecot.conf');
  const instance = `memex-test-${path.basename(dir)}`;
  const port = await freePort();
  const conf = [
    `base_dir = ${dir}/run`,
    `state_dir = ${dir}/state`,
    `instance_name = ${instance}`,
    `listen = 127.0.0.1`,
    `protocols = imap`,
    `ssl = no`,
    `disable_plaintext_auth = no`,
    // Tests provoke failed logins on purpose: no 2 s failure delay per attempt.
    `auth_failure_delay = 0`,
    `auth_mechanisms = plain login${useOauth ? ' xoauth2 oauthbearer' : ''}`,
    `log_path = ${logFile}`,
    // Counted by tests: message bodies fetched in a session (bodiesFetched()).
    `imap_logout_format = in=%i out=%o fetch_body=%{fetch_body_count} fetch_hdr=%{fetch_hdr_count}`,
    ...(opts.debug || process.env.MEMEX_DOVECOT_DEBUG === '1' ? ['auth_verbose = yes', 'auth_debug = yes'] : []),
    `mail_location = maildir:~/Maildir`,
    `first_valid_uid = ${owner.uid}`,
    `first_valid_gid = ${owner.gid}`,
    ...(isRoot ? [] : [`default_internal_user = ${selfName}`, `default_login_user = ${selfName}`]),
    `passdb {`,
    `  driver = passwd-file`,
    `  args = scheme=PLAIN username_format=%u ${passwdFile}`,
    ...(useOauth ? [`  mechanisms = plain login`] : []),
    `}`,
    ...(useOauth
      ? [`passdb {`, `  driver = oauth2`, `  mechanisms = xoauth2 oauthbearer`, `  args = ${dir}/oauth2.conf.ext`, `}`]
      : []),
    `userdb {`,
    `  driver = static`,
    `  args = uid=${owner.uid} gid=${owner.gid} home=${mailRoot}/%u`,
    `}`,
    `service imap-login {`,
    `  inet_listener imap {`,
    `    address = 127.0.0.1`,
    `    port = ${port}`,
    `  }`,
    `  inet_listener imaps {`,
    `    port = 0`,
    `  }`,
    `}`,
    // No per-IP auth penalty (up to 15 s after failed logins from 127.0.0.1): with the
    // anvil-auth-penalty socket unusable, the auth process skips penalties.
    `service anvil {`,
    `  unix_listener anvil-auth-penalty {`,
    `    mode = 0`,
    `  }`,
    `}`,
    `service imap {`,
    `  process_limit = 32`,
    `}`,
    '',
  ].join('\n');
  fs.writeFileSync(confFile, conf, { mode: 0o644 });

  let child: ChildProcess;
  let output = '';
  let exitInfo: string | null = null;
  let exited: Promise<void>;
  const launch = () => {
    exitInfo = null;
    child = spawn(DOVECOT_BIN, ['-F', '-c', confFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout?.on('data', (d) => (output += d));
    child.stderr?.on('data', (d) => (output += d));
    exited = new Promise<void>((resolve) => {
      child.on('exit', (code, signal) => {
        exitInfo = `dovecot exited (code ${code}, signal ${signal})`;
        resolve();
      });
      child.on('error', (err) => {
        exitInfo = `dovecot failed to start: ${err.message}`;
        resolve();
      });
    });
  };
  launch();
  const readLog = () => {
    try {
      return output + fs.readFileSync(logFile, 'utf8');
    } catch {
      return output;
    }
  };
  const halt = async () => {
    if (exitInfo === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    }
    // The master gone, this instance's IMAP processes would go on serving their sessions (an IDLE client never
    // notices a "restart"): end them, as a server going down does.
    endInstanceProcesses(instance);
  };

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await halt();
    await introspection?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  };

  try {
    await waitForGreeting(port, Date.now() + 10_000, () => (exitInfo ? `${exitInfo}: ${readLog()}` : null));
  } catch (err) {
    const log = readLog();
    await stop();
    throw new Error(`${(err as Error).message}\n--- dovecot log ---\n${log}`);
  }

  return {
    host: '127.0.0.1',
    port,
    maildirRoot,
    deliver: (user, mailbox, message) => writeMessage(maildirRoot(user), mailbox, message, owner),
    log: readLog,
    bodiesFetched: () => [...readLog().matchAll(/fetch_body=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0),
    openSessions: () => {
      const log = readLog();
      return [...log.matchAll(/imap-login: (?:Info: )?Login: /g)].length - [...log.matchAll(/fetch_body=/g)].length;
    },
    save: (user, mailbox, raw) =>
      new Promise<void>((resolve, reject) => {
        const p = spawn('/usr/bin/doveadm', ['-c', confFile, 'save', '-u', user, '-m', mailbox], { stdio: ['pipe', 'pipe', 'pipe'] });
        let err = '';
        p.stderr?.on('data', (d) => (err += d));
        p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`doveadm save exited ${code}: ${err}`))));
        p.stdin?.end(raw);
      }),
    kick: async (user) => {
      await new Promise<void>((resolve, reject) => {
        const p = spawn('/usr/bin/doveadm', ['-c', confFile, 'kick', user], { stdio: ['ignore', 'pipe', 'pipe'] });
        let err = '';
        p.stderr?.on('data', (d) => (err += d));
        p.on('exit', (code) => (code === 0 || code === 68 ? resolve() : reject(new Error(`doveadm kick exited ${code}: ${err}`))));
      });
    },
    restart: async () => {
      await halt();
      launch();
      await waitForGreeting(port, Date.now() + 15_000, () => (exitInfo ? `${exitInfo}: ${readLog()}` : null));
    },
    stop,
  };
}
