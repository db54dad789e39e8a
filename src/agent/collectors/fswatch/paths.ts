/**
 * Confinement of watch paths to the configured roots (modules.fswatch.allowed_roots).
 *
 * The requested path is `~`-expanded and must be absolute. It is first checked lexically (so a path
 * outside every root answers 403 whether it exists or not: existence outside the roots is not
 * revealed), then resolved with realpath (symlinks followed) and checked again against the realpath'd
 * roots, so a symlink inside a root that points elsewhere is refused too.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expandHome } from '../../config.ts';

export type Resolved = { ok: true; path: string } | { ok: false; status: 400 | 403; error: string };

/** True when `p` is `root` or lies below it (both absolute, normalised). */
export function isUnder(p: string, root: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

function realOrNull(p: string): string | null {
  try {
    return fs.realpathSync(p);
  } catch {
    return null;
  }
}

export function resolveWatchPath(input: unknown, roots: string[]): Resolved {
  if (typeof input !== 'string' || input.trim() === '') return { ok: false, status: 400, error: 'path must be a non-empty string' };
  if (input.includes('\0')) return { ok: false, status: 400, error: 'path must not contain NUL characters' };
  const expanded = expandHome(input.trim());
  if (!path.isAbsolute(expanded)) return { ok: false, status: 400, error: 'path must be absolute' };
  if (roots.length === 0) {
    return { ok: false, status: 403, error: 'No folder may be watched: set modules.fswatch.allowed_roots in the agent configuration' };
  }
  const lexical = path.resolve(expanded);
  const realRoots = roots.map(realOrNull).filter((r): r is string => r !== null);
  const lexRoots = roots.map((r) => path.resolve(r));
  if (![...lexRoots, ...realRoots].some((r) => isUnder(lexical, r))) {
    return { ok: false, status: 403, error: 'path is outside the allowed roots (modules.fswatch.allowed_roots)' };
  }
  const real = realOrNull(lexical);
  if (real === null) return { ok: false, status: 400, error: 'path does not exist' };
  if (!realRoots.some((r) => isUnder(real, r))) {
    return { ok: false, status: 403, error: 'path resolves (through a symbolic link) outside the allowed roots' };
  }
  if (!fs.statSync(real).isDirectory()) return { ok: false, status: 400, error: 'path must be a directory' };
  return { ok: true, path: real };
}
