/**
 * Completes the OpenAPI document the routes' schemas produce, so a generated client works from it:
 * - every operation has an `operationId` (from its method and path, unique) and a `summary`;
 * - every operation behind a bearer token documents 401 (no token) and 403 (wrong token), as the guard answers;
 * - every operation documents 421 (a Host the server does not answer to) and 403 (a page of another origin), as
 *   the host guard answers (src/gateway/host-guard.ts);
 * - `POST /v1/ingest/file` and `POST /v1/ingest/file:batch` document their multipart bodies (the routes read the
 *   parts themselves, so they have no body schema to validate with).
 * Only the document changes: validation and serialisation keep using the routes' own schemas.
 */
import { MAX_META_BYTES } from '../files/meta.ts';
import { exampleOf } from '../schemas/examples.ts';
import { FILE_BATCH_MAX_FILES } from '../schemas/files.ts';

type Operation = {
  operationId?: string;
  summary?: string;
  security?: unknown[];
  responses?: Record<string, unknown>;
  requestBody?: unknown;
  [k: string]: unknown;
};
type OpenApiDocument = { paths?: Record<string, Record<string, Operation>>; security?: unknown[]; [k: string]: unknown };

const METHODS = new Set(['get', 'put', 'post', 'delete', 'patch', 'head', 'options']);

const AUTH_ERROR = {
  type: 'object',
  properties: { detail: { type: 'string' } },
  required: ['detail'],
};
/** What the shared error handler (errors.ts) answers for a body too large or of a type no parser takes. */
const MESSAGE_ERROR = AUTH_ERROR;
/** The spec's 422 body (ValidationErrorBody in src/schemas/common.ts). */
const VALIDATION_ERROR = {
  type: 'object',
  properties: {
    detail: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          loc: { type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'integer' }] } },
          msg: { type: 'string' },
          type: { type: 'string' },
        },
        required: ['loc', 'msg', 'type'],
      },
    },
  },
  required: ['detail'],
};
const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete']);
const json = (schema: object) => ({ 'application/json': { schema } });

/** `post` + `/v1/people/{person_id}/merges` → `postV1PeopleByPersonIdMerges`. */
export function operationIdFor(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((seg) => (seg.startsWith('{') ? `by_${seg.slice(1, -1)}` : seg))
    .join('_')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean);
  return [method.toLowerCase(), ...words.map((w) => w[0].toUpperCase() + w.slice(1))].join('');
}

const META_PART = {
  type: 'string',
  maxLength: MAX_META_BYTES,
  description:
    'JSON object: path (required), source, filename, mtime, ctime, tags, mime_type, sha256, size, message_id, ' +
    'content_id, intent, relevance_score, enrichment (docs/files.md)',
};
const UPLOAD_PART = { type: 'string', format: 'binary', description: 'The file bytes (at most FILE_MAX_BYTES)' };

/** A multipart body of `meta` (JSON) and `upload` parts with these schemas. */
function multipartBody(meta: object, upload: object) {
  return {
    required: true,
    content: {
      'multipart/form-data': {
        schema: { type: 'object', required: ['meta', 'upload'], properties: { meta, upload } },
        encoding: { meta: { contentType: 'application/json' } },
      },
    },
  };
}

const FILE_UPLOAD_BODY = multipartBody(META_PART, UPLOAD_PART);
/** The batch body: `meta` then `upload`, repeated (multipart keeps the order; each upload takes the meta before it). */
const FILE_BATCH_BODY = multipartBody(
  { type: 'array', maxItems: FILE_BATCH_MAX_FILES, items: META_PART },
  { type: 'array', maxItems: FILE_BATCH_MAX_FILES, items: UPLOAD_PART },
);

/** POST /v1/ingest/originals: `meta` ({doc_id, kind}) then `original` (a message's raw bytes), repeated. */
const ORIGINALS_BODY = {
  required: true,
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['meta', 'original'],
        properties: {
          meta: { type: 'array', items: { type: 'string', description: 'JSON object: doc_id (the email document version), kind (rfc822)' } },
          original: { type: 'array', items: { type: 'string', format: 'binary', description: 'The message as received (RFC 5322)' } },
        },
      },
      encoding: { meta: { contentType: 'application/json' } },
    },
  },
};

