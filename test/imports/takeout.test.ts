/**
 * `memex import` of a Google Takeout archive (a zip made by Info-ZIP's `zip`, a .tgz made by `tar`, and the
 * unpacked folder): Mail goes to the mail import, Contacts to the vCard import, Chrome history to pages, Keep to
 * notes, Calendar to the .ics importer (docs/calendar.md); a summary per part, one
 * coverage run per part; a second import stores nothing new; a truncated archive is a clear error.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runImportCommand } from '../../src/imports/registry.ts';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { startLiveGateway, type LiveGateway } from '../email-collectors/helpers.ts';
import { writeTakeout } from './fixtures.ts';

let live: LiveGateway;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-takeout-e2e-'));
const env = { ...process.env, MEMEX_MAIL_IMPORT_STATE: path.join(tmp, 'mail-state.json') };
beforeAll(async () => {
  live = await startLiveGateway();
}, 120_000);
afterAll(async () => {
  await live?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function memexImport(p: string) {
  let text = '';
  const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
  const saved = process.env.MEMEX_MAIL_IMPORT_STATE;
  process.env.MEMEX_MAIL_IMPORT_STATE = env.MEMEX_MAIL_IMPORT_STATE;
  try {
    // As `memex import` runs it: the CLI hands the importers its `import mail` verb.
    const code = await runImportCommand([p, '--url', live.url, '--token', TEST_TOKEN], out, { mailImport: runMailImport });
    return { code, text };
  } finally {
    if (saved === undefined) delete process.env.MEMEX_MAIL_IMPORT_STATE;
    else process.env.MEMEX_MAIL_IMPORT_STATE = saved;
  }
}

async function count(sql: string): Promise<number> {
  return (await live.gw.db.query<{ n: number }>(sql)).rows[0].n;
}
const docs = (type: string) => count(`SELECT count(*)::int AS n FROM documents WHERE source_type = '${type}'`);

describe('memex import TAKEOUT', () => {
  const tree = path.join(tmp, 'unpacked');

  it('a zip: each part to its importer, a summary per part, a coverage run per part', async () => {
    writeTakeout(tree);
    const zip = path.join(tmp, 'takeout-20260105T090000Z-001.zip');
    execFileSync('zip', ['-q', '-r', zip, 'Takeout'], { cwd: tree });
    const r = await memexImport(zip);
    expect(r.text).toContain('Google Takeout');
    expect(r.text).toMatch(/Mail: Mail\/All mail Including Spam and Trash\.mbox: done/);
    expect(r.text).toMatch(/Contacts: Contacts\/My Contacts\/My Contacts\.vcf: done/);
    expect(r.text).toContain('Calendar: Calendar/me@gmail.com.ics: done');
    expect(r.text).toMatch(/Chrome history: Chrome\/BrowserHistory\.json: done/);
    expect(r.text).toContain('keep notes: 2 new');
    expect(r.text).toMatch(/YouTube and YouTube Music: skipped/);
    expect(r.text).not.toMatch(/Keep: skipped/); // Keep's Labels.txt is part of Keep
    expect(r.code).toBe(0);

    expect(await count("SELECT count(*)::int AS n FROM documents WHERE source_type = 'email_local'")).toBe(2);
    expect(await docs('web_page')).toBe(2);
    expect(await docs('note')).toBe(2);
    expect(await docs('calendar_event')).toBe(1);
    expect(await count("SELECT count(*)::int AS n FROM people WHERE display_name = 'Ana Costa'")).toBeGreaterThanOrEqual(1);
    const keep = await live.gw.db.query<{ title: string; metadata: any }>("SELECT title, metadata FROM documents WHERE source_type = 'note' ORDER BY title");
    expect(keep.rows.map((x) => x.title)).toEqual(['Idea: tile a small table with leftover azulejos', 'Shopping']);
    expect(keep.rows[1].metadata).toMatchObject({ tags: ['home'], pinned: true });
    const page = await live.gw.db.query<{ metadata: any }>("SELECT metadata FROM documents WHERE source_type = 'web_page' AND title = 'Museu Nacional do Azulejo'");
    expect(page.rows[0].metadata).toMatchObject({ visit_count: 2, typed_count: 1, browser: 'chrome', profile: 'google_takeout' });

    const cov = (await live.gw.request('GET', '/v1/coverage')).json().sources as Array<{ collector: string; source_ref: string; stored: number }>;
    const collectors = cov.map((s) => s.collector).sort();
    expect(collectors).toEqual(expect.arrayContaining(['import_mail', 'contacts', 'import_browser', 'import_notes']));
    expect(cov.find((s) => s.source_ref === `${zip}#Keep`)).toMatchObject({ stored: 2 });
  }, 180_000);

  it('the same archive as a .tgz, and the unpacked folder, store nothing new', async () => {
    const tgz = path.join(tmp, 'takeout-20260105T090000Z-001.tgz');
    execFileSync('tar', ['czf', tgz, 'Takeout'], { cwd: tree });
    const before = await count('SELECT count(*)::int AS n FROM documents');
    const r = await memexImport(tgz);
    expect(r.text).toContain('keep notes: 2 unchanged');
    expect(r.text).toContain('pages: 2 unchanged');
    const folder = await memexImport(tree);
    expect(folder.text).toContain('keep notes: 2 unchanged');
    expect(await count('SELECT count(*)::int AS n FROM documents')).toBe(before);
  }, 180_000);

  it('a truncated archive is a clear error, and a bad Keep note is named while the rest are kept', async () => {
    const zip = path.join(tmp, 'takeout-20260105T090000Z-001.zip');
    const cut = path.join(tmp, 'takeout-cut.zip');
    fs.writeFileSync(cut, fs.readFileSync(zip).subarray(0, 2000));
    const before = await count('SELECT count(*)::int AS n FROM documents WHERE is_active_version');
    const r = await memexImport(cut);
    expect(r.code).toBe(1);
    expect(r.text).toMatch(/takeout-cut\.zip: .*truncated.*nothing was imported from it/);
    expect(await count('SELECT count(*)::int AS n FROM documents WHERE is_active_version')).toBe(before);

    const broken = path.join(tmp, 'broken');
    writeTakeout(broken, { brokenKeep: true });
    const b = await memexImport(broken);
    expect(b.code).toBe(1);
    expect(b.text).toMatch(/Keep\/Broken\.json: not imported: not valid JSON/);
    expect(b.text).toContain('keep notes: 2 unchanged');
  }, 180_000);
});
