/**
 * Bare addresses and `to:` against notmuch (issue 40 item 8, issue 48 item 3) on a generated list Maildir:
 * kernel-list-shaped mail (List-Id, a bounce Sender, "open list:" recipients, stable@ in Cc of a share of it, a
 * maintainer who queues patches by writing to himself). memex imports it with `memex import mail` (this process,
 * the CLI's code) into `memex serve` (PGlite, embedding worker off); notmuch indexes the same folder.
 *
 *   node --import tsx bench/email/list-addresses.ts [--messages 1000] [--backend pglite|postgres] [--root OTHER_CHECKOUT]
 *
 * Prints, per query, notmuch's count and memex's `total`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { startBenchServer } from '../lib/server.ts';
import { notmuchConfig } from './notmuch.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '1000' },
    backend: { type: 'string', default: 'pglite' },
    /** Another memex checkout whose server answers (to compare with the code before a change). */
    root: { type: 'string' },
  },
});
const total = Number(values.messages);

/** A small deterministic generator (mulberry32). */
function rng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = rng(40);
const devs = Array.from({ length: 40 }, (_, i) => ({ name: `Developer ${i}`, address: `dev${i}@example${i % 7}.org` }));
const greg = { name: 'Greg Kroah-Hartman', address: 'gregkh@linuxfoundation.org' };
const words = 'clock watchdog irq domain mapping regulator devicetree binding fix leak probe driver cache tlb boot'.split(' ');

function message(i: number): string {
  const date = new Date(Date.UTC(2019, 10, 1) + i * 3_600_000).toUTCString().replace('GMT', '+0000');
  const subject = `[PATCH ${i}] MIPS: ${words[i % words.length]} ${words[(i * 7) % words.length]}`;
  const body = `This patch fixes the ${words[(i * 3) % words.length]} handling.\n`;
  if (rand() < 0.1) {
    // Greg queues a patch: to himself, stable in Cc, no list.
    return `From: ${greg.name} <${greg.address}>\nTo: ${greg.address}\nCc: stable@vger.kernel.org\nSubject: patch "${subject}" added\nDate: ${date}\nMessage-ID: <queue-${i}@linuxfoundation.org>\n\n${body}`;
  }
  const from = rand() < 0.15 ? greg : devs[Math.floor(rand() * devs.length)];
  const to = devs[Math.floor(rand() * devs.length)];
  const cc = ['"open list:MIPS" <linux-mips@vger.kernel.org>'];
  if (rand() < 0.3) cc.push('stable@vger.kernel.org');
  if (rand() < 0.2) cc.push(`${greg.name} <${greg.address}>`);
  const mention = rand() < 0.05 ? '\nPlease Cc stable@vger.kernel.org on the next version.\n' : '';
  return (
    `From: ${from.name} <${from.address}>\nTo: ${to.name} <${to.address}>\nCc: ${cc.join(', ')}\n` +
    `Sender: linux-mips-owner@vger.kernel.org\nPrecedence: bulk\nList-Id: <linux-mips.vger.kernel.org>\n` +
    `Subject: ${subject}\nDate: ${date}\nMessage-ID: <patch-${i}@example.org>\n\n${body}${mention}`
  );
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-list-bench-'));
const maildir = path.join(work, 'Maildir');
for (const sub of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(maildir, sub), { recursive: true });
for (let i = 0; i < total; i++) fs.writeFileSync(path.join(maildir, 'cur', `${i}.bench:2,S`), message(i).replace(/\n/g, '\r\n'));

const queries = ['stable@vger.kernel.org', 'to:stable@vger.kernel.org', 'gregkh@linuxfoundation.org', 'to:gregkh@linuxfoundation.org', 'from:gregkh@linuxfoundation.org'];
const env = { ...process.env, NOTMUCH_CONFIG: notmuchConfig(maildir, path.join(work, 'notmuch')) };
execFileSync('notmuch', ['new', '--quiet'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
const notmuch = new Map(queries.map((q) => [q, Number(execFileSync('notmuch', ['count', q], { env }).toString().trim())]));

const server = await startBenchServer(values.backend as 'pglite' | 'postgres', { EMBEDDING_WORKER: 'off' }, ...(values.root ? [values.root] : []));
try {
  // The server answers 503 while it starts (the database, the index): wait until it is ready.
  for (let t = Date.now(); Date.now() - t < 15 * 60_000; ) {
    const r = await fetch(`${server.url}/v1/readyz`).catch(() => null);
    if (r?.status === 200) break;
    await new Promise((res) => setTimeout(res, 1000));
  }
  const sink = { write: () => true, isTTY: false };
  let said = '';
  const code = await runMailImport([maildir], {
    out: sink,
    err: { write: (s: string) => ((said += s), true), isTTY: false },
    env: { ...process.env, MEMEX_URL: server.url, AUTH_TOKEN: server.token, MEMEX_MAIL_IMPORT_STATE: path.join(work, 'state.json') },
  });
  if (code !== 0) throw new Error(`memex import mail exited ${code}: ${said.slice(-2000)}`);
  console.log(`${total} messages, ${server.backend}`);
  console.log('| query | notmuch | memex |');
  console.log('|---|---|---|');
  for (const q of queries) {
    const res = await fetch(`${server.url}/v1/search?${new URLSearchParams({ q, k: '1' })}`, { headers: { authorization: `Bearer ${server.token}` } });
    const body = (await res.json()) as { total: number };
    console.log(`| \`${q}\` | ${notmuch.get(q)} | ${body.total} |`);
  }
} finally {
  await server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
