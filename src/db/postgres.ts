import pg from 'pg';
import type { Database, Queryable, QueryOptions, QueryResult } from './types.ts';

// Counts and ids of type int8 fit in a double for every size memex handles; parse them as numbers
// so both drivers return the same JavaScript types.
pg.types.setTypeParser(20, (v) => Number(v));
// numeric (relevance scores, link weights) as numbers too, like PGlite's float columns.
pg.types.setTypeParser(1700, (v) => Number(v));

function wrap(client: pg.Pool | pg.PoolClient): Queryable {
  return {
    async exec(sql: string) {
      await client.query(sql);
    },
    async query<T>(sql: string, params: unknown[] = [], opts?: QueryOptions): Promise<QueryResult<T>> {
      const r = opts?.name
        ? await client.query({ name: opts.name, text: sql, values: params as any[] })
        : await client.query(sql, params as any[]);
      return { rows: r.rows as T[], rowCount: r.rowCount ?? 0 };
    },
  };
}

/**
 * Connection options for every memex connection: JIT compilation off. memex's statements are short and many, and
 * the planner's estimates for set-based statements over arrays and jsonb (an import batch's thread refresh) pass
 * `jit_above_cost` although they touch a few hundred rows: 20–25 ms of LLVM per execution, 12 s of PostgreSQL CPU in
 * a 40,000-message import (auto_explain, docs/BENCHMARKS.md). Options the DATABASE_URL carries come after these, so
 * they win.
 */
function connectionConfig(url: string): { connectionString: string; options: string } {
  const ours = '-c jit=off';
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return { connectionString: url, options: ours };
  }
  const own = u.searchParams.get('options');
  if (!own) return { connectionString: url, options: ours }; // the URL as given, not re-serialised
  // pg lets options in the URL replace the `options` field, so they move into it.
  u.searchParams.delete('options');
  return { connectionString: u.toString(), options: `${ours} ${own}` };
}

/** A PostgreSQL server (with pgvector installed) reached through DATABASE_URL. */
export async function openPostgres(url: string, poolSize = 10): Promise<Database> {
  const pool = new pg.Pool({ ...connectionConfig(url), max: poolSize });
  // An idle connection can be closed by the server (restart, admin command). The pool drops it and
  // opens another on the next query; without this handler the error would end the process.
  pool.on('error', (err) => {
    process.emitWarning(`PostgreSQL connection lost: ${err.message}`, 'DatabaseWarning');
  });
  // Fail at start with a clear reason instead of at the first request.
  const client = await pool.connect();
  client.release();
  const base = wrap(pool);
  return {
    kind: 'postgres',
    query: base.query,
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      const c = await pool.connect();
      try {
        await c.query('BEGIN');
        const out = await fn(wrap(c));
        await c.query('COMMIT');
        return out;
      } catch (err) {
        await c.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        c.release();
      }
    },
    exec: base.exec,
    async close() {
      await pool.end();
    },
  };
}
