/**
 * The index snapshot's own costs (issue 34), without a server or a database: bench/search's
 * generated corpus (the documents bench/scale/run.ts ingests) indexed in memory, its words split
 * and lower-cased here in place of PostgreSQL's to_tsvector (no stemming: more distinct terms than
 * the server's index, so if anything heavier), then written and read back, each step timed in CPU
 * milliseconds of this thread (process CPU: the kernel's copies count too).
 *
 *   node --import tsx bench/scale/snapshot-load.ts [--docs 20000] [--runs 3] [--vectors 0] [--dims 512]
 *
 * Prints: serialise (the synchronous copy a write takes between two changes), the longest turn of
 * the event loop while writing, write (hash + write + fsync), load (read + verify + decode), the
 * file's size. With --vectors N: the same for a vector snapshot's file of N random 8-bit copies
 * (vector-memory.ts's sections: chunk ids and their table, scales, norms, rows), its load being
 * read + verify + the rows copied into the WebAssembly memory.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateCorpus } from '../search/corpus.ts';
import { machineLine } from '../lib/server.ts';
import { arraySection, IndexSnapshotFile, readSnapshotFile, stringSections, writeSnapshotFile, type SnapshotIdentity } from '../../src/search/index-snapshot.ts';
import { Int8Vectors } from '../../src/search/int8-vectors.ts';
import { buildStringHash, validStringHash } from '../../src/search/string-hash.ts';
import { LexicalIndex, type IndexedDocument } from '../../src/search/index/lexical-index.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const N = opt('--docs', 20_000);
const RUNS = opt('--runs', 3);
const VECTORS = opt('--vectors', 0);
const DIMS = opt('--dims', 512);
const PARAMS = { k1: 1.2, b: 0.4, titleWeight: 2 };
const IDENTITY: SnapshotIdentity = { instance: '00000000-0000-4000-8000-000000000001', migrations: { count: 1, latest: 1 }, database: '1' };
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

function lexemes(text: string | null): { terms: Map<string, number>; positions: Map<string, number[]> } {
  const terms = new Map<string, number>();
  const positions = new Map<string, number[]>();
  let at = 0;
  for (const w of (text ?? '').toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (w.length < 2) continue;
    at++;
    terms.set(w, (terms.get(w) ?? 0) + 1);
    const p = positions.get(w);
    if (p) p.push(at);
    else positions.set(w, [at]);
  }
  return { terms, positions };
}

const cpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

console.log(`snapshot load bench: ${N} documents; ${machineLine()}; load ${load()}`);
const corpus = generateCorpus(N);
const index = new LexicalIndex(PARAMS);
for (const batch of corpus.batches(1000)) for (const d of batch) {
  const title = lexemes(d.title);
  const body = lexemes(d.text);
  const doc: IndexedDocument = {
    docId: d.id,
    sourceType: d.source,
    hasAttachments: d.att,
    tsMicros: d.ts * 1000,
    threadId: d.thread,
    personIds: [d.sender.id, d.to.id],
    identifiers: [d.sender.email.toLowerCase(), d.to.email.toLowerCase()],
    title: title.terms,
    titlePositions: title.positions,
    passages: [{ chunkId: d.chunk, terms: body.terms, positions: body.positions }],
    senders: [d.sender.id],
    recipients: [d.to.id],
  };
  index.upsert(doc);
}
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-snapload-'));
const file = new IndexSnapshotFile(path.join(dir, 'search-index.snapshot'));
const position = { horizon: 1n, applied: new Map<number, bigint>(), logSeq: '1' };
try {
  for (let run = 0; run < RUNS; run++) {
    let t = cpu();
    const data = index.serialise();
    const serialiseMs = cpu() - t;
    // The longest turn of the event loop while the write runs.
    let longest = 0;
    let last = performance.now();
    let writing = true;
    const tick = () => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
      if (writing) setImmediate(tick);
    };
    setImmediate(tick);
    t = cpu();
    const bytes = await file.save(data, position, IDENTITY);
    const writeMs = cpu() - t;
    writing = false;
    global.gc?.();
    t = cpu();
    const loaded = await file.load(PARAMS);
    const loadMs = cpu() - t;
    if (!loaded.ok) throw new Error(loaded.reason);
    const probe = loaded.index.search([{ term: 'the', qtf: 1 }], {}, 10);
    console.log(
      `run ${run + 1}: serialise ${serialiseMs.toFixed(0)} ms, longest turn while writing ${longest.toFixed(0)} ms, ` +
        `write ${writeMs.toFixed(0)} ms, load ${loadMs.toFixed(0)} ms, ${(bytes / 2 ** 20).toFixed(1)} MiB, ` +
        `${loaded.index.size.documents} documents (probe ${probe.total})`,
    );
  }
  if (VECTORS > 0) {
    const vfile = path.join(dir, 'search-vectors.snapshot');
    const magic = Buffer.from('MXVECIX\n', 'latin1');
    const ids = Array.from({ length: VECTORS }, (_, i) => `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`);
    const stride = Math.ceil(DIMS / 16) * 16;
    const rows = new Uint8Array(VECTORS * stride);
    for (let i = 0; i < rows.length; i += 997) rows[i] = i & 0x7f;
    for (let run = 0; run < RUNS; run++) {
      let t = cpu();
      const bytes = await writeSnapshotFile(vfile, magic, 1, { count: VECTORS }, [
        ...stringSections('chunkIds', ids),
        arraySection('chunkIds.hash', buildStringHash(ids)),
        arraySection('scale', new Float32Array(VECTORS)),
        arraySection('norm', new Float32Array(VECTORS)),
        arraySection('rows', rows),
      ]);
      const writeMs = cpu() - t;
      global.gc?.();
      t = cpu();
      const read = await readSnapshotFile<{ count: number; sections: never[]; bodyBytes: number }>(vfile, magic, 1);
      if (!read.ok) throw new Error(read.reason);
      const got = read.strings('chunkIds', VECTORS)!;
      if (!validStringHash(read.arrays['chunkIds.hash'] as Int32Array, got.length)) throw new Error('bad table');
      const v = new Int8Vectors(DIMS);
      v.loadRows(read.arrays.rows as Uint8Array);
      const loadMs = cpu() - t;
      console.log(`vectors run ${run + 1}: ${VECTORS} x ${DIMS}: write ${writeMs.toFixed(0)} ms, load ${loadMs.toFixed(0)} ms, ${(bytes / 2 ** 20).toFixed(1)} MiB`);
    }
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(`load ${load()}`);
