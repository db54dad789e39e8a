/**
 * Forgetting: a person, a document, a source or an identifier is erased with everything derived
 * from it (docs/forget.md). Erased means deleted rows, not flags: every version of each erased
 * document, its chunks and vectors (unless another document still uses the same text), stored
 * files no other document uses, emptied threads, submissions, people with their identifiers,
 * merges, contact-sync state and relationship edges.
 *
 * Forgetting a person (or one identifier) erases the documents they sent and the ones in which
 * they are the only party besides the owner (the self person); group documents that stay lose the
 * person's entries in people[] and in their thread's participants, and the person's links. The
 * words others wrote stay as written: they are the other participants' messages.
 *
 * Everything runs in one transaction. A dry run does the same work and rolls it back, so its counts
 * are exactly what a real run would remove. Stored objects are deleted after the commit.
 */
import type { Database, Queryable } from '../db/types.ts';
import { attachmentsOfErased, attachmentsWithoutMessage, refreshMessageFacets } from '../catalog/attachments.ts';
import { chunkText } from '../catalog/chunking.ts';
import { searchableText } from '../catalog/ingest.ts';
import { canonicalIdentifier, identifierKindOf, type IdentifierKind } from '../identity/identifiers.ts';
import { resolvePeople } from '../identity/linking.ts';
import { resolvePerson } from '../relationships/people.ts';
import { readSelfSetting, SELF_SETTING_KEY } from '../relationships/self.ts';
import type { ForgetResponseT } from '../schemas/forget.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import { sha256Hex } from '../util/hash.ts';
import { isUuid } from '../util/ids.ts';
import { addBlocks, type NewBlock } from '../catalog/blocklist.ts';
import { codedError, NotFoundError } from '../util/errors.ts';
import { scrubErasedRows } from '../db/scrub.ts';
import { notAnOriginal, originalFilesOf } from '../catalog/originals.ts';

export type ForgetTarget =
  | { person_id: string }
  | { doc_id: string }
  | { source_type: string; source_account_id?: string | null }
  | { identifier: string; identifier_type?: string | null }
  /** Internal (not an API target): the attachments of messages the block list kept out. */
  | { message_ids: string[] };

/** What was (or would be) removed, as POST /v1/forget answers it (src/schemas/forget.ts; the web UI shares it). */
export type ForgetCounts = ForgetResponseT['removed'];

/** POST /v1/forget's answer but the target, which the route adds. */
export type ForgetResult = Omit<ForgetResponseT, 'target'>;

export class ForgetNotFoundError extends NotFoundError {}

export interface ForgetOptions {
  dryRun?: boolean;
  block?: boolean;
}

export interface ForgetDeps {
  db: Database;
  phoneRegion: string;
  /** Deletes a stored object (the object store); called after commit for files nothing uses any more. */
  deleteObject?: (objectKey: string) => Promise<void>;
  /** Runs after a real (not dry) forget committed: drop in-memory copies, refresh derived scores. */
  afterForget?: (result: ForgetResult) => Promise<void> | void;
  /** Self identifiers from the configuration (SELF_IDENTIFIERS), when no self person is stored. */
  selfPersonId?: () => Promise<string | null>;
}

class DryRun extends codedError('CONTROL.DRY_RUN') {
  constructor(readonly result: ForgetResult) {
    super('dry run');
  }
}

const zero = (): ForgetCounts => ({
  documents: 0, versions: 0, chunks: 0, vectors: 0, files: 0, threads: 0, people: 0, identifiers: 0,
  document_people: 0, relationship_edges: 0, submissions: 0, contact_sync_state: 0, documents_unlinked: 0,
});

interface Identifier {
  kind: string;
  value: string;
}
const idKey = (i: Identifier) => `${i.kind}\u0000${i.value}`;

/** What one forget erases, found before anything is deleted. */
interface Plan {
  /** Every version of every erased document. */
  docIds: string[];
  /** Persons erased (with the records merged into them). */
  personIds: string[];
  /** Identifiers removed from kept documents and threads (and blocked, with block: true). */
  identifiers: Identifier[];
  /** Kept documents from which these persons are unlinked. */
  unlink: { docIds: string[]; personIds: string[] };
  /** Where the forget came from, for source-level state. */
  source?: { source_type: string; source_account_id: string | null };
  /** The owner of the store, never erased as a by-product. */
  self: string | null;
}

