/** The operator routes: POST /v1/admin/gc, GET /v1/export (POST /v1/admin/backup takes no input). */
import { Type } from '@sinclair/typebox';

export const GcRequest = Type.Object(
  {
    dry_run: Type.Optional(Type.Boolean({ default: false })),
    grace_seconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: 365 * 86400, description: 'Keep what is younger than this (default 3600)' }),
    ),
  },
  { additionalProperties: false, title: 'GcRequest' },
);

const Count = Type.Integer({ minimum: 0 });
export const GcResponse = Type.Object(
  {
    dry_run: Type.Boolean(),
    chunks: Count,
    vectors: Count,
    retired_vectors: Count,
    files: Count,
    objects: Count,
    change_log_rows: Count,
    snapshot_temps: Type.Optional(Type.Integer({ minimum: 0, description: 'Temporary files of interrupted search snapshot writes' })),
    duration_ms: Count,
  },
  { title: 'GcResponse' },
);

export const ExportQuery = Type.Object(
  { format: Type.Optional(Type.Literal('ndjson', { default: 'ndjson' })) },
  { additionalProperties: false },
);
