/**
 * The lexical leg's inverted index, in memory: BM25F over passages (one chunk of an active
 * document plus that document's title), with the search filters and facet counts evaluated on
 * per-document attributes held beside the postings.
 *
 * PostgreSQL stays the only store: this index is derived from it (built at start, or read from its
 * snapshot on disk, then the change log; see index-sync.ts, index-snapshot.ts) and holds nothing
 * that is not there. Why in memory: computing BM25
 * in SQL meant reading and unnesting the tsvector of every candidate passage per query, and facets
 * meant a join over the whole match set; at 100k documents that cost 200 ms+ per query. Here a query
 * walks the postings of its few lexemes (typed arrays, no allocation per posting).
 *
 * Scoring (unchanged from the SQL leg it replaces): for a passage, tf = tf_text + w * tf_title and
 * dl = len_text + w * len_title (token counts), idf = ln(1 + (N - df + 0.5) / (df + 0.5)) over live
 * passages, score = sum idf * qtf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)).
 * A document scores as its best passage.
 *
 * Word positions (for phrases and `subject:`) are kept per passage in one byte pool: for each of the
 * passage's terms, in the order of its term list, the number of positions then the positions
 * delta-encoded, all as LEB128 varints (about 1.2 bytes a position; docs/BENCHMARKS.md). Title
 * positions are stored shifted by TITLE_POSITION (beyond PostgreSQL's largest position, 16383), so a
 * phrase never spans the title and the text, and a title occurrence is told from a body one.
 */
import { buildStringHash, findInStringHash, validStringHash } from './string-hash.ts';

/** Title positions are stored as TITLE_POSITION + position. */
export const TITLE_POSITION = 16384;

export interface Bm25Params {
  k1: number;
  b: number;
  /** Weight of a title occurrence relative to a body occurrence. */
  titleWeight: number;
}

/** One active document as the index needs it (built by index-sync.ts from the catalog). */
export interface IndexedDocument {
  docId: string;
  sourceType: string;
  hasAttachments: boolean;
  /** content_timestamp in microseconds since the epoch (PostgreSQL's precision). */
  tsMicros: number;
  threadId: string | null;
  /** Linked people (document_people). */
  personIds: string[];
  /** Identifiers as written in the document's people[], lower-cased (for unlinked identifiers). */
  identifiers: string[];
  /** Lexeme -> occurrences in the title. */
  title: Map<string, number>;
  /** Lexeme -> word positions in the title (1-based); absent: phrases and `subject:` cannot match the title. */
  titlePositions?: Map<string, number[]>;
  /** Lexeme -> word positions in the passage (1-based, as in the stored tsvector); absent: no phrase matches it. */
  passages: { chunkId: string; terms: Map<string, number>; positions?: Map<string, number[]> }[];
  /** Linked people (person ids) and identifiers as written (lower-cased) in the sender role (`from:`). */
  senders?: string[];
  /**
   * Lexemes of the senders' and recipients' addresses: words of every passage (weight 1, no positions), so a
   * bare address finds the mail it is on (issue 40). Absent: none.
   */
  addresses?: Map<string, number>;
  /** The same in the recipient role (`to:`). */
  recipients?: string[];
}

export interface IndexFilter {
  /** Any of these source types (a family, or one type). */
  sourceTypes?: string[];
  /** Source types left out. */
  notSourceTypes?: string[];
  /** One source type (the same as `sourceTypes: [t]`). */
  sourceType?: string;
  hasAttachments?: boolean;
  threadId?: string;
  startMicros?: number;
  endMicros?: number;
  endExclusive?: boolean;
  /** Documents that pass the date bounds whatever their timestamp: calendar events occurring inside them (issue 42). */
  occurringDocs?: Set<string> | null;
  person?: { personIds: Set<string>; identifiers: Set<string> };
  /** Only these documents (a tagging rule looking at new documents, src/organize/rules.ts). */
  docIds?: string[];
}

export interface QueryLexeme {
  term: string;
  /** Occurrences in the query. */
  qtf: number;
  /** Factor on the term's weight (prefix expansions of the last word weigh less than the word); 1 when absent. */
  weight?: number;
}

/**
 * A condition on documents, from the query's operators (query-parse.ts): any of the lexemes (a word
 * and, for the last word typed, its prefix expansions), a phrase (lexemes at these relative
 * positions, adjacent and in order), or a person in a role; `title`: in the title only (`subject:`).
 */
export type DocCondition =
  | { kind: 'terms'; terms: string[]; title?: boolean }
  | { kind: 'phrase'; terms: { term: string; at: number }[]; title?: boolean }
  | { kind: 'person'; personIds: string[]; identifiers: string[]; role?: 'sender' | 'recipient' };

/** What a query requires of a document beyond the filter. */
export interface QueryConstraints {
  /** Each group must hold; a group holds when one of its conditions does (`OR`). */
  all: DocCondition[][];
  /** None may hold (`-word`, `-"a phrase"`). */
  none: DocCondition[];
}

export interface MatchOptions {
  constraints?: QueryConstraints;
  /**
   * With no query lexeme, every document passing the filter and the constraints matches (a query
   * made only of operators), the newest first, each with score 1.
   */
  browse?: boolean;
}

export interface IndexHit {
  doc_id: string;
  chunk_id: string;
  score: number;
}

/**
 * A query's lexical matches: the best candidates and every matching document, as slots of the
 * index that found them (slots are never reused, so they stay meaningful while the index changes;
 * `facetsOf` skips those that died meanwhile).
 */
export interface IndexMatches {
  candidates: IndexHit[];
  /** Every document with a query lexeme that passes the filters, in no particular order. */
  docs: Int32Array;
  /** Query lexemes with their live document frequency. */
  terms: { term: string; qtf: number; df: number; idf: number }[];
}

export interface IndexFacets {
  /** Documents in the match set: lexical matches passing the filters plus the extra documents. */
  total: number;
  sourceTypes: { value: string; count: number }[];
  hasAttachments: { value: boolean; count: number }[];
  /** Linked people by number of matching documents, every person tied with the `personLimit`-th included. */
  people: { personId: string; count: number }[];
  /** Tags (a document's and its conversation's) by number of matching documents (identifiers `tag:NAME`). */
  tags: { value: string; count: number }[];
}

export interface IndexSearchResult {
  candidates: IndexHit[];
  /** Documents in the match set: lexical matches passing the filters plus the extra documents. */
  total: number;
  sourceTypes: { value: string; count: number }[];
  hasAttachments: { value: boolean; count: number }[];
  /** Linked people by number of matching documents, every person tied with the `personLimit`-th included. */
  people: { personId: string; count: number }[];
  /** Query lexemes with their live document frequency. */
  terms: { term: string; qtf: number; df: number; idf: number }[];
}

export interface DocumentAttributes {
  sourceType: string;
  hasAttachments: boolean;
  contentTimestamp: Date;
  threadId: string | null;
}

/** Growable typed arrays: doubles capacity when full. */
function grown<T extends Int32Array | Float32Array | Float64Array | Uint8Array>(a: T, need: number): T {
  if (need <= a.length) return a;
  let cap = Math.max(16, a.length);
  while (cap < need) cap *= 2;
  const b = new (a.constructor as new (n: number) => T)(cap);
  b.set(a);
  return b;
}

