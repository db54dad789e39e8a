/**
 * DATA_DIR is the person's whole store (attachments, the database, tokens): only its owner reads it
 * (issue 47 item 4). memex creates it and every folder below it 0700, files 0600 and stored objects
 * 0400, whatever the umask. A DATA_DIR made by an earlier version (0755 folders, 0444 objects) or
 * loosened by hand is tightened on start: DATA_DIR and its direct entries are looked at every start
 * (a few stat calls); when any of them lets other accounts in, the whole tree is walked once and
 * every group and other bit removed. The caller says what changed in one warning line.
 */
import fs from 'node:fs';
import path from 'node:path';

export const OWNER_DIR_MODE = 0o700;
export const OWNER_FILE_MODE = 0o600;
const OTHERS = 0o077;

export interface Tightened {
  /** The folder looked at. */
  root: string;
  /** It did not exist and was created owner-only. */
  created: boolean;
  /** Entries whose mode was changed (paths relative to root; '.' is root itself). */
  changed: string[];
  /** Entries whose mode could not be changed (another owner, a read-only filesystem). */
  failed: string[];
}

/** Creates `dir` (and missing parents) owner-only, whatever the umask. */
export function mkdirOwnerOnly(dir: string): void {
  const made = fs.mkdirSync(dir, { recursive: true, mode: OWNER_DIR_MODE });
  if (made !== undefined) {
    // Every folder mkdir made is 0700 less the umask; a umask of 0 or 022 leaves 0700, but say so.
    for (let d = path.resolve(dir); ; d = path.dirname(d)) {
      fs.chmodSync(d, OWNER_DIR_MODE);
      if (d === path.resolve(made) || d === path.dirname(d)) break;
    }
  }
}

function loose(mode: number): boolean {
  return (mode & OTHERS) !== 0;
}

/** Removes group and other bits from one entry (symbolic links are never followed). */
function tighten(full: string, st: fs.Stats, rel: string, out: Tightened): void {
  if (st.isSymbolicLink() || !loose(st.mode)) return;
  try {
    fs.chmodSync(full, st.mode & 0o7700 & ~OTHERS);
    out.changed.push(rel);
  } catch {
    out.failed.push(rel);
  }
}

function walk(dir: string, rel: string, out: Tightened): void {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return; // unreadable: reported by the chmod of the folder if it was loose
  }
  for (const name of names) {
    const full = path.join(dir, name);
    const r = rel === '.' ? name : `${rel}/${name}`;
    let st: fs.Stats;
    try {
      st = fs.lstatSync(full);
    } catch {
      continue; // removed meanwhile
    }
    tighten(full, st, r, out);
    if (st.isDirectory()) walk(full, r, out);
  }
}

/**
 * Makes `root` owner-only: created 0700 when missing; else, when it or an entry directly in it lets
 * other accounts in, every entry below it loses its group and other bits.
 */
export function ensureOwnerOnly(root: string): Tightened {
  const out: Tightened = { root, created: false, changed: [], failed: [] };
  let st: fs.Stats;
  try {
    st = fs.lstatSync(root);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    mkdirOwnerOnly(root);
    out.created = true;
    return out;
  }
  // A DATA_DIR that is a symbolic link: its target is what is protected.
  if (st.isSymbolicLink()) st = fs.statSync(root);
  let anyLoose = loose(st.mode);
  if (!anyLoose) {
    for (const name of fs.readdirSync(root)) {
      const child = fs.lstatSync(path.join(root, name), { throwIfNoEntry: false });
      if (child && !child.isSymbolicLink() && loose(child.mode)) {
        anyLoose = true;
        break;
      }
    }
  }
  if (!anyLoose) return out;
  if (loose(st.mode)) {
    try {
      fs.chmodSync(root, st.mode & 0o7700 & ~OTHERS);
      out.changed.push('.');
    } catch {
      out.failed.push('.');
    }
  }
  walk(root, '.', out);
  return out;
}

/** The warning line for a tightened folder, or null when nothing was changed. */
export function describeTightened(t: Tightened, name = 'DATA_DIR'): string | null {
  if (t.changed.length === 0 && t.failed.length === 0) return null;
  const top = [...new Set(t.changed.map((r) => (r === '.' ? `${name} itself` : r.split('/')[0])))];
  const shown = top.slice(0, 6).join(', ') + (top.length > 6 ? `, and ${top.length - 6} more` : '');
  const failed = t.failed.length ? `; ${t.failed.length} could not be changed (another owner?): ${t.failed.slice(0, 3).join(', ')}` : '';
  return (
    `${name} ${t.root} could be read by other accounts: made ${t.changed.length} ${t.changed.length === 1 ? 'entry' : 'entries'} owner-only (${shown || 'none'})${failed}`
  );
}
