/** Reading ranked edges for GET /v1/crm/relationships/top (spec 4.5). */
import type { Queryable } from '../db/types.ts';
import { DEFAULT_WINDOW, MAX_WINDOW_DAYS } from '../schemas/relationships.ts';
import { computeFeatures, toEdges } from './recompute.ts';
import { MESSAGE_SOURCE_TYPES } from './self.ts';

export { DEFAULT_WINDOW, MAX_WINDOW_DAYS };
/** "Gone quiet": people the self person wrote to at least this often, and not for this many days. */
export const GONE_QUIET = { minWritten: 5, minDays: 60 } as const;

/** `<days>d` (trimmed, case-insensitive), 1..3650 days, or `all` (Infinity: all time); null when malformed or out of range. */
export function parseWindow(raw: string | undefined | null): number | null {
  const s = (raw ?? DEFAULT_WINDOW).trim().toLowerCase();
  if (s === 'all') return Number.POSITIVE_INFINITY;
  const m = /^(\d{1,5})d$/.exec(s);
  if (!m) return null;
  const days = Number(m[1]);
  return days >= 1 && days <= MAX_WINDOW_DAYS ? days : null;
}

export interface TopRelationship {
  /** Whose edge this is (the self person asked for, or any self when none is known). */
  self_person_id: string;
  person_id: string;
  score: number;
  last_contact_at: string | null;
  display_name: string;
  organization: string | null;
  emails: string[];
  phones: string[];
  features: Record<string, unknown>;
  decay_bucket: number;
  updated_at: string;
}

export interface TopResult {
  relationships: TopRelationship[];
  total_count: number;
  /** null: all time. */
  window_start: string | null;
  window_end: string;
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v == null ? null : new Date(v as string).toISOString());

/**
 * Edges of `selfId` whose last contact lies in [now - days, now], live persons only, ordered by
 * score then recency (person id breaks ties so pages are stable). With `selfId` null (no self
 * person known) the edges of every self are ranked together, as the original system did
 * (spec-notes 4.5): one row per (self, person).
 */
