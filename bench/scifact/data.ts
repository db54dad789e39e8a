/** Reads the SciFact files (BEIR layout) from ../shared/data/scifact relative to the repo root. */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// The main checkout sits next to shared/ (/work/main -> /work/shared); a worktree is one level deeper.
export const SCIFACT_DIR =
  process.env.SCIFACT_DIR ??
  [path.resolve(REPO_ROOT, '../shared/data/scifact'), path.resolve(REPO_ROOT, '../../shared/data/scifact')].find((d) =>
    fs.existsSync(path.join(d, 'corpus.jsonl')),
  ) ??
  path.resolve(REPO_ROOT, '../shared/data/scifact');

export interface Scifact {
  corpus: { id: string; title: string; text: string }[];
  testQueries: { id: string; text: string }[];
  /** query id -> (corpus id -> graded relevance) */
  qrels: Map<string, Map<string, number>>;
}

export function cachePath(): string {
  return path.join(REPO_ROOT, 'data', 'bench-cache', 'scifact-use-lite.jsonl');
}

export function loadScifact(): Scifact | null {
  const corpusFile = path.join(SCIFACT_DIR, 'corpus.jsonl');
  if (!fs.existsSync(corpusFile)) return null;
  const lines = (f: string) => fs.readFileSync(f, 'utf8').split('\n').map((l) => l.replace(/\r$/, '')).filter(Boolean);
  const corpus = lines(corpusFile).map((l) => {
    const o = JSON.parse(l);
    return { id: String(o._id), title: String(o.title ?? ''), text: String(o.text ?? '') };
  });
  const qrels = new Map<string, Map<string, number>>();
  for (const l of lines(path.join(SCIFACT_DIR, 'qrels', 'test.tsv')).slice(1)) {
    const [q, d, s] = l.split('\t');
    if (!qrels.has(q)) qrels.set(q, new Map());
    qrels.get(q)!.set(d, Number(s));
  }
  // Only the query text is used, never its metadata (which names the evidence documents).
  const testQueries = lines(path.join(SCIFACT_DIR, 'queries.jsonl'))
    .map((l) => JSON.parse(l))
    .filter((o) => qrels.has(String(o._id)))
    .map((o) => ({ id: String(o._id), text: String(o.text) }));
  return { corpus, testQueries, qrels };
}
