/**
 * Exports dropped into a watched folder go to their importers (issue 43, item 1: "the same formats in watched
 * folders"): a WhatsApp chat becomes chat messages, a Telegram export folder its chat (its photo not a loose
 * file), an Obsidian vault its notes (an edit a new version, an attachment still a file), while a plain Markdown
 * folder stays files. Real chokidar on real folders, the host agent sending to a LIVE gateway over HTTP.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { watchedExports } from '../../src/imports/watch.ts';
import { auth, testConfig } from '../agent/helpers.ts';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';
import { writeVault } from '../imports/fixtures.ts';

const FIX = path.join(import.meta.dirname, '..', 'imports', 'chats', 'fixtures');
const tmp = (p = 'memex-fsx-') => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), p)));
let gw: TestGateway;
let baseUrl: string;
let agent: AgentServer;
let root: string;
const oldState = process.env.XDG_STATE_HOME;

beforeAll(async () => {
  process.env.XDG_STATE_HOME = tmp('memex-fsx-state-'); // the chat importer's state file
  gw = await startTestGateway({ files: {} });
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
  root = tmp();
  const config = testConfig({
    gateway: { base_url: baseUrl, auth_token: TEST_TOKEN, timeout: 30 },
    modules: { ocr: { enabled: false }, fswatch: { enabled: true, allowed_roots: [root], state_path: path.join(tmp(), 'fsw.json'), debounce_ms: 100 } },
  });
  agent = await createAgentServer(config, { logger: false, exports: watchedExports({ url: baseUrl, token: TEST_TOKEN }) });
  const created = await agent.inject({ method: 'POST', url: '/v1/fs-watches', headers: auth, payload: { path: root } });
  expect(created.statusCode).toBe(200);
  // The watcher is ready once a file written after the first scan arrives.
  const ready = path.join(root, 'ready.txt');
  await waitFor('the first scan', async () => (await agent.inject({ method: 'GET', url: '/v1/fs-watches/events', headers: auth })).json().data.events.some((e: any) => e.type === 'rescan'));
  fs.writeFileSync(ready, 'watching');
  await waitFor('a plain file as a file', async () => (await localfs(ready)).length > 0);
}, 120_000);
afterAll(async () => {
  await agent?.close();
  await gw?.close();
  if (oldState === undefined) delete process.env.XDG_STATE_HOME;
  else process.env.XDG_STATE_HOME = oldState;
});

const rows = async (sql: string, params: unknown[] = []) => (await gw.db.query<any>(sql, params)).rows;
const localfs = (file: string) => rows(`SELECT doc_id FROM documents WHERE source_type = 'localfs' AND external_id = $1`, [`localfs:${file}`]);

describe(`exports in a watched folder go to their importers (${backend})`, () => {
  it('a WhatsApp chat dropped in the folder becomes chat messages, not a text file', async () => {
    const file = path.join(root, 'WhatsApp Chat with Priya Shah.txt');
    fs.copyFileSync(path.join(FIX, 'WhatsApp Chat with Priya Shah.txt'), file);
    const msgs = await waitFor('WhatsApp messages', async () => {
      const r = await rows(`SELECT text, metadata FROM documents WHERE source_type = 'chatapp' AND source_provider = 'whatsapp' AND is_active_version`);
      return r.length >= 3 ? r : null;
    });
    expect(msgs.map((m: any) => m.text).join('\n')).toContain('Are we still on for Lisbon?');
    expect(await localfs(file)).toEqual([]);
    const imported = await waitFor('the import event', async () =>
      (await agent.inject({ method: 'GET', url: '/v1/fs-watches/events?limit=500', headers: auth })).json().data.events.find((e: any) => e.type === 'imported' && e.path === file),
    );
    expect(imported.detail).toMatch(/WhatsApp chat .*exit 0: WhatsApp chat with Priya Shah: 8 messages/);
  });

  it('a Telegram export folder becomes its chat, and its photo is not a loose file', async () => {
    const dir = path.join(root, 'Telegram Desktop', 'ChatExport_2023-03-20');
    fs.cpSync(path.join(FIX, 'telegram', 'ChatExport_2023-03-20'), dir, { recursive: true });
    await waitFor('Telegram messages', async () => (await rows(`SELECT 1 FROM documents WHERE source_type = 'chatapp' AND source_provider = 'telegram'`)).length > 0);
    await (agent.agent.modules.get('fswatch') as any).manager.whenIdle();
    expect(await localfs(path.join(dir, 'result.json'))).toEqual([]);
    expect(await localfs(path.join(dir, 'photos', 'photo_1@12-03-2023_14-07-00.jpg'))).toEqual([]);
  });

  it('an Obsidian vault becomes notes (an edit is a new version); its attachment and a plain Markdown folder stay files', async () => {
    const vault = path.join(root, 'Second Brain');
    writeVault(vault);
    const plain = path.join(root, 'plain', 'todo.md');
    fs.mkdirSync(path.dirname(plain));
    fs.writeFileSync(plain, '# Todo\n\nWater the basil.\n');
    const note = (rel: string) =>
      rows(`SELECT text, version_number, metadata FROM documents WHERE source_type = 'note' AND external_id = $1 AND is_active_version`, [`Second Brain/${rel}`]);
    const lisbon = await waitFor('the Lisbon note', async () => (await note('Trips/Lisbon conference.md'))[0]);
    expect(lisbon.metadata.tags).toEqual(expect.arrayContaining(['travel', 'work/conferences']));
    expect(lisbon.metadata.links).toContain('Packing list.md');
    await waitFor('the plain Markdown file as a file', async () => (await localfs(plain)).length > 0);
    await waitFor('the vault attachment as a file', async () => (await localfs(path.join(vault, 'Drawing.canvas'))).length > 0);
    expect(await localfs(path.join(vault, 'Packing list.md'))).toEqual([]);

    fs.appendFileSync(path.join(vault, 'Packing list.md'), '- sunscreen\n');
    const edited = await waitFor('the edited note', async () => {
      const r = (await note('Packing list.md'))[0];
      return r?.version_number === 2 ? r : null;
    });
    expect(edited.text).toContain('sunscreen');
  });
});
