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

/** The template's tarball when one is there and usable, else null (the caller runs initdb). */
export function readTemplate(dir = TEMPLATE_DIR): Blob | null {
  try {
    const key = JSON.parse(fs.readFileSync(path.join(dir, KEY_FILE), 'utf8')) as TemplateKey;
    if (!templateUsable(key)) return null;
    return new Blob([fs.readFileSync(path.join(dir, DATA_FILE))]);
  } catch {
    return null;
  }
}

/** Writes a template (the tarball first, the key last: a half-written template has no key). */
export function writeTemplate(data: Uint8Array, key: TemplateKey, dir = TEMPLATE_DIR): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, DATA_FILE), data);
  fs.writeFileSync(path.join(dir, KEY_FILE), `${JSON.stringify(key, null, 2)}\n`);
}
