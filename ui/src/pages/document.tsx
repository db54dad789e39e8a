/** Document view: the whole text, people, attachments (OCR text, captions, download), versions and thread. */
import { TagEditor } from '../organize.tsx';
import { useEffect, useState } from 'preact/hooks';
// The API's own response type: a type-only import, erased in the build, so no server code is bundled.
import type { DocumentAttachmentT, DocumentViewResponseT } from '../../../src/schemas/documents.ts';
import { call, ClientError, fileUrl } from '../api.ts';
import { ErrorNote, formatBytes, isUuid, NotFound, previewable, showableImage, SourceBadge, Thumb, titleOf, When } from '../components.tsx';
import { ImageViewer, PdfViewer } from '../viewers.tsx';
import { CalendarFacts } from '../calendar.tsx';
import { href, navigate } from '../router.ts';
// A pure module of the server's (no Node APIs): the same validation of stored spans the embedding worker uses.
import { validBodyParts, type BodyPart } from '../../../src/mail/body-parts.ts';

type DocView = DocumentViewResponseT;

/** `at=START-END` of an ask citation: the quoted sentence's span in the document text, when it lies in it. */
function quotedSpan(at: string | null | undefined, text: string): { start_char: number; end_char: number } | null {
  const m = /^(\d+)-(\d+)$/.exec(at ?? '');
  if (!m) return null;
  const [start, end] = [Number(m[1]), Number(m[2])];
  return start < end && end <= text.length ? { start_char: start, end_char: end } : null;
}

type Cited = Pick<NonNullable<DocView['cited']>, 'start_char' | 'end_char'> | null;

/** text[from, to) with the part of the cited span inside it as a <mark> (the first one carries id="cited"). */
function withMark(text: string, from: number, to: number, cited: Cited) {
  if (!cited || cited.end_char <= from || cited.start_char >= to || cited.end_char <= cited.start_char) return text.slice(from, to);
  const a = Math.max(from, cited.start_char);
  const b = Math.min(to, cited.end_char);
  return (
    <>
      {text.slice(from, a)}
      <mark id={a === cited.start_char ? 'cited' : undefined} class="cited" aria-label="cited passage">
        {text.slice(a, b)}
      </mark>
      {text.slice(b, to)}
    </>
  );
}

/** The text with the cited span (the quoted sentence, else the cited chunk) as a <mark> (text nodes only). */
function DocumentText({ text, cited, parts }: { text: string; cited: Cited; parts: BodyPart[] }) {
  if (parts.length > 0) return <MailText text={text} cited={cited} parts={parts} />;
  if (!cited || cited.end_char <= cited.start_char || cited.start_char >= text.length) return <pre class="text">{text}</pre>;
  return <pre class="text">{withMark(text, 0, text.length, cited)}</pre>;
}

const lineCount = (s: string) => s.split('\n').length;

/**
 * An e-mail stored whole (issue 40): every line is here. Quotes are folded (a <details> that opens on a
 * click, and open when the cited passage is in it), patches in a monospace block, signatures, attributions,
 * forwarded headers and list footers dimmed. Text nodes only: the stored text is data, never HTML.
 */
function MailText({ text, cited, parts }: { text: string; cited: Cited; parts: BodyPart[] }) {
  const out = [];
  let at = 0;
  const own = (from: number, to: number) => {
    if (to > from) out.push(<span key={`o${from}`} class="part-own">{withMark(text, from, to, cited)}</span>);
  };
  for (const p of parts) {
    own(at, p.start);
    const body = withMark(text, p.start, p.end, cited);
    const key = `${p.kind}${p.start}`;
    if (p.kind === 'quote') {
      const n = lineCount(text.slice(p.start, p.end));
      const holdsCited = !!cited && cited.start_char < p.end && cited.end_char > p.start;
      out.push(
        <details key={key} class="part part-quote" open={holdsCited || undefined}>
          <summary>{n === 1 ? '1 quoted line' : `${n} quoted lines`}</summary>
          <div class="part-body">{body}</div>
        </details>,
      );
    } else if (p.kind === 'patch') {
      out.push(
        <pre key={key} class="part part-patch" aria-label="patch">
          <code>{body}</code>
        </pre>,
      );
    } else {
      out.push(<span key={key} class={`part part-${p.kind}`}>{body}</span>);
    }
    at = p.end;
  }
  own(at, text.length);
  return <div class="text mail-text">{out}</div>;
}

/** A stored file's extracted text longer than this is folded below the file (about two screens). */
const FOLDED_FILE_TEXT = 4000;

