/**
 * An export as a set of named files, whether it is a folder (Telegram Desktop, an unpacked Slack export), a zip
 * (WhatsApp with media, a Slack download) or one file. Names use `/`; folders are walked to a bounded depth and
 * count, never following links out of the export.
 */
import fs from 'node:fs';
import path from 'node:path';
import { looksLikeZip, ZipReader, type ZipEntry } from './zip.ts';

export const MAX_BUNDLE_FILES = 500_000;
export const MAX_ENTRY_BYTES = 512 * 1024 * 1024;

export interface Bundle {
  /** What the user pointed at. */
  path: string;
  kind: 'zip' | 'folder' | 'file';
  names: string[];
  size(name: string): number;
  read(name: string): Buffer;
  close(): void;
}

export function openBundle(p: string): Bundle {
  const st = fs.statSync(p);
  if (st.isDirectory()) return folderBundle(p);
  const fd = fs.openSync(p, 'r');
  const head = Buffer.alloc(4);
  fs.readSync(fd, head, 0, 4, 0);
  fs.closeSync(fd);
  if (looksLikeZip(head)) {
    const z = ZipReader.open(p);
    const byName = new Map<string, ZipEntry>();
    for (const e of z.entries) if (!e.name.endsWith('/')) byName.set(e.name, e);
    return {
      path: p,
      kind: 'zip',
      names: [...byName.keys()],
      size: (n) => byName.get(n)?.size ?? 0,
      read: (n) => {
        const e = byName.get(n);
        if (!e) throw new Error(`${n} is not in the archive`);
        return z.readEntry(e, MAX_ENTRY_BYTES);
      },
      close: () => z.close(),
    };
  }
  const name = path.basename(p);
  return {
    path: p,
    kind: 'file',
    names: [name],
    size: () => st.size,
    read: () => fs.readFileSync(p),
    close: () => {},
  };
}

function folderBundle(root: string): Bundle {
  const names: string[] = [];
  const walk = (rel: string, depth: number) => {
    if (depth > 6 || names.length >= MAX_BUNDLE_FILES) return;
    for (const d of fs.readdirSync(path.join(root, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${d.name}` : d.name;
      if (d.isDirectory()) walk(r, depth + 1);
      else if (d.isFile()) names.push(r);
      if (names.length >= MAX_BUNDLE_FILES) return;
    }
  };
  walk('', 0);
  const full = (n: string) => {
    const f = path.resolve(root, n);
    if (!f.startsWith(path.resolve(root) + path.sep)) throw new Error(`${n} is outside the export`);
    return f;
  };
  return {
    path: root,
    kind: 'folder',
    names,
    size: (n) => fs.statSync(full(n)).size,
    read: (n) => {
      const f = full(n);
      const size = fs.statSync(f).size;
      if (size > MAX_ENTRY_BYTES) throw new Error(`${n} is larger than ${MAX_ENTRY_BYTES} bytes`);
      return fs.readFileSync(f);
    },
    close: () => {},
  };
}
