/**
 * File-system watches in the host agent, sending `localfs` documents to a LIVE memex gateway (real
 * HTTP, real database, real chokidar on real folders). No timing assertions: every expectation polls
 * for its condition with a deadline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { auth, testConfig } from '../agent/helpers.ts';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let baseUrl: string;
const agents: AgentServer[] = [];

beforeAll(async () => {
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await gw?.close();
});
afterEach(async () => {
  while (agents.length) await agents.pop()!.close();
});

const tmp = (p = 'memex-fsw-') => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), p)));

async function startAgent(opts: { roots: string[]; statePath: string; enabled?: boolean; watches?: unknown[]; queueSize?: number }): Promise<AgentServer> {
  const config = testConfig({
    gateway: { base_url: baseUrl, auth_token: TEST_TOKEN, timeout: 30 },
    modules: {
      ocr: { enabled: false },
      fswatch: { enabled: opts.enabled ?? true, allowed_roots: opts.roots, state_path: opts.statePath, debounce_ms: 100, watches: opts.watches ?? [], event_queue_size: opts.queueSize ?? 1000 },
    },
  });
  const agent = await createAgentServer(config, { logger: false });
  agents.push(agent);
  return agent;
}

const api = (agent: AgentServer, method: 'GET' | 'POST' | 'DELETE', url: string, body?: unknown) =>
  agent.inject({ method, url, headers: auth, ...(body === undefined ? {} : { payload: body as object }) });

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

interface Row {
  doc_id: string;
  version_number: number;
  is_active_version: boolean;
  text: string;
  deleted_at: unknown;
  metadata: any;
}

/** All versions of the document for a file, newest first. */
async function versions(file: string): Promise<Row[]> {
  const r = await gw.db.query<Row>(
    `SELECT doc_id, version_number, is_active_version, text, deleted_at, metadata FROM documents
      WHERE source_type = 'localfs' AND external_id = $1 ORDER BY version_number DESC`,
    [`localfs:${file}`],
  );
  return r.rows;
}

const active = async (file: string) => (await versions(file)).find((v) => v.is_active_version);

async function events(agent: AgentServer): Promise<{ type: string; path?: string; detail?: string }[]> {
  return (await api(agent, 'GET', '/v1/fs-watches/events?limit=500')).json().data.events;
}

