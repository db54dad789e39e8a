/**
 * Tagging rules (issue 44, docs/organize.md): a tag and a query. Adding a rule tags every document the
 * query matches now; documents ingested later are queued in their ingest transaction (tag_rule_pending,
 * src/organize/ingest-tags.ts) and the rules are evaluated against them after commit, in batches, on the
 * in-memory lexical index restricted to those documents (cheap: the cost is the batch's passages, not
 * the store). Removing a rule can remove the tags it gave (origin `rule:<id>`); a tag also given by hand
 * or at import stays.
 *
 * Rules read queries as tagging does: every word required (Search.matchDocIds, `every`).
 */
import { defineSettings, int } from '../config/env.ts';
import type { Database } from '../db/types.ts';
import type { Search } from '../search/search.ts';
import { newId } from '../util/ids.ts';
import { addTag } from './tags.ts';
import { NotFoundError } from '../util/errors.ts';

/** Documents looked at per batch. */
export const RULE_BATCH = 2000;
/** How often the queue is looked at (TAG_RULES_POLL_MS). */
export const RULE_POLL_MS = 1000;

export const ORGANIZE_SETTINGS = defineSettings('organize', 'Tags and tagging rules', {
  TAG_RULES_POLL_MS: int({
    default: RULE_POLL_MS,
    min: 10,
    max: 600_000,
    description: 'how often (ms) the tagging rules look for newly ingested documents (docs/organize.md)',
  }),
});
/** How long the rules wait at most while documents keep arriving (a bulk import). */
export const RULE_MAX_DEFER_MS = 30_000;

export interface RuleRow {
  rule_id: string;
  tag: string;
  query: string;
  documents: number;
  created_at: string;
  updated_at: string;
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : String(v));

export class RuleNotFoundError extends NotFoundError {
  constructor(id: string) {
    super(`no tagging rule ${id}`);
  }
}

export class TagRules {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;
  private closed = false;
  /** Documents looked at by the rules since start (tests, bench). */
  readonly counters = { batches: 0, documents: 0, tagged: 0 };

  constructor(
    private readonly db: Database,
    private readonly search: Search,
    private readonly opts: { pollMs?: number; onError?: (err: unknown) => void } = {},
  ) {}

  async list(): Promise<RuleRow[]> {
    const r = await this.db.query<RuleRow>(
      `SELECT r.rule_id::text AS rule_id, r.tag, r.query, r.created_at, r.updated_at,
              (SELECT count(*)::int FROM document_tags t WHERE t.origin = 'rule:' || r.rule_id::text) AS documents
         FROM tag_rules r ORDER BY r.tag, r.created_at`,
    );
    return r.rows.map((x) => ({ ...x, created_at: iso(x.created_at), updated_at: iso(x.updated_at) }));
  }

  private async one(id: string): Promise<RuleRow> {
    const found = (await this.list()).find((r) => r.rule_id === id);
    if (!found) throw new RuleNotFoundError(id);
    return found;
  }

  /** Applies a rule to every document its query matches now; the number tagged now. */
  private async applyAll(rule: { rule_id: string; tag: string; query: string }): Promise<number> {
    const ids = await this.search.matchDocIds(rule.query, { every: true });
    return addTag(this.db, rule.tag, { docIds: ids }, `rule:${rule.rule_id}`);
  }

  async add(tag: string, query: string): Promise<{ rule: RuleRow; tagged: number }> {
    const id = newId();
    await this.db.query('INSERT INTO tag_rules (rule_id, tag, query) VALUES ($1, $2, $3)', [id, tag, query]);
    const tagged = await this.applyAll({ rule_id: id, tag, query });
    return { rule: await this.one(id), tagged };
  }