export async function topRelationships(
  db: Queryable,
  selfId: string | null,
  q: {
    days: number;
    limit: number;
    offset: number;
    now?: Date;
    personId?: string;
    includeAutomated?: boolean;
    goneQuiet?: boolean;
    /** The owner's other persons (an address of SELF_IDENTIFIERS that stayed a person of its own): never ranked. */
    excludePersons?: string[];
  },
): Promise<TopResult> {
  const end = q.now ?? new Date();
  const start = Number.isFinite(q.days) ? new Date(end.getTime() - q.days * 86400_000) : null;
  const params: unknown[] = [start?.toISOString() ?? null];
  const where = ['($1::timestamptz IS NULL OR e.last_contact_at >= $1)', 'e.person_id <> e.self_person_id'];
  if (selfId) where.push(`e.self_person_id = $${params.push(selfId)}`);
  else where.push(`EXISTS (SELECT 1 FROM people s WHERE s.person_id = e.self_person_id AND s.merged_into IS NULL AND NOT s.deleted)`);
  if (q.excludePersons?.length) where.push(`NOT (e.person_id = ANY($${params.push(q.excludePersons)}::uuid[]))`);
  if (q.personId) where.push(`e.person_id = $${params.push(q.personId)}`);
  // Automated senders (features.automated, src/relationships/recompute.ts) only when asked, or asked for by id.
  else if (!q.includeAutomated) {
    where.push(`(jsonb_typeof(e.edge_features->'automated') IS DISTINCT FROM 'array' OR jsonb_array_length(e.edge_features->'automated') = 0)`);
  }
  if (q.goneQuiet) {
    where.push(`coalesce((e.edge_features->>'outbound_total')::int, 0) >= ${GONE_QUIET.minWritten}`);
    where.push(`coalesce((e.edge_features->>'days_since_last_outbound')::float8, 0) >= ${GONE_QUIET.minDays}`);
  }
  // Gone quiet: the people written to most first; otherwise by score.
  const order = q.goneQuiet
    ? `(e.edge_features->>'outbound_total')::int DESC, (e.edge_features->>'days_since_last_outbound')::float8 DESC`
    : 'e.score DESC, e.last_contact_at DESC';
  // A mailing list is nobody's relationship (issue 40): edges made before it was known as one stay hidden.
  const base = `FROM relationship_edges e JOIN people p ON p.person_id = e.person_id AND p.merged_into IS NULL AND NOT p.deleted
                AND p.list_id IS NULL
               WHERE ${where.join(' AND ')}`;
  const count = await db.query<{ n: number }>(`SELECT count(*)::int AS n ${base}`, params);
  const page = await db.query<Record<string, any>>(
    `SELECT e.self_person_id, e.person_id, e.score, e.last_contact_at, e.decay_bucket, e.edge_features, e.updated_at,
            p.display_name, p.organization
       ${base}
      ORDER BY ${order}, e.person_id, e.self_person_id
      LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, q.limit, q.offset],
  );
  const idents = await identifiersOf(db, page.rows.map((r) => r.person_id as string));
  return {
    relationships: page.rows.map((r) => ({
      self_person_id: r.self_person_id,
      person_id: r.person_id,
      score: Number(r.score),
      last_contact_at: iso(r.last_contact_at),
      display_name: r.display_name,
      organization: r.organization ?? null,
      emails: [...idents.get(r.person_id)!.emails].sort(),
      phones: [...idents.get(r.person_id)!.phones].sort(),
      features: (r.edge_features ?? {}) as Record<string, unknown>,
      decay_bucket: Number(r.decay_bucket),
      updated_at: iso(r.updated_at)!,
    })),
    total_count: count.rows[0]?.n ?? 0,
    window_start: start?.toISOString() ?? null,
    window_end: end.toISOString(),
  };
}

/** Emails and phones of each person and of everyone merged into it (UNION stops on cycles). */
async function identifiersOf(db: Queryable, ids: string[]): Promise<Map<string, { emails: Set<string>; phones: Set<string> }>> {
  const idents = new Map<string, { emails: Set<string>; phones: Set<string> }>();
  for (const id of ids) idents.set(id, { emails: new Set(), phones: new Set() });
  if (ids.length > 0) {
    const r = await db.query<{ root: string; kind: string; value_canonical: string }>(
      `WITH RECURSIVE m(root, pid) AS (
          SELECT x, x FROM unnest($1::uuid[]) AS x
          UNION
          SELECT m.root, p.person_id FROM people p JOIN m ON p.merged_into = m.pid
        )
        SELECT m.root, pi.kind, pi.value_canonical FROM m JOIN person_identifiers pi ON pi.person_id = m.pid
         WHERE pi.kind IN ('email', 'phone')`,
      [ids],
    );
    for (const row of r.rows) {
      const slot = idents.get(row.root);
      if (!slot) continue;
      (row.kind === 'email' ? slot.emails : slot.phones).add(row.value_canonical);
    }
  }
  return idents;
}

/** The date of the newest message (email, chat, SMS) in the store, not after now; null when there is none. */
export async function newestMessageAt(db: Queryable): Promise<Date | null> {
  const r = await db.query<{ ts: Date | string | null }>(
    `SELECT max(content_timestamp) AS ts FROM documents
      WHERE is_active_version AND deleted_at IS NULL AND source_type = ANY($1::text[]) AND content_timestamp <= now()`,
    [[...MESSAGE_SOURCE_TYPES]],
  );
  const ts = r.rows[0]?.ts;
  return ts == null ? null : new Date(ts);
}

/**
 * The ranking as it stood at `asOf` (issue 40: an archive whose mail ends in 2019 has its 2019 circle): the
 * features are computed from the messages up to that moment (recency, the 30 and 90-day counts counted back
 * from it), scored, and ranked like stored edges. Nothing is stored: the edges of now stay what they are.
 */
export async function topRelationshipsAsOf(
  db: Queryable,
  selfId: string,
  q: Parameters<typeof topRelationships>[2] & { asOf: Date; halfLifeDays: number },
): Promise<TopResult> {
  const end = q.asOf;
  const start = Number.isFinite(q.days) ? new Date(end.getTime() - q.days * 86400_000) : null;
  const excluded = new Set(q.excludePersons ?? []);
  const rows = await computeFeatures(db, selfId, { now: end, persons: q.personId ? [q.personId] : undefined });
  const edges = toEdges(rows, q.halfLifeDays, end).filter((e) => {
    if (e.person_id === selfId || excluded.has(e.person_id)) return false;
    if (q.personId) return e.person_id === q.personId;
    if (start && new Date(e.last_contact_at) < start) return false;
    if (!q.includeAutomated && e.features.automated.length > 0) return false;
    if (q.goneQuiet) {
      return e.features.outbound_total >= GONE_QUIET.minWritten && (e.features.days_since_last_outbound ?? 0) >= GONE_QUIET.minDays;
    }
    return true;
  });
  edges.sort((a, b) =>
    q.goneQuiet
      ? b.features.outbound_total - a.features.outbound_total || (b.features.days_since_last_outbound ?? 0) - (a.features.days_since_last_outbound ?? 0)
      : b.score - a.score || b.last_contact_at.localeCompare(a.last_contact_at) || (a.person_id < b.person_id ? -1 : 1),
  );
  const page = edges.slice(q.offset, q.offset + q.limit);
  const ids = page.map((e) => e.person_id);
  const names = new Map<string, { display_name: string; organization: string | null }>();
  if (ids.length > 0) {
    const r = await db.query<{ person_id: string; display_name: string; organization: string | null }>(
      'SELECT person_id::text AS person_id, display_name, organization FROM people WHERE person_id = ANY($1::uuid[])',
      [ids],
    );
    for (const row of r.rows) names.set(row.person_id, row);
  }
  const idents = await identifiersOf(db, ids);
  const computed = end.toISOString();
  return {
    relationships: page.map((e) => ({
      self_person_id: selfId,
      person_id: e.person_id,
      score: e.score,
      last_contact_at: e.last_contact_at,
      display_name: names.get(e.person_id)?.display_name ?? e.person_id,
      organization: names.get(e.person_id)?.organization ?? null,
      emails: [...idents.get(e.person_id)!.emails].sort(),
      phones: [...idents.get(e.person_id)!.phones].sort(),
      features: e.features as unknown as Record<string, unknown>,
      decay_bucket: e.decay_bucket,
      updated_at: computed,
    })),
    total_count: edges.length,
    window_start: start?.toISOString() ?? null,
    window_end: end.toISOString(),
  };
}
