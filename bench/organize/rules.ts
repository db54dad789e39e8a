/**
 * Organize (issue 44): tagging rules and tag: queries against `memex serve` in a child process.
 *   node --import tsx bench/organize/rules.ts [--docs 5000] [--backend pglite|postgres|both]
 * Prints, per backend:
 *   - a rule matching 10 % of the store applied (POST /v1/tags/rules: the tags written), and until search sees them;
 *   - ingest throughput with 20 rules against none, the same number of documents onto a store of the same size
 *     (phase B: no rules; phase C: 20 rules), and how long after the last batch the rules had tagged everything;
 *   - `tag:` queries against the plain query they restrict (median of 40 each).
 */
import { parseArgs } from 'node:util';
import { machineLine, percentile, startBenchServer, type BenchServer } from '../lib/server.ts';
import { message, rng } from '../lib/generate.ts';

const { values } = parseArgs({ options: { docs: { type: 'string', default: '5000' }, backend: { type: 'string', default: 'pglite' } } });
const N = Number(values.docs);
const backends = values.backend === 'both' ? (['pglite', 'postgres'] as const) : [values.backend as 'pglite' | 'postgres'];
const BATCH = 100;
const MARK = 'zebracode';

async function api(s: BenchServer, method: string, path: string, body?: unknown): Promise<any> {
  let res: Response;
  for (let attempt = 0; ; attempt++) {
    try {
      // A kept-alive connection the server closed meanwhile resets; the request is sent again (ingest is idempotent).
      res = await fetch(`${s.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${s.token}`, connection: 'close' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      break;
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

/** Documents from..to (every tenth carries MARK), ingested 4 batches at a time; documents/s. */
async function ingest(s: BenchServer, from: number, to: number): Promise<number> {
  const r = rng(from + 7);
  const batches: Record<string, unknown>[][] = [];
  for (let i = from; i < to; i += BATCH) {
    batches.push(
      Array.from({ length: Math.min(BATCH, to - i) }, (_, k) => {
        const d = message(r, i + k) as any;
        if ((i + k) % 10 === 0) d.content.data += ` ${MARK}`;
        return d;
      }),
    );
  }
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < batches.length) await api(s, 'POST', '/v1/ingest:batch', { documents: batches[next++] });
    }),
  );
  return (to - from) / ((performance.now() - t0) / 1000);
}

const total = async (s: BenchServer, q: string) => (await api(s, 'GET', `/v1/search?${new URLSearchParams({ q, k: '1' })}`)).total as number;

async function until(s: BenchServer, q: string, want: number): Promise<number> {
  const t0 = performance.now();
  while ((await total(s, q)) < want) await new Promise((r) => setTimeout(r, 50));
  return performance.now() - t0;
}

async function median(s: BenchServer, q: string): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < 40; i++) {
    const t0 = performance.now();
    await total(s, q);
    ms.push(performance.now() - t0);
  }
  return percentile(ms.sort((a, b) => a - b), 50);
}

async function run(backend: 'pglite' | 'postgres') {
  const s = await startBenchServer(backend, { EMBEDDING_WORKER: 'off', TAG_RULES_POLL_MS: '200' });
  try {
    while ((await fetch(`${s.url}/v1/readyz`).then((r) => r.status, () => 0)) !== 200) await new Promise((r) => setTimeout(r, 200));
    await ingest(s, 0, N); // phase A: the store
    const plain = await ingest(s, N, 2 * N); // phase B: N more, no rules
    await total(s, 'warm');

    let t0 = performance.now();
    const rule = await api(s, 'POST', '/v1/tags/rules', { tag: 'bench/ten', query: MARK });
    const applied = performance.now() - t0;
    const seen = applied + (await until(s, 'tag:bench/ten', rule.tagged));
    console.log(
      `${backend.padEnd(8)} rule matching ${rule.tagged} of ${2 * N} documents (10 %) applied in ${(applied / 1000).toFixed(2)} s, ` +
        `in search (tag:) after ${(seen / 1000).toFixed(2)} s`,
    );

    const words = ['invoice', 'plumber', 'bank transfer', 'doctor appointment', 'flight hotel', 'birthday party', 'from:ann@example.com',
      'type:email budget', 'has:attachment', 'rent landlord', 'insurance renewal', 'concert tickets', 'gym training', 'recipe',
      'password security', 'hiring interview', 'garden', 'museum', 'tag:bench/ten invoice'];
    for (const [i, q] of words.entries()) await api(s, 'POST', '/v1/tags/rules', { tag: `bench/r${i}`, query: q });
    const ruled = await ingest(s, 2 * N, 3 * N); // phase C: N more, 20 rules
    t0 = performance.now();
    const lag = await until(s, 'tag:bench/ten', Math.ceil((3 * N) / 10));
    console.log(
      `${backend.padEnd(8)} ingest of ${N} onto ${2 * N}: ${plain.toFixed(0)} docs/s without rules, ${ruled.toFixed(0)} docs/s with 20 rules ` +
        `(ratio ${(ruled / plain).toFixed(3)}); rules done ${(lag / 1000).toFixed(2)} s after the last batch`,
    );

    for (const [q, tq] of [
      ['invoice', 'invoice tag:bench/ten'],
      ['meeting budget', 'meeting budget -tag:bench/ten'],
      ['zebracode', 'tag:bench/ten'],
    ]) {
      const a = await median(s, q);
      const b = await median(s, tq);
      console.log(`${backend.padEnd(8)} median "${q}" ${a.toFixed(1)} ms, "${tq}" ${b.toFixed(1)} ms (ratio ${(b / a).toFixed(2)})`);
    }
  } finally {
    await s.stop();
  }
}

console.log(`memex organize benchmark — ${machineLine()}; ${N} documents per phase`);
for (const b of backends) await run(b);
