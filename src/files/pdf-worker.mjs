// PDF text extraction (and page rendering for OCR) in a child process (src/files/worker-pool.ts starts it).
//
// Why a separate process: pdf.js parses on the calling thread in Node, so a hostile or merely huge PDF could block the
// server's event loop; and it inflates streams into buffers outside the JavaScript heap, which only a process boundary
// bounds (a 1 MB PDF can inflate to gigabytes). The caller enforces a wall-clock limit and a memory limit by killing
// this process, and a crash inside pdf.js cannot take the server down.
// Why plain JavaScript: it is started with plain node (no TypeScript loader) under every runner (vitest, tsx, node);
// an .mjs file starts the same way everywhere. The message shapes are typed in pdf.ts.
// The process is reused for many files (loading pdf.js costs ~100-200 ms); it handles one job at a time:
// message in {id, data, maxPages, maxTextChars, maxImagePixels, render, standardFontDataUrl} -> message out
// {id, ok, ...}; {ready: true, rss} once loaded.
import { UNREADABLE_BELOW, wordShare } from './word-share.mjs';

const pdfjsPromise = import('pdfjs-dist/legacy/build/pdf.mjs');

/** @param {Error & {name?: string}} e */
function describe(e) {
  const name = e?.name ?? 'Error';
  if (name === 'PasswordException') return 'PDF is encrypted (password required)';
  if (name === 'InvalidPDFException') return `not a valid PDF: ${e.message}`;
  return `${name}: ${e?.message ?? String(e)}`;
}

async function run(job) {
  const { data, maxImagePixels, standardFontDataUrl } = job;
  const pdfjs = await pdfjsPromise;
  const task = pdfjs.getDocument({
    data,
    isEvalSupported: false, // never compile code from a document
    disableFontFace: true,
    useSystemFonts: false,
    standardFontDataUrl,
    verbosity: 0,
    stopAtErrors: false,
    // Images larger than this many pixels are not decoded (pdf.js's own bound; inflated content streams have none).
    maxImageSize: maxImagePixels ?? -1,
  });
  try {
    const doc = await task.promise;
    return job.thumbnail ? await firstPage(doc, job.thumbnail) : await readDocument(doc, job);
  } finally {
    // Frees the document (and its fonts/images) even when reading failed: this worker serves the next file.
    await task.destroy().catch(() => {});
  }
}

async function readDocument(doc, { maxPages, maxTextChars, render }) {
  const numPages = doc.numPages;
  const limit = Math.min(numPages, maxPages);
  const warnings = [];
  if (numPages > maxPages) warnings.push(`only the first ${maxPages} of ${numPages} pages were read`);
  const pageTexts = [];
  let total = 0;
  let truncated = false;
  let pagesWithText = 0;
  for (let i = 1; i <= limit; i++) {
    const page = await doc.getPage(i);
    let content;
    try {
      content = await page.getTextContent();
    } catch (e) {
      warnings.push(`page ${i}: ${describe(e)}`);
      page.cleanup();
      pageTexts.push('');
      continue;
    }
    let s = '';
    for (const item of content.items) {
      if (typeof item.str !== 'string') continue;
      s += item.str;
      if (item.hasEOL) s += '\n';
    }
    s = s.replace(/[ \t]+\n/g, '\n').trim();
    if (s.replace(/\s/g, '').length > 0) pagesWithText++;
    if (total + s.length > maxTextChars) {
      s = s.slice(0, Math.max(0, maxTextChars - total));
      truncated = true;
    }
    total += s.length;
    pageTexts.push(s);
    page.cleanup();
    if (truncated) {
      warnings.push(`text truncated at ${maxTextChars} characters`);
      break;
    }
  }

  const visible = pageTexts.join('').replace(/\s/g, '').length;
  // "Scanned": no page had a text layer worth the name (fewer than 3 visible characters per page on average).
  const scanned = visible < 3 * Math.max(1, pageTexts.length);
  // "Unreadable": a text layer that is not text (fonts without a Unicode map give "3HQČåQt" for "Peněžní").
  const share = wordShare(pageTexts.join('\n'));
  const unreadable = !scanned && visible >= 40 && share < UNREADABLE_BELOW;
  /** @type {Uint8Array[]} */
  const images = [];
  let renderer = 'none';
  let renderError;
  if ((scanned || unreadable) && render) {
    let canvasMod;
    try {
      canvasMod = await import('@napi-rs/canvas');
      renderer = '@napi-rs/canvas';
    } catch (e) {
      renderError = `no PDF page renderer: ${describe(e)}`;
    }
    if (canvasMod) {
      const n = Math.min(limit, render.maxPages);
      if (limit > n) warnings.push(`only the first ${n} of ${limit} scanned pages were rendered for OCR`);
      for (let i = 1; i <= n; i++) {
        try {
          const page = await doc.getPage(i);
          const base = page.getViewport({ scale: 1 });
          // ~216 dpi (pdf points are 1/72 in) is a good OCR resolution; shrink to stay under maxPixels.
          let scale = render.scale;
          const px = base.width * base.height * scale * scale;
          if (px > render.maxPixels) scale = Math.sqrt(render.maxPixels / (base.width * base.height));
          const vp = page.getViewport({ scale });
          const w = Math.max(1, Math.floor(vp.width));
          const h = Math.max(1, Math.floor(vp.height));
          const canvas = canvasMod.createCanvas(w, h);
          const ctx = canvas.getContext('2d');
          ctx.fillStyle = '#ffffff';
          ctx.fillRect(0, 0, w, h);
          await page.render({ canvas, canvasContext: ctx, viewport: vp }).promise;
          const png = canvas.toBuffer('image/png');
          images.push(new Uint8Array(png)); // a plain copy, sent back over the process channel
          page.cleanup();
        } catch (e) {
          warnings.push(`page ${i} could not be rendered: ${describe(e)}`);
        }
      }
    }
  }
  return { ok: true, numPages, pagesRead: pageTexts.length, pagesWithText, pageTexts, truncated, scanned, unreadable, wordShare: share, images, renderer, renderError, warnings };
}

/**
 * The first page as a PNG whose longer side is at most maxPx (a thumbnail, src/files/thumbnails.ts): message
 * {id, data, thumbnail: {maxPx}, standardFontDataUrl} -> {id, ok, images: [png], numPages}.
 */
async function firstPage(doc, { maxPx }) {
  const { createCanvas } = await import('@napi-rs/canvas');
  const page = await doc.getPage(1);
  const base = page.getViewport({ scale: 1 });
  const scale = Math.min(maxPx / Math.max(1, base.width), maxPx / Math.max(1, base.height));
  const vp = page.getViewport({ scale });
  const w = Math.max(1, Math.floor(vp.width));
  const h = Math.max(1, Math.floor(vp.height));
  const canvas = createCanvas(w, h);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, w, h);
  await page.render({ canvas, canvasContext: ctx, viewport: vp }).promise;
  page.cleanup();
  return { ok: true, numPages: doc.numPages, images: [new Uint8Array(canvas.toBuffer('image/png'))], warnings: [] };
}

// The pool starts a job's time budget once the process says it is ready (src/files/worker-pool.ts); its idle
// resident size is the base the memory budget comes on top of. Loading pdf.js first makes that size honest.
await pdfjsPromise;
// The server went away (or closed the channel): nothing is left to do.
process.on('disconnect', () => process.exit(0));
process.on('message', (job) => {
  run(job).then(
    (result) => process.send({ id: job.id, ...result }),
    (e) => process.send({ id: job.id, ok: false, error: describe(e) }),
  );
});
process.send({ ready: true, rss: process.memoryUsage.rss() });
