/**
 * Tags on documents and conversations (issue 44, docs/organize.md): added and removed by id or by
 * query, listed with counts. Names are normalised by tag-names.ts before they get here. Writes go in
 * set-based statements of at most WRITE_CHUNK rows; the change log's triggers (migration 210) tell the
 * lexical index, which holds every document's tags and its conversation's (tag:, the tag facet).
 */
import type { Database, Queryable } from '../db/types.ts';
import { SOURCE_TAG_ORIGIN } from './source-tags.ts';

/** Rows written per statement. */
export const WRITE_CHUNK = 10_000;

export interface TagTargets {
  docIds?: string[];
  threadIds?: string[];
}

export interface TagCountRow {
  name: string;
  documents: number;
  conversations: number;
  rules: number;
}

async function inChunks(ids: string[], fn: (part: string[]) => Promise<number>): Promise<number> {
  let n = 0;
  for (let i = 0; i < ids.length; i += WRITE_CHUNK) n += await fn(ids.slice(i, i + WRITE_CHUNK));
  return n;
}

/**
 * Gives `tag` to the active documents and the threads named; the number given now (not had before). A tag given by
 * hand that a mail flag gave already becomes the person's (origin manual): no later flag change takes it off.
 */
export async function addTag(db: Queryable, tag: string, t: TagTargets, origin = 'manual'): Promise<number> {
  const docs = await inChunks([...new Set(t.docIds ?? [])], async (ids) => {
    if (origin === 'manual') {
      await db.query(`UPDATE document_tags SET origin = 'manual' WHERE tag = $2 AND origin = $3 AND doc_id = ANY($1::uuid[])`, [ids, tag, SOURCE_TAG_ORIGIN]);
    }
    return (
      await db.query(
        `INSERT INTO document_tags (doc_id, tag, origin)
         SELECT d.doc_id, $2, $3 FROM documents d WHERE d.doc_id = ANY($1::uuid[]) AND d.is_active_version
         ON CONFLICT (doc_id, tag) DO NOTHING`,
        [ids, tag, origin],
      )
    ).rowCount;
  });
  const threads = await inChunks([...new Set(t.threadIds ?? [])], async (ids) =>
    (
      await db.query(
        `INSERT INTO thread_tags (thread_id, tag, origin)
         SELECT t.thread_id, $2, $3 FROM threads t WHERE t.thread_id = ANY($1::uuid[])
         ON CONFLICT (thread_id, tag) DO NOTHING`,
        [ids, tag, origin],
      )
    ).rowCount,
  );
  return docs + threads;
}

/** Takes `tag` off the documents and threads named; the number removed. */
export async function removeTag(db: Queryable, tag: string, t: TagTargets): Promise<number> {
  const docs = await inChunks([...new Set(t.docIds ?? [])], async (ids) =>
    (await db.query('DELETE FROM document_tags WHERE tag = $2 AND doc_id = ANY($1::uuid[])', [ids, tag])).rowCount,
  );
  const threads = await inChunks([...new Set(t.threadIds ?? [])], async (ids) =>
    (await db.query('DELETE FROM thread_tags WHERE tag = $2 AND thread_id = ANY($1::uuid[])', [ids, tag])).rowCount,
  );
  return docs + threads;
}

/** Every tag in use or given by a rule, with its counts, by name. */
export async function listTags(db: Queryable): Promise<TagCountRow[]> {
  const r = await db.query<TagCountRow>(
    `SELECT name, sum(documents)::int AS documents, sum(conversations)::int AS conversations, sum(rules)::int AS rules FROM (
       SELECT t.tag AS name, count(*) AS documents, 0 AS conversations, 0 AS rules
         FROM document_tags t JOIN documents d ON d.doc_id = t.doc_id AND d.is_active_version GROUP BY t.tag
       UNION ALL SELECT tag, 0, count(*), 0 FROM thread_tags GROUP BY tag
       UNION ALL SELECT tag, 0, 0, count(*) FROM tag_rules GROUP BY tag) x
     GROUP BY name ORDER BY name`,
  );
  return r.rows;
}

export interface TagOnRow {
  name: string;
  origin: string;
}

/** The tags of a document (its own, and its conversation's), or of a conversation. */
export async function tagsOn(db: Queryable, on: { docId?: string; threadId?: string }): Promise<{ document: TagOnRow[]; conversation: TagOnRow[] }> {
  let threadId = on.threadId ?? null;
  let document: TagOnRow[] = [];
  if (on.docId) {
    const r = await db.query<TagOnRow & { thread_id: string | null }>(
      `SELECT t.tag AS name, t.origin, NULL::text AS thread_id FROM document_tags t WHERE t.doc_id = $1::uuid
       UNION ALL SELECT NULL, NULL, d.thread_id::text FROM documents d WHERE d.doc_id = $1::uuid`,
      [on.docId],
    );
    document = r.rows.filter((x) => x.name !== null).map(({ name, origin }) => ({ name, origin })).sort((a, b) => (a.name < b.name ? -1 : 1));
    threadId ??= r.rows.find((x) => x.name === null)?.thread_id ?? null;
  }
  const conversation =
    threadId === null
      ? []
      : (await db.query<TagOnRow>('SELECT tag AS name, origin FROM thread_tags WHERE thread_id = $1::uuid ORDER BY tag', [threadId])).rows;
  return { document, conversation };
}

/** Whether a document or a thread exists (a 404 otherwise). */
export async function targetExists(db: Database, on: { docId?: string; threadId?: string }): Promise<boolean> {
  const r = on.docId
    ? await db.query('SELECT 1 FROM documents WHERE doc_id = $1::uuid', [on.docId])
    : await db.query('SELECT 1 FROM threads WHERE thread_id = $1::uuid', [on.threadId]);
  return r.rows.length > 0;
}
