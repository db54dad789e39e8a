/**
 * Saved searches (issue 44, docs/organize.md): a named query with its filters, run as a search
 * (`memex search @NAME`, GET /v1/saved/NAME/run, MCP), listed with how many documents it matches and
 * how many of those arrived since it was last looked at (documents ingested after `seen_at`).
 */
import { parseFilters, type RawFilters } from '../catalog/filters.ts';
import type { Database } from '../db/types.ts';
import type { Search } from '../search/search.ts';
import { NotFoundError } from '../util/errors.ts';

export interface SavedRow {
  name: string;
  query: string;
  filters: RawFilters & Record<string, unknown>;
  seen_at: string | null;
  created_at: string;
  updated_at: string;
  count?: number;
  new_since_seen?: number;
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v === null ? null : String(v));
const SELECT = 'SELECT name, query, filters, seen_at, created_at, updated_at FROM saved_searches';

function row(r: SavedRow): SavedRow {
  return { ...r, seen_at: iso(r.seen_at), created_at: iso(r.created_at)!, updated_at: iso(r.updated_at)! };
}

export class SavedNotFoundError extends NotFoundError {
  constructor(name: string) {
    super(`no saved search named ${name}`);
  }
}

export const savedKey = (name: string) => name.normalize('NFC').trim().toLowerCase();

export class SavedSearches {
  constructor(
    private readonly db: Database,
    private readonly search: Search,
    private readonly phoneRegion = 'US',
  ) {}

  async list(counts = true): Promise<SavedRow[]> {
    const rows = (await this.db.query<SavedRow>(`${SELECT} ORDER BY name`)).rows.map(row);
    if (!counts) return rows;
    for (const r of rows) Object.assign(r, await this.counts(r));
    return rows;
  }

  async get(name: string): Promise<SavedRow> {
    const r = await this.db.query<SavedRow>(`${SELECT} WHERE name = $1`, [savedKey(name)]);
    if (r.rows.length === 0) throw new SavedNotFoundError(name);
    return row(r.rows[0]);
  }

  /** Creates or replaces; the filters are checked as the search checks them (FilterError: 422). */
  async put(name: string, query: string, filters: RawFilters = {}): Promise<SavedRow> {
    parseFilters(filters, this.phoneRegion);
    await this.db.query(
      `INSERT INTO saved_searches (name, query, filters) VALUES ($1, $2, $3::jsonb)
       ON CONFLICT (name) DO UPDATE SET query = EXCLUDED.query, filters = EXCLUDED.filters, updated_at = now()`,
      [savedKey(name), query, JSON.stringify(filters)],
    );
    const saved = await this.get(name);
    return { ...saved, ...(await this.counts(saved)) };
  }

  async remove(name: string): Promise<void> {
    const r = await this.db.query('DELETE FROM saved_searches WHERE name = $1', [savedKey(name)]);
    if (r.rowCount === 0) throw new SavedNotFoundError(name);
  }

  async markSeen(name: string): Promise<void> {
    const r = await this.db.query('UPDATE saved_searches SET seen_at = now() WHERE name = $1', [savedKey(name)]);
    if (r.rowCount === 0) throw new SavedNotFoundError(name);
  }

  /** Documents it matches (the lexical match set, as a search counts it) and those ingested since seen_at. */
  async counts(s: SavedRow): Promise<{ count: number; new_since_seen: number }> {
    const ids = await this.search.matchDocIds(s.query, { filters: parseFilters(s.filters, this.phoneRegion) });
    if (s.seen_at === null || ids.length === 0) return { count: ids.length, new_since_seen: ids.length };
    const r = await this.db.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM documents WHERE doc_id = ANY($1::uuid[]) AND ingested_at > $2::timestamptz',
      [ids, s.seen_at],
    );
    return { count: ids.length, new_since_seen: r.rows[0].n };
  }
}
