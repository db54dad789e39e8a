/**
 * The search filters and the query's conditions, evaluated on the per-document columns: the
 * selective filters (person, thread, a list of documents) as the ascending list of slots they
 * allow, the others as a test on a slot.
 */
import { passagesOf, slotOf, type IndexColumns } from './columns.ts';
import { phraseDocs, termDocs } from './positions.ts';
import type { DocCondition, IndexFilter, QueryConstraints } from './types.ts';

/** The values in both ascending lists. */
export function intersect(a: Int32Array, b: Int32Array): Int32Array {
  const out = new Int32Array(Math.min(a.length, b.length));
  let n = 0;
  for (let i = 0, j = 0; i < a.length && j < b.length; ) {
    if (a[i] < b[j]) i++;
    else if (a[i] > b[j]) j++;
    else {
      out[n++] = a[i];
      i++;
      j++;
    }
  }
  return out.subarray(0, n);
}

/** Whether a filter sets no condition at all. */
export const isEmptyFilter = (f: IndexFilter): boolean => Object.values(f).every((v) => v === undefined);

/**
 * The documents a selective filter allows, ascending, live ones only: those of the `person`
 * filter (linked people or identifiers as written), else those of the thread; null for filters
 * that are not selective. The predicate below then leaves that filter out.
 */
export function restriction(c: IndexColumns, f: IndexFilter): Int32Array | null {
  const base = selective(c, f);
  if (f.docIds === undefined) return base;
  const slots: number[] = [];
  for (const id of new Set(f.docIds)) {
    const d = slotOf(c, id);
    if (d !== undefined && c.dAlive[d] === 1) slots.push(d);
  }
  const only = Int32Array.from(slots).sort();
  return base === null ? only : intersect(base, only);
}

function selective(c: IndexColumns, f: IndexFilter): Int32Array | null {
  let lists: Int32Array[];
  if (f.person) {
    lists = [];
    for (const p of f.person.personIds) {
      const code = c.persons.find(p);
      if (code !== undefined) lists.push(c.personDocs.get(code));
    }
    for (const v of f.person.identifiers) {
      const code = c.identifiers.find(v);
      if (code !== undefined) lists.push(c.identDocs.get(code));
    }
  } else if (f.threadId !== undefined) {
    const code = c.threads.find(f.threadId);
    lists = code === undefined ? [] : [c.threadDocs.get(code)];
  } else {
    return null;
  }
  let n = 0;
  for (const l of lists) n += l.length;
  const out = new Int32Array(n);
  let m = 0;
  const { dAlive } = c;
  for (const l of lists) for (let i = 0; i < l.length; i++) if (dAlive[l[i]] === 1) out[m++] = l[i];
  const slots = out.subarray(0, m).sort();
  if (lists.length <= 1) return slots;
  let u = 0;
  for (let i = 0; i < m; i++) if (u === 0 || slots[i] !== slots[u - 1]) slots[u++] = slots[i];
  return slots.subarray(0, u);
}

/**
 * The filter's remaining conditions as a test on a document slot (`person`, and `threadId` when
 * it made the restriction, are left to `restriction`); values the index has never seen match nothing.
 */
export function filterPredicate(c: IndexColumns, f: IndexFilter): (d: number) => boolean {
  // -1: any source; otherwise the codes allowed (a type the index has never seen matches nothing).
  const allowed = f.sourceTypes ?? (f.sourceType === undefined ? undefined : [f.sourceType]);
  const sources = allowed === undefined ? null : new Set(allowed.map((t) => c.sources.find(t)).filter((s) => s !== undefined));
  const leftOut = new Set((f.notSourceTypes ?? []).map((t) => c.sources.find(t)).filter((s) => s !== undefined));
  const thread = f.threadId === undefined || !f.person ? -1 : (c.threads.find(f.threadId) ?? -2);
  const att = f.hasAttachments === undefined ? -1 : f.hasAttachments ? 1 : 0;
  const start = f.startMicros ?? -Infinity;
  const end = f.endMicros ?? Infinity;
  const endExclusive = f.endExclusive === true && f.endMicros !== undefined;
  const { dSource, dAtt, dThread, dTs, dUuid } = c;
  const occurring = f.occurringDocs && f.occurringDocs.size > 0 ? f.occurringDocs : null;
  return (d) =>
    (sources === null || sources.has(dSource[d])) &&
    (leftOut.size === 0 || !leftOut.has(dSource[d])) &&
    (att === -1 || dAtt[d] === att) &&
    (thread === -1 || dThread[d] === thread) &&
    ((dTs[d] >= start && (endExclusive ? dTs[d] < end : dTs[d] <= end)) || (occurring !== null && occurring.has(dUuid[d]!)));
}

