/**
 * Keeps the in-memory lexical index (lexical-index.ts) equal to the catalog.
 *
 * - Build: every active document with its chunks' stored tsvectors, read in pages by doc_id.
 * - Follow: the change log `search_changes` (migration 060), filled by triggers on documents,
 *   chunk_documents and document_people in the writing transaction, so writes from any process
 *   (another gateway, the CLI) are seen. A poll reads rows with `xid >= horizon`, where horizon is
 *   the xmin of the previous poll's snapshot: every transaction that was not visible then has an
 *   xid at or above it, so a late commit is never skipped. Rows already applied are recognised by
 *   seq. Applying a change reloads the document's current state (idempotent).
 * - Every search reads the log in its own first statement (`pollColumns`, beside the query's
 *   lexemes) and hands the result to `absorb` before scoring: a write committed before the search
 *   arrived is always seen, at no extra round trip. Results are absorbed one at a time, in any order:
 *   the horizon only moves forward, seqs already applied are skipped, and an older result that
 *   repeats a change just reloads that document.
 * - A timer polls in the background so an idle process stays current, prunes log rows older than
 *   the retention, and rebuilds when the index has more dead passages than live ones, when a poll
 *   brings more changes than a rebuild would read, or when this process has not polled for longer
 *   than the retention.
 */
import type { Database } from '../db/types.ts';
import { LexicalIndex, type Bm25Params, type IndexedDocument } from './lexical-index.ts';
import { parseTsvector } from './tsvector.ts';

export interface IndexSyncOptions {
  /** Background poll interval; 0 disables the timer (polls still run before every query). */
  pollIntervalMs: number;
  /** Change-log rows are kept this long; a process that has not polled for half of it rebuilds. */
  retentionMs?: number;
  /** Documents per page when building. */
  pageSize?: number;
  onError?: (err: unknown) => void;
}

interface DocRow {
  doc_id: string;
  source_type: string;
  has_attachments: boolean;
  ts: number;
  thread_id: string | null;
  title: string | null;
  persons: string[] | null;
  idents: string[] | null;
  passages: [string, string | null][] | null;
}

const DOC_SELECT = `
  SELECT d.doc_id, d.source_type, d.has_attachments,
         (extract(epoch FROM d.content_timestamp) * 1000000)::float8 AS ts,
         d.thread_id, d.title_tsv::text AS title,
         (SELECT array_agg(DISTINCT dp.person_id::text) FROM document_people dp WHERE dp.doc_id = d.doc_id) AS persons,
         (SELECT array_agg(DISTINCT lower(pe->>'identifier'))
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array' THEN d.people ELSE '[]'::jsonb END) pe
           WHERE pe->>'identifier' IS NOT NULL) AS idents,
         (SELECT json_agg(json_build_array(cd.chunk_id, c.tsv::text) ORDER BY cd.ordinal)
            FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id WHERE cd.doc_id = d.doc_id) AS passages
    FROM documents d`;

function toIndexed(r: DocRow): IndexedDocument {
  return {
    docId: r.doc_id,
    sourceType: r.source_type,
    hasAttachments: r.has_attachments,
    tsMicros: r.ts,
    threadId: r.thread_id,
    personIds: r.persons ?? [],
    identifiers: r.idents ?? [],
    title: parseTsvector(r.title),
    passages: (r.passages ?? []).map(([chunkId, tsv]) => ({ chunkId, terms: parseTsvector(tsv) })),
  };
}

export interface PollResult {
  /** pg_snapshot_xmin of the statement's snapshot, as text. */
  sync_h: string;
  /** [seq, xid, doc_id] of log rows at or above the horizon the statement was given. */
  sync_changes: [number, string, string][];
}

export class IndexSync {
  private index: LexicalIndex | null = null;
  private horizon: bigint = 0n;
  /** seq -> xid of log rows applied whose xid is still at or above the horizon (they come back). */
  private applied = new Map<number, bigint>();
  private lastPollAt = 0;
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** (time, horizon) samples: log rows below a horizon older than the retention can go. */
  private readonly horizons: { at: number; horizon: bigint }[] = [];
  private readonly retentionMs: number;
  private readonly pageSize: number;
  /** Builds, polls absorbed and documents reloaded, for tests and benchmarks. */
  readonly counters = { builds: 0, polls: 0, applied: 0 };

  constructor(
    private readonly db: Database,
    private readonly params: Bm25Params,
    private readonly opts: IndexSyncOptions,
  ) {
    this.retentionMs = opts.retentionMs ?? 3_600_000;
    this.pageSize = opts.pageSize ?? 2000;
  }

  /** SQL select-list items reading the log from the horizon passed as parameter `param` (see `horizonParam`). */
  static pollColumns(param: string): string {
    return `pg_snapshot_xmin(pg_current_snapshot())::text AS sync_h,
      coalesce((SELECT json_agg(json_build_array(seq, xid::text, doc_id)) FROM search_changes WHERE xid >= ${param}::xid8), '[]') AS sync_changes`;
  }

  get horizonParam(): string {
    return this.horizon.toString();
  }

  /** The index, built if needed (first use, or this process stopped polling for too long). */
  async ready(): Promise<LexicalIndex> {
    if (this.closed) throw new Error('search index is closed');
    if (!this.index || this.isStale()) await this.serial(() => (this.index && !this.isStale() ? undefined : this.build()));
    this.startTimer();
    return this.index!;
  }

