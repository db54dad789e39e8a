/**
 * Bridges the agent's shared OCR engine (src/ocr/engine.ts) to the collectors: image attachments of
 * chat messages (chatapp) and images in watched folders (fswatch, through src/files/extract.ts).
 */
import fs from 'node:fs/promises';
import type { OcrFunction } from '../../../files/extract.ts';
import type { OcrEngine } from '../../../ocr/engine.ts';
import type { AttachmentEntry, ChatDocument } from './document.ts';

export interface AttachmentOcr {
  text: string;
  /** 0..1, mean of the line confidences (null when no line was found). */
  confidence: number | null;
  language: string;
}

/** extractText's `ocr` plug for the shared engine. */
export function engineOcrFunction(engine: () => OcrEngine, languages?: string[]): OcrFunction {
  return async (image, opts) => {
    const r = await engine().recognize(image, { timeoutMs: opts.timeoutMs, languages });
    const conf = r.ocr_boxes.length ? r.ocr_boxes.reduce((n, b) => n + b.confidence, 0) / r.ocr_boxes.length : undefined;
    return { text: r.ocr_text, confidence: conf, language: r.lang };
  };
}

/** Image types tesseract can read after sharp decodes them (HEIC is not among them: no decoder here). */
const OCR_MIME = /^image\/(png|jpe?g|webp|tiff|gif|bmp|avif)$/i;

export interface ChatOcrOptions {
  engine: () => OcrEngine;
  languages?: string[];
  timeoutMs?: number;
  /** Larger files are not read (config modules.ocr.max_image_bytes). */
  maxBytes: number;
  /** Entries remembered by attachment guid so a message rebuilt for a tapback is not OCR'd again. */
  cacheSize?: number;
  onError?(entry: AttachmentEntry, err: unknown): void;
}

/**
 * Adds `ocr: {text, confidence, language}` to the image attachment entries of chat documents whose file
 * exists. Never throws: an unreadable or undecodable image just gets no OCR (and `onError` is told).
 * The version hash of the chat core does not include `ocr`, so OCR never makes a message look changed.
 */
export function createChatOcr(opts: ChatOcrOptions): (docs: ChatDocument[]) => Promise<void> {
  const cache = new Map<string, AttachmentOcr | null>();
  const cacheSize = opts.cacheSize ?? 2000;
  return async (docs) => {
    for (const doc of docs) {
      for (const entry of doc.metadata.attachments) {
        if (entry.kind !== 'image' || !OCR_MIME.test(entry.mime_type) || !entry.source_ref.path) continue;
        let result = cache.get(entry.id);
        if (result === undefined) {
          result = await ocrOne(entry, opts);
          if (cache.size >= cacheSize) cache.delete(cache.keys().next().value as string);
          cache.set(entry.id, result);
        }
        if (result && result.text.trim()) (entry as AttachmentEntry & { ocr?: AttachmentOcr }).ocr = result;
      }
    }
  };
}

async function ocrOne(entry: AttachmentEntry, opts: ChatOcrOptions): Promise<AttachmentOcr | null> {
  const file = entry.source_ref.path!;
  try {
    const st = await fs.stat(file);
    if (!st.isFile() || st.size === 0 || st.size > opts.maxBytes) return null;
    const buf = await fs.readFile(file);
    const r = await opts.engine().recognize(buf, { timeoutMs: opts.timeoutMs, languages: opts.languages });
    const conf = r.ocr_boxes.length ? r.ocr_boxes.reduce((n, b) => n + b.confidence, 0) / r.ocr_boxes.length : null;
    return { text: r.ocr_text.trim(), confidence: conf === null ? null : Math.round(conf * 1000) / 1000, language: r.lang };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') opts.onError?.(entry, err);
    return null;
  }
}
