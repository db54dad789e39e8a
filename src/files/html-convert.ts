/**
 * HTML to readable text off the event loop, within a time and size budget (issue 22: a page of 50,000 nested
 * <div>s kept an upload request, and the server with it, busy for seconds).
 *
 * Longer HTML than `maxHtmlChars` is cut before conversion (with a warning); the conversion runs in a child
 * process (html-worker.mjs) that is killed when it takes longer than `htmlTimeoutMs` or exceeds the memory limit,
 * and the caller gets an HtmlConversionError naming the budget, which extraction reports as a failed extraction (the
 * file is stored with `extraction_failed` and that reason). One long-lived process (WorkerPool) runs one conversion
 * at a time.
 */
import type { ExtractLimits } from './limits.ts';
import { WorkerPool } from './worker-pool.ts';
import { codedError } from '../util/errors.ts';

export class HtmlConversionError extends codedError('FILE.HTML_CONVERSION') {
  override name = 'HtmlConversionError';
}

type Limits = Pick<ExtractLimits, 'maxHtmlChars' | 'htmlTimeoutMs' | 'maxMemoryMb'>;

const htmlWorker = new WorkerPool<{ ok: true; text: string }>({ script: new URL('./html-worker.mjs', import.meta.url), what: 'HTML conversion' });

/** Stops the HTML conversion process (orderly shutdown, tests; it is unref'd, so it never blocks exit). */
export function shutdownHtmlWorker(): Promise<void> {
  return htmlWorker.close();
}

/** Readable text of an HTML page; throws HtmlConversionError when the conversion fails or is over its time or memory budget. */
export async function htmlToReadable(html: string, limits: Limits, warnings: string[]): Promise<string> {
  if (html.length > limits.maxHtmlChars) {
    warnings.push(`HTML cut at ${limits.maxHtmlChars} characters before conversion`);
    html = html.slice(0, limits.maxHtmlChars);
  }
  const reply = await htmlWorker.run({
    message: { html, maxHtmlChars: limits.maxHtmlChars },
    timeoutMs: limits.htmlTimeoutMs,
    memoryMb: limits.maxMemoryMb,
    timeoutError: `HTML conversion exceeded its time budget of ${limits.htmlTimeoutMs} ms`,
  });
  if (!reply.ok) throw new HtmlConversionError(reply.error);
  return reply.text;
}
