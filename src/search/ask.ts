/**
 * POST /v1/ask: retrieve, then answer with the sentences that answer, each cited exactly.
 *
 * The search's top k hits give their chunks; extractive.ts splits them into sentences and
 * key-value lines, scores those against the question and keeps the best one to three (at most 400
 * characters). Each quoted unit is followed by its marker [n], and citations[n-1] names its
 * document, chunk and the span it was quoted from (in the chunk, and in the document text). When no
 * unit clears the floor the answer says that nothing answers the question and cites nothing.
 *
 * With LLM_PROVIDER=ollama|openai the model gets the same ranked units, numbered, and answers from
 * them only; its markers are checked (a marker naming no unit is removed, never replaced) and
 * renumbered to the units it cited. When the model fails, times out or cannot be reached, the
 * extractive answer is returned with `llm_fallback` and `llm_error` saying why.
 */
import {
  DEFAULT_EXTRACTIVE,
  pickQuotes,
  rankUnits,
  type Candidate,
  type ExtractiveParams,
  type Passage,
  type QueryTerm,
  type Quote,
} from './extractive.ts';
import { chat, DEFAULT_LLM_TIMEOUT_MS, LlmError, loadLlmOptions, type LlmFailure, type LlmOptions } from './llm.ts';
import type { SearchHit, SearchLegs, SearchRequest, SearchResponse } from './types.ts';

/** A chunk's text and where it starts in the text of a document that holds it. */
export interface PassageText {
  text: string;
  /** Offset of the chunk in the document's text; null when unknown. */
  start: number | null;
}

export interface AskOptions {
  provider?: 'ollama' | 'openai' | null;
  baseUrl?: string;
  apiKey?: string;
  model?: string;
  timeoutMs?: number;
  /** Chunk texts and offsets by `${document_id}/${chunk_id}` (the search service passes a database reader). */
  passages?: (hits: { document_id: string; chunk_id: string }[]) => Promise<Map<string, PassageText>>;
  /** Scoring weights and floor (benchmarks tune them; the defaults are the measured ones). */
  extractive?: Partial<ExtractiveParams>;
}

export interface Citation {
  document_id: string;
  chunk_id: string;
  /** The retrieval score of the hit the quote comes from. */
  score: number;
  title: string | null;
  source_type: string;
  content_timestamp: string;
  /** The text the answer quotes from this chunk. */
  quote: string;
  /** The quote's span in the chunk text (end exclusive). */
  start: number;
  end: number;
  /** The quote's span in the document text, for marking it there; null when unknown. */
  doc_start: number | null;
  doc_end: number | null;
}

export interface AskResponse {
  query: string;
  answer: string;
  citations: Citation[];
  answer_mode: 'extractive' | 'llm' | 'none';
  /** Why a configured model's answer was not used, in words. */
  llm_error?: string;
  /** Why a configured model's answer was not used: timeout, unreachable, http_error, empty. */
  llm_fallback?: LlmFailure;
  /** The retrieval's legs, as search reports them (e.g. lexical-only while the model is busy). */
  legs: SearchLegs;
}

export const NOTHING_FOUND_ANSWER = 'Nothing in your documents answers this question.';

/** Units the model is shown. */
const LLM_CONTEXT_UNITS = 12;

export function loadAskOptions(env: NodeJS.ProcessEnv = process.env): AskOptions {
  const llm = loadLlmOptions(env);
  return llm ? { ...llm } : { provider: null };
}

function llmOptions(opts: AskOptions): LlmOptions | null {
  if (!opts.provider || !opts.baseUrl) return null;
  return {
    provider: opts.provider,
    baseUrl: opts.baseUrl,
    apiKey: opts.apiKey,
    model: opts.model ?? (opts.provider === 'ollama' ? 'llama3.2' : 'gpt-4o-mini'),
    timeoutMs: opts.timeoutMs ?? DEFAULT_LLM_TIMEOUT_MS,
  };
}

/** Keeps markers that name a numbered unit (1..n); drops the others. "[1, 9]" becomes "[1]". */
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

