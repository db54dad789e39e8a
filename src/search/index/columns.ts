/**
 * The lexical index's storage: one columns object holding every typed array, and the reads every
 * part of the index shares (a document's slot, passages, term ids, postings). The parts (update,
 * positions, filter, rank, facets, format) are free functions over this one object: one class
 * with a stable shape keeps every array access monomorphic, as the single class it replaced did.
 *
 * Documents and passages are numbered by slot; slots are never reused (a changed document gets a
 * new slot, the old one dies), and dead slots are skipped until the index is rebuilt. A snapshot's
 * arrays (format.ts) are read in place through the `base*` columns until an entry changes.
 */
import { findInStringHash } from '../string-hash.ts';
import type { Bm25Params, DocumentAttributes } from './types.ts';

/** Growable typed arrays: doubles capacity when full. */
export function grown<T extends Int32Array | Float32Array | Float64Array | Uint8Array>(a: T, need: number): T {
  if (need <= a.length) return a;
  let cap = Math.max(16, a.length);
  while (cap < need) cap *= 2;
  const b = new (a.constructor as new (n: number) => T)(cap);
  b.set(a);
  return b;
}

export const EMPTY_CODES: Int32Array = new Int32Array(0);

export class Interner {
  /** Codes given since the snapshot was loaded (all of them without one). */
  private readonly ids = new Map<string, number>();
  /** The snapshot's codes: a table over its values (string-hash.ts), read in place. */
  private table: Int32Array | null = null;
  values: string[] = [];
  code(v: string): number {
    let c = this.find(v);
    if (c === undefined) {
      c = this.values.length;
      this.ids.set(v, c);
      this.values.push(v);
    }
    return c;
  }
  find(v: string): number | undefined {
    return this.ids.get(v) ?? (this.table === null ? undefined : findInStringHash(this.table, this.values, v));
  }
  /** Replaces the contents with `values` (code i is values[i]) and their table, for a snapshot's load. */
  load(values: string[], table: Int32Array): void {
    this.ids.clear();
    this.values = values;
    this.table = table;
  }
}

export interface Postings {
  pids: Int32Array;
  tfs: Float32Array;
  n: number;
  /** Live passages containing the term. */
  df: number;
  /**
   * BM25 term weight without idf, tf(k1+1)/(tf + k1(1 - b + b dl/avgdl)), for the first `impValid`
   * postings, computed with `impAvgdl`: made when the term is first queried and extended as
   * postings are appended; recomputed when the collection's avgdl has moved by more than
   * IMPACT_TOLERANCE since (exact on a collection that is not changing; rank.ts).
   */
  imp: Float32Array | null;
  impValid: number;
  impAvgdl: number;
}

/**
 * Document slots per code (a person, an identifier, a thread), in ascending order because slots are
 * handed out in ascending order. Slots of removed documents stay until the index is rebuilt; readers
 * skip them.
 */
export class SlotLists {
  private lists: Int32Array[] = [];
  private lens: number[] = [];
  /** A snapshot's lists in compressed-row form, read in place until a code's list grows. */
  private baseOff: Int32Array = new Int32Array(1);
  private baseSlots = EMPTY_CODES;
  add(code: number, slot: number): void {
    let list = this.lists[code];
    if (list === undefined && code < this.baseOff.length - 1) {
      list = this.lists[code] = this.baseSlots.slice(this.baseOff[code], this.baseOff[code + 1]);
      this.lens[code] = list.length;
    }
    const n = this.lens[code] ?? 0;
    this.lists[code] = grown(list ?? new Int32Array(4), n + 1);
    this.lists[code][n] = slot;
    this.lens[code] = n + 1;
  }
  /** Replaces a code's list (ascending slots). */
  set(code: number, slots: Int32Array): void {
    this.lists[code] = slots;
    this.lens[code] = slots.length;
  }
  get(code: number): Int32Array {
    const list = this.lists[code];
    if (list !== undefined) return list.subarray(0, this.lens[code]);
    if (code < this.baseOff.length - 1) return this.baseSlots.subarray(this.baseOff[code], this.baseOff[code + 1]);
    return EMPTY_CODES;
  }
  /** Codes that have a list (the highest plus one). */
  get codes(): number {
    return Math.max(this.lists.length, this.baseOff.length - 1);
  }
  /**
   * The lists in compressed-row form for a snapshot, codes and slots renumbered (`codeMap` and
   * `slotMap`: old -> new, -1 dropped); the new codes are 0 .. `codes` - 1.
   */
  pack(codeMap: Int32Array, codes: number, slotMap: Int32Array): { offsets: Int32Array; slots: Int32Array } {
    const offsets = new Int32Array(codes + 1);
    const byNew: Int32Array[] = new Array(codes).fill(EMPTY_CODES);
    for (let c = 0; c < this.codes; c++) if (c < codeMap.length && codeMap[c] >= 0) byNew[codeMap[c]] = this.get(c);
    let n = 0;
    for (let c = 0; c < codes; c++) {
      const l = byNew[c];
      for (let i = 0; i < l.length; i++) if (slotMap[l[i]] >= 0) n++;
      offsets[c + 1] = n;
    }
    const slots = new Int32Array(n);
    n = 0;
    for (let c = 0; c < codes; c++) {
      const l = byNew[c];
      for (let i = 0; i < l.length; i++) if (slotMap[l[i]] >= 0) slots[n++] = slotMap[l[i]];
    }
    return { offsets, slots };
  }
  /** The lists of a snapshot, read in place (an `add` copies a code's list out first). */
  load(offsets: Int32Array, slots: Int32Array): void {
    for (let c = 0; c + 1 < offsets.length; c++) if (offsets[c + 1] < offsets[c] || offsets[c + 1] > slots.length) throw new Error('snapshot lists are malformed');
    this.lists = [];
    this.lens = [];
    this.baseOff = offsets;
    this.baseSlots = slots;
  }
}

