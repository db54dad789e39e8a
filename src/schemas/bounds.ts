/**
 * Every number a client sends is range-checked (issue 33 item 9): an integer in a query, path or body
 * is at most INT_MAX and at least -INT_MAX - 1 unless its schema says otherwise (the range of a
 * PostgreSQL `integer` column: offsets, versions, priorities and counts all fit), and every number
 * is finite (`offset=Infinity`, `1e309` in a query string or a JSON body are refused). A value out
 * of range is a 422 naming the field, never a database error.
 *
 * The request validator (src/gateway/validation.ts) compiles every schema through withNumberBounds,
 * so the rule holds for every route without each schema repeating it; a schema that needs a wider
 * range (a byte size) sets its own `maximum`, which is kept.
 */

/** Largest value of a PostgreSQL `integer`: the default bound of every integer a client sends. */
export const INT_MAX = 2_147_483_647;
/** Largest integer a byte count may be (JavaScript's exact integers; PostgreSQL `bigint` holds it). */
export const SIZE_MAX = Number.MAX_SAFE_INTEGER;

type Schema = Record<string, unknown>;

const cache = new WeakMap<object, Schema>();

function hasType(s: Schema, t: string): boolean {
  return s.type === t || (Array.isArray(s.type) && s.type.includes(t));
}

function bound(s: Schema): Schema {
  const out: Schema = { ...s };
  if (hasType(s, 'integer')) {
    if (typeof out.maximum !== 'number' && typeof out.exclusiveMaximum !== 'number') out.maximum = INT_MAX;
    if (typeof out.minimum !== 'number' && typeof out.exclusiveMinimum !== 'number') out.minimum = -INT_MAX - 1;
  } else if (hasType(s, 'number')) {
    if (typeof out.maximum !== 'number' && typeof out.exclusiveMaximum !== 'number') out.maximum = Number.MAX_VALUE;
    if (typeof out.minimum !== 'number' && typeof out.exclusiveMinimum !== 'number') out.minimum = -Number.MAX_VALUE;
  }
  return out;
}

/**
 * A copy of a JSON schema in which every integer and number has bounds (see above); the same input
 * object always gives the same copy, so a validator compiles it once.
 */
export function withNumberBounds<T>(schema: T): T {
  if (!schema || typeof schema !== 'object') return schema;
  const hit = cache.get(schema as object);
  if (hit) return hit as T;
  if (Array.isArray(schema)) return schema.map((x) => withNumberBounds(x)) as T;
  const out = bound(schema as Schema);
  for (const key of ['properties', 'patternProperties', 'definitions', '$defs'] as const) {
    const group = out[key];
    if (group && typeof group === 'object') {
      out[key] = Object.fromEntries(Object.entries(group as Schema).map(([k, v]) => [k, withNumberBounds(v)]));
    }
  }
  for (const key of ['items', 'additionalProperties', 'additionalItems', 'not', 'if', 'then', 'else', 'contains', 'prefixItems', 'anyOf', 'oneOf', 'allOf'] as const) {
    const v = out[key];
    if (v && typeof v === 'object') out[key] = withNumberBounds(v);
  }
  cache.set(schema as object, out);
  return out as T;
}

/**
 * Stored strings (issue 33 item 5). A title longer than TITLE_MAX_CHARS is kept, cut there with "…"
 * (an email with a long subject is still stored); a canonical URI longer than URI_MAX_CHARS, a MIME
 * type, an encoding or a timestamp type past its bound is refused (422 naming the field): a cut URI
 * would point elsewhere.
 */
export const TITLE_MAX_CHARS = 1000;
export const URI_MAX_CHARS = 8192;
export const MIME_MAX_CHARS = 255;
export const SHORT_MAX_CHARS = 64;

/** A title as stored: at most TITLE_MAX_CHARS characters (code points), cut with "…". */
export function boundTitle<T extends string | null | undefined>(title: T): T {
  if (typeof title !== 'string' || title.length <= TITLE_MAX_CHARS) return title;
  const points = Array.from(title);
  if (points.length <= TITLE_MAX_CHARS) return title;
  return `${points.slice(0, TITLE_MAX_CHARS - 1).join('')}…` as T;
}
