/**
 * One model's vectors in memory, 8 bits per dimension, for the k-NN of filtered searches.
 *
 * Why: a filtered k-NN in the database either walks the HNSW graph until enough rows pass the
 * filter or reads the allowed chunks' vectors one index probe at a time. At 100,000 documents a
 * two-month date range cost 45 CPU-ms on PostgreSQL and 2.3 s on PGlite, one person's documents 14
 * and 200 ms, and PGlite cannot interrupt a statement: every other request waited (docs/BENCHMARKS.md).
 * Here the lexical index lists the chunks the filter allows (index/filter.ts, allowedPassages) and
 * they are ranked exactly against these copies, ~1.2 µs per chunk (the dot products in WebAssembly
 * SIMD, int8-vectors.ts; most of the rest is finding each chunk's copy by its id).
 *
 * - PostgreSQL stays the store. Vectors of a (model, chunk) never change once stored, so a copy is
 *   never stale: `warm()` loads them in the background and what is not here yet is read on demand
 *   (one statement for a query's missing chunks). A chunk without a vector is asked for
 *   again after ABSENT_RETRY_MS (the worker may have embedded it since).
 * - 8 bits: each vector is scaled so its largest component is 127 (4× smaller than float32: 512 bytes
 *   for USE-lite). Against the float vectors, on SciFact's 8,654 USE-lite chunks and 100 queries:
 *   cosine within 0.0012 (mean 0.00016), 0.5 of the 100 nearest chunks different per query (ties at
 *   the edge). Similarities are cosines, so any provider's vectors work, normalised or not.
 * - Bounded: once `maxBytes` are held no more are kept; chunks beyond are read for the query that
 *   needs them. `clear()` (after a forget) drops everything: nothing erased may stay in memory.
 */
import fs from 'node:fs';
import type { Queryable } from '../db/types.ts';
import { arraySection, readSnapshotFile, stringSections, writeSnapshotFile, type SectionEntry, type SnapshotIdentity } from './index-snapshot.ts';
import { readIdentity } from './index-sync.ts';
import { Int8Vectors } from './int8-vectors.ts';
import { buildStringHash, findInStringHash, validStringHash } from './string-hash.ts';
import type { VectorCandidate } from './vector.ts';

/**
 * The copies on disk (DATA_DIR/search-vectors.snapshot), beside the lexical index's snapshot and
 * in its container (index-snapshot.ts: versioned, SHA-256, written atomically): a start reads them
 * with one read instead of every vector from the database, then reads the vectors stored since.
 */
const VECTOR_MAGIC = Buffer.from('MXVECIX\n', 'latin1');
export const VECTOR_SNAPSHOT_FORMAT = 1;
/**
 * Vectors stored up to this long before the copies were complete are read again at a load: a
 * vector's embedded_at is its transaction's start, and one that committed later was not read.
 * Anything missed is still read on demand by the query that needs it.
 */
const CATCH_UP_MARGIN = '15 minutes';

interface VectorSnapshotHeader {
  format: number;
  identity: SnapshotIdentity;
  model: string;
  dims: number;
  stride: number;
  count: number;
  /** The database's clock when every vector stored before was read (warmed or caught up). */
  coveredAt: string;
  createdAt: string;
  sections: SectionEntry[];
  bodyBytes: number;
}

export type VectorSnapshotEvent =
  | { kind: 'loaded'; vectors: number; bytes: number; caughtUp: number; ms: number }
  | { kind: 'rejected'; reason: string }
  | { kind: 'written'; vectors: number; bytes: number; ms: number }
  | { kind: 'write_failed'; error: string };

/** How long a chunk found without a vector is not asked for again. */
export const ABSENT_RETRY_MS = 30_000;
/**
 * Vectors per statement, reading missing chunks or warming: on PGlite a statement holds the one
 * database session (and the event loop) until it ends, so warming goes in short steps.
 */
