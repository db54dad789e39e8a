/**
 * WhatsApp import benchmark (issue 43): a generated, realistic Android export (a group of eight over three years,
 * D/M/Y and 24 hours, multi-line messages, system lines, left-out media, deleted messages, "ok"s of one minute)
 * imported with `memex import` into `memex serve` (embedding worker off, so the figure is the importer and catalog
 * path), then the same export imported again: 0 new, its time as a share of the first.
 *
 *   node --import tsx bench/chats/whatsapp.ts [--messages 100000] [--backend pglite|postgres]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { importChatsCommand } from '../../src/imports/chats/cli.ts';
import { BENCH_TOKEN, startBenchServer } from '../lib/server.ts';

const { values } = parseArgs({ options: { messages: { type: 'string', default: '100000' }, backend: { type: 'string', default: process.env.MEMEX_TEST_BACKEND ?? 'pglite' } } });
const N = Number(values.messages);

const PEOPLE = ['Priya Shah', 'Sam Taylor', 'Ana Costa', 'Jordan Lee', '+44 7911 123456', 'Marta Silva', 'Kenji Sato', '+351 912 345 678'];
const WORDS = (
  'the train leaves at eight tomorrow morning from the central station and we still need tickets for the museum ' +
  'dinner was amazing thanks again for organising everything see you at the café near the river on saturday ' +
  'did anyone book the hotel yet I can pay the deposit tonight remember the passports and the charger 😂 👍 🎉'
).split(' ');

/** A deterministic pseudo-random generator, so every run imports the same export. */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

function generate(n: number): string {
  const r = rng(43);
  const p2 = (x: number) => String(x).padStart(2, '0');
  let t = Date.UTC(2021, 0, 4, 8, 0);
  const out: string[] = [];
  const stamp = () => {
    const d = new Date(t);
    return `${p2(d.getUTCDate())}/${p2(d.getUTCMonth() + 1)}/${d.getUTCFullYear()}, ${p2(d.getUTCHours())}:${p2(d.getUTCMinutes())}`;
  };
  out.push(`${stamp()} - Messages and calls are end-to-end encrypted. No one outside of this chat, not even WhatsApp, can read or listen to them. Tap to learn more.`);
  out.push(`${stamp()} - Priya Shah created group "Lisbon crew"`);
  for (let i = 0; i < n; i++) {
    // Bursts of conversation, then hours of quiet (three years for 100,000 messages).
    t += r() < 0.9 ? Math.floor(r() * 4) * 60_000 : Math.floor(r() * 8 * 3600_000);
    const who = PEOPLE[Math.floor(r() * PEOPLE.length)];
    const k = r();
    if (k < 0.005) out.push(`${stamp()} - ${who} added Kenji Sato`);
    else if (k < 0.025) out.push(`${stamp()} - ${who}: <Media omitted>`);
    else if (k < 0.03) out.push(`${stamp()} - ${who}: This message was deleted`);
    else if (k < 0.06) out.push(`${stamp()} - ${who}: ok`);
    else {
      const words = Array.from({ length: 3 + Math.floor(r() * 18) }, () => WORDS[Math.floor(r() * WORDS.length)]);
      let text = words.join(' ');
      if (r() < 0.06) text += `\n${WORDS.slice(0, 6 + Math.floor(r() * 10)).join(' ')}\n\nmessage ${i}`;
      else text += ` (${i})`;
      out.push(`${stamp()} - ${who}: ${text}`);
    }
  }
  return out.join('\n') + '\n';
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-wa-'));
const file = path.join(dir, 'WhatsApp Chat with Lisbon crew.txt');
fs.writeFileSync(file, generate(N));
const bytes = fs.statSync(file).size;
const server = await startBenchServer(values.backend as 'pglite' | 'postgres', { EMBEDDING_WORKER: 'off' });
try {
  // /v1/healthz answers while the database still opens: wait until the routes do.
  for (let i = 0; i < 600; i++) {
    const r = await fetch(`${server.url}/v1/search?q=warmup`, { headers: { authorization: `Bearer ${BENCH_TOKEN}` } });
    if (r.status === 200) break;
    await new Promise((res) => setTimeout(res, 500));
  }
  const run = async (...extra: string[]) => {
    let text = '';
    const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
    const t0 = performance.now();
    const code = await importChatsCommand([file, '--url', server.url, '--token', BENCH_TOKEN, '--timezone', 'Europe/Lisbon', '--region', 'PT', '--state', path.join(dir, 'state.json'), ...extra], {}, out);
    return { ms: performance.now() - t0, code, text };
  };
  const first = await run();
  const again = await run();
  // The same without the import state: every message is sent and the server answers duplicates.
  const rescan = await run('--rescan');
  const stored = Number(/: ([\d,]+) messages/.exec(first.text)?.[1].replace(/,/g, '') ?? 0);
  console.log(`backend=${server.backend} export=${(bytes / 1e6).toFixed(1)} MB lines=${N + 2} messages=${stored}`);
  console.log(first.text.trim());
  console.log(again.text.trim());
  console.log(`first import:  ${(first.ms / 1000).toFixed(1)} s, ${(stored / (first.ms / 1000)).toFixed(0)} messages/s (exit ${first.code})`);
  console.log(`re-import:     ${(again.ms / 1000).toFixed(1)} s, ${((100 * again.ms) / first.ms).toFixed(1)} % of the first (exit ${again.code})`);
  console.log(`re-import, --rescan (server-side duplicates): ${(rescan.ms / 1000).toFixed(1)} s, ${((100 * rescan.ms) / first.ms).toFixed(1)} % of the first (exit ${rescan.code})`);
  console.log(rescan.text.trim());
  console.log(`server peak RSS: ${server.peakRssMb().toFixed(0)} MB`);
} finally {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
