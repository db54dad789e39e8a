/**
 * Stored files shown in the page: a PDF (below) and an image (ImageViewer, at the end).
 *
 * The PDF viewer: pdf.js from npm (pdfjs-dist), bundled by the build and loaded only when a PDF
 * is opened. Its worker is a file of the build served from the app's own origin, as the page's CSP
 * requires (script-src 'self', no CDN); no code is compiled from the document (isEvalSupported: false).
 * The bytes come from GET /v1/files/{sha256} with the session cookie; one page at a time on a canvas
 * the width of the page's column.
 */
import type { PDFDocumentProxy, RenderTask } from 'pdfjs-dist';
import workerUrl from 'pdfjs-dist/build/pdf.worker.min.mjs?url';
import { useEffect, useRef, useState } from 'preact/hooks';
import { fileUrl } from './api.ts';

type PdfJs = typeof import('pdfjs-dist');
let pdfjsLoading: Promise<PdfJs> | null = null;

function loadPdfJs(): Promise<PdfJs> {
  pdfjsLoading ??= import('pdfjs-dist').then((pdfjs) => {
    pdfjs.GlobalWorkerOptions.workerSrc = workerUrl;
    return pdfjs;
  });
  return pdfjsLoading;
}

export function PdfViewer({ sha256, name }: { sha256: string; name: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const [doc, setDoc] = useState<PDFDocumentProxy | null>(null);
  const [page, setPage] = useState(1);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let gone = false;
    let destroy: (() => Promise<void>) | null = null;
    setDoc(null);
    setPage(1);
    setError(null);
    (async () => {
      const pdfjs = await loadPdfJs();
      const res = await fetch(fileUrl(sha256), { credentials: 'same-origin' });
      if (!res.ok) throw new Error(`the file could not be read (HTTP ${res.status})`);
      const task = pdfjs.getDocument({ data: new Uint8Array(await res.arrayBuffer()), isEvalSupported: false, enableXfa: false });
      destroy = () => task.destroy();
      const d = await task.promise;
      if (!gone) setDoc(d);
    })().catch((err: Error) => gone || setError(err?.message ?? String(err)));
    return () => {
      gone = true;
      void destroy?.().catch(() => {});
    };
  }, [sha256]);

  useEffect(() => {
    const el = canvas.current;
    if (!doc || !el) return;
    let task: RenderTask | null = null;
    let gone = false;
    (async () => {
      const p = await doc.getPage(page);
      if (gone) return;
      const base = p.getViewport({ scale: 1 });
      const cssWidth = Math.min(el.parentElement?.clientWidth ?? base.width, 900);
      const ratio = window.devicePixelRatio || 1;
      const viewport = p.getViewport({ scale: (cssWidth / base.width) * ratio });
      el.width = Math.floor(viewport.width);
      el.height = Math.floor(viewport.height);
      el.style.width = `${Math.floor(viewport.width / ratio)}px`;
      task = p.render({ canvas: el, viewport });
      await task.promise;
      el.dataset.rendered = String(page);
    })().catch((err: Error) => {
      if (!gone && err?.name !== 'RenderingCancelledException') setError(err?.message ?? String(err));
    });
    return () => {
      gone = true;
      task?.cancel();
    };
  }, [doc, page]);

  const pages = doc?.numPages ?? 0;
  return (
    <figure class="pdf-viewer" aria-label={`PDF: ${name}`}>
      <div class="pdf-toolbar">
        <button type="button" disabled={!doc || page <= 1} onClick={() => setPage(page - 1)}>
          Previous page
        </button>
        <span class="pdf-page-number" aria-live="polite">
          {error ? '' : doc ? `Page ${page} of ${pages}` : 'Opening…'}
        </span>
        <button type="button" disabled={!doc || page >= pages} onClick={() => setPage(page + 1)}>
          Next page
        </button>
      </div>
      {error ? (
        <p class="error" role="alert">
          The PDF could not be shown: {error}
        </p>
      ) : (
        <canvas ref={canvas} class="pdf-page" role="img" aria-label={`Page ${page} of ${name}`} />
      )}
    </figure>
  );
}

/**
 * A stored image at its own size (up to the column's width), in the page. Downloads are served as
 * attachments (never rendered on the app's origin), so the bytes are fetched and shown from a blob: URL
 * of the image's type, which the CSP's img-src allows; an <img> never runs script, SVG included.
 */
export function ImageViewer({ sha256, name, mimeType }: { sha256: string; name: string; mimeType: string }) {
  const [url, setUrl] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    let gone = false;
    let made: string | null = null;
    fetch(fileUrl(sha256), { credentials: 'same-origin' })
      .then(async (res) => {
        if (!res.ok) throw new Error(`the file could not be read (HTTP ${res.status})`);
        const blob = new Blob([await res.arrayBuffer()], { type: mimeType });
        if (gone) return;
        made = URL.createObjectURL(blob);
        setUrl(made);
      })
      .catch((err: Error) => gone || setError(err?.message ?? String(err)));
    return () => {
      gone = true;
      if (made) URL.revokeObjectURL(made);
    };
  }, [sha256, mimeType]);
  if (error) {
    return (
      <p class="error" role="alert">
        The image could not be shown: {error}
      </p>
    );
  }
  return <figure class="image-viewer">{url ? <img class="full" src={url} alt={name} /> : <p class="status">Opening…</p>}</figure>;
}