/**
 * The passages (a chunk of a live document) of every document the filter allows, all of its
 * conditions applied, when there are at most `max` of them; null for no filter, or more. The
 * vector leg ranks these exactly in memory (vector-memory.ts) instead of walking the HNSW graph
 * until enough rows pass the filter, which cost 45 CPU-ms on PostgreSQL and 2.3 s on PGlite for a
 * two-month range at 100,000 documents (docs/BENCHMARKS.md).
 */
export function allowedPassages(c: IndexColumns, filter: IndexFilter, max: number): { chunkIds: string[]; docIds: string[] } | null {
  if (isEmptyFilter(filter)) return null;
  const restricted = restriction(c, filter);
  const pass = filterPredicate(c, filter);
  const { dAlive, dUuid, pChunk } = c;
  const chunkIds: string[] = [];
  const docIds: string[] = [];
  const take = (d: number): boolean => {
    if (dAlive[d] === 0 || !pass(d)) return true;
    const pids = passagesOf(c, d);
    if (chunkIds.length + pids.length > max) return false;
    for (let i = 0; i < pids.length; i++) {
      const pid = pids[i];
      chunkIds.push(pChunk[pid]);
      docIds.push(dUuid[d]!);
    }
    return true;
  };
  if (restricted !== null) {
    for (let j = 0; j < restricted.length; j++) if (!take(restricted[j])) return null;
  } else {
    for (let d = 0; d < c.docCount; d++) if (!take(d)) return null;
  }
  return { chunkIds, docIds };
}

/** Documents (slots, possibly repeated or dead) for which a condition holds. */
function conditionDocs(c: IndexColumns, cond: DocCondition): number[] {
  const out: number[] = [];
  if (cond.kind === 'terms') {
    for (const t of new Set(cond.terms)) termDocs(c, t, cond.title === true, out);
  } else if (cond.kind === 'phrase') {
    if (cond.terms.length === 1) termDocs(c, cond.terms[0].term, cond.title === true, out);
    else phraseDocs(c, cond.terms, cond.title === true, out);
  } else {
    const lists: Int32Array[] = [];
    if (cond.role === undefined) {
      for (const p of cond.personIds) {
        const code = c.persons.find(p);
        if (code !== undefined) lists.push(c.personDocs.get(code));
      }
      for (const v of cond.identifiers) {
        const code = c.identifiers.find(v);
        if (code !== undefined) lists.push(c.identDocs.get(code));
      }
    } else {
      const r = cond.role === 'sender' ? 's' : 'r';
      for (const v of [...cond.personIds, ...cond.identifiers]) {
        const code = c.roleKeys.find(`${r}:${v}`);
        if (code !== undefined) lists.push(c.roleDocs.get(code));
      }
    }
    for (const l of lists) for (let i = 0; i < l.length; i++) out.push(l[i]);
  }
  return out;
}

/**
 * The documents the constraints allow, as a test on a slot (null: no constraint), and when they
 * require something, the live documents that hold every group, ascending.
 */
export function constraintTest(
  c: IndexColumns,
  q: QueryConstraints | undefined,
): { ok: ((d: number) => boolean) | null; required: Int32Array | null } {
  if (!q || (q.all.length === 0 && q.none.length === 0)) return { ok: null, required: null };
  const mark = new Map<number, number>();
  const groups = q.all.length;
  q.all.forEach((group, g) => {
    for (const cond of group) {
      for (const d of conditionDocs(c, cond)) if ((mark.get(d) ?? 0) === g) mark.set(d, g + 1);
    }
  });
  for (const cond of q.none) for (const d of conditionDocs(c, cond)) mark.set(d, -1);
  let required: Int32Array | null = null;
  if (groups > 0) {
    const ds: number[] = [];
    for (const [d, m] of mark) if (m === groups && c.dAlive[d] === 1) ds.push(d);
    required = Int32Array.from(ds).sort();
  }
  return { ok: groups > 0 ? (d) => mark.get(d) === groups : (d) => mark.get(d) !== -1, required };
}

/** Which of these documents the constraints allow (vector candidates join a constrained query only so). */
export function admits(c: IndexColumns, constraints: QueryConstraints | undefined, docIds: string[]): Set<string> {
  const { ok } = constraintTest(c, constraints);
  return new Set(
    docIds.filter((id) => {
      const d = slotOf(c, id);
      return d !== undefined && (ok === null || ok(d));
    }),
  );
}
