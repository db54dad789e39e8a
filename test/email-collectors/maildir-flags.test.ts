/**
 * Maildir flags as tags (issue 44 item 5) through `memex import mail` against a LIVE gateway on the test backend:
 * the letters of a message file's name (`:2,FRS`; a file in new/ has none: unread) become the tags unread, flagged
 * and replied; a rename (read, flagged or answered in the mail client) is no new message but moves the tags, on the
 * next import, without reading the file again; a gateway that refuses the flags loses no message and the next import
 * tells them again.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { localMailVersions, startLiveGateway, tmpDir, type LiveGateway, textSink } from './helpers.ts';
import { simpleMessage } from './fixtures.ts';

let live: LiveGateway;
beforeAll(async () => {
  live = await startLiveGateway();
});
afterAll(async () => {
  await live?.close();
});

/** Tags of the domain's messages, by the message's number in simpleMessage: "0:flagged", … */
async function tags(domain: string): Promise<string[]> {
  const r = await live.gw.db.query<{ external_id: string; tag: string; origin: string }>(
    `SELECT d.external_id, t.tag, t.origin FROM document_tags t JOIN documents d ON d.doc_id = t.doc_id AND d.is_active_version
      WHERE d.external_id LIKE $1 ORDER BY 1, 2`,
    [`%@${domain}%`],
  );
  return r.rows.map((x) => `${/(\d+)@/.exec(x.external_id)?.[1] ?? x.external_id}:${x.tag}:${x.origin}`);
}
const versions = (domain: string) => localMailVersions(live, domain);

describe('Maildir flags as tags', () => {
  const domain = 'flags.example';
  const md = path.join(tmpDir('memex-mdflags-'), 'Maildir');
  const env = { HOME: process.env.HOME, MEMEX_MAIL_IMPORT_STATE: path.join(path.dirname(md), 'state.json') };
  const run = async (url = live.url) => {
    const out = textSink();
    const err = textSink();
    const code = await runMailImport(['mail', md, '--url', url, '--token', TEST_TOKEN], { out: out, err: err, env });
    return { code, out: out.text, err: err.text };
  };

  beforeAll(() => {
    for (const d of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(md, d), { recursive: true });
    fs.writeFileSync(path.join(md, 'cur', '1700000000.M0P1.host:2,S'), simpleMessage(0, { domain }));
    fs.writeFileSync(path.join(md, 'new', '1700000001.M1P1.host'), simpleMessage(1, { domain }));
    fs.writeFileSync(path.join(md, 'cur', '1700000002.M2P1.host:2,FS'), simpleMessage(2, { domain }));
  });

  it('a new message is unread, a flagged one flagged, a read one has no flag tag; tag:unread finds it', async () => {
    const r = await run();
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/done: 3 messages, 3 new/);
    expect(await tags(domain)).toEqual(['1:unread:source', '2:flagged:source']);
    const res = await live.gw.request('GET', `/v1/search?${new URLSearchParams({ q: 'tag:unread', k: '10' })}`);
    expect(res.json().hits.filter((h: any) => !h.context).length).toBe(1);
  });

  it('reading, answering and flagging in the mail client (renames) move the tags, with no new message', async () => {
    fs.renameSync(path.join(md, 'new', '1700000001.M1P1.host'), path.join(md, 'cur', '1700000001.M1P1.host:2,RS'));
    fs.renameSync(path.join(md, 'cur', '1700000000.M0P1.host:2,S'), path.join(md, 'cur', '1700000000.M0P1.host:2,FS'));
    fs.renameSync(path.join(md, 'cur', '1700000002.M2P1.host:2,FS'), path.join(md, 'cur', '1700000002.M2P1.host:2,S'));
    const r = await run();
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/3 in unchanged files, not read/);
    expect(await tags(domain)).toEqual(['0:flagged:source', '1:replied:source']);
    expect(await versions(domain)).toBe(3);
    // Nothing changed since: nothing to tell.
    const again = await run();
    expect(again.code).toBe(0);
    expect(await tags(domain)).toEqual(['0:flagged:source', '1:replied:source']);
  });

  it('a gateway that refuses the flags loses no message, says so, and the next import tells them', async () => {
    fs.renameSync(path.join(md, 'cur', '1700000000.M0P1.host:2,FS'), path.join(md, 'cur', '1700000000.M0P1.host:2,'));
    // A proxy in front of the gateway that refuses source state (as a gateway without that route would).
    const http = await import('node:http');
    const target = new URL(live.url);
    const proxy = http.createServer((req, res) => {
      if (req.url?.startsWith('/v1/documents/source-state')) {
        res.writeHead(403, { 'content-type': 'application/json' }).end('{"detail":"not allowed here"}');
        req.resume();
        return;
      }
      const up = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method, headers: { ...req.headers, host: target.host } }, (u) => {
        res.writeHead(u.statusCode ?? 502, u.headers);
        u.pipe(res);
      });
      req.pipe(up);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    try {
      const r = await run(`http://127.0.0.1:${port}`);
      expect(r.err).toMatch(/mail flags: not recorded \(the next import tries again\)/);
      expect(await tags(domain)).toEqual(['0:flagged:source', '1:replied:source']);
    } finally {
      await new Promise((r) => proxy.close(r));
    }
    const r = await run();
    expect(r.code, r.err).toBe(0);
    expect(await tags(domain)).toEqual(['0:unread:source', '1:replied:source']);
    expect(await versions(domain)).toBe(3);
  });
});
