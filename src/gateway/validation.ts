/**
 * Request validation with the same JSON schemas that document the API. JSON bodies are validated
 * strictly (no type coercion: "5" is not an integer); query strings and path parameters arrive as
 * text, so there numbers and booleans written as text are read as such.
 */
import AjvModule, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { createRequire } from 'node:module';
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

/**
 * Schemas compiled at their first use. Compiling every route's request and response schemas took
 * ~0.8 s of CPU (Ajv, fast-json-stringify) before a gateway could answer anything (issue 34: an
 * empty store's start), and most routes are not called for a while after a start; `warmSchemas`
 * compiles the rest in the background once the server is ready.
 */
export type Pending = (() => void)[];
/** Validators made outside a gateway (batch items), shared by every gateway of the process. */
const shared: Pending = [];
/** Each gateway's own, from installValidation and lazySerializerFactory. */
const perGateway = new WeakMap<object, Pending>();

/** A validator that compiles at its first call; it keeps Ajv's contract (true or false, and `errors`). */
function lazyValidator(compile: () => ValidateFunction, pending: Pending = shared): ValidateFunction {
  let fn: ValidateFunction | undefined;
  const validate = ((data: unknown) => {
    fn ??= compile();
    const ok = fn(data);
    validate.errors = fn.errors;
    return ok;
  }) as ValidateFunction;
  pending.push(() => {
    fn ??= compile();
  });
  return validate;
}

type Serializer = (data: unknown) => string;
type SerializerFactory = (externalSchemas: unknown, options: unknown) => (route: unknown) => Serializer;

/**
 * Fastify's own response serializer compiler (fast-json-stringify, with the options Fastify gives it),
 * each route's serializer compiled at its first response. For `schemaController.compilersFactory`.
 */
export function lazySerializerFactory(pending: Pending): SerializerFactory {
  // Fastify's dependency, resolved from Fastify itself: the same compiler it would use by default.
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
  const build = (fromFastify('@fastify/fast-json-stringify-compiler') as { SerializerSelector: () => SerializerFactory }).SerializerSelector();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    return (route) => {
      let fn: Serializer | undefined;
      pending.push(() => {
        fn ??= compile(route);
      });
      return (data) => (fn ??= compile(route))(data);
    };
  };
}

/**
 * Compiles the schemas not compiled yet, one per turn of the event loop (requests are not held
 * behind them). A schema that cannot be compiled is reported here, soon after the start, as well
 * as to the request that needs it. Returns how many were compiled and what failed.
 */
export async function warmSchemas(app: FastifyInstance, signal?: AbortSignal): Promise<{ compiled: number; failed: Error[] }> {
  let compiled = 0;
  const failed: Error[] = [];
  const own = perGateway.get(app) ?? [];
  while ((own.length || shared.length) && !signal?.aborted) {
    await new Promise<void>((resolve) => setImmediate(resolve));
    const next = shared.shift() ?? own.shift();
    try {
      next?.();
      compiled++;
    } catch (err) {
      failed.push(err as Error);
    }
  }
  return { compiled, failed };
}

/** A validator for JSON values with the rules request bodies get (defaults filled in place, numbers bounded). */
export function compileBodyValidator(schema: object): ValidateFunction {
  return lazyValidator(() => bodyAjv.compile(withNumberBounds(schema)));
}

/**
 * Every route's query, path, header and body schemas; every number in them is range-checked
 * (src/schemas/bounds.ts). `pending` is the list lazySerializerFactory was given for this gateway.
 */
export function installValidation(app: FastifyInstance, pending: Pending = []): void {
  perGateway.set(app, pending);
  app.setValidatorCompiler(
    ({ schema, httpPart }) =>
      lazyValidator(() => (httpPart === 'body' ? bodyAjv : textAjv).compile(withNumberBounds(schema as object)), pending) as any,
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
  const paths = [...byPath.keys()];
  for (const [path, list] of byPath) {
    // A nullable field whose value has a problem inside (people[0] without an identifier) fails its null branch
    // here and its object branch deeper down: the deeper error says what is wrong, "must be null" is noise.
    const onlyNotNull = list.every((e) => e.keyword === 'type' && e.params.type === 'null');
    if (onlyNotNull && paths.some((p) => p.startsWith(`${path}/`))) continue;
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
