/**
 * Merging people: one person per human. When two persons turn out to share a phone or an email
 * (or one contact card names identifiers owned by two persons), the later one is merged into the
 * earlier one: identifiers, source maps, addresses, urls, document links and relationship edges
 * move to the survivor, the merged person keeps a `merged_into` pointer, and the merge is recorded
 * in person_merges. Reads resolve merged ids through `resolvePersonId`.
 */
import type { Queryable } from '../db/types.ts';
import { newId } from '../util/ids.ts';
import { asCardFields, mergeFields } from './card-fields.ts';

export interface MergeRecord {
  merge_id: string;
  target_person_id: string;
  source_person_id: string;
  reason: string;
  details: Record<string, unknown>;
  created_at: string;
}

/** Follows merged_into to the final survivor; null when the id is unknown. */
export async function resolvePersonId(db: Queryable, personId: string): Promise<string | null> {
  const r = await db.query<{ person_id: string }>(
    `WITH RECURSIVE chain(person_id, merged_into, depth) AS (
       SELECT person_id, merged_into, 0 FROM people WHERE person_id = $1
       UNION ALL
       SELECT p.person_id, p.merged_into, c.depth + 1 FROM chain c JOIN people p ON p.person_id = c.merged_into
        WHERE c.depth < 64)
     SELECT person_id FROM chain WHERE merged_into IS NULL LIMIT 1`,
    [personId],
  );
  return r.rows[0]?.person_id ?? null;
}

/**
 * Merges `sourceId` into `targetId` inside the caller's transaction. Both ids are first resolved
 * to their survivors; merging a person into itself is a no-op (returns null). Rows are locked in
 * id order so two merges of the same pair never deadlock, and with FOR NO KEY UPDATE, which does
 * not wait for the key-share locks other transactions hold while they insert rows pointing at the
 * person (identifiers, links): FOR UPDATE would deadlock against two such inserters.
 */
export async function mergePeople(
  tx: Queryable,
  targetId: string,
  sourceId: string,
  reason: string,
  details: Record<string, unknown> = {},
): Promise<MergeRecord | null> {
  const target = await resolvePersonId(tx, targetId);
  const source = await resolvePersonId(tx, sourceId);
  if (!target || !source || target === source) return null;
  const locked = await tx.query<Record<string, any>>(
    `SELECT person_id, display_name, given_name, family_name, organization, nicknames, notes, photo_hash, deleted,
            merged_into
       FROM people WHERE person_id = ANY($1::uuid[]) ORDER BY person_id FOR NO KEY UPDATE`,
    [[target, source]],
  );
  const t = locked.rows.find((r) => r.person_id === target);
  const s = locked.rows.find((r) => r.person_id === source);
  // Another transaction merged one of them between resolve and lock: resolve again.
  if (!t || !s || t.merged_into || s.merged_into) return mergePeople(tx, target, source, reason, details);

  const moved = {
    identifiers: (await tx.query('UPDATE person_identifiers SET person_id = $1 WHERE person_id = $2', [target, source]))
      .rowCount,
    source_maps: (
      await tx.query('UPDATE people_source_map SET person_id = $1, updated_at = now() WHERE person_id = $2', [
        target,
        source,
      ])
    ).rowCount,
    addresses: await moveKeyed(tx, 'person_addresses', target, source),
    urls: await moveKeyed(tx, 'person_urls', target, source),
    document_links: await moveDocumentLinks(tx, target, source),
    relationship_edges: await moveEdges(tx, target, source),
  };

  // The survivor keeps its own fields and fills its gaps from the merged person, whose names stay
  // as nicknames and whose notes are added: nothing either person said is lost.
  const f = mergeFields(asCardFields(t), asCardFields(s));
  await tx.query(
    `UPDATE people SET display_name = $2, given_name = $3, family_name = $4, organization = $5, nicknames = $6,
            notes = $7, photo_hash = $8, deleted = deleted AND $9, updated_at = now()
      WHERE person_id = $1`,
    [target, f.display_name, f.given_name, f.family_name, f.organization, f.nicknames, f.notes, f.photo_hash, s.deleted],
  );
  await tx.query('UPDATE people SET merged_into = $1, updated_at = now() WHERE person_id = $2', [target, source]);
  // Earlier merges into the source now point straight at the survivor: chains stay one hop long.
  await tx.query('UPDATE people SET merged_into = $1 WHERE merged_into = $2', [target, source]);
  await tx.query(
    `UPDATE system_settings SET value = jsonb_set(value, '{self_person_id}', to_jsonb($1::text)), updated_at = now()
      WHERE key = 'self_person_id' AND value->>'self_person_id' = $2`,
    [target, source],
  );

  const record: MergeRecord = {
    merge_id: newId(),
    target_person_id: target,
    source_person_id: source,
    reason,
    details: { ...details, moved },
    created_at: new Date().toISOString(),
  };
  await tx.query(
    `INSERT INTO person_merges (merge_id, target_person_id, source_person_id, reason, details)
     VALUES ($1, $2, $3, $4, $5)`,
    [record.merge_id, target, source, reason, JSON.stringify(record.details)],
  );
  return record;
}