/** Renumbers valid markers 1, 2, … in order of first appearance; returns the text and the original numbers cited. */
function renumber(answer: string): { text: string; cited: number[] } {
  const cited: number[] = [];
  const text = answer.replace(/\[(\d+)\]/g, (_m, d: string) => {
    const n = Number(d);
    let i = cited.indexOf(n);
    if (i < 0) i = cited.push(n) - 1;
    return `[${i + 1}]`;
  });
  return { text, cited };
}

function day(iso: string): string {
  return iso.slice(0, 10);
}

function citation(hit: SearchHit, passage: PassageText, q: { text: string; start: number; end: number }): Citation {
  return {
    document_id: hit.document_id,
    chunk_id: hit.chunk_id!,
    score: hit.score,
    title: hit.title,
    source_type: hit.source_type,
    content_timestamp: hit.content_timestamp,
    quote: q.text,
    start: q.start,
    end: q.end,
    doc_start: passage.start === null ? null : passage.start + q.start,
    doc_end: passage.start === null ? null : passage.start + q.end,
  };
}

/** Lower-cased names of a hit's people: all of them, and those it was written to. */
function peopleNames(hit: SearchHit): { people: string[]; addressees: string[] } {
  const people: string[] = [];
  const addressees: string[] = [];
  for (const p of hit.people) {
    if (!p || typeof p !== 'object') continue;
    const o = p as Record<string, unknown>;
    const name = o.display_name ?? o.name;
    if (typeof name !== 'string' || !name.trim()) continue;
    people.push(name.trim().toLowerCase());
    if (typeof o.role === 'string' && /^(recipient|to|cc|bcc)$/i.test(o.role)) addressees.push(name.trim().toLowerCase());
  }
  return { people, addressees };
}

async function llmAnswer(
  llm: LlmOptions,
  query: string,
  units: Candidate[],
  hits: SearchHit[],
): Promise<{ text: string; cited: Candidate[] }> {
  const sources = units
    .map((c, i) => {
      const h = hits[c.passage];
      const where = [h.title?.trim(), h.source_type, day(h.content_timestamp)].filter(Boolean).join(', ');
      return `[${i + 1}] (${where}) ${c.unit.text}`;
    })
    .join('\n');
  const raw = await chat(llm, [
    {
      role: 'system',
      content:
        'Answer the question briefly using only the numbered excerpts from the user\'s documents. After every ' +
        'statement put the number of the excerpt it comes from in square brackets, like [1]. If the excerpts do not ' +
        'answer the question, say that nothing in the documents answers it. Do not use outside knowledge.',
    },
    { role: 'user', content: `Question: ${query}\n\nExcerpts:\n${sources}` },
  ]);
  const { text, cited } = renumber(validateMarkers(raw, units.length));
  return { text, cited: cited.map((n) => units[n - 1]) };
}

/** A question about a message itself, not its contents: who sent it, when it was written or arrived. */
const ABOUT_THE_MESSAGE = /\b(sent|send|sends|wrote|write|writes|written|e-?mailed|e-?mails?|mailed|replied|reply|forwarded|messaged|texted)\b/i;
const MAIL_SOURCES = new Set(['email', 'email_local', 'imessage', 'sms', 'chatapp']);

/** The sender of a hit (the first person in the sender role): their name, else their address. */
function senderOf(hit: SearchHit): string | null {
  for (const p of hit.people) {
    if (!p || typeof p !== 'object') continue;
    const o = p as Record<string, unknown>;
    if (o.role !== 'sender') continue;
    const name = typeof o.display_name === 'string' && o.display_name.trim() ? o.display_name.trim() : o.identifier;
    if (typeof name === 'string' && name) return name;
  }
  return null;
}

/**
 * "Who sent …", "when did … write": answered by the message's own sender and date, which no sentence of its text
 * holds (the best sentence names who did the work, or the day it was done). Only for a message the best quote
 * comes from; null otherwise, and for every other question.
 */