class Interner {
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

interface Postings {
  pids: Int32Array;
  tfs: Float32Array;
  n: number;
  /** Live passages containing the term. */
  df: number;
  /**
   * BM25 term weight without idf, tf(k1+1)/(tf + k1(1 - b + b dl/avgdl)), for the first `impValid`
   * postings, computed with `impAvgdl`: made when the term is first queried and extended as
   * postings are appended; recomputed when the collection's avgdl has moved by more than
   * IMPACT_TOLERANCE since (exact on a collection that is not changing).
   */
  imp: Float32Array | null;
  impValid: number;
  impAvgdl: number;
}

/** Relative avgdl drift tolerated before a term's impacts are recomputed. */
const IMPACT_TOLERANCE = 0.01;

const EMPTY_CODES: Int32Array = new Int32Array(0);

/**
 * Document slots per code (a person, an identifier, a thread), in ascending order because slots are
 * handed out in ascending order. Slots of removed documents stay until the index is rebuilt; readers
 * skip them.
 */
class SlotLists {
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
const uuidKey = (id: string) => parseInt(id.slice(0, 8), 16) * 65536 + parseInt(id.slice(9, 13), 16);

/** First index i >= from with pids[i] >= target (pids ascending), found by galloping from `from`. */
function seek(pids: Int32Array, n: number, from: number, target: number): number {
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

/**
 * Bumped whenever what the index derives from the catalog, or the layout `serialise` writes,
 * changes: a snapshot of another version is not loaded (index-snapshot.ts), the index is rebuilt.
 */
export const LEXICAL_INDEX_VERSION = 3;

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

export class LexicalIndex {
  // Documents, by slot. Slots are not reused: a changed document gets a new slot, the old one dies.
  private docCount = 0;
  /** Slots of documents added since the snapshot was loaded (all of them without one). */
  private readonly slotOf = new Map<string, number>();
  /** The snapshot's documents (slots 0 .. n - 1): a table over dUuid (string-hash.ts), read in place. */
  private baseSlots: Int32Array | null = null;
  private dUuid: (string | null)[] = [];
  private dAlive = new Uint8Array(0);
  private dSource = new Int32Array(0);
  private dAtt = new Uint8Array(0);
  private dTs = new Float64Array(0);
  private dThread = new Int32Array(0);
  // What facet counting reads of a document, packed so it is one read of 16 bytes: at
  // dFacet[4d ..] the source and attachment code (source * 2 + has_attachments), the number of
  // linked people, and the first two of them; a third and later ones are at
  // personPool[dPersonOff[d] ..]. Counting walks tens of thousands of matches per query, and with
  // one array per field each match cost a cache miss per field (measured: facets were 27 % of the
  // gateway thread at 8 concurrent clients; one small array per document was worse still).
  private dFacet = new Int32Array(0);
  private personPool = new Int32Array(0);
  private personPoolLen = 0;
  private dPersonOff = new Int32Array(0);
  /** Passages of each document; a snapshot's documents have theirs in `basePassages` until changed. */
  private dPassages: (ArrayLike<number> | undefined)[] = [];
  /** A snapshot's documents' passages: document d has basePassages[d] .. basePassages[d + 1] - 1. */
  private basePassages = EMPTY_CODES;
  /** uuidKey of each document: the tie-break of equal scores. */
  private dKey = new Float64Array(0);
  // The selective filters (person, thread) start from their documents rather than from the postings.
  private readonly personDocs = new SlotLists();
  private readonly identDocs = new SlotLists();
  private readonly threadDocs = new SlotLists();

  // Passages, by id.
  private passageCount = 0;
  private pDoc = new Int32Array(0);
  private pLen = new Float32Array(0);
  private pAlive = new Uint8Array(0);
  private pChunk: string[] = [];
  /** Term ids of each passage; a snapshot's passages have theirs in `baseTermIds` until removed. */
  private pTerms: (Int32Array | undefined)[] = [];
  private baseTermOff = EMPTY_CODES;
  private baseTermIds = EMPTY_CODES;
  /** Where a passage's positions start in posPool; -1: none stored. */
  private pPosOff = new Float64Array(0);
  private posPool = new Uint8Array(0);
  private posPoolLen = 0;
  /** Documents by `s:` / `r:` + person id or identifier as written: the sender and recipient roles. */
  private readonly roleKeys = new Interner();
  private readonly roleDocs = new SlotLists();

  private readonly terms = new Interner();
  /** Postings by term id; a snapshot's terms are made from `basePost*` when first used. */
  private postings: (Postings | undefined)[] = [];
  private basePostOff = EMPTY_CODES;
  private basePostPids = EMPTY_CODES;
  private basePostTfs: Float32Array = new Float32Array(0);
  private readonly sources = new Interner();
  private readonly threads = new Interner();
  private readonly persons = new Interner();
  /** Identifiers as written in documents' people[] (the person filter's unlinked case). */
  private readonly identifiers = new Interner();

  /** Term ids in the order of their text (prefix lookup); terms interned since are scanned. */
  private sortedTerms = new Int32Array(0);
  private sortedUpTo = 0;

  private livePassages = 0;
  private liveDocs = 0;
  private deadPassages = 0;
  private lengthSum = 0;

  // Per-query scratch, reused (queries run one at a time on the event loop).
  private acc = new Float64Array(0);
  private docBest = new Float64Array(0);
  private docBestPid = new Int32Array(0);
  private docState = new Uint8Array(0);
  private touched = new Int32Array(0);
  private checked = new Int32Array(0);
  private matched = new Int32Array(0);
  private sourceAttCount = new Int32Array(0);
  private personCount = new Int32Array(0);

  constructor(readonly params: Bm25Params) {}

  /** The slot of a live document, or undefined. */
  private slot(docId: string): number | undefined {
    return this.slotOf.get(docId) ?? (this.baseSlots === null ? undefined : findInStringHash(this.baseSlots, this.dUuid, docId));
  }

  private passagesOf(d: number): ArrayLike<number> {
    const list = this.dPassages[d];
    if (list !== undefined) return list;
    const from = this.basePassages[d];
    const out = new Int32Array(this.basePassages[d + 1] - from);
    for (let i = 0; i < out.length; i++) out[i] = from + i;
    return out;
  }

  private passageCountOf(d: number): number {
    return this.dPassages[d]?.length ?? this.basePassages[d + 1] - this.basePassages[d];
  }

  /** The passage of a document whose chunk id sorts first. */
  private firstPassage(d: number): number {
    const pids = this.passagesOf(d);
    let best = pids[0];
    for (let i = 1; i < pids.length; i++) if (this.pChunk[pids[i]] < this.pChunk[best]) best = pids[i];
    return best;
  }

  private termsOf(pid: number): Int32Array {
    return this.pTerms[pid] ?? this.baseTermIds.subarray(this.baseTermOff[pid], this.baseTermOff[pid + 1]);
  }

  /** A term's postings (made from the snapshot's arrays on first use), undefined for an id never given. */
  private postingsOf(tid: number): Postings | undefined {
    const p = this.postings[tid];
    if (p !== undefined || tid + 1 >= this.basePostOff.length) return p;
    const from = this.basePostOff[tid];
    const n = this.basePostOff[tid + 1] - from;
    // Views of exactly n entries: appending copies a term's postings out before writing.
    return (this.postings[tid] = { pids: this.basePostPids.subarray(from, from + n), tfs: this.basePostTfs.subarray(from, from + n), n, df: n, imp: null, impValid: 0, impAvgdl: 0 });
  }

  private post(tid: number): Postings {
    return this.postingsOf(tid)!;
  }

  /** Live passages holding a term, without making its postings. */
  private dfOf(tid: number): number {
    const p = this.postings[tid];
    if (p !== undefined) return p.df;
    return tid + 1 < this.basePostOff.length ? this.basePostOff[tid + 1] - this.basePostOff[tid] : 0;
  }

  get size(): { documents: number; passages: number; deadPassages: number; terms: number } {
    return { documents: this.liveDocs, passages: this.livePassages, deadPassages: this.deadPassages, terms: this.terms.values.length };
  }

  has(docId: string): boolean {
    return this.slot(docId) !== undefined;
  }

  attributes(docId: string): DocumentAttributes | undefined {
    const d = this.slot(docId);
    if (d === undefined) return undefined;
    const t = this.dThread[d];
    return {
      sourceType: this.sources.values[this.dSource[d]],
      hasAttachments: this.dAtt[d] === 1,
      contentTimestamp: new Date(Math.floor(this.dTs[d] / 1000)),
      threadId: t < 0 ? null : this.threads.values[t],
    };
  }

  /** The active documents of a thread in time order (then by id), as the catalog orders them. */
  threadOrder(threadId: string): string[] {
    const c = this.threads.find(threadId);
    if (c === undefined) return [];
    const { dAlive, dTs, dKey, dUuid } = this;
    return [...this.threadDocs.get(c)]
      .filter((d) => dAlive[d] === 1)
      .sort((x, y) => dTs[x] - dTs[y] || dKey[x] - dKey[y] || (dUuid[x]! < dUuid[y]! ? -1 : 1))
      .map((d) => dUuid[d]!);
  }

  /** Adds or replaces a document. */
  upsert(doc: IndexedDocument): void {
    this.remove(doc.docId);
    const d = this.docCount++;
    this.dAlive = grown(this.dAlive, d + 1);
    this.dSource = grown(this.dSource, d + 1);
    this.dAtt = grown(this.dAtt, d + 1);
    this.dTs = grown(this.dTs, d + 1);
    this.dThread = grown(this.dThread, d + 1);
    this.dKey = grown(this.dKey, d + 1);
    this.dUuid[d] = doc.docId;
    this.dKey[d] = uuidKey(doc.docId);
    this.dAlive[d] = 1;
    this.dSource[d] = this.sources.code(doc.sourceType);
    this.dAtt[d] = doc.hasAttachments ? 1 : 0;
    this.dTs[d] = doc.tsMicros;
    this.dThread[d] = doc.threadId === null ? -1 : this.threads.code(doc.threadId);
    if (doc.threadId !== null) this.threadDocs.add(this.dThread[d], d);
    const personCodes = [...new Set(doc.personIds)].map((p) => this.persons.code(p));
    for (const c of personCodes) this.personDocs.add(c, d);
    this.dFacet = grown(this.dFacet, 4 * (d + 1));
    this.dFacet[4 * d] = 2 * this.dSource[d] + this.dAtt[d];
    this.dFacet[4 * d + 1] = personCodes.length;
    this.dFacet[4 * d + 2] = personCodes[0] ?? -1;
    this.dFacet[4 * d + 3] = personCodes[1] ?? -1;
    this.dPersonOff = grown(this.dPersonOff, d + 1);
    this.dPersonOff[d] = this.personPoolLen;
    if (personCodes.length > 2) {
      this.personPool = grown(this.personPool, this.personPoolLen + personCodes.length - 2);
      for (const c of personCodes.slice(2)) this.personPool[this.personPoolLen++] = c;
    }
    for (const v of new Set(doc.identifiers)) this.identDocs.add(this.identifiers.code(v), d);
    for (const v of new Set(doc.senders ?? [])) this.roleDocs.add(this.roleKeys.code(`s:${v}`), d);
    for (const v of new Set(doc.recipients ?? [])) this.roleDocs.add(this.roleKeys.code(`r:${v}`), d);
    this.slotOf.set(doc.docId, d);
    this.liveDocs++;

    const w = this.params.titleWeight;
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
      let addressLen = 0;
      for (const [t, n] of doc.addresses ?? []) {
        merged.set(t, (merged.get(t) ?? 0) + n);
        addressLen += n;
      }
      const pid = this.passageCount++;
      this.pDoc = grown(this.pDoc, pid + 1);
      this.pLen = grown(this.pLen, pid + 1);
      this.pAlive = grown(this.pAlive, pid + 1);
      this.pDoc[pid] = d;
      this.pLen[pid] = textLen + w * titleLen + addressLen;
      this.pAlive[pid] = 1;
      this.pChunk[pid] = p.chunkId;
      const termIds = new Int32Array(merged.size);
      let i = 0;
      for (const [t, tf] of merged) {
        const tid = this.terms.code(t);
        termIds[i++] = tid;
        let post = this.postingsOf(tid);
        if (!post) post = this.postings[tid] = { pids: new Int32Array(4), tfs: new Float32Array(4), n: 0, df: 0, imp: null, impValid: 0, impAvgdl: 0 };
        post.pids = grown(post.pids, post.n + 1);
        post.tfs = grown(post.tfs, post.n + 1);
        post.pids[post.n] = pid;
        post.tfs[post.n] = tf;
        post.n++;
        post.df++;
      }
      this.pTerms[pid] = termIds;
      this.pPosOff = grown(this.pPosOff, pid + 1);
      this.pPosOff[pid] = p.positions || doc.titlePositions ? this.storePositions(merged.keys(), p.positions, doc.titlePositions) : -1;
      this.livePassages++;
      this.lengthSum += this.pLen[pid];
      pids.push(pid);
    }
    this.dPassages[d] = pids;
  }

  /** Appends a passage's positions to the pool (terms in the order of its term list); returns where they start. */
  private storePositions(terms: Iterable<string>, text: Map<string, number[]> | undefined, title: Map<string, number[]> | undefined): number {
    const start = this.posPoolLen;
    let pool = this.posPool;
    let at = start;
    const put = (v: number) => {
      if (at + 5 > pool.length) pool = grown(pool, at + 5);
      while (v >= 0x80) {
        pool[at++] = (v & 0x7f) | 0x80;
        v >>>= 7;
      }
      pool[at++] = v;
    };
    for (const t of terms) {
      const a = text?.get(t);
      const b = title?.get(t);
      put((a?.length ?? 0) + (b?.length ?? 0));
      let prev = 0;
      // Stored ascending: text positions (< TITLE_POSITION), then the shifted title ones.
      if (a) for (const x of [...a].sort((u, v) => u - v)) { put(x - prev); prev = x; }
      if (b) for (const x of [...b].sort((u, v) => u - v)) { put(TITLE_POSITION + x - prev); prev = TITLE_POSITION + x; }
    }
    this.posPool = pool;
    this.posPoolLen = at;
    return start;
  }

  /** A passage's positions of term `tid` (ascending; title ones shifted by TITLE_POSITION), or null when not stored. */
  private positionsIn(pid: number, tid: number): number[] | null {
    let at = this.pPosOff[pid];
    if (!(at >= 0)) return null;
    const tids = this.termsOf(pid);
    const pool = this.posPool;
    const read = () => {
      let v = 0;
      let shift = 0;
      for (;;) {
        const b = pool[at++];
        v += (b & 0x7f) * 2 ** shift;
        if (b < 0x80) return v;
        shift += 7;
      }
    };
    for (let i = 0; i < tids.length; i++) {
      const n = read();
      if (tids[i] !== tid) {
        // Skip n varints: count the bytes that end one.
        for (let k = 0; k < n; at++) if (pool[at] < 0x80) k++;
        continue;
      }
      const out = new Array<number>(n);
      let prev = 0;
      for (let k = 0; k < n; k++) out[k] = prev += read();
      return out;
    }
    return null;
  }

  /** Removes a document (no-op when absent). Its postings stay until the index is rebuilt, skipped as dead. */
  remove(docId: string): void {
    const d = this.slot(docId);
    if (d === undefined) return;
    this.slotOf.delete(docId);
    this.dAlive[d] = 0;
    this.dUuid[d] = null;
    this.liveDocs--;
    const passages = this.passagesOf(d);
    for (let i = 0; i < passages.length; i++) {
      const pid = passages[i];
      this.pAlive[pid] = 0;
      for (const tid of this.termsOf(pid)) this.post(tid).df--;
      this.pTerms[pid] = EMPTY_CODES;
      this.livePassages--;
      this.deadPassages++;
      this.lengthSum -= this.pLen[pid];
    }
    this.dPassages[d] = [];
    this.dFacet[4 * d + 1] = 0;
  }

  /**
   * The documents a selective filter allows, ascending, live ones only: those of the `person`
   * filter (linked people or identifiers as written), else those of the thread; null for filters
   * that are not selective. The predicate below then leaves that filter out.
   */
  private restriction(f: IndexFilter): Int32Array | null {
    const base = this.selective(f);
    if (f.docIds === undefined) return base;
    const slots: number[] = [];
    for (const id of new Set(f.docIds)) {
      const d = this.slot(id);
      if (d !== undefined && this.dAlive[d] === 1) slots.push(d);
    }
    const only = Int32Array.from(slots).sort();
    return base === null ? only : intersect(base, only);
  }

  private selective(f: IndexFilter): Int32Array | null {
    let lists: Int32Array[];
    if (f.person) {
      lists = [];
      for (const p of f.person.personIds) {
        const c = this.persons.find(p);
        if (c !== undefined) lists.push(this.personDocs.get(c));
      }
      for (const v of f.person.identifiers) {
        const c = this.identifiers.find(v);
        if (c !== undefined) lists.push(this.identDocs.get(c));
      }
    } else if (f.threadId !== undefined) {
      const c = this.threads.find(f.threadId);
      lists = c === undefined ? [] : [this.threadDocs.get(c)];
    } else {
      return null;
    }
    let n = 0;
    for (const l of lists) n += l.length;
    const out = new Int32Array(n);
    let m = 0;
    const { dAlive } = this;
    for (const l of lists) for (let i = 0; i < l.length; i++) if (dAlive[l[i]] === 1) out[m++] = l[i];
    const slots = out.subarray(0, m).sort();
    if (lists.length <= 1) return slots;
    let u = 0;
    for (let i = 0; i < m; i++) if (u === 0 || slots[i] !== slots[u - 1]) slots[u++] = slots[i];
    return slots.subarray(0, u);
  }

  /**
   * The passages (a chunk of a live document) of every document the filter allows, all of its
   * conditions applied, when there are at most `max` of them; null for no filter, or more. The
   * vector leg ranks these exactly in memory (vector-memory.ts) instead of walking the HNSW graph
   * until enough rows pass the filter, which cost 45 CPU-ms on PostgreSQL and 2.3 s on PGlite for a
   * two-month range at 100,000 documents (docs/BENCHMARKS.md).
   */
  allowedPassages(filter: IndexFilter, max: number): { chunkIds: string[]; docIds: string[] } | null {
    if (Object.values(filter).every((v) => v === undefined)) return null;
    const restricted = this.restriction(filter);
    const pass = this.filterPredicate(filter);
    const { dAlive, dUuid, pChunk } = this;
    const chunkIds: string[] = [];
    const docIds: string[] = [];
    const take = (d: number): boolean => {
      if (dAlive[d] === 0 || !pass(d)) return true;
      const pids = this.passagesOf(d);
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
      for (let d = 0; d < this.docCount; d++) if (!take(d)) return null;
    }
    return { chunkIds, docIds };
  }

  /**
   * The filter's remaining conditions as a test on a document slot (`person`, and `threadId` when
   * it made the restriction, are left to `restriction`); values the index has never seen match nothing.
   */
  private filterPredicate(f: IndexFilter): (d: number) => boolean {
    // -1: any source; otherwise the codes allowed (a type the index has never seen matches nothing).
    const allowed = f.sourceTypes ?? (f.sourceType === undefined ? undefined : [f.sourceType]);
    const sources = allowed === undefined ? null : new Set(allowed.map((t) => this.sources.find(t)).filter((c) => c !== undefined));
    const leftOut = new Set((f.notSourceTypes ?? []).map((t) => this.sources.find(t)).filter((c) => c !== undefined));
    const thread = f.threadId === undefined || !f.person ? -1 : (this.threads.find(f.threadId) ?? -2);
    const att = f.hasAttachments === undefined ? -1 : f.hasAttachments ? 1 : 0;
    const start = f.startMicros ?? -Infinity;
    const end = f.endMicros ?? Infinity;
    const endExclusive = f.endExclusive === true && f.endMicros !== undefined;
    const { dSource, dAtt, dThread, dTs, dUuid } = this;
    const occurring = f.occurringDocs && f.occurringDocs.size > 0 ? f.occurringDocs : null;
    return (d) =>
      (sources === null || sources.has(dSource[d])) &&
      (leftOut.size === 0 || !leftOut.has(dSource[d])) &&
      (att === -1 || dAtt[d] === att) &&
      (thread === -1 || dThread[d] === thread) &&
      ((dTs[d] >= start && (endExclusive ? dTs[d] < end : dTs[d] <= end)) || (occurring !== null && occurring.has(dUuid[d]!)));
  }

  /** Live passages of the documents that contain the lexeme (in the title only with `title`). */
  private termDocs(term: string, title: boolean, out: number[]): void {
    const tid = this.terms.find(term);
    if (tid === undefined) return;
    const { pids, n } = this.post(tid);
    const { pAlive, pDoc } = this;
    for (let i = 0; i < n; i++) {
      const pid = pids[i];
      if (pAlive[pid] === 0) continue;
      if (title) {
        // Every passage carries the title: the first one of the document decides.
        const pos = this.positionsIn(pid, tid);
        if (pos === null || pos.length === 0 || pos[pos.length - 1] < TITLE_POSITION) continue;
      }
      out.push(pDoc[pid]);
    }
  }

  /**
   * Documents with a passage holding the phrase: its lexemes at their relative positions. The
   * rarest lexeme's postings drive; the others are galloped to the same passage, then positions decide.
   */
  private phraseDocs(phrase: { term: string; at: number }[], title: boolean, out: number[]): void {
    const parts: { tid: number; at: number; post: Postings }[] = [];
    for (const p of phrase) {
      const tid = this.terms.find(p.term);
      if (tid === undefined || this.dfOf(tid) === 0) return;
      parts.push({ tid, at: p.at, post: this.post(tid) });
    }
    if (parts.length === 0) return;
    parts.sort((x, y) => x.post.df - y.post.df);
    const [lead, ...rest] = parts;
    const cursor = new Int32Array(rest.length);
    const { pAlive, pDoc } = this;
    let lastDoc = -1;
    for (let i = 0; i < lead.post.n; i++) {
      const pid = lead.post.pids[i];
      if (pAlive[pid] === 0 || pDoc[pid] === lastDoc) continue;
      let all = true;
      for (let r = 0; r < rest.length && all; r++) {
        const { pids, n } = rest[r].post;
        const j = (cursor[r] = seek(pids, n, cursor[r], pid));
        all = j < n && pids[j] === pid;
      }
      if (!all) continue;
      const leadPos = this.positionsIn(pid, lead.tid);
      if (leadPos === null) continue;
      const restPos = rest.map((r) => new Set(this.positionsIn(pid, r.tid) ?? []));
      const found = leadPos.some((p) => {
        const inTitle = p >= TITLE_POSITION;
        if (title && !inTitle) return false;
        const start = p - lead.at;
        // Every word in the same field as the lead one (a phrase never spans the title and the text).
        return rest.every((r, k) => (start + r.at >= TITLE_POSITION) === inTitle && restPos[k].has(start + r.at));
      });
      if (found) {
        out.push(pDoc[pid]);
        lastDoc = pDoc[pid];
      }
    }
  }

  /** Documents (slots, possibly repeated or dead) for which a condition holds. */
  private conditionDocs(c: DocCondition): number[] {
    const out: number[] = [];
    if (c.kind === 'terms') {
      for (const t of new Set(c.terms)) this.termDocs(t, c.title === true, out);
    } else if (c.kind === 'phrase') {
      if (c.terms.length === 1) this.termDocs(c.terms[0].term, c.title === true, out);
      else this.phraseDocs(c.terms, c.title === true, out);
    } else {
      const lists: Int32Array[] = [];
      if (c.role === undefined) {
        for (const p of c.personIds) {
          const code = this.persons.find(p);
          if (code !== undefined) lists.push(this.personDocs.get(code));
        }
        for (const v of c.identifiers) {
          const code = this.identifiers.find(v);
          if (code !== undefined) lists.push(this.identDocs.get(code));
        }
      } else {
        const r = c.role === 'sender' ? 's' : 'r';
        for (const v of [...c.personIds, ...c.identifiers]) {
          const code = this.roleKeys.find(`${r}:${v}`);
          if (code !== undefined) lists.push(this.roleDocs.get(code));
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
  private constraintTest(c: QueryConstraints | undefined): { ok: ((d: number) => boolean) | null; required: Int32Array | null } {
    if (!c || (c.all.length === 0 && c.none.length === 0)) return { ok: null, required: null };
    const mark = new Map<number, number>();
    const groups = c.all.length;
    c.all.forEach((group, g) => {
      for (const cond of group) {
        for (const d of this.conditionDocs(cond)) if ((mark.get(d) ?? 0) === g) mark.set(d, g + 1);
      }
    });
    for (const cond of c.none) for (const d of this.conditionDocs(cond)) mark.set(d, -1);
    let required: Int32Array | null = null;
    if (groups > 0) {
      const ds: number[] = [];
      for (const [d, m] of mark) if (m === groups && this.dAlive[d] === 1) ds.push(d);
      required = Int32Array.from(ds).sort();
    }
    return { ok: groups > 0 ? (d) => mark.get(d) === groups : (d) => mark.get(d) !== -1, required };
  }

  /** Which of these documents the constraints allow (vector candidates join a constrained query only so). */
  admits(constraints: QueryConstraints | undefined, docIds: string[]): Set<string> {
    const { ok } = this.constraintTest(constraints);
    return new Set(
      docIds.filter((id) => {
        const d = this.slot(id);
        return d !== undefined && (ok === null || ok(d));
      }),
    );
  }

  /** idf of a lexeme over live passages (as `match` weighs it); null when no live passage has it. */
  idf(term: string): number | null {
    const tid = this.terms.find(term);
    const df = tid === undefined ? 0 : this.dfOf(tid);
    if (df === 0) return null;
    const n = this.livePassages;
    return Math.log(1 + (n - df + 0.5) / (df + 0.5));
  }

  /**
   * Lexemes of live passages that start with one of `prefixes`, the `max` found in the most
   * passages (then in text order): the prefix expansions of the last word typed.
   */
  expand(prefixes: string[], max: number): { term: string; df: number }[] {
    const values = this.terms.values;
    if (values.length - this.sortedUpTo > Math.max(5000, this.sortedUpTo / 4)) {
      this.sortedTerms = Int32Array.from(values.keys()).sort((x, y) => (values[x] < values[y] ? -1 : values[x] > values[y] ? 1 : 0));
      this.sortedUpTo = values.length;
    }
    const found = new Set<number>();
    const sorted = this.sortedTerms;
    for (const p of new Set(prefixes)) {
      if (p === '') continue;
      let lo = 0;
      let hi = sorted.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (values[sorted[mid]] < p) lo = mid + 1;
        else hi = mid;
      }
      for (let i = lo; i < sorted.length && values[sorted[i]].startsWith(p); i++) if (this.dfOf(sorted[i]) > 0) found.add(sorted[i]);
      for (let t = this.sortedUpTo; t < values.length; t++) if (values[t].startsWith(p) && this.dfOf(t) > 0) found.add(t);
    }
    return [...found]
      .map((t) => ({ term: values[t], df: this.dfOf(t) }))
      .sort((x, y) => y.df - x.df || (x.term < y.term ? -1 : x.term > y.term ? 1 : 0))
      .slice(0, max);
  }

  /** `match` and `facetsOf` in one call. */
  search(
    query: QueryLexeme[],
    filter: IndexFilter,
    limit: number,
    /** Documents found by the other leg (already filtered): they join the match set. */
    extraDocIds: string[] = [],
    personLimit = 50,
    opts: MatchOptions = {},
  ): IndexSearchResult {
    const m = this.match(query, filter, limit, opts);
    return { candidates: m.candidates, terms: m.terms, ...this.facetsOf(m, extraDocIds, personLimit) };
  }

  /** The `limit` best documents for the query (best passage each) and the whole match set. */
  match(query: QueryLexeme[], filter: IndexFilter, limit: number, opts: MatchOptions = {}): IndexMatches {
    const n = this.livePassages;
    const avgdl = n > 0 ? Math.max(this.lengthSum / n, 1e-9) : 1;
    const terms = query.map((q) => {
      const tid = this.terms.find(q.term);
      const df = tid === undefined ? 0 : this.dfOf(tid);
      return { ...q, tid, df, idf: Math.log(1 + (n - df + 0.5) / (df + 0.5)) };
    });

    this.acc = grown(this.acc, this.passageCount);
    this.docBest = grown(this.docBest, this.docCount);
    this.docBestPid = grown(this.docBestPid, this.docCount);
    this.docState = grown(this.docState, this.docCount);
    this.checked = grown(this.checked, this.docCount);
    const { acc, docBest, docBestPid, docState, pAlive, pDoc, checked } = this;
    const constrained = this.constraintTest(opts.constraints);
    const base = this.filterPredicate(filter);
    const ok = constrained.ok;
    const pass = ok === null ? base : (d: number) => ok(d) && base(d);
    let restricted = this.restriction(filter);
    if (constrained.required !== null) restricted = restricted === null ? constrained.required : intersect(restricted, constrained.required);
    const unfiltered = restricted === null && ok === null && Object.values(filter).every((v) => v === undefined);
    let nChecked = 0;
    let postingsTotal = 0;
    for (const t of terms) if (t.tid !== undefined) postingsTotal += this.post(t.tid).n;
    this.touched = grown(this.touched, Math.min(postingsTotal, this.passageCount));
    const touched = this.touched;
    let nTouched = 0;
    const scored = terms.filter((t) => t.tid !== undefined && t.df > 0);
    const weights = scored.map((t) => t.idf * t.qtf * (query.find((q) => q.term === t.term)?.weight ?? 1));
    const lists = scored.map((t) => this.post(t.tid!));
    const impacts = lists.map((post) => this.impacts(post, avgdl));

    if (opts.browse && query.length === 0) return this.browse(restricted, pass, limit);

    if (restricted !== null && restricted.length * scored.length * 8 < postingsTotal) {
      // Few allowed documents (one person's, one thread's) against long postings: look their
      // passages up in the postings (ascending on both sides, so each list is galloped through once).
      const cursor = new Int32Array(scored.length);
      for (let j = 0; j < restricted.length; j++) {
        const d = restricted[j];
        if (!pass(d)) continue;
        const passages = this.passagesOf(d);
        for (let p = 0; p < passages.length; p++) {
          const pid = passages[p];
          let s = 0;
          for (let t = 0; t < lists.length; t++) {
            const { pids, n } = lists[t];
            const i = (cursor[t] = seek(pids, n, cursor[t], pid));
            if (i < n && pids[i] === pid) s += weights[t] * impacts[t][i];
          }
          if (s > 0) {
            touched[nTouched++] = pid;
            acc[pid] = s;
          }
        }
      }
    } else {
      // Walk the postings. Documents a restriction allows are marked 3 first; every document is
      // tested once (state 1 passes, 2 fails) and reset at the end through `checked`.
      if (restricted !== null) {
        for (let j = 0; j < restricted.length; j++) {
          docState[restricted[j]] = 3;
          checked[nChecked++] = restricted[j];
        }
      }
      for (let t = 0; t < lists.length; t++) {
        const { pids, n: len } = lists[t];
        const weight = weights[t];
        const imp = impacts[t];
        if (unfiltered) {
          for (let i = 0; i < len; i++) {
            const pid = pids[i];
            if (pAlive[pid] === 0) continue;
            if (acc[pid] === 0) touched[nTouched++] = pid;
            acc[pid] += weight * imp[i];
          }
          continue;
        }
        for (let i = 0; i < len; i++) {
          const pid = pids[i];
          if (pAlive[pid] === 0) continue;
          const d = pDoc[pid];
          let st = docState[d];
          if (st === 0) {
            if (restricted !== null) continue;
            st = docState[d] = pass(d) ? 1 : 2;
            checked[nChecked++] = d;
          } else if (st === 3) {
            st = docState[d] = pass(d) ? 1 : 2;
          }
          if (st === 2) continue;
          if (acc[pid] === 0) touched[nTouched++] = pid;
          acc[pid] += weight * imp[i];
        }
      }
    }

    // Best passage per document (ties: the smaller chunk id, as the SQL leg did). The match set is
    // collected in a typed buffer: a plain array push per match was the largest cost of a query.
    this.matched = grown(this.matched, this.docCount);
    const matched = this.matched;
    let nMatched = 0;
    for (let i = 0; i < nTouched; i++) {
      const pid = touched[i];
      const d = pDoc[pid];
      const s = acc[pid];
      acc[pid] = 0;
      if (docBest[d] === 0) {
        matched[nMatched++] = d;
        docBest[d] = s;
        docBestPid[d] = pid;
      } else if (s > docBest[d] || (s === docBest[d] && this.pChunk[pid] < this.pChunk[docBestPid[d]])) {
        docBest[d] = s;
        docBestPid[d] = pid;
      }
    }

    // Top `limit` documents (score, then document id), then only those are sorted.
    const { dKey, dUuid } = this;
    const before = (x: number, y: number) =>
      docBest[x] > docBest[y] || (docBest[x] === docBest[y] && (dKey[x] < dKey[y] || (dKey[x] === dKey[y] && dUuid[x]! < dUuid[y]!)));
    const top = [...topK(matched, nMatched, limit, docBest, before)]
      .sort((x, y) => (before(x, y) ? -1 : 1))
      .map((d) => ({ doc_id: dUuid[d]!, chunk_id: this.pChunk[docBestPid[d]], score: docBest[d] }));

    for (let i = 0; i < nMatched; i++) docBest[matched[i]] = 0;
    for (let i = 0; i < nChecked; i++) docState[checked[i]] = 0;
    return {
      candidates: top,
      // A copy: the buffer is the next query's scratch, and facets may be counted after an await.
      docs: matched.slice(0, nMatched),
      terms: terms.map(({ term, qtf, df, idf }) => ({ term, qtf, df, idf })),
    };
  }

  /** Every live document among `restricted` (or all) passing `pass`, the newest `limit` first, score 1. */
  private browse(restricted: Int32Array | null, pass: (d: number) => boolean, limit: number): IndexMatches {
    const docs: number[] = [];
    const take = (d: number) => {
      if (this.dAlive[d] === 1 && this.passageCountOf(d) > 0 && pass(d)) docs.push(d);
    };
    if (restricted !== null) for (let j = 0; j < restricted.length; j++) take(restricted[j]);
    else for (let d = 0; d < this.docCount; d++) take(d);
    const { dTs, dKey, dUuid } = this;
    const newest = [...docs]
      .sort((x, y) => dTs[y] - dTs[x] || dKey[x] - dKey[y] || (dUuid[x]! < dUuid[y]! ? -1 : 1))
      .slice(0, limit);
    return {
      candidates: newest.map((d) => ({
        doc_id: dUuid[d]!,
        // The first passage (chunks are in document order).
        chunk_id: this.pChunk[this.firstPassage(d)],
        score: 1,
      })),
      docs: Int32Array.from(docs),
      terms: [],
    };
  }

  /**
   * `total` and the facets over a match set: the lexical matches plus the documents the other leg
   * found (already filtered), each once; documents removed since `match` are not counted.
   */
  facetsOf(matches: IndexMatches, extraDocIds: string[] = [], personLimit = 50): IndexFacets {
    const { docs } = matches;
    this.docState = grown(this.docState, this.docCount);
    this.matched = grown(this.matched, this.docCount);
    const { docState, dAlive, matched } = this;
    let nSet = 0;
    for (let i = 0; i < docs.length; i++) {
      const d = docs[i];
      if (dAlive[d] === 0) continue;
      docState[d] = 4;
      matched[nSet++] = d;
    }
    for (const id of extraDocIds) {
      const d = this.slot(id);
      if (d === undefined || docState[d] === 4) continue;
      docState[d] = 4;
      matched[nSet++] = d;
    }
    const inSet = matched.subarray(0, nSet);
    const facets = this.countFacets(inSet, personLimit);
    const tags = this.countTags();
    for (let i = 0; i < nSet; i++) docState[inSet[i]] = 0;
    return { total: nSet, ...facets, tags };
  }

  /** Identifier codes of tags (`tag:NAME`), found among the identifiers as they are interned. */
  private tagCodes: number[] = [];
  private tagScanned = 0;

  /**
   * Tags over the documents marked 4 in docState (facetsOf's match set): each tag's documents are
   * walked once, so the cost is the number of tag assignments, not the size of the match set.
   */
  private countTags(): { value: string; count: number }[] {
    const values = this.identifiers.values;
    for (; this.tagScanned < values.length; this.tagScanned++) if (values[this.tagScanned].startsWith('tag:')) this.tagCodes.push(this.tagScanned);
    const { docState } = this;
    const out: { value: string; count: number }[] = [];
    for (const c of this.tagCodes) {
      const list = this.identDocs.get(c);
      let n = 0;
      for (let i = 0; i < list.length; i++) if (docState[list[i]] === 4) n++;
      if (n > 0) out.push({ value: values[c].slice(4), count: n });
    }
    return out.sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1));
  }

  /** The document ids of a match set (live ones), for tagging every document a query matches. */
  docIdsOf(matches: IndexMatches): string[] {
    const out: string[] = [];
    const { dAlive, dUuid } = this;
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
  threadsOf(
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
    this.docState = grown(this.docState, this.docCount);
    const { docState, dAlive, dThread, dUuid } = this;
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
      const d = this.slot(id);
      if (d !== undefined) count(d);
    }
    for (const d of marked) docState[d] = 0;
    // A joined document makes a group only when its conversation has no other document in the set.
    const extraThreads = new Set<number>();
    for (const to of joined) {
      if (to.startsWith('doc:')) alone.add(to);
      else {
        const c = this.threads.find(to);
        if (c === undefined) alone.add(`thread:${to}`);
        else if (!perThread.has(c)) extraThreads.add(c);
      }
    }
    const counts = new Map<string, number>();
    for (const id of threadIds) {
      const c = this.threads.find(id);
      counts.set(id, c === undefined ? 0 : (perThread.get(c) ?? 0));
    }
    return { counts, groups: perThread.size + extraThreads.size + alone.size };
  }

  /**
   * The documents of a match set (and the extra ones) without a thread, of the given source types; null when
   * they are more than `max` (group counts then take each of them as a conversation of its own).
   */
  unthreadedOf(matches: IndexMatches, extraDocIds: string[], sourceTypes: Set<string>, max: number): string[] | null {
    const out = new Set<string>();
    const { dAlive, dThread, dUuid } = this;
    const take = (d: number) => {
      if (dAlive[d] === 0 || dThread[d] >= 0) return true;
      if (!sourceTypes.has(this.sources.values[this.dSource[d]])) return true;
      out.add(dUuid[d]!);
      return out.size <= max;
    };
    for (let i = 0; i < matches.docs.length; i++) if (!take(matches.docs[i])) return null;
    for (const id of extraDocIds) {
      const d = this.slot(id);
      if (d !== undefined && !take(d)) return null;
    }
    return [...out];
  }

  private impacts(post: Postings, avgdl: number): Float32Array {
    if (post.impValid === 0 || Math.abs(post.impAvgdl - avgdl) > IMPACT_TOLERANCE * avgdl) {
      post.impValid = 0;
      post.impAvgdl = avgdl;
    }
    post.imp = grown(post.imp ?? new Float32Array(0), post.pids.length);
    const { k1, b } = this.params;
    const { imp, tfs, pids } = post;
    const a = post.impAvgdl;
    for (let i = post.impValid; i < post.n; i++) {
      const tf = tfs[i];
      imp[i] = (tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * this.pLen[pids[i]]) / a));
    }
    post.impValid = post.n;
    return imp;
  }