  /**
   * Applies a poll result read by a search statement and resolves with the index that reflects it:
   * score against this one, not the one `ready()` gave, which a rebuild may have replaced since.
   */
  absorb(poll: PollResult): Promise<LexicalIndex> {
    return this.serial(async () => {
      await this.applyPoll(poll);
      return this.index!;
    });
  }

  /** The index, current as of the moment of the call (its own poll statement). */
  async current(): Promise<LexicalIndex> {
    await this.ready();
    const r = await this.db.query<PollResult>(`SELECT ${IndexSync.pollColumns('$1')}`, [this.horizonParam]);
    return this.absorb(r.rows[0]);
  }

  /** Discards the index and builds it again from the catalog. */
  async rebuild(): Promise<LexicalIndex> {
    await this.serial(() => this.build());
    return this.index!;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private isStale(): boolean {
    return this.lastPollAt > 0 && Date.now() - this.lastPollAt > this.retentionMs / 2;
  }

  /** Runs fn after every earlier serial task; a failure is reported to its caller only. */
  private serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const p = this.chain.then(fn);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private startTimer(): void {
    if (this.timer || this.opts.pollIntervalMs <= 0 || this.closed) return;
    this.timer = setInterval(() => {
      this.current()
        .then(() => this.prune())
        .catch((err) => {
          // A poll cut off by close() (the pool ends under it) is not worth reporting.
          if (!this.closed) this.opts.onError?.(err);
        });
    }, this.opts.pollIntervalMs);
    this.timer.unref();
  }

  private async build(): Promise<void> {
    // The horizon is taken first: everything committed after it is replayed from the log, and
    // replaying a document the pages below already read is harmless.
    const h = await this.db.query<{ h: string }>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h');
    const index = new LexicalIndex(this.params);
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const r = await this.db.query<DocRow>(
        `${DOC_SELECT} WHERE d.is_active_version AND d.doc_id > $1::uuid ORDER BY d.doc_id LIMIT $2`,
        [after, this.pageSize],
      );
      for (const row of r.rows) index.upsert(toIndexed(row));
      if (r.rows.length < this.pageSize) break;
      after = r.rows[r.rows.length - 1].doc_id;
    }
    this.index = index;
    this.horizon = BigInt(h.rows[0].h);
    this.applied = new Map();
    this.counters.builds++;
    const r = await this.db.query<PollResult>(`SELECT ${IndexSync.pollColumns('$1')}`, [this.horizonParam]);
    await this.applyPoll(r.rows[0], false);
  }

  private async applyPoll(poll: PollResult, mayRebuild = true): Promise<void> {
    this.counters.polls++;
    const fresh = new Map<number, { xid: bigint; docId: string }>();
    for (const [seq, xid, docId] of poll.sync_changes) {
      if (!this.applied.has(seq)) fresh.set(seq, { xid: BigInt(xid), docId });
    }
    const docIds = [...new Set([...fresh.values()].map((c) => c.docId))];
    if (mayRebuild && docIds.length > Math.max(5000, this.index!.size.documents)) {
      // More changes than a rebuild would read (a bulk load into a small index).
      await this.build();
      return;
    }
    if (docIds.length > 0) await this.apply(docIds);
    // Only now, with the documents reloaded, are the changes recorded and the horizon moved.
    for (const [seq, c] of fresh) this.applied.set(seq, c.xid);
    const h = BigInt(poll.sync_h);
    if (h > this.horizon) {
      this.horizon = h;
      for (const [seq, xid] of this.applied) if (xid < h) this.applied.delete(seq);
    }
    this.lastPollAt = Date.now();
    this.recordHorizon(this.horizon);
    if (mayRebuild && this.index!.size.deadPassages > Math.max(10_000, this.index!.size.passages)) await this.build();
  }

  private async apply(docIds: string[]): Promise<void> {
    const index = this.index!;
    for (let i = 0; i < docIds.length; i += 1000) {
      const ids = docIds.slice(i, i + 1000);
      const r = await this.db.query<DocRow>(`${DOC_SELECT} WHERE d.is_active_version AND d.doc_id = ANY($1::uuid[])`, [ids]);
      const live = new Set<string>();
      for (const row of r.rows) {
        index.upsert(toIndexed(row));
        live.add(row.doc_id);
      }
      for (const id of ids) if (!live.has(id)) index.remove(id);
      this.counters.applied += ids.length;
    }
  }

  private recordHorizon(h: bigint): void {
    const now = Date.now();
    const last = this.horizons[this.horizons.length - 1];
    if (!last || now - last.at > 60_000) this.horizons.push({ at: now, horizon: h });
  }

  /** Deletes log rows of transactions older than a horizon seen at least `retentionMs` ago. */
  private async prune(): Promise<void> {
    const cut = Date.now() - this.retentionMs;
    let old: bigint | null = null;
    while (this.horizons.length > 1 && this.horizons[1].at <= cut) this.horizons.shift();
    if (this.horizons[0] && this.horizons[0].at <= cut) old = this.horizons.shift()!.horizon;
    if (old !== null) await this.db.query('DELETE FROM search_changes WHERE xid < $1::xid8', [old.toString()]);
  }
}
