/**
 * Proves the throwaway Dovecot helper: a real Dovecot answers IMAP on a free loopback port, lets a
 * configured user log in (raw LOGIN over a socket, no client library in between), refuses a wrong
 * password, serves the seeded and later-delivered maildir messages, and accepts XOAUTH2 bearer
 * tokens through the oauth2 passdb. Skipped, with the reason printed, where Dovecot is not installed.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImapFlow } from 'imapflow';
import { dovecotUnavailableReason, startDovecot, type DovecotServer } from './dovecot.ts';

const unavailable = dovecotUnavailableReason();
if (unavailable) console.warn(`[dovecot tests] SKIPPED: ${unavailable}`);

/** A minimal IMAP client: sends tagged commands and collects lines up to the tagged reply. */
class RawImap {
  private buf = '';
  private waiters: Array<() => void> = [];
  private n = 0;
  private constructor(private sock: net.Socket) {
    sock.setEncoding('latin1');
    sock.on('data', (d: string) => {
      this.buf += d;
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async connect(host: string, port: number): Promise<{ imap: RawImap; greeting: string }> {
    const sock = net.connect({ host, port });
    await new Promise<void>((resolve, reject) => {
      sock.once('connect', resolve);
      sock.once('error', reject);
    });
    const imap = new RawImap(sock);
    const greeting = await imap.readUntil((b) => b.indexOf('\r\n'));
    return { imap, greeting };
  }

  private async readUntil(find: (b: string) => number): Promise<string> {
    const deadline = Date.now() + 10_000;
    for (;;) {
      const i = find(this.buf);
      if (i >= 0) {
        const out = this.buf.slice(0, i + 2);
        this.buf = this.buf.slice(i + 2);
        return out;
      }
      if (Date.now() > deadline) throw new Error(`IMAP read timed out; got ${JSON.stringify(this.buf)}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 200);
      });
    }
  }

  /**
   * Sends `<tag> <command>` and returns everything up to and including the tagged status line. A
   * continuation request ("+ ...", e.g. XOAUTH2's error challenge) is answered with an empty line.
   */
  async command(cmd: string): Promise<{ status: string; lines: string }> {
    const tag = `t${++this.n}`;
    this.sock.write(`${tag} ${cmd}\r\n`);
    let lines = '';
    for (;;) {
      const line = await this.readUntil((b) => b.indexOf('\r\n'));
      lines += line;
      if (line.startsWith('+')) this.sock.write('\r\n');
      else if (line.startsWith(`${tag} `)) {
        return { status: line.slice(tag.length + 1).split(' ')[0], lines };
      }
    }
  }

  close(): void {
    this.sock.destroy();
  }
}

const message = (subject: string) =>
  [
    'From: Alice Example <alice@example.org>',
    'To: Bob <bob@example.org>',
    `Subject: ${subject}`,
    'Date: Mon, 02 Nov 2026 10:00:00 +0000',
    `Message-ID: <${subject.replace(/\W/g, '')}@example.org>`,
    '',
    `Body of ${subject}.`,
    '',
  ].join('\r\n');

describe.skipIf(unavailable !== null)(`throwaway Dovecot (test/helpers/dovecot.ts)${unavailable ? ` — skipped: ${unavailable}` : ''}`, () => {
  let server: DovecotServer;

  beforeAll(async () => {
    server = await startDovecot({
      users: [
        { user: 'bob', password: 'hunter2', xoauth2: { token: 'ya29.bob-token' } },
        { user: 'carol', password: 'c4rol' },
      ],
      maildirs: {
        bob: {
          INBOX: [message('first'), { raw: message('second'), flags: ['\\Seen'] }],
          Archive: [message('archived')],
        },
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('listens on a loopback port of its own, not 143', () => {
    expect(server.host).toBe('127.0.0.1');
    expect(server.port).not.toBe(143);
    expect(server.port).toBeGreaterThan(0);
  });

  it('lets a configured user LOGIN over a raw socket and see the seeded INBOX', async () => {
    const { imap, greeting } = await RawImap.connect(server.host, server.port);
    try {
      expect(greeting).toMatch(/^\* OK/);
      const login = await imap.command('LOGIN bob hunter2');
      expect(login.status).toBe('OK');
      const select = await imap.command('SELECT INBOX');
      expect(select.status).toBe('OK');
      expect(select.lines).toMatch(/\* 2 EXISTS/);
      const seen = await imap.command('SEARCH SEEN');
      expect(seen.lines).toMatch(/\* SEARCH 2\r\n/);
      const list = await imap.command('LIST "" "*"');
      expect(list.lines).toMatch(/"Archive"|Archive\r\n/);
      expect((await imap.command('LOGOUT')).status).toBe('OK');
    } finally {
      imap.close();
    }
  });

  it('refuses a wrong password and an unknown user', async () => {
    const { imap } = await RawImap.connect(server.host, server.port);
    try {
      expect((await imap.command('LOGIN bob wrong')).status).toBe('NO');
      expect((await imap.command('LOGIN mallory hunter2')).status).toBe('NO');
    } finally {
      imap.close();
    }
  });

  it('serves a message delivered while it runs, readable with imapflow', async () => {
    server.deliver('carol', 'INBOX', message('late arrival'));
    const client = new ImapFlow({
      host: server.host,
      port: server.port,
      secure: false,
      auth: { user: 'carol', pass: 'c4rol' },
      logger: false,
    });
    await client.connect();
    try {
      const lock = await client.getMailboxLock('INBOX');
      try {
        const subjects: string[] = [];
        for await (const m of client.fetch('1:*', { envelope: true })) subjects.push(m.envelope?.subject ?? '');
        expect(subjects).toEqual(['late arrival']);
      } finally {
        lock.release();
      }
    } finally {
      await client.logout();
    }
  });

  it('accepts the user\'s bearer token over AUTHENTICATE XOAUTH2 and rejects another token', async () => {
    const xoauth2 = (user: string, token: string) =>
      Buffer.from(`user=${user}\x01auth=Bearer ${token}\x01\x01`).toString('base64');
    const { imap } = await RawImap.connect(server.host, server.port);
    try {
      const caps = await imap.command('CAPABILITY');
      expect(caps.lines).toMatch(/AUTH=XOAUTH2/);
      const bad = await imap.command(`AUTHENTICATE XOAUTH2 ${xoauth2('bob', 'not-the-token')}`);
      // A failed XOAUTH2 first sends a JSON error challenge; the client answers with an empty line.
      expect(bad.status).not.toBe('OK');
    } finally {
      imap.close();
    }
    const second = await RawImap.connect(server.host, server.port);
    try {
      const good = await second.imap.command(`AUTHENTICATE XOAUTH2 ${xoauth2('bob', 'ya29.bob-token')}`);
      expect(good.status).toBe('OK');
      const select = await second.imap.command('SELECT Archive');
      expect(select.lines).toMatch(/\* 1 EXISTS/);
    } finally {
      second.imap.close();
    }
  });

  it('lets imapflow log in with an accessToken (XOAUTH2)', async () => {
    const client = new ImapFlow({
      host: server.host,
      port: server.port,
      secure: false,
      auth: { user: 'bob', accessToken: 'ya29.bob-token' },
      logger: false,
    });
    await client.connect();
    try {
      const status = await client.status('INBOX', { messages: true });
      expect(status && status.messages).toBe(2);
    } finally {
      await client.logout();
    }
  });
});