  /**
   * The index compacted into raw arrays for a snapshot: live documents and passages renumbered in
   * their order, codes nobody live uses dropped. Synchronous (a consistent copy between two
   * changes); the arrays are fresh copies, so the index may change while they are written.
   */
  serialise(): SerialisedIndex {
    const D = this.docCount;
    const P = this.passageCount;
    const { dAlive, pAlive, dFacet, dPersonOff, personPool } = this;
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
    const srcUsed = new Uint8Array(this.sources.values.length);
    const thrUsed = new Uint8Array(this.threads.values.length);
    const perUsed = new Uint8Array(this.persons.values.length);
    for (let d = 0; d < D; d++) {
      if (dAlive[d] === 0) continue;
      srcUsed[this.dSource[d]] = 1;
      if (this.dThread[d] >= 0) thrUsed[this.dThread[d]] = 1;
      const people = dFacet[4 * d + 1];
      if (people > 0) perUsed[dFacet[4 * d + 2]] = 1;
      if (people > 1) perUsed[dFacet[4 * d + 3]] = 1;
      for (let i = dPersonOff[d], end = i + people - 2; i < end; i++) perUsed[personPool[i]] = 1;
    }
    const idUsed = new Uint8Array(this.identifiers.values.length);
    for (let c = 0; c < idUsed.length; c++) {
      const l = this.identDocs.get(c);
      for (let i = 0; i < l.length; i++) if (dAlive[l[i]] === 1) {
        idUsed[c] = 1;
        break;
      }
    }
    const roleUsed = new Uint8Array(this.roleKeys.values.length);
    for (let c = 0; c < roleUsed.length; c++) {
      const l = this.roleDocs.get(c);
      for (let i = 0; i < l.length; i++) if (dAlive[l[i]] === 1) {
        roleUsed[c] = 1;
        break;
      }
    }
    const termUsed = new Uint8Array(this.terms.values.length);
    for (let t = 0; t < termUsed.length; t++) if (this.dfOf(t) > 0) termUsed[t] = 1;
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
      docIds[e] = this.dUuid[d]!;
      dSource[e] = src.map[this.dSource[d]];
      dAtt[e] = this.dAtt[d];
      dTs[e] = this.dTs[d];
      dThread[e] = this.dThread[d] < 0 ? -1 : thr.map[this.dThread[d]];
      dKey[e] = this.dKey[d];
      const people = dFacet[4 * d + 1];
      facet[4 * e] = 2 * dSource[e] + dAtt[e];
      facet[4 * e + 1] = people;
      facet[4 * e + 2] = people > 0 ? per.map[dFacet[4 * d + 2]] : -1;
      facet[4 * e + 3] = people > 1 ? per.map[dFacet[4 * d + 3]] : -1;
      personOff[e] = poolLen;
      for (let i = dPersonOff[d], end = i + people - 2; i < end; i++) pool[poolLen++] = per.map[personPool[i]];
      dPassageCount[e] = this.passageCountOf(d);
    }
    const threadDocs = this.threadDocs.pack(thr.map, thr.n, docMap);
    const personDocs = this.personDocs.pack(per.map, per.n, docMap);
    const identDocs = this.identDocs.pack(idn.map, idn.n, docMap);
    const roleDocs = this.roleDocs.pack(rol.map, rol.n, docMap);

