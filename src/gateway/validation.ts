/**
 * Request validation with the same JSON schemas that document the API. JSON bodies are validated
 * strictly (no type coercion: "5" is not an integer); query strings and path parameters arrive as
 * text, so there numbers and booleans written as text are read as such.
 */
import AjvModule, { type ErrorObject } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { parseTimestamp } from '../util/timestamp.ts';
import { withNumberBounds } from '../schemas/bounds.ts';
import { NO_NUL_PATTERN, type ValidationErrorItemT } from '../schemas/common.ts';

// Both packages are CommonJS with a default export; under NodeNext it sits on `.default`.
const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;
type AjvInstance = InstanceType<typeof Ajv>;

function makeAjv(coerce: boolean): AjvInstance {
  const ajv = new Ajv({ allErrors: true, coerceTypes: coerce, useDefaults: true, strict: false, removeAdditional: false });
  addFormats(ajv);
  ajv.addFormat('timestamp', { type: 'string', validate: (s: string) => parseTimestamp(s) !== null });
  // Fastify route docs use these keywords; they carry no validation.
  ajv.addKeyword({ keyword: 'example' });
  return ajv;
}

// One compiler per kind of input, shared by the routes and by code that validates parts of a body
// on its own (batch items).
const bodyAjv = makeAjv(false);
const textAjv = makeAjv(true);

/** A validator for JSON values with the rules request bodies get (defaults filled in place, numbers bounded). */
export function compileBodyValidator(schema: object) {
  return bodyAjv.compile(withNumberBounds(schema));
}

/** Every route's query, path, header and body schemas; every number in them is range-checked (src/schemas/bounds.ts). */
export function installValidation(app: FastifyInstance): void {
  app.setValidatorCompiler(({ schema, httpPart }) =>
    (httpPart === 'body' ? bodyAjv : textAjv).compile(withNumberBounds(schema as object)) as any,
  );
}

const PART_NAMES: Record<string, string> = { body: 'body', querystring: 'query', params: 'path', headers: 'header' };

function errorType(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'missing';
    case 'type':
      return `${e.params.type}_type`;
    case 'format':
      return `${e.params.format}_parsing`;
    case 'minimum':
      return 'greater_than_equal';
    case 'maximum':
      return 'less_than_equal';
    case 'minLength':
      return 'string_too_short';
    case 'maxLength':
      return 'string_too_long';
    case 'minItems':
      return 'too_short';
    case 'maxItems':
      return 'too_long';
    case 'enum':
      return 'enum';
    case 'pattern':
      return 'string_pattern_mismatch';
    case 'additionalProperties':
      return 'extra_forbidden';
    default:
      return e.keyword;
  }
}

function errorMessage(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'Field required';
    case 'pattern':
      return e.params.pattern === NO_NUL_PATTERN
        ? 'Input should not contain NUL (\\u0000) characters'
        : `Input should match the pattern ${e.params.pattern}`;
    case 'enum':
      return `Input should be one of: ${(e.params.allowedValues as unknown[]).join(', ')}`;
    case 'format':
      return e.params.format === 'timestamp'
        ? 'Input should be an ISO 8601 date or date-time'
        : `Input should be a valid ${e.params.format}`;
    default:
      return `Input ${e.message ?? 'is invalid'}`;
  }
}

/** Ajv errors in the spec's 422 shape: {loc, msg, type}, one per problem, anyOf noise removed. */
export function toValidationDetail(errors: ErrorObject[], context: string): ValidationErrorItemT[] {
  const part = PART_NAMES[context] ?? context;
  const byPath = new Map<string, ErrorObject[]>();
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    const path = e.instancePath + (e.keyword === 'required' ? `/${e.params.missingProperty}` : '');
    const list = byPath.get(path) ?? [];
    list.push(e);
    byPath.set(path, list);
  }
  const out: ValidationErrorItemT[] = [];
  for (const [path, list] of byPath) {
    // A nullable field that got the wrong type fails both branches; "must be null" is noise.
    const useful = list.length > 1 ? list.filter((e) => !(e.keyword === 'type' && e.params.type === 'null')) : list;
    const loc: (string | number)[] = [part];
    for (const seg of path.split('/').filter(Boolean)) {
      const s = seg.replace(/~1/g, '/').replace(/~0/g, '~');
      loc.push(/^\d+$/.test(s) ? Number(s) : s);
    }
    for (const e of useful.slice(0, 1)) out.push({ loc, msg: errorMessage(e), type: errorType(e) });
  }
  return out;
}
