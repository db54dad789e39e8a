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
 * - `catchUp()` is what search calls before each query: one short round trip when nothing changed,
 *   and concurrent callers share one poll. A poll started before a caller arrived is not enough for
 *   it (it may predate the caller's own write), so that caller waits for the next one.
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

export class IndexSync {
  private index: LexicalIndex | null = null;
  private horizon: string | null = null;
  private applied = new Set<number>();
  private lastPollAt = 0;
  private running: Promise<void> | null = null;
  private queued: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  /** (time, horizon) samples: log rows below a horizon older than the retention can go. */
  private readonly horizons: { at: number; horizon: string }[] = [];
  private readonly retentionMs: number;
  private readonly pageSize: number;
  /** Builds and changes applied, for tests and `stats`. */
  readonly counters = { builds: 0, polls: 0, applied: 0 };

  constructor(
    private readonly db: Database,
    private readonly params: Bm25Params,
    private readonly opts: IndexSyncOptions,
  ) {
    this.retentionMs = opts.retentionMs ?? 3_600_000;
    this.pageSize = opts.pageSize ?? 2000;
  }

  /** The index, current as of the moment of the call (builds it on first use). */
  async current(): Promise<LexicalIndex> {
    await this.catchUp();
    return this.index!;
  }

  /** Discards the index and builds it again from the catalog. */
  async rebuild(): Promise<LexicalIndex> {
    this.index = null;
    return this.current();
  }

  catchUp(): Promise<void> {
    if (!this.running) {
      this.running = this.runOnce().finally(() => (this.running = null));
      return this.running;
    }
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = null;
        return this.catchUp();
      });
    return this.queued;
  }

  close(): void {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async runOnce(): Promise<void> {
    if (this.closed) throw new Error('search index is closed');
    const stale = this.lastPollAt > 0 && Date.now() - this.lastPollAt > this.retentionMs / 2;
    if (!this.index || stale || this.index.size.deadPassages > Math.max(10_000, this.index.size.passages)) {
      await this.build();
    } else {
      await this.poll();
    }
    this.startTimer();
  }

  private startTimer(): void {
    if (this.timer || this.opts.pollIntervalMs <= 0 || this.closed) return;
    this.timer = setInterval(() => {
      this.catchUp()
        .then(() => this.prune())
        .catch((err) => this.opts.onError?.(err));
    }, this.opts.pollIntervalMs);
    this.timer.unref();
  }

  private async snapshotXmin(): Promise<string> {
    const r = await this.db.query<{ h: string }>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h');
    return r.rows[0].h;
  }

  private async build(): Promise<void> {
    // The horizon is taken first: everything committed after it is replayed from the log, and
    // replaying a document the pages below already read is harmless.
    const horizon = await this.snapshotXmin();
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
    this.horizon = horizon;
    this.applied = new Set();
    this.lastPollAt = Date.now();
    this.counters.builds++;
    this.recordHorizon(horizon);
    await this.poll();
  }

  private async poll(): Promise<void> {
    const r = await this.db.query<{ h: string; changes: [number, string][] }>(
      `SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h,
              coalesce((SELECT json_agg(json_build_array(seq, doc_id)) FROM search_changes WHERE xid >= $1::xid8), '[]') AS changes`,
      [this.horizon],
    );
    this.counters.polls++;
    const { h, changes } = r.rows[0];
    const fresh = new Set<string>();
    for (const [seq, docId] of changes) if (!this.applied.has(seq)) fresh.add(docId);
    // Rows still at or above the new horizon come back next time; remember them so they are skipped.
    this.applied = new Set(changes.map(([seq]) => seq));
    this.horizon = h;
    this.lastPollAt = Date.now();
    this.recordHorizon(h);
    if (fresh.size === 0) return;
    if (fresh.size > Math.max(5000, this.index!.size.documents / 4)) {
      await this.build();
      return;
    }
    await this.apply([...fresh]);
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

  private recordHorizon(h: string): void {
    const now = Date.now();
    const last = this.horizons[this.horizons.length - 1];
    if (!last || now - last.at > 60_000) this.horizons.push({ at: now, horizon: h });
  }

  /** Deletes log rows of transactions older than a horizon seen at least `retentionMs` ago. */
  private async prune(): Promise<void> {
    const cut = Date.now() - this.retentionMs;
    let old: string | null = null;
    while (this.horizons.length > 1 && this.horizons[1].at <= cut) this.horizons.shift();
    if (this.horizons[0] && this.horizons[0].at <= cut) old = this.horizons.shift()!.horizon;
    if (old) await this.db.query('DELETE FROM search_changes WHERE xid < $1::xid8', [old]);
  }
}
