/**
 * Which people rows are mailing lists (people.list_id, migration 190; issue 40): the search's person facet
 * leaves them out and lists them as its list facet instead, and conversations name their list as the venue
 * rather than as a participant. Lists are few and change rarely, so the set is read at most every
 * LIST_DIRECTORY_TTL_MS, and concurrent searches share one read.
 */
import type { Queryable } from '../db/types.ts';

export const LIST_DIRECTORY_TTL_MS = 30_000;

export class ListDirectory {
  private value: Map<string, string> | null = null;
  private readAt = 0;
  private pending: Promise<Map<string, string>> | null = null;

  constructor(
    private readonly db: Queryable,
    private readonly ttlMs = LIST_DIRECTORY_TTL_MS,
  ) {}

  /** person_id -> list id of every live list person. */
  async get(): Promise<Map<string, string>> {
    if (this.value && Date.now() - this.readAt < this.ttlMs) return this.value;
    this.pending ??= this.db
      .query<{ person_id: string; list_id: string }>(
        `SELECT person_id::text AS person_id, list_id FROM people WHERE list_id IS NOT NULL AND merged_into IS NULL AND NOT deleted`,
        [],
        { name: 'memex_search_lists' },
      )
      .then((r) => {
        this.value = new Map(r.rows.map((x) => [x.person_id, x.list_id]));
        this.readAt = Date.now();
        return this.value;
      })
      .finally(() => {
        this.pending = null;
      });
    return this.pending;
  }

  /** Read again at the next use (a person was just classified). */
  forget(): void {
    this.value = null;
  }
}

/** `linux-mips.vger.kernel.org` -> `linux-mips`. */
export function listNameOf(id: string): string {
  const at = id.indexOf('.');
  return at > 0 ? id.slice(0, at) : id;
}
