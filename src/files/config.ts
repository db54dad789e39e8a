/**
 * Files configuration from the environment: which object store, its settings, and the extraction limits.
 * Errors are one-line ConfigErrors naming the key, like src/config/server.ts. Documented in docs/files.md.
 */
import path from 'node:path';
import { ConfigError, parseByteSize } from '../config/server.ts';
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

function opt(env: NodeJS.ProcessEnv, key: string): string | undefined {
  const v = env[key];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function bool(env: NodeJS.ProcessEnv, key: string, def: boolean): boolean {
  const v = opt(env, key)?.toLowerCase();
  if (v === undefined) return def;
  if (['1', 'true', 'yes', 'on'].includes(v)) return true;
  if (['0', 'false', 'no', 'off'].includes(v)) return false;
  throw new ConfigError(`${key} must be true or false, got "${env[key]}"`);
}

function int(env: NodeJS.ProcessEnv, key: string, def: number, min: number, max: number): number {
  const v = opt(env, key);
  if (v === undefined) return def;
  if (!/^\d+$/.test(v)) throw new ConfigError(`${key} must be an integer, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(`${key} must be between ${min} and ${max}, got ${n}`);
  return n;
}


export function loadFilesConfig(env: NodeJS.ProcessEnv = process.env, dataDir?: string): FilesConfig {
  const base = dataDir ?? path.resolve(opt(env, 'DATA_DIR') ?? './data');
  const kind = (opt(env, 'OBJECT_STORE') ?? 'local').toLowerCase();
  if (kind !== 'local' && kind !== 's3') throw new ConfigError(`OBJECT_STORE must be local or s3, got "${env.OBJECT_STORE}"`);
  const localRoot = path.resolve(opt(env, 'OBJECT_STORE_DIR') ?? path.join(base, 'objects'));

  let s3: S3Config | undefined;
  if (kind === 's3') {
    const bucket = opt(env, 'S3_BUCKET');
    if (!bucket) throw new ConfigError('S3_BUCKET is required when OBJECT_STORE=s3');
    const endpoint = opt(env, 'S3_ENDPOINT');
    if (endpoint) {
      let u: URL;
      try {
        u = new URL(endpoint);
      } catch {
        throw new ConfigError(`S3_ENDPOINT must be a URL like http://127.0.0.1:9000, got "${endpoint}"`);
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') {
        throw new ConfigError(`S3_ENDPOINT must start with http:// or https://, got "${endpoint}"`);
      }
    }
    const accessKeyId = opt(env, 'S3_ACCESS_KEY_ID');
    const secretAccessKey = opt(env, 'S3_SECRET_ACCESS_KEY');
    if (!!accessKeyId !== !!secretAccessKey) {
      throw new ConfigError('S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together (or both unset)');
    }
    let prefix = opt(env, 'S3_PREFIX') ?? '';
    if (prefix && !prefix.endsWith('/')) prefix += '/';
    s3 = {
      endpoint,
      bucket,
      region: opt(env, 'S3_REGION') ?? 'us-east-1',
      accessKeyId,
      secretAccessKey,
      // Self-hosted S3 servers rarely have wildcard DNS for virtual-host buckets.
      forcePathStyle: bool(env, 'S3_FORCE_PATH_STYLE', endpoint !== undefined),
      prefix,
    };
  }

  const bytes = (key: string, def: number) => {
    const v = opt(env, key);
    return v === undefined ? def : parseByteSize(v, key);
  };
  const maxUploadBytes = bytes('FILE_MAX_BYTES', 100 * 1024 * 1024);
  const d = DEFAULT_LIMITS;
  const extract: ExtractLimits = {
    maxBytes: bytes('EXTRACT_MAX_BYTES', Math.min(d.maxBytes, maxUploadBytes)),
    maxPages: int(env, 'EXTRACT_MAX_PAGES', d.maxPages, 1, 100_000),
    maxOcrPages: int(env, 'EXTRACT_MAX_OCR_PAGES', d.maxOcrPages, 0, 10_000),
    maxPixels: int(env, 'EXTRACT_MAX_PIXELS', d.maxPixels, 10_000, 1_000_000_000),
    timeoutMs: int(env, 'EXTRACT_TIMEOUT_MS', d.timeoutMs, 100, 3_600_000),
    ocrTimeoutMs: int(env, 'OCR_TIMEOUT_MS', d.ocrTimeoutMs, 100, 3_600_000),
    maxTextChars: int(env, 'EXTRACT_MAX_TEXT_CHARS', d.maxTextChars, 1_000, 1_000_000_000),
    maxMemoryMb: int(env, 'EXTRACT_MAX_MEMORY_MB', d.maxMemoryMb, 64, 65_536),
    maxHtmlChars: int(env, 'EXTRACT_MAX_HTML_CHARS', d.maxHtmlChars, 1_000, 1_000_000_000),
    htmlTimeoutMs: int(env, 'EXTRACT_HTML_TIMEOUT_MS', d.htmlTimeoutMs, 100, 3_600_000),
  };
  const ocr: OcrConfig = {
    enabled: bool(env, 'OCR_ENABLED', true),
    languages: (opt(env, 'OCR_LANGUAGES') ?? 'en').split(',').map((l) => l.trim()).filter(Boolean),
    poolSize: int(env, 'OCR_POOL_SIZE', 1, 1, 16),
    langPaths: (opt(env, 'OCR_LANG_PATH') ?? '').split(path.delimiter).map((p) => p.trim()).filter(Boolean).map((p) => path.resolve(p)),
    maxQueue: int(env, 'OCR_MAX_QUEUE', 32, 0, 100_000),
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