export function messageMetadataAnswer(query: string, type: string | null, hit: SearchHit | undefined): string | null {
  if (!hit || !MAIL_SOURCES.has(hit.source_type) || !ABOUT_THE_MESSAGE.test(query)) return null;
  const sender = senderOf(hit);
  const title = hit.title?.trim();
  const when = hit.content_timestamp ? day(hit.content_timestamp) : null;
  if (type === 'person' && sender) return `${sender} sent it${title ? ` ("${title}"` : ''}${when ? `${title ? ', ' : ' ('}${when})` : title ? ')' : ''}.`;
  if (type === 'date' && when) return `On ${when}${sender ? `, from ${sender}` : ''}${title ? ` ("${title}")` : ''}.`;
  return null;
}

export async function answerQuestion(
  search: (req: SearchRequest) => Promise<SearchResponse & { terms?: QueryTerm[] }>,
  query: string,
  k: number,
  opts: AskOptions,
): Promise<AskResponse> {
  const params: ExtractiveParams = { ...DEFAULT_EXTRACTIVE, ...opts.extractive };
  const res = await search({ q: query, k, filters: {}, context_window: 0 });
  const legs = res.legs;
  const nothing: AskResponse = { query, answer: NOTHING_FOUND_ANSWER, citations: [], answer_mode: 'none', legs };
  const hits = res.hits.filter((h) => !h.context && h.chunk_id !== null);
  if (hits.length === 0) return nothing;

  const texts = opts.passages
    ? await opts.passages(hits.map((h) => ({ document_id: h.document_id, chunk_id: h.chunk_id! })))
    : new Map<string, PassageText>();
  const found = hits.map((h) => texts.get(`${h.document_id}/${h.chunk_id}`) ?? { text: h.snippet.replace(/[«»]/g, ''), start: null });
  const passages: Passage[] = hits.map((h, i) => ({
    document_id: h.document_id,
    chunk_id: h.chunk_id!,
    score: h.score,
    rank: i,
    title: h.title,
    text: found[i].text,
    ...peopleNames(h),
  }));
  // Without the index's statistics (an index that has not seen the words) every word weighs the same.
  const terms: QueryTerm[] = res.terms ?? [];
  const ranked = rankUnits(query, terms, passages, params);
  const quotes = pickQuotes(ranked, terms, passages, params);
  const cite = (q: Pick<Quote, 'text' | 'start' | 'end'>, c: Candidate) => citation(hits[c.passage], found[c.passage], q);
  // Who sent it, when it was written: the message of the first quote (else of the best unit, which may be below
  // the floor: "sent" and "message" are words no sentence of it holds) answers by its sender or date, cited as [1].
  const about = quotes[0]?.candidate ?? ranked.candidates[0];
  const aboutMessage = about ? messageMetadataAnswer(query, ranked.type, hits[about.passage]) : null;
  const shown: Pick<Quote, 'text' | 'start' | 'end' | 'candidate'>[] =
    quotes.length > 0 ? quotes : aboutMessage ? [{ text: about.unit.text, start: about.unit.start, end: about.unit.end, candidate: about }] : [];
  const extractive = (): AskResponse =>
    shown.length === 0
      ? nothing
      : {
          query,
          answer: `${aboutMessage ? `${aboutMessage} [1] ` : ''}${shown.map((q, i) => `${q.text} [${i + 1}]`).join(' ')}`,
          citations: shown.map((q) => cite(q, q.candidate)),
          answer_mode: 'extractive',
          legs,
        };

  const llm = llmOptions(opts);
  if (!llm) return extractive();
  const units = ranked.candidates.slice(0, LLM_CONTEXT_UNITS);
  if (units.length === 0) return nothing;
  try {
    const { text, cited } = await llmAnswer(llm, query, units, hits);
    if (!text) throw new LlmError('empty', 'the model\'s answer was empty once its citations were checked');
    return { query, answer: text, citations: cited.map((c) => cite(c.unit, c)), answer_mode: 'llm', legs };
  } catch (err) {
    const reason: LlmFailure = err instanceof LlmError ? err.reason : 'http_error';
    const why = err instanceof Error ? err.message : String(err);
    return { ...extractive(), llm_fallback: reason, llm_error: `no answer from the language model (${why.slice(0, 200)}); the answer is extractive` };
  }
}