/** The first 48 bits of a UUID as a number: orders like the text for lower-case UUIDs, without string compares. */
export const uuidKey = (id: string) => parseInt(id.slice(0, 8), 16) * 65536 + parseInt(id.slice(9, 13), 16);

/** Everything the index holds; every field is set here, so the object keeps one shape. */
export class IndexColumns {
  constructor(readonly params: Bm25Params) {}

  // Documents, by slot.
  docCount = 0;
  /** Slots of documents added since the snapshot was loaded (all of them without one). */
  readonly slotOf = new Map<string, number>();
  /** The snapshot's documents (slots 0 .. n - 1): a table over dUuid (string-hash.ts), read in place. */
  baseSlots: Int32Array | null = null;
  dUuid: (string | null)[] = [];
  dAlive = new Uint8Array(0);
  dSource = new Int32Array(0);
  dAtt = new Uint8Array(0);
  dTs = new Float64Array(0);
  dThread = new Int32Array(0);
  // What facet counting reads of a document, packed so it is one read of 16 bytes: at
  // dFacet[4d ..] the source and attachment code (source * 2 + has_attachments), the number of
  // linked people, and the first two of them; a third and later ones are at
  // personPool[dPersonOff[d] ..]. Counting walks tens of thousands of matches per query, and with
  // one array per field each match cost a cache miss per field (measured: facets were 27 % of the
  // gateway thread at 8 concurrent clients; one small array per document was worse still).
  dFacet = new Int32Array(0);
  personPool = new Int32Array(0);
  personPoolLen = 0;
  dPersonOff = new Int32Array(0);
  /** Passages of each document; a snapshot's documents have theirs in `basePassages` until changed. */
  dPassages: (ArrayLike<number> | undefined)[] = [];
  /** A snapshot's documents' passages: document d has basePassages[d] .. basePassages[d + 1] - 1. */
  basePassages = EMPTY_CODES;
  /** uuidKey of each document: the tie-break of equal scores. */
  dKey = new Float64Array(0);
  // The selective filters (person, thread) start from their documents rather than from the postings.
  readonly personDocs = new SlotLists();
  readonly identDocs = new SlotLists();
  readonly threadDocs = new SlotLists();

  // Passages, by id.
  passageCount = 0;
  pDoc = new Int32Array(0);
  pLen = new Float32Array(0);
  pAlive = new Uint8Array(0);
  pChunk: string[] = [];
  /** Term ids of each passage; a snapshot's passages have theirs in `baseTermIds` until removed. */
  pTerms: (Int32Array | undefined)[] = [];
  baseTermOff = EMPTY_CODES;
  baseTermIds = EMPTY_CODES;
  /** Where a passage's positions start in posPool; -1: none stored (positions.ts). */
  pPosOff = new Float64Array(0);
  posPool = new Uint8Array(0);
  posPoolLen = 0;
  /** Documents by `s:` / `r:` + person id or identifier as written: the sender and recipient roles. */
  readonly roleKeys = new Interner();
  readonly roleDocs = new SlotLists();

  readonly terms = new Interner();
  /** Postings by term id; a snapshot's terms are made from `basePost*` when first used. */
  postings: (Postings | undefined)[] = [];
  basePostOff = EMPTY_CODES;
  basePostPids = EMPTY_CODES;
  basePostTfs: Float32Array = new Float32Array(0);
  readonly sources = new Interner();
  readonly threads = new Interner();
  readonly persons = new Interner();
  /** Identifiers as written in documents' people[] (the person filter's unlinked case). */
  readonly identifiers = new Interner();

