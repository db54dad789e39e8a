/** The files table: what is known of a stored file (its object, name, type and size) by its SHA-256. */
import type { Queryable } from '../db/types.ts';

export interface StoredFile {
  object_key: string;
  filename: string | null;
  mime_type: string | null;
  size_bytes: string | number;
}

/** The stored file with this (lower-case) SHA-256, or null when none is. */
export async function storedFile(db: Queryable, sha256: string): Promise<StoredFile | null> {
  const r = await db.query<StoredFile>('SELECT object_key, filename, mime_type, size_bytes FROM files WHERE file_sha256 = $1', [sha256]);
  return r.rows[0] ?? null;
}
