/**
 * Exports in watched folders (issue 43, item 1): which export a file of a watched folder belongs to, and its
 * import, for the host agent's folder watches (src/agent/collectors/fswatch/exports.ts). Started by
 * `memex agent` (src/app/agent.ts) with the agent's gateway.
 *
 * A file belongs to the nearest folder above it (inside the watched folder) that is an export — a Slack export
 * (`users.json` + `channels.json`), a Telegram Desktop export (a `result.json` that is one), an unpacked Google
 * Takeout (`archive_browser.html`), or an Obsidian vault (`.obsidian/`, its Markdown files only: its
 * attachments stay files) — else to itself when its content is an export: a WhatsApp chat (.txt or .zip), a
 * Telegram `result.json`, a Slack export zip, a browser's history or bookmarks, a Takeout archive. A plain
 * folder of Markdown files stays files (`localfs`), as before: only a vault that says it is one becomes notes.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ExportClaim, ExportHandoff, ExportRunResult } from '../agent/collectors/fswatch/exports.ts';
import { EXPORT_IMPORTERS, HEAD_BYTES, type ImportVerbs, type Importer } from './registry.ts';

type Kind = keyof typeof EXPORT_IMPORTERS;

interface Claim extends ExportClaim {
  importer: Kind;
}

async function head(file: string, bytes = HEAD_BYTES): Promise<Buffer> {
  const fh = await fs.open(file, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    const { bytesRead } = await fh.read(buf, 0, bytes, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** What export a folder is, by its entries; null for an ordinary folder. */
async function folderExport(dir: string): Promise<Claim | null> {
  const entries = await fs.readdir(dir).catch(() => [] as string[]);
  if (entries.includes('users.json') && entries.includes('channels.json')) return { root: dir, kind: 'Slack export', importer: 'chats' };
  if (entries.includes('archive_browser.html')) return { root: dir, kind: 'Google Takeout', importer: 'takeout' };
  if (entries.includes('result.json')) {
    const { detectChatFormat } = await import('./chats/import.ts');
    const bytes = await head(path.join(dir, 'result.json')).catch(() => Buffer.alloc(0));
    if (detectChatFormat(path.join(dir, 'result.json'), 'file', bytes, []) === 'telegram') return { root: dir, kind: 'Telegram export', importer: 'chats' };
  }
  if (entries.includes('.obsidian') && (await fs.stat(path.join(dir, '.obsidian')).catch(() => null))?.isDirectory()) {
    return { root: dir, kind: 'Obsidian vault', importer: 'notesVault' };
  }
  return null;
}

/** What export a file is by its content; null for an ordinary file. */
async function fileExport(file: string): Promise<Claim | null> {
  const bytes = await head(file);
  if (bytes.length === 0) return null;
  const { looksLikeTakeout } = await import('./takeout/command.ts');
  if (looksLikeTakeout({ kind: 'file', bytes, entries: [] })) return { root: file, kind: 'Google Takeout archive', importer: 'takeout' };
  const { detectChatFormat } = await import('./chats/import.ts');
  const chat = detectChatFormat(file, 'file', bytes, []);
  if (chat) return { root: file, kind: chat === 'whatsapp' ? 'WhatsApp chat' : chat === 'telegram' ? 'Telegram export' : 'Slack export', importer: 'chats' };
  const { browserFileKind } = await import('./browser/history.ts');
  if ((await browserFileKind(file, bytes)) !== null) return { root: file, kind: 'browser history', importer: 'browser' };
  return null;
}

export interface WatchedExportsOptions {
  /** The server the imports send to (the agent's gateway) and its token. */
  url: string;
  token?: string | null;
  /** The CLI's verbs an import may run for part of an export (a Takeout's mail). */
  verbs?: ImportVerbs;
}

/** The handoff the folder watches use: which export a file belongs to, and `memex import ROOT` for it. */
export function watchedExports(opts: WatchedExportsOptions): ExportHandoff {
  // A folder's answer is kept while its entries do not change (its mtime): a rescan asks once per folder.
  const folders = new Map<string, { mtimeMs: number; claim: Claim | null }>();
  const folderOf = async (dir: string): Promise<Claim | null> => {
    const st = await fs.stat(dir).catch(() => null);
    if (!st) return null;
    const known = folders.get(dir);
    if (known && known.mtimeMs === st.mtimeMs) return known.claim;
    const claim = await folderExport(dir);
    if (folders.size > 10_000) folders.clear();
    folders.set(dir, { mtimeMs: st.mtimeMs, claim });
    return claim;
  };
  return {
    async claim(file, watchRoot) {
      const root = path.resolve(watchRoot);
      for (let dir = path.dirname(path.resolve(file)); ; dir = path.dirname(dir)) {
        const rel = path.relative(root, dir);
        if (rel.startsWith('..') || path.isAbsolute(rel)) break;
        const claim = await folderOf(dir);
        if (claim) {
          if (claim.importer !== 'notesVault') return claim;
          const { NOTE_EXTENSIONS } = await import('./notes/vault.ts');
          return NOTE_EXTENSIONS.test(file) ? claim : null; // a vault's attachments stay files
        }
        if (dir === root) break;
      }
      return fileExport(file);
    },
    async run(claim): Promise<ExportRunResult> {
      const importer: Importer = EXPORT_IMPORTERS[(claim as Claim).importer];
      let output = '';
      const out = { write: (s: string | Uint8Array) => ((output += String(s)), true) } as unknown as NodeJS.WritableStream;
      const argv = [claim.root, '--url', opts.url, ...(opts.token ? ['--token', opts.token] : [])];
      const code = await importer.run(argv, out, opts.verbs);
      return { code, output };
    },
  };
}