export function DocumentPage({ id, chunk, at }: { id: string; chunk?: string | null; at?: string | null }) {
  const [view, setView] = useState<DocView | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    const ctl = new AbortController();
    setView(null);
    setError(null);
    if (!isUuid(id)) return;
    call('documentView', { params: { doc_id: id }, query: { chunk_id: chunk } }, { signal: ctl.signal })
      .then((v) => {
        setView(v);
        document.getElementById('doc-title')?.focus();
        requestAnimationFrame(() => document.getElementById('cited')?.scrollIntoView({ block: 'center' }));
      })
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [id, chunk]);

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (e.key !== 'Escape') return;
      const t = e.target as HTMLElement;
      if (/^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName)) return;
      if (history.length > 1) history.back();
      else navigate(href('search'));
    }
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  }, []);

  if (!isUuid(id) || (error instanceof ClientError && error.status === 404)) return <NotFound what="Document" />;
  if (error) return <ErrorNote error={error} />;
  if (!view) return <p class="status">Loading…</p>;
  const d = view.document;
  const attachments = view.attachments ?? [];
  // A stored file is its own attachment: shown first, with its text below.
  const isFile = attachments.some((a) => a.doc_id === d.doc_id);
  const cited = quotedSpan(at, d.text) ?? view.cited;
  const text = <DocumentText text={d.text} cited={cited} parts={validBodyParts((d.metadata as Record<string, unknown>)?.body_parts, d.text.length)} />;
  const attachmentList = attachments.length > 0 && (
    <section aria-labelledby="att-h">
      <h2 id="att-h">{isFile ? 'File' : 'Attachments'}</h2>
      <ul class="attachments">
        {attachments.map((a, i) => (
          <AttachmentItem key={a.doc_id ?? a.sha256 ?? i} a={a} docId={d.doc_id} />
        ))}
      </ul>
    </section>
  );
  return (
    <article class="document">
      <p class="back">
        <a href={href('search')} onClick={(e) => { if (history.length > 1) { e.preventDefault(); history.back(); } }}>
          ← Back to results
        </a>{' '}
        <span class="hint">(Esc)</span>
      </p>
      <h1 id="doc-title" tabIndex={-1}>
        {titleOf(d.title, d.text)}
      </h1>
      {!d.is_active_version && (
        <p class="notice" role="note">
          This is version {d.version_number}, an earlier version of this document.
        </p>
      )}
      <dl class="facts">
        <dt>Source</dt>
        <dd>
          <SourceBadge type={d.source_type} />
          {d.source_provider && <> · <bdi>{d.source_provider}</bdi></>}
          {d.source_account_id && <> · <bdi>{d.source_account_id}</bdi></>}
        </dd>
        <dt>Date</dt>
        <dd>
          <When iso={d.content_timestamp} withTime />
        </dd>
        <dt>Stored</dt>
        <dd>
          <When iso={d.ingested_at} withTime />
        </dd>
        <CalendarFacts
          sourceType={d.source_type}
          metadata={d.metadata}
          due={(d as { due_date?: string | null }).due_date}
          completedAt={(d as { completed_at?: string | null }).completed_at}
        />
        {view.attached_to && (
          <>
            <dt>Attached to</dt>
            <dd>
              <a href={href(`doc/${view.attached_to.doc_id}`)}>
                <bdi>{titleOf(view.attached_to.title)}</bdi>
              </a>{' '}
              · <When iso={view.attached_to.content_timestamp} />
            </dd>
          </>
        )}
        {view.people.length > 0 && (
          <>
            <dt>People</dt>
            <dd>
              <ul class="inline">
                {view.people.map((p) => (
                  <li key={p.person_id + p.role}>
                    <a href={href(`person/${p.person_id}`)}><bdi>{p.display_name}</bdi></a> <span class="role">({p.role})</span>
                  </li>
                ))}
              </ul>
            </dd>
          </>
        )}
      </dl>

      <TagEditor docId={d.doc_id} threadId={d.thread_id ?? null} />

      {view.original && (
        <p class="original">
          {/* The message as it was collected, a download (the server never lets the browser render it). */}
          <a class="button" href={view.original.url} download={`${d.doc_id}.eml`}>
            View original
          </a>{' '}
          <span class="hint">the message as received (.eml, {Math.max(1, Math.round(view.original.size_bytes / 1024))} KB)</span>
        </p>
      )}
      {isFile && attachmentList}
      {isFile && d.text.length > FOLDED_FILE_TEXT ? (
        // An 88-page PDF's text would push its preview and "View the PDF" far down: the file first, its text folded.
        <details class="file-text" open={cited != null}>
          <summary>Text read from the file ({d.text.length.toLocaleString('en')} characters)</summary>
          {text}
        </details>
      ) : (
        text
      )}
      {!isFile && attachmentList}

      {view.thread && view.thread.messages.length > 0 && (
        <section aria-labelledby="thread-h">
          <h2 id="thread-h">Thread{view.thread.title && <>: <bdi>{view.thread.title}</bdi></>}</h2>
          <p class="meta">{view.thread.total} messages in this thread; the ones around this one:</p>
          <ol class="thread">
            {view.thread.messages.map((m) => (
              <li key={m.doc_id} class={m.doc_id === d.doc_id ? 'current' : undefined} aria-current={m.doc_id === d.doc_id ? 'true' : undefined}>
                <When iso={m.content_timestamp} withTime /> {m.sender && <strong><bdi>{m.sender}</bdi>: </strong>}
                {m.doc_id === d.doc_id ? <bdi>{m.excerpt}</bdi> : <a href={href(`doc/${m.doc_id}`)}><bdi>{m.excerpt || titleOf(m.title)}</bdi></a>}
              </li>
            ))}
          </ol>
        </section>
      )}

      {view.versions.length > 1 && (
        <section aria-labelledby="ver-h">
          <h2 id="ver-h">Versions</h2>
          <ol class="versions">
            {view.versions.map((v) => (
              <li key={v.doc_id}>
                {v.doc_id === d.doc_id ? (
                  <strong>version {v.version_number} (shown)</strong>
                ) : (
                  <a href={href(`doc/${v.doc_id}`)}>version {v.version_number}</a>
                )}{' '}
                · stored <When iso={v.ingested_at} withTime />
                {v.is_active_version && ' · current'}
              </li>
            ))}
          </ol>
        </section>
      )}
    </article>
  );
}

