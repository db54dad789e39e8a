/**
 * Small glob matcher for watch filters (no dependency; Node 20's path.matchesGlob is experimental and
 * prints a warning). Supported: `*` (any run within one path segment), `**` (any number of segments),
 * `?`, `[abc]` / `[!abc]` classes and `{a,b}` alternatives. Following the localfs collector (spec-notes
 * B9), a glob matches when it matches the path relative to the watched folder OR the file's basename,
 * so `*.md` selects Markdown files at any depth and `notes/**\/*.md` only those under notes/.
 */
const cache = new Map<string, RegExp>();

export function globToRegExp(glob: string): RegExp {
  const hit = cache.get(glob);
  if (hit) return hit;
  let re = '';
  let depth = 0; // inside {…}
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        // "**/" matches zero or more whole segments; a trailing "**" matches everything below.
        if (glob[i + 2] === '/') {
          re += '(?:[^/]*(?:/|$))*';
          i += 2;
        } else {
          re += '.*';
          i += 1;
        }
      } else re += '[^/]*';
    } else if (c === '?') re += '[^/]';
    else if (c === '[') {
      const end = glob.indexOf(']', i + 2);
      if (end === -1) re += '\\[';
      else {
        let body = glob.slice(i + 1, end);
        if (body.startsWith('!')) body = '^' + body.slice(1);
        re += `[${body.replace(/\\/g, '\\\\')}]`;
        i = end;
      }
    } else if (c === '{') {
      depth++;
      re += '(?:';
    } else if (c === '}' && depth > 0) {
      depth--;
      re += ')';
    } else if (c === ',' && depth > 0) re += '|';
    else re += c.replace(/[.+^$()|\\/]/g, (m) => `\\${m}`);
  }
  while (depth-- > 0) re += ')';
  const out = new RegExp(`^${re}$`, 'u');
  if (cache.size > 500) cache.clear();
  cache.set(glob, out);
  return out;
}

/** `rel` uses "/" separators. */
export function globMatches(glob: string, rel: string): boolean {
  const re = globToRegExp(glob);
  const base = rel.slice(rel.lastIndexOf('/') + 1);
  return re.test(rel) || re.test(base);
}

/** Checks a glob from user input; returns an error message or null. */
export function checkGlob(glob: unknown): string | null {
  if (typeof glob !== 'string' || glob.trim() === '') return 'glob must be a non-empty string';
  if (glob.length > 500) return 'glob is longer than 500 characters';
  if (glob.startsWith('/')) return 'glob is matched against paths relative to the watched folder and must not start with /';
  try {
    globToRegExp(glob);
  } catch {
    return 'glob is not a valid pattern';
  }
  return null;
}
