/**
 * Mail flags as tags (issue 44 item 5, docs/organize.md): a message's flags at its source become the tags
 * `unread` (no \Seen), `flagged` (\Flagged) and `replied` (\Answered), origin `source`, so `tag:unread` and the
 * tag facet work on mail as the person's mail client shows it. The source stays the truth for these tags: a
 * flag change there (a message read on the phone) adds or takes off the tag here. A tag of the same name given by
 * hand is the person's (origin `manual`) and no flag change takes it off.
 */
import type { Queryable } from '../db/types.ts';
import { normaliseTag } from './tag-names.ts';

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

/**
 * Makes a document's flag tags those of `flags`: takes off the source-given ones that no longer apply and gives
 * the missing ones (a name the document already carries, by hand or by a rule, keeps its origin).
 */
export async function syncMailFlagTags(db: Queryable, docId: string, flags: readonly string[]): Promise<void> {
  const tags = tagsOfMailFlags(flags);
  await db.query(
    `DELETE FROM document_tags WHERE doc_id = $1 AND origin = $2 AND tag = ANY($3::text[]) AND NOT (tag = ANY($4::text[]))`,
    [docId, SOURCE_TAG_ORIGIN, [...FLAG_TAGS], tags],
  );
  if (tags.length === 0) return;
  await db.query(
    `INSERT INTO document_tags (doc_id, tag, origin) SELECT $1, unnest($2::text[]), $3 ON CONFLICT (doc_id, tag) DO NOTHING`,
    [docId, tags, SOURCE_TAG_ORIGIN],
  );
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
 * Makes a document's label tags those of `next` (tag names): takes off the source-given tags of labels it had
 * (`previous`) and no longer has, and gives the new ones (a name it carries already keeps its origin).
 */
export async function syncLabelTags(db: Queryable, docId: string, previous: readonly string[], next: readonly string[]): Promise<void> {
  const gone = previous.filter((t) => !next.includes(t));
  if (gone.length) await db.query(`DELETE FROM document_tags WHERE doc_id = $1 AND origin = $2 AND tag = ANY($3::text[])`, [docId, SOURCE_TAG_ORIGIN, gone]);
  if (next.length) {
    await db.query(`INSERT INTO document_tags (doc_id, tag, origin) SELECT $1, unnest($2::text[]), $3 ON CONFLICT (doc_id, tag) DO NOTHING`, [docId, [...next], SOURCE_TAG_ORIGIN]);
  }
}
