/**
 * The backup file's format (format 2): what memex writes and the only thing `memex restore` reads.
 *
 * A backup is data, never code. It holds memex's own table rows as NDJSON and the stored files; the
 * schema they go into is made by this memex's own migrations at restore, never taken from the file.
 * Format 1 (a `pg_dump` archive or a PGlite data directory) carried SQL and a whole cluster: loading
 * it ran whatever functions, triggers and COPY … PROGRAM it held (issue 47 item 3), so it is refused.
 *
 * Members, in this order (anything else, or out of order, refuses the whole file):
 *
 *   memex-backup.json                  the manifest, first: format, schema level, tables and columns, counts
 *   database/<table>/<n>.ndjson        rows of one of memex's tables, one JSON object a line
 *   objects/<sha256>                   a stored file; its bytes must hash to its name
 *   memex-backup-end.json              last: how many objects were written; a file without it is cut short
 *
 * Adding a kind of member: a pattern and a size bound in MEMBER_KINDS below, a writer step in
 * writeBackup, and a handler for the kind in restoreBackup (both in backup.ts). Unknown members are
 * refused by name before a byte of them is read, so old restores refuse new kinds clearly.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { MemexError } from '../util/errors.ts';

export const BACKUP_FORMAT_VERSION = 2;
export const MANIFEST_MEMBER = 'memex-backup.json';
export const END_MEMBER = 'memex-backup-end.json';

/** A backup that cannot be restored, or a backup/restore that cannot run now or here (the gateway answers 409). */
export class BackupError extends MemexError {
  constructor(message: string) {
    super(message, 'BACKUP.CONFLICT');
  }
}

const Name = Type.String({ pattern: '^[a-z_][a-z0-9_]{0,62}$' });

