/**
 * S3-compatible object store (AWS S3, MinIO, Garage, Ceph RGW, R2 …) through @aws-sdk/client-s3.
 *
 * The upload is spooled to a local temp file while hashed (the key depends on the hash, which is only known at the
 * end), then HeadObject decides: present -> nothing uploaded (dedup), absent -> PutObject from the temp file with a
 * known Content-Length. S3 makes an object visible only once its PUT completes, so no reader sees half an object.
 * Kept in its own module so the SDK is only loaded when OBJECT_STORE=s3.
 */
import { createReadStream } from 'node:fs';
import fs from 'node:fs/promises';
import { Readable } from 'node:stream';
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import {
  besideKeyFor,
  type BesideName,
  cleanTempDir,
  NotFoundError,
  objectKeyFor,
  ObjectStoreError,
  ObjectStoreUnavailableError,
  ObjectStoreWriteError,
  parseObjectKey,
  spoolToTemp,
  type ObjectStore,
  type PutOptions,
  type PutResult,
} from './object-store.ts';

export interface S3ObjectStoreOptions {
  bucket: string;
  /** Endpoint URL of an S3-compatible service; undefined = AWS. */
  endpoint?: string;
  region: string;
  /** Both or neither; neither = the SDK's default credential chain. */
  accessKeyId?: string;
  secretAccessKey?: string;
  /** Path-style URLs (`endpoint/bucket/key`), needed by most self-hosted services. */
  forcePathStyle: boolean;
  /** Local folder for spooling uploads before they are sent. */
  tmpDir: string;
  /** Optional key prefix inside the bucket (e.g. `memex/`), so one bucket can be shared. */
  prefix?: string;
  /** Per-request timeout in ms (default 60 s). */
  requestTimeoutMs?: number;
}

function isNetworkError(e: unknown): boolean {
  const code = (e as NodeJS.ErrnoException)?.code ?? '';
  const name = (e as Error)?.name ?? '';
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE'].includes(
      code,
    ) || name === 'TimeoutError' || name === 'RequestTimeout'
  );
}

function httpStatus(e: unknown): number | undefined {
  return (e as S3ServiceException)?.$metadata?.httpStatusCode;
}

export class S3ObjectStore implements ObjectStore {
  readonly backend = 's3' as const;
  readonly client: S3Client;
  private constructor(
    private readonly opts: S3ObjectStoreOptions,
    client: S3Client,
  ) {
    this.client = client;
  }

  static async open(opts: S3ObjectStoreOptions): Promise<S3ObjectStore> {
    const client = new S3Client({
      region: opts.region,
      endpoint: opts.endpoint,
      forcePathStyle: opts.forcePathStyle,
      credentials:
        opts.accessKeyId && opts.secretAccessKey
          ? { accessKeyId: opts.accessKeyId, secretAccessKey: opts.secretAccessKey }
          : undefined,
      // Newer SDKs add CRC32 trailers with aws-chunked bodies by default, which several S3-compatible servers reject;
      // only send checksums where the operation requires them. Integrity: the key IS the SHA-256 and it is sent as
      // object metadata.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 3,
      requestHandler: { requestTimeout: opts.requestTimeoutMs ?? 60_000, connectionTimeout: 10_000 } as never,
    });
    await fs.mkdir(opts.tmpDir, { recursive: true, mode: 0o700 });
    await cleanTempDir(opts.tmpDir);
    return new S3ObjectStore(opts, client);
  }

  private key(objectKey: string): string {
    parseObjectKey(objectKey); // validates
    return (this.opts.prefix ?? '') + objectKey;
  }

  private mapError(e: unknown, what: string): ObjectStoreError {
    if (e instanceof ObjectStoreError) return e;
    const status = httpStatus(e);
    const msg = `${what}${status ? ` (HTTP ${status})` : ''}: ${(e as Error)?.name ?? 'Error'}: ${(e as Error)?.message ?? String(e)}`;
    if (isNetworkError(e) || (status ?? 0) >= 500) return new ObjectStoreUnavailableError(msg, { cause: e });
    return new ObjectStoreWriteError(msg, { cause: e });
  }

