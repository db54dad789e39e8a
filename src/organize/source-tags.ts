/**
 * Mail flags as tags (issue 44 item 5, docs/organize.md): a message's flags at its source become the tags
 * `unread` (no \Seen), `flagged` (\Flagged) and `replied` (\Answered), origin `source`, so `tag:unread` and the
 * tag facet work on mail as the person's mail client shows it. The source stays the truth for these tags: a
 * flag change there (a message read on the phone) adds or takes off the tag here. A tag of the same name given by
 * hand is the person's (origin `manual`) and no flag change takes it off.
 */
import type { Queryable } from '../db/types.ts';
import { normaliseTag } from '../schemas/tag-names.ts';

/** The tags flags can give, in the order they are listed. */
export const FLAG_TAGS = ['unread', 'flagged', 'replied'] as const;

export const SOURCE_TAG_ORIGIN = 'source';

/** The tags of a set of IMAP system flags (`\Seen`, `\Flagged`, `\Answered`; others give none). */
export function tagsOfMailFlags(flags: readonly string[]): string[] {
  const has = new Set(flags);
  const tags: string[] = [];
  if (!has.has('\\Seen')) tags.push('unread');
  if (has.has('\\Flagged')) tags.push('flagged');
  if (has.has('\\Answered')) tags.push('replied');
  return tags;
}

/** The tag names of a message's labels at its source (valid names only, at most 50; flag tag names left out). */
export function tagsOfLabels(labels: readonly string[]): string[] {
  const out = new Set<string>();
  for (const l of labels) {
    const n = normaliseTag(l);
    if (n.ok && !(FLAG_TAGS as readonly string[]).includes(n.name)) out.add(n.name);
    if (out.size >= 50) break;
  }
  return [...out];
}

/**
 * Source tags of many documents in two statements: for each, the source-given tags among `managed` that are not
 * `wanted` are taken off, and the `wanted` ones given (a name a document carries already keeps its origin).
 * Flags manage unread/flagged/replied; labels manage the label tags given before.
 */
export async function syncSourceTags(db: Queryable, docs: Array<{ docId: string; managed: readonly string[]; wanted: readonly string[] }>): Promise<void> {
  const goneDoc: string[] = [];
  const goneTag: string[] = [];
  const wantDoc: string[] = [];
  const wantTag: string[] = [];
  for (const d of docs) {
    for (const t of d.managed) {
      if (d.wanted.includes(t)) continue;
      goneDoc.push(d.docId);
      goneTag.push(t);
    }
    for (const t of d.wanted) {
      wantDoc.push(d.docId);
      wantTag.push(t);
    }
  }
  if (goneDoc.length) {
    await db.query(
      `DELETE FROM document_tags t USING unnest($1::uuid[], $2::text[]) AS g(d, tag)
        WHERE t.doc_id = g.d AND t.tag = g.tag AND t.origin = $3`,
      [goneDoc, goneTag, SOURCE_TAG_ORIGIN],
    );
  }
  if (wantDoc.length) {
    await db.query(
      `INSERT INTO document_tags (doc_id, tag, origin) SELECT DISTINCT w.d, w.tag, $3 FROM unnest($1::uuid[], $2::text[]) AS w(d, tag)
       ON CONFLICT (doc_id, tag) DO NOTHING`,
      [wantDoc, wantTag, SOURCE_TAG_ORIGIN],
    );
  }
}
