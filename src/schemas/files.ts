/** POST /v1/ingest/file, its batch and POST /v1/ingest/file/known (docs/files.md): requests and answers. */
import { Type, type Static } from '@sinclair/typebox';
import { ErrorEnvelope, Nullable, ValidationErrorItem } from './common.ts';
import { IngestSubmissionResponse } from './ingest.ts';

/** GET /v1/files/{sha256}/thumbnail: a WebP at most this many pixels on its longer side, and at most these bytes. */
export const THUMBNAIL_MAX_PX = 320;
export const THUMBNAIL_MAX_BYTES = 64 * 1024;

/** GET /v1/files/{sha256}/image serves a stored file inline only with one of these types, read from its bytes. */
export const SHOWN_IMAGE_TYPES = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  webp: 'image/webp',
  bmp: 'image/bmp',
} as const;

/** GET /v1/files/{sha256} and its thumbnail. */
export const Sha256Params = Type.Object({ sha256: Type.String({ pattern: '^[0-9a-fA-F]{64}$' }) });

export const FileIngestResponse = Type.Object(
  {
    ...IngestSubmissionResponse.properties,
    file_sha256: Type.String(),
    object_key: Type.String(),
    extraction_status: Type.Union([Type.Literal('ready'), Type.Literal('failed')]),
  },
  { title: 'FileIngestResponse' },
);
export type FileIngestResponseT = Static<typeof FileIngestResponse>;

/** Files one POST /v1/ingest/file:batch may carry. */
export const FILE_BATCH_MAX_FILES = 32;

export const FileBatchItemResult = Type.Object({
  index: Type.Integer({ description: 'Position of the upload in the request (0-based)' }),
  status_code: Type.Integer({ description: 'The status the single route would have answered for this file' }),
  filename: Nullable(Type.String()),
  submission: Nullable(FileIngestResponse),
  error: Nullable(ErrorEnvelope),
  detail: Type.Optional(Type.Array(ValidationErrorItem)),
});

export const FileBatchResponse = Type.Object(
  {
    total_count: Type.Integer(),
    success_count: Type.Integer(),
    failure_count: Type.Integer(),
    results: Type.Array(FileBatchItemResult),
  },
  { title: 'FileBatchResponse' },
);
export type FileBatchItemResultT = Static<typeof FileBatchItemResult>;

export const KnownFilesRequest = Type.Object(
  {
    files: Type.Array(
      Type.Object(
        {
          path: Type.String({ minLength: 1, maxLength: 4096 }),
          sha256: Type.String({ pattern: '^[0-9a-fA-F]{64}$' }),
          source: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z][a-z0-9_/.-]*$' })),
          message_id: Type.Optional(Type.String({ minLength: 1, maxLength: 998 })),
        },
        { additionalProperties: false },
      ),
      { maxItems: 1000 },
    ),
  },
  { title: 'KnownFilesRequest', additionalProperties: false },
);

export const KnownFilesResponse = Type.Object(
  {
    instance_id: Type.String({ format: 'uuid', description: 'This server instance (its database)' }),
    known: Type.Array(Type.Object({ path: Type.String(), sha256: Type.String(), doc_id: Type.String({ format: 'uuid' }) })),
  },
  { title: 'KnownFilesResponse' },
);


export type KnownFilesRequestT = Static<typeof KnownFilesRequest>;
