/**
 * Ctrl-C on `memex serve` (issue 46: with 2,000 documents it took 60-70 s and printed nothing after "search index
 * snapshot written"). Started as a user starts it (bin/memex.js in a child process), with documents stored and
 * their vectors being made, a SIGINT names each step it waits for, ends with "stopped" and exit status 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { MEMEX_BIN } from '../helpers/memex-bin.ts';
import { tmpDir } from '../email-collectors/helpers.ts';
import { waitFor } from '../helpers/wait.ts';

const TOKEN = 'serve-stop-token-0123456789abcdef';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const drops: (() => Promise<void>)[] = [];
const children: ChildProcess[] = [];
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const d of drops) await d();
});

/** A `memex serve` with `n` notes stored and a snapshot file; resolves once it has answered them. */
async function servingWithDocuments(n: number) {
  const dir = tmpDir('memex-serve-stop-');
  let databaseUrl: string | undefined;
  if (backend === 'postgres') {
    const created = await createServerDatabase();
    databaseUrl = created.url;
    drops.push(created.drop);
  }
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    DATA_DIR: path.join(dir, 'data'),
    PORT: String(port),
    HOST: '127.0.0.1',
    AUTH_TOKEN: TOKEN,
    EMBEDDING_PROVIDER: 'hash',
    LOG_LEVEL: 'warn',
    XDG_STATE_HOME: path.join(dir, 'xdg-state'),
    XDG_CONFIG_HOME: path.join(dir, 'xdg-config'),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  };
  const child = spawn(process.execPath, [MEMEX_BIN, 'serve', '--no-sources'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  children.push(child);
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const fail = (err: unknown) => {
    throw new Error(`${(err as Error).message}\n--- stderr ---\n${stderr}`);
  };
  await waitFor('the server ready', async () => /ready in /.test(stderr), 120_000, 250).catch(fail);
  const documents = Array.from({ length: n }, (_, i) => ({
    source_type: 'note',
    source_id: `stop-${i}`,
    title: `Note ${i}`,
    content: { mime_type: 'text/plain', data: `Harbour note number ${i}: the ferry leaves at ${i % 24}:00 from the south pier.` },
  }));
  const res = await fetch(`${url}/v1/ingest:batch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ documents }),
  });
  expect(res.status).toBeLessThan(300);
  await waitFor(
    'the notes searchable',
    async () => {
      const r = await fetch(`${url}/v1/search?q=harbour&k=1`, { headers: { authorization: `Bearer ${TOKEN}` } });
      return r.ok && ((await r.json()) as { total: number }).total === n;
    },
    60_000,
    250,
  ).catch(fail);
  return { child, exited, stderr: () => stderr };
}

describe(`Ctrl-C on memex serve (${backend})`, () => {
  it('says what each step of the stop waits for, ends with "stopped" and exits 0', async () => {
    const s = await servingWithDocuments(200);
    s.child.kill('SIGINT');
    const code = await s.exited;
    const out = s.stderr();
    expect(code, out).toBe(0);
    const said = out.slice(out.indexOf('SIGINT: stopping'));
    expect(said, out).toMatch(/^SIGINT: stopping \(Ctrl-C again to exit at once\)/);
    // Each step is named before it is waited for, in order, the embedding model and the database included.
    const steps = ['open requests', 'the search index', 'text extraction and OCR', 'the embedding model', 'the database'].map((w) =>
      said.indexOf(`stopping: ${w}\n`),
    );
    expect(steps.every((i) => i > 0), said).toBe(true);
    expect([...steps].sort((a, b) => a - b)).toEqual(steps);
    expect(said).toMatch(/ stopped\n/);
    expect(said).not.toMatch(/still stopping/);
  }, 240_000);
});
