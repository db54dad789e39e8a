/**
 * The catalog side of calendar ingest: documents through the catalog's batch insertion (versions, people,
 * chunks, block list as for any document), a copy older than the stored version kept out, and each stored
 * event's occurrences written to `calendar_occurrences` (replacing what that document version had, so a
 * re-import later moves the window along).
 */
import { batchKeyOf, type Catalog } from '../catalog/catalog.ts';
import { PrepareError, prepareIngest } from '../catalog/prepare.ts';
import type { CatalogDocumentRequest } from '../catalog/types.ts';
import type { CalendarIngestItemT, CalendarIngestResponseT } from '../schemas/calendar.ts';

type Result = CalendarIngestResponseT['results'][number];

interface StoredVersion {
  sequence: number;
  lastModified: string | null;
}

/** Whether `incoming` is older than the stored version: a lower SEQUENCE, or the same and an earlier LAST-MODIFIED. */
export function isStale(incoming: StoredVersion, stored: StoredVersion | undefined): boolean {
  if (!stored) return false;
  if (incoming.sequence !== stored.sequence) return incoming.sequence < stored.sequence;
  if (incoming.lastModified && stored.lastModified) return incoming.lastModified < stored.lastModified;
  return false;
}

const versionOf = (m: Record<string, unknown> | null | undefined): StoredVersion => {
  const seq = Number(m?.sequence);
  return { sequence: Number.isFinite(seq) ? seq : 0, lastModified: typeof m?.last_modified === 'string' ? m.last_modified : null };
};

const identityKey = (r: { source_type: string; source_provider?: string | null; source_account_id?: string | null; external_id?: string | null }) =>
  [r.source_type, r.source_provider ?? '', r.source_account_id ?? '', r.external_id ?? ''].join('\u001f');

export async function ingestCalendar(catalog: Catalog, items: CalendarIngestItemT[]): Promise<CalendarIngestResponseT> {
  const results: Result[] = [];
  const prepared: { index: number; request: CatalogDocumentRequest }[] = [];
  items.forEach((item, index) => {
    try {
      prepared.push({ index, request: prepareIngest(item.document) });
    } catch (err) {
      if (!(err instanceof PrepareError)) throw err;
      results.push({ index, outcome: 'failed', doc_id: null, version_number: null, occurrences: 0, error: err.message });
    }
  });

  // The stored versions of these identities, to keep an older copy (an old export) from replacing a newer one.
  const stored = new Map<string, StoredVersion>();
  if (prepared.length) {
    const r = await catalog.db.query<{ source_type: string; source_provider: string | null; source_account_id: string | null; external_id: string; metadata: Record<string, unknown> }>(
      `SELECT source_type, source_provider, source_account_id, external_id, metadata FROM documents
        WHERE is_active_version AND deleted_at IS NULL AND source_type = ANY($1::text[]) AND external_id = ANY($2::text[])`,
      [[...new Set(prepared.map((p) => p.request.source_type))], prepared.map((p) => p.request.external_id ?? p.request.source_id)],
    );
    for (const row of r.rows) stored.set(identityKey(row), versionOf(row.metadata));
  }
  const fresh = prepared.filter((p) => {
    const key = identityKey({ ...p.request, external_id: p.request.external_id ?? p.request.source_id });
    if (!isStale(versionOf(p.request.metadata), stored.get(key))) return true;
    results.push({ index: p.index, outcome: 'stale', doc_id: null, version_number: null, occurrences: 0, error: null });
    return false;
  });

  const batch = fresh.length ? await catalog.ingestBatch(fresh, batchKeyOf(fresh.map((p) => p.request))) : null;
  // An unchanged document whose stored occurrences are the same (count, first, last) keeps them as they are.
  const unchangedIds = (batch?.items ?? []).flatMap((o) => (o.ok && o.result!.duplicate && !o.result!.skipped ? [o.result!.doc_id] : []));
  const storedOcc = new Map<string, string>();
  if (unchangedIds.length) {
    const r = await catalog.db.query<{ doc_id: string; n: number; first: Date; last: Date }>(
      `SELECT doc_id::text AS doc_id, count(*)::int AS n, min(starts_at) AS first, max(starts_at) AS last
         FROM calendar_occurrences WHERE doc_id = ANY($1::uuid[]) GROUP BY doc_id`,
      [unchangedIds],
    );
    for (const x of r.rows) storedOcc.set(x.doc_id, `${x.n}|${new Date(x.first).toISOString()}|${new Date(x.last).toISOString()}`);
  }
  const occDocs: string[] = [];
  const occStarts: string[] = [];
  const occEnds: string[] = [];
  const refreshed: string[] = [];
  for (const o of batch?.items ?? []) {
    if (!o.ok) {
      results.push({ index: o.index, outcome: 'failed', doc_id: null, version_number: null, occurrences: 0, error: o.error!.message });
      continue;
    }
    const r = o.result!;
    if (r.skipped) {
      results.push({ index: o.index, outcome: 'skipped', doc_id: null, version_number: null, occurrences: 0, error: null });
      continue;
    }
    const occ = dedupe(items[o.index].occurrences ?? []);
    const summary = occ.length ? `${occ.length}|${occ.reduce((m, x) => (x.start < m ? x.start : m), occ[0].start)}|${occ.reduce((m, x) => (x.start > m ? x.start : m), occ[0].start)}` : undefined;
    if (r.duplicate && storedOcc.get(r.doc_id) === summary) {
      results.push({ index: o.index, outcome: 'unchanged', doc_id: r.doc_id, version_number: r.version_number, occurrences: occ.length, error: null });
      continue;
    }
    refreshed.push(r.doc_id);
    for (const x of occ) {
      occDocs.push(r.doc_id);
      occStarts.push(x.start);
      occEnds.push(x.end);
    }
    results.push({ index: o.index, outcome: r.duplicate ? 'unchanged' : 'stored', doc_id: r.doc_id, version_number: r.version_number, occurrences: occ.length, error: null });
  }
  if (refreshed.length) {
    await catalog.db.transaction(async (tx) => {
      await tx.query(`DELETE FROM calendar_occurrences WHERE doc_id = ANY($1::uuid[])`, [refreshed]);
      if (occDocs.length) {
        await tx.query(
          `INSERT INTO calendar_occurrences (doc_id, starts_at, ends_at)
           SELECT d, s, e FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[]) AS t(d, s, e)
           ON CONFLICT DO NOTHING`,
          [occDocs, occStarts, occEnds],
        );
      }
    });
  }
  results.sort((a, b) => a.index - b.index);
  const count = (k: Result['outcome']) => results.filter((x) => x.outcome === k).length;
  return {
    stored: count('stored'),
    unchanged: count('unchanged'),
    stale: count('stale'),
    skipped: count('skipped'),
    failed: count('failed'),
    occurrences: occDocs.length,
    results,
  };
}

function dedupe(xs: { start: string; end: string }[]): { start: string; end: string }[] {
  const seen = new Set<string>();
  const out: { start: string; end: string }[] = [];
  for (const x of xs) {
    const s = new Date(x.start).toISOString();
    if (seen.has(s)) continue;
    seen.add(s);
    const e = new Date(x.end).toISOString();
    out.push({ start: s, end: e < s ? s : e });
  }
  return out;
}
