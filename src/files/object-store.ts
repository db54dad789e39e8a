/**
 * Content-addressed object store: one interface, a local-folder backend (default) and an S3-compatible backend.
 *
 * Both backends share the same write path (`spoolToTemp`): the upload is streamed to a temp file while it is hashed
 * with SHA-256 and counted against maxBytes, so no upload is ever held whole in memory and an oversized upload is
 * aborted as soon as it crosses the limit. The object key is derived from the hash only (`sha256/ab/cd/<sha256>`):
 * the same bytes under any name are stored once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DISK_FULL_CODE, diskFullMessage, fullDiskOf, noteDiskFull } from '../util/disk-full.ts';
import { MemexError, type ErrorCode } from '../util/errors.ts';
import { SmallWrites } from './small-writes.ts';

export type ObjectStoreBackend = 'local' | 's3';

export interface PutOptions {
  /** Largest accepted upload in bytes; one byte more aborts the write with TooLargeError. */
  maxBytes: number;
  filename?: string;
  mimeType?: string;
  /** Accept a zero-byte upload (default false: EmptyFileError, nothing stored). */
  allowEmpty?: boolean;
}

export interface PutResult {
  sha256: string;
  objectKey: string;
  sizeBytes: number;
  /** True when an object with the same SHA-256 was already stored (deduplicated; nothing new written). */
  existed: boolean;
}

export interface ObjectStore {
  readonly backend: ObjectStoreBackend;
  put(stream: Readable, opts: PutOptions): Promise<PutResult>;
  /**
   * Stores several small non-empty bodies already in memory, as `put` would one by one (same keys, dedup and
   * durability), answering in their order; a failure fails the batch (DiskFullError, ObjectStoreWriteError).
   * Local backend: one worker round trip for the batch instead of a dozen event-loop turns per object.
   */
  putSmall?(bodies: Buffer[]): Promise<PutResult[]>;
  /** Opens a stored object for reading; NotFoundError when absent. */
  get(objectKey: string): Promise<Readable>;
  has(sha256: string): Promise<boolean>;
  /** Removes an object (idempotent: absent is not an error). */
  delete(objectKey: string): Promise<void>;
  /** Local path of a stored object when the backend keeps objects on this machine (local backend), else undefined. */
  localPath?(objectKey: string): string;
  /** Every stored object with its modification time (local backend; garbage collection of unreferenced objects). */
  list?(): AsyncIterable<{ objectKey: string; modifiedAt: Date }>;
  /**
   * Small files derived from an object and kept beside it (its thumbnail, src/files/thumbnails.ts): written,
   * read, and removed with the object by `removeObjects`. getBeside answers null when there is none.
   */
  putBeside(objectKey: string, name: BesideName, body: Buffer): Promise<void>;
  getBeside(objectKey: string, name: BesideName): Promise<Buffer | null>;
  deleteBeside(objectKey: string, name: BesideName): Promise<void>;
  /** Files kept beside objects, with the object they belong to (local backend; garbage collection of those left behind). */
  listBeside?(): AsyncIterable<{ objectKey: string; name: BesideName }>;
}

/** The names of the files kept beside an object (a suffix of its key: `sha256/ab/cd/<sha256>.thumb.webp`). */
export const BESIDE_NAMES = ['thumb.webp'] as const;
export type BesideName = (typeof BESIDE_NAMES)[number];

