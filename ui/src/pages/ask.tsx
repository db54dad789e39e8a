/**
 * Ask: a question; the short answer first, its [n] markers opening the cited document with the quoted
 * sentence marked; then each source with the quoted sentence marked in its place in the document.
 */
import { useState } from 'preact/hooks';
// The API's own response types: type-only imports, erased in the build, so no server code is bundled.
import type { AskCitationT, AskResponseT } from '../../../src/schemas/search.ts';
import { call } from '../api.ts';
import { ErrorNote, Page, SourceBadge, titleOf, When } from '../components.tsx';
import { href } from '../router.ts';

type Citation = AskCitationT;
/** A cited document: its title and text, to show the quote in its place. */
interface Source {
  title: string;
  text: string | null;
}

/** Characters of the document shown on each side of the quoted sentence. */
const AROUND = 160;

/** The answer's text with each [n] marker as a link to citation n (text nodes only). */
export function answerParts(answer: string): { text: string; cite?: number }[] {
  const out: { text: string; cite?: number }[] = [];
  const re = /\[(\d{1,3})\]/g;
  let last = 0;
  for (let m = re.exec(answer); m; m = re.exec(answer)) {
    if (m.index > last) out.push({ text: answer.slice(last, m.index) });
    out.push({ text: m[0], cite: Number(m[1]) });
    last = m.index + m[0].length;
  }
  if (last < answer.length) out.push({ text: answer.slice(last) });
  return out;
}

function citeHref(c: Citation): string {
  const at = c.doc_start != null && c.doc_end != null ? `${c.doc_start}-${c.doc_end}` : undefined;
  return href(`doc/${c.document_id}`, { chunk: c.chunk_id, at });
}

/** The quote where it stands in the document: the words around it, the quote itself marked. */
function QuoteInPlace({ text, c }: { text: string | null; c: Citation }) {
  const inText = text !== null && c.doc_start != null && c.doc_end != null && c.doc_end <= text.length && c.doc_start < c.doc_end;
  if (!inText) return <blockquote class="quote"><mark class="cited"><bdi>{c.quote}</bdi></mark></blockquote>;
  const from = Math.max(0, c.doc_start! - AROUND);
  const to = Math.min(text!.length, c.doc_end! + AROUND);
  return (
    <blockquote class="quote">
      <bdi>
        {from > 0 && '…'}
        {text!.slice(from, c.doc_start!)}
        <mark class="cited">{text!.slice(c.doc_start!, c.doc_end!)}</mark>
        {text!.slice(c.doc_end!, to)}
        {to < text!.length && '…'}
      </bdi>
    </blockquote>
  );
}

export function AskPage() {
  const [question, setQuestion] = useState('');
  const [answer, setAnswer] = useState<AskResponseT | null>(null);
  const [sources, setSources] = useState<Record<string, Source>>({});
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    if (!question.trim()) return;
    setBusy(true);
    setError(null);
    try {
      const a = await call('ask', { body: { query: question.trim(), k: 5 } });
      const ids = [...new Set(a.citations.map((c) => c.document_id))];
      const docs = await Promise.all(ids.map((id) => call('getDocument', { params: { doc_id: id } }).catch(() => null)));
      // Answer and sources appear together: rendered before the documents, the list would show bare ids.
      setSources(
        Object.fromEntries(
          ids.map((id, i) => [id, docs[i] ? { title: titleOf(docs[i]!.title, docs[i]!.text), text: docs[i]!.text } : { title: '(document not available)', text: null }]),
        ),
      );
      setAnswer(a);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }

  return (
    <Page title="Ask">
      <form class="ask" onSubmit={submit}>
        <label for="question">Question</label>
        <div class="row">
          <input id="question" type="text" value={question} maxLength={2000} onInput={(e) => setQuestion(e.currentTarget.value)} />
          <button type="submit" disabled={busy}>
            Ask
          </button>
        </div>
      </form>
      <ErrorNote error={error} />
      {busy && <p class="status">Thinking…</p>}
      {answer && (
        <section class="answer" aria-labelledby="answer-h">
          <h2 id="answer-h">Answer</h2>
          <p class={answer.answer_mode === 'none' ? 'answer-text nothing' : 'answer-text'}>
            {answerParts(answer.answer).map((p, i) => {
              const c = p.cite ? answer.citations[p.cite - 1] : undefined;
              return c ? (
                <a key={i} class="cite" href={citeHref(c)} aria-label={`source ${p.cite}: ${sources[c.document_id]?.title ?? ''}`}>
                  {p.text}
                </a>
              ) : (
                <bdi key={i}>{p.text}</bdi>
              );
            })}
          </p>
          {answer.answer_mode === 'extractive' && <p class="meta">Quoted from your documents; each quote is marked in its source below.</p>}
          {answer.answer_mode === 'llm' && <p class="meta">Written by the language model from the sentences cited below.</p>}
          {answer.llm_error && <p class="meta">{answer.llm_error}.</p>}
          {answer.citations.length > 0 && (
            <>
              <h3>Sources</h3>
              <ol class="citations">
                {answer.citations.map((c, i) => (
                  <li key={i}>
                    <p>
                      <a href={citeHref(c)}>
                        <bdi>{sources[c.document_id]?.title ?? c.title ?? '(untitled)'}</bdi>
                      </a>{' '}
                      <span class="meta">
                        {c.source_type && <SourceBadge type={c.source_type} />} {c.content_timestamp && <When iso={c.content_timestamp} />}
                      </span>
                    </p>
                    <QuoteInPlace text={sources[c.document_id]?.text ?? null} c={c} />
                  </li>
                ))}
              </ol>
            </>
          )}
        </section>
      )}
    </Page>
  );
}
