/**
 * Offline OCR engine: tesseract.js (WASM) with traineddata shipped in npm packages, shared by the host
 * agent's POST /v1/ocr and the server's file extraction.
 *
 * Why it is shaped like this:
 * - A tesseract worker loads ~10 MB of traineddata and takes a second or two to start, so workers are
 *   created lazily and kept in a small pool (default 1: the machine has 2 cores shared with everything).
 * - tesseract.js cannot cancel a running job; the only way to honour a per-image timeout is to terminate
 *   the worker thread. A timed-out worker is thrown away and the next request starts a fresh one.
 * - Images are decoded by sharp first: we learn the dimensions (to refuse decompression bombs with a clear
 *   error before the pixels are expanded), apply the EXIF orientation and hand tesseract a plain PNG, so
 *   any format sharp reads (JPEG, PNG, WebP, TIFF, GIF, AVIF) works the same; BMP and Netpbm, which sharp
 *   cannot read, are decoded by src/ocr/raster.ts.
 * - Nothing is downloaded at run time: `langPath` points at a folder of `<code>.traineddata.gz` files
 *   (default: the one inside @tesseract.js-data/eng) and `cacheMethod: 'none'` stops tesseract.js from
 *   writing a cache next to the process.
 */
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import type { Metadata } from 'sharp';
import { loadSharp } from '../util/sharp.ts';
import { createWorker, type Worker } from 'tesseract.js';
import { sniffRaster, toPng } from './raster.ts';

const require = createRequire(import.meta.url);

/** Folder of eng.traineddata.gz inside @tesseract.js-data/eng (the only language shipped by default). */
export const DEFAULT_LANG_PATH: string = (require('@tesseract.js-data/eng') as { langPath: string }).langPath;
const TESSERACT_VERSION: string = (require('tesseract.js/package.json') as { version: string }).version;

export interface OcrBox {
  text: string;
  /** [x, y, width, height] as fractions of the image width/height, each within 0..1. */
  bbox: [number, number, number, number];
  level: 'line';
  /** 0..1 */
  confidence: number;
}

export interface OcrResult {
  ocr_text: string;
  ocr_boxes: OcrBox[];
  /** First requested language, in the form it was configured (e.g. "en"). */
  lang: string;
  tooling: { vision: string; tesseract: string };
  timings_ms: { read?: number; ocr: number; total: number };
  /** Decoded image size in pixels (useful to callers scaling the fractional boxes back). */
  image: { width: number; height: number };
}

export interface RecognizeOptions {
  languages?: string[];
  timeoutMs?: number;
  /** Time already spent reading the image (e.g. a file or URL fetch); reported as timings_ms.read. */
  readMs?: number;
}

export interface OcrEngine {
  recognize(image: Buffer, opts?: RecognizeOptions): Promise<OcrResult>;
  close(): Promise<void>;
}

export interface OcrEngineOptions {
  /** Languages as ISO 639-1 ("en") or tesseract codes ("eng"); default ["en"]. */
  languages?: string[];
  /** Per-image recognition timeout; default 10000 ms. */
  timeoutMs?: number;
  /** Workers per language set; default 1. */
  poolSize?: number;
  /** Folder(s) holding <code>.traineddata.gz; searched in order. Default: @tesseract.js-data/eng. */
  langPaths?: string[];
  /** Largest accepted image in pixels (width × height); default 40 megapixels. */
  maxPixels?: number;
  /** Largest accepted encoded image in bytes; default 20 MiB. */
  maxBytes?: number;
  /** Requests allowed to wait for a busy pool before new ones are refused; default 32. */
  maxQueue?: number;
}

/** Error codes map onto HTTP statuses in the agent (see src/agent/routes/ocr.ts). */
export type OcrErrorCode =
  | 'invalid_image' // not an image sharp can decode -> 400
  | 'image_too_large' // bytes or pixels over the cap -> 413
  | 'unsupported_language' // traineddata not installed -> 400
  | 'timeout' // recognition exceeded the per-image timeout -> 504
  | 'busy' // queue full -> 503
  | 'closed' // engine closed -> 503
  | 'engine_failure'; // tesseract itself failed -> 500

export class OcrError extends Error {
  override name = 'OcrError';
  constructor(
    readonly code: OcrErrorCode,
    message: string,
  ) {
    super(message);
  }
}

const ISO_TO_TESSERACT: Record<string, string> = {
  en: 'eng', de: 'deu', fr: 'fra', es: 'spa', it: 'ita', pt: 'por', nl: 'nld', sv: 'swe', da: 'dan',
  no: 'nor', fi: 'fin', pl: 'pol', cs: 'ces', ru: 'rus', uk: 'ukr', ja: 'jpn', ko: 'kor',
  zh: 'chi_sim', 'zh-hans': 'chi_sim', 'zh-hant': 'chi_tra', ar: 'ara', he: 'heb', tr: 'tur', el: 'ell',
};