/** Rows keyed by (person_id, label): the survivor keeps its own label, the others move over. */
async function moveKeyed(tx: Queryable, table: 'person_addresses' | 'person_urls', target: string, source: string) {
  const r = await tx.query(
    `UPDATE ${table} s SET person_id = $1 WHERE s.person_id = $2
        AND NOT EXISTS (SELECT 1 FROM ${table} t WHERE t.person_id = $1 AND t.label = s.label)`,
    [target, source],
  );
  await tx.query(`DELETE FROM ${table} WHERE person_id = $1`, [source]);
  return r.rowCount;
}

async function moveDocumentLinks(tx: Queryable, target: string, source: string): Promise<number> {
  const r = await tx.query(
    `INSERT INTO document_people (doc_id, person_id, role)
     SELECT doc_id, $1, role FROM document_people WHERE person_id = $2 ON CONFLICT DO NOTHING`,
    [target, source],
  );
  await tx.query('DELETE FROM document_people WHERE person_id = $1', [source]);
  return r.rowCount;
}

/** Edges on either end move; where the survivor already has the edge, the stronger one is kept. */
async function moveEdges(tx: Queryable, target: string, source: string): Promise<number> {
  let moved = 0;
  for (const [col, other] of [
    ['person_id', 'self_person_id'],
    ['self_person_id', 'person_id'],
  ] as const) {
    const r = await tx.query(
      `INSERT INTO relationship_edges (self_person_id, person_id, score, last_contact_at, decay_bucket, edge_features,
                                       updated_at)
       SELECT ${col === 'person_id' ? `self_person_id, $1::uuid` : `$1::uuid, person_id`}, score, last_contact_at,
              decay_bucket, edge_features, now()
         FROM relationship_edges WHERE ${col} = $2 AND ${other} <> $1
       ON CONFLICT (self_person_id, person_id) DO UPDATE
         SET score = GREATEST(relationship_edges.score, EXCLUDED.score),
             last_contact_at = GREATEST(relationship_edges.last_contact_at, EXCLUDED.last_contact_at),
             decay_bucket = LEAST(relationship_edges.decay_bucket, EXCLUDED.decay_bucket),
             edge_features = CASE WHEN EXCLUDED.score > relationship_edges.score THEN EXCLUDED.edge_features
                                  ELSE relationship_edges.edge_features END,
             updated_at = now()`,
      [target, source],
    );
    moved += r.rowCount;
    await tx.query(`DELETE FROM relationship_edges WHERE ${col} = $1`, [source]);
  }
  return moved;
}

/** Merges, newest first; with a person id, those where it (or anyone merged into it) took part. */
export async function listMerges(
  db: Queryable,
  opts: { personId?: string; limit: number; offset: number },
): Promise<{ merges: MergeRecord[]; total: number }> {
  const params: unknown[] = [];
  let where = 'true';
  if (opts.personId) {
    params.push(opts.personId);
    where = `(m.target_person_id = $1 OR m.source_person_id = $1
              OR m.target_person_id IN (SELECT person_id FROM people WHERE merged_into = $1)
              OR m.source_person_id IN (SELECT person_id FROM people WHERE merged_into = $1))`;
  }
  const total = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM person_merges m WHERE ${where}`, params);
  const rows = await db.query<Record<string, any>>(
    `SELECT merge_id, target_person_id, source_person_id, reason, details, created_at FROM person_merges m
      WHERE ${where} ORDER BY created_at DESC, merge_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, opts.limit, opts.offset],
  );
  return {
    total: total.rows[0].n,
    merges: rows.rows.map((r) => ({
      merge_id: r.merge_id,
      target_person_id: r.target_person_id,
      source_person_id: r.source_person_id,
      reason: r.reason,
      details: r.details ?? {},
      created_at: r.created_at instanceof Date ? r.created_at.toISOString() : String(r.created_at),
    })),
  };
}
