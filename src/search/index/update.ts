/**
 * Adding and removing documents. A document gets a new slot each time it is written; the old slot
 * and its passages die (their postings stay until the index is rebuilt, skipped as dead).
 */
import { grown, passagesOf, post, postingsOf, slotOf, termsOf, uuidKey, EMPTY_CODES, type IndexColumns } from './columns.ts';
import { storePositions } from './positions.ts';
import type { IndexedDocument } from './types.ts';

/** Identifiers a document's tags make (tag-names.ts: `tag:NAME`, `tagtree:LEVEL`); setDocumentTags replaces only these. */
const isTagIdentifier = (v: string) => v.startsWith('tag:') || v.startsWith('tagtree:');

/** Adds or replaces a document. */
export function upsertDocument(c: IndexColumns, doc: IndexedDocument): void {
  removeDocument(c, doc.docId);
  const d = c.docCount++;
  c.dAlive = grown(c.dAlive, d + 1);
  c.dSource = grown(c.dSource, d + 1);
  c.dAtt = grown(c.dAtt, d + 1);
  c.dTs = grown(c.dTs, d + 1);
  c.dThread = grown(c.dThread, d + 1);
  c.dKey = grown(c.dKey, d + 1);
  c.dUuid[d] = doc.docId;
  c.dKey[d] = uuidKey(doc.docId);
  c.dAlive[d] = 1;
  c.dSource[d] = c.sources.code(doc.sourceType);
  c.dAtt[d] = doc.hasAttachments ? 1 : 0;
  c.dTs[d] = doc.tsMicros;
  c.dThread[d] = doc.threadId === null ? -1 : c.threads.code(doc.threadId);
  if (doc.threadId !== null) c.threadDocs.add(c.dThread[d], d);
  const personCodes = [...new Set(doc.personIds)].map((p) => c.persons.code(p));
  for (const code of personCodes) c.personDocs.add(code, d);
  c.dFacet = grown(c.dFacet, 4 * (d + 1));
  c.dFacet[4 * d] = 2 * c.dSource[d] + c.dAtt[d];
  c.dFacet[4 * d + 1] = personCodes.length;
  c.dFacet[4 * d + 2] = personCodes[0] ?? -1;
  c.dFacet[4 * d + 3] = personCodes[1] ?? -1;
  c.dPersonOff = grown(c.dPersonOff, d + 1);
  c.dPersonOff[d] = c.personPoolLen;
  if (personCodes.length > 2) {
    c.personPool = grown(c.personPool, c.personPoolLen + personCodes.length - 2);
    for (const code of personCodes.slice(2)) c.personPool[c.personPoolLen++] = code;
  }
  for (const v of new Set(doc.identifiers)) c.identDocs.add(c.identifiers.code(v), d);
  for (const v of new Set(doc.senders ?? [])) c.roleDocs.add(c.roleKeys.code(`s:${v}`), d);
  for (const v of new Set(doc.recipients ?? [])) c.roleDocs.add(c.roleKeys.code(`r:${v}`), d);
  c.slotOf.set(doc.docId, d);
  c.liveDocs++;

  const w = c.params.titleWeight;
  let titleLen = 0;
  for (const n of doc.title.values()) titleLen += n;
  const pids: number[] = [];
  const seen = new Set<string>();
  for (const p of doc.passages) {
    if (seen.has(p.chunkId)) continue;
    seen.add(p.chunkId);
    const merged = new Map<string, number>();
    let textLen = 0;
    for (const [t, n] of p.terms) {
      merged.set(t, n);
      textLen += n;
    }
    if (w > 0) for (const [t, n] of doc.title) merged.set(t, (merged.get(t) ?? 0) + w * n);
    // Whole terms (whole-terms.ts) count as occurrences, not as words of the passage: plain words rank as before.
    for (const [t, n] of p.wholes ?? []) merged.set(t, (merged.get(t) ?? 0) + n);
    if (w > 0) for (const [t, n] of doc.titleWholes ?? []) merged.set(t, (merged.get(t) ?? 0) + w * n);
    let addressLen = 0;
    for (const [t, n] of doc.addresses ?? []) {
      merged.set(t, (merged.get(t) ?? 0) + n);
      addressLen += n;
    }
    const pid = c.passageCount++;
    c.pDoc = grown(c.pDoc, pid + 1);
    c.pLen = grown(c.pLen, pid + 1);
    c.pAlive = grown(c.pAlive, pid + 1);
    c.pDoc[pid] = d;
    c.pLen[pid] = textLen + w * titleLen + addressLen;
    c.pAlive[pid] = 1;
    c.pChunk[pid] = p.chunkId;
    const termIds = new Int32Array(merged.size);
    let i = 0;
    for (const [t, tf] of merged) {
      const tid = c.terms.code(t);
      termIds[i++] = tid;
      let list = postingsOf(c, tid);
      if (!list) list = c.postings[tid] = { pids: new Int32Array(4), tfs: new Float32Array(4), n: 0, df: 0, imp: null, impValid: 0, impAvgdl: 0 };
      list.pids = grown(list.pids, list.n + 1);
      list.tfs = grown(list.tfs, list.n + 1);
      list.pids[list.n] = pid;
      list.tfs[list.n] = tf;
      list.n++;
      list.df++;
    }
    c.pTerms[pid] = termIds;
    c.pPosOff = grown(c.pPosOff, pid + 1);
    c.pPosOff[pid] = p.positions || doc.titlePositions ? storePositions(c, merged.keys(), p.positions, doc.titlePositions) : -1;
    c.livePassages++;
    c.lengthSum += c.pLen[pid];
    pids.push(pid);
  }
  c.dPassages[d] = pids;
}