  /** Term ids in the order of their text (prefix lookup); terms interned since are scanned. */
  sortedTerms = new Int32Array(0);
  sortedUpTo = 0;

  /** Identifier codes of tags (`tag:NAME`), found among the identifiers as they are interned. */
  tagCodes: number[] = [];
  tagScanned = 0;

  livePassages = 0;
  liveDocs = 0;
  deadPassages = 0;
  lengthSum = 0;

  // Per-query scratch, reused (queries run one at a time on the event loop).
  acc = new Float64Array(0);
  docBest = new Float64Array(0);
  docBestPid = new Int32Array(0);
  docState = new Uint8Array(0);
  touched = new Int32Array(0);
  checked = new Int32Array(0);
  matched = new Int32Array(0);
  sourceAttCount = new Int32Array(0);
  personCount = new Int32Array(0);
}

/** The slot of a live document, or undefined. */
export function slotOf(c: IndexColumns, docId: string): number | undefined {
  return c.slotOf.get(docId) ?? (c.baseSlots === null ? undefined : findInStringHash(c.baseSlots, c.dUuid, docId));
}

export function passagesOf(c: IndexColumns, d: number): ArrayLike<number> {
  const list = c.dPassages[d];
  if (list !== undefined) return list;
  const from = c.basePassages[d];
  const out = new Int32Array(c.basePassages[d + 1] - from);
  for (let i = 0; i < out.length; i++) out[i] = from + i;
  return out;
}

export function passageCountOf(c: IndexColumns, d: number): number {
  return c.dPassages[d]?.length ?? c.basePassages[d + 1] - c.basePassages[d];
}

/** The passage of a document whose chunk id sorts first. */
export function firstPassage(c: IndexColumns, d: number): number {
  const pids = passagesOf(c, d);
  let best = pids[0];
  for (let i = 1; i < pids.length; i++) if (c.pChunk[pids[i]] < c.pChunk[best]) best = pids[i];
  return best;
}

export function termsOf(c: IndexColumns, pid: number): Int32Array {
  return c.pTerms[pid] ?? c.baseTermIds.subarray(c.baseTermOff[pid], c.baseTermOff[pid + 1]);
}

/** A term's postings (made from the snapshot's arrays on first use), undefined for an id never given. */
export function postingsOf(c: IndexColumns, tid: number): Postings | undefined {
  const p = c.postings[tid];
  if (p !== undefined || tid + 1 >= c.basePostOff.length) return p;
  const from = c.basePostOff[tid];
  const n = c.basePostOff[tid + 1] - from;
  // Views of exactly n entries: appending copies a term's postings out before writing.
  return (c.postings[tid] = { pids: c.basePostPids.subarray(from, from + n), tfs: c.basePostTfs.subarray(from, from + n), n, df: n, imp: null, impValid: 0, impAvgdl: 0 });
}

/** The postings of a term id the index has given. */
export function post(c: IndexColumns, tid: number): Postings {
  return postingsOf(c, tid)!;
}

/** Live passages holding a term, without making its postings. */
export function dfOf(c: IndexColumns, tid: number): number {
  const p = c.postings[tid];
  if (p !== undefined) return p.df;
  return tid + 1 < c.basePostOff.length ? c.basePostOff[tid + 1] - c.basePostOff[tid] : 0;
}

/** First index i >= from with pids[i] >= target (pids ascending), found by galloping from `from`. */
export function seek(pids: Int32Array, n: number, from: number, target: number): number {
  let lo = from;
  let hi = from;
  let step = 1;
  while (hi < n && pids[hi] < target) {
    lo = hi + 1;
    hi += step;
    step *= 2;
  }
  if (hi > n) hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (pids[mid] < target) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export function attributesOf(c: IndexColumns, docId: string): DocumentAttributes | undefined {
  const d = slotOf(c, docId);
  if (d === undefined) return undefined;
  const t = c.dThread[d];
  return {
    sourceType: c.sources.values[c.dSource[d]],
    hasAttachments: c.dAtt[d] === 1,
    contentTimestamp: new Date(Math.floor(c.dTs[d] / 1000)),
    threadId: t < 0 ? null : c.threads.values[t],
  };
}

/** The active documents of a thread in time order (then by id), as the catalog orders them. */
export function threadOrder(c: IndexColumns, threadId: string): string[] {
  const code = c.threads.find(threadId);
  if (code === undefined) return [];
  const { dAlive, dTs, dKey, dUuid } = c;
  return [...c.threadDocs.get(code)]
    .filter((d) => dAlive[d] === 1)
    .sort((x, y) => dTs[x] - dTs[y] || dKey[x] - dKey[y] || (dUuid[x]! < dUuid[y]! ? -1 : 1))
    .map((d) => dUuid[d]!);
}
