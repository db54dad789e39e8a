/**
 * POST /v1/ask: retrieve, then answer.
 *
 * Default (extractive): the sentences of the top hits that share the most query words, each
 * followed by its citation marker [n]; citations are the retrieved hits in rank order, so marker n
 * is citations[n-1]. With LLM_PROVIDER=ollama|openai, the model answers from the numbered
 * snippets only; its markers are checked against them (a marker naming no retrieved snippet is
 * removed, never replaced) and on any failure the extractive answer is returned, saying so.
 */
import { prepareEgress } from '../privacy/egress.ts';
import type { SearchHit, SearchLegs, SearchRequest, SearchResponse } from './types.ts';

export interface AskOptions {
  provider?: 'ollama' | 'openai' | null;
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  timeoutMs?: number;
  /** Chunk texts by id (the search service passes a database reader). */
  chunkTexts?: (chunkIds: string[]) => Promise<Map<string, string>>;
}

export interface Citation {
  document_id: string;
  chunk_id: string;
  score: number;
}

export interface AskResponse {
  query: string;
  answer: string;
  citations: Citation[];
  answer_mode: 'extractive' | 'llm' | 'none';
  llm_error?: string;
  /** The retrieval's legs, as search reports them (e.g. lexical-only while the model is busy). */
  legs: SearchLegs;
}

export const NO_RESULTS_ANSWER = 'No relevant results found.';

export function loadAskOptions(env: NodeJS.ProcessEnv = process.env): AskOptions {
  const p = (env.LLM_PROVIDER ?? '').trim().toLowerCase();
  if (p === '' || p === 'none') return { provider: null };
  if (p !== 'ollama' && p !== 'openai') throw new Error(`LLM_PROVIDER must be ollama or openai, got "${env.LLM_PROVIDER}"`);
  const baseUrl =
    p === 'ollama'
      ? (env.OLLAMA_BASE_URL ?? 'http://127.0.0.1:11434').replace(/\/+$/, '')
      : (env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
  return {
    provider: p,
    baseUrl,
    apiKey: env.OPENAI_API_KEY,
    model: env.LLM_MODEL ?? (p === 'ollama' ? 'llama3.2' : 'gpt-4o-mini'),
    timeoutMs: Number(env.LLM_TIMEOUT_MS ?? 60_000) || 60_000,
  };
}

const STOP = new Set(
  'a an and are as at be by do does for from has have how i in is it its of on or that the this to was were what when where which who why will with you your'.split(
    ' ',
  ),
);

/** Crude word keys for sentence matching: lower-case, stop words out, cut to 5 letters (a poor man's stem). */
function keys(text: string): Set<string> {
  const out = new Set<string>();
  for (const w of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    if (STOP.has(w) || w.length < 2) continue;
    out.add(w.slice(0, 5));
  }
  return out;
}

export function splitSentences(text: string): string[] {
  return text
    .replace(/\s+/g, ' ')
    .split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"'(\[])/u)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

export function extractiveAnswer(query: string, hits: SearchHit[], texts: Map<string, string>): string {
  const q = keys(query);
  const picked: { hit: number; pos: number; text: string; score: number }[] = [];
  hits.forEach((h, i) => {
    const text = (h.chunk_id && texts.get(h.chunk_id)) || h.snippet.replace(/[«»]/g, '');
    splitSentences(text).forEach((s, pos) => {
      const k = keys(s);
      let m = 0;
      for (const w of q) if (k.has(w)) m++;
      if (m === 0) return;
      picked.push({ hit: i, pos, text: s, score: (m / Math.max(q.size, 1)) / (1 + 0.25 * i) });
    });
  });
  let best = picked.sort((a, b) => b.score - a.score).slice(0, 3);
  if (best.length === 0) {
    const first = splitSentences((hits[0].chunk_id && texts.get(hits[0].chunk_id)) || hits[0].snippet)[0] ?? '';
    best = [{ hit: 0, pos: 0, text: first, score: 0 }];
  }
  best.sort((a, b) => a.hit - b.hit || a.pos - b.pos);
  const cut = (s: string) => (s.length > 400 ? `${s.slice(0, 400)}…` : s);
  return best.map((s) => `${cut(s.text)} [${s.hit + 1}]`).join(' ');
}

/** Keeps markers that name a retrieved snippet (1..n); drops the others. "[1, 9]" becomes "[1]". */
export function validateMarkers(answer: string, n: number): string {
  return answer
    .replace(/\[(\s*\d+\s*(?:[,;]\s*\d+\s*)*)\]/g, (_m, inner: string) => {
      const ok = inner
        .split(/[,;]/)
        .map((x) => Number(x.trim()))
        .filter((x) => Number.isInteger(x) && x >= 1 && x <= n);
      return ok.length ? ok.map((x) => `[${x}]`).join('') : '';
    })
    .replace(/[ \t]+([.,;:!?])/g, '$1')
    .replace(/[ \t]{2,}/g, ' ')
    .trim();
}

async function llmAnswer(opts: AskOptions, query: string, hits: SearchHit[], texts: Map<string, string>): Promise<string> {
  const sources = hits
    .map((h, i) => {
      const body = ((h.chunk_id && texts.get(h.chunk_id)) || h.snippet).slice(0, 1500);
      return `[${i + 1}] ${h.title ? `${h.title}\n` : ''}${body}`;
    })
    .join('\n\n');
  const messages = [
    {
      role: 'system',
      content:
        'Answer the question using only the numbered sources. After every statement put the number of the source ' +
        'it comes from in square brackets, like [1]. If the sources do not answer the question, say that nothing ' +
        'relevant was found. Do not use outside knowledge.',
    },
    { role: 'user', content: `Question: ${query}\n\nSources:\n${sources}` },
  ];
  const ctrl = AbortSignal.timeout(opts.timeoutMs ?? 60_000);
  let url: string;
  let body: unknown;
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.provider === 'ollama') {
    url = `${opts.baseUrl}/api/chat`;
    body = { model: opts.model, messages, stream: false, options: { temperature: 0 } };
  } else {
    url = `${opts.baseUrl}/chat/completions`;
    body = { model: opts.model, messages, temperature: 0 };
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
  }
  // A remote model gets the copy the egress policy allows (src/privacy/egress.ts); a local one the original.
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(prepareEgress(url, 'ask', body)), signal: ctrl });
  if (!res.ok) throw new Error(`LLM answered HTTP ${res.status}`);
  const json = (await res.json()) as any;
  const content = opts.provider === 'ollama' ? json?.message?.content : json?.choices?.[0]?.message?.content;
  if (typeof content !== 'string' || content.trim() === '') throw new Error('LLM returned no answer text');
  return content;
}

