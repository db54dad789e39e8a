/**
 * A notes vault (a folder of Markdown files; Obsidian's has a `.obsidian/` folder) as `note` documents: one per
 * file, identified by the vault's name and the file's path inside it (moving the vault keeps the identity;
 * renaming a note inside it makes a new one). Title from the front matter, else the first heading, else the
 * file name; created/modified from the front matter, else the file's times; tags (front matter and `#tags`) in
 * `metadata.tags`; links to other notes resolved the way Obsidian does (a path, else the note of that name
 * nearest the vault's root) in `metadata.links` as vault paths, the ones to no note in `metadata.unresolved_links`.
 *
 * Hidden files and folders (`.obsidian/`, `.trash/`, `.git/`) and files that are not Markdown are left out.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import type { IngestRequestT } from '../../schemas/ingest.ts';
import type { OutgoingDocument } from '../submit.ts';
import { plainValue } from '../submit.ts';
import { frontMatterDate, NoteParseError, parseNote } from './markdown.ts';

export const NOTE_EXTENSIONS = /\.(md|markdown|mdown|mkd)$/i;
/** A note larger than this is refused (with its reason) rather than sent. */
export const MAX_NOTE_BYTES = 8 * 1024 * 1024;

export interface VaultFile {
  /** Vault-relative, with `/`. */
  rel: string;
  abs: string;
}

export interface VaultScan {
  root: string;
  name: string;
  obsidian: boolean;
  notes: VaultFile[];
  /** Files that are not notes (attachments, PDFs, canvases), counted only. */
  otherFiles: number;
}

/** The notes of a vault folder (hidden entries skipped), in path order. */
export async function scanVault(root: string, name?: string): Promise<VaultScan> {
  const abs = path.resolve(root);
  const notes: VaultFile[] = [];
  let otherFiles = 0;
  const walk = async (dir: string, rel: string) => {
    const entries = await fs.readdir(dir, { withFileTypes: true });
    for (const e of entries) {
      if (e.name.startsWith('.')) continue;
      const r = rel ? `${rel}/${e.name}` : e.name;
      const p = path.join(dir, e.name);
      if (e.isDirectory()) await walk(p, r);
      else if (e.isFile()) {
        if (NOTE_EXTENSIONS.test(e.name)) notes.push({ rel: r, abs: p });
        else otherFiles++;
      }
    }
  };
  await walk(abs, '');
  notes.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  let obsidian = false;
  try {
    obsidian = (await fs.stat(path.join(abs, '.obsidian'))).isDirectory();
  } catch {
    /* a plain Markdown folder */
  }
  return { root: abs, name: name ?? path.basename(abs), obsidian, notes, otherFiles };
}