export function completeOpenApi(doc: OpenApiDocument): OpenApiDocument {
  const seen = new Set<string>();
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!METHODS.has(method) || !op || typeof op !== 'object') continue;
      let id = op.operationId ?? operationIdFor(method, path);
      for (let n = 2; seen.has(id); n++) id = `${operationIdFor(method, path)}${n}`;
      seen.add(id);
      op.operationId = id;
      op.summary ??= `${method.toUpperCase()} ${path}`;
      const secured = (op.security ?? doc.security ?? []).length > 0;
      if (secured) {
        op.responses ??= {};
        op.responses['401'] ??= { description: 'No bearer token', content: { 'application/json': { schema: AUTH_ERROR } } };
        op.responses['403'] ??= { description: 'Wrong bearer token, or a page of another origin (Origin)', content: { 'application/json': { schema: AUTH_ERROR } } };
      }
      if (method === 'post' && path === '/v1/ingest/file') op.requestBody = FILE_UPLOAD_BODY;
      if (method === 'post' && path === '/v1/ingest/file:batch') op.requestBody = FILE_BATCH_BODY;
      if (method === 'post' && path === '/v1/ingest/originals') op.requestBody = ORIGINALS_BODY;
      declareSharedErrors(method, op);
      optionalWhereDefaulted(op);
      addExamples(op);
    }
  }
  return doc;
}

/**
 * The answers the shared error handler (errors.ts) gives on any route: a request that may carry a body is refused
 * when it is too large (413), of a type no parser takes (415) or malformed JSON (422); one with parameters when
 * they do not validate (422).
 */
function declareSharedErrors(method: string, op: Operation): void {
  op.responses ??= {};
  op.responses['421'] ??= { description: 'The Host header names a host this server does not answer to (ALLOWED_HOSTS)', content: json(MESSAGE_ERROR) };
  op.responses['403'] ??= { description: 'A page of another origin (Origin) sent the request', content: json(MESSAGE_ERROR) };
  const params = Array.isArray(op.parameters) && op.parameters.length > 0;
  if (BODY_METHODS.has(method)) {
    op.responses['413'] ??= { description: 'Request body too large (BODY_LIMIT)', content: json(MESSAGE_ERROR) };
    op.responses['415'] ??= { description: 'Unsupported Content-Type', content: json(MESSAGE_ERROR) };
  }
  if (BODY_METHODS.has(method) || params) {
    op.responses['422'] ??= { description: 'Validation error', content: json(VALIDATION_ERROR) };
  }
}

/**
 * A parameter or body property with a default is filled in by the route, so a client need not send it. TypeBox
 * lists such properties as required (the handler's type has them), and the document would tell a generated client
 * it must send `k` and `context_window`; here they become optional.
 */
function optionalWhereDefaulted(op: Operation): void {
  for (const p of (op.parameters ?? []) as Record<string, any>[]) {
    if (p.in !== 'path' && p.required === true && p.schema?.default !== undefined) p.required = false;
  }
  const walk = (schema: any) => {
    if (!schema || typeof schema !== 'object') return;
    if (Array.isArray(schema.required) && schema.properties) {
      schema.required = schema.required.filter((name: string) => schema.properties[name]?.default === undefined);
      if (schema.required.length === 0) delete schema.required;
    }
    for (const v of Object.values(schema.properties ?? {})) walk(v);
    walk(schema.items);
    for (const k of ['anyOf', 'oneOf', 'allOf']) for (const v of schema[k] ?? []) walk(v);
  };
  const content = (op.requestBody as { content?: Record<string, { schema?: unknown }> } | undefined)?.content ?? {};
  for (const media of Object.values(content)) walk(media.schema);
}

/** A JSON body and every path parameter without a written example get one generated from the schema. */
function addExamples(op: Operation): void {
  const media = (op.requestBody as { content?: Record<string, Record<string, unknown>> } | undefined)?.content?.['application/json'];
  if (media && media.example === undefined && media.examples === undefined) media.example = exampleOf(media.schema as object);
  for (const p of (op.parameters ?? []) as Record<string, unknown>[]) {
    if (p.example === undefined && p.examples === undefined && (p.in === 'path' || p.required === true)) {
      p.example = exampleOf(p.schema as object);
    }
  }
}
