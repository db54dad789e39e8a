/**
 * Files configuration from the environment (read through src/config/env.ts): which object store, its
 * settings, and the extraction limits.
 */
import path from 'node:path';
import { ConfigError, bool, defineSettings, filePath, int, list, oneOf, read, size, string, url } from '../config/env.ts';
import { SERVER_SETTINGS } from '../config/server.ts';
import { LocalObjectStore, type ObjectStore } from './object-store.ts';
import { DEFAULT_LIMITS, type ExtractLimits } from './limits.ts';
import type { OcrEngine } from '../ocr/engine.ts';

export interface S3Config {
  endpoint: string | undefined;
  bucket: string;
  region: string;
  accessKeyId: string | undefined;
  secretAccessKey: string | undefined;
  forcePathStyle: boolean;
  prefix: string;
}

export interface FilesConfig {
  objectStore: 'local' | 's3';
  /** Local store root (OBJECT_STORE_DIR, default DATA_DIR/objects). Also the parent of the S3 spool folder. */
  localRoot: string;
  s3: S3Config | undefined;
  /** Largest upload accepted by POST /v1/ingest/file (FILE_MAX_BYTES), 413 above it. */
  maxUploadBytes: number;
  extract: ExtractLimits;
  ocr: OcrConfig;
}

/** The server's shared OCR engine (src/ocr/engine.ts) for images and scanned PDFs. */
export interface OcrConfig {
  /** OCR_ENABLED (default true); off: images are stored with enrichment `pending`. */
  enabled: boolean;
  /** OCR_LANGUAGES, comma-separated ISO 639-1 or tesseract codes (default en). */
  languages: string[];
  /** OCR_POOL_SIZE: tesseract workers (default 1). */
  poolSize: number;
  /** OCR_LANG_PATH: extra folders holding <code>.traineddata.gz, separated by the path delimiter. */
  langPaths: string[];
  /** OCR_MAX_QUEUE: images allowed to wait for a busy pool before uploads get 503 (default 32). */
  maxQueue: number;
}

const D = DEFAULT_LIMITS;
const KB = 1024;

