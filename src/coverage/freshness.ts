/**
 * The gateway's side of source freshness (issue 41, docs/sources.md): each agent's report of its sources
 * (state, last success, newest at the source and stored, next run, last error), the pauses people ask for, and
 * what changed at the source for stored documents (folder, flags, labels, deleted_at_source), recorded in place on the
 * active version: a flag change is not a new version of the message. Mail flags also set the tags `unread`,
 * `flagged`, `replied` (src/organize/source-tags.ts).
 */
import type { Database, Queryable } from '../db/types.ts';
import type { SourceStateUpdateT, SourceStatusReportT } from '../schemas/sources.ts';
import { coverageSourceId } from './identity.ts';
import { FLAG_TAGS, syncSourceTags, tagsOfLabels, tagsOfMailFlags } from '../organize/source-tags.ts';
import { EMAIL_SOURCE_TYPES } from '../catalog/email-threads.ts';

export async function recordStatus(db: Database, agent: string, reports: SourceStatusReportT[]): Promise<Array<{ source_id: string; paused: boolean }>> {
  return db.transaction(async (tx) => {
    const out: Array<{ source_id: string; paused: boolean }> = [];
    for (const r of reports) {
      const identity = { collector: r.collector, source_type: r.source_type, source_account_id: r.source_account_id ?? null, source_ref: r.source_ref };
      const id = coverageSourceId(identity);
      await tx.query(
        `INSERT INTO coverage_sources (source_id, collector, source_type, source_account_id, source_ref)
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (source_id) DO NOTHING`,
        [id, identity.collector, identity.source_type, identity.source_account_id, identity.source_ref],
      );
      const row = await tx.query<{ paused: boolean }>(
        `INSERT INTO source_status (source_id, agent, label, state, mode, last_success_at, newest_at_source, newest_stored, next_run_at, last_error, detail, reported_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::jsonb, now())
         ON CONFLICT (source_id) DO UPDATE SET agent = EXCLUDED.agent, label = EXCLUDED.label, state = EXCLUDED.state, mode = EXCLUDED.mode,
           last_success_at = EXCLUDED.last_success_at, newest_at_source = EXCLUDED.newest_at_source, newest_stored = EXCLUDED.newest_stored,
           next_run_at = EXCLUDED.next_run_at, last_error = EXCLUDED.last_error, detail = EXCLUDED.detail, reported_at = now()
         RETURNING paused`,
        [id, agent, r.label, r.state, r.mode, r.last_success_at, r.newest_at_source, r.newest_stored, r.next_run_at, r.last_error, r.detail ? JSON.stringify(r.detail) : null],
      );
      out.push({ source_id: id, paused: row.rows[0]?.paused === true });
    }
    return out;
  });
}

/** Pauses or resumes a source; false when no source has that id. A source no agent reported yet is paused when it first does. */
export async function setPaused(db: Queryable, sourceId: string, paused: boolean): Promise<boolean> {
  const known = await db.query('SELECT 1 FROM coverage_sources WHERE source_id = $1', [sourceId]);
  if (!known.rows.length) return false;
  await db.query(
    `INSERT INTO source_status (source_id, state, paused, paused_at) VALUES ($1, $2, $3, CASE WHEN $3 THEN now() END)
     ON CONFLICT (source_id) DO UPDATE SET paused = $3, paused_at = CASE WHEN $3 THEN now() END`,
    [sourceId, paused ? 'paused' : 'stopped', paused],
  );
  return true;
}

/** Sources with a reported status, for /metrics. */
export async function statusForMetrics(db: Queryable): Promise<
  Array<{ source_id: string; collector: string; source_ref: string; state: string; paused: boolean; last_success_at: Date | null; newest_at_source: Date | null; newest_stored: Date | null }>
> {
  return (
    await db.query(
      `SELECT st.source_id, s.collector, s.source_ref, st.state, st.paused, st.last_success_at, st.newest_at_source, st.newest_stored
         FROM source_status st JOIN coverage_sources s ON s.source_id = st.source_id ORDER BY s.collector, s.source_ref`,
    )
  ).rows as never;
}

/**
 * Records what changed at the source on the active version of each document, in place (no new version): metadata
 * `folder`, `flags`, `deleted_at_source`. An expunge (deleted_at_source set) from a folder other than the
 * document's current one is a move's leftover and changes nothing; with `delete`, the document is deleted.
 */
