/**
 * The index as a snapshot holds it (index-snapshot.ts writes and reads the file): `serialise`
 * compacts the columns into raw arrays, `deserialise` makes columns that read them in place.
 */
import { buildStringHash, validStringHash } from '../string-hash.ts';
import { dfOf, IndexColumns, passageCountOf, termsOf } from './columns.ts';
import type { Bm25Params } from './types.ts';

/**
 * Bumped whenever what the index derives from the catalog, or the layout `serialise` writes,
 * changes: a snapshot of another version is not loaded (index-snapshot.ts), the index is rebuilt.
 */
export const LEXICAL_INDEX_VERSION = 4;

export type RawArray = Int32Array | Float32Array | Float64Array | Uint8Array;

/**
 * The index as a snapshot holds it (index-snapshot.ts): a few numbers, typed arrays written as
 * they are in memory, and lists of strings. Only live documents and passages, and only the terms,
 * sources, threads, people and identifiers they use: nothing removed from the catalog (a forget)
 * is written, and a loaded index has no dead postings.
 */
export interface SerialisedIndex {
  meta: { version: number; params: Bm25Params; documents: number; passages: number; lengthSum: number };
  arrays: Record<string, RawArray>;
  strings: Record<string, string[]>;
  /**
   * String lists looked up by their text: a snapshot stores a table for each (`<name>.hash`,
   * string-hash.ts) so a load needs no Map; `deserialise` makes any that is missing.
   */
  hashed: string[];
}

/** The string lists `deserialise` finds things in by their text (a snapshot stores their tables). */
const HASHED = ['docIds', 'terms', 'sources', 'threads', 'persons', 'identifiers', 'roleKeys'];

/**
 * The index compacted into raw arrays for a snapshot: live documents and passages renumbered in
 * their order, codes nobody live uses dropped. Synchronous (a consistent copy between two
 * changes); the arrays are fresh copies, so the index may change while they are written.
 */