  private async exists(key: string): Promise<boolean> {
    try {
      await this.client.send(new HeadObjectCommand({ Bucket: this.opts.bucket, Key: key }));
      return true;
    } catch (e) {
      const status = httpStatus(e);
      if (status === 404 || (e as Error)?.name === 'NotFound' || (e as Error)?.name === 'NoSuchKey') return false;
      throw this.mapError(e, 'S3 HeadObject failed');
    }
  }

  async put(stream: Readable, opts: PutOptions): Promise<PutResult> {
    const spooled = await spoolToTemp(stream, this.opts.tmpDir, opts);
    try {
      const objectKey = objectKeyFor(spooled.sha256);
      const key = this.key(objectKey);
      if (await this.exists(key)) {
        return { sha256: spooled.sha256, objectKey, sizeBytes: spooled.sizeBytes, existed: true };
      }
      try {
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.opts.bucket,
            Key: key,
            Body: createReadStream(spooled.tempPath),
            ContentLength: spooled.sizeBytes,
            ContentType: opts.mimeType || 'application/octet-stream',
            // Filenames are user data; S3 metadata must be ASCII, so store it URI-encoded.
            Metadata: { sha256: spooled.sha256, ...(opts.filename ? { filename: encodeURIComponent(opts.filename) } : {}) },
          }),
        );
      } catch (e) {
        throw this.mapError(e, 'S3 PutObject failed');
      }
      return { sha256: spooled.sha256, objectKey, sizeBytes: spooled.sizeBytes, existed: false };
    } finally {
      await fs.rm(spooled.tempPath, { force: true }).catch(() => {});
    }
  }

  async get(objectKey: string): Promise<Readable> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: this.key(objectKey) }));
      const body = out.Body;
      if (body instanceof Readable) return body;
      if (body && typeof (body as { transformToWebStream?: unknown }).transformToWebStream === 'function') {
        return Readable.fromWeb((body as { transformToWebStream(): any }).transformToWebStream());
      }
      throw new ObjectStoreUnavailableError('S3 GetObject returned no body');
    } catch (e) {
      const status = httpStatus(e);
      if (status === 404 || (e as Error)?.name === 'NoSuchKey') throw new NotFoundError(`object ${objectKey} not found`);
      throw this.mapError(e, 'S3 GetObject failed');
    }
  }

  async has(sha256: string): Promise<boolean> {
    return this.exists(this.key(objectKeyFor(sha256)));
  }

  async delete(objectKey: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: this.key(objectKey) }));
    } catch (e) {
      if (httpStatus(e) === 404) return;
      throw this.mapError(e, 'S3 DeleteObject failed');
    }
  }

  async putBeside(objectKey: string, name: BesideName, body: Buffer): Promise<void> {
    const key = (this.opts.prefix ?? '') + besideKeyFor(objectKey, name);
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.opts.bucket, Key: key, Body: body, ContentLength: body.length }));
    } catch (e) {
      throw this.mapError(e, 'S3 PutObject failed');
    }
  }

  async getBeside(objectKey: string, name: BesideName): Promise<Buffer | null> {
    const key = (this.opts.prefix ?? '') + besideKeyFor(objectKey, name);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.opts.bucket, Key: key }));
      const body = out.Body as { transformToByteArray?: () => Promise<Uint8Array> } | undefined;
      if (!body?.transformToByteArray) throw new ObjectStoreUnavailableError('S3 GetObject returned no body');
      return Buffer.from(await body.transformToByteArray());
    } catch (e) {
      const status = httpStatus(e);
      if (status === 404 || (e as Error)?.name === 'NoSuchKey') return null;
      throw this.mapError(e, 'S3 GetObject failed');
    }
  }

  async deleteBeside(objectKey: string, name: BesideName): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.opts.bucket, Key: (this.opts.prefix ?? '') + besideKeyFor(objectKey, name) }));
    } catch (e) {
      if (httpStatus(e) === 404) return;
      throw this.mapError(e, 'S3 DeleteObject failed');
    }
  }

  destroy(): void {
    this.client.destroy();
  }
}
