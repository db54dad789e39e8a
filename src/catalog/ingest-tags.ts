/**
 * Tags at ingest (issue 44), in the ingest transaction (src/catalog/ingest.ts): a new version of a
 * document takes over its previous version's tags; the tags an upload or an importer gives
 * (metadata.tags: upload tags, a notes vault's #tags) become tags with origin 'import'; and while
 * tagging rules exist, the new documents are queued for them (tag_rule_pending, evaluated after commit
 * in batches by src/organize/rules.ts). At most three set-based statements per batch, one when there is
 * nothing to move or import.
 */
import type { Queryable } from '../db/types.ts';
import { importedTags } from '../schemas/tag-names.ts';

export interface IngestedForTags {
  docId: string;
  previousId: string | null;
  metadata: unknown;
}

export async function storeIngestTags(tx: Queryable, docs: IngestedForTags[]): Promise<void> {
  if (docs.length === 0) return;
  const moved = docs.filter((d) => d.previousId !== null);
  if (moved.length > 0) {
    await tx.query(
      `UPDATE document_tags t SET doc_id = x.new_id
         FROM unnest($1::uuid[], $2::uuid[]) AS x(old_id, new_id) WHERE t.doc_id = x.old_id`,
      [moved.map((d) => d.previousId), moved.map((d) => d.docId)],
    );
  }
  const ids: string[] = [];
  const tags: string[] = [];
  for (const d of docs) {
    for (const t of importedTags(d.metadata)) {
      ids.push(d.docId);
      tags.push(t);
    }
  }
  if (tags.length > 0) {
    await tx.query(
      `INSERT INTO document_tags (doc_id, tag, origin) SELECT * , 'import' FROM unnest($1::uuid[], $2::text[])
       ON CONFLICT (doc_id, tag) DO NOTHING`,
      [ids, tags],
    );
  }
  await tx.query(
    `INSERT INTO tag_rule_pending (doc_id) SELECT unnest($1::uuid[]) WHERE EXISTS (SELECT 1 FROM tag_rules)
     ON CONFLICT (doc_id) DO NOTHING`,
    [docs.map((d) => d.docId)],
  );
}