/**
 * One attachment: its name, type and size, a thumbnail of an image or PDF, the download of the stored
 * bytes, the attachment's own document (its text, or the text read from it), and a PDF opened in the page.
 */
function AttachmentItem({ a, docId }: { a: DocumentAttachmentT; docId: string }) {
  const [viewing, setViewing] = useState(false);
  const name = a.filename ?? '(no name)';
  const file = a.stored && a.sha256 ? a.sha256 : null;
  const isPdf = a.kind === 'pdf' || /pdf/i.test(a.mime_type ?? '');
  const image = !isPdf && showableImage(a.mime_type, a.kind);
  const own = a.doc_id !== null && a.doc_id !== docId ? a.doc_id : null;
  return (
    <li class="attachment">
      {file && previewable(a.mime_type, a.kind) && (
        own ? (
          <a href={href(`doc/${own}`)} tabIndex={-1} aria-hidden="true">
            <Thumb sha256={file} size="large" />
          </a>
        ) : (
          <Thumb sha256={file} size="large" />
        )
      )}
      <div class="attachment-body">
        <p>
          <strong><bdi>{name}</bdi></strong>{' '}
          <span class="meta">
            {[a.mime_type, a.size_bytes !== null ? formatBytes(a.size_bytes) : null, a.role !== 'attachment' ? a.role : null].filter(Boolean).join(' · ')}
          </span>
        </p>
        <p class="actions">
          {file ? (
            <a class="button" href={fileUrl(file)} download={name} aria-label={`Download ${name}`}>
              Download
            </a>
          ) : (
            <span class="meta">The file is not stored here.</span>
          )}{' '}
          {own && (
            <a href={href(`doc/${own}`)} aria-label={`Open as a document: ${name}`}>
              Open as a document
            </a>
          )}{' '}
          {file && isPdf && (
            <button type="button" class="link" aria-expanded={viewing} onClick={() => setViewing(!viewing)} aria-label={`${viewing ? 'Close the PDF' : 'View the PDF'}: ${name}`}>
              {viewing ? 'Close the PDF' : 'View the PDF'}
            </button>
          )}
          {file && image && (
            <button type="button" class="link" aria-expanded={viewing} onClick={() => setViewing(!viewing)} aria-label={`${viewing ? 'Close the image' : 'View the image'}: ${name}`}>
              {viewing ? 'Close the image' : 'View the image'}
            </button>
          )}
        </p>
        {a.caption && <p class="caption">Caption: <bdi>{a.caption}</bdi></p>}
        {a.ocr?.text && (
          <details>
            <summary>Text found in the file{a.ocr.truncated ? ' (shortened)' : ''}</summary>
            <pre class="text">{a.ocr.text}</pre>
          </details>
        )}
      </div>
      {viewing && file && isPdf && <PdfViewer sha256={file} name={name} />}
      {viewing && file && image && <ImageViewer sha256={file} name={name} />}
    </li>
  );
}
