-- Mailing lists are lists, not people (issue 40, item 4). A person row that is a mailing list's address (its
-- posting address, or its bounce address `linux-mips-owner@vger.kernel.org`) carries the list's id
-- (`linux-mips.vger.kernel.org`, the List-Id's identifier); the People page, the relationship ranking, "gone
-- quiet", self detection, the search's person facet and conversation participants leave such rows out, and the
-- search's list facet and `list:` name them. The catalog sets it at ingest from people[].metadata.list (the email
-- collectors mark a list's address so: src/agent/collectors/email/mail-list.ts); what was stored before is
-- reclassified here from what it already holds.
ALTER TABLE people ADD COLUMN list_id text;
CREATE INDEX people_lists ON people (list_id) WHERE list_id IS NOT NULL;

-- Bounce addresses: owner-NAME@, NAME-owner@, NAME-bounces(+…)@, NAME-request@ (the list NAME@domain).
UPDATE people p SET list_id = x.list_id
  FROM (SELECT DISTINCT ON (pi.person_id) pi.person_id,
               replace(CASE WHEN pi.value_canonical ~ '^owner-'
                            THEN regexp_replace(pi.value_canonical, '^owner-([^@+]+)(\+[^@]*)?@', '\1@')
                            ELSE regexp_replace(pi.value_canonical, '^(.+)-(owner|bounces|bounce|request)(\+[^@]*)?@', '\1@') END,
                       '@', '.') AS list_id
          FROM person_identifiers pi
         WHERE pi.kind = 'email' AND pi.value_canonical ~ '^(owner-[^@+]+|.+-(owner|bounces|bounce|request))(\+[^@]*)?@'
         ORDER BY pi.person_id, pi.value_canonical) x
 WHERE p.person_id = x.person_id AND p.list_id IS NULL;

-- Addresses named like a list ("open list:MIPS <linux-mips@vger.kernel.org>", "open list", as get_maintainer.pl writes them).
UPDATE people p SET list_id = x.list_id
  FROM (SELECT DISTINCT ON (pi.person_id) pi.person_id, replace(pi.value_canonical, '@', '.') AS list_id
          FROM person_identifiers pi JOIN people q ON q.person_id = pi.person_id
         WHERE pi.kind = 'email'
           AND q.display_name ~* '^\s*(((open|moderated|closed|subscribers?[- ]only)\s+list\s*(:|$))|list\s*:)'
         ORDER BY pi.person_id, pi.priority, pi.value_canonical) x
 WHERE p.person_id = x.person_id AND p.list_id IS NULL;

-- The posting address of every List-Id stored mail names (`<linux-mips.vger.kernel.org>` -> linux-mips@vger.kernel.org).
UPDATE people p SET list_id = x.list_id
  FROM (SELECT DISTINCT ON (pi.person_id) pi.person_id, l.list_id
          FROM (SELECT DISTINCT lower(coalesce(substring(d.metadata->>'list_id' from '<([^<>]+)>'), btrim(d.metadata->>'list_id'))) AS list_id
                  FROM documents d
                 WHERE d.source_type IN ('email', 'email_local') AND coalesce(d.metadata->>'list_id', '') <> '') l
          JOIN person_identifiers pi
            ON pi.kind = 'email' AND pi.value_canonical = regexp_replace(l.list_id, '^([^.@[:space:]]+)\.', '\1@')
         WHERE l.list_id ~ '^[^.@[:space:]]+\.[^@[:space:]]+\.[^@[:space:]]+$'
         ORDER BY pi.person_id, l.list_id) x
 WHERE p.person_id = x.person_id AND p.list_id IS NULL;

-- A list is nobody's relationship.
DELETE FROM relationship_edges e USING people p
 WHERE (p.person_id = e.person_id OR p.person_id = e.self_person_id) AND p.list_id IS NOT NULL;
