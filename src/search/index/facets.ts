/**
 * What is counted over a match set: the total and the facets (sources, attachments, people, tags),
 * the conversations it makes (group=thread), and its documents by id.
 */
import { grown, slotOf, type IndexColumns } from './columns.ts';
import type { IndexFacets, IndexMatches } from './types.ts';

/**
 * `total` and the facets over a match set: the lexical matches plus the documents the other leg
 * found (already filtered), each once; documents removed since `match` are not counted.
 */
export function facetsOf(c: IndexColumns, matches: IndexMatches, extraDocIds: string[] = [], personLimit = 50): IndexFacets {
  const { docs } = matches;
  c.docState = grown(c.docState, c.docCount);
  c.matched = grown(c.matched, c.docCount);
  const { docState, dAlive, matched } = c;
  let nSet = 0;
  for (let i = 0; i < docs.length; i++) {
    const d = docs[i];
    if (dAlive[d] === 0) continue;
    docState[d] = 4;
    matched[nSet++] = d;
  }
  for (const id of extraDocIds) {
    const d = slotOf(c, id);
    if (d === undefined || docState[d] === 4) continue;
    docState[d] = 4;
    matched[nSet++] = d;
  }
  const inSet = matched.subarray(0, nSet);
  const facets = countFacets(c, inSet, personLimit);
  const tags = countTags(c);
  for (let i = 0; i < nSet; i++) docState[inSet[i]] = 0;
  return { total: nSet, ...facets, tags };
}

function countFacets(c: IndexColumns, docs: Int32Array, personLimit: number) {
  // Counting runs over the whole match set (tens of thousands of documents for a common word):
  // typed counters indexed by code, reset through the list of codes touched.
  const nSources = c.sources.values.length;
  c.sourceAttCount = grown(c.sourceAttCount, 2 * nSources);
  c.personCount = grown(c.personCount, c.persons.values.length);
  const { sourceAttCount, personCount, dFacet, dPersonOff, personPool } = c;
  const personsSeen: number[] = [];
  const total = docs.length;
  for (let j = 0; j < total; j++) {
    const d = docs[j];
    const at = d << 2;
    sourceAttCount[dFacet[at]]++;
    const people = dFacet[at + 1];
    if (people === 0) continue;
    let p = dFacet[at + 2];
    if (personCount[p]++ === 0) personsSeen.push(p);
    if (people === 1) continue;
    p = dFacet[at + 3];
    if (personCount[p]++ === 0) personsSeen.push(p);
    for (let i = dPersonOff[d], end = i + people - 2; i < end; i++) {
      p = personPool[i];
      if (personCount[p]++ === 0) personsSeen.push(p);
    }
  }
  const bySource: (readonly [number, number])[] = [];
  let withAtt = 0;
  for (let s = 0; s < nSources; s++) {
    const without = sourceAttCount[2 * s];
    const withA = sourceAttCount[2 * s + 1];
    if (without + withA > 0) bySource.push([s, without + withA] as const);
    withAtt += withA;
    sourceAttCount[2 * s] = 0;
    sourceAttCount[2 * s + 1] = 0;
  }
  const byPerson = personsSeen.map((p) => [p, personCount[p]] as const);
  for (const p of personsSeen) personCount[p] = 0;
  const sourceTypes = [...bySource]
    .map(([s, count]) => ({ value: c.sources.values[s], count }))
    .sort((x, y) => y.count - x.count || (x.value < y.value ? -1 : x.value > y.value ? 1 : 0));
  const hasAttachments = [
    { value: false, count: total - withAtt },
    { value: true, count: withAtt },
  ]
    .filter((x) => x.count > 0)
    .sort((x, y) => y.count - x.count);
  const counts = byPerson.map(([, n]) => n).sort((x, y) => y - x);
  const floor = counts.length > personLimit ? counts[personLimit - 1] : 0;
  const people = [...byPerson]
    .filter(([, count]) => count >= floor)
    .map(([p, count]) => ({ personId: c.persons.values[p], count }));
  return { sourceTypes, hasAttachments, people };
}

/**
 * Tags over the documents marked 4 in docState (facetsOf's match set): each tag's documents are
 * walked once, so the cost is the number of tag assignments, not the size of the match set.
 */
