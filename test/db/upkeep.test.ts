import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTableUpkeep, upkeepDue, upkeepPass, type UpkeepTask } from '../../src/db/upkeep.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

/** PostgreSQL publishes table statistics up to a second late; wait until `check` holds. */
async function eventually<T>(read: () => Promise<T>, check: (v: T) => boolean, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (check(v) || Date.now() > until) return v;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const has = (tasks: UpkeepTask[], action: UpkeepTask['action']) => tasks.some((t) => t.table === 'search_changes' && t.action === action);

describe('table upkeep: what autovacuum does, for the embedded database', () => {
  let t: TestDatabase;
  const stats = async () =>
    (
      await t.db.query<{ dead: number; analysed: boolean }>(
        `SELECT n_dead_tup::int AS dead, (last_analyze IS NOT NULL) AS analysed FROM pg_stat_user_tables WHERE relname = 'search_changes'`,
      )
    ).rows[0];
  const pollPlan = async () => {
    const h = (await t.db.query<{ h: string }>('SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h')).rows[0].h;
    const r = await t.db.query<Record<string, string>>(`EXPLAIN SELECT seq, xid, doc_id FROM search_changes WHERE xid >= $1::xid8`, [h]);
    return r.rows.map((x) => Object.values(x)[0]).join('\n');
  };

  beforeAll(async () => {
    t = await createTestDatabase();
    // On a PostgreSQL server autovacuum would race these steps; this table is left to upkeep alone.
    await t.db.exec('ALTER TABLE search_changes SET (autovacuum_enabled = false)');
    for (let i = 0; i < 20; i++) {
      await t.db.transaction((tx) => tx.query('INSERT INTO search_changes (doc_id) SELECT gen_random_uuid() FROM generate_series(1, 1000)'));
    }
  });
  afterAll(async () => t.drop());

  it('waits while someone reads', async () => {
    await eventually(() => upkeepDue(t.db), (due) => has(due, 'analyze'));
    const pass = await upkeepPass(t.db, () => false);
    expect(pass.done).toEqual([]);
    expect(pass.deferred).toBeGreaterThan(0);
    expect((await stats()).analysed).toBe(false);
  });

  it('analyses a table once enough of it changed; the change-log poll then reads its index, not the whole log', async () => {
    expect(has(await upkeepDue(t.db), 'analyze')).toBe(true);
    const pass = await upkeepPass(t.db);
    expect(pass.done).toContainEqual(expect.objectContaining({ table: 'search_changes', action: 'analyze' }));
    expect((await stats()).analysed).toBe(true);
    const plan = await pollPlan();
    expect(plan).not.toMatch(/Seq Scan on search_changes/);
    expect(plan).toMatch(/Index/);
    expect(has(await upkeepDue(t.db), 'analyze')).toBe(false);
  });

  it('vacuums a table once enough of its rows are dead', async () => {
    await t.db.query('DELETE FROM search_changes WHERE seq % 4 <> 0');
    const due = await eventually(() => upkeepDue(t.db), (d) => has(d, 'vacuum'));
    expect(has(due, 'vacuum')).toBe(true);
    expect((await stats()).dead).toBeGreaterThanOrEqual(15_000);
    const pass = await upkeepPass(t.db);
    expect(pass.done).toContainEqual(expect.objectContaining({ table: 'search_changes', action: 'vacuum' }));
    expect((await eventually(stats, (s) => s.dead === 0)).dead).toBe(0);
  });

  it('runs in the background while nobody reads, logs what it did, and stops', async () => {
    await t.db.transaction((tx) => tx.query('INSERT INTO search_changes (doc_id) SELECT gen_random_uuid() FROM generate_series(1, 5000)'));
    await eventually(() => upkeepDue(t.db), (d) => has(d, 'analyze'));
    const logged: object[] = [];
    let reading = true;
    const upkeep = startTableUpkeep(t.db, {
      intervalMs: 50,
      firstAfterMs: 0,
      idle: () => !reading,
      log: { info: (o) => logged.push(o), warn: (o) => logged.push({ warn: o }) },
    });
    try {
      await new Promise((r) => setTimeout(r, 300));
      expect(logged).toEqual([]);
      reading = false;
      await eventually(async () => logged.length, (n) => n > 0);
      const done = logged.flatMap((o) => (o as { done?: object[] }).done ?? []);
      expect(done).toContainEqual(expect.objectContaining({ table: 'search_changes', action: 'analyze', ms: expect.any(Number) }));
    } finally {
      await upkeep.stop();
    }
  });
});
