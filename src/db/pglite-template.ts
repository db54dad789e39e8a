/**
 * A new embedded database made from a template instead of PGlite's initdb.
 *
 * Why: PGlite creates a database by running PostgreSQL's bootstrap in WebAssembly, the largest
 * part of a first `memex serve` (measured at load 16 on 2 cores: initdb 20 s; the same cluster
 * loaded from its tarball 5 s, then the migrations are already applied). `npm run build` makes
 * the template once (scripts/build-db-template.mjs): an empty database with every migration,
 * dumped as a data-directory tarball beside a key. The key holds the PGlite and pgvector versions
 * and each migration's SHA-256: a template made by other versions, or from a migration file that
 * has changed since, is not used (initdb as before); migrations added after it run as usual.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { listMigrations } from './migrate.ts';

/** build/pglite-template of the checkout, from src/db or from its compiled copy in build/db. */
export const TEMPLATE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'build', 'pglite-template');
const DATA_FILE = 'data.tar.gz';
const KEY_FILE = 'key.json';

export interface TemplateKey {
  pglite: string;
  pgvector: string;
  /** Migration version -> SHA-256 of its SQL, for the migrations applied in the template. */
  migrations: Record<string, string>;
}

function packageVersion(specifier: string): string {
  // The package entry is <package>/dist/index.cjs; its package.json is not exported.
  const entry = createRequire(import.meta.url).resolve(specifier);
  const pkg = JSON.parse(fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** The key a template made now would carry. */
export function currentTemplateKey(): TemplateKey {
  const migrations: Record<string, string> = {};
  for (const m of listMigrations()) migrations[String(m.version)] = crypto.createHash('sha256').update(m.sql).digest('hex');
  return { pglite: packageVersion('@electric-sql/pglite'), pgvector: packageVersion('@electric-sql/pglite-pgvector'), migrations };
}

/** Whether a database made from a template with key `made` can be used by this code. */
export function templateUsable(made: TemplateKey, now: TemplateKey = currentTemplateKey()): boolean {
  if (made.pglite !== now.pglite || made.pgvector !== now.pgvector) return false;
  return Object.entries(made.migrations).every(([v, sha]) => now.migrations[v] === sha);
}

/** The key of the template in `dir`, or null when there is none (or only a half-written one). */
export function templateKey(dir = TEMPLATE_DIR): TemplateKey | null {
  try {
    if (!fs.existsSync(path.join(dir, DATA_FILE))) return null;
    return JSON.parse(fs.readFileSync(path.join(dir, KEY_FILE), 'utf8')) as TemplateKey;
  } catch {
    return null;
  }
}

/** Whether there is a template in `dir` this code can use. */
export function hasUsableTemplate(dir = TEMPLATE_DIR): boolean {
  try {
    const key = JSON.parse(fs.readFileSync(path.join(dir, KEY_FILE), 'utf8')) as TemplateKey;
    return templateUsable(key) && fs.existsSync(path.join(dir, DATA_FILE));
  } catch {
    return false;
  }
}

/** The template's gzipped tarball when one is there and usable, else null (the caller runs initdb). */
function readTemplateBytes(dir: string): Buffer | null {
  try {
    return hasUsableTemplate(dir) ? fs.readFileSync(path.join(dir, DATA_FILE)) : null;
  } catch {
    return null;
  }
}

/** The template's tarball when one is there and usable, else null (the caller runs initdb). */
export function readTemplate(dir = TEMPLATE_DIR): Blob | null {
  const bytes = readTemplateBytes(dir);
  return bytes ? new Blob([bytes]) : null;
}

/**
 * Makes a new on-disk database directory `target` from the template, written by Node itself, and
 * returns whether it did (false: no usable template, the caller runs initdb). PGlite's own
 * `loadDataDir` writes the same files through its WebAssembly file system, ~1 s more at load 6 on
 * 2 cores (1,155 files, 40 MB): the first start of an empty store (issue 34). The files go to a
 * sibling directory first, renamed to `target` when complete, so an interrupted start leaves no
 * half-made database that a later start would take for one.
 */
export function extractTemplate(target: string, dir = TEMPLATE_DIR): boolean {
  const gz = readTemplateBytes(dir);
  if (!gz) return false;
  const tar = zlib.gunzipSync(gz);
  const staging = `${path.resolve(target)}.new-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  fs.mkdirSync(staging, { recursive: true, mode: 0o700 });
  try {
    untar(tar, staging);
    // `target` may exist empty (a new DATA_DIR); rename needs it gone.
    if (fs.existsSync(target)) fs.rmdirSync(target);
    fs.renameSync(staging, target);
    return true;
  } catch (err) {
    fs.rmSync(staging, { recursive: true, force: true });
    throw err;
  }
}

/** Writes the regular files and directories of a ustar archive (what PGlite's dumpDataDir makes) under `root`. */
export function untar(tar: Uint8Array, root: string): void {
  const buf = Buffer.from(tar.buffer, tar.byteOffset, tar.byteLength);
  const base = path.resolve(root);
  const field = (h: Buffer, from: number, to: number) => {
    const end = h.indexOf(0, from);
    return h.toString('utf8', from, end >= 0 && end < to ? end : to);
  };
  for (let off = 0; off + 512 <= buf.length; ) {
    const h = buf.subarray(off, off + 512);
    if (h.every((b) => b === 0)) break;
    const name = field(h, 0, 100);
    const prefix = field(h, 257, 262) === 'ustar' ? field(h, 345, 500) : '';
    const size = parseInt(field(h, 124, 136).trim() || '0', 8);
    const mode = parseInt(field(h, 100, 108).trim() || '0', 8) & 0o777;
    const type = h[156] === 0 ? '0' : String.fromCharCode(h[156]);
    const rel = (prefix ? `${prefix}/${name}` : name).replace(/^\/+/, '');
    const out = path.resolve(base, rel);
    if (out !== base && !out.startsWith(base + path.sep)) throw new Error(`template entry outside the directory: ${rel}`);
    off += 512;
    if (type === '5') {
      fs.mkdirSync(out, { recursive: true, mode: mode || 0o700 });
    } else if (type === '0') {
      fs.mkdirSync(path.dirname(out), { recursive: true });
      fs.writeFileSync(out, buf.subarray(off, off + size), { mode: mode || 0o600 });
    } else {
      throw new Error(`template entry ${rel} of type ${type} is not a file or a directory`);
    }
    off += Math.ceil(size / 512) * 512;
  }
}

/** Writes a template (the tarball first, the key last: a half-written template has no key). */
export function writeTemplate(data: Uint8Array, key: TemplateKey, dir = TEMPLATE_DIR): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, DATA_FILE), data);
  fs.writeFileSync(path.join(dir, KEY_FILE), `${JSON.stringify(key, null, 2)}\n`);
}
