/**
 * The coverage routes on both backends: run reports whose counts add up are kept per source and answered by
 * GET /v1/coverage (missing items paged), reports that do not add up are a 422 that stores nothing, a run sent
 * twice counts once, a late report of an older run goes to the history only, recounts report drift, and a
 * retry request waits for the next run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunRecorder } from '../../src/coverage/recorder.ts';
import { coverageSourceId, type SourceIdentity } from '../../src/coverage/identity.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

const maildir: SourceIdentity = { collector: 'import_mail', source_type: 'email_local', source_account_id: null, source_ref: '/home/jane/Maildir' };

/** A run over `good` stored messages and `bad` unreadable ones, the way an importer would record it. */
function run(good: number, bad: number, source: SourceIdentity = maildir) {
  const rec = new RunRecorder(source);
  for (let i = 1; i <= good; i++) rec.stored(`/home/jane/Maildir/cur/${i}:2,S`, 'new');
  for (let i = 1; i <= bad; i++) rec.failed(`/home/jane/Maildir/cur/bad-${i}`, `unparsable message ${i}`, 'unreadable');
  return rec;
}

describe('coverage routes', () => {
  it('keeps a run per source: counts that add up, and the items not stored with their reasons, paged', async () => {
    const rec = run(10, 3);
    rec.skipped('/home/jane/Maildir/cur/copy', 'duplicate', 'a copy of /home/jane/Maildir/cur/1:2,S');
    const sent = await gw.request('POST', '/v1/coverage/runs', rec.report({ cursor: { files: 14 } }));
    expect(sent.statusCode).toBe(200);
    const id = coverageSourceId(maildir);
    expect(sent.json()).toEqual({ source_id: id, run_id: rec.runId, applied: true });

    const res = await gw.request('GET', '/v1/coverage?missing_limit=2');
    expect(res.statusCode).toBe(200);
    const [src] = res.json().sources;
    expect(src).toMatchObject({
      source_id: id,
      collector: 'import_mail',
      source_type: 'email_local',
      source_ref: '/home/jane/Maildir',
      in_source: 14,
      stored: 10,
      skipped: 1,
      failed: 3,
      pending: 0,
      stored_detail: { new: 10, unchanged: 0, updated: 0 },
      skipped_by_reason: { duplicate: 1 },
      missing_total: 3,
      cursor: { files: 14 },
      last_run: { run_id: rec.runId, status: 'partial' },
    });
    // The duplicate is skipped on purpose: counted, not listed as missing.
    expect(src.missing).toEqual([
      { ref: '/home/jane/Maildir/cur/bad-1', state: 'failed', reason_code: 'unreadable', reason: 'unparsable message 1' },
      { ref: '/home/jane/Maildir/cur/bad-2', state: 'failed', reason_code: 'unreadable', reason: 'unparsable message 2' },
    ]);
    const page = await gw.request('GET', `/v1/coverage/sources/${id}/missing?after=${src.missing_next}&limit=5`);
    expect(page.json()).toEqual({
      source_id: id,
      total: 3,
      items: [{ ref: '/home/jane/Maildir/cur/bad-3', state: 'failed', reason_code: 'unreadable', reason: 'unparsable message 3' }],
      next: null,
    });
  });

  it('refuses counts that do not add up with a 422 that says so, and stores nothing', async () => {
    const other = { ...maildir, source_ref: '/home/jane/Other' };
    const report = run(2, 1, other).report();
    report.counts.in_source = 5;
    const res = await gw.request('POST', '/v1/coverage/runs', report);
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0]).toMatchObject({ loc: ['body', 'counts', 'in_source'], msg: expect.stringMatching(/do not add up.* = 3, not in_source 5/) });

    const unlisted = run(2, 1, other).report();
    unlisted.missing = [];
    const res2 = await gw.request('POST', '/v1/coverage/runs', unlisted);
    expect(res2.statusCode).toBe(422);
    expect(res2.json().detail[0].msg).toMatch(/missing lists 0 items/);

    const bad = await gw.request('POST', '/v1/coverage/runs', { ...run(1, 0, other).report(), collector: 'telepathy' });
    expect(bad.statusCode).toBe(422);
    expect((await gw.request('GET', `/v1/coverage?source=${coverageSourceId(other)}`)).json().sources).toEqual([]);
  });

  it('counts a run sent twice once, and keeps a late report of an older run in the history only', async () => {
    const src = { ...maildir, source_ref: '/home/jane/Twice' };
    const older = run(1, 0, src);
    const newer = run(2, 0, src);
    const newerReport = newer.report();
    const olderReport = { ...older.report(), finished_at: new Date(Date.parse(newerReport.finished_at) - 60_000).toISOString(), started_at: new Date(Date.parse(newerReport.started_at) - 60_000).toISOString() };
    expect((await gw.request('POST', '/v1/coverage/runs', newerReport)).json().applied).toBe(true);
    expect((await gw.request('POST', '/v1/coverage/runs', newerReport)).json().applied).toBe(false);
    expect((await gw.request('POST', '/v1/coverage/runs', olderReport)).json().applied).toBe(false);
    const id = coverageSourceId(src);
    const [cov] = (await gw.request('GET', `/v1/coverage?source=${id}`)).json().sources;
    expect(cov).toMatchObject({ in_source: 2, stored: 2, last_run: { run_id: newer.runId } });
    const runs = (await gw.request('GET', `/v1/coverage/sources/${id}/runs`)).json().runs;
    expect(runs.map((r: any) => r.run_id)).toEqual([newer.runId, older.runId]);
  });

  it('asks for a retry until a run that began later reports; unknown sources are a 404', async () => {
    const src = { ...maildir, source_ref: '/home/jane/Retry' };
    await gw.request('POST', '/v1/coverage/runs', run(3, 2, src).report());
    const id = coverageSourceId(src);
    const asked = await gw.request('POST', `/v1/coverage/sources/${id}/retry`);
    expect(asked.statusCode).toBe(202);
    expect(asked.json().note).toMatch(/host agent retries/);
    const [before] = (await gw.request('GET', `/v1/coverage?source=${id}`)).json().sources;
    expect(before.retry_requested_at).toBe(asked.json().requested_at);
    // The retried run finds the two messages readable now.
    await new Promise((r) => setTimeout(r, 5));
    await gw.request('POST', '/v1/coverage/runs', run(5, 0, src).report());
    const [after] = (await gw.request('GET', `/v1/coverage?source=${id}`)).json().sources;
    expect(after).toMatchObject({ retry_requested_at: null, failed: 0, stored: 5, missing_total: 0, missing: [] });

    const unknown = '00000000-0000-4000-8000-000000000000';
    expect((await gw.request('POST', `/v1/coverage/sources/${unknown}/retry`)).statusCode).toBe(404);
    expect((await gw.request('GET', `/v1/coverage/sources/${unknown}/missing`)).statusCode).toBe(404);
    expect((await gw.request('GET', `/v1/coverage/sources/not-a-uuid/missing`)).statusCode).toBe(422);
  });

  it('records a recount with its drift against the last run', async () => {
    const src = { ...maildir, source_ref: '/home/jane/Recount' };
    await gw.request('POST', '/v1/coverage/runs', run(4, 0, src).report());
    const res = await gw.request('POST', '/v1/coverage/reconcile', {
      ...src,
      counted_at: new Date().toISOString(),
      in_source: 6,
      added: 2,
      removed: 0,
      facts: { files: 6 },
      notes: ['2 files are new since the last run'],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().reconcile).toMatchObject({ in_source: 6, recorded_in_source: 4, drift: 2, added: 2, in_sync: false, notes: ['2 files are new since the last run'] });
    const [cov] = (await gw.request('GET', `/v1/coverage?source=${coverageSourceId(src)}`)).json().sources;
    expect(cov.reconcile).toMatchObject({ drift: 2, facts: { files: 6 } });
    // A source nobody ran yet: the recount alone says what is in it.
    const fresh = { ...maildir, source_ref: '/home/jane/Never' };
    await gw.request('POST', '/v1/coverage/reconcile', { ...fresh, counted_at: new Date().toISOString(), in_source: 7 });
    const [never] = (await gw.request('GET', `/v1/coverage?source=${coverageSourceId(fresh)}`)).json().sources;
    expect(never).toMatchObject({ in_source: 7, stored: null, last_run: null, reconcile: { drift: 7, in_sync: false } });
  });

  it('forgets a source record on DELETE', async () => {
    const src = { ...maildir, source_ref: '/home/jane/Gone' };
    await gw.request('POST', '/v1/coverage/runs', run(1, 1, src).report());
    const id = coverageSourceId(src);
    expect((await gw.request('DELETE', `/v1/coverage/sources/${id}`)).statusCode).toBe(204);
    expect((await gw.request('DELETE', `/v1/coverage/sources/${id}`)).statusCode).toBe(404);
    expect((await gw.request('GET', `/v1/coverage?source=${id}`)).json().sources).toEqual([]);
  });
});