export const FILES_SETTINGS = defineSettings('files', 'Files, object store and OCR', {
  FILE_MAX_BYTES: size({
    default: '100mb',
    description: 'largest upload to `POST /v1/ingest/file`; one byte more is a 413 and nothing is stored. Independent of `BODY_LIMIT` (uploads are streamed)',
  }),
  OBJECT_STORE: oneOf(['local', 's3'] as const, { default: 'local', description: '`local` (content-addressed folder) or `s3` (S3-compatible service)' }),
  OBJECT_STORE_DIR: filePath({ defaultText: '`DATA_DIR/objects`', description: 'local store root (also holds the S3 spool folder)' }),
  S3_ENDPOINT: url({ expected: 'be a URL like http://127.0.0.1:9000', defaultText: 'AWS', description: 'URL of an S3-compatible service, e.g. `http://127.0.0.1:9000`' }),
  S3_BUCKET: string({ description: 'required with `OBJECT_STORE=s3`' }),
  S3_REGION: string({ default: 'us-east-1', description: 'region of the bucket' }),
  S3_ACCESS_KEY_ID: string({ defaultText: 'SDK default chain', description: 'set together with `S3_SECRET_ACCESS_KEY`, or neither' }),
  S3_SECRET_ACCESS_KEY: string({ secret: true, defaultText: 'SDK default chain', description: 'set together with `S3_ACCESS_KEY_ID`, or neither' }),
  S3_FORCE_PATH_STYLE: bool({ defaultText: '`true` when `S3_ENDPOINT` is set', description: 'path-style URLs (`endpoint/bucket/key`)' }),
  S3_PREFIX: string({ description: 'key prefix inside the bucket (`memex/` → `memex/sha256/…`)' }),
  EXTRACT_MAX_BYTES: size({ defaultText: `min(${D.maxBytes / KB / KB}mb, \`FILE_MAX_BYTES\`)`, description: 'largest file extraction reads' }),
  EXTRACT_MAX_PAGES: int({ default: D.maxPages, min: 1, max: 100_000, description: 'PDF pages whose text is read' }),
  EXTRACT_MAX_OCR_PAGES: int({ default: D.maxOcrPages, min: 0, max: 10_000, description: "pages of a scanned PDF rendered and OCR'd (0: none)" }),
  EXTRACT_MAX_PIXELS: int({ default: D.maxPixels, min: 10_000, max: 1_000_000_000, description: 'largest image sent to OCR; pixel budget of a rendered PDF page' }),
  EXTRACT_TIMEOUT_MS: int({
    default: D.timeoutMs,
    min: 100,
    max: 3_600_000,
    description: 'wall-clock limit of PDF parsing (worker terminated), and separately of the whole OCR pass of one scanned PDF',
  }),
  EXTRACT_MAX_TEXT_CHARS: int({ default: D.maxTextChars, min: 1_000, max: 1_000_000_000, description: 'longer text is cut (warning recorded)' }),
  EXTRACT_MAX_MEMORY_MB: int({ default: D.maxMemoryMb, min: 64, max: 65_536, description: 'memory limit of each extraction process (PDF, HTML): its heap, and what it holds beyond its idle size (inflated streams included); past it the process is killed and the file is stored with `extraction_failed`' }),
  EXTRACT_MAX_HTML_CHARS: int({ default: D.maxHtmlChars, min: 1_000, max: 1_000_000_000, description: 'longer HTML is cut before conversion (with a warning)' }),
  EXTRACT_HTML_TIMEOUT_MS: int({
    default: D.htmlTimeoutMs,
    min: 100,
    max: 3_600_000,
    description: 'wall-clock budget of one HTML conversion (in a separate process); past it the file is stored with `extraction_failed`',
  }),
  OCR_ENABLED: bool({ default: true, description: '`false`: no OCR engine is started; images are stored with extraction failed and file enrichment `pending`' }),
  OCR_LANGUAGES: list({
    default: ['en'],
    description: 'languages (`en`, `de`, or tesseract codes like `deu`); each needs `<code>.traineddata.gz` in `OCR_LANG_PATH` or the bundled English data',
  }),
  OCR_LANG_PATH: list({ default: [], separator: path.delimiter, description: 'extra folders (separated by `:`, `;` on Windows) holding `<code>.traineddata.gz`, searched before the bundled English data' }),
  OCR_POOL_SIZE: int({ default: 1, min: 1, max: 16, description: 'tesseract worker threads (each ~100 MB; started on first use)' }),
  OCR_MAX_QUEUE: int({ default: 32, min: 0, max: 100_000, description: 'images allowed to wait for a busy pool; beyond it an upload gets 503 `INGEST.OCR_UNAVAILABLE`' }),
  OCR_TIMEOUT_MS: int({ default: D.ocrTimeoutMs, min: 100, max: 3_600_000, description: 'limit of one OCR call' }),
});

