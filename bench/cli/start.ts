/**
 * How long the `memex` command takes to start, against a bare `node -e 0` on the same machine at the same time.
 *
 *   node --import tsx bench/cli/start.ts [--runs 15] [--npx]
 *
 * Runs each variant --runs times, interleaved (so machine load hits them alike), and prints the median and the
 * ratio to `node -e 0`:
 *   - node -e 0                          the floor: Node's own start
 *   - memex help (PATH)                  the documented way: `npm link` once, then `memex` (the bin symlink)
 *   - memex search (PATH, no server)     a client verb end to end: parse, find the server, report it is not there
 *   - node bin/memex.js help             the same entry without the PATH lookup
 *   - npx memex help (--npx only)        what the README used to say; slow, and npx may fetch a registry package
 * `memex` must be on PATH (`npm link`); the bench says so when it is not. The compiled build must be fresh
 * (`npm run build:cli`), else bin/memex.js runs the TypeScript through tsx and the figure is the slow path.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { machineLine, ROOT } from '../lib/server.ts';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '15' }, npx: { type: 'boolean', default: false } } });
const runs = Number(values.runs);

const which = spawnSync('sh', ['-c', 'command -v memex'], { encoding: 'utf8' }).stdout.trim();
if (!which) {
  console.error('memex is not on PATH: run `npm link` in the project folder first');
  process.exit(1);
}
const { freshCompiledEntry } = (await import(path.join(ROOT, 'bin', 'compiled.js'))) as { freshCompiledEntry(): string | null };
if (!freshCompiledEntry()) console.warn('warning: build/ is stale or missing (npm run build:cli): figures are for the tsx path');

// A client verb with no server: a free port, and a data dir without a token.
const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-start-'));
const env = { ...process.env, PORT: '1', DATA_DIR: empty, MEMEX_URL: '', AUTH_TOKEN: '' };

const variants: { name: string; cmd: string; args: string[] }[] = [
  { name: 'node -e 0', cmd: process.execPath, args: ['-e', '0'] },
  { name: 'memex help (PATH)', cmd: 'memex', args: ['help'] },
  { name: 'memex search (PATH, no server)', cmd: 'memex', args: ['search', 'lisbon'] },
  { name: 'node bin/memex.js help', cmd: process.execPath, args: [path.join(ROOT, 'bin', 'memex.js'), 'help'] },
  ...(values.npx ? [{ name: 'npx memex help', cmd: 'npx', args: ['memex', 'help'] }] : []),
];

const times = new Map(variants.map((v) => [v.name, [] as number[]]));
for (let i = 0; i < runs; i++) {
  for (const v of variants) {
    const t = performance.now();
    spawnSync(v.cmd, v.args, { cwd: ROOT, env, stdio: 'ignore' });
    times.get(v.name)!.push(performance.now() - t);
  }
}
fs.rmSync(empty, { recursive: true, force: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const floor = median(times.get('node -e 0')!);
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${runs} runs each, interleaved; memex = ${which}`);
console.log('| command | median | × node -e 0 |');
console.log('|---|---|---|');
for (const v of variants) {
  const m = median(times.get(v.name)!);
  console.log(`| \`${v.name}\` | ${m.toFixed(0)} ms | ${(m / floor).toFixed(2)} |`);
}
