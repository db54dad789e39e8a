/**
 * Every memex connection to a PostgreSQL server runs with JIT compilation off (src/db/postgres.ts): with it on,
 * the thread refresh of each import batch paid 20–25 ms of LLVM compilation. Options in DATABASE_URL still apply.
 */
import { describe, expect, it } from 'vitest';
import { openPostgres } from '../../src/db/postgres.ts';
import { serverUrl } from '../helpers/db.ts';

async function settings(url: string) {
  const db = await openPostgres(url);
  try {
    const r = await db.query<{ jit: string; work_mem: string }>("SELECT current_setting('jit') AS jit, current_setting('work_mem') AS work_mem");
    return r.rows[0];
  } finally {
    await db.close();
  }
}

describe('PostgreSQL connection options', () => {
  it('turns JIT off, and keeps the options a DATABASE_URL gives (which win over ours)', async () => {
    expect((await settings(serverUrl)).jit).toBe('off');
    const withOptions = new URL(serverUrl);
    withOptions.searchParams.set('options', '-c work_mem=7MB');
    expect(await settings(withOptions.toString())).toEqual({ jit: 'off', work_mem: '7MB' });
    withOptions.searchParams.set('options', '-c jit=on');
    expect((await settings(withOptions.toString())).jit).toBe('on');
  });
});
