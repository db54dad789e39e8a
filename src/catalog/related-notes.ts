/**
 * The notes a note is related to (issue 43, item 3: "links to other notes recorded as related documents"): the
 * notes its `[[links]]` name and the notes whose links name it, as GET /v1/doc/{doc_id}/view's `related`. A note
 * keeps its links as vault paths (`metadata.links`, src/imports/notes/vault.ts), which stay true from one version
 * to the next, so they are read here, each time, against the active version of the notes of the same vault.
 */
import type { Queryable } from '../db/types.ts';
import type { RelatedDocumentT } from '../schemas/documents.ts';

/** At most this many of each relation are listed. */
export const MAX_RELATED = 100;

const obj = (v: unknown): Record<string, unknown> | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null);

export async function relatedNotes(
  db: Queryable,
  doc: { doc_id: string; source_type: string; source_provider: unknown; metadata: unknown },
): Promise<RelatedDocumentT[]> {
  const metadata = obj(doc.metadata);
  if (doc.source_type !== 'note' || !metadata || typeof metadata.vault !== 'string' || typeof metadata.path !== 'string') return [];
  const links = (Array.isArray(metadata.links) ? metadata.links : []).filter((l): l is string => typeof l === 'string').slice(0, MAX_RELATED);
  const provider = typeof doc.source_provider === 'string' ? doc.source_provider : null;
  type Row = { doc_id: string; title: string | null; path: string };
  const linked = links.length
    ? await db.query<Row>(
        `SELECT d.doc_id::text AS doc_id, d.title, d.metadata->>'path' AS path FROM documents d
          WHERE d.source_type = 'note' AND d.is_active_version AND d.deleted_at IS NULL AND coalesce(d.source_provider, '') = coalesce($1, '')
            AND d.metadata->>'vault' = $2 AND d.metadata->>'path' = ANY($3::text[]) AND d.doc_id <> $4::uuid`,
        [provider, metadata.vault, links, doc.doc_id],
      )
    : { rows: [] as Row[] };
  const byPath = new Map(linked.rows.map((r) => [r.path, r]));
  const backlinks = await db.query<Row>(
    `SELECT d.doc_id::text AS doc_id, d.title, d.metadata->>'path' AS path FROM documents d
      WHERE d.source_type = 'note' AND d.is_active_version AND d.deleted_at IS NULL AND coalesce(d.source_provider, '') = coalesce($1, '')
        AND d.metadata->>'vault' = $2 AND jsonb_typeof(d.metadata->'links') = 'array' AND d.metadata->'links' ? $3 AND d.doc_id <> $4::uuid
      ORDER BY d.metadata->>'path' LIMIT $5`,
    [provider, metadata.vault, metadata.path, doc.doc_id, MAX_RELATED],
  );
  return [
    ...links.flatMap((l) => (byPath.has(l) ? [{ ...byPath.get(l)!, relation: 'links_to' as const }] : [])),
    ...backlinks.rows.map((r) => ({ ...r, relation: 'linked_from' as const })),
  ];
}
