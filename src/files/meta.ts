/**
 * The multipart `meta` part of POST /v1/ingest/file: a JSON string describing the uploaded file.
 *
 * Two senders use it: the local-files collector (spec-notes A4.1 LocalFileMeta: source localfs, path, filename,
 * mtime, ctime, tags) and the email collectors for attachments (host-agent spec §2.6: source, path, filename,
 * mime_type, sha256, size, message_id, content_id, intent, relevance_score, enrichment). Unknown keys are kept (the
 * spec says extra keys such as `image {caption, ocr_text}` pass through) but bounded in size.
 *
 * parseFileMeta never throws: it returns the normalised meta or the spec's 422 items `{loc, msg, type}`.
 */
import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { Value, ValueErrorType, type ValueError } from '@sinclair/typebox/value';
import { cleanStrings, MAX_JSON_DEPTH, tooDeepAt } from '../util/json-input.ts';
import { SIZE_MAX } from '../schemas/bounds.ts';
import { normaliseOptionalMimeType } from '../util/mime-type.ts';

/** Epoch seconds (number) or an ISO 8601 date/date-time string. */
const Timestamp = Type.Union([Type.Number({ minimum: 0, maximum: 253402300799 }), Type.String({ minLength: 1, maxLength: 64 })], {
  description: 'epoch seconds or ISO 8601',
});