export async function answerQuestion(
  search: (req: SearchRequest) => Promise<SearchResponse>,
  query: string,
  k: number,
  opts: AskOptions,
): Promise<AskResponse> {
  const res = await search({ q: query, k, filters: {}, context_window: 0 });
  const legs = res.legs;
  const hits = res.hits.filter((h) => !h.context && h.chunk_id !== null);
  if (hits.length === 0) return { query, answer: NO_RESULTS_ANSWER, citations: [], answer_mode: 'none', legs };
  const citations = hits.map((h) => ({ document_id: h.document_id, chunk_id: h.chunk_id!, score: h.score }));
  const texts = opts.chunkTexts ? await opts.chunkTexts(hits.map((h) => h.chunk_id!)) : new Map<string, string>();
  if (opts.provider) {
    try {
      const raw = await llmAnswer(opts, query, hits, texts);
      const answer = validateMarkers(raw, hits.length);
      if (answer) return { query, answer, citations, answer_mode: 'llm', legs };
      throw new Error('LLM answer was empty after citation checks');
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      return {
        query,
        answer: extractiveAnswer(query, hits, texts),
        citations,
        answer_mode: 'extractive',
        llm_error: `LLM unavailable, extractive answer returned: ${why.slice(0, 200)}`,
        legs,
      };
    }
  }
  return { query, answer: extractiveAnswer(query, hits, texts), citations, answer_mode: 'extractive', legs };
}