export function serialise(ix: IndexColumns): SerialisedIndex {
  const D = ix.docCount;
  const P = ix.passageCount;
  const { dAlive, pAlive, dFacet, dPersonOff, personPool } = ix;
  const docMap = new Int32Array(D).fill(-1);
  let nd = 0;
  for (let d = 0; d < D; d++) if (dAlive[d] === 1) docMap[d] = nd++;
  const pidMap = new Int32Array(P).fill(-1);
  let np = 0;
  for (let p = 0; p < P; p++) if (pAlive[p] === 1) pidMap[p] = np++;

  // Codes still used by a live document, renumbered in their old order.
  const remap = (used: Uint8Array) => {
    const map = new Int32Array(used.length).fill(-1);
    let n = 0;
    for (let c = 0; c < used.length; c++) if (used[c] === 1) map[c] = n++;
    return { map, n };
  };
  const srcUsed = new Uint8Array(ix.sources.values.length);
  const thrUsed = new Uint8Array(ix.threads.values.length);
  const perUsed = new Uint8Array(ix.persons.values.length);
  for (let d = 0; d < D; d++) {
    if (dAlive[d] === 0) continue;
    srcUsed[ix.dSource[d]] = 1;
    if (ix.dThread[d] >= 0) thrUsed[ix.dThread[d]] = 1;
    const people = dFacet[4 * d + 1];
    if (people > 0) perUsed[dFacet[4 * d + 2]] = 1;
    if (people > 1) perUsed[dFacet[4 * d + 3]] = 1;
    for (let i = dPersonOff[d], end = i + people - 2; i < end; i++) perUsed[personPool[i]] = 1;
  }
  const idUsed = new Uint8Array(ix.identifiers.values.length);
  for (let c = 0; c < idUsed.length; c++) {
    const l = ix.identDocs.get(c);
    for (let i = 0; i < l.length; i++) if (dAlive[l[i]] === 1) {
      idUsed[c] = 1;
      break;
    }
  }
  const roleUsed = new Uint8Array(ix.roleKeys.values.length);
  for (let c = 0; c < roleUsed.length; c++) {
    const l = ix.roleDocs.get(c);
    for (let i = 0; i < l.length; i++) if (dAlive[l[i]] === 1) {
      roleUsed[c] = 1;
      break;
    }
  }
  const termUsed = new Uint8Array(ix.terms.values.length);
  for (let t = 0; t < termUsed.length; t++) if (dfOf(ix, t) > 0) termUsed[t] = 1;
  const src = remap(srcUsed);
  const thr = remap(thrUsed);
  const per = remap(perUsed);
  const idn = remap(idUsed);
  const rol = remap(roleUsed);
  const trm = remap(termUsed);
  const pick = (values: string[], map: Int32Array, n: number) => {
    const out: string[] = new Array(n);
    for (let c = 0; c < map.length; c++) if (map[c] >= 0) out[map[c]] = values[c];
    return out;
  };

  // Documents.
  const docIds: string[] = new Array(nd);
  const dSource = new Int32Array(nd);
  const dAtt = new Uint8Array(nd);
  const dTs = new Float64Array(nd);
  const dThread = new Int32Array(nd);
  const dKey = new Float64Array(nd);
  const facet = new Int32Array(4 * nd);
  const personOff = new Int32Array(nd);
  const dPassageCount = new Int32Array(nd);
  let poolLen = 0;
  for (let d = 0; d < D; d++) if (dAlive[d] === 1 && dFacet[4 * d + 1] > 2) poolLen += dFacet[4 * d + 1] - 2;
  const pool = new Int32Array(poolLen);
  poolLen = 0;
  for (let d = 0; d < D; d++) {
    const e = docMap[d];
    if (e < 0) continue;
    docIds[e] = ix.dUuid[d]!;
    dSource[e] = src.map[ix.dSource[d]];
    dAtt[e] = ix.dAtt[d];
    dTs[e] = ix.dTs[d];
    dThread[e] = ix.dThread[d] < 0 ? -1 : thr.map[ix.dThread[d]];
    dKey[e] = ix.dKey[d];
    const people = dFacet[4 * d + 1];
    facet[4 * e] = 2 * dSource[e] + dAtt[e];
    facet[4 * e + 1] = people;
    facet[4 * e + 2] = people > 0 ? per.map[dFacet[4 * d + 2]] : -1;
    facet[4 * e + 3] = people > 1 ? per.map[dFacet[4 * d + 3]] : -1;
    personOff[e] = poolLen;
    for (let i = dPersonOff[d], end = i + people - 2; i < end; i++) pool[poolLen++] = per.map[personPool[i]];
    dPassageCount[e] = passageCountOf(ix, d);
  }
  const threadDocs = ix.threadDocs.pack(thr.map, thr.n, docMap);
  const personDocs = ix.personDocs.pack(per.map, per.n, docMap);
  const identDocs = ix.identDocs.pack(idn.map, idn.n, docMap);
  const roleDocs = ix.roleDocs.pack(rol.map, rol.n, docMap);

  // Passages.
  const pDoc = new Int32Array(np);
  const pLen = new Float32Array(np);
  const pChunk: string[] = new Array(np);
  const pTermOff = new Int32Array(np + 1);
  let nTerms = 0;
  for (let p = 0; p < P; p++) if (pidMap[p] >= 0) nTerms += termsOf(ix, p).length;
  const pTermIds = new Int32Array(nTerms);
  nTerms = 0;
  for (let p = 0; p < P; p++) {
    const q = pidMap[p];
    if (q < 0) continue;
    pDoc[q] = docMap[ix.pDoc[p]];
    pLen[q] = ix.pLen[p];
    pChunk[q] = ix.pChunk[p];
    const tids = termsOf(ix, p);
    for (let i = 0; i < tids.length; i++) pTermIds[nTerms++] = trm.map[tids[i]];
    pTermOff[q + 1] = nTerms;
  }

  // Positions: each stored passage's bytes run to where the next stored one's start (the pool is
  // appended in passage order); the live ones are copied in order.
  const { pPosOff, posPool } = ix;
  const posEnd = new Float64Array(P);
  let next = ix.posPoolLen;
  for (let p = P - 1; p >= 0; p--) {
    if (!(pPosOff[p] >= 0)) continue;
    posEnd[p] = next;
    next = pPosOff[p];
  }
  let posBytes = 0;
  for (let p = 0; p < P; p++) if (pidMap[p] >= 0 && pPosOff[p] >= 0) posBytes += posEnd[p] - pPosOff[p];
  const posOut = new Uint8Array(posBytes);
  const posOff = new Float64Array(np);
  posBytes = 0;
  for (let p = 0; p < P; p++) {
    const q = pidMap[p];
    if (q < 0) continue;
    if (!(pPosOff[p] >= 0)) {
      posOff[q] = -1;
      continue;
    }
    posOff[q] = posBytes;
    posOut.set(posPool.subarray(pPosOff[p], posEnd[p]), posBytes);
    posBytes += posEnd[p] - pPosOff[p];
  }

  // Postings of the live passages (df of a term is exactly its live postings).
  const postOff = new Int32Array(trm.n + 1);
  let nPost = 0;
  for (let t = 0; t < termUsed.length; t++) {
    if (trm.map[t] < 0) continue;
    nPost += dfOf(ix, t);
    postOff[trm.map[t] + 1] = nPost;
  }
  const postPids = new Int32Array(nPost);
  const postTfs = new Float32Array(nPost);
  nPost = 0;
  for (let t = 0; t < termUsed.length; t++) {
    if (trm.map[t] < 0) continue;
    const post = ix.postings[t];
    const from = post === undefined ? ix.basePostOff[t] : 0;
    const n = post === undefined ? ix.basePostOff[t + 1] - from : post.n;
    const pids = post === undefined ? ix.basePostPids.subarray(from, from + n) : post.pids;
    const tfs = post === undefined ? ix.basePostTfs.subarray(from, from + n) : post.tfs;
    for (let i = 0; i < n; i++) {
      const q = pidMap[pids[i]];
      if (q < 0) continue;
      postPids[nPost] = q;
      postTfs[nPost++] = tfs[i];
    }
  }

  return {
    meta: { version: LEXICAL_INDEX_VERSION, params: { ...ix.params }, documents: nd, passages: np, lengthSum: ix.lengthSum },
    arrays: {
      dSource, dAtt, dTs, dThread, dKey, dFacet: facet, dPersonOff: personOff, personPool: pool, dPassageCount,
      threadDocsOff: threadDocs.offsets, threadDocs: threadDocs.slots,
      personDocsOff: personDocs.offsets, personDocs: personDocs.slots,
      identDocsOff: identDocs.offsets, identDocs: identDocs.slots,
      roleDocsOff: roleDocs.offsets, roleDocs: roleDocs.slots,
      pPosOff: posOff, posPool: posOut,
      pDoc, pLen, pTermOff, pTermIds, postOff, postPids, postTfs,
    },
    strings: {
      docIds,
      pChunk,
      terms: pick(ix.terms.values, trm.map, trm.n),
      sources: pick(ix.sources.values, src.map, src.n),
      threads: pick(ix.threads.values, thr.map, thr.n),
      persons: pick(ix.persons.values, per.map, per.n),
      identifiers: pick(ix.identifiers.values, idn.map, idn.n),
      roleKeys: pick(ix.roleKeys.values, rol.map, rol.n),
    },
    hashed: HASHED,
  };
}