/** The key of a file kept beside an object; only names of BESIDE_NAMES and valid object keys are accepted. */
export function besideKeyFor(objectKey: string, name: BesideName): string {
  parseObjectKey(objectKey);
  if (!(BESIDE_NAMES as readonly string[]).includes(name)) throw new InvalidObjectKeyError(`not a name kept beside an object: "${String(name).slice(0, 40)}"`);
  return `${objectKey}.${name}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Errors: typed so the route maps them without string matching.

export class ObjectStoreError extends MemexError {
  /** The status the gateway answers with, by Fastify's name: the upload routes put it in their envelopes. */
  readonly statusCode: number;
  /** `code`: the spec's error code (spec-notes A4.1); the table gives its status. */
  constructor(message: string, options: ErrorOptions | undefined, code: ErrorCode) {
    super(message, code, undefined, options);
    this.statusCode = this.status;
  }
}

/** The upload exceeded maxBytes; the partial temp file has been deleted. Maps to 413. */
export class TooLargeError extends ObjectStoreError {
  override name = 'TooLargeError';
  constructor(readonly maxBytes: number) {
    super(`upload exceeds the limit of ${maxBytes} bytes`, undefined, 'INGEST.FILE_TOO_LARGE');
  }
}

/** The upload had no bytes. Maps to 400 INGEST.EMPTY_FILE. */
export class EmptyFileError extends ObjectStoreError {
  override name = 'EmptyFileError';
  constructor() {
    super('upload is empty', undefined, 'INGEST.EMPTY_FILE');
  }
}

/** The upload stream itself failed (client went away, multipart truncated). Maps to 400 INGEST.FILE_READ_FAILED. */
export class UploadReadError extends ObjectStoreError {
  override name = 'UploadReadError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options, 'INGEST.FILE_READ_FAILED');
  }
}

export class NotFoundError extends ObjectStoreError {
  override name = 'NotFoundError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options, 'FILE.NOT_FOUND');
  }
}

export class InvalidObjectKeyError extends ObjectStoreError {
  override name = 'InvalidObjectKeyError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options, 'FILE.INVALID_OBJECT_KEY');
  }
}

/** The backend could not be reached (S3 endpoint down, DNS). Maps to 503 INGEST.OBJECT_STORE_UNAVAILABLE. */
export class ObjectStoreUnavailableError extends ObjectStoreError {
  override name = 'ObjectStoreUnavailableError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options, 'INGEST.OBJECT_STORE_UNAVAILABLE');
  }
}

/** Writing failed inside the backend (disk full, permission, S3 error). Maps to 503 INGEST.OBJECT_STORE_WRITE_FAILED. */
export class ObjectStoreWriteError extends ObjectStoreError {
  override name = 'ObjectStoreWriteError';
  constructor(message: string, options?: ErrorOptions) {
    super(message, options, 'INGEST.OBJECT_STORE_WRITE_FAILED');
  }
}

/** The disk holding the objects (DATA_DIR) is full: nothing was stored. Maps to 507 STORAGE.DISK_FULL (src/util/disk-full.ts). */
export class DiskFullError extends ObjectStoreError {
  override name = 'DiskFullError';
  constructor(cause: unknown) {
    super(diskFullMessage('data_dir'), { cause }, DISK_FULL_CODE);
    noteDiskFull('data_dir');
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Keys

const SHA_RE = /^[0-9a-f]{64}$/;
const KEY_RE = /^sha256\/([0-9a-f]{2})\/([0-9a-f]{2})\/([0-9a-f]{64})$/;

export function isSha256(s: string): boolean {
  return SHA_RE.test(s);
}

/** `sha256/ab/cd/<sha256>`: two fan-out levels keep directories small (65,536 leaves). */
export function objectKeyFor(sha256: string): string {
  if (!SHA_RE.test(sha256)) throw new InvalidObjectKeyError(`not a lowercase hex SHA-256: "${sha256.slice(0, 80)}"`);
  return `sha256/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`;
}

/** Validates a key and returns its SHA-256. Only keys this module makes are accepted, so no key can leave the root. */
export function parseObjectKey(objectKey: string): string {
  const m = KEY_RE.exec(objectKey);
  if (!m || m[1] !== m[3].slice(0, 2) || m[2] !== m[3].slice(2, 4)) {
    throw new InvalidObjectKeyError(`invalid object key "${String(objectKey).slice(0, 120)}"`);
  }
  return m[3];
}

/**
 * Deletes stored objects that nothing names any more: the one place objects are removed (forget, garbage
 * collection, an upload the block list refused), so whatever is kept beside an object goes with it here.
 * Only content-addressed keys are accepted.
 */
export async function removeObjects(store: ObjectStore, objectKeys: Iterable<string>): Promise<void> {
  for (const key of objectKeys) {
    parseObjectKey(key);
    // What is derived from the object first: a crash between the two leaves an object without its
    // thumbnail (made again on demand), never a thumbnail of erased bytes.
    for (const name of BESIDE_NAMES) await store.deleteBeside(key, name);
    await store.delete(key);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Shared write path: stream to temp while hashing and counting.

/** Hashes and counts bytes passing through; fails the pipeline with TooLargeError at byte maxBytes+1. */
class HashingLimiter extends Transform {
  readonly hash = createHash('sha256');
  bytes = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      cb(new TooLargeError(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    cb(null, chunk);
  }
}

export interface SpooledFile {
  tempPath: string;
  sha256: string;
  sizeBytes: number;
}

/**
 * Temp file names carry the writer's pid so that a store opening the same folder can tell a crashed writer's
 * leftovers (pid gone) from a live writer's file in another process sharing the folder.
 */
function tempName(): string {
  return `${process.pid}-${Date.now()}-${randomBytes(6).toString('hex')}.part`;
}

/**
 * Streams `stream` into a new file in tmpDir, hashing on the way (not yet fsynced: a duplicate never needs it). On any failure the temp file is deleted
 * before the error propagates: TooLargeError, EmptyFileError, UploadReadError (source failed) or
 * ObjectStoreWriteError (disk failed).
 */
export async function spoolToTemp(stream: Readable, tmpDir: string, opts: PutOptions): Promise<SpooledFile> {
  if (!Number.isSafeInteger(opts.maxBytes) || opts.maxBytes < 0) throw new RangeError('maxBytes must be a non-negative integer');
  // Node's pipeline never settles on a source destroyed before it was attached (busboy destroys a part whose body
  // ended early, possibly before the caller got the part): refuse it up front.
  if (stream.destroyed) throw new UploadReadError('the upload stream was closed before it could be read (truncated body?)');
  const tempPath = path.join(tmpDir, tempName());
  const limiter = new HashingLimiter(opts.maxBytes);
  // 'wx': never reuse a path; mode 0o600 until published.
  const out = createWriteStream(tempPath, { flags: 'wx', mode: 0o600 });
  let sourceError: unknown;
  let writeError: unknown;
  stream.once('error', (e) => {
    sourceError ??= e;
  });
  out.once('error', (e) => {
    writeError ??= e;
  });
  // A multipart parser (busboy under @fastify/multipart) with its own fileSize limit stops the part early, emits
  // 'limit' and marks the stream `truncated`: that is "too large" too, never a silently cut object.
  const onLimit = () => limiter.destroy(new TooLargeError(opts.maxBytes));
  stream.once('limit', onLimit);
  try {
    await pipeline(stream, limiter, out);
    stream.off('limit', onLimit);
    if ((stream as Readable & { truncated?: boolean }).truncated === true) throw new TooLargeError(opts.maxBytes);
    if (limiter.bytes === 0 && !opts.allowEmpty) throw new EmptyFileError();
    return { tempPath, sha256: limiter.hash.digest('hex'), sizeBytes: limiter.bytes };
  } catch (err) {
    stream.off('limit', onLimit);
    stream.destroy(); // stop reading the rest of an aborted upload
    await fs.rm(tempPath, { force: true }).catch(() => {});
    if (err instanceof ObjectStoreError) throw err;
    // The file write failing for want of space also fails the source (pipeline destroys it with that error).
    if (fullDiskOf(err) === 'data_dir' || fullDiskOf(writeError) === 'data_dir') throw new DiskFullError(err);
    if (sourceError !== undefined && err === sourceError) {
      throw new UploadReadError(`reading the upload failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
    }
    throw new ObjectStoreWriteError(`writing the upload failed: ${(err as Error)?.message ?? String(err)}`, { cause: err });
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Removes temp files left by crashed writers: those whose pid is not running here (or is our own pid from an
 * earlier life, impossible for a live put since we are only opening), and any older than staleMs whatever the pid
 * (pids are reused; a shared folder on another host has foreign pids). Returns how many were removed.
 */
