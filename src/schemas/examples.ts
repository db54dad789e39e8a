/**
 * Request examples generated from the schemas (TypeBox, i.e. JSON Schema): the OpenAPI document gives every
 * operation without a written example one that validates against its schema (src/gateway/openapi.ts), and
 * test/gateway/openapi-contract.test.ts sends them. Deterministic: the same schema gives the same example.
 *
 * A written `examples: [...]` (or `default`) wins; otherwise the first enum value, the first branch of a union that
 * is not null, the lowest allowed number, one array item and the required properties of an object.
 */
type Schema = Record<string, any>;

/** The UUID generated examples carry: well-formed, and no row has it. */
export const EXAMPLE_UUID = '00000000-0000-4000-8000-000000000000';
export const EXAMPLE_TIMESTAMP = '2026-03-01T10:15:00Z';

function exampleString(s: Schema): string {
  switch (s.format) {
    case 'uuid':
      return EXAMPLE_UUID;
    case 'timestamp':
    case 'date-time':
      return EXAMPLE_TIMESTAMP;
    case 'date':
      return '2026-03-01';
    case 'email':
      return 'ann@example.com';
    case 'uri':
    case 'url':
      return 'https://example.com/';
  }
  if (typeof s.pattern === 'string' && s.pattern.includes('0-9a-fA-F]{64}')) return '0'.repeat(64);
  const min = s.minLength ?? 1;
  const max = s.maxLength ?? 64;
  let out = 'example';
  while (out.length < min) out += 'example';
  return out.slice(0, Math.max(min, Math.min(max, out.length)));
}

export function exampleOf(schema: Schema | undefined, depth = 0): unknown {
  const s = schema ?? {};
  if (s.example !== undefined) return s.example;
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.default !== undefined) return s.default;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum) && s.enum.length) return s.enum[0];
  const union = s.anyOf ?? s.oneOf;
  if (Array.isArray(union) && union.length) {
    const branch = union.find((u: Schema) => u.type !== 'null') ?? union[0];
    return exampleOf(branch, depth);
  }
  if (Array.isArray(s.allOf)) return Object.assign({}, ...s.allOf.map((p: Schema) => exampleOf(p, depth)));
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type;
  switch (type) {
    case 'string':
      return exampleString(s);
    case 'integer':
    case 'number': {
      const lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 1);
      return s.maximum !== undefined ? Math.min(lo, s.maximum) : lo;
    }
    case 'boolean':
      return false;
    case 'null':
      return null;
    case 'array': {
      if (depth > 6) return [];
      const n = Math.min(Math.max(s.minItems ?? 1, 1), s.maxItems ?? 1);
      return Array.from({ length: n }, () => exampleOf(s.items, depth + 1));
    }
    case 'object':
    default: {
      const out: Record<string, unknown> = {};
      if (depth > 6) return out;
      for (const key of (s.required ?? []) as string[]) out[key] = exampleOf(s.properties?.[key], depth + 1);
      return out;
    }
  }
}
