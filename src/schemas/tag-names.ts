/**
 * Tag names (issue 44, docs/organize.md): case-insensitive, `/` for hierarchy (`finance/bank`), bounded.
 *
 * A name is normalised once, here, wherever it comes from (the API, the CLI, the query language, an
 * importer's metadata.tags): NFC, trimmed, lower case. Each `/`-separated part starts with a letter or a
 * digit and holds letters, digits, marks and `_ - . & + @ #`; no spaces, quotes, colons or `*` (they
 * mean something in a query). A leading `#` (a notes vault's `#tag`) is dropped.
 */

/** Characters of a whole name at most. */
export const TAG_MAX_CHARS = 100;
/** Levels of hierarchy at most (`a/b/c/d/e/f/g/h`). */
export const TAG_MAX_DEPTH = 8;

const PART = /^[\p{L}\p{N}][\p{L}\p{N}\p{M}_\-.&+@#]*$/u;

export type TagName = { ok: true; name: string } | { ok: false; error: string };

/** The normalised name, or why it is not one. */
export function normaliseTag(raw: unknown): TagName {
  if (typeof raw !== 'string') return { ok: false, error: 'a tag name is a string' };
  let name = raw.normalize('NFC').trim().toLowerCase();
  if (name.startsWith('#')) name = name.slice(1);
  if (name === '') return { ok: false, error: 'a tag name cannot be empty' };
  if (name.length > TAG_MAX_CHARS) return { ok: false, error: `a tag name has at most ${TAG_MAX_CHARS} characters` };
  const parts = name.split('/');
  if (parts.length > TAG_MAX_DEPTH) return { ok: false, error: `a tag name has at most ${TAG_MAX_DEPTH} levels` };
  for (const p of parts) {
    if (p === '') return { ok: false, error: `'${name}': empty level (a '/' at the start, the end, or twice)` };
    if (!PART.test(p)) {
      return {
        ok: false,
        error: `'${name.slice(0, 40)}': each level starts with a letter or digit and holds letters, digits and _ - . & + @ # only`,
      };
    }
  }
  return { ok: true, name };
}

/** `a/b/c` -> `a`, `a/b`, `a/b/c`: the name and every level above it. */
export function tagLevels(name: string): string[] {
  const parts = name.split('/');
  return parts.map((_, i) => parts.slice(0, i + 1).join('/'));
}

/** What the lexical index holds for a tag: `tag:NAME` (tag:NAME) and `tagtree:LEVEL` for it and each level above (tag:LEVEL/*). */
export const TAG_IDENT = 'tag:';
export const TAG_TREE_IDENT = 'tagtree:';

export function tagIdentifiers(tags: Iterable<string>): string[] {
  const out = new Set<string>();
  for (const t of tags) {
    out.add(TAG_IDENT + t);
    for (const level of tagLevels(t)) out.add(TAG_TREE_IDENT + level);
  }
  return [...out];
}

/** Tags from an importer's metadata.tags (or an upload's tags): the valid ones, normalised, at most 50. */
export function importedTags(metadata: unknown): string[] {
  const list = (metadata as { tags?: unknown } | null)?.tags;
  if (!Array.isArray(list)) return [];
  const out = new Set<string>();
  for (const t of list.slice(0, 200)) {
    const n = normaliseTag(t);
    if (n.ok) out.add(n.name);
    if (out.size >= 50) break;
  }
  return [...out];
}