/**
 * The columns a snapshot holds. Throws when the parts do not fit together (a snapshot whose checksum
 * matched but was written by a different layout is refused by its version before this).
 * Arrays are used in place (not copied): the caller hands over ownership.
 */
export function deserialise(s: SerialisedIndex): IndexColumns {
  const { meta, arrays: a, strings: str } = s;
  if (meta.version !== LEXICAL_INDEX_VERSION) throw new Error(`lexical index version ${meta.version}, expected ${LEXICAL_INDEX_VERSION}`);
  const nd = meta.documents;
  const np = meta.passages;
  const need = (name: string, ctor: Function, len?: number) => {
    const x = a[name];
    if (!(x instanceof (ctor as any)) || (len !== undefined && x.length !== len)) throw new Error(`snapshot section ${name} is malformed`);
    return x as any;
  };
  const table = (name: string): Int32Array => {
    const values = str[name];
    const t = a[`${name}.hash`];
    if (t === undefined) return buildStringHash(values);
    if (!(t instanceof Int32Array) || !validStringHash(t, values.length)) throw new Error(`snapshot section ${name}.hash is malformed`);
    return t;
  };
  // Everything is read in place: no object per document, passage or term (a term's postings, a
  // document's passage list, a code's documents are made when first used or changed).
  const ix = new IndexColumns(meta.params);
  const docIds = str.docIds;
  const pChunk = str.pChunk;
  if (docIds.length !== nd || pChunk.length !== np) throw new Error('snapshot strings do not match its counts');
  ix.docCount = nd;
  ix.dUuid = docIds;
  ix.baseSlots = table('docIds');
  ix.dAlive = new Uint8Array(nd).fill(1);
  ix.dSource = need('dSource', Int32Array, nd);
  ix.dAtt = need('dAtt', Uint8Array, nd);
  ix.dTs = need('dTs', Float64Array, nd);
  ix.dThread = need('dThread', Int32Array, nd);
  ix.dKey = need('dKey', Float64Array, nd);
  ix.dFacet = need('dFacet', Int32Array, 4 * nd);
  ix.dPersonOff = need('dPersonOff', Int32Array, nd);
  ix.personPool = need('personPool', Int32Array);
  ix.personPoolLen = ix.personPool.length;
  const counts: Int32Array = need('dPassageCount', Int32Array, nd);
  const starts = new Int32Array(nd + 1);
  for (let d = 0; d < nd; d++) {
    if (counts[d] < 0) throw new Error('snapshot passages do not match its documents');
    starts[d + 1] = starts[d] + counts[d];
  }
  if (starts[nd] !== np) throw new Error('snapshot passages do not match its documents');
  ix.basePassages = starts;
  ix.dPassages = new Array(nd);
  ix.threadDocs.load(need('threadDocsOff', Int32Array, str.threads.length + 1), need('threadDocs', Int32Array));
  ix.personDocs.load(need('personDocsOff', Int32Array, str.persons.length + 1), need('personDocs', Int32Array));
  ix.identDocs.load(need('identDocsOff', Int32Array, str.identifiers.length + 1), need('identDocs', Int32Array));
  ix.roleDocs.load(need('roleDocsOff', Int32Array, str.roleKeys.length + 1), need('roleDocs', Int32Array));
  ix.roleKeys.load(str.roleKeys, table('roleKeys'));

  ix.passageCount = np;
  ix.pDoc = need('pDoc', Int32Array, np);
  ix.pLen = need('pLen', Float32Array, np);
  ix.pAlive = new Uint8Array(np).fill(1);
  ix.pChunk = pChunk;
  ix.pPosOff = need('pPosOff', Float64Array, np);
  ix.posPool = need('posPool', Uint8Array);
  ix.posPoolLen = ix.posPool.length;
  for (let p = 0; p < np; p++) if (ix.pPosOff[p] > ix.posPoolLen) throw new Error('snapshot positions out of bounds');
  const pTermOff: Int32Array = need('pTermOff', Int32Array, np + 1);
  const pTermIds: Int32Array = need('pTermIds', Int32Array, pTermOff[np]);
  for (let p = 0; p < np; p++) if (pTermOff[p + 1] < pTermOff[p]) throw new Error('snapshot passages are malformed');
  ix.baseTermOff = pTermOff;
  ix.baseTermIds = pTermIds;
  ix.pTerms = new Array(np);

  const nTerms = str.terms.length;
  const postOff: Int32Array = need('postOff', Int32Array, nTerms + 1);
  for (let t = 0; t < nTerms; t++) if (postOff[t + 1] < postOff[t]) throw new Error('snapshot postings are malformed');
  ix.basePostOff = postOff;
  ix.basePostPids = need('postPids', Int32Array, postOff[nTerms]);
  ix.basePostTfs = need('postTfs', Float32Array, postOff[nTerms]);
  ix.postings = new Array(nTerms);
  ix.terms.load(str.terms, table('terms'));
  ix.sources.load(str.sources, table('sources'));
  ix.threads.load(str.threads, table('threads'));
  ix.persons.load(str.persons, table('persons'));
  ix.identifiers.load(str.identifiers, table('identifiers'));
  ix.livePassages = np;
  ix.liveDocs = nd;
  ix.deadPassages = 0;
  ix.lengthSum = meta.lengthSum;
  return ix;
}