export async function cleanTempDir(tmpDir: string, staleMs = 24 * 3600_000): Promise<number> {
  let names: string[];
  try {
    names = await fs.readdir(tmpDir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw e;
  }
  let removed = 0;
  const now = Date.now();
  for (const name of names) {
    const full = path.join(tmpDir, name);
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    let stale = !Number.isInteger(pid) || pid <= 0 || !pidAlive(pid);
    if (!stale) {
      const st = await fs.stat(full).catch(() => undefined);
      stale = st !== undefined && now - st.mtimeMs > staleMs;
    }
    if (stale) {
      await fs.rm(full, { force: true, recursive: true }).catch(() => {});
      removed++;
    }
  }
  return removed;
}

// ---------------------------------------------------------------------------------------------------------------
// Local backend

export interface LocalObjectStoreOptions {
  /** Root folder; objects go under `<root>/sha256/…`, temp files under `<root>/tmp/` (same filesystem: rename is atomic). */
  root: string;
}

export class LocalObjectStore implements ObjectStore {
  readonly backend = 'local' as const;
  readonly root: string;
  readonly tmpDir: string;
  private smallWrites: SmallWrites | undefined;

  private constructor(root: string) {
    this.root = path.resolve(root);
    this.tmpDir = path.join(this.root, 'tmp');
  }

  /** Creates the folders and removes leftovers of crashed writers. */
  static async open(opts: LocalObjectStoreOptions): Promise<LocalObjectStore> {
    const store = new LocalObjectStore(opts.root);
    // Owner-only: any local account could read every attachment otherwise (issue 47 item 4).
    await fs.mkdir(path.join(store.root, 'sha256'), { recursive: true, mode: 0o700 });
    await fs.mkdir(store.tmpDir, { recursive: true, mode: 0o700 });
    await cleanTempDir(store.tmpDir);
    return store;
  }

  localPath(objectKey: string): string {
    const sha = parseObjectKey(objectKey);
    return path.join(this.root, 'sha256', sha.slice(0, 2), sha.slice(2, 4), sha);
  }

  async put(stream: Readable, opts: PutOptions): Promise<PutResult> {
    const spooled = await spoolToTemp(stream, this.tmpDir, opts);
    const objectKey = objectKeyFor(spooled.sha256);
    const finalPath = this.localPath(objectKey);
    try {
      if (await isFile(finalPath)) {
        // Dedup: the bytes are already stored; skip the fsync and the publish. The new mtime tells
        // garbage collection (src/maintenance/gc.ts) the object is in use again before its record exists.
        const now = new Date();
        await fs.utimes(finalPath, now, now).catch(() => {});
        return { sha256: spooled.sha256, objectKey, sizeBytes: spooled.sizeBytes, existed: true };
      }
      await fsyncFile(spooled.tempPath); // data on disk before the link makes it visible
      await fs.mkdir(path.dirname(finalPath), { recursive: true, mode: 0o700 });
      await fs.chmod(spooled.tempPath, 0o400); // objects are immutable, and the owner's alone
      const published = await publishNoClobber(spooled.tempPath, finalPath);
      if (published) await fsyncDir(path.dirname(finalPath));
      return { sha256: spooled.sha256, objectKey, sizeBytes: spooled.sizeBytes, existed: !published };
    } catch (err) {
      if (fullDiskOf(err) === 'data_dir') throw new DiskFullError(err);
      throw new ObjectStoreWriteError(`storing the object failed: ${(err as Error).message}`, { cause: err });
    } finally {
      await fs.rm(spooled.tempPath, { force: true }).catch(() => {});
    }
  }

  async putSmall(bodies: Buffer[]): Promise<PutResult[]> {
    if (bodies.some((b) => b.length === 0)) throw new EmptyFileError();
    this.smallWrites ??= new SmallWrites(this.root, this.tmpDir);
    try {
      const written = await this.smallWrites.write(bodies);
      return written.map((w) => ({ ...w, objectKey: objectKeyFor(w.sha256) }));
    } catch (err) {
      if (fullDiskOf(err) === 'data_dir') throw new DiskFullError(err);
      throw new ObjectStoreWriteError(`storing the objects failed: ${(err as Error).message}`, { cause: err });
    }
  }

  async get(objectKey: string): Promise<Readable> {
    const p = this.localPath(objectKey);
    try {
      const fh = await fs.open(p, 'r');
      return fh.createReadStream(); // closes the handle at end or destroy
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw new NotFoundError(`object ${objectKey} not found`);
      throw new ObjectStoreUnavailableError(`reading object failed: ${(e as Error).message}`, { cause: e });
    }
  }

  async *list(): AsyncIterable<{ objectKey: string; modifiedAt: Date }> {
    const top = path.join(this.root, 'sha256');
    for (const a of await fs.readdir(top).catch(() => [] as string[])) {
      for (const b of await fs.readdir(path.join(top, a)).catch(() => [] as string[])) {
        for (const name of await fs.readdir(path.join(top, a, b)).catch(() => [] as string[])) {
          if (!isSha256(name)) continue;
          const st = await fs.stat(path.join(top, a, b, name)).catch(() => null);
          if (st?.isFile()) yield { objectKey: objectKeyFor(name), modifiedAt: st.mtime };
        }
      }
    }
  }

  async has(sha256: string): Promise<boolean> {
    const p = this.localPath(objectKeyFor(sha256));
    try {
      return (await fs.stat(p)).isFile();
    } catch {
      return false;
    }
  }

  async delete(objectKey: string): Promise<void> {
    await fs.rm(this.localPath(objectKey), { force: true });
  }

  private besidePath(objectKey: string, name: BesideName): string {
    besideKeyFor(objectKey, name);
    return `${this.localPath(objectKey)}.${name}`;
  }

  async putBeside(objectKey: string, name: BesideName, body: Buffer): Promise<void> {
    const finalPath = this.besidePath(objectKey, name);
    const temp = path.join(this.tmpDir, tempName());
    try {
      await fs.writeFile(temp, body, { flag: 'wx', mode: 0o600 });
      await fs.mkdir(path.dirname(finalPath), { recursive: true, mode: 0o700 });
      await fs.rename(temp, finalPath); // atomic: a reader sees the whole file or none
    } catch (err) {
      throw new ObjectStoreWriteError(`storing ${name} of the object failed: ${(err as Error).message}`, { cause: err });
    } finally {
      await fs.rm(temp, { force: true }).catch(() => {});
    }
  }

  async getBeside(objectKey: string, name: BesideName): Promise<Buffer | null> {
    try {
      return await fs.readFile(this.besidePath(objectKey, name));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw new ObjectStoreUnavailableError(`reading ${name} of the object failed: ${(e as Error).message}`, { cause: e });
    }
  }

  async deleteBeside(objectKey: string, name: BesideName): Promise<void> {
    await fs.rm(this.besidePath(objectKey, name), { force: true });
  }

  async *listBeside(): AsyncIterable<{ objectKey: string; name: BesideName }> {
    const top = path.join(this.root, 'sha256');
    for (const a of await fs.readdir(top).catch(() => [] as string[])) {
      for (const b of await fs.readdir(path.join(top, a)).catch(() => [] as string[])) {
        for (const file of await fs.readdir(path.join(top, a, b)).catch(() => [] as string[])) {
          const dot = file.indexOf('.');
          const [sha, name] = [file.slice(0, dot), file.slice(dot + 1)];
          if (dot > 0 && isSha256(sha) && (BESIDE_NAMES as readonly string[]).includes(name)) yield { objectKey: objectKeyFor(sha), name: name as BesideName };
        }
      }
    }
  }
}

/**
 * Publishes tempPath at finalPath only if nothing is there yet, atomically: link(2) fails with EEXIST rather than
 * replacing, so a concurrent put of the same bytes cannot make both callers believe they wrote it, and a reader never
 * sees a partial file (the object appears complete or not at all). Filesystems without hard links fall back to
 * rename(2), which is still atomic (same content, so replacing is harmless). Returns false when it already existed.
 */
async function publishNoClobber(tempPath: string, finalPath: string): Promise<boolean> {
  try {
    await fs.link(tempPath, finalPath);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') return false;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EXDEV') throw e;
  }
  try {
    await fs.access(finalPath);
    return false;
  } catch {
    /* absent: publish */
  }
  await fs.rename(tempPath, finalPath);
  return true;
}

async function isFile(p: string): Promise<boolean> {
  try {
    return (await fs.stat(p)).isFile();
  } catch {
    return false;
  }
}

async function fsyncFile(p: string): Promise<void> {
  const fh = await fs.open(p, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

async function fsyncDir(dir: string): Promise<void> {
  // Makes the new directory entry durable; not supported everywhere (e.g. some network filesystems) — best effort.
  try {
    const fh = await fs.open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    /* ignore */
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers for callers

/** Reads a whole object into memory, refusing more than maxBytes (for extraction of an object held in S3). */
export async function readObject(store: ObjectStore, objectKey: string, maxBytes: number): Promise<Buffer> {
  const stream = await store.get(objectKey);
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const chunk of stream) {
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array);
    n += b.length;
    if (n > maxBytes) {
      stream.destroy();
      throw new TooLargeError(maxBytes);
    }
    chunks.push(b);
  }
  return Buffer.concat(chunks, n);
}