export class ForgetService {
  constructor(private readonly deps: ForgetDeps) {}

  async forget(target: ForgetTarget, opts: ForgetOptions = {}): Promise<ForgetResult> {
    const { db } = this.deps;
    let objectKeys: string[] = [];
    let result: ForgetResult;
    // Read before the transaction: detection may query the database on its own connection (and
    // PGlite has one, held by the transaction).
    const self = await this.selfPerson(db);
    try {
      result = await db.transaction(async (tx) => {
        const plan = await this.plan(tx, target, self);
        // An erased message takes its attachments (uploaded as documents of their own) along.
        const email = await attachmentsOfErased(tx, plan.docIds);
        if (email.docIds.length > 0) {
          plan.docIds = [...new Set([...plan.docIds, ...email.docIds])];
          const erased = new Set(plan.docIds);
          plan.unlink.docIds = plan.unlink.docIds.filter((id) => !erased.has(id));
        }
        const removed = zero();
        objectKeys = await erase(tx, plan, removed, this.deps.phoneRegion, plan.self);
        // Messages that stay count the attachments that went.
        await refreshMessageFacets(tx, email.keys);
        let blocked = 0;
        if (opts.block) {
          const block: NewBlock = { identifiers: plan.identifiers, messages: email.keys };
          if (plan.source) block.source = plan.source;
          blocked = await addBlocks(tx, block);
        }
        const out: ForgetResult = { dry_run: Boolean(opts.dryRun), removed, blocked };
        if (opts.dryRun) throw new DryRun(out);
        return out;
      });
    } catch (err) {
      if (err instanceof DryRun) return err.result;
      throw err;
    }
    for (const key of objectKeys) await this.deps.deleteObject?.(key);
    // Gone from the answers is not gone from the disk: the erased rows' bytes leave the data files too.
    if (Object.values(result.removed).some((n) => n > 0)) await scrubErasedRows(db);
    await this.deps.afterForget?.(result);
    return result;
  }

  private async plan(tx: Queryable, target: ForgetTarget, self: string | null): Promise<Plan> {
    if ('message_ids' in target) {
      const docIds = await attachmentsWithoutMessage(tx, target.message_ids);
      return { docIds, personIds: [], identifiers: [], unlink: { docIds: [], personIds: [] }, self };
    }
    if ('doc_id' in target) {
      if (!isUuid(target.doc_id)) throw new ForgetNotFoundError('Document not found');
      const r = await tx.query<{ doc_id: string }>(
        `SELECT v.doc_id FROM documents d JOIN documents v
            ON v.source_type = d.source_type AND coalesce(v.source_provider, '') = coalesce(d.source_provider, '')
           AND coalesce(v.source_account_id, '') = coalesce(d.source_account_id, '') AND v.external_id = d.external_id
          WHERE d.doc_id = $1`,
        [target.doc_id],
      );
      if (r.rows.length === 0) throw new ForgetNotFoundError('Document not found');
      return { docIds: r.rows.map((x) => x.doc_id), personIds: [], identifiers: [], unlink: { docIds: [], personIds: [] }, self };
    }
    if ('source_type' in target) {
      const account = target.source_account_id ?? null;
      const r = await tx.query<{ doc_id: string }>(
        `SELECT doc_id FROM documents WHERE source_type = $1 AND ($2::text IS NULL OR source_account_id = $2)`,
        [target.source_type, account],
      );
      return {
        docIds: r.rows.map((x) => x.doc_id),
        personIds: [],
        identifiers: [],
        unlink: { docIds: [], personIds: [] },
        source: { source_type: target.source_type, source_account_id: account },
        self,
      };
    }
    if ('person_id' in target) {
      const person = await resolvePerson(tx, target.person_id);
      if (!person) throw new ForgetNotFoundError('Person not found');
      const persons = await withMergedRecords(tx, [person]);
      const ids = await tx.query<Identifier>(
        'SELECT kind, value_canonical AS value FROM person_identifiers WHERE person_id = ANY($1::uuid[])',
        [persons],
      );
      return this.planForPeople(tx, persons, ids.rows, self, true);
    }
    // One identifier: the documents where it appears, judged by their people[] entries.
    const kind = identifierKindOf(target.identifier_type ?? null, target.identifier);
    const canon = kind ? canonicalIdentifier(kind as IdentifierKind, target.identifier, this.deps.phoneRegion) : null;
    if (!canon) throw new ForgetNotFoundError('Identifier not recognised (give identifier_type: email, phone, chatapp, social)');
    const owner = await tx.query<{ person_id: string }>(
      'SELECT person_id FROM person_identifiers WHERE kind = $1 AND value_canonical = $2',
      [canon.kind, canon.value],
    );
    if (owner.rows.length === 0) throw new ForgetNotFoundError('No person has this identifier');
    const ownerId = owner.rows[0].person_id;
    const remaining = await tx.query<{ n: number }>(
      'SELECT count(*)::int AS n FROM person_identifiers WHERE person_id = $1 AND NOT (kind = $2 AND value_canonical = $3)',
      [ownerId, canon.kind, canon.value],
    );
    // The identifier was all the person had: forgetting it is forgetting them.
    const wholePerson = remaining.rows[0].n === 0;
    const persons = wholePerson ? await withMergedRecords(tx, [ownerId]) : [ownerId];
    return this.planForPeople(tx, persons, [canon], self, wholePerson);
  }

