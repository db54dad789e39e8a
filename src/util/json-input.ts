/**
 * Walks over parsed JSON from clients, all iterative so the depth of user data never becomes the depth of the call
 * stack: a nesting bound, and the one string rule for NUL and lone surrogates (see src/gateway/input-guard.ts).
 */
/** Deepest nesting of objects and arrays accepted in a JSON body (the body itself is level 1). */
export const MAX_JSON_DEPTH = 64;

type Loc = (string | number)[];

/** The location of the first container nested deeper than `maxDepth`, or null when the value is within it. */
export function tooDeepAt(value: unknown, maxDepth = MAX_JSON_DEPTH): Loc | null {
  interface Node { v: unknown; depth: number; parent: Node | null; key: string | number | null }
  const stack: Node[] = [{ v: value, depth: 1, parent: null, key: null }];
  while (stack.length) {
    const node = stack.pop()!;
    const v = node.v;
    if (!v || typeof v !== 'object') continue;
    if (node.depth > maxDepth) {
      const loc: Loc = [];
      for (let n: Node | null = node; n && n.key !== null; n = n.parent) loc.unshift(n.key);
      return loc;
    }
    const depth = node.depth + 1;
    // Only containers are pushed: scalars cannot be too deep.
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) if (v[i] && typeof v[i] === 'object') stack.push({ v: v[i], depth, parent: node, key: i });
    } else {
      for (const k in v) {
        const el = (v as Record<string, unknown>)[k];
        if (el && typeof el === 'object') stack.push({ v: el, depth, parent: node, key: k });
      }
    }
  }
  return null;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const NUL = /\u0000/g;
const HAS_LONE_SURROGATE = new RegExp(LONE_SURROGATE.source);
/** True when `s` holds a surrogate without its pair (UTF-16 that is not well formed). */
export const hasLoneSurrogate = (s: string) => HAS_LONE_SURROGATE.test(s);
const needsCleaning = (s: string) => hasLoneSurrogate(s) || s.includes('\u0000');

/** Lone surrogates become U+FFFD; NUL characters are removed. */
export function cleanString(s: string): string {
  if (!needsCleaning(s)) return s;
  return s.replace(LONE_SURROGATE, '\uFFFD').replace(NUL, '');
}

/**
 * Applies cleanString to every string of a parsed JSON value (keys too), in place where it can; returns the
 * value (a new one when the value itself is a string).
 */
export function cleanStrings<T>(value: T): T {
  if (typeof value === 'string') return cleanString(value) as T;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (!v || typeof v !== 'object') continue;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        if (typeof v[i] === 'string') v[i] = cleanString(v[i]);
        else stack.push(v[i]);
      }
      continue;
    }
    const obj = v as Record<string, unknown>;
    for (const k of Object.keys(obj)) {
      let key = k;
      if (needsCleaning(k)) {
        key = cleanString(k);
        const el = obj[k];
        delete obj[k];
        obj[key] = el;
      }
      const el = obj[key];
      if (typeof el === 'string') obj[key] = cleanString(el);
      else stack.push(el);
    }
  }
  return value;
}
