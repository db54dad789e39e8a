/**
 * A file written into a watched folder → found by GET /v1/search (issue 41: median ≤ 2 s, p95 ≤ 5 s), for a Maildir
 * and for a Mail.app `.emlx` tree, side by side in one run against the same `memex serve` (a child process):
 *
 * - Maildir: `memex import mail --watch` (runMailImport in this process, the CLI's code) on a Maildir of `--base`
 *   messages; a message is delivered as a delivery agent writes it (tmp/, then a rename into new/).
 * - `.emlx`: the agent's source runner (createAgentServer with runSources, in this process, as `memex serve` runs
 *   its sources) watching a `type: local` source of `--base` messages; a message is written as
 *   `INBOX.mbox/Data/9/Messages/N.emlx`.
 *
 * `--messages` deliveries of each, alternating Maildir and `.emlx` so both meet the same load; each has a word of
 * its own, and the time until a search for that word answers it is taken (polled every 50 ms).
 *
 *   node --import tsx bench/email/watch-latency.ts [--messages 20] [--base 1000] [--backend pglite|postgres] [--record]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { validateAgentConfig } from '../../src/agent/config.ts';
import { createAgentServer } from '../../src/agent/server.ts';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { recordFigure } from '../lib/record.ts';
import { machineLine, percentile, startBenchServer } from '../lib/server.ts';
import { generateCorpus, writeEmlxTree, writeMaildir } from './corpus.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '20' },
    base: { type: 'string', default: '1000' },
    backend: { type: 'string', default: 'pglite' },
    record: { type: 'boolean', default: false },
  },
});
const count = Number(values.messages);
const backend = values.backend as 'pglite' | 'postgres';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-watch-latency-'));
const base = Number(values.base);
const md = writeMaildir(path.join(work, 'Maildir'), generateCorpus({ messages: base, seed: 41, domain: 'watch41.example' }).messages);
const tree = writeEmlxTree(path.join(work, 'Mail', 'V10'), generateCorpus({ messages: base, seed: 42, domain: 'emlx41.example' }).messages);
const loadBefore = os.loadavg()[0];
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${base} messages watched in each, memex on ${backend}`);

const server = await startBenchServer(backend);
const quiet = { write: () => true, isTTY: false };
const stop = new AbortController();
let watching!: () => void;
const on = new Promise<void>((r) => (watching = r));
const env = { ...process.env, MEMEX_MAIL_IMPORT_STATE: path.join(work, 'state.json') };
const done = runMailImport(['mail', md, '--watch', '--url', server.url, '--token', server.token], { out: quiet, err: quiet, env, signal: stop.signal, onWatching: watching });
await on;

const state = path.join(work, 'agent-state');
const agentConfig = validateAgentConfig(
  {
    auth: { secret: 'bench-agent-secret-0123456789abcdef' },
    logging: { level: 'warning' },
    gateway: { base_url: server.url, auth_token: server.token },
    modules: {
      mail: {
        enabled: true,
        state: { run_state_path: path.join(state, 'run.json'), rejected_log_path: path.join(state, 'rejected.log'), lock_file_path: path.join(state, 'lock') },
        sources: [{ id: 'mailapp', type: 'local', source_path: tree }],
      },
    },
  },
  'agent.yaml',
  { HOME: os.homedir() },
);
const agent = await createAgentServer(agentConfig, { logger: false, runSources: true });
await agent.ready();
const agentSource = async () =>
  (await agent.inject({ method: 'GET', url: '/v1/sources', headers: { 'x-auth': agentConfig.auth.secret } })).json().sources[0] as { state: string; detail?: { messages?: number } };
const firstAt = performance.now();
for (;;) {
  const s = await agentSource();
  if (s.state === 'watching' && s.detail?.messages === base) break;
  if (performance.now() - firstAt > 1_800_000) throw new Error(`the .emlx tree was not caught up within 30 min: ${JSON.stringify(s)}`);
  await new Promise((r) => setTimeout(r, 500));
}
console.log(`.emlx tree of ${base} messages caught up by the watch's first run in ${((performance.now() - firstAt) / 1000).toFixed(1)} s`);

async function foundAfter(word: string, t: number): Promise<number> {
  for (;;) {
    // A connection the loaded server reset is asked again, as a person would.
    const body = await fetch(`${server.url}/v1/search?q=${word}&k=1`, { headers: { authorization: `Bearer ${server.token}` } })
      .then((r) => r.json() as Promise<{ hits?: unknown[] }>)
      .catch(() => ({ hits: [] }));
    if (body.hits?.length) return (performance.now() - t) / 1000;
    if (performance.now() - t > 60_000) throw new Error(`${word} not found within 60 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
const word = (kind: string, i: number) => `${kind}probe${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + (Math.floor(i / 26) % 26))}zq`;
const message = (kind: string, i: number, domain: string) =>
  Buffer.from(`From: Probe <probe@${domain}>\r\nTo: me@${domain}\r\nSubject: probe ${i}\r\nMessage-ID: <${kind}-probe-${i}@${domain}>\r\nDate: ${new Date().toUTCString()}\r\n\r\nThe ${word(kind, i)} arrived.\r\n`);
const maildir: number[] = [];
const emlx: number[] = [];
const emlxBox = path.join(tree, 'INBOX.mbox', 'Data', '9', 'Messages');
fs.mkdirSync(emlxBox, { recursive: true });
await new Promise((r) => setTimeout(r, 1000)); // the new folder is watched after the run its event starts
for (let i = 0; i < count; i++) {
  const name = `${1800000000 + i}.M${i}P1.bench`;
  let t = performance.now();
  fs.writeFileSync(path.join(md, 'tmp', name), message('maildir', i, 'watch41.example'));
  fs.renameSync(path.join(md, 'tmp', name), path.join(md, 'new', name));
  maildir.push(await foundAfter(word('maildir', i), t));
  await new Promise((r) => setTimeout(r, 200));

  const raw = message('emlx', i, 'emlx41.example');
  const plist = `<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>flags</key><integer>0</integer></dict></plist>\n`;
  t = performance.now();
  fs.writeFileSync(path.join(emlxBox, `${90000 + i}.emlx`), Buffer.concat([Buffer.from(`${raw.length}\n`), raw, Buffer.from(plist)]));
  emlx.push(await foundAfter(word('emlx', i), t));
  await new Promise((r) => setTimeout(r, 200));
}
stop.abort();
await done;
await agent.close();
const loadAfter = os.loadavg()[0];
const line = (xs: number[]) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return { median: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted.at(-1)! };
};
const m = line(maildir);
const e = line(emlx);
const say = (what: string, f: typeof m) => `${what} written → found: median ${f.median.toFixed(2)} s, p95 ${f.p95.toFixed(2)} s, max ${f.max.toFixed(2)} s over ${count} messages`;
console.log(say('Maildir', m));
console.log(say('.emlx  ', e));
console.log(`.emlx / Maildir: median ${(e.median / m.median).toFixed(2)}, p95 ${(e.p95 / m.p95).toFixed(2)}; load ${loadBefore.toFixed(1)} → ${loadAfter.toFixed(1)}`);
if (values.record) {
  const met = (f: typeof m) => (f.median <= 2 && f.p95 <= 5 ? 'targets 2 / 5 s met' : 'targets 2 / 5 s not met');
  const conditions = `${backend === 'pglite' ? 'PGlite' : 'PostgreSQL'}, ${base} watched, ${count} alternating deliveries; load ${loadBefore.toFixed(0)} → ${loadAfter.toFixed(0)}, ${new Date().toISOString().slice(0, 10)}`;
  const command = `\`node --import tsx bench/email/watch-latency.ts ${process.argv.slice(2).filter((a) => a !== '--record').join(' ')}\``.replace(' `', '`');
  const section = 'Watched mail (issue 41)';
  recordFigure({ area: 'watched Maildir: written → found', figure: 'median / p95', value: `${m.median.toFixed(2)} / ${m.p95.toFixed(2)} s (${met(m)})`, conditions, command, section });
  recordFigure({ area: 'watched .emlx tree: written → found', figure: 'median / p95', value: `${e.median.toFixed(2)} / ${e.p95.toFixed(2)} s (${met(e)})`, conditions, command, section });
}
await server.stop();
fs.rmSync(work, { recursive: true, force: true });