export function loadFilesConfig(env: NodeJS.ProcessEnv = process.env, dataDir?: string): FilesConfig {
  const S = FILES_SETTINGS;
  const base = dataDir ?? read(env, SERVER_SETTINGS.DATA_DIR);
  const kind = read(env, S.OBJECT_STORE);
  const localRoot = read(env, S.OBJECT_STORE_DIR) ?? path.join(base, 'objects');

  let s3: S3Config | undefined;
  if (kind === 's3') {
    const bucket = read(env, S.S3_BUCKET);
    if (!bucket) throw new ConfigError('S3_BUCKET is required when OBJECT_STORE=s3');
    const endpoint = read(env, S.S3_ENDPOINT);
    const accessKeyId = read(env, S.S3_ACCESS_KEY_ID);
    const secretAccessKey = read(env, S.S3_SECRET_ACCESS_KEY);
    if (!!accessKeyId !== !!secretAccessKey) {
      throw new ConfigError('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together (or both unset)');
    }
    let prefix = read(env, S.S3_PREFIX) ?? '';
    if (prefix && !prefix.endsWith('/')) prefix += '/';
    s3 = {
      endpoint,
      bucket,
      region: read(env, S.S3_REGION),
      accessKeyId,
      secretAccessKey,
      // Self-hosted S3 servers rarely have wildcard DNS for virtual-host buckets.
      forcePathStyle: read(env, S.S3_FORCE_PATH_STYLE) ?? endpoint !== undefined,
      prefix,
    };
  }

  const maxUploadBytes = read(env, S.FILE_MAX_BYTES);
  const extract: ExtractLimits = {
    maxBytes: read(env, S.EXTRACT_MAX_BYTES) ?? Math.min(D.maxBytes, maxUploadBytes),
    maxPages: read(env, S.EXTRACT_MAX_PAGES),
    maxOcrPages: read(env, S.EXTRACT_MAX_OCR_PAGES),
    maxPixels: read(env, S.EXTRACT_MAX_PIXELS),
    timeoutMs: read(env, S.EXTRACT_TIMEOUT_MS),
    ocrTimeoutMs: read(env, S.OCR_TIMEOUT_MS),
    maxTextChars: read(env, S.EXTRACT_MAX_TEXT_CHARS),
    maxMemoryMb: read(env, S.EXTRACT_MAX_MEMORY_MB),
    maxHtmlChars: read(env, S.EXTRACT_MAX_HTML_CHARS),
    htmlTimeoutMs: read(env, S.EXTRACT_HTML_TIMEOUT_MS),
  };
  const ocr: OcrConfig = {
    enabled: read(env, S.OCR_ENABLED),
    languages: read(env, S.OCR_LANGUAGES),
    poolSize: read(env, S.OCR_POOL_SIZE),
    langPaths: read(env, S.OCR_LANG_PATH).map((p) => path.resolve(p)),
    maxQueue: read(env, S.OCR_MAX_QUEUE),
  };
  if (ocr.languages.length === 0) throw new ConfigError('OCR_LANGUAGES must name at least one language, e.g. en');
  return { objectStore: kind, localRoot, s3, maxUploadBytes, extract, ocr };
}

/**
 * The shared OCR engine as configured, or undefined when OCR_ENABLED=false. Workers start lazily; a missing language
 * file is a ConfigError at start, not a failure at the first image.
 */
export async function createConfiguredOcrEngine(config: FilesConfig): Promise<OcrEngine | undefined> {
  if (!config.ocr.enabled) return undefined;
  const { createOcrEngine, DEFAULT_LANG_PATH, OcrError } = await import('../ocr/engine.ts');
  try {
    return createOcrEngine({
      languages: config.ocr.languages,
      timeoutMs: config.extract.ocrTimeoutMs,
      poolSize: config.ocr.poolSize,
      maxPixels: config.extract.maxPixels,
      maxBytes: config.extract.maxBytes,
      maxQueue: config.ocr.maxQueue,
      langPaths: [...config.ocr.langPaths, DEFAULT_LANG_PATH],
    });
  } catch (err) {
    if (err instanceof OcrError) throw new ConfigError(`OCR_LANGUAGES: ${err.message}`);
    throw err;
  }
}

/** Opens the configured store (creating folders, cleaning crashed writers' temp files). */
export async function createObjectStore(config: FilesConfig): Promise<ObjectStore> {
  if (config.objectStore === 's3') {
    const s3 = config.s3!;
    const { S3ObjectStore } = await import('./s3-store.ts');
    return S3ObjectStore.open({
      bucket: s3.bucket,
      endpoint: s3.endpoint,
      region: s3.region,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: s3.forcePathStyle,
      prefix: s3.prefix,
      tmpDir: path.join(config.localRoot, 's3-spool'),
    });
  }
  return LocalObjectStore.open({ root: config.localRoot });
}
