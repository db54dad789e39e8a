/**
 * A rescan of an unchanged Maildir (issue 41: ≤ 2 s for 5,000 messages on both backends), side by side with
 * `mu index` and `notmuch new` on the same folder in one run. The mail is real-shaped list mail
 * (bench/email/list-mail.ts: `git format-patch` of this repository with replies, several seeds to reach the
 * count). Each tool indexes the folder once, then the unchanged rescan is timed as a whole process (Node's
 * start included: a user runs the command), in turn: memex, mu, notmuch, `--runs` times; medians and the
 * ratio to mu are printed. memex runs `node bin/memex.js import mail` against `memex serve` in a child process
 * (embedding worker on, as a user runs it). Run `npm run build:cli` first, else the command starts through tsx.
 *
 *   node --import tsx bench/email/rescan.ts [--messages 5000] [--backend both|postgres|pglite] [--runs 5]
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { machineLine, ROOT, startBenchServer } from '../lib/server.ts';
import { generateListMail } from './list-mail.ts';
import { notmuchConfig } from './notmuch.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '5000' },
    backend: { type: 'string', default: 'both' },
    runs: { type: 'string', default: '5' },
  },
});
const total = Number(values.messages);
const runs = Number(values.runs);
const backends = values.backend === 'both' ? (['postgres', 'pglite'] as const) : [values.backend as 'postgres' | 'pglite'];

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-rescan-'));
const md = path.join(work, 'Maildir');
for (const d of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(md, d), { recursive: true });
let n = 0;
for (let seed = 40; n < total; seed++) {
  for (const m of generateListMail({ patches: 600, repliesPerPatch: 3, seed, domain: `list${seed}.example` })) {
    if (n >= total) break;
    const flags = n % 4 === 0 ? '' : ':2,S';
    fs.writeFileSync(path.join(md, flags ? 'cur' : 'new', `${1700000000 + n}.M${n}P1.bench${flags}`), m.raw);
    n++;
  }
}
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`corpus: ${n} list messages in a Maildir`);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function timed(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): number {
  const t = performance.now();
  const r = spawnSync(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 26 });
  const s = (performance.now() - t) / 1000;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${r.status}: ${r.stderr.toString().slice(0, 500)}`);
  return s;
}

const nmEnv = { ...process.env, NOTMUCH_CONFIG: notmuchConfig(md, path.join(work, 'notmuch')) };
const muHome = path.join(work, 'mu');
spawnSync('mu', ['init', `--muhome=${muHome}`, '-m', md], { stdio: 'ignore' });
const muFirst = timed('mu', ['index', `--muhome=${muHome}`]);
const nmFirst = timed('notmuch', ['new', '--quiet'], nmEnv);
console.log(`first index: mu ${muFirst.toFixed(1)} s, notmuch ${nmFirst.toFixed(1)} s`);

for (const backend of backends) {
  const server = await startBenchServer(backend);
  const env = { ...process.env, MEMEX_URL: server.url, AUTH_TOKEN: server.token, MEMEX_MAIL_IMPORT_STATE: path.join(work, `state-${backend}.json`) };
  const cli = [path.join(ROOT, 'bin', 'memex.js'), 'import', 'mail', md];
  const first = timed(process.execPath, cli, env);
  const memex: number[] = [];
  const mu: number[] = [];
  const nm: number[] = [];
  const loads: number[] = [];
  for (let i = 0; i < runs; i++) {
    loads.push(os.loadavg()[0]);
    memex.push(timed(process.execPath, cli, env));
    mu.push(timed('mu', ['index', `--muhome=${muHome}`]));
    nm.push(timed('notmuch', ['new', '--quiet'], nmEnv));
  }
  const ratios = memex.map((m, i) => m / mu[i]);
  console.log(
    `${backend}: first import ${first.toFixed(1)} s; unchanged rescan median ${median(memex).toFixed(2)} s (min ${Math.min(...memex).toFixed(2)}, max ${Math.max(...memex).toFixed(2)}); ` +
      `mu ${median(mu).toFixed(2)} s, notmuch ${median(nm).toFixed(3)} s; memex/mu median ${median(ratios).toFixed(2)}; load ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`,
  );
  await server.stop();
}
fs.rmSync(work, { recursive: true, force: true });
