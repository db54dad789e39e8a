/**
 * Machine mail and the threads it makes (issue 35): what "busiest" lists (GET /v1/context/general, MCP
 * recent_activity) leave out unless asked for. A document is automated when
 *
 *  - it is email whose headers say a machine sent it: List-Unsubscribe, List-Id, Precedence bulk/list/junk,
 *    Auto-Submitted other than "no" (the collectors' metadata fields, else the raw `headers` object), or the
 *    collector flagged it as noise (metadata.is_noise);
 *  - its sender's address is no-reply style (src/mail/noise.ts BULK_SENDER_WORDS);
 *  - or its sender is a person the relationship job marked automated (features.automated in every edge that
 *    names them: machine headers, or one-way traffic never answered; src/relationships/recompute.ts).
 *
 * A thread is automated when every document of it (in the window asked about) is.
 */

/** A header of email document `d`: the collector's metadata field, else the raw `headers` object (any case). */
function header(d: string, field: string, name: string): string {
  return `coalesce(${d}.metadata->>'${field}', (SELECT h.v FROM jsonb_each_text(CASE WHEN jsonb_typeof(${d}.metadata->'headers') = 'object'
      THEN ${d}.metadata->'headers' ELSE '{}'::jsonb END) AS h(k, v) WHERE lower(h.k) = '${name}' LIMIT 1))`;
}

/**
 * The CTE `automated_people(pid)`: persons every relationship edge of which marks them automated, and
 * everyone merged into them (document links may still name a merged id). Needs WITH RECURSIVE.
 */
export const AUTOMATED_PEOPLE_CTE = `automated_roots AS (
    SELECT person_id FROM relationship_edges GROUP BY person_id
    HAVING bool_and(jsonb_typeof(edge_features->'automated') = 'array' AND jsonb_array_length(edge_features->'automated') > 0)
  ),
  automated_people(pid) AS (
    SELECT person_id FROM automated_roots
    UNION
    SELECT p.person_id FROM people p JOIN automated_people a ON p.merged_into = a.pid
  )`;

/**
 * SQL: document `d` (a documents row alias) is automated. `bulkWords` is the placeholder of a text[] parameter
 * holding BULK_SENDER_WORDS; the query must define AUTOMATED_PEOPLE_CTE.
 */
export function automatedDocumentSql(d: string, bulkWords: string): string {
  return `((${d}.source_type IN ('email', 'email_local') AND (
        coalesce(${d}.metadata->>'is_noise', '') = 'true'
        OR nullif(${d}.metadata->>'list_unsubscribe', '') IS NOT NULL
        OR trim(coalesce(${header(d, 'list_unsubscribe', 'list-unsubscribe')}, '')) <> ''
        OR lower(trim(coalesce(${header(d, 'precedence', 'precedence')}, ''))) IN ('bulk', 'list', 'junk')
        OR lower(trim(coalesce(${header(d, 'auto_submitted', 'auto-submitted')}, 'no'))) NOT IN ('no', '')
        OR trim(coalesce(${header(d, 'list_id', 'list-id')}, '')) <> ''
        OR EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(${d}.people) = 'array' THEN ${d}.people ELSE '[]'::jsonb END) AS e
                    WHERE e->>'role' = 'sender'
                      AND EXISTS (SELECT 1 FROM unnest(${bulkWords}::text[]) AS w(word)
                                   WHERE strpos(lower(coalesce(e->>'identifier', '')), w.word) > 0))))
     OR EXISTS (SELECT 1 FROM document_people adp WHERE adp.doc_id = ${d}.doc_id AND adp.role = 'sender'
                   AND adp.person_id IN (SELECT pid FROM automated_people)))`;
}