/** Resolves `[[target]]` to a vault path: an exact path (with or without `.md`), else the shortest path whose file name matches. */
export function linkResolver(notes: VaultFile[]): (target: string, from: string) => string | null {
  const byPath = new Map<string, string>();
  const byName = new Map<string, string[]>();
  for (const n of notes) {
    const lower = n.rel.toLowerCase();
    byPath.set(lower, n.rel);
    byPath.set(lower.replace(NOTE_EXTENSIONS, ''), n.rel);
    const base = path.posix.basename(lower).replace(NOTE_EXTENSIONS, '');
    (byName.get(base) ?? byName.set(base, []).get(base)!).push(n.rel);
  }
  for (const list of byName.values()) list.sort((a, b) => a.split('/').length - b.split('/').length || (a < b ? -1 : 1));
  return (target, from) => {
    const t = target.replace(/\\/g, '/').replace(/^\.\//, '').trim().toLowerCase();
    if (!t) return null;
    // Relative to the linking note first (Markdown links), then from the vault's root.
    const rel = path.posix.normalize(path.posix.join(path.posix.dirname(from.toLowerCase()), t));
    const hit = byPath.get(rel) ?? byPath.get(t.replace(/^\//, ''));
    if (hit) return hit;
    return byName.get(path.posix.basename(t).replace(NOTE_EXTENSIONS, ''))?.[0] ?? null;
  };
}

/** Front matter keys the document carries as fields of its own, not again in `metadata.properties`. */
const OWN_KEYS = new Set(['title', 'tags', 'tag', 'aliases', 'created', 'date', 'created_at', 'creation_date', 'modified', 'updated', 'updated_at', 'last_modified', 'date_modified']);

export interface NoteBuild {
  doc?: OutgoingDocument;
  /** Why the file is not a document: 'failed' with the error, or 'empty'. */
  problem?: { kind: 'failed' | 'empty' | 'too_large'; reason: string };
}

export interface NoteSource {
  /** `source_provider`: obsidian, markdown, google_keep. */
  provider: string;
  /** The vault's name (part of every note's identity). */
  vault: string;
}

/** The `note` document of one vault file. */
export async function buildNote(file: VaultFile, src: NoteSource, resolve: (t: string, from: string) => string | null): Promise<NoteBuild> {
  let st;
  let bytes: Buffer;
  try {
    st = await fs.stat(file.abs);
    if (st.size > MAX_NOTE_BYTES) return { problem: { kind: 'too_large', reason: `${st.size} bytes, more than the ${MAX_NOTE_BYTES} a note may have` } };
    bytes = await fs.readFile(file.abs);
  } catch (err) {
    return { problem: { kind: 'failed', reason: `unreadable: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}` } };
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return { problem: { kind: 'failed', reason: 'unreadable: not UTF-8 text' } };
  }
  if (text.includes('\u0000')) return { problem: { kind: 'failed', reason: 'unreadable: binary content (NUL bytes), not a Markdown note' } };
  let note;
  try {
    note = parseNote(text);
  } catch (err) {
    if (err instanceof NoteParseError) return { problem: { kind: 'failed', reason: err.message } };
    throw err;
  }
  const fileTitle = path.posix.basename(file.rel).replace(NOTE_EXTENSIONS, '');
  const fmTitle = typeof note.frontMatter.title === 'string' || typeof note.frontMatter.title === 'number' ? String(note.frontMatter.title).trim() : '';
  const title = fmTitle || note.firstHeading || fileTitle;
  const body = note.body.trim();
  if (!body && !fmTitle) return { problem: { kind: 'empty', reason: 'the note has no text' } };
  const created = frontMatterDate(note.frontMatter, ['created', 'date', 'created_at', 'creation_date']) ?? (st.birthtimeMs > 0 ? st.birthtime : st.mtime);
  const modified = frontMatterDate(note.frontMatter, ['modified', 'updated', 'updated_at', 'last_modified', 'date_modified']) ?? st.mtime;
  const links: string[] = [];
  const unresolved: string[] = [];
  for (const l of note.links) {
    const r = resolve(l, file.rel);
    if (r && r !== file.rel) {
      if (!links.includes(r)) links.push(r);
    } else if (!r && !unresolved.includes(l)) unresolved.push(l);
  }
  const properties: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(note.frontMatter)) if (!OWN_KEYS.has(k)) properties[k] = v;
  const metadata: Record<string, unknown> = {
    vault: src.vault,
    path: file.rel,
    folder: path.posix.dirname(file.rel) === '.' ? '' : path.posix.dirname(file.rel),
    tags: note.tags,
    links: links.slice(0, 500),
    unresolved_links: unresolved.slice(0, 500),
  };
  if (note.aliases.length) metadata.aliases = note.aliases;
  if (note.embeds.length) metadata.embeds = note.embeds.slice(0, 500);
  if (Object.keys(properties).length) {
    const p = plainValue(properties);
    if (JSON.stringify(p).length <= 16_000) metadata.properties = p;
  }
  const request: IngestRequestT = {
    source_type: 'note',
    source_id: noteSourceId(src.vault, file.rel),
    source_provider: src.provider,
    title: title.slice(0, 500),
    content: { mime_type: 'text/markdown', data: body || title },
    metadata,
    content_timestamp: modified.toISOString(),
    content_timestamp_type: 'modified',
    content_created_at: created.toISOString(),
    content_modified_at: modified.toISOString(),
  };
  return { doc: { ref: file.rel, request } };
}

/** `<vault>/<path>`, within the 1,000 characters a source id may have. */
export function noteSourceId(vault: string, rel: string): string {
  const id = `${vault}/${rel}`;
  return id.length <= 1000 ? id : `${id.slice(0, 900)}…${id.length}`;
}

/** A folder is a vault when it has `.obsidian/`, or Markdown files at its top (or in its first level of folders). */
export async function looksLikeVault(dir: string, entries: string[]): Promise<boolean> {
  if (entries.includes('.obsidian')) return true;
  if (entries.some((e) => NOTE_EXTENSIONS.test(e) && !e.startsWith('.'))) {
    // More Markdown than other files at the top: a notes folder, not a project with a README.
    let md = 0;
    let other = 0;
    for (const e of entries) {
      if (e.startsWith('.')) continue;
      if (NOTE_EXTENSIONS.test(e)) md++;
      else if (/\.[A-Za-z0-9]{1,8}$/.test(e)) other++;
    }
    return md >= other;
  }
  for (const e of entries.slice(0, 50)) {
    if (e.startsWith('.')) continue;
    try {
      const sub = await fs.readdir(path.join(dir, e));
      if (sub.some((s) => NOTE_EXTENSIONS.test(s))) return true;
    } catch {
      /* a file */
    }
  }
  return false;
}