export const BackupTableSchema = Type.Object(
  {
    name: Name,
    /** The columns each row holds (generated columns are left out: the target computes them). */
    columns: Type.Array(Name, { minItems: 1, maxItems: 200 }),
    rows: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);

export const BackupManifestSchema = Type.Object(
  {
    type: Type.Literal('memex-backup'),
    format_version: Type.Integer({ minimum: 1 }),
    created_at: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T[0-9:.]+(Z|[+-][0-9:]+)$', maxLength: 40 }),
    /** The backend the backup was made from (either restores into either). */
    database: Type.Union([Type.Literal('pglite'), Type.Literal('postgres')]),
    /** The migration versions the source had applied: the target gets exactly these before the rows go in. */
    migrations: Type.Array(Type.Integer({ minimum: 1, maximum: 999 }), { minItems: 1, maxItems: 999 }),
    tables: Type.Array(BackupTableSchema, { maxItems: 500 }),
    documents: Type.Integer({ minimum: 0 }),
    /** Stored files listed in the snapshot; one forgotten while the backup ran is left out (see the end member). */
    objects: Type.Integer({ minimum: 0 }),
  },
  { additionalProperties: false },
);
export type BackupManifest = Static<typeof BackupManifestSchema>;
export type BackupTable = Static<typeof BackupTableSchema>;

export const BackupEndSchema = Type.Object(
  { type: Type.Literal('memex-backup-end'), objects: Type.Integer({ minimum: 0 }) },
  { additionalProperties: false },
);
export type BackupEnd = Static<typeof BackupEndSchema>;

export interface MemberLimits {
  /** FILE_MAX_BYTES of the target: no stored file is larger. */
  maxObjectBytes: number;
}

/** A chunk of table rows the writer makes is about this big (one row larger than it is a member alone). */
export const TABLE_CHUNK_BYTES = 8 << 20;

export type MemberKind = 'manifest' | 'table' | 'object' | 'end';

interface MemberKindSpec {
  kind: MemberKind;
  pattern: RegExp;
  /** The name as the docs write it. */
  shown: string;
  /** Largest member of the kind; a larger header is refused before its body is read. */
  maxBytes(limits: MemberLimits): number;
}

export const MEMBER_KINDS: readonly MemberKindSpec[] = [
  { kind: 'manifest', shown: MANIFEST_MEMBER, pattern: /^memex-backup\.json$/, maxBytes: () => 1 << 20 },
  // One document's text can be tens of MB; a member is read line by line, and one line is one row.
  { kind: 'table', shown: 'database/<table>/<n>.ndjson', pattern: /^database\/([a-z_][a-z0-9_]{0,62})\/(\d{1,9})\.ndjson$/, maxBytes: () => 256 << 20 },
  { kind: 'object', shown: 'objects/<sha256>', pattern: /^objects\/([0-9a-f]{64})$/, maxBytes: (l) => l.maxObjectBytes },
  { kind: 'end', shown: END_MEMBER, pattern: /^memex-backup-end\.json$/, maxBytes: () => 64 << 10 },
];

export interface Member {
  kind: MemberKind;
  /** The table (table members) or SHA-256 (object members) the name carries. */
  key?: string;
}

/** What a member's name is, or a BackupError naming it; a name outside the known kinds (`..`, `/`, others) is refused. */
export function classifyMember(header: { name: string; type?: string | null; size?: number | null }, limits: MemberLimits): Member {
  const name = header.name;
  const shown = JSON.stringify(name.slice(0, 120));
  if (header.type && header.type !== 'file') throw new BackupError(`the backup holds ${shown} of type ${header.type}; only files are allowed`);
  const spec = MEMBER_KINDS.find((k) => k.pattern.test(name));
  if (!spec) {
    if (name === 'database/postgres.dump' || name === 'database/pglite.tar.gz') throw formatOneError();
    throw new BackupError(`the backup holds an unexpected member ${shown}: refused (memex writes only ${MEMBER_KINDS.map((k) => k.shown).join(', ')})`);
  }
  const max = spec.maxBytes(limits);
  if ((header.size ?? 0) > max) {
    throw new BackupError(`the backup's member ${shown} is ${header.size} bytes, more than the ${max} allowed for it: refused`);
  }
  const m = spec.pattern.exec(name)!;
  return { kind: spec.kind, key: m[1] };
}

function formatOneError(): BackupError {
  return new BackupError(
    'this is a format-1 backup (a database dump), made by an older memex: a dump can carry code that runs when it is loaded, ' +
      'so this memex does not load it. Restore it with the memex that made it, on a machine you trust it on, then make a new backup with `memex backup`',
  );
}

/** Parses and checks the manifest; every way it can be wrong ends in one BackupError line. */
export function parseManifest(body: Buffer): BackupManifest {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new BackupError('memex-backup.json is not JSON: not a memex backup, or a damaged one');
  }
  const v = value as { type?: unknown; format_version?: unknown };
  if (!v || typeof v !== 'object' || v.type !== 'memex-backup') throw new BackupError('memex-backup.json is not a memex backup manifest');
  if (!Number.isInteger(v.format_version) || (v.format_version as number) < 1) {
    throw new BackupError(`memex-backup.json has format_version ${JSON.stringify(v.format_version)}: not a format memex has written`);
  }
  if (v.format_version === 1) throw formatOneError();
  if ((v.format_version as number) > BACKUP_FORMAT_VERSION) {
    throw new BackupError(`backup format ${v.format_version} is newer than this memex understands (${BACKUP_FORMAT_VERSION}): restore it with a newer memex`);
  }
  const first = Value.Errors(BackupManifestSchema, value).First();
  if (first) throw new BackupError(`memex-backup.json is malformed at ${first.path || '/'}: ${first.message}`);
  const manifest = value as BackupManifest;
  const names = new Set<string>();
  for (const t of manifest.tables) {
    if (names.has(t.name)) throw new BackupError(`memex-backup.json lists table ${t.name} twice`);
    names.add(t.name);
    if (new Set(t.columns).size !== t.columns.length) throw new BackupError(`memex-backup.json lists a column of ${t.name} twice`);
  }
  return manifest;
}

export function parseEnd(body: Buffer): BackupEnd {
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch {
    throw new BackupError('memex-backup-end.json is not JSON: the backup is damaged');
  }
  const first = Value.Errors(BackupEndSchema, value).First();
  if (first) throw new BackupError(`memex-backup-end.json is malformed at ${first.path || '/'}: ${first.message}`);
  return value as BackupEnd;
}