describe(`fs-watches against a live gateway (${backend})`, () => {
  it('create, modify (new version), touch (nothing), rename (delete + add) and delete (document inactive)', async () => {
    const root = tmp();
    const notes = path.join(root, 'notes');
    fs.mkdirSync(path.join(notes, 'sub'), { recursive: true });
    const a = path.join(notes, 'a.md');
    fs.writeFileSync(a, '# Groceries\n\nOat milk, lemons, basil.\n');
    const agent = await startAgent({ roots: [root], statePath: path.join(tmp(), 'fsw.json') });

    const created = await api(agent, 'POST', '/v1/fs-watches', { path: notes, glob: '*.{md,txt}' });
    expect(created.statusCode).toBe(200);
    const { id, watch } = created.json().data;
    expect(watch).toMatchObject({ path: notes, glob: '*.{md,txt}', target: 'gateway', handoff: 'presigned' });

    // A file that existed before the watch (initial scan).
    const v1 = await waitFor('a.md v1', () => active(a));
    expect(v1.text).toContain('Oat milk, lemons, basil.');
    expect(v1.metadata).toMatchObject({ path: a, filename: 'a.md', source: 'localfs' });

    // New files while watching; one in a subfolder; one that the glob excludes; a temp file.
    const b = path.join(notes, 'sub', 'b.txt');
    fs.writeFileSync(b, 'Dentist on Tuesday 9:40');
    fs.writeFileSync(path.join(notes, 'photo.bin'), 'binary-ish');
    fs.writeFileSync(path.join(notes, 'draft.md.tmp'), 'not yet');
    await waitFor('b.txt', () => active(b));

    // Modify: a new version of the same document, the old one superseded.
    fs.writeFileSync(a, '# Groceries\n\nOat milk, lemons, basil, coffee.\n');
    await waitFor('a.md v2', async () => (await active(a))?.version_number === 2);
    const va = await versions(a);
    expect(va.map((v) => [v.version_number, v.is_active_version])).toEqual([[2, true], [1, false]]);
    expect(va[0].text).toContain('coffee');

    // Touch without a content change: read, hashed, recognised as unchanged, not sent.
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(a, later, later);
    await waitFor('unchanged event', async () => (await events(agent)).some((e) => e.type === 'unchanged' && e.path === a));
    expect(await versions(a)).toHaveLength(2);

    // Rename: the old path's document is soft-deleted, the new path is a new document.
    const b2 = path.join(notes, 'sub', 'b-renamed.txt');
    fs.renameSync(b, b2);
    await waitFor('renamed file', () => active(b2));
    await waitFor('old name inactive', async () => (await versions(b)).every((v) => !v.is_active_version));
    expect((await active(b2))!.text).toBe('Dentist on Tuesday 9:40');

    // Delete.
    fs.rmSync(a);
    await waitFor('a.md deleted', async () => {
      const vs = await versions(a);
      return vs.length === 2 && vs.every((v) => !v.is_active_version) && vs[0].deleted_at !== null;
    });
    const listed = await gw.request('GET', '/v1/documents?source_type=localfs&limit=200');
    const ids = listed.json().documents.map((d: { external_id: string }) => d.external_id);
    expect(ids).toContain(`localfs:${b2}`);
    expect(ids).not.toContain(`localfs:${a}`);
    expect(ids).not.toContain(`localfs:${b}`);
    expect(await versions(path.join(notes, 'photo.bin'))).toHaveLength(0);
    expect(await versions(path.join(notes, 'draft.md.tmp'))).toHaveLength(0);

    const list = (await api(agent, 'GET', '/v1/fs-watches')).json();
    expect(list.status).toBe('success');
    expect(list.data.watches.map((w: { id: string }) => w.id)).toEqual([id]);
    expect(list.data.stats).toMatchObject({ watches: 1, deleted: 2, rejected: 0 });

    // Deleting the watch stops it: later files are not sent (the documents already sent stay).
    const del = await api(agent, 'DELETE', `/v1/fs-watches/${id}`);
    expect(del.statusCode).toBe(200);
    expect((await api(agent, 'DELETE', `/v1/fs-watches/${id}`)).statusCode).toBe(404);
    expect((await api(agent, 'GET', '/v1/fs-watches')).json().data.watches).toEqual([]);
    expect(await active(b2)).toBeTruthy();
  }, 60_000);

  it('a burst of 1,000 files: every file arrives, none twice', async () => {
    const root = tmp();
    const inbox = path.join(root, 'inbox');
    fs.mkdirSync(inbox);
    const agent = await startAgent({ roots: [root], statePath: path.join(tmp(), 'fsw.json') });
    expect((await api(agent, 'POST', '/v1/fs-watches', { path: inbox, glob: '*.txt' })).statusCode).toBe(200);
    // The (empty) initial scan has run once the watch reports it.
    await waitFor('initial rescan', async () => (await events(agent)).some((e) => e.type === 'rescan'));
    const N = 1000;
    for (let i = 0; i < N; i++) fs.writeFileSync(path.join(inbox, `note-${String(i).padStart(4, '0')}.txt`), `Burst note number ${i}: remember item ${i * 7}.`);
    const count = async () =>
      (await gw.db.query<{ n: number }>("SELECT count(*)::int AS n FROM documents WHERE source_type = 'localfs' AND external_id LIKE $1 AND is_active_version", [`localfs:${inbox}/%`])).rows[0].n;
    await waitFor('1000 documents', async () => (await count()) === N, 240_000);
    const r = await gw.db.query<{ external_id: string; n: number; maxv: number }>(
      "SELECT external_id, count(*)::int AS n, max(version_number)::int AS maxv FROM documents WHERE external_id LIKE $1 GROUP BY external_id",
      [`localfs:${inbox}/%`],
    );
    expect(r.rows).toHaveLength(N);
    expect(r.rows.every((x) => x.n === 1 && x.maxv === 1)).toBe(true);
    const sample = await active(path.join(inbox, 'note-0421.txt'));
    expect(sample!.text).toBe('Burst note number 421: remember item 2947.');
    // Nothing was submitted twice (not even as a duplicate the gateway would have absorbed).
    await waitFor('queue drained', async () => (await api(agent, 'GET', '/v1/fs-watches')).json().data.stats.pending === 0);
    expect((await api(agent, 'GET', '/v1/fs-watches')).json().data.stats).toMatchObject({ submitted: N, errors: 0 });
  }, 300_000);

  it('a queue overflow falls back to a rescan: with room for 20 pending paths, 300 new files all arrive once', async () => {
    const root = tmp();
    const agent = await startAgent({ roots: [root], statePath: path.join(tmp(), 'fsw.json'), queueSize: 20 });
    expect((await api(agent, 'POST', '/v1/fs-watches', { path: root })).statusCode).toBe(200);
    await waitFor('initial rescan', async () => (await events(agent)).some((e) => e.type === 'rescan'));
    for (let i = 0; i < 300; i++) fs.writeFileSync(path.join(root, `f${i}.md`), `Overflow file ${i}`);
    await waitFor('300 documents', async () => {
      const r = await gw.db.query<{ n: number }>("SELECT count(*)::int AS n FROM documents WHERE external_id LIKE $1 AND is_active_version", [`localfs:${root}/%`]);
      return r.rows[0].n === 300;
    }, 120_000);
    await waitFor('queue drained', async () => (await api(agent, 'GET', '/v1/fs-watches')).json().data.stats.pending === 0);
    const ev = await events(agent);
    expect(ev.filter((e) => e.type === 'rescan').length).toBeGreaterThan(1); // the overflow triggered rescans
    expect((await api(agent, 'GET', '/v1/fs-watches')).json().data.stats).toMatchObject({ submitted: 300, errors: 0 });
  }, 180_000);

  it('watches persist across a restart, and the start-up rescan catches changes made while the agent was down', async () => {
    const root = tmp();
    const docs = path.join(root, 'docs');
    fs.mkdirSync(docs);
    const keep = path.join(docs, 'keep.md');
    const edit = path.join(docs, 'edit.md');
    const gone = path.join(docs, 'gone.md');
    fs.writeFileSync(keep, 'Unchanged all along');
    fs.writeFileSync(edit, 'Meeting notes, first draft');
    fs.writeFileSync(gone, 'To be deleted while the agent is down');
    const statePath = path.join(tmp(), 'fsw.json');
    const agent1 = await startAgent({ roots: [root], statePath });
    const id = (await api(agent1, 'POST', '/v1/fs-watches', { path: docs, glob: '*.md' })).json().data.id;
    for (const f of [keep, edit, gone]) await waitFor(f, () => active(f));
    await waitFor('idle', async () => (await api(agent1, 'GET', '/v1/fs-watches')).json().data.stats.pending === 0);
    await agents.pop()!.close();

    // Agent down: edit, add, delete.
    fs.writeFileSync(edit, 'Meeting notes, final version with decisions');
    const added = path.join(docs, 'added.md');
    fs.writeFileSync(added, 'Written while the agent was stopped');
    fs.rmSync(gone);

    const agent2 = await startAgent({ roots: [root], statePath });
    const list = (await api(agent2, 'GET', '/v1/fs-watches')).json().data.watches;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ id, path: docs, glob: '*.md', origin: 'api' });
    await waitFor('edit v2', async () => (await active(edit))?.version_number === 2);
    expect((await active(edit))!.text).toBe('Meeting notes, final version with decisions');
    await waitFor('added', () => active(added));
    await waitFor('gone inactive', async () => (await versions(gone)).every((v) => !v.is_active_version));
    await waitFor('rescan done', async () => (await events(agent2)).some((e) => e.type === 'rescan'));
    // The unchanged file was not sent again.
    expect((await events(agent2)).filter((e) => e.type === 'submitted').map((e) => e.path).sort()).toEqual([added, edit].sort());
    expect(await versions(keep)).toHaveLength(1);
  }, 60_000);

  it('confines watch paths to the allowed roots', async () => {
    const root = tmp();
    const outside = tmp('memex-fsw-out-');
    fs.mkdirSync(path.join(root, 'ok'));
    fs.writeFileSync(path.join(root, 'file.txt'), 'x');
    fs.symlinkSync(outside, path.join(root, 'escape'));
    const agent = await startAgent({ roots: [root], statePath: path.join(tmp(), 'fsw.json') });
    const post = (body: unknown) => api(agent, 'POST', '/v1/fs-watches', body);

    const out = await post({ path: outside });
    expect(out.statusCode).toBe(403);
    expect(out.json()).toMatchObject({ status: 'error' });
    expect((await post({ path: path.join(outside, 'does-not-exist') })).statusCode).toBe(403); // existence not revealed
    expect((await post({ path: path.join(root, 'escape') })).statusCode).toBe(403); // symlink out of the root
    expect((await post({ path: path.join(root, 'ok', '..', '..', path.basename(outside)) })).statusCode).toBe(403);
    expect((await post({ path: 'relative/dir' })).statusCode).toBe(400);
    expect((await post({ path: path.join(root, 'missing') })).statusCode).toBe(400);
    expect((await post({ path: path.join(root, 'file.txt') })).statusCode).toBe(400);
    expect((await post({ path: path.join(root, 'ok'), target: 's3' })).statusCode).toBe(400);
    expect((await post({ path: path.join(root, 'ok'), glob: '/etc/*' })).statusCode).toBe(400);
    expect((await post({ path: path.join(root, 'ok'), extra: 1 })).statusCode).toBe(400);
    expect((await post(['nope'])).statusCode).toBe(400);
    const ok = await post({ path: path.join(root, 'ok') });
    expect(ok.statusCode).toBe(200);
    expect((await post({ path: path.join(root, 'ok') })).statusCode).toBe(409);
    expect((await api(agent, 'GET', '/v1/fs-watches')).json().data.watches).toHaveLength(1);

    const noRoots = await startAgent({ roots: [], statePath: path.join(tmp(), 'fsw.json') });
    expect((await api(noRoots, 'POST', '/v1/fs-watches', { path: root })).statusCode).toBe(403);

    const off = await startAgent({ roots: [root], statePath: path.join(tmp(), 'fsw.json'), enabled: false });
    const r501 = await api(off, 'GET', '/v1/fs-watches');
    expect(r501.statusCode).toBe(501);
    expect(r501.json()).toEqual({ status: 'error', error: 'File watch module is disabled' });
  });

  it('watches from the configuration file are active, listed and not deletable through the API', async () => {
    const root = tmp();
    fs.writeFileSync(path.join(root, 'journal.md'), 'Configured watch works');
    const agent = await startAgent({ roots: [], statePath: path.join(tmp(), 'fsw.json'), watches: [{ path: root, glob: '*.md' }] });
    await waitFor('config watch file', () => active(path.join(root, 'journal.md')));
    const w = (await api(agent, 'GET', '/v1/fs-watches')).json().data.watches;
    expect(w).toHaveLength(1);
    expect(w[0].origin).toBe('config');
    expect((await api(agent, 'DELETE', `/v1/fs-watches/${w[0].id}`)).statusCode).toBe(409);
  });
});

describe('fs-watches: images through the shared OCR engine', () => {
  it('an image dropped in a watched folder becomes a document with its OCR text', async () => {
    const { renderTextImage } = await import('../ocr/render-text.ts');
    const root = tmp();
    const config = testConfig({
      gateway: { base_url: baseUrl, auth_token: TEST_TOKEN, timeout: 30 },
      modules: { fswatch: { enabled: true, allowed_roots: [root], state_path: path.join(tmp(), 'fsw.json'), debounce_ms: 100 } },
    });
    const agent = await createAgentServer(config, { logger: false });
    agents.push(agent);
    expect((await api(agent, 'POST', '/v1/fs-watches', { path: root, glob: '*.png' })).statusCode).toBe(200);
    const img = path.join(root, 'whiteboard.png');
    fs.writeFileSync(img, await renderTextImage('Quarterly roadmap review'));
    const doc = await waitFor('image document', () => active(img), 60_000);
    expect(doc.text).toMatch(/Quarterly roadmap review/);
    expect(doc.metadata).toMatchObject({ mime_type: 'image/png', extraction: { method: 'ocr' }, ocr: { language: 'en' } });
  }, 90_000);
});