    // Passages.
    const pDoc = new Int32Array(np);
    const pLen = new Float32Array(np);
    const pChunk: string[] = new Array(np);
    const pTermOff = new Int32Array(np + 1);
    let nTerms = 0;
    for (let p = 0; p < P; p++) if (pidMap[p] >= 0) nTerms += this.termsOf(p).length;
    const pTermIds = new Int32Array(nTerms);
    nTerms = 0;
    for (let p = 0; p < P; p++) {
      const q = pidMap[p];
      if (q < 0) continue;
      pDoc[q] = docMap[this.pDoc[p]];
      pLen[q] = this.pLen[p];
      pChunk[q] = this.pChunk[p];
      const tids = this.termsOf(p);
      for (let i = 0; i < tids.length; i++) pTermIds[nTerms++] = trm.map[tids[i]];
      pTermOff[q + 1] = nTerms;
    }

    // Positions: each stored passage's bytes run to where the next stored one's start (the pool is
    // appended in passage order); the live ones are copied in order.
    const { pPosOff, posPool } = this;
    const posEnd = new Float64Array(P);
    let next = this.posPoolLen;
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
      nPost += this.dfOf(t);
      postOff[trm.map[t] + 1] = nPost;
    }
    const postPids = new Int32Array(nPost);
    const postTfs = new Float32Array(nPost);
    nPost = 0;
    for (let t = 0; t < termUsed.length; t++) {
      if (trm.map[t] < 0) continue;
      const post = this.postings[t];
      const from = post === undefined ? this.basePostOff[t] : 0;
      const n = post === undefined ? this.basePostOff[t + 1] - from : post.n;
      const pids = post === undefined ? this.basePostPids.subarray(from, from + n) : post.pids;
      const tfs = post === undefined ? this.basePostTfs.subarray(from, from + n) : post.tfs;
      for (let i = 0; i < n; i++) {
        const q = pidMap[pids[i]];
        if (q < 0) continue;
        postPids[nPost] = q;
        postTfs[nPost++] = tfs[i];
      }
    }

