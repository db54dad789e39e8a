/**
 * mbox flags as tags (issue 44 item 5) through `memex import mail` against a LIVE gateway on the test backend: the
 * `Status:` / `X-Status:` headers mail programs (mutt, Thunderbird, Evolution) keep in an mbox, and the
 * `X-Gmail-Labels:` of a Google Takeout mbox, become the tags unread, flagged and replied (and the person's own
 * Gmail labels tags of their names); a mail program that
 * rewrites the mbox after reading and flagging moves the tags with no new message; an mbox without these headers
 * tells nothing (its mail stays read, as before).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { startLiveGateway, tmpDir, type LiveGateway, textSink, sourceTags, localMailVersions } from './helpers.ts';
import { simpleMessage } from './fixtures.ts';

let live: LiveGateway;
beforeAll(async () => {
  live = await startLiveGateway();
});
afterAll(async () => {
  await live?.close();
});

const tags = (domain: string) => sourceTags(live, domain);
const versions = (domain: string) => localMailVersions(live, domain);

/** An mbox of simpleMessage(n) with the given extra headers each (put after From:, as mail programs write them). */
function mbox(domain: string, headers: string[]): string {
  return headers
    .map((h, n) => {
      const m = simpleMessage(n, { domain }).replace(/\r\n/g, '\n');
      return `From MAILER-DAEMON Tue Dec  5 10:00:00 2023\n${h ? m.replace(/^(From: [^\n]*\n)/, `$1${h}\n`) : m}\n`;
    })
    .join('');
}

describe('mbox flags as tags', () => {
  const dir = tmpDir('memex-mboxflags-');
  const env = { HOME: process.env.HOME, MEMEX_MAIL_IMPORT_STATE: path.join(dir, 'state.json') };
  const run = async (file: string) => {
    const out = textSink();
    const err = textSink();
    const code = await runMailImport(['mail', file, '--url', live.url, '--token', TEST_TOKEN], { out: out, err: err, env });
    return { code, out: out.text, err: err.text };
  };

  it('Status: and X-Status: give unread, flagged and replied; a rewrite after reading moves them', async () => {
    const domain = 'mutt.example';
    const file = path.join(dir, 'mutt.mbox');
    fs.writeFileSync(file, mbox(domain, ['Status: RO', 'Status: O', 'Status: RO\nX-Status: AF']));
    const r = await run(file);
    expect(r.code, r.err).toBe(0);
    expect(await tags(domain)).toEqual(['1:unread', '2:flagged', '2:replied']);

    // The mail program read message 1, flagged message 0 and unflagged message 2, and wrote the mbox again.
    fs.writeFileSync(file, mbox(domain, ['Status: RO\nX-Status: F', 'Status: RO', 'Status: RO\nX-Status: A']));
    const again = await run(file);
    expect(again.code, again.err).toBe(0);
    expect(await tags(domain)).toEqual(['0:flagged', '2:replied']);
    expect(await versions(domain)).toBe(3);
  });

  it("a Google Takeout mbox: Unread and Starred are unread and flagged, the person's own labels are tags", async () => {
    const domain = 'takeout.example';
    const file = path.join(dir, 'All mail Including Spam and Trash.mbox');
    fs.writeFileSync(
      file,
      mbox(domain, ['X-Gmail-Labels: Inbox,Unread,Starred,Tax Return 2024', 'X-Gmail-Labels: Archived,Opened,Work/Projects,Category Updates', 'X-Gmail-Labels: Inbox,Unread,Important']),
    );
    const r = await run(file);
    expect(r.code, r.err).toBe(0);
    expect(await tags(domain)).toEqual(['0:flagged', '0:tax-return-2024', '0:unread', '1:work/projects', '2:unread']);
    const res = await live.gw.request('GET', `/v1/search?${new URLSearchParams({ q: 'tag:work/*', k: '10' })}`);
    expect(res.json().hits.filter((h: any) => !h.context).map((h: any) => h.title)).toEqual(['Message number 1']);

    // A later export: the label moved from message 1 to 2, message 0 was read; a label given by hand stays.
    const one = (await live.gw.db.query<{ doc_id: string }>(`SELECT doc_id FROM documents WHERE external_id LIKE '%msg-1@${domain}%' AND is_active_version`)).rows[0];
    expect((await live.gw.request('POST', '/v1/tags/add', { tag: 'keep-me', doc_ids: [one.doc_id] })).statusCode).toBeLessThan(300);
    fs.writeFileSync(file, mbox(domain, ['X-Gmail-Labels: Inbox,Opened,Starred,Tax Return 2024', 'X-Gmail-Labels: Archived,Opened', 'X-Gmail-Labels: Inbox,Unread,Work/Projects']));
    const again = await run(file);
    expect(again.code, again.err).toBe(0);
    expect(await tags(domain)).toEqual(['0:flagged', '0:tax-return-2024', '2:unread', '2:work/projects']);
    const manual = await live.gw.db.query(`SELECT 1 FROM document_tags WHERE doc_id = $1 AND tag = 'keep-me' AND origin = 'manual'`, [one.doc_id]);
    expect(manual.rows).toHaveLength(1);
    expect(await versions(domain)).toBe(3);
  });

  it('an mbox without flag headers tells nothing: its mail has no flag tags', async () => {
    const domain = 'plain.example';
    const file = path.join(dir, 'plain.mbox');
    fs.writeFileSync(file, mbox(domain, ['', '']));
    const r = await run(file);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/2 new/);
    expect(await tags(domain)).toEqual([]);
  });
});
