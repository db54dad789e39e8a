import crypto from 'node:crypto';
import { cleanString } from './json-input.ts';

export function sha256Hex(data: string | Buffer): string {
  return crypto.createHash('sha256').update(data).digest('hex');
}

/**
 * JSON with object keys sorted at every level, so equal values always hash the same. Written
 * iteratively (an explicit stack, no recursion): metadata nested 100,000 levels deep must not
 * overflow the call stack. The output is exactly `JSON.stringify` of the key-sorted value.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  // Work items: a value to write, or a literal piece of punctuation.
  const stack: ({ v: unknown } | { s: string })[] = [{ v: value }];
  while (stack.length) {
    const item = stack.pop()!;
    if ('s' in item) {
      out.push(item.s);
      continue;
    }
    let v = item.v;
    if (v instanceof Date) v = v.toJSON();
    if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
      out.push(JSON.stringify(v));
    } else if (typeof v === 'bigint') {
      throw new TypeError('Do not know how to serialize a BigInt');
    } else if (Array.isArray(v)) {
      const parts: typeof stack = [{ s: '[' }];
      v.forEach((el, i) => {
        if (i) parts.push({ s: ',' });
        parts.push({ v: el });
      });
      parts.push({ s: ']' });
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else if (v && typeof v === 'object') {
      const obj = v as Record<string, unknown>;
      const parts: typeof stack = [{ s: '{' }];
      for (const k of Object.keys(obj).sort()) {
        const el = obj[k];
        if (el === undefined || typeof el === 'function' || typeof el === 'symbol') continue;
        if (parts.length > 1) parts.push({ s: ',' });
        parts.push({ s: `${JSON.stringify(k)}:` }, { v: el });
      }
      parts.push({ s: '}' });
      for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]);
    } else {
      // undefined, functions and symbols inside arrays (object members holding them were skipped above).
      out.push('null');
    }
  }
  return out.join('');
}

/**
 * CRLF and CR become LF; NUL characters (which PostgreSQL text cannot hold) are removed and unpaired surrogates
 * (which PostgreSQL's jsonb refuses) become U+FFFD, whatever path the text came by; leading and trailing
 * whitespace is dropped.
 */
export function normaliseText(text: string): string {
  return cleanString(text).replace(/\r\n?/g, '\n').trim();
}

/** Compares two secrets in constant time (digests first, so lengths do not leak either). */
export function safeEqual(a: string, b: string): boolean {
  const da = crypto.createHash('sha256').update(a).digest();
  const db = crypto.createHash('sha256').update(b).digest();
  return crypto.timingSafeEqual(da, db);
}