  /**
   * Documents linked to the persons: erased when one of the target identifiers sent it (or is its
   * contact card) or when no one but the owner takes part besides them; otherwise kept and unlinked.
   * `wholePerson` false means only some identifiers go: documents reached through the person's
   * other identifiers are left alone.
   */
  private async planForPeople(
    tx: Queryable,
    persons: string[],
    identifiers: Identifier[],
    self: string | null,
    wholePerson: boolean,
  ): Promise<Plan> {
    const targets = new Set(identifiers.map(idKey));
    const selfIds = self
      ? new Set(
          (await tx.query<Identifier>('SELECT kind, value_canonical AS value FROM person_identifiers WHERE person_id = $1', [self])).rows.map(
            idKey,
          ),
        )
      : new Set<string>();
    const linked = await tx.query<{
      doc_id: string;
      identity: string;
      people: DocumentPersonT[];
      roles: string[];
      others: string[];
    }>(
      `SELECT d.doc_id, concat_ws(chr(31), d.source_type, coalesce(d.source_provider, ''), coalesce(d.source_account_id, ''), d.external_id) AS identity,
              d.people,
              (SELECT array_agg(DISTINCT dp.role) FROM document_people dp WHERE dp.doc_id = d.doc_id AND dp.person_id = ANY($1::uuid[])) AS roles,
              coalesce((SELECT array_agg(DISTINCT dp.person_id::text) FROM document_people dp
                 WHERE dp.doc_id = d.doc_id AND NOT dp.person_id = ANY($1::uuid[]) AND dp.person_id IS DISTINCT FROM $2::uuid), '{}') AS others
         FROM documents d WHERE d.doc_id IN (SELECT doc_id FROM document_people WHERE person_id = ANY($1::uuid[]))`,
      [persons, self],
    );
    const eraseIdentities = new Set<string>();
    const touched: { doc_id: string; identity: string }[] = [];
    for (const row of linked.rows) {
      const entries = resolvePeople(row.people ?? [], this.deps.phoneRegion);
      const mine = entries.filter((e) => targets.has(idKey(e)));
      if (mine.length === 0 && !wholePerson) continue; // reached through another identifier of theirs
      touched.push(row);
      let erase: boolean;
      if (mine.length > 0) {
        const others = new Set(entries.filter((e) => !targets.has(idKey(e)) && !selfIds.has(idKey(e))).map(idKey));
        erase = mine.some((e) => e.role === 'sender' || e.role === 'contact') || others.size === 0;
      } else {
        erase = (row.roles ?? []).some((r) => r === 'sender' || r === 'contact') || row.others.length === 0;
      }
      if (erase) eraseIdentities.add(row.identity);
    }
    const docIds = eraseIdentities.size
      ? (
          await tx.query<{ doc_id: string }>(
            `SELECT doc_id FROM documents
              WHERE concat_ws(chr(31), source_type, coalesce(source_provider, ''), coalesce(source_account_id, ''), external_id) = ANY($1::text[])`,
            [[...eraseIdentities]],
          )
        ).rows.map((r) => r.doc_id)
      : [];
    const erased = new Set(docIds);
    const kept = [...new Set(touched.filter((t) => !erased.has(t.doc_id)).map((t) => t.doc_id))];
    return {
      docIds,
      personIds: wholePerson ? persons : [],
      identifiers,
      // A person who keeps other identifiers stays linked to documents in which they still appear.
      unlink: { docIds: kept, personIds: wholePerson ? persons : [] },
      self,
    };
  }

