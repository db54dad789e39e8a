// Which code `memex` runs: the JavaScript that `npm run build:cli` compiled into build/ when it was compiled from
// exactly the files now in src/ (same paths, sizes and modification times), else the TypeScript in src/ through
// tsx. So an edit to src/ is never shadowed by stale compiled code; it only costs the slower start until the
// next build. Plain JavaScript with no dependencies: it runs before anything is compiled.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SRC_DIR = path.join(ROOT, 'src');
export const BUILD_DIR = path.join(ROOT, 'build');
export const BUILD_INFO = path.join(BUILD_DIR, 'build-info.json');

/**
 * A digest of every file under src/: relative path, size and mtime. Not cryptographic (it guards against stale
 * builds, not attackers): node:crypto alone took longer to load than the rest of `memex help`'s start.
 */
export function sourceFingerprint(dir = SRC_DIR) {
  const hash = new Cyrb53();
  const walk = (d) => {
    const entries = fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        const st = fs.statSync(p);
        hash.update(`${path.relative(dir, p)}\0${st.size}\0${st.mtimeMs}\n`);
      }
    }
  };
  walk(dir);
  return hash.digest();
}

/** cyrb53 (a public-domain 53-bit string hash), fed piece by piece: two 32-bit lanes mixed with Math.imul. */
class Cyrb53 {
  h1 = 0xdeadbeef;
  h2 = 0x41c6ce57;
  update(text) {
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      this.h1 = Math.imul(this.h1 ^ c, 2654435761);
      this.h2 = Math.imul(this.h2 ^ c, 1597334677);
    }
  }
  digest() {
    let h1 = Math.imul(this.h1 ^ (this.h1 >>> 16), 2246822507) ^ Math.imul(this.h2 ^ (this.h2 >>> 13), 3266489909);
    const h2 = Math.imul(this.h2 ^ (this.h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    h1 >>>= 0;
    return (h2 >>> 0).toString(16).padStart(8, '0') + h1.toString(16).padStart(8, '0');
  }
}

/** The compiled entry point when build/ matches src/, else null. */
export function freshCompiledEntry() {
  let info;
  try {
    info = JSON.parse(fs.readFileSync(BUILD_INFO, 'utf8'));
  } catch {
    return null;
  }
  if (!info || info.fingerprint !== sourceFingerprint()) return null;
  const entry = path.join(BUILD_DIR, 'cli', 'main.js');
  return fs.existsSync(entry) ? entry : null;
}
