/**
 * Coverage of `memex import mail` against a live gateway: a Maildir with 10 good messages and 1 unreadable file is
 * 11 in the source, 10 stored and 1 missing with its reason, run after run (unchanged files from the manifest
 * count as stored); copies are skipped as duplicates; messages of a blocked sender count as skipped, not missing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { startLiveGateway, tmpDir, type LiveGateway, textSink } from '../email-collectors/helpers.ts';
import { simpleMessage } from '../email-collectors/fixtures.ts';

let live: LiveGateway;
beforeAll(async () => {
  live = await startLiveGateway();
});
afterAll(async () => {
  await live?.close();
});

function maildir(): string {
  const md = tmpDir('memex-cov-maildir-');
  for (const sub of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(md, sub));
  return md;
}

async function importMail(dir: string, state: string, ...extra: string[]) {
  const out = textSink();
  const err = textSink();
  const code = await runMailImport(['mail', dir, '--url', live.url, '--token', TEST_TOKEN, ...extra], {
    out: out,
    err: err,
    env: { HOME: process.env.HOME, MEMEX_MAIL_IMPORT_STATE: state },
  });
  return { code, out: out.text, err: err.text };
}

async function coverageOf(ref: string) {
  const res = await live.gw.request('GET', `/v1/coverage?source=${encodeURIComponent(ref)}`);
  expect(res.statusCode).toBe(200);
  const sources = res.json().sources.filter((s: any) => s.source_ref === ref);
  expect(sources).toHaveLength(1);
  return sources[0];
}

describe('coverage of memex import mail', () => {
  it('a Maildir with 10 good messages and 1 unreadable file: in_source 11, stored 10, missing 1 with its reason', async () => {
    const md = maildir();
    for (let n = 1; n <= 10; n++) fs.writeFileSync(path.join(md, 'cur', `17000000${n}.M${n}.host:2,S`), simpleMessage(7100 + n));
    const bad = path.join(md, 'new', '1700000099.M99.host');
    fs.writeFileSync(bad, '\u0000\u0001 not a mail message, no header block \u0002');
    const state = path.join(tmpDir('memex-cov-state-'), 'state.json');

    const first = await importMail(md, state);
    expect(first.code).toBe(1);
    expect(first.out).toContain(`coverage of ${md}: 11 in the source: 10 stored (10 new); 1 failed`);
    const cov = await coverageOf(md);
    expect(cov).toMatchObject({
      collector: 'import_mail',
      source_type: 'email_local',
      in_source: 11,
      stored: 10,
      skipped: 0,
      failed: 1,
      pending: 0,
      stored_detail: { new: 10, unchanged: 0, updated: 0 },
      missing_total: 1,
      last_run: { status: 'partial' },
    });
    expect(cov.missing).toEqual([
      { ref: bad, state: 'failed', reason_code: 'unreadable', reason: expect.stringMatching(/^unreadable: Not an email message/) },
    ]);

    // Unchanged: the manifest answers for the 10 (not read again), the unreadable file is tried again.
    const second = await importMail(md, state);
    expect(second.out).toMatch(/10 in unchanged files, not read/);
    expect(await coverageOf(md)).toMatchObject({ in_source: 11, stored: 10, stored_detail: { new: 0, unchanged: 10, updated: 0 }, failed: 1, missing_total: 1 });

    // The file is repaired: nothing is missing any more.
    fs.writeFileSync(bad, simpleMessage(7199));
    await importMail(md, state);
    expect(await coverageOf(md)).toMatchObject({ in_source: 11, stored: 11, stored_detail: { new: 1, unchanged: 10 }, failed: 0, missing: [], missing_total: 0, last_run: { status: 'completed' } });
  });

  it('copies of a message are skipped as duplicates, and a blocked sender’s messages as blocked: neither is missing', async () => {
    const md = maildir();
    for (let n = 1; n <= 3; n++) fs.writeFileSync(path.join(md, 'cur', `17100000${n}.M${n}.host:2,S`), simpleMessage(7200 + n));
    fs.writeFileSync(path.join(md, 'cur', '1710000009.M9.host:2,S'), simpleMessage(7201)); // a copy of the first
    const spam = (n: number) => simpleMessage(n, { domain: 'offers.example' }).replace(`sender${n}@offers.example`, 'deals@offers.example');
    fs.writeFileSync(path.join(md, 'new', '1710000050.M50.host'), spam(7250));
    const state = path.join(tmpDir('memex-cov-state-'), 'state.json');

    await importMail(md, state);
    expect(await coverageOf(md)).toMatchObject({ in_source: 5, stored: 4, skipped: 1, skipped_by_reason: { duplicate: 1 }, missing_total: 0 });

    // The person forgets the sender and blocks them; new offers keep arriving.
    const forgot = await live.gw.request('POST', '/v1/forget', { identifier: 'deals@offers.example', block: true });
    expect(forgot.statusCode).toBe(200);
    fs.writeFileSync(path.join(md, 'new', '1710000051.M51.host'), spam(7251));
    fs.writeFileSync(path.join(md, 'new', '1710000052.M52.host'), spam(7252));
    await importMail(md, state);
    const cov = await coverageOf(md);
    expect(cov).toMatchObject({ in_source: 7, failed: 0, pending: 0, missing_total: 0, missing: [] });
    expect(cov.skipped_by_reason).toMatchObject({ duplicate: 1, blocked: 2 });
    // The message forgotten before the block is not sent again while its file is unchanged (forgotten stays
    // forgotten); a rescan sends it, and the block list answers for it too.
    await importMail(md, state, '--rescan');
    const rescanned = await coverageOf(md);
    expect(rescanned).toMatchObject({ in_source: 7, stored: 3, skipped: 4, skipped_by_reason: { duplicate: 1, blocked: 3 }, missing_total: 0 });
    // An unchanged import keeps counting them as they were.
    await importMail(md, state);
    expect(await coverageOf(md)).toMatchObject({ in_source: 7, stored: 3, skipped_by_reason: { duplicate: 1, blocked: 3 }, stored_detail: { unchanged: 3 } });
  });
});