  /** Changes a rule's tag or query: what it gave moves to the new tag, and it applies again. */
  async update(id: string, patch: { tag?: string; query?: string }): Promise<{ rule: RuleRow; tagged: number }> {
    const before = await this.one(id);
    const tag = patch.tag ?? before.tag;
    const query = patch.query ?? before.query;
    await this.db.transaction(async (tx) => {
      await tx.query('UPDATE tag_rules SET tag = $2, query = $3, updated_at = now() WHERE rule_id = $1', [id, tag, query]);
      if (tag !== before.tag) {
        // Its tags follow it to the new name (where the document has it already, the old one just goes).
        await tx.query(
          `INSERT INTO document_tags (doc_id, tag, origin, created_at)
           SELECT doc_id, $2, origin, created_at FROM document_tags WHERE origin = $1 ON CONFLICT (doc_id, tag) DO NOTHING`,
          [`rule:${id}`, tag],
        );
        await tx.query('DELETE FROM document_tags WHERE origin = $1 AND tag = $2', [`rule:${id}`, before.tag]);
      }
    });
    const tagged = await this.applyAll({ rule_id: id, tag, query });
    return { rule: await this.one(id), tagged };
  }

  /** Removes a rule; with removeTags, the tags it gave too. */
  async remove(id: string, removeTags: boolean): Promise<number> {
    return this.db.transaction(async (tx) => {
      const r = await tx.query('DELETE FROM tag_rules WHERE rule_id = $1', [id]);
      if (r.rowCount === 0) throw new RuleNotFoundError(id);
      if (!removeTags) return 0;
      return (await tx.query('DELETE FROM document_tags WHERE origin = $1', [`rule:${id}`])).rowCount;
    });
  }

  /**
   * Evaluates the rules against the documents waiting for them (one batch); the number of documents
   * looked at. Concurrent calls share one run.
   */
  runPending(): Promise<number> {
    this.running ??= this.runBatch().finally(() => {
      this.running = null;
    });
    return this.running;
  }

  /** Runs until nothing waits (tests, bench). */
  async drain(): Promise<void> {
    while ((await this.runPending()) > 0);
  }

  private async runBatch(): Promise<number> {
    const pending = await this.db.query<{ doc_id: string }>(
      'SELECT doc_id::text AS doc_id FROM tag_rule_pending ORDER BY doc_id LIMIT $1',
      [RULE_BATCH],
    );
    const ids = pending.rows.map((r) => r.doc_id);
    if (ids.length === 0) return 0;
    const rules = await this.db.query<{ rule_id: string; tag: string; query: string }>(
      'SELECT rule_id::text AS rule_id, tag, query FROM tag_rules ORDER BY created_at',
    );
    // The documents were committed before they were read above: the index sees them (matchDocIds polls first).
    for (const rule of rules.rows) {
      const matched = await this.search.matchDocIds(rule.query, { every: true, within: ids });
      if (matched.length > 0) this.counters.tagged += await addTag(this.db, rule.tag, { docIds: matched }, `rule:${rule.rule_id}`);
    }
    await this.db.query('DELETE FROM tag_rule_pending WHERE doc_id = ANY($1::uuid[])', [ids]);
    this.counters.batches++;
    this.counters.documents += ids.length;
    return ids.length;
  }

  /** Documents waiting at the last look, and since when any have been waiting. */
  private lastWaiting = 0;
  private waitingSince = 0;

  /**
   * One look at the queue: while documents are still arriving (more than at the last look) the rules wait,
   * at most RULE_MAX_DEFER_MS, so a bulk import is not slowed by them and they run on larger batches after it.
   */
  private async tick(): Promise<void> {
    const n = (await this.db.query<{ n: number }>('SELECT count(*)::int AS n FROM tag_rule_pending')).rows[0].n;
    const now = Date.now();
    if (n === 0) {
      this.lastWaiting = 0;
      return;
    }
    if (this.lastWaiting === 0) this.waitingSince = now;
    const arriving = n > this.lastWaiting;
    this.lastWaiting = n;
    if (arriving && now - this.waitingSince < RULE_MAX_DEFER_MS) return;
    await this.drain();
    this.lastWaiting = 0;
  }

  /** Looks at the queue every pollMs (unref'd). */
  start(): void {
    const every = this.opts.pollMs ?? RULE_POLL_MS;
    if (this.timer || this.closed || every <= 0) return;
    let busy = false;
    this.timer = setInterval(() => {
      if (busy || this.running) return;
      busy = true;
      this.tick()
        .catch((err) => {
          if (!this.closed) this.opts.onError?.(err);
        })
        .finally(() => {
          busy = false;
        });
    }, every);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running?.catch(() => undefined);
  }
}
