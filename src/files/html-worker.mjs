// HTML to text in a child process (src/files/html-convert.ts runs it through src/files/worker-pool.ts).
//
// Why a separate process: html-to-text parses and walks the document on the calling thread, and a hostile page
// (50,000 nested <div>s, millions of siblings) keeps it busy for seconds. In its own process the server's event loop
// stays free, and the caller enforces a wall-clock budget and a memory limit by killing it.
// Plain JavaScript for the same reason as pdf-worker.mjs: it starts the same way under vitest, tsx and node.
// Once loaded it sends {ready: true, rss}: the caller's time budget starts then, so a cold start is not counted.
// message in {id, html, maxHtmlChars} -> message out {id, ok: true, text} | {id, ok: false, error}.
import { convert } from 'html-to-text';

function options(maxHtmlChars) {
  return {
    wordwrap: false,
    preserveNewlines: false,
    limits: { maxInputLength: maxHtmlChars + 1, maxDepth: 256, maxChildNodes: 100_000 },
    selectors: [
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'noscript', format: 'skip' },
      { selector: 'template', format: 'skip' },
      { selector: 'svg', format: 'skip' },
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'h1', options: { uppercase: false } },
      { selector: 'h2', options: { uppercase: false } },
      { selector: 'h3', options: { uppercase: false } },
      { selector: 'h4', options: { uppercase: false } },
      { selector: 'h5', options: { uppercase: false } },
      { selector: 'h6', options: { uppercase: false } },
      { selector: 'table', format: 'dataTable', options: { uppercaseHeaderCells: false } },
    ],
  };
}

// The server went away (or closed the channel): nothing is left to do.
process.on('disconnect', () => process.exit(0));
process.on('message', ({ id, html, maxHtmlChars }) => {
  try {
    process.send({ id, ok: true, text: convert(html, options(maxHtmlChars)) });
  } catch (e) {
    process.send({ id, ok: false, error: `${e?.name ?? 'Error'}: ${e?.message ?? String(e)}` });
  }
});
process.send({ ready: true, rss: process.memoryUsage.rss() });
