/**
 * Sources and status: documents per source and account with their last ingest, the embedding
 * queue, failures with reasons and a retry, and uploads by drag and drop (or a file picker) with
 * per-file progress through POST /v1/ingest/file.
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response types: type-only imports, erased in the build, so no server code is bundled.
import type { SourcesResponseT } from '../../../src/schemas/stats.ts';
import type { StatusResponseT } from '../../../src/schemas/status.ts';
import { call, uploadFile } from '../api.ts';
import { ErrorNote, formatBytes, Page, SourceBadge, When } from '../components.tsx';
import { ForgetPanel } from '../forget.tsx';
import { href } from '../router.ts';
import { CoverageSection } from './coverage.tsx';
import { RunningSourcesSection } from './running-sources.tsx';

type SourceRow = SourcesResponseT['sources'][number];
interface Upload {
  id: number;
  name: string;
  size: number;
  loaded: number;
  state: 'uploading' | 'done' | 'duplicate' | 'failed';
  message?: string;
  docId?: string;
}

let nextUpload = 1;

export function SourcesPage() {
  const [sources, setSources] = useState<SourceRow[] | null>(null);
  const [status, setStatus] = useState<StatusResponseT | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [uploads, setUploads] = useState<Upload[]>([]);
  const [over, setOver] = useState(false);
  const [retried, setRetried] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);
  const [forgetting, setForgetting] = useState<SourceRow | null>(null);

  useEffect(() => {
    const ctl = new AbortController();
    Promise.all([call('sourceStats', {}, { signal: ctl.signal }), call('status', {}, { signal: ctl.signal })])
      .then(([s, st]) => {
        setSources(s.sources);
        setStatus(st);
      })
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [refresh]);

  function patch(id: number, p: Partial<Upload>) {
    setUploads((list) => list.map((u) => (u.id === id ? { ...u, ...p } : u)));
  }

  async function send(files: File[]) {
    const items = files.map((f) => ({ id: nextUpload++, name: f.name, size: f.size, loaded: 0, state: 'uploading' as const }));
    setUploads((list) => [...items, ...list]);
    // One at a time: the server extracts text (and OCR) per file; parallel uploads only queue there.
    for (const [i, file] of files.entries()) {
      const id = items[i].id;
      try {
        const r = await uploadFile(file, (p) => patch(id, { loaded: p.loaded }));
        patch(id, { loaded: file.size, state: r.duplicate ? 'duplicate' : 'done', docId: r.doc_id });
      } catch (err) {
        patch(id, { state: 'failed', message: (err as Error).message });
      }
    }
    setRefresh((n) => n + 1);
  }

  async function retry() {
    try {
      const r = await call('reindexFailed', {});
      setRetried(`${r.queued} ${r.queued === 1 ? 'chunk' : 'chunks'} queued again for embedding.`);
      setRefresh((n) => n + 1);
    } catch (err) {
      setError(err);
    }
  }

  return (
    <Page title="Sources">
      <section aria-labelledby="upload-h">
        <h2 id="upload-h">Upload</h2>
        <div
          class={over ? 'dropzone over' : 'dropzone'}
          onDragOver={(e) => {
            e.preventDefault();
            setOver(true);
          }}
          onDragLeave={() => setOver(false)}
          onDrop={(e) => {
            e.preventDefault();
            setOver(false);
            const files = [...(e.dataTransfer?.files ?? [])];
            if (files.length) void send(files);
          }}
        >
          <p>Drop files here, or</p>
          <label class="button" for="files">
            Choose files
          </label>
          <input
            id="files"
            class="visually-hidden"
            type="file"
            multiple
            onChange={(e) => {
              const files = [...(e.currentTarget.files ?? [])];
              e.currentTarget.value = '';
              if (files.length) void send(files);
            }}
          />
        </div>
        {uploads.length > 0 && (
          <ul class="uploads" aria-live="polite">
            {uploads.map((u) => (
              <li key={u.id} class={`upload ${u.state}`}>
                <bdi class="name">{u.name}</bdi> <span class="meta">{formatBytes(u.size)}</span>{' '}
                <progress max={u.size || 1} value={u.loaded} aria-label={`Upload of ${u.name}`} />{' '}
                <span class="state">
                  {u.state === 'uploading' && 'uploading…'}
                  {u.state === 'done' && 'stored'}
                  {u.state === 'duplicate' && 'already stored'}
                  {u.state === 'failed' && <>failed: <bdi>{u.message}</bdi></>}
                </span>{' '}
                {u.docId && <a href={href(`doc/${u.docId}`)}>open</a>}
              </li>
            ))}
          </ul>
        )}
      </section>

      <ErrorNote error={error} />

      {status?.disk?.full && (
        <section aria-labelledby="disk-full-h" class="notice" role="alert">
          <h2 id="disk-full-h">The disk is full</h2>
          <p>
            {status.disk.message} Uploads and imports are refused with 507 until there is room; nothing already stored is lost.
            {status.disk.data_dir_free_bytes !== null && ` Free now: ${(status.disk.data_dir_free_bytes / 1e6).toFixed(1)} MB.`}
          </p>
        </section>
      )}

      {status?.stored_redaction && status.stored_redaction.documents > 0 && (
        <section aria-labelledby="redacted-h">
          <h2 id="redacted-h">Redacted text in the store</h2>
          <p>
            {status.stored_redaction.documents} {status.stored_redaction.documents === 1 ? 'document was' : 'documents were'} stored with
            email addresses and numbers replaced by markers such as [EMAIL_REDACTED] (
            {status.stored_redaction.by_source.map((r) => `${r.count} ${r.source_type}`).join(', ')}). memex now keeps mail as written;
            importing the same mail again (<code>memex import mail PATH</code>) replaces each with its original, kept as a new version.
          </p>
        </section>
      )}

      {status && (
        <section aria-labelledby="queue-h">
          <h2 id="queue-h">Embedding queue</h2>
          <dl class="stats">
            <div><dt>pending</dt><dd>{status.chunks.pending}</dd></div>
            <div><dt>processing</dt><dd>{status.chunks.processing}</dd></div>
            <div><dt>embedded</dt><dd>{status.chunks.embedded}</dd></div>
            <div><dt>failed</dt><dd>{status.chunks.failed}</dd></div>
            <div><dt>per second (15 min)</dt><dd>{status.throughput.chunks_embedded.last_15_minutes.toFixed(2)}</dd></div>
          </dl>
          {(status.failures.chunks.length > 0 || status.failures.documents.length > 0) && (
            <>
              <h3>Failures</h3>
              <ul class="failures">
                {status.failures.chunks.map((f) => (
                  <li key={`c${f.reason}`}>
                    {f.count} {f.count === 1 ? 'chunk' : 'chunks'} not embedded: {f.reason}
                  </li>
                ))}
                {status.failures.documents.map((f) => (
                  <li key={`d${f.source_type}${f.reason}`}>
                    {f.count} {f.source_type} {f.count === 1 ? 'document' : 'documents'}: <bdi>{f.reason}</bdi>
                  </li>
                ))}
              </ul>
              {status.chunks.failed > 0 && (
                <button type="button" onClick={retry}>
                  Retry failed chunks
                </button>
              )}
            </>
          )}
          {retried && <p role="status">{retried}</p>}
        </section>
      )}

      <RunningSourcesSection />

      <CoverageSection />

      {sources && (
        <section aria-labelledby="sources-h">
          <h2 id="sources-h">Documents by source</h2>
          <div class="table-wrap">
            <table class="stack">
              <thead>
                <tr>
                  <th scope="col">Source</th>
                  <th scope="col">Account</th>
                  <th scope="col">Documents</th>
                  <th scope="col">With attachments</th>
                  <th scope="col">Last ingest</th>
                  <th scope="col">Newest item</th>
                  <th scope="col"><span class="visually-hidden">Actions</span></th>
                </tr>
              </thead>
              <tbody>
                {sources.map((s) => (
                  <tr key={`${s.source_type}/${s.source_account_id}`}>
                    <td data-label="Source"><a href={href('search', { source_type: s.source_type })}><SourceBadge type={s.source_type} /></a></td>
                    <td data-label="Account">{s.source_account_id ?? '—'}</td>
                    <td data-label="Documents">{s.documents}</td>
                    <td data-label="With attachments">{s.with_attachments}</td>
                    <td data-label="Last ingest"><When iso={s.last_ingested_at} withTime /></td>
                    <td data-label="Newest item"><When iso={s.last_content_at} /></td>
                    <td>
                      <button
                        type="button"
                        class="link"
                        aria-label={`Forget ${s.source_type}${s.source_account_id ? ` (${s.source_account_id})` : ''}`}
                        onClick={() => setForgetting(s)}
                      >
                        Forget…
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {forgetting && (
            <ForgetPanel
              key={`${forgetting.source_type}/${forgetting.source_account_id}`}
              ask
              target={{ source_type: forgetting.source_type, ...(forgetting.source_account_id ? { source_account_id: forgetting.source_account_id } : {}) }}
              what={`every ${forgetting.source_type} document${forgetting.source_account_id ? ` of ${forgetting.source_account_id}` : ''}`}
              onDone={() => {
                setForgetting(null);
                setRefresh((n) => n + 1);
              }}
            />
          )}
        </section>
      )}
    </Page>
  );
}