/** "en" -> "eng"; three-letter and underscore codes pass through. */
export function toTesseractLang(lang: string): string {
  const l = lang.trim().toLowerCase();
  return ISO_TO_TESSERACT[l] ?? l;
}

/** Finds the folder holding <code>.traineddata.gz, or throws unsupported_language. */
export function resolveLangPath(codes: string[], langPaths: string[]): string {
  for (const dir of langPaths) {
    if (codes.every((c) => fs.existsSync(path.join(dir, `${c}.traineddata.gz`)))) return dir;
  }
  throw new OcrError(
    'unsupported_language',
    `OCR language(s) ${codes.join('+')} not installed: no ${codes.map((c) => `${c}.traineddata.gz`).join(', ')} in ${langPaths.join(', ')}`,
  );
}

/** A fixed-size set of tesseract workers for one language combination. */
class WorkerPool {
  private idle: Worker[] = [];
  private live = 0;
  private waiters: Array<{ resolve: (w: Worker) => void; reject: (e: unknown) => void }> = [];
  private closed = false;

  constructor(
    private readonly codes: string[],
    private readonly langPath: string,
    private readonly size: number,
    private readonly maxQueue: number,
  ) {}

  private async spawn(): Promise<Worker> {
    this.live++;
    try {
      return await createWorker(this.codes, 1, {
        langPath: this.langPath,
        gzip: true,
        cacheMethod: 'none',
        // tesseract.js logs worker errors to the console by default; we surface them as OcrError instead.
        errorHandler: () => {},
      });
    } catch (err) {
      this.live--;
      throw new OcrError('engine_failure', `Could not start the OCR engine: ${(err as Error).message ?? err}`);
    }
  }