  private async selfPerson(tx: Queryable): Promise<string | null> {
    const stored = await readSelfSetting(tx);
    if (stored) return resolvePerson(tx, stored.stored_person_id);
    return (await this.deps.selfPersonId?.()) ?? null;
  }
}

/** The persons plus every record merged into them (directly or through a chain). */
async function withMergedRecords(tx: Queryable, persons: string[]): Promise<string[]> {
  const r = await tx.query<{ person_id: string }>(
    `WITH RECURSIVE merged(person_id) AS (
        SELECT unnest($1::uuid[])
        UNION
        SELECT p.person_id FROM people p JOIN merged m ON p.merged_into = m.person_id
      ) SELECT person_id FROM merged`,
    [persons],
  );
  return r.rows.map((x) => x.person_id);
}

/** People entries whose identifier is one of `targets` are dropped. */
function withoutIdentifiers(people: unknown, targets: Set<string>, region: string): { people: unknown[]; changed: boolean } {
  if (!Array.isArray(people)) return { people: [], changed: false };
  const kept = people.filter((p) => {
    if (!p || typeof p !== 'object' || typeof (p as DocumentPersonT).identifier !== 'string') return true;
    const [r] = resolvePeople([p as DocumentPersonT], region);
    return !r || !targets.has(idKey(r));
  });
  return { people: kept, changed: kept.length !== people.length };
}

