/**
 * The originals of collected messages (docs/email-collectors.md, "The original"): POST /v1/ingest/originals
 * (the collectors' upload after a batch is answered) and GET /v1/documents/{doc_id}/original (the download).
 */
import { Type, type Static } from '@sinclair/typebox';
import { ErrorEnvelope, Nullable } from './common.ts';

/** The type an original downloads with. */
export const ORIGINAL_MIME_TYPE = 'message/rfc822';

/** Originals one POST /v1/ingest/originals may carry (a batch of POST /v1/ingest:batch is 100 messages). */
export const ORIGINALS_MAX_PER_REQUEST = 200;
/** Bytes of one original meta part. */
export const ORIGINAL_META_MAX_BYTES = 1024;

/** The `meta` part before each `original` part. */
export const OriginalMeta = Type.Object(
  {
    doc_id: Type.String({ format: 'uuid', description: 'The document version built from this message (the doc_id of its ingest answer)' }),
    kind: Type.Optional(Type.Literal('rfc822', { description: 'The raw RFC 5322 message (an .emlx file\'s message part); the default' })),
  },
  { title: 'OriginalMeta', additionalProperties: false },
);
export type OriginalMetaT = Static<typeof OriginalMeta>;

export const OriginalItemResult = Type.Object({
  index: Type.Integer({ description: 'Position of the original in the request (0-based)' }),
  status_code: Type.Integer({ description: '201 linked now, 200 already linked to this version, else a refusal' }),
  doc_id: Nullable(Type.String()),
  sha256: Nullable(Type.String({ description: 'SHA-256 of the stored bytes (the object is shared by every copy of the message)' })),
  size_bytes: Nullable(Type.Integer()),
  error: Nullable(ErrorEnvelope),
});
export type OriginalItemResultT = Static<typeof OriginalItemResult>;

export const OriginalUploadResponse = Type.Object(
  {
    total_count: Type.Integer(),
    success_count: Type.Integer(),
    failure_count: Type.Integer(),
    results: Type.Array(OriginalItemResult),
  },
  { title: 'OriginalUploadResponse' },
);

/** POST /v1/admin/email/reparse (`memex reindex --reparse`). */
export const ReparseResponse = Type.Object(
  {
    repaired: Type.Integer({ description: 'Documents whose rebuilt text or metadata differed: stored as a new version of the same document' }),
    unchanged: Type.Integer(),
    failed: Type.Integer({ description: 'Originals that could not be read, parsed or stored again' }),
    without_original: Type.Integer({ description: 'Active email documents with no original kept (stored before memex kept them)' }),
    failures: Type.Array(Type.Object({ doc_id: Type.String(), reason: Type.String() }), { description: 'The first 50 failures' }),
    duration_ms: Type.Integer(),
  },
  { title: 'ReparseResponse' },
);
export type ReparseResponseT = Static<typeof ReparseResponse>;