const PAGE = 250;
/** Heap pages per warming step: ~3 rows of 512-dimension vectors a page, so ~300 vectors. */
const WARM_PAGES = 100;
/**
 * Filters allowing more chunks than this are left to the HNSW graph walk in the database. Ranking
 * here costs ~1.2 µs per chunk scattered over 100,000 (8,000 in ~10 ms of the gateway thread;
 * 2.6 µs before the SIMD dot products), and a filter allowing a tenth of the documents or more lets
 * the walk find its rows after about a thousand tuples.
 */
export const MEMORY_MAX_PASSAGES = 10_000;
/** Chunks remembered as having no vector yet, at most (then forgotten at once). */
const ABSENT_MAX = 200_000;

/**
 * pgvector's binary form (vector_send): int16 dimensions, int16 unused, then big-endian float32s.
 * Read as base64 text: PGlite hands bytea over as hex text, 13× slower for these rows.
 */
export function decodeVector(bytes: Uint8Array): Float32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const dims = view.getInt16(0);
  const out = new Float32Array(dims);
  for (let i = 0; i < dims; i++) out[i] = view.getFloat32(4 + 4 * i, false);
  return out;
}

/**
 * The query in integers: scaled so its largest component is QUERY_SCALE (an int16). With 8-bit
 * vectors a product is at most 127 × 16,383 and a sum of 512 of them stays within int32 (1.07e9),
 * so the dot products run in integer SIMD arithmetic (int8-vectors.ts); the query's own rounding
 * adds ~1/16,383 relative error.
 */
const QUERY_SCALE = 16_383;

export class VectorMemory {
  private dims = 0;
  /** Slots of copies kept since the snapshot was loaded (all of them without one). */
  private readonly slotOf = new Map<string, number>();
  /** Chunk id by slot. */
  private ids: string[] = [];
  /** The snapshot's copies (slots 0 .. n - 1): a table over `ids` (string-hash.ts), read in place. */
  private baseTable: Int32Array | null = null;
  /** The database's clock when every vector stored before it was held (or the memory was full); null: not yet. */
  private coveredAt: string | null = null;
  private snapshotTried = false;
  /** A snapshot is being read: nothing is kept meanwhile (queries use what they read, exactly). */
  private loading = false;
  /** `count` and `generation` of the copies on disk. */
  private saved = { count: -1, generation: -1 };
  private saving: Promise<void> | null = null;
  /** The 8-bit copies by slot (created with the first vector: its length fixes the dimensions). */
  private vectors: Int8Vectors | null = null;
  /** Per vector: the factor back to its floats, and its norm (of the floats). */
  private scale = new Float32Array(0);
  private norm = new Float32Array(0);
  private count = 0;
  private readonly absentAt = new Map<string, number>();
  private full = false;
  /** Bumped by clear(): a read that was in flight then is not kept. */
  private generation = 0;
  private warming: Promise<void> | null = null;

  constructor(
    private readonly db: Queryable,
    readonly model: string,
    private readonly opts: {
      maxBytes: number;
      now?: () => number;
      /** Where the copies are kept between starts; none: read from the database at every start. */
      snapshot?: { file: string; onEvent?: (event: VectorSnapshotEvent) => void };
    },
  ) {}

  private slotFor(chunkId: string): number | undefined {
    return this.slotOf.get(chunkId) ?? (this.baseTable === null ? undefined : findInStringHash(this.baseTable, this.ids, chunkId));
  }

  get size(): { vectors: number; bytes: number } {
    return { vectors: this.count, bytes: this.count * this.dims };
  }

  /** Drops every copy (after a forget), and the copies on disk: nothing erased may stay. */
  clear(): void {
    this.generation++;
    if (this.opts.snapshot) fs.rmSync(this.opts.snapshot.file, { force: true });
    this.saved = { count: -1, generation: -1 };
    this.ids = [];
    this.baseTable = null;
    this.coveredAt = null;
    this.slotOf.clear();
    this.absentAt.clear();
    this.count = 0;
    this.full = false;
    this.vectors = null;
    this.scale = new Float32Array(0);
    this.norm = new Float32Array(0);
    this.warming = null;
  }

