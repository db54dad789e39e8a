/**
 * DATA_DIR is owner-only (issue 47 item 4), with real file modes: `memex serve` creates it and
 * everything below it 0700 / 0600 / 0400 (stored objects), and tightens a DATA_DIR an earlier version
 * left world-readable (0755 folders, 0444 objects) on start, with one warning line naming what changed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { loadServerConfig } from '../../src/config/server.ts';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { startServer } from '../../src/server.ts';
import { describeTightened, ensureOwnerOnly } from '../../src/util/owner-only.ts';
import { backend, createServerDatabase } from '../helpers/db.ts';

let dir: string;
let dataDir: string;
let databaseUrl: string | undefined;
let dropDb: (() => Promise<void>) | undefined;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-modes-'));
  dataDir = path.join(dir, 'data');
  if (backend === 'postgres') {
    const created = await createServerDatabase();
    databaseUrl = created.url;
    dropDb = created.drop;
  }
}, 60_000);

afterAll(async () => {
  await shutdownExtraction();
  await dropDb?.();
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Every entry below `root` (itself included) with its permission bits, symbolic links left out. */
function modes(root: string): Map<string, number> {
  const out = new Map<string, number>([['.', fs.statSync(root).mode & 0o777]]);
  const walk = (d: string, rel: string) => {
    for (const name of fs.readdirSync(d)) {
      const full = path.join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = fs.lstatSync(full);
      if (st.isSymbolicLink()) continue;
      out.set(r, st.mode & 0o777);
      if (st.isDirectory()) walk(full, r);
    }
  };
  walk(root, '');
  return out;
}

/**
 * Entries other accounts could read. PGlite's own files inside pglite/ are left out: PGlite (its
 * Emscripten file system) creates them 0666 whatever memex asks; the pglite folder itself is 0700,
 * which no other account gets through.
 */
const readableByOthers = (m: Map<string, number>) =>
  [...m].filter(([p, mode]) => (mode & 0o077) !== 0 && !p.startsWith('pglite/')).map(([p, mode]) => `${p} ${mode.toString(8)}`);

/** Starts `memex serve`'s server on dataDir, uploads a file, stops; the warning lines it logged. */
async function serveOnce(upload: string): Promise<string[]> {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  // The server's log goes to stdout (LOG_FORMAT json): kept here to read its warnings.
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: any, ...rest: any[]) => {
    const text = String(chunk);
    if (text.startsWith('{')) lines.push(...text.split('\n').filter(Boolean));
    else return write(chunk, ...rest);
    return true;
  }) as any);
  try {
    const config = { ...loadServerConfig({ DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', LOG_FORMAT: 'json' }), databaseUrl };
    const server = await startServer(config, 'all', { env: { OCR_ENABLED: 'false' } });
    try {
      const token = fs.readFileSync(path.join(dataDir, 'auth-token'), 'utf8').trim();
      const form = new FormData();
      form.set('meta', JSON.stringify({ source: 'localfs', path: `/home/me/${upload}.txt`, filename: `${upload}.txt` }));
      form.set('upload', new Blob([`The ${upload} notes, kept private.`], { type: 'text/plain' }), `${upload}.txt`);
      const res = await fetch(`${server.url}/v1/ingest/file`, { method: 'POST', body: form, headers: { authorization: `Bearer ${token}` } });
      expect(res.status, await res.text()).toBeLessThan(300);
    } finally {
      await server.close();
    }
  } finally {
    spy.mockRestore();
  }
  return lines.map((l) => JSON.parse(l)).filter((l) => l.level === 40).map((l) => l.msg as string);
}

describe('DATA_DIR modes', () => {
  it('a new DATA_DIR and everything memex writes in it are owner-only; objects 0400', async () => {
    const warnings = await serveOnce('first');
    const m = modes(dataDir);
    expect(readableByOthers(m)).toEqual([]);
    expect(m.get('.')).toBe(0o700);
    expect(m.get('auth-token')).toBe(0o600);
    if (backend === 'pglite') expect(m.get('pglite')).toBe(0o700);
    const objects = [...m].filter(([p]) => /^objects\/sha256\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}$/.test(p));
    expect(objects.length).toBe(1);
    expect(objects[0][1]).toBe(0o400);
    expect(m.get('objects')).toBe(0o700);
    expect(warnings.filter((w) => /owner-only/.test(w))).toEqual([]);
  }, 180_000);

  it('an existing world-readable DATA_DIR is tightened on start, with one warning line', async () => {
    // As the version before left it: folders 0755, objects 0444, other files 0644.
    for (const [p] of modes(dataDir)) {
      const full = path.join(dataDir, p);
      const st = fs.statSync(full);
      fs.chmodSync(full, st.isDirectory() ? 0o755 : /objects\/sha256\/.*\/[0-9a-f]{64}$/.test(p) ? 0o444 : 0o644);
    }
    expect(readableByOthers(modes(dataDir)).length).toBeGreaterThan(5);
    const warnings = await serveOnce('second');
    const m = modes(dataDir);
    expect(readableByOthers(m)).toEqual([]);
    expect(m.get('.')).toBe(0o700);
    const objects = [...m].filter(([p]) => /\/[0-9a-f]{64}$/.test(p));
    expect(objects.length).toBe(2);
    for (const [, mode] of objects) expect(mode).toBe(0o400);
    const tightened = warnings.filter((w) => /owner-only/.test(w));
    expect(tightened).toHaveLength(1);
    expect(tightened[0]).toContain(`DATA_DIR ${dataDir} could be read by other accounts`);
    expect(tightened[0]).toMatch(/DATA_DIR itself/);
    expect(tightened[0]).toMatch(/objects/);

    // The next start has nothing to say.
    const again = await serveOnce('third');
    expect(again.filter((w) => /owner-only/.test(w))).toEqual([]);
  }, 240_000);

  it('never follows a symbolic link out of DATA_DIR, and says what it could not change', () => {
    const root = path.join(dir, 'linked');
    const outside = path.join(dir, 'outside.txt');
    fs.mkdirSync(path.join(root, 'sub'), { recursive: true, mode: 0o755 });
    fs.chmodSync(root, 0o755);
    fs.writeFileSync(outside, 'not memex', { mode: 0o644 });
    fs.chmodSync(outside, 0o644);
    fs.symlinkSync(outside, path.join(root, 'sub', 'link'));
    fs.writeFileSync(path.join(root, 'sub', 'kept.txt'), 'x', { mode: 0o644 });
    fs.chmodSync(path.join(root, 'sub', 'kept.txt'), 0o644);
    const t = ensureOwnerOnly(root);
    expect(t.changed.sort()).toEqual(['.', 'sub', 'sub/kept.txt']);
    expect(fs.statSync(outside).mode & 0o777).toBe(0o644);
    expect(fs.statSync(path.join(root, 'sub', 'kept.txt')).mode & 0o777).toBe(0o600);
    expect(describeTightened(t)).toBe(`DATA_DIR ${root} could be read by other accounts: made 3 entries owner-only (DATA_DIR itself, sub)`);
    // Already owner-only: nothing changed, nothing to say.
    expect(describeTightened(ensureOwnerOnly(root))).toBeNull();
  });
});
