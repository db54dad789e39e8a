/**
 * IMAP IDLE latency (issue 41): a message delivered into a real Dovecot (doveadm save, as LMTP delivers) → found by
 * GET /v1/search of a live gateway, with the agent's continuous IMAP source watching the folder (IDLE). Then the
 * agent restarts with every message already stored: the time until the next new message is found, and how many
 * message bodies the restarted agent fetched (its own count and Dovecot's logout lines).
 *
 *   node --import tsx bench/sources/imap-latency.ts [--seed 2000] [--messages 20]
 *   MEMEX_TEST_BACKEND=postgres TEST_DATABASE_URL=postgres://… node --import tsx bench/sources/imap-latency.ts
 *
 * Prints the initial sync rate, median and p95 delivery → searchable, and the restart figures.
 */
import { parseArgs } from 'node:util';
import os from 'node:os';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { coverageSourceId } from '../../src/coverage/identity.ts';
import { imapCoverageSource } from '../../src/agent/collectors/email/imap.ts';
import type { ImapFolderSync } from '../../src/agent/collectors/email/imap-sync.ts';
import { startDovecot } from '../../test/helpers/dovecot.ts';
import { mailConfig, splitGatewayClient, startLiveGateway, startUploadRecorder, tmpDir } from '../../test/email-collectors/helpers.ts';

const { values } = parseArgs({ options: { seed: { type: 'string', default: '2000' }, messages: { type: 'string', default: '20' } } });
const SEED = Number(values.seed);
const N = Number(values.messages);

const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');
const msg = (id: string, word: string) =>
  crlf(`From: bench${id}@example.org\nTo: me@example.org\nSubject: Bench ${word}\nDate: ${new Date().toUTCString()}\nMessage-ID: <${id}@bench.example>\n\nBody of ${word}, message ${id}.\n`);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

async function until(probe: () => Promise<boolean>, ms = 120_000, every = 25): Promise<void> {
  const end = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, every));
  }
}

const seed = Array.from({ length: SEED }, (_, i) => msg(`seed-${i}`, `seedword${i}`));
const dovecot = await startDovecot({ users: [{ user: 'me', password: 'bench-pass-1' }], maildirs: { me: { INBOX: seed } } });
const live = await startLiveGateway();
const recorder = await startUploadRecorder();
process.env.MEMEX_BENCH_IMAP_PASSWORD = 'bench-pass-1';
const stateDir = tmpDir('memex-bench-imap-');
const cfg = mailConfig(stateDir, { sources: [{ id: 'me', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'me', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_BENCH_IMAP_PASSWORD' }, folders: ['INBOX'] }] }, live.url);
const id = coverageSourceId(imapCoverageSource('me', 'INBOX'));
const start = async () => {
  const a = await createAgentServer(cfg, { logger: false, gateway: splitGatewayClient(live.url, recorder.url), runSources: true });
  await a.ready();
  return a;
};
const stored = async () => (await live.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE external_id LIKE 'email_imap/me:%' AND is_active_version`)).rows[0].n;
const found = async (word: string) => {
  const r = await live.gw.request('GET', `/v1/search?q=${word}&k=1`);
  return r.statusCode === 200 && r.json().hits.length > 0;
};

console.log(`machine: ${os.cpus().length} × ${os.cpus()[0]?.model}, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, backend ${process.env.MEMEX_TEST_BACKEND ?? 'pglite'}`);
let t = performance.now();
let app: AgentServer = await start();
await until(async () => (await stored()) >= SEED, 1_800_000, 500);
const initial = (performance.now() - t) / 1000;
console.log(`initial sync: ${SEED} messages in ${initial.toFixed(1)} s (${(SEED / initial).toFixed(0)} messages/s)`);
const sync = () => app.agent.sources.get(id) as unknown as ImapFolderSync;
await until(async () => sync().status().state === 'watching');

const lat: number[] = [];
for (let i = 0; i < N; i++) {
  const word = `idleword${i}x${Date.now()}`;
  t = performance.now();
  await dovecot.save('me', 'INBOX', msg(`new-${i}`, word));
  await until(() => found(word));
  lat.push(performance.now() - t);
  await new Promise((r) => setTimeout(r, 200 + Math.random() * 300));
}
console.log(`delivered → found by GET /v1/search, ${N} messages with IDLE: median ${(pct(lat, 50) / 1000).toFixed(2)} s, p95 ${(pct(lat, 95) / 1000).toFixed(2)} s, max ${(Math.max(...lat) / 1000).toFixed(2)} s`);

await app.close();
const total = await stored();
const bodiesBefore = dovecot.bodiesFetched();
t = performance.now();
app = await start();
await until(async () => sync().status().state === 'watching' && sync().counters.syncs > 0);
const resumed = (performance.now() - t) / 1000;
const word = `restartword${Date.now()}`;
const t2 = performance.now();
await dovecot.save('me', 'INBOX', msg('after-restart', word));
await until(() => found(word));
const next = (performance.now() - t2) / 1000;
const ownCount = sync().counters.bodiesFetched;
await app.close();
await until(async () => dovecot.bodiesFetched() > bodiesBefore, 30_000, 100);
console.log(
  `restart with ${total} messages stored: watching again after ${resumed.toFixed(2)} s; the next new message found ${next.toFixed(2)} s after delivery (${(resumed + next).toFixed(2)} s from the start); ` +
    `bodies fetched by the restarted agent: ${ownCount} (its count), ${dovecot.bodiesFetched() - bodiesBefore} (Dovecot's logout lines); old messages fetched again: ${ownCount - 1}`,
);
await recorder.close();
await live.close();
await dovecot.stop();
process.exit(0);
