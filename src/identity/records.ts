/**
 * Reading people: one person with everything known about it (GET /v1/people/{id}, which follows
 * merged ids), and the NDJSON export, which walks the people table in keyset pages so memory
 * stays constant however many people there are.
 */
import type { Queryable } from '../db/types.ts';
import type { PersonRecordT } from '../schemas/people.ts';
import { resolvePersonId } from './merge.ts';

/** A row of one of a person's lists: the entry as GET /v1/people/{id} lists it, and whose it is. */
type Row<T> = T & { person_id: string };

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : String(v));

/** Full records of the given people, in the order given. */
export async function personRecords(db: Queryable, ids: string[]): Promise<PersonRecordT[]> {
  if (ids.length === 0) return [];
  const people = await db.query<Record<string, any>>(
    `SELECT person_id, display_name, given_name, family_name, organization, nicknames, notes, photo_hash, source,
            version, deleted, merged_into, created_at, updated_at
       FROM people WHERE person_id = ANY($1::uuid[])`,
    [ids],
  );
  const [idents, addrs, urls, sources] = await Promise.all([
    db.query<Row<PersonRecordT['identifiers'][number]>>(
      `SELECT person_id, kind, value_raw, value_canonical, label, priority, verified FROM person_identifiers
        WHERE person_id = ANY($1::uuid[]) ORDER BY priority, kind, value_canonical`,
      [ids],
    ),
    db.query<Row<PersonRecordT['addresses'][number]>>(
      `SELECT person_id, label, street, city, region, postal_code, country FROM person_addresses
        WHERE person_id = ANY($1::uuid[]) ORDER BY label`,
      [ids],
    ),
    db.query<Row<PersonRecordT['urls'][number]>>(
      'SELECT person_id, label, url FROM person_urls WHERE person_id = ANY($1::uuid[]) ORDER BY label',
      [ids],
    ),
    db.query<Row<PersonRecordT['sources'][number]>>(
      `SELECT person_id, source, external_id, deleted FROM people_source_map WHERE person_id = ANY($1::uuid[])
        ORDER BY source, external_id`,
      [ids],
    ),
  ]);
  const group = <T extends { person_id: string }>(rows: T[]) => {
    const m = new Map<string, Omit<T, 'person_id'>[]>();
    for (const { person_id, ...rest } of rows) {
      const list = m.get(person_id) ?? [];
      list.push(rest);
      m.set(person_id, list);
    }
    return m;
  };
  const byIdent = group(idents.rows);
  const byAddr = group(addrs.rows);
  const byUrl = group(urls.rows);
  const bySource = group(sources.rows);
  const byId = new Map(people.rows.map((p) => [p.person_id as string, p]));
  const out: PersonRecordT[] = [];
  for (const id of ids) {
    const p = byId.get(id);
    if (!p) continue;
    const identifiers = byIdent.get(id) ?? [];
    out.push({
      person_id: p.person_id,
      display_name: p.display_name,
      given_name: p.given_name,
      family_name: p.family_name,
      organization: p.organization,
      nicknames: p.nicknames ?? [],
      notes: p.notes,
      photo_hash: p.photo_hash,
      source: p.source,
      version: p.version,
      deleted: p.deleted,
      merged_into: p.merged_into,
      created_at: iso(p.created_at),
      updated_at: iso(p.updated_at),
      identifiers,
      emails: identifiers.filter((i) => i.kind === 'email').map((i) => i.value_canonical),
      phones: identifiers.filter((i) => i.kind === 'phone').map((i) => i.value_canonical),
      addresses: byAddr.get(id) ?? [],
      urls: byUrl.get(id) ?? [],
      sources: bySource.get(id) ?? [],
    });
  }
  return out;
}

/** A person by id; a merged id answers with its survivor and says which ids were merged into it. */
export async function getPerson(
  db: Queryable,
  personId: string,
): Promise<(PersonRecordT & { requested_id: string; merged_from: string[] }) | null> {
  const survivor = await resolvePersonId(db, personId);
  if (!survivor) return null;
  const [rec] = await personRecords(db, [survivor]);
  if (!rec) return null;
  const merged = await db.query<{ person_id: string }>(
    'SELECT person_id FROM people WHERE merged_into = $1 ORDER BY person_id',
    [survivor],
  );
  return { ...rec, requested_id: personId, merged_from: merged.rows.map((r) => r.person_id) };
}

// -------------------------------------------------------------------------------------------------
// Export

/**
 * Export tokens are base64url of `<updated_at with microseconds>` (UTC): the export lists people
 * changed after it. A plain ISO 8601 timestamp is accepted too (Haven's form).
 */
export function encodeExportToken(ts: string): string {
  return Buffer.from(ts, 'utf8').toString('base64url');
}

export function decodeExportToken(token: string): string | null {
  const t = token.trim();
  const isTs = (s: string) => /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,6})?(Z|[+-]\d{2}:?\d{2})?$/.test(s) && !Number.isNaN(Date.parse(s.replace(' ', 'T')));
  if (isTs(t)) return t;
  const decoded = Buffer.from(t, 'base64url').toString('utf8');
  return isTs(decoded) ? decoded : null;
}

const TS_TEXT = `to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export interface ExportPlan {
  /** Token for the next incremental export: the newest change this export covers. */
  nextToken: string | null;
  pages: AsyncGenerator<PersonRecordT & { updated_token: string }>;
}

/**
 * People for the export, oldest change first. Full (or no token): live people only. With a token:
 * everyone changed after it, including deleted and merged people (so a mirror can drop them).
 * The upper bound is fixed when the export starts; later changes go to the next export.
 */
export async function planExport(
  db: Queryable,
  opts: { since?: string | null; full?: boolean; pageSize?: number },
): Promise<ExportPlan> {
  const since = opts.full ? null : (opts.since ?? null);
  const bound = await db.query<{ ts: string | null }>(
    `SELECT ${TS_TEXT.replace('updated_at', 'max(updated_at)')} AS ts FROM people`,
  );
  const upper = bound.rows[0]?.ts ?? null;
  const pageSize = opts.pageSize ?? 500;
  async function* pages() {
    if (!upper) return;
    // Strictly after the token: the greatest uuid puts every row of that instant behind us.
    let after: { ts: string; id: string } | null = since ? { ts: since, id: 'ffffffff-ffff-ffff-ffff-ffffffffffff' } : null;
    const liveOnly = since === null;
    for (;;) {
      const params: unknown[] = [upper, pageSize];
      let where = `updated_at <= $1::timestamptz`;
      if (after) {
        params.push(after.ts, after.id);
        where += ` AND (updated_at, person_id) > ($3::timestamptz, $4::uuid)`;
      }
      if (liveOnly) where += ' AND merged_into IS NULL AND NOT deleted';
      const page = await db.query<{ person_id: string; ts: string }>(
        `SELECT person_id, ${TS_TEXT} AS ts FROM people WHERE ${where}
          ORDER BY updated_at, person_id LIMIT $2`,
        params,
      );
      if (page.rows.length === 0) return;
      const records = await personRecords(db, page.rows.map((r) => r.person_id));
      const tsOf = new Map(page.rows.map((r) => [r.person_id, r.ts]));
      for (const rec of records) yield { ...rec, updated_token: encodeExportToken(tsOf.get(rec.person_id)!) };
      const last = page.rows[page.rows.length - 1];
      after = { ts: last.ts, id: last.person_id };
      if (page.rows.length < pageSize) return;
    }
  }
  return { nextToken: upper ? encodeExportToken(upper) : (opts.since ? encodeExportToken(opts.since) : null), pages: pages() };
}