/** Removes a document (no-op when absent). Its postings stay until the index is rebuilt, skipped as dead. */
export function removeDocument(c: IndexColumns, docId: string): void {
  const d = slotOf(c, docId);
  if (d === undefined) return;
  c.slotOf.delete(docId);
  c.dAlive[d] = 0;
  c.dUuid[d] = null;
  c.liveDocs--;
  const passages = passagesOf(c, d);
  for (let i = 0; i < passages.length; i++) {
    const pid = passages[i];
    c.pAlive[pid] = 0;
    for (const tid of termsOf(c, pid)) post(c, tid).df--;
    c.pTerms[pid] = EMPTY_CODES;
    c.livePassages--;
    c.deadPassages++;
    c.lengthSum -= c.pLen[pid];
  }
  c.dPassages[d] = [];
  c.dFacet[4 * d + 1] = 0;
}

/**
 * Replaces the tag identifiers (`tag:`, `tagtree:`) of documents in the index, in place: their slots, words and
 * passages stay. `tags` maps a document id to its tag identifiers now (tagIdentifiers of its tags and its
 * conversation's). Each tag's slot list is rewritten once for the whole batch (the lists stay ascending), so
 * tagging 100,000 documents costs the tag lists' length, not 100,000 document reloads. Returns the ids that
 * are not in the index (the caller reloads those).
 */
export function setDocumentTags(c: IndexColumns, tags: Map<string, string[]>): string[] {
  const missing: string[] = [];
  const marked = new Uint8Array(c.docCount);
  let changed = 0;
  /** Per tag identifier code, the changed slots that carry it now. */
  const adds = new Map<number, number[]>();
  for (const [docId, idents] of tags) {
    const d = slotOf(c, docId);
    if (d === undefined) {
      missing.push(docId);
      continue;
    }
    marked[d] = 1;
    changed++;
    for (const v of new Set(idents)) {
      if (!isTagIdentifier(v)) continue;
      const code = c.identifiers.code(v);
      let list = adds.get(code);
      if (!list) adds.set(code, (list = []));
      list.push(d);
    }
  }
  if (changed === 0) return missing;
  const values = c.identifiers.values;
  for (let code = 0; code < values.length; code++) {
    if (!isTagIdentifier(values[code])) continue;
    const old = c.identDocs.get(code);
    const add = (adds.get(code) ?? []).sort((a, b) => a - b);
    let kept = 0;
    for (let i = 0; i < old.length; i++) if (old[i] >= marked.length || marked[old[i]] === 0) kept++;
    if (kept === old.length && add.length === 0) continue;
    // Merge the old list without the changed slots and the changed slots that carry the tag now.
    const out = new Int32Array(kept + add.length);
    let i = 0;
    let j = 0;
    let n = 0;
    while (i < old.length || j < add.length) {
      if (i < old.length && old[i] < marked.length && marked[old[i]] === 1) {
        i++;
        continue;
      }
      if (j >= add.length || (i < old.length && old[i] < add[j])) out[n++] = old[i++];
      else out[n++] = add[j++];
    }
    c.identDocs.set(code, out);
  }
  return missing;
}
