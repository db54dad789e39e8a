/** Ask: a question, the answer with numbered inline citations linking to the cited documents. */
import { useState } from 'preact/hooks';
import { api } from '../api.ts';
import { ErrorNote, Page, titleOf } from '../components.tsx';
import { href } from '../router.ts';

interface Citation {
  document_id: string;
  chunk_id: string;
  score: number;
}
interface Answer {
  query: string;
  answer: string;
  citations: Citation[];
  answer_mode: string;
  llm_error?: string;
}

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
  return href(`doc/${c.document_id}`, { chunk: c.chunk_id });
}

export function AskPage() {
  const [question, setQuestion] = useState('');
  const [answer, setAnswer] = useState<Answer | null>(null);
  const [titles, setTitles] = useState<Record<string, string>>({});
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function submit(e: Event) {
    e.preventDefault();
    if (!question.trim()) return;
    setBusy(true);
    setError(null);
    try {
      const a = await api<Answer>('/v1/ask', { method: 'POST', body: { query: question.trim(), k: 5 } });
      const ids = [...new Set(a.citations.map((c) => c.document_id))];
      const docs = await Promise.all(ids.map((id) => api<{ title: string | null; text: string }>(`/v1/doc/${id}`).catch(() => null)));
      // Answer and source titles appear together: rendered before the titles, the list would show bare document ids.
      setTitles(Object.fromEntries(ids.map((id, i) => [id, docs[i] ? titleOf(docs[i]!.title, docs[i]!.text) : '(document not available)'])));
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
          <p class="answer-text">
            {answerParts(answer.answer).map((p, i) => {
              const c = p.cite ? answer.citations[p.cite - 1] : undefined;
              return c ? (
                <a key={i} class="cite" href={citeHref(c)} aria-label={`source ${p.cite}: ${titles[c.document_id] ?? ''}`}>
                  {p.text}
                </a>
              ) : (
                <bdi key={i}>{p.text}</bdi>
              );
            })}
          </p>
          {answer.answer_mode !== 'llm' && answer.citations.length > 0 && (
            <p class="meta">Extractive answer: the sentences below are quoted from the cited documents.</p>
          )}
          {answer.llm_error && <p class="meta">The language model failed ({answer.llm_error}); this is the extractive answer.</p>}
          {answer.citations.length > 0 && (
            <>
              <h3>Sources</h3>
              <ol class="citations">
                {answer.citations.map((c, i) => (
                  <li key={i}>
                    <a href={citeHref(c)}>{titles[c.document_id]}</a>
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