  async acquire(): Promise<Worker> {
    if (this.closed) throw new OcrError('closed', 'OCR engine is closed');
    const w = this.idle.pop();
    if (w) return w;
    if (this.live < this.size) return this.spawn();
    if (this.waiters.length >= this.maxQueue) throw new OcrError('busy', 'OCR engine is busy, try again later');
    return new Promise<Worker>((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  release(w: Worker): void {
    const next = this.waiters.shift();
    if (next) next.resolve(w);
    else if (this.closed) void w.terminate().catch(() => {});
    else this.idle.push(w);
  }

  /** Drops a worker that timed out or failed; a waiting request gets a freshly started one. */
  discard(w: Worker): void {
    this.live--;
    void w.terminate().catch(() => {});
    const next = this.waiters.shift();
    if (next) this.spawn().then(next.resolve, next.reject);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const waiter of this.waiters.splice(0)) waiter.reject(new OcrError('closed', 'OCR engine is closed'));
    const idle = this.idle.splice(0);
    this.live -= idle.length;
    await Promise.all(idle.map((w) => w.terminate().catch(() => {})));
  }
}

const clamp01 = (n: number): number => (Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0);
const round4 = (n: number): number => Math.round(n * 10_000) / 10_000;

interface TessLine {
  text: string;
  confidence: number;
  bbox: { x0: number; y0: number; x1: number; y1: number };
}

/** Line boxes from tesseract's block tree, normalised to fractions of the image size. */
export function linesToBoxes(
  blocks: Array<{ paragraphs: Array<{ lines: TessLine[] }> }> | null,
  width: number,
  height: number,
): OcrBox[] {
  const boxes: OcrBox[] = [];
  for (const block of blocks ?? []) {
    for (const para of block.paragraphs ?? []) {
      for (const line of para.lines ?? []) {
        const text = line.text.replace(/\s+/g, ' ').trim();
        if (!text) continue;
        const x0 = clamp01(line.bbox.x0 / width);
        const y0 = clamp01(line.bbox.y0 / height);
        const x1 = clamp01(line.bbox.x1 / width);
        const y1 = clamp01(line.bbox.y1 / height);
        boxes.push({
          text,
          bbox: [round4(x0), round4(y0), round4(Math.max(0, x1 - x0)), round4(Math.max(0, y1 - y0))],
          level: 'line',
          confidence: round4(clamp01(line.confidence / 100)),
        });
      }
    }
  }
  return boxes;
}

export function createOcrEngine(options: OcrEngineOptions = {}): OcrEngine {
  const defaultLanguages = options.languages?.length ? options.languages : ['en'];
  const defaultTimeout = options.timeoutMs ?? 10_000;
  const poolSize = Math.max(1, options.poolSize ?? 1);
  const langPaths = options.langPaths?.length ? options.langPaths : [DEFAULT_LANG_PATH];
  const maxPixels = options.maxPixels ?? 40_000_000;
  const maxBytes = options.maxBytes ?? 20 * 1024 * 1024;
  const maxQueue = options.maxQueue ?? 32;
  const pools = new Map<string, WorkerPool>();
  let closed = false;

  // Fail at construction, not at the first request, when the configured languages are not installed.
  resolveLangPath(defaultLanguages.map(toTesseractLang), langPaths);

  function poolFor(codes: string[]): WorkerPool {
    const key = codes.join('+');
    let pool = pools.get(key);
    if (!pool) {
      pool = new WorkerPool(codes, resolveLangPath(codes, langPaths), poolSize, maxQueue);
      pools.set(key, pool);
    }
    return pool;
  }

  async function decode(image: Buffer): Promise<{ png: Buffer; width: number; height: number }> {
    if (!Buffer.isBuffer(image) || image.length === 0) throw new OcrError('invalid_image', 'Image is empty');
    if (image.length > maxBytes) {
      throw new OcrError('image_too_large', `Image is ${image.length} bytes; the limit is ${maxBytes} bytes`);
    }
    if (sniffRaster(image)) {
      // BMP and Netpbm: sharp has no loader for them; src/ocr/raster.ts decodes them (with the same pixel cap).
      try {
        return await toPng(image, maxPixels);
      } catch (err) {
        const msg = (err as Error).message;
        throw new OcrError(/over the limit/.test(msg) ? 'image_too_large' : 'invalid_image', `Image could not be decoded: ${msg}`);
      }
    }
    const sharp = await loadSharp();
    let meta: Metadata;
    try {
      meta = await sharp(image).metadata();
    } catch {
      throw new OcrError('invalid_image', 'Not a readable image (supported: PNG, JPEG, WebP, TIFF, GIF, AVIF, BMP, PBM/PGM/PPM)');
    }
    const width = meta.width ?? 0;
    const height = meta.height ?? 0;
    if (!width || !height) throw new OcrError('invalid_image', 'Image has no dimensions');
    if (width * height > maxPixels) {
      throw new OcrError(
        'image_too_large',
        `Image is ${width}x${height} (${width * height} pixels); the limit is ${maxPixels} pixels`,
      );
    }
    try {
      // rotate() with no argument applies EXIF orientation; flatten drops alpha onto white, which
      // tesseract reads better than transparent pixels.
      const { data, info } = await sharp(image, { limitInputPixels: maxPixels })
        .rotate()
        .flatten({ background: '#ffffff' })
        .png({ compressionLevel: 1 })
        .toBuffer({ resolveWithObject: true });
      return { png: data, width: info.width, height: info.height };
    } catch (err) {
      throw new OcrError('invalid_image', `Image could not be decoded: ${(err as Error).message}`);
    }
  }

  return {
    async recognize(image, opts = {}) {
      if (closed) throw new OcrError('closed', 'OCR engine is closed');
      const t0 = performance.now();
      const languages = opts.languages?.length ? opts.languages : defaultLanguages;
      const codes = languages.map(toTesseractLang);
      const timeoutMs = opts.timeoutMs ?? defaultTimeout;
      const pool = poolFor(codes);
      const { png, width, height } = await decode(image);

      const worker = await pool.acquire();
      const tOcr = performance.now();
      let timer: NodeJS.Timeout | undefined;
      let timedOut = false;
      try {
        const result = await Promise.race([
          worker.recognize(png, {}, { blocks: true, text: true }),
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              timedOut = true;
              reject(new OcrError('timeout', `OCR timed out after ${timeoutMs} ms`));
            }, timeoutMs);
          }),
        ]);
        clearTimeout(timer);
        pool.release(worker);
        const ocrMs = performance.now() - tOcr;
        const boxes = linesToBoxes(result.data.blocks as never, width, height);
        const totalMs = performance.now() - t0 + (opts.readMs ?? 0);
        const timings: OcrResult['timings_ms'] = { ocr: Math.round(ocrMs), total: Math.round(totalMs) };
        if (opts.readMs !== undefined) timings.read = Math.round(opts.readMs);
        return {
          ocr_text: boxes.map((b) => b.text).join('\n'),
          ocr_boxes: boxes,
          lang: languages[0],
          tooling: { vision: `tesseract.js/${TESSERACT_VERSION}`, tesseract: TESSERACT_VERSION },
          timings_ms: timings,
          image: { width, height },
        };
      } catch (err) {
        clearTimeout(timer);
        // A timed-out worker is still grinding the image; terminating it is the only way to stop it.
        pool.discard(worker);
        if (timedOut || err instanceof OcrError) throw err;
        throw new OcrError('engine_failure', `OCR failed: ${(err as Error)?.message ?? String(err)}`);
      }
    },
    async close() {
      closed = true;
      await Promise.all([...pools.values()].map((p) => p.close()));
      pools.clear();
    },
  };
}
