/**
 * "Someone is reading": the gateway notes every request from someone waiting for an answer (a search, an ask, a
 * page of the UI, an assistant), and background work on the database gives way for READER_WINDOW_MS after it —
 * on PGlite, import batches are written in small transactions (src/catalog/catalog.ts) and table upkeep waits
 * (upkeep.ts). One signal per database, shared by the server's catalog and its upkeep.
 */

/** How long after the last reader the database counts as being read. */
export const READER_WINDOW_MS = 10_000;

export class ReaderSignal {
  private lastReaderAt = -Infinity;

  /** Someone asked for an answer now. */
  note(): void {
    this.lastReaderAt = performance.now();
  }

  /** Nobody asked for an answer in the last READER_WINDOW_MS (background work may take the database). */
  idle(): boolean {
    return performance.now() - this.lastReaderAt >= READER_WINDOW_MS;
  }
}
