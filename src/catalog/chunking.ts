/**
 * Splits document text into overlapping chunks for search and embedding (spec-notes A2.3):
 * windows of about 1,200 characters with 200 of overlap, cut at the last newline or space in the
 * second half of the window so words are not split.
 */
export const CHUNK_SIZE = 1200;
export const CHUNK_OVERLAP = 200;

export interface TextChunk {
  text: string;
  /** Offsets into the normalised document text, end exclusive (for citations). */
  start: number;
  end: number;
}

export function chunkText(text: string, size = CHUNK_SIZE, overlap = CHUNK_OVERLAP): TextChunk[] {
  const chunks: TextChunk[] = [];
  const n = text.length;
  let start = 0;
  while (start < n) {
    let end = Math.min(start + size, n);
    if (end < n) {
      const window = text.slice(start, end);
      const cut = Math.max(window.lastIndexOf('\n'), window.lastIndexOf(' '));
      if (cut >= size / 2) end = start + cut;
    }
    const raw = text.slice(start, end);
    const lead = raw.length - raw.trimStart().length;
    const piece = raw.trim();
    if (piece) chunks.push({ text: piece, start: start + lead, end: start + lead + piece.length });
    if (end >= n) break;
    start = Math.max(start + 1, end - overlap);
  }
  return chunks;
}