function countTags(c: IndexColumns): { value: string; count: number }[] {
  const values = c.identifiers.values;
  for (; c.tagScanned < values.length; c.tagScanned++) if (values[c.tagScanned].startsWith('tag:')) c.tagCodes.push(c.tagScanned);
  const { docState } = c;
  const out: { value: string; count: number }[] = [];
  for (const code of c.tagCodes) {
    const list = c.identDocs.get(code);
    let n = 0;
    for (let i = 0; i < list.length; i++) if (docState[list[i]] === 4) n++;
    if (n > 0) out.push({ value: values[code].slice(4), count: n });
  }
  return out.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
}

/** The document ids of a match set (live ones), for tagging every document a query matches. */
export function docIdsOf(c: IndexColumns, matches: IndexMatches): string[] {
  const out: string[] = [];
  const { dAlive, dUuid } = c;
  for (let i = 0; i < matches.docs.length; i++) {
    const d = matches.docs[i];
    if (dAlive[d] === 1) out.push(dUuid[d]!);
  }
  return out;
}

/**
 * Conversations of a match set (group=thread): how many of its documents each of `threadIds`
 * holds, and how many groups the whole set makes (each thread once, each document without a
 * thread on its own). Documents removed since `match` are not counted.
 */
export function threadsOf(
  c: IndexColumns,
  matches: IndexMatches,
  extraDocIds: string[],
  threadIds: string[],
  /**
   * Documents without a thread that belong to another's conversation (an email attachment: its message's
   * thread id, or `doc:ID` of its message when that has none): counted with it, not as a group of their own.
   */
  joins: Map<string, string> = new Map(),
): { counts: Map<string, number>; groups: number } {
  const perThread = new Map<number, number>();
  const alone = new Set<string>();
  c.docState = grown(c.docState, c.docCount);
  const { docState, dAlive, dThread, dUuid } = c;
  const marked: number[] = [];
  const joined: string[] = [];
  const count = (d: number) => {
    if (dAlive[d] === 0 || docState[d] === 5) return;
    docState[d] = 5;
    marked.push(d);
    const t = dThread[d];
    if (t >= 0) perThread.set(t, (perThread.get(t) ?? 0) + 1);
    else {
      const to = joins.get(dUuid[d]!);
      if (to === undefined) alone.add(`doc:${dUuid[d]}`);
      else joined.push(to);
    }
  };
  for (let i = 0; i < matches.docs.length; i++) count(matches.docs[i]);
  for (const id of extraDocIds) {
    const d = slotOf(c, id);
    if (d !== undefined) count(d);
  }
  for (const d of marked) docState[d] = 0;
  // A joined document makes a group only when its conversation has no other document in the set.
  const extraThreads = new Set<number>();
  for (const to of joined) {
    if (to.startsWith('doc:')) alone.add(to);
    else {
      const code = c.threads.find(to);
      if (code === undefined) alone.add(`thread:${to}`);
      else if (!perThread.has(code)) extraThreads.add(code);
    }
  }
  const counts = new Map<string, number>();
  for (const id of threadIds) {
    const code = c.threads.find(id);
    counts.set(id, code === undefined ? 0 : (perThread.get(code) ?? 0));
  }
  return { counts, groups: perThread.size + extraThreads.size + alone.size };
}

/**
 * The documents of a match set (and the extra ones) without a thread, of the given source types; null when
 * they are more than `max` (group counts then take each of them as a conversation of its own).
 */
export function unthreadedOf(c: IndexColumns, matches: IndexMatches, extraDocIds: string[], sourceTypes: Set<string>, max: number): string[] | null {
  const out = new Set<string>();
  const { dAlive, dThread, dUuid } = c;
  const take = (d: number) => {
    if (dAlive[d] === 0 || dThread[d] >= 0) return true;
    if (!sourceTypes.has(c.sources.values[c.dSource[d]])) return true;
    out.add(dUuid[d]!);
    return out.size <= max;
  };
  for (let i = 0; i < matches.docs.length; i++) if (!take(matches.docs[i])) return null;
  for (const id of extraDocIds) {
    const d = slotOf(c, id);
    if (d !== undefined && !take(d)) return null;
  }
  return [...out];
}