export const FileMetaSchema = Type.Object(
  {
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z][a-z0-9_/.-]*$' })),
    path: Type.String({ minLength: 1, maxLength: 4096, description: 'original path of the file (or a collector path)' }),
    filename: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    mtime: Type.Optional(Timestamp),
    ctime: Type.Optional(Timestamp),
    tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { maxItems: 100 })),
    mime_type: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    sha256: Type.Optional(Type.String({ pattern: '^[0-9a-fA-F]{64}$' })),
    size: Type.Optional(Type.Integer({ minimum: 0, maximum: SIZE_MAX })),
    message_id: Type.Optional(Type.String({ minLength: 1, maxLength: 998 })),
    content_id: Type.Optional(Type.String({ minLength: 1, maxLength: 998 })),
    intent: Type.Optional(
      Type.Object(
        {
          primary_intent: Type.String({ minLength: 1, maxLength: 200 }),
          confidence: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
        },
        { additionalProperties: true },
      ),
    ),
    relevance_score: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    enrichment: Type.Optional(
      Type.Object(
        {
          ocr_text: Type.Optional(Type.String({ maxLength: 1_000_000 })),
          entities: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          caption: Type.Optional(Type.String({ maxLength: 10_000 })),
        },
        { additionalProperties: true },
      ),
    ),
    /** Collector-provided image enrichment (spec-notes A4.1). */
    image: Type.Optional(
      Type.Object(
        {
          caption: Type.Optional(Type.String({ maxLength: 10_000 })),
          ocr_text: Type.Optional(Type.String({ maxLength: 1_000_000 })),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
);

export type FileMetaRaw = Static<typeof FileMetaSchema>;

/** Validated meta with timestamps as Dates and defaults applied. Unknown keys are in `extra`. */
export interface FileMeta {
  source: string;
  path: string;
  filename?: string;
  mtime?: Date;
  ctime?: Date;
  tags: string[];
  mimeType?: string;
  /** Lowercased. */
  sha256?: string;
  size?: number;
  messageId?: string;
  contentId?: string;
  intent?: { primary_intent: string; confidence?: number; [k: string]: unknown };
  relevanceScore?: number;
  enrichment?: { ocr_text?: string; entities?: Record<string, unknown>; caption?: string; [k: string]: unknown };
  image?: { caption?: string; ocr_text?: string; [k: string]: unknown };
  /** Keys not in the schema, kept as sent. */
  extra: Record<string, unknown>;
}

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export type ParseMetaResult = { ok: true; meta: FileMeta } | { ok: false; errors: ValidationIssue[] };

/** Largest meta JSON accepted (the enrichment OCR text of a long scanned attachment fits comfortably). */
export const MAX_META_BYTES = 2 * 1024 * 1024;

const KNOWN = new Set(Object.keys(FileMetaSchema.properties));

function locOf(pointer: string, prefix: (string | number)[]): (string | number)[] {
  const parts = pointer
    .split('/')
    .slice(1)
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
  return [...prefix, ...parts];
}

function schemaType(s: TSchema): string {
  return String((s as { type?: unknown }).type ?? 'value');
}

function issueOf(e: ValueError, prefix: (string | number)[]): ValidationIssue {
  const loc = locOf(e.path, prefix);
  switch (e.type) {
    case ValueErrorType.ObjectRequiredProperty:
      return { loc, msg: 'Field required', type: 'missing' };
    case ValueErrorType.String:
      return { loc, msg: 'Input should be a valid string', type: 'string_type' };
    case ValueErrorType.Number:
      return { loc, msg: 'Input should be a valid number', type: 'number_type' };
    case ValueErrorType.Integer:
      return { loc, msg: 'Input should be a valid integer', type: 'integer_type' };
    case ValueErrorType.Array:
      return { loc, msg: 'Input should be a valid list', type: 'array_type' };
    case ValueErrorType.Object:
      return { loc, msg: 'Input should be a valid object', type: 'object_type' };
    case ValueErrorType.StringMinLength:
      return { loc, msg: `String should have at least ${(e.schema as { minLength?: number }).minLength} characters`, type: 'string_too_short' };
    case ValueErrorType.StringMaxLength:
      return { loc, msg: `String should have at most ${(e.schema as { maxLength?: number }).maxLength} characters`, type: 'string_too_long' };
    case ValueErrorType.StringPattern:
      return {
        loc,
        msg: loc[loc.length - 1] === 'sha256' ? 'Input should be 64 hexadecimal characters' : `String should match pattern '${(e.schema as { pattern?: string }).pattern}'`,
        type: 'string_pattern_mismatch',
      };
    case ValueErrorType.NumberMinimum:
    case ValueErrorType.IntegerMinimum:
      return { loc, msg: `Input should be greater than or equal to ${(e.schema as { minimum?: number }).minimum}`, type: 'greater_than_equal' };
    case ValueErrorType.NumberMaximum:
    case ValueErrorType.IntegerMaximum:
      return { loc, msg: `Input should be less than or equal to ${(e.schema as { maximum?: number }).maximum}`, type: 'less_than_equal' };
    case ValueErrorType.ArrayMaxItems:
      return { loc, msg: `List should have at most ${(e.schema as { maxItems?: number }).maxItems} items`, type: 'too_long' };
    case ValueErrorType.Union:
      return { loc, msg: 'Input should be epoch seconds or an ISO 8601 date-time', type: 'datetime_type' };
    default:
      return { loc, msg: e.message, type: `${schemaType(e.schema)}_invalid` };
  }
}

/** Epoch seconds or ISO 8601 (a date-time without zone is read as UTC, like the gateway's timestamps). */
export function parseMetaTimestamp(v: number | string): Date | undefined {
  if (typeof v === 'number') {
    if (!Number.isFinite(v) || v < 0) return undefined;
    return new Date(Math.round(v * 1000));
  }
  const s = v.trim();
  if (/^\d+(\.\d+)?$/.test(s)) return parseMetaTimestamp(Number(s));
  const m = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i.exec(s);
  if (!m) return undefined;
  const hasZone = m[8] !== undefined;
  const iso = m[4] === undefined ? `${m[1]}-${m[2]}-${m[3]}T00:00:00Z` : hasZone ? s.replace(' ', 'T') : `${s.replace(' ', 'T')}Z`;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return undefined;
  // Reject rolled-over dates such as 2025-02-31.
  if (d.getUTCMonth() + 1 !== Number(m[2]) && !hasZone) return undefined;
  return d;
}

/**
 * Parses and validates the meta part. `raw` is the field's string value (or an already parsed object).
 * Errors are located under ['body', 'meta', …] like the gateway's other 422 items.
 */
export function parseFileMeta(raw: unknown): ParseMetaResult {
  const prefix: (string | number)[] = ['body', 'meta'];
  let value: unknown = raw;
  if (raw === undefined || raw === null) {
    return { ok: false, errors: [{ loc: prefix, msg: 'Field required', type: 'missing' }] };
  }
  if (typeof raw === 'string' || Buffer.isBuffer(raw)) {
    const s = raw.toString();
    if (Buffer.byteLength(s) > MAX_META_BYTES) {
      return { ok: false, errors: [{ loc: prefix, msg: `meta is larger than ${MAX_META_BYTES} bytes`, type: 'too_long' }] };
    }
    try {
      value = JSON.parse(s);
    } catch (e) {
      return { ok: false, errors: [{ loc: prefix, msg: `Invalid JSON: ${(e as Error).message}`, type: 'json_invalid' }] };
    }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { ok: false, errors: [{ loc: prefix, msg: 'meta should be a JSON object', type: 'object_type' }] };
  }
  const deep = tooDeepAt(value);
  if (deep) return { ok: false, errors: [{ loc: [...prefix, ...deep], msg: `JSON nested deeper than ${MAX_JSON_DEPTH} levels`, type: 'too_deep' }] };
  const errors: ValidationIssue[] = [];
  const seen = new Set<string>();
  for (const e of Value.Errors(FileMetaSchema, value)) {
    const issue = issueOf(e, prefix);
    const key = issue.loc.join('/');
    if (seen.has(key)) continue; // unions report every branch; one message per field is enough
    seen.add(key);
    errors.push(issue);
  }
  const v = value as FileMetaRaw & Record<string, unknown>;
  if (errors.length === 0) {
    if (v.path.includes('\0')) errors.push({ loc: [...prefix, 'path'], msg: 'path must not contain NUL characters', type: 'value_error' });
    if (v.path.trim() === '') errors.push({ loc: [...prefix, 'path'], msg: 'path must not be blank', type: 'value_error' });
    if (v.filename !== undefined && /[\0/\\]/.test(v.filename)) {
      errors.push({ loc: [...prefix, 'filename'], msg: 'filename must be a name without path separators', type: 'value_error' });
    }
    for (const k of ['message_id', 'content_id'] as const) {
      if (v[k]?.includes('\0')) errors.push({ loc: [...prefix, k], msg: `${k} must not contain NUL characters`, type: 'value_error' });
    }
    // The gateway's string rule: lone surrogates become U+FFFD, NUL is removed from the free text left.
    if (errors.length === 0) cleanStrings(v);
  }
  const times: Partial<Record<'mtime' | 'ctime', Date>> = {};
  for (const k of ['mtime', 'ctime'] as const) {
    const t = v[k];
    if (t === undefined || errors.some((e) => e.loc[2] === k)) continue;
    const d = parseMetaTimestamp(t as number | string);
    if (!d) errors.push({ loc: [...prefix, k], msg: 'Input should be epoch seconds or an ISO 8601 date-time', type: 'datetime_parsing' });
    else times[k] = d;
  }
  const extra: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) if (!KNOWN.has(k)) extra[k] = x;
  if (errors.length) return { ok: false, errors };
  return {
    ok: true,
    meta: {
      source: v.source ?? 'localfs',
      path: v.path,
      filename: v.filename,
      mtime: times.mtime,
      ctime: times.ctime,
      tags: [...new Set((v.tags ?? []).map((t) => t.trim()).filter(Boolean))],
      // A sender's type as the server reads it (src/util/mime-type.ts), never as sent.
      mimeType: normaliseOptionalMimeType(v.mime_type) ?? undefined,
      sha256: v.sha256?.toLowerCase(),
      size: v.size,
      messageId: v.message_id,
      contentId: v.content_id,
      intent: v.intent,
      relevanceScore: v.relevance_score,
      enrichment: v.enrichment as FileMeta['enrichment'],
      image: v.image as FileMeta['image'],
      extra,
    },
  };
}