  /**
   * The `k` documents whose best chunk among `passages` (parallel arrays: chunk i belongs to
   * document i) is nearest to `query` by cosine, best first.
   */
  async nearest(query: number[], passages: { chunkIds: string[]; docIds: string[] }, k: number): Promise<VectorCandidate[]> {
    const { chunkIds, docIds } = passages;
    const n = chunkIds.length;
    const now = this.opts.now?.() ?? Date.now();
    // One lookup per passage: its copy's slot, or -1 and read from the database below unless it
    // was found without a vector lately.
    const generation = this.generation;
    const slotAt = new Int32Array(n).fill(-1);
    const missing: number[] = [];
    for (let i = 0; i < n; i++) {
      const slot = this.slotFor(chunkIds[i]);
      if (slot !== undefined) {
        slotAt[i] = slot;
        continue;
      }
      const absent = this.absentAt.get(chunkIds[i]);
      if (absent !== undefined && now - absent < ABSENT_RETRY_MS) continue;
      missing.push(i);
    }
    const read = missing.length > 0 ? await this.read(missing.map((i) => chunkIds[i])) : new Map<string, Float32Array>();

    const dims = query.length;
    const q = Float64Array.from(query);
    let qNorm = 0;
    let qMax = 0;
    for (let d = 0; d < dims; d++) {
      qNorm += q[d] * q[d];
      qMax = Math.max(qMax, Math.abs(q[d]));
    }
    qNorm = Math.sqrt(qNorm);
    if (qNorm === 0) return [];
    const qi = Int16Array.from(q, (x) => Math.round((x / qMax) * QUERY_SCALE));
    const qUnit = qMax / QUERY_SCALE;
    // Each passage's cosine (NaN: no vector), then each document's best passage. The kept copies'
    // dot products are computed together (SIMD), the rest exactly from the floats just read.
    const sims = new Float64Array(n).fill(NaN);
    // The read may have kept what it read; a clear() while it ran renumbered every slot.
    const usable = this.vectors !== null && this.dims === dims;
    for (const i of generation === this.generation ? missing : slotAt.keys()) slotAt[i] = this.slotFor(chunkIds[i]) ?? -1;
    const { scale, norm, vectors } = this;
    const slots = new Int32Array(n);
    const slotFor = new Int32Array(n);
    let nSlots = 0;
    for (let i = 0; i < n; i++) {
      const slot = usable ? slotAt[i] : -1;
      if (slot >= 0) {
        if (norm[slot] === 0) continue;
        slots[nSlots] = slot;
        slotFor[nSlots++] = i;
        continue;
      }
      // Read for this query but not kept (memory full): exact from the floats.
      const v = read.get(chunkIds[i]);
      if (!v || v.length !== dims) continue;
      let dot = 0;
      let vNorm = 0;
      for (let d = 0; d < dims; d++) {
        dot += v[d] * q[d];
        vNorm += v[d] * v[d];
      }
      if (vNorm > 0) sims[i] = dot / (Math.sqrt(vNorm) * qNorm);
    }
    if (nSlots > 0) {
      const dots = new Int32Array(nSlots);
      vectors!.dots(qi, slots.subarray(0, nSlots), dots);
      for (let j = 0; j < nSlots; j++) {
        const slot = slots[j];
        sims[slotFor[j]] = (dots[j] * scale[slot] * qUnit) / (norm[slot] * qNorm);
      }
    }
    const bestOf = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      if (Number.isNaN(sims[i])) continue;
      const cur = bestOf.get(docIds[i]);
      if (cur === undefined || sims[i] > sims[cur] || (sims[i] === sims[cur] && chunkIds[i] < chunkIds[cur])) bestOf.set(docIds[i], i);
    }
    // The k best documents: a bounded selection, then a sort of those k only.
    const before = (a: number, b: number) => sims[a] > sims[b] || (sims[a] === sims[b] && docIds[a] < docIds[b]);
    const top: number[] = [];
    for (const i of bestOf.values()) {
      if (top.length === k && !before(i, top[k - 1])) continue;
      let at = top.length === k ? k - 1 : top.length;
      while (at > 0 && before(i, top[at - 1])) at--;
      if (top.length === k) top.pop();
      top.splice(at, 0, i);
    }
    return top.map((i) => ({ doc_id: docIds[i], chunk_id: chunkIds[i], similarity: sims[i] }));
  }

  /**
   * Loads every vector of the model in the background, a page at a time with a turn of the event
   * loop between pages (on PGlite a page holds the database like any statement). Concurrent calls
   * share one load; after clear() the next call loads again.
   */
  warm(): Promise<void> {
    this.warming ??= (async () => {
      const generation = this.generation;
      if (this.opts.snapshot && !this.snapshotTried) {
        this.snapshotTried = true;
        this.loading = true;
        let loaded: boolean;
        try {
          loaded = await this.loadSnapshot();
        } finally {
          this.loading = false;
        }
        if (loaded) return;
      }
      if (generation !== this.generation) return;
      // The table's heap in ranges of pages (a TID range scan: sequential reads, no index probe
      // per row; PGlite took over a minute for 100,000 vectors by key), rows written later are read
      // on demand.
      const size = await this.db.query<{ pages: string; at: string }>(
        `SELECT (pg_relation_size('chunk_embeddings') / current_setting('block_size')::bigint)::text AS pages, now()::text AS at`,
      );
      const pages = Number(size.rows[0]?.pages ?? 0);
      for (let from = 0; from < pages && !this.full && generation === this.generation; from += WARM_PAGES) {
        await new Promise<void>((resolve) => setImmediate(resolve));
        const r = await this.db.query<{ chunk_id: string; v: string }>(
          `SELECT chunk_id::text AS chunk_id, encode(vector_send(embedding), 'base64') AS v FROM chunk_embeddings
            WHERE ctid >= $1::tid AND ctid < $2::tid AND model = $3`,
          [`(${from},0)`, `(${from + WARM_PAGES},0)`, this.model],
          { name: 'memex_vector_memory_warm' },
        );
        if (generation !== this.generation) return;
        for (const row of r.rows) this.keep(row.chunk_id, decodeVector(Buffer.from(row.v, 'base64')));
      }
      if (generation === this.generation) this.coveredAt = size.rows[0].at;
    })();
    return this.warming;
  }

  /**
   * The copies from the snapshot, then the vectors stored since (chunks embedded from a margin
   * before the copies were complete). False, and nothing kept, when there is none or it cannot be
   * trusted (checksum, layout, another database, schema, model or dimensions, over the cap).
   */
  private async loadSnapshot(): Promise<boolean> {
    const snap = this.opts.snapshot!;
    const started = performance.now();
    const generation = this.generation;
    const reject = (reason: string) => {
      snap.onEvent?.({ kind: 'rejected', reason });
      return false;
    };
    try {
      const read = await readSnapshotFile<VectorSnapshotHeader>(snap.file, VECTOR_MAGIC, VECTOR_SNAPSHOT_FORMAT);
      if (!read.ok) return read.reason === 'no snapshot' ? false : reject(read.reason);
      const { header: h, arrays } = read;
      const id = await readIdentity(this.db);
      if (h.identity?.instance !== id.instance || h.identity.database !== id.database) return reject('made from another database');
      if (h.identity.migrations?.latest !== id.migrations.latest || h.identity.migrations.count !== id.migrations.count) return reject('made at another schema');
      if (h.model !== this.model) return reject(`vectors of model ${h.model}, this one uses ${this.model}`);
      const n = h.count;
      if (!Number.isInteger(n) || n < 0 || (n > 0 && (!Number.isInteger(h.dims) || h.dims < 1))) return reject('malformed: counts');
      if (n * h.dims > this.opts.maxBytes) return reject('more vectors than the memory cap holds');
      const ids = read.strings('chunkIds', n);
      const table = arrays['chunkIds.hash'];
      const scale = arrays.scale;
      const norm = arrays.norm;
      const rows = arrays.rows;
      if (ids === null || !(table instanceof Int32Array) || !validStringHash(table, n)) return reject('malformed: chunk ids');
      if (!(scale instanceof Float32Array) || !(norm instanceof Float32Array) || scale.length !== n || norm.length !== n) return reject('malformed: scales');
      if (generation !== this.generation) return false;
      if (n > 0) {
        const vectors = new Int8Vectors(h.dims, Math.floor(this.opts.maxBytes / h.dims));
        if (!(rows instanceof Uint8Array) || h.stride !== vectors.stride || rows.length !== n * vectors.stride) return reject('malformed: rows');
        vectors.loadRows(rows);
        this.vectors = vectors;
        this.dims = h.dims;
        // Copies: the file's buffer is let go.
        this.scale = scale.slice();
        this.norm = norm.slice();
      }
      this.ids = ids;
      this.baseTable = table;
      this.count = n;
      this.loading = false;
      this.full = (n + 1) * Math.max(1, h.dims) > this.opts.maxBytes;
      // Vectors stored since (a chunk re-embedded since replaces its copy); none when full.
      const since = await this.db.query<{ at: string; ids: string[] | null }>(
        `SELECT now()::text AS at,
                (SELECT array_agg(chunk_id::text) FROM chunks
                  WHERE embedded_at >= $1::timestamptz - $2::interval AND embedding_model = $3) AS ids`,
        [h.coveredAt, CATCH_UP_MARGIN, this.model],
      );
      if (generation !== this.generation) return false;
      const fresh = this.full ? [] : (since.rows[0].ids ?? []);
      await this.read(fresh, true);
      if (generation !== this.generation) return false;
      this.coveredAt = since.rows[0].at;
      this.saved = { count: n, generation };
      snap.onEvent?.({ kind: 'loaded', vectors: this.count, bytes: read.bytes, caughtUp: fresh.length, ms: performance.now() - started });
      return true;
    } catch (err) {
      if (generation === this.generation) this.reset();
      return reject((err as Error).message);
    }
  }

  /** Forgets every copy in memory (a snapshot that could not be used after all). */
  private reset(): void {
    this.slotOf.clear();
    this.ids = [];
    this.baseTable = null;
    this.count = 0;
    this.full = false;
    this.vectors = null;
    this.dims = 0;
    this.scale = new Float32Array(0);
    this.norm = new Float32Array(0);
  }

  /**
   * Writes the copies to the snapshot file when they are complete (warmed or loaded) and changed
   * since the last write: the rows are copied out a few MB per turn of the event loop (rows never
   * change once set, so the copy is consistent while searches go on), then hashed and written
   * like the index's snapshot. One write at a time.
   */
  saveSnapshot(): Promise<void> {
    const snap = this.opts.snapshot;
    if (!snap || this.saving) return this.saving ?? Promise.resolve();
    const generation = this.generation;
    const n = this.count;
    if (this.coveredAt === null || (this.saved.count === n && this.saved.generation === generation)) return Promise.resolve();
    const started = performance.now();
    const p = (async () => {
      try {
        const identity = await readIdentity(this.db);
        const dims = this.dims;
        const ids = this.ids.slice(0, n);
        const scale = this.scale.slice(0, n);
        const norm = this.norm.slice(0, n);
        const vectors = this.vectors;
        const stride = vectors?.stride ?? 0;
        const rows = new Uint8Array(n * stride);
        const step = Math.max(1, Math.floor(4 * 2 ** 20 / Math.max(1, stride)));
        for (let from = 0; from < n; from += step) {
          if (generation !== this.generation) return;
          rows.set(vectors!.copyRows(from, Math.min(n, from + step)), from * stride);
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        if (generation !== this.generation) return;
        const table = buildStringHash(ids);
        const header: Omit<VectorSnapshotHeader, 'format' | 'sections' | 'bodyBytes'> = {
          identity,
          model: this.model,
          dims,
          stride,
          count: n,
          coveredAt: this.coveredAt!,
          createdAt: new Date().toISOString(),
        };
        const bytes = await writeSnapshotFile(snap.file, VECTOR_MAGIC, VECTOR_SNAPSHOT_FORMAT, header, [
          ...stringSections('chunkIds', ids),
          arraySection('chunkIds.hash', table),
          arraySection('scale', scale),
          arraySection('norm', norm),
          arraySection('rows', rows),
        ]);
        // Written from copies taken before a forget: it may hold what was erased.
        if (generation !== this.generation) {
          fs.rmSync(snap.file, { force: true });
          return;
        }
        this.saved = { count: n, generation };
        snap.onEvent?.({ kind: 'written', vectors: n, bytes, ms: performance.now() - started });
      } catch (err) {
        snap.onEvent?.({ kind: 'write_failed', error: (err as Error).message });
      }
    })();
    this.saving = p;
    const done = () => {
      if (this.saving === p) this.saving = null;
    };
    p.then(done, done);
    return p;
  }

  /** Reads chunks' vectors (kept here while there is room) and returns them as floats. */
  private async read(chunkIds: string[], replace = false): Promise<Map<string, Float32Array>> {
    const generation = this.generation;
    const out = new Map<string, Float32Array>();
    for (let i = 0; i < chunkIds.length; i += PAGE) {
      const page = chunkIds.slice(i, i + PAGE);
      const r = await this.db.query<{ chunk_id: string; v: string }>(
        `SELECT chunk_id::text AS chunk_id, encode(vector_send(embedding), 'base64') AS v FROM chunk_embeddings
          WHERE model = $1 AND chunk_id = ANY($2::uuid[])`,
        [this.model, page],
        { name: 'memex_vector_memory_read' },
      );
      for (const row of r.rows) out.set(row.chunk_id, decodeVector(Buffer.from(row.v, 'base64')));
    }
    if (generation === this.generation) {
      const now = this.opts.now?.() ?? Date.now();
      for (const id of chunkIds) {
        const v = out.get(id);
        if (v) this.keep(id, v, replace);
        else {
          if (this.absentAt.size >= ABSENT_MAX) this.absentAt.clear();
          this.absentAt.set(id, now);
        }
      }
    }
    return out;
  }

  /** Keeps a copy of a chunk's vector (`replace`: also over the one held, a chunk embedded again). */
  private keep(chunkId: string, v: Float32Array, replace = false): void {
    const held = this.slotFor(chunkId);
    if ((held !== undefined && !replace) || this.full || this.loading) return;
    if (this.dims === 0) this.dims = v.length;
    if (v.length !== this.dims) return;
    if (held === undefined && (this.count + 1) * this.dims > this.opts.maxBytes) {
      this.full = true;
      return;
    }
    this.vectors ??= new Int8Vectors(this.dims, Math.floor(this.opts.maxBytes / this.dims));
    const slot = held ?? this.count++;
    if (slot >= this.scale.length) {
      const cap = Math.max(64, this.count * 2);
      const scale = new Float32Array(cap);
      scale.set(this.scale);
      this.scale = scale;
      const norm = new Float32Array(cap);
      norm.set(this.norm);
      this.norm = norm;
    }
    let max = 0;
    let sq = 0;
    for (let d = 0; d < v.length; d++) {
      max = Math.max(max, Math.abs(v[d]));
      sq += v[d] * v[d];
    }
    const f = max > 0 ? max / 127 : 0;
    const row = new Int8Array(v.length);
    if (f > 0) for (let d = 0; d < v.length; d++) row[d] = Math.round(v[d] / f);
    this.vectors.set(slot, row);
    this.scale[slot] = f;
    this.norm[slot] = Math.sqrt(sq);
    if (held === undefined) {
      this.slotOf.set(chunkId, slot);
      this.ids[slot] = chunkId;
    }
    this.absentAt.delete(chunkId);
  }
}
