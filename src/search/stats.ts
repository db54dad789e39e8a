/**
 * Term statistics for BM25: document frequency per lexeme and average field lengths over active
 * passages (a passage = one chunk of one active document, with that document's title).
 *
 * They are rebuilt from ts_stat() rather than maintained per insert: the catalog's insert path
 * stays as it is, and ingest transactions never contend on the rows of common terms. Search checks
 * staleness at most every `statsCheckIntervalMs` (a count of passages) and refreshes synchronously
 * when the collection grew or shrank by more than STALE_RATIO (or was never counted), otherwise in
 * the background. Terms missing from the table (new since the refresh) get their df counted on the
 * fly from the GIN index, which is cheap exactly because such terms are rare.
 */
import type { Database } from '../db/types.ts';

export interface LexicalStats {
  passages: number;
  avgTextLen: number;
  avgTitleLen: number;
}

const STALE_RATIO = 0.05;

const PASSAGES_SQL = `FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
  JOIN documents d ON d.doc_id = cd.doc_id WHERE d.is_active_version`;

export async function refreshLexicalStats(db: Database): Promise<LexicalStats> {
  return db.transaction(async (tx) => {
    // Two gateways refreshing at once would insert the same terms twice: one at a time.
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('memex.search_stats'))");
    const lens = await tx.query<{ n: number; text_len: number | null; title_len: number | null }>(
      `SELECT count(*)::int AS n, avg(length(c.tsv))::float8 AS text_len, avg(length(d.title_tsv))::float8 AS title_len
       ${PASSAGES_SQL}`,
    );
    // PGlite has no autovacuum: new GIN entries wait in the index's pending list, which every query
    // then scans linearly (measured 45-200 ms per query on SciFact). Merge it here, off the insert path.
    await tx.query(
      "SELECT gin_clean_pending_list('chunks_tsv'::regclass), gin_clean_pending_list('documents_title_tsv'::regclass)",
    );
    await tx.query('DELETE FROM search_term_stats');
    await tx.query(
      `INSERT INTO search_term_stats (term, df)
       SELECT word, ndoc FROM ts_stat($1)`,
      [`SELECT c.tsv || d.title_tsv ${PASSAGES_SQL}`],
    );
    const s: LexicalStats = {
      passages: lens.rows[0].n,
      avgTextLen: lens.rows[0].text_len ?? 0,
      avgTitleLen: lens.rows[0].title_len ?? 0,
    };
    await tx.query(
      `INSERT INTO search_stats (id, passages, avg_text_len, avg_title_len, refreshed_at)
       VALUES (true, $1, $2, $3, now())
       ON CONFLICT (id) DO UPDATE SET passages = $1, avg_text_len = $2, avg_title_len = $3, refreshed_at = now()`,
      [s.passages, s.avgTextLen, s.avgTitleLen],
    );
    return s;
  });
}

export class StatsKeeper {
  private stats: LexicalStats | null = null;
  private lastCheck = 0;
  private background: Promise<unknown> | null = null;

  constructor(
    private readonly db: Database,
    private readonly checkIntervalMs: number,
  ) {}

  /** Current statistics, refreshed first when they are missing or clearly stale. */
  async current(): Promise<LexicalStats> {
    const now = Date.now();
    if (this.stats && now - this.lastCheck < this.checkIntervalMs) return this.stats;
    this.lastCheck = now;
    if (!this.stats) {
      const r = await this.db.query<{ passages: number; avg_text_len: number; avg_title_len: number }>(
        'SELECT passages, avg_text_len, avg_title_len FROM search_stats',
      );
      if (r.rows[0]) {
        this.stats = {
          passages: r.rows[0].passages,
          avgTextLen: r.rows[0].avg_text_len,
          avgTitleLen: r.rows[0].avg_title_len,
        };
      }
    }
    const live = (await this.db.query<{ n: number }>(`SELECT count(*)::int AS n ${PASSAGES_SQL}`)).rows[0].n;
    const known = this.stats?.passages ?? -1;
    if (live === known) return this.stats!;
    if (!this.stats || known <= 0 || Math.abs(live - known) / Math.max(known, 1) > STALE_RATIO) {
      this.stats = await refreshLexicalStats(this.db);
    } else if (!this.background) {
      this.background = refreshLexicalStats(this.db)
        .then((s) => (this.stats = s))
        .catch(() => undefined)
        .finally(() => (this.background = null));
    }
    return this.stats!;
  }

  async refresh(): Promise<LexicalStats> {
    this.stats = await refreshLexicalStats(this.db);
    this.lastCheck = Date.now();
    return this.stats;
  }
}
