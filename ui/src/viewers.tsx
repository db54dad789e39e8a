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
import { fileUrl, imageUrl } from './api.ts';

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
 * A stored image at its own size (up to the column's width), in the page. The <img> loads
 * GET /v1/files/{sha}/image, which the server answers only for a raster image, with the type it read
 * from the bytes and a sandboxing CSP; the page never makes a blob: of stored bytes with a type a sender
 * chose (an SVG opened from such a blob runs on the app's origin: issue 47 item 1).
 */
export function ImageViewer({ sha256, name }: { sha256: string; name: string }) {
  const [failed, setFailed] = useState(false);
  useEffect(() => setFailed(false), [sha256]);
  if (failed) {
    return (
      <p class="error" role="alert">
        The image could not be shown: it is not an image the page shows (download it instead).
      </p>
    );
  }
  return (
    <figure class="image-viewer">
      <img class="full" src={imageUrl(sha256)} alt={name} decoding="async" onError={() => setFailed(true)} />
    </figure>
  );
}
