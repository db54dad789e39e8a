/**
 * `memex search`, `memex ask` and `memex open` against a running gateway over HTTP: readable output, --json, filters,
 * and clear errors (unknown id, no server, usage).
 */
import { spawn } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAskCommand, runOpenCommand, runSearchCommand } from '../../src/cli/search.ts';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { MEMEX_BIN } from '../helpers/memex-bin.ts';

let gw: TestGateway;
let url: string;
let lisbonId: string;

function capture() {
  let text = '';
  return { stream: { isTTY: false, write: (s: string) => (text += s) }, text: () => text };
}

async function run(fn: typeof runSearchCommand, args: string[]) {
  const out = capture();
  const err = capture();
  const code = await fn(args, { out: out.stream, err: err.stream, env: { MEMEX_URL: url, AUTH_TOKEN: TEST_TOKEN } });
  return { code, out: out.text(), err: err.text() };
}

beforeAll(async () => {
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
  const lisbon = await gw.request(
    'POST',
    '/v1/ingest',
    noteBody({ title: 'Trip planning', people: [{ identifier: 'ann@example.com', role: 'sender', display_name: 'Ann Lee' }] }),
  );
  lisbonId = lisbon.json().doc_id;
  await gw.request(
    'POST',
    '/v1/ingest',
    noteBody({
      source_type: 'email',
      title: 'Ferry times',
      content: { mime_type: 'text/plain', data: 'The ferry to Lisbon harbour leaves every hour from the south pier.' },
      content_timestamp: '2026-04-10T09:00:00Z',
    }),
  );
});

afterAll(async () => {
  await gw?.close();
});

describe('memex search / ask / open', () => {
  it('search prints titles, source, date, snippet and the open command; filters narrow it; --json is the answer', async () => {
    const all = await run(runSearchCommand, ['Lisbon']);
    expect(all.code, all.err).toBe(0);
    expect(all.out).toContain('Trip planning');
    expect(all.out).toContain('Ferry times');
    expect(all.out).toMatch(/note · 2026-03-01 · Ann Lee/);
    expect(all.out).toContain(`memex open ${lisbonId}`);
    expect(all.out).toMatch(/«Lisbon»/);
    expect(all.out).toMatch(/2 of 2 matching documents/);

    const emails = await run(runSearchCommand, ['Lisbon', '--type', 'email']);
    expect(emails.out).toContain('Ferry times');
    expect(emails.out).not.toContain('Trip planning');
    const since = await run(runSearchCommand, ['Lisbon', '--since', '2026-04-01']);
    expect(since.out).not.toContain('Trip planning');

    const json = await run(runSearchCommand, ['Lisbon', '-k', '1', '--json']);
    const parsed = JSON.parse(json.out);
    expect(parsed.hits).toHaveLength(1);
    expect(parsed.total).toBe(2);

    // Query words after the first are query words, dashes included: -word excludes, it is no option.
    const excluded = await run(runSearchCommand, ['Lisbon', '-ferry']);
    expect(excluded.code, excluded.err).toBe(0);
    expect(excluded.out).toContain('Trip planning');
    expect(excluded.out).not.toContain('Ferry times');
    const phraseThenExclusion = await run(runSearchCommand, ['"Lisbon harbour"', '-train', '-k', '5']);
    expect(phraseThenExclusion.code, phraseThenExclusion.err).toBe(0);
    expect(phraseThenExclusion.out).toContain('Ferry times');
    expect((await run(runSearchCommand, ['Lisbon', '--no-such-option'])).code).toBe(2);

    // A phrase nobody wrote: nothing as written, then what matches its words.
    const relaxed = await run(runSearchCommand, ['"harbour Lisbon ferry"']);
    expect(relaxed.code, relaxed.err).toBe(0);
    expect(relaxed.out).toMatch(/^no documents match "\"harbour Lisbon ferry\"" as written .*documents that match its words:\n/);
    expect(relaxed.out).toContain('Ferry times');

    const none = await run(runSearchCommand, ['zanzibar']);
    expect(none.out).toMatch(/no documents match "zanzibar"/);
  });

  it('ask answers with the quoted sentence first, then its sources by title with the quote marked; --json gives the citations', async () => {
    const r = await run(runAskCommand, ['When', 'does', 'the', 'ferry', 'to', 'Lisbon', 'leave?']);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^The ferry to Lisbon harbour leaves every hour from the south pier\. \[1\]\n/);
    expect(r.out).toMatch(/sources:\n {2}\[1\] .*memex open [0-9a-f-]{36}/);
    expect(r.out).toContain('Ferry times (email, 2026-04-10)');
    expect(r.out).toContain('\n      «The ferry to Lisbon harbour leaves every hour from the south pier.»\n');
    const nothing = await run(runAskCommand, ['What', 'is', 'my', 'passport', 'number?']);
    expect(nothing.out).toBe('Nothing in your documents answers this question.\n');
    const json = JSON.parse((await run(runAskCommand, ['ferry', '--json'])).out);
    expect(json.citations.length).toBeGreaterThan(0);
    expect(typeof json.answer).toBe('string');
  });

  it('open prints the document with its people and text', async () => {
    const r = await run(runOpenCommand, [lisbonId]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^Trip planning\n/);
    expect(r.out).toMatch(/people {3}Ann Lee \(sender\)/);
    expect(r.out).toContain('Book the train to Lisbon');
    const headers = await run(runOpenCommand, [lisbonId, '--no-text']);
    expect(headers.out).not.toContain('Book the train');
    expect(JSON.parse((await run(runOpenCommand, [lisbonId, '--json'])).out).document.doc_id).toBe(lisbonId);
  });

  it('ends quietly when the reader of its output goes away (memex search x | head -1)', async () => {
    // The pipe is closed before the answer arrives, so every write fails with EPIPE.
    const child = spawn(process.execPath, [MEMEX_BIN, 'search', 'Lisbon'], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, MEMEX_URL: url, AUTH_TOKEN: TEST_TOKEN },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += c));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(stderr).not.toMatch(/EPIPE|at .*\.(ts|js):\d+/);
    expect(code).toBe(0);
  });

  it('explains an unknown id, a bad id, a missing server and a usage error', async () => {
    const unknown = await run(runOpenCommand, ['00000000-0000-4000-8000-000000000000']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/no document 00000000-0000-4000-8000-000000000000/);
    const bad = await run(runOpenCommand, ['nope']);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/not a document id/);
    expect((await run(runSearchCommand, [])).code).toBe(2);
    expect((await run(runSearchCommand, ['x', '-k', '99'])).code).toBe(2);
    const wrongToken = await runSearchCommand(['x', '--token', 'wrong'], { out: capture().stream, err: capture().stream, env: { MEMEX_URL: url } });
    expect(wrongToken).toBe(1);
    const err = capture();
    const down = await runAskCommand(['x'], { out: capture().stream, err: err.stream, env: { MEMEX_URL: 'http://127.0.0.1:9' } });
    expect(down).toBe(1);
    expect(err.text()).toMatch(/no memex server answers at http:\/\/127\.0\.0\.1:9/);
  });
});