export async function applySourceState(
  db: Database,
  updates: SourceStateUpdateT[],
  deleteDocument: (docId: string) => Promise<unknown>,
): Promise<{ updated: number; deleted: number; not_found: number }> {
  const out = { updated: 0, deleted: 0, not_found: 0 };
  // Set-based, in one transaction: a first import tells up to 1,000 messages' flags (and a Takeout mbox their
  // labels) per call, and five statements per message cost ~2 ms apiece. The deletions asked for (mirror_deletions,
  // a calendar's removed event) run after it, each in the catalog's own transaction.
  const deletions = new Set<string>();
  await db.transaction(async (tx) => {
    const found = await tx.query<{ i: number; doc_id: string; folder: string | null; labels: string[] | null }>(
      `SELECT DISTINCT ON (k.i) k.i::int AS i, d.doc_id::text AS doc_id, d.metadata->>'folder' AS folder, d.metadata->'source_labels' AS labels
         FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS k(st, sid, acc, i)
         JOIN documents d ON d.source_type = k.st AND d.external_id = k.sid AND d.is_active_version AND (k.acc IS NULL OR d.source_account_id = k.acc)
        ORDER BY k.i, d.version_number DESC`,
      [updates.map((u) => u.source_type), updates.map((u) => u.source_id), updates.map((u) => u.source_account_id ?? null)],
    );
    const byIndex = new Map(found.rows.map((r) => [Number(r.i) - 1, r]));
    // Per document, the patch and the tags its updates ask for, the later update winning (one message told twice).
    const docs = new Map<string, { patch: Record<string, unknown>; flagTags?: string[]; labels?: { before: string[]; now: string[] } }>();
    updates.forEach((u, i) => {
      const doc = byIndex.get(i);
      if (!doc) {
        out.not_found++;
        return;
      }
      const expunged = u.deleted_at_source != null;
      if (expunged && u.folder && doc.folder && doc.folder !== u.folder) return; // moved: it lives on in its new folder
      if (expunged && u.delete) {
        deletions.add(doc.doc_id);
        return;
      }
      const entry = docs.get(doc.doc_id) ?? { patch: {} };
      const before = Object.keys(entry.patch).length;
      if (u.folder !== undefined && !expunged) entry.patch.folder = u.folder;
      if (u.flags !== undefined) entry.patch.flags = u.flags;
      if (u.deleted_at_source !== undefined) entry.patch.deleted_at_source = u.deleted_at_source ? new Date(u.deleted_at_source).toISOString() : null;
      // Flags of mail are tags too (unread, flagged, replied), in the same transaction as the flags themselves.
      if (u.flags !== undefined && EMAIL_SOURCE_TYPES.includes(u.source_type)) entry.flagTags = tagsOfMailFlags(u.flags);
      // Labels (Gmail's) are tags the same way; the ones given before are kept beside them to take off what left.
      if (u.labels !== undefined) {
        const now = tagsOfLabels(u.labels);
        entry.patch.source_labels = now;
        entry.labels = { before: entry.labels?.before ?? (Array.isArray(doc.labels) ? doc.labels : []), now };
      }
      if (Object.keys(entry.patch).length === 0 && before === 0) return;
      if (!docs.has(doc.doc_id)) out.updated++;
      docs.set(doc.doc_id, entry);
    });
    if (!docs.size) return;
    const ids = [...docs.keys()];
    await tx.query(
      `UPDATE documents d SET metadata = coalesce(d.metadata, '{}'::jsonb) || p.patch
         FROM unnest($1::uuid[], $2::jsonb[]) AS p(id, patch) WHERE d.doc_id = p.id`,
      [ids, ids.map((id) => JSON.stringify(docs.get(id)!.patch))],
    );
    const flagged = ids.filter((id) => docs.get(id)!.flagTags);
    const labelled = ids.filter((id) => docs.get(id)!.labels);
    await syncSourceTags(tx, [
      ...flagged.map((id) => ({ docId: id, managed: [...FLAG_TAGS] as string[], wanted: docs.get(id)!.flagTags! })),
      ...labelled.map((id) => ({ docId: id, managed: docs.get(id)!.labels!.before, wanted: docs.get(id)!.labels!.now })),
    ]);
  });
  for (const id of deletions) {
    await deleteDocument(id);
    out.deleted++;
  }
  return out;
}
