/**
 * Coverage on the Sources page, in Chromium on both backends: each source with what it holds against what was
 * stored; the items not stored one click away with their reasons; "Retry failed" for a source the host agent
 * collects (the request is recorded for the agent's next check), and, for a `memex import mail` source, the
 * command to run again instead of a button that could do nothing.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunRecorder } from '../../src/coverage/recorder.ts';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

let h: UiHarness;
let page: Page;
let errors: string[];

const FOLDER = 'Archive';

beforeAll(async () => {
  h = await startUiHarness();
  ({ page, errors } = await signedInPage(h));
  // What the IMAP collector reports after a run: 8 messages, 5 stored, a copy, one unparsable, one waiting.
  const imap = new RunRecorder({ collector: 'email_imap', source_type: 'email', source_account_id: 'work-mail', source_ref: FOLDER });
  for (let uid = 1; uid <= 5; uid++) imap.stored(`${FOLDER};UIDVALIDITY=77;UID=${uid}`, 'new');
  imap.skipped(`${FOLDER};UIDVALIDITY=77;UID=6`, 'duplicate');
  imap.failed(`${FOLDER};UIDVALIDITY=77;UID=7`, 'unparsable message: no header block', 'unparsable');
  imap.pending(`${FOLDER};UIDVALIDITY=77;UID=8`, 'fetch failed: connection reset; tried again by the next run', 'fetch_failed');
  const a = await h.gw.request('POST', '/v1/coverage/runs', imap.report({ cursor: { uidvalidity: '77', uid_max: 8, messages: 8 } }));
  expect(a.statusCode, a.body).toBe(200);
  // What `memex import mail` reports: 3 messages, one unreadable.
  const mail = new RunRecorder({ collector: 'import_mail', source_type: 'email', source_account_id: null, source_ref: '/home/jane/Maildir' });
  mail.stored('/home/jane/Maildir/cur/1', 'new');
  mail.stored('/home/jane/Maildir/cur/2', 'new');
  mail.failed('/home/jane/Maildir/new/3', 'unreadable: EACCES', 'unreadable');
  const b = await h.gw.request('POST', '/v1/coverage/runs', mail.report());
  expect(b.statusCode, b.body).toBe(200);
});
afterAll(async () => {
  await h?.close();
});

describe('coverage on the Sources page', () => {
  it('fits its column on a 1,280-pixel-wide window (no sideways scrolling)', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.goto(`${h.url}/#/sources`);
    const section = page.getByRole('region', { name: 'Coverage' });
    await section.getByRole('row', { name: /work-mail: Archive/ }).waitFor();
    const fit = await section.locator('.table-wrap').evaluate((wrap: any) => ({
      table: wrap.querySelector('table').scrollWidth as number,
      column: wrap.clientWidth,
    }));
    expect(fit.table).toBeLessThanOrEqual(fit.column);
  });

  it('shows each source’s counts, the missing list one click away, and a retry the host agent will carry out', async () => {
    await page.goto(`${h.url}/#/sources`);
    const section = page.getByRole('region', { name: 'Coverage' });
    await section.waitFor();
    const imapRow = section.getByRole('row', { name: /work-mail: Archive/ });
    const cells = await imapRow.getByRole('cell').allTextContents();
    // In source, stored, skipped (1, with why: 1 duplicate), failed, pending.
    expect(cells.slice(1, 6)).toEqual(['8', '5', '11 duplicate', '1', '1']);

    await section.getByRole('button', { name: '2 not stored from work-mail: Archive' }).click();
    const list = section.getByRole('list', { name: 'Not stored from work-mail: Archive' });
    await list.waitFor();
    const items = await list.getByRole('listitem').allTextContents();
    expect(items).toEqual([
      'failed Archive;UIDVALIDITY=77;UID=7: unparsable message: no header block',
      'pending Archive;UIDVALIDITY=77;UID=8: fetch failed: connection reset; tried again by the next run',
    ]);
    expect(await section.getByRole('button', { name: '2 not stored from work-mail: Archive' }).getAttribute('aria-expanded')).toBe('true');

    await section.getByRole('button', { name: 'Retry failed items of work-mail: Archive' }).click();
    await section.getByRole('status').filter({ hasText: 'Retry asked for' }).waitFor();
    const cov = (await h.gw.request('GET', '/v1/coverage?source=email_imap')).json().sources[0];
    expect(cov.retry_requested_at).not.toBeNull();

    // An import the gateway cannot run again: the command to run, no button.
    const mailRow = section.getByRole('row', { name: /\/home\/jane\/Maildir/ });
    expect(await mailRow.getByRole('button', { name: /Retry failed/ }).count()).toBe(0);
    expect(await mailRow.textContent()).toContain('Run memex import mail PATH again to retry');
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
