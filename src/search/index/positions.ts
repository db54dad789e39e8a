/**
 * Word positions (for phrases and `subject:`), kept per passage in one byte pool: for each of the
 * passage's terms, in the order of its term list, the number of positions then the positions
 * delta-encoded, all as LEB128 varints (about 1.2 bytes a position; docs/BENCHMARKS.md). Title
 * positions are stored shifted by TITLE_POSITION (beyond PostgreSQL's largest position, 16383), so a
 * phrase never spans the title and the text, and a title occurrence is told from a body one.
 */
import { dfOf, grown, post, seek, termsOf, type IndexColumns, type Postings } from './columns.ts';

/** Title positions are stored as TITLE_POSITION + position. */
export const TITLE_POSITION = 16384;

/** Appends a passage's positions to the pool (terms in the order of its term list); returns where they start. */
export function storePositions(
  c: IndexColumns,
  terms: Iterable<string>,
  text: Map<string, number[]> | undefined,
  title: Map<string, number[]> | undefined,
): number {
  const start = c.posPoolLen;
  let pool = c.posPool;
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
  c.posPool = pool;
  c.posPoolLen = at;
  return start;
}

/** A passage's positions of term `tid` (ascending; title ones shifted by TITLE_POSITION), or null when not stored. */
export function positionsIn(c: IndexColumns, pid: number, tid: number): number[] | null {
  let at = c.pPosOff[pid];
  if (!(at >= 0)) return null;
  const tids = termsOf(c, pid);
  const pool = c.posPool;
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

/** Live passages of the documents that contain the lexeme (in the title only with `title`). */
export function termDocs(c: IndexColumns, term: string, title: boolean, out: number[]): void {
  const tid = c.terms.find(term);
  if (tid === undefined) return;
  const { pids, n } = post(c, tid);
  const { pAlive, pDoc } = c;
  for (let i = 0; i < n; i++) {
    const pid = pids[i];
    if (pAlive[pid] === 0) continue;
    if (title) {
      // Every passage carries the title: the first one of the document decides.
      const pos = positionsIn(c, pid, tid);
      if (pos === null || pos.length === 0 || pos[pos.length - 1] < TITLE_POSITION) continue;
    }
    out.push(pDoc[pid]);
  }
}

/**
 * Documents with a passage holding the phrase: its lexemes at their relative positions. The
 * rarest lexeme's postings drive; the others are galloped to the same passage, then positions decide.
 */
export function phraseDocs(c: IndexColumns, phrase: { term: string; at: number }[], title: boolean, out: number[]): void {
  const parts: { tid: number; at: number; post: Postings }[] = [];
  for (const p of phrase) {
    const tid = c.terms.find(p.term);
    if (tid === undefined || dfOf(c, tid) === 0) return;
    parts.push({ tid, at: p.at, post: post(c, tid) });
  }
  if (parts.length === 0) return;
  parts.sort((x, y) => x.post.df - y.post.df);
  const [lead, ...rest] = parts;
  const cursor = new Int32Array(rest.length);
  const { pAlive, pDoc } = c;
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
    const leadPos = positionsIn(c, pid, lead.tid);
    if (leadPos === null) continue;
    const restPos = rest.map((r) => new Set(positionsIn(c, pid, r.tid) ?? []));
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