    return {
      meta: { version: LEXICAL_INDEX_VERSION, params: { ...this.params }, documents: nd, passages: np, lengthSum: this.lengthSum },
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
        terms: pick(this.terms.values, trm.map, trm.n),
        sources: pick(this.sources.values, src.map, src.n),
        threads: pick(this.threads.values, thr.map, thr.n),
        persons: pick(this.persons.values, per.map, per.n),
        identifiers: pick(this.identifiers.values, idn.map, idn.n),
        roleKeys: pick(this.roleKeys.values, rol.map, rol.n),
      },
      hashed: HASHED,
    };
  }

  /**
   * The index a snapshot holds. Throws when the parts do not fit together (a snapshot whose checksum
   * matched but was written by a different layout is refused by its version before this).
   * Arrays are used in place (not copied): the caller hands over ownership.
   */
  static deserialise(s: SerialisedIndex): LexicalIndex {
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
    const ix = new LexicalIndex(meta.params);
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

  private countFacets(docs: Int32Array, personLimit: number) {
    // Counting runs over the whole match set (tens of thousands of documents for a common word):
    // typed counters indexed by code, reset through the list of codes touched.
    const nSources = this.sources.values.length;
    this.sourceAttCount = grown(this.sourceAttCount, 2 * nSources);
    this.personCount = grown(this.personCount, this.persons.values.length);
    const { sourceAttCount, personCount, dFacet, dPersonOff, personPool } = this;
    const personsSeen: number[] = [];
    const total = docs.length;
    for (let j = 0; j < total; j++) {
      const d = docs[j];
      const at = d << 2;
      sourceAttCount[dFacet[at]]++;
      const people = dFacet[at + 1];
      if (people === 0) continue;
      let c = dFacet[at + 2];
      if (personCount[c]++ === 0) personsSeen.push(c);
      if (people === 1) continue;
      c = dFacet[at + 3];
      if (personCount[c]++ === 0) personsSeen.push(c);
      for (let i = dPersonOff[d], end = i + people - 2; i < end; i++) {
        c = personPool[i];
        if (personCount[c]++ === 0) personsSeen.push(c);
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
    const byPerson = personsSeen.map((c) => [c, personCount[c]] as const);
    for (const c of personsSeen) personCount[c] = 0;
    const sourceTypes = [...bySource]
      .map(([c, count]) => ({ value: this.sources.values[c], count }))
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
      .map(([c, count]) => ({ personId: this.persons.values[c], count }));
    return { sourceTypes, hasAttachments, people };
  }
}

/** The values in both ascending lists. */
function intersect(a: Int32Array, b: Int32Array): Int32Array {
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

/**
 * The `k` first of `docs[0..n)` in the order `before` (a strict total order that puts higher
 * `score` first): a heap whose root is the last of those kept so far; unordered.
 */
function topK(
  docs: Int32Array,
  n: number,
  k: number,
  score: Float64Array,
  before: (x: number, y: number) => boolean,
): Int32Array {
  if (n <= k) return docs.slice(0, n);
  const heap = new Int32Array(k);
  for (let j = 0; j < k; j++) {
    // Sift up: the root holds the element every other one comes before.
    let i = j;
    heap[i] = docs[j];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(heap[p], heap[i])) break;
      const t = heap[p];
      heap[p] = heap[i];
      heap[i] = t;
      i = p;
    }
  }
  let floor = score[heap[0]];
  for (let j = k; j < n; j++) {
    const d = docs[j];
    // Most documents score below the last one kept: one comparison, no call.
    if (score[d] < floor || !before(d, heap[0])) continue;
    heap[0] = d;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < k && before(heap[m], heap[l])) m = l;
      if (r < k && before(heap[m], heap[r])) m = r;
      if (m === i) break;
      const t = heap[m];
      heap[m] = heap[i];
      heap[i] = t;
      i = m;
    }
    floor = score[heap[0]];
  }
  return heap;
}