/** Deletes what the plan names and counts it; returns object keys to delete after commit. */
async function erase(tx: Queryable, plan: Plan, removed: ForgetCounts, region: string, self: string | null): Promise<string[]> {
  const { docIds } = plan;
  const targets = new Set(plan.identifiers.map(idKey));
  let objectKeys: string[] = [];
  let touchedPeople: string[] = [];

  if (docIds.length > 0) {
    const docs = await tx.query<{ doc_id: string; text: string; metadata: Record<string, unknown>; thread_id: string | null; identity: string }>(
      `SELECT doc_id, text, metadata, thread_id,
              concat_ws(chr(31), source_type, coalesce(source_provider, ''), coalesce(source_account_id, ''), external_id) AS identity
         FROM documents WHERE doc_id = ANY($1::uuid[])`,
      [docIds],
    );
    removed.versions = docs.rows.length;
    removed.documents = new Set(docs.rows.map((d) => d.identity)).size;
    // Chunks: those linked now, and those of superseded versions (which lost their links but kept
    // their chunks for reuse), found again by hashing the versions' texts the way ingestion chunks them.
    const shas = new Set<string>();
    for (const d of docs.rows) {
      for (const c of chunkText(searchableText(d.text, d.metadata?.attachments))) shas.add(sha256Hex(c.text));
    }
    const chunkIds = (
      await tx.query<{ chunk_id: string }>(
        `SELECT chunk_id FROM chunk_documents WHERE doc_id = ANY($1::uuid[])
         UNION SELECT chunk_id FROM chunks WHERE text_sha256 = ANY($2::text[])`,
        [docIds, [...shas]],
      )
    ).rows.map((r) => r.chunk_id);
    const fileShas = (
      await tx.query<{ file_sha256: string }>('SELECT DISTINCT file_sha256 FROM document_files WHERE doc_id = ANY($1::uuid[])', [docIds])
    ).rows.map((r) => r.file_sha256);
    // The messages' originals (src/catalog/originals.ts): their links go with the versions (ON DELETE CASCADE).
    fileShas.push(...(await originalFilesOf(tx, docIds)).filter((s) => !fileShas.includes(s)));
    const threadIds = [...new Set(docs.rows.map((d) => d.thread_id).filter((t): t is string => !!t))];

    const links = await tx.query<{ person_id: string }>('SELECT person_id FROM document_people WHERE doc_id = ANY($1::uuid[])', [docIds]);
    removed.document_people += links.rows.length;
    touchedPeople = [...new Set(links.rows.map((r) => r.person_id))];
    // Submissions name the document by result and by source id (failed ones have no result).
    const sources = [...new Set(docs.rows.map((d) => d.identity))].map((k) => k.split('\u001f'));
    removed.submissions += (
      await tx.query(
        `DELETE FROM ingest_submissions s WHERE s.result_doc_id = ANY($1::uuid[])
            OR (s.source_type, s.source_id) IN (SELECT * FROM unnest($2::text[], $3::text[]))`,
        [docIds, sources.map((k) => k[0]), sources.map((k) => k[3])],
      )
    ).rowCount;
    // Versions point at each other (previous_version_id): one statement removes them together.
    await tx.query('DELETE FROM documents WHERE doc_id = ANY($1::uuid[])', [docIds]);

    if (chunkIds.length > 0) {
      const orphan = await tx.query<{ chunk_id: string; vectors: number }>(
        `SELECT c.chunk_id,
                ((c.embedding_vector IS NOT NULL)::int + (SELECT count(*)::int FROM chunk_embeddings e WHERE e.chunk_id = c.chunk_id)) AS vectors
           FROM chunks c WHERE c.chunk_id = ANY($1::uuid[])
            AND NOT EXISTS (SELECT 1 FROM chunk_documents cd WHERE cd.chunk_id = c.chunk_id)`,
        [chunkIds],
      );
      const ids = orphan.rows.map((r) => r.chunk_id);
      removed.vectors += orphan.rows.reduce((n, r) => n + r.vectors, 0);
      removed.chunks += (await tx.query('DELETE FROM chunks WHERE chunk_id = ANY($1::uuid[])', [ids])).rowCount;
    }
    if (fileShas.length > 0) {
      const gone = await tx.query<{ object_key: string }>(
        `DELETE FROM files f WHERE f.file_sha256 = ANY($1::text[])
            AND NOT EXISTS (SELECT 1 FROM document_files df WHERE df.file_sha256 = f.file_sha256)
            AND ${notAnOriginal('f')}
         RETURNING f.object_key`,
        [fileShas],
      );
      removed.files += gone.rowCount;
      objectKeys = gone.rows.map((r) => r.object_key);
    }
    // Conversation links of erased email (src/catalog/email-threads.ts): their Message-IDs go.
    const messageIds = docs.rows.map((d) => d.metadata?.message_id).filter((m): m is string => typeof m === 'string');
    if (messageIds.length > 0) {
      await tx.query(
        `DELETE FROM email_thread_messages m WHERE m.message_id = ANY($1::text[])
            AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.metadata->>'message_id' = m.message_id)`,
        [messageIds],
      );
    }
    if (threadIds.length > 0) {
      removed.threads += (
        await tx.query(
          `DELETE FROM threads t WHERE t.thread_id = ANY($1::uuid[])
              AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.thread_id = t.thread_id)`,
          [threadIds],
        )
      ).rowCount;
      await tx.query(
        `DELETE FROM email_thread_messages m WHERE m.thread_id = ANY($1::uuid[])
            AND NOT EXISTS (SELECT 1 FROM threads t WHERE t.thread_id = m.thread_id)`,
        [threadIds],
      );
    }
  }

  // Kept documents: the person's entries and links go.
  if (plan.unlink.docIds.length > 0) {
    const rows = await tx.query<{ doc_id: string; people: unknown; thread_id: string | null }>(
      'SELECT doc_id, people, thread_id FROM documents WHERE doc_id = ANY($1::uuid[])',
      [plan.unlink.docIds],
    );
    for (const row of rows.rows) {
      const { people, changed } = withoutIdentifiers(row.people, targets, region);
      if (changed) await tx.query('UPDATE documents SET people = $2 WHERE doc_id = $1', [row.doc_id, JSON.stringify(people)]);
    }
    removed.documents_unlinked = rows.rows.length;
    if (plan.unlink.personIds.length > 0) {
      removed.document_people += (
        await tx.query('DELETE FROM document_people WHERE doc_id = ANY($1::uuid[]) AND person_id = ANY($2::uuid[])', [
          plan.unlink.docIds,
          plan.unlink.personIds,
        ])
      ).rowCount;
    }
    const threads = [...new Set(rows.rows.map((r) => r.thread_id).filter((t): t is string => !!t))];
    if (threads.length > 0) {
      const t = await tx.query<{ thread_id: string; participants: unknown }>(
        'SELECT thread_id, participants FROM threads WHERE thread_id = ANY($1::uuid[])',
        [threads],
      );
      for (const row of t.rows) {
        const { people, changed } = withoutIdentifiers(row.participants, targets, region);
        if (changed) {
          await tx.query('UPDATE threads SET participants = $2, participant_count = $3, updated_at = now() WHERE thread_id = $1', [
            row.thread_id,
            JSON.stringify(people),
            people.length,
          ]);
        }
      }
    }
  }

  // People: the targets, and anyone known only from the erased documents (no other document, no
  // contact card): they were derived from what is gone.
  let persons = plan.personIds;
  const candidates = touchedPeople.filter((p) => p !== self && !persons.includes(p));
  if (candidates.length > 0) {
    const orphans = await tx.query<{ person_id: string }>(
      `SELECT p.person_id FROM people p
        WHERE p.person_id = ANY($1::uuid[]) AND p.merged_into IS NULL
          AND NOT EXISTS (SELECT 1 FROM document_people dp WHERE dp.person_id = p.person_id)
          AND NOT EXISTS (SELECT 1 FROM people_source_map m WHERE m.person_id = p.person_id AND NOT m.deleted)
          AND NOT EXISTS (SELECT 1 FROM system_settings s WHERE s.key = $2 AND s.value->>'self_person_id' = p.person_id::text)`,
      [candidates, SELF_SETTING_KEY],
    );
    persons = [...persons, ...(await withMergedRecords(tx, orphans.rows.map((r) => r.person_id)))];
  }
  if (plan.identifiers.length > 0 && plan.personIds.length === 0) {
    // One identifier of a person who keeps others: only that identifier goes.
    removed.identifiers += (
      await tx.query(
        `DELETE FROM person_identifiers WHERE (kind, value_canonical) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
        [plan.identifiers.map((i) => i.kind), plan.identifiers.map((i) => i.value)],
      )
    ).rowCount;
  }
  if (persons.length > 0) await erasePeople(tx, [...new Set(persons)], removed);

  if (plan.source) {
    removed.contact_sync_state += (
      await tx.query('DELETE FROM source_change_tokens WHERE source = $1', [plan.source.source_type])
    ).rowCount;
  }
  return objectKeys;
}

async function erasePeople(tx: Queryable, persons: string[], removed: ForgetCounts): Promise<void> {
  removed.relationship_edges += (
    await tx.query('DELETE FROM relationship_edges WHERE person_id = ANY($1::uuid[]) OR self_person_id = ANY($1::uuid[])', [persons])
  ).rowCount;
  removed.document_people += (await tx.query('DELETE FROM document_people WHERE person_id = ANY($1::uuid[])', [persons])).rowCount;
  removed.identifiers += (await tx.query('DELETE FROM person_identifiers WHERE person_id = ANY($1::uuid[])', [persons])).rowCount;
  removed.contact_sync_state += (await tx.query('DELETE FROM people_source_map WHERE person_id = ANY($1::uuid[])', [persons])).rowCount;
  await tx.query('DELETE FROM person_addresses WHERE person_id = ANY($1::uuid[])', [persons]);
  await tx.query('DELETE FROM person_urls WHERE person_id = ANY($1::uuid[])', [persons]);
  await tx.query('DELETE FROM person_merges WHERE target_person_id = ANY($1::uuid[]) OR source_person_id = ANY($1::uuid[])', [persons]);
  await tx.query(`DELETE FROM system_settings WHERE key = $1 AND value->>'self_person_id' = ANY($2::text[])`, [SELF_SETTING_KEY, persons]);
  // Merge chains point at each other (merged_into): cut them first, then delete the rows together.
  await tx.query('UPDATE people SET merged_into = NULL WHERE person_id = ANY($1::uuid[])', [persons]);
  removed.people += (await tx.query('DELETE FROM people WHERE person_id = ANY($1::uuid[])', [persons])).rowCount;
}
