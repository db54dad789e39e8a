/** The run recorder: every item ends in one state, counts add up, the missing list is bounded and ordered. */
import { describe, expect, it } from 'vitest';
import { RunRecorder } from '../../src/coverage/recorder.ts';
import { coverageSourceId } from '../../src/coverage/identity.ts';
import { checkRunReport } from '../../src/coverage/store.ts';
import { MAX_MISSING_PER_REPORT, MAX_REF_CHARS } from '../../src/schemas/coverage.ts';

const source = { collector: 'ingest', source_type: 'localfs', source_account_id: null, source_ref: '/data/docs' } as const;

describe('RunRecorder', () => {
  it('keeps one state per item (the last said), so the counts add up', () => {
    const rec = new RunRecorder(source);
    rec.seen('a');
    rec.seen('b');
    rec.pending('b', 'gateway unreachable');
    rec.stored('b', 'new'); // retried in the same run
    rec.seen('c'); // never handled: pending
    rec.skipped('d', 'unsupported', 'no text extractor for .xyz');
    rec.skipped('e', 'blocked', 'blocked_identifier');
    rec.failed('f', 'HTTP 422: text too long');
    rec.stored('a', 'unchanged');
    rec.storedAnswer('g', { duplicate: false, version_number: 2 });
    rec.addBulk('unchanged', 40);
    rec.addBulk('skipped', 3, 'folded');
    const report = rec.report();
    expect(report.counts).toEqual({
      in_source: 50,
      stored: { new: 1, unchanged: 41, updated: 1 },
      skipped: { folded: 3, unsupported: 1, blocked: 1 },
      failed: 1,
      pending: 1,
    });
    // Failed first, then pending, then the skips someone may act on; blocked items are not missing.
    expect(report.missing.map((m) => [m.ref, m.state, m.reason_code])).toEqual([
      ['f', 'failed', 'error'],
      ['c', 'pending', 'not_reached'],
      ['d', 'skipped', 'unsupported'],
    ]);
    expect(report.status).toBe('partial');
    expect(checkRunReport(report)).toEqual([]);
  });

  it('lists at most the bound and counts the rest; a long ref keeps its end and the source id its identity', () => {
    const long = `/very/${'deep/'.repeat(400)}file.pdf`;
    const rec = new RunRecorder({ ...source, source_ref: long });
    rec.failed(`${long}#0`, 'broken');
    for (let i = 1; i < MAX_MISSING_PER_REPORT + 7; i++) rec.failed(`/short/${i}`, 'broken');
    const report = rec.report({ error: 'gateway went away' });
    expect(report.missing).toHaveLength(MAX_MISSING_PER_REPORT);
    expect(report.missing_unlisted).toBe(7);
    expect(report.status).toBe('failed');
    expect(report.missing[0].ref.length).toBe(MAX_REF_CHARS);
    expect(report.missing[0].ref.endsWith('file.pdf#0')).toBe(true);
    expect(report.source_ref.length).toBe(MAX_REF_CHARS);
    expect(coverageSourceId({ ...source, source_ref: long })).toBe(coverageSourceId({ ...source, source_ref: report.source_ref }));
    expect(checkRunReport(report)).toEqual([]);
  });

  it('keeps the listed bytes bounded (long paths everywhere): the rest is counted', () => {
    const rec = new RunRecorder(source);
    for (let i = 0; i < 3000; i++) rec.failed(`/${'é'.repeat(900)}/${i}`, 'x'.repeat(400));
    const report = rec.report();
    expect(Buffer.byteLength(JSON.stringify(report))).toBeLessThan(5 * 1024 * 1024);
    expect(report.missing.length + report.missing_unlisted!).toBe(3000);
    expect(report.missing_unlisted).toBeGreaterThan(0);
  });

  it('a clean run is completed', () => {
    const rec = new RunRecorder(source);
    rec.stored('x', 'new');
    rec.skipped('y', 'duplicate');
    expect(rec.report().status).toBe('completed');
  });
});
