/** What `memex reindex --reparse` prints (src/maintenance/reparse.ts counts). */
import type { ReparseResponseT } from '../schemas/originals.ts';

export function formatReparse(r: ReparseResponseT): string[] {
  const lines = [`reparse: ${r.repaired} repaired (a new version from the original), ${r.unchanged} unchanged, ${r.failed} failed`];
  if (r.without_original > 0) {
    lines.push(
      `reparse: ${r.without_original} email documents have no original (stored before memex kept them); ` +
        '`memex import mail --rescan PATH` on the folders they came from stores the originals and replaces their text',
    );
  }
  for (const f of r.failures.slice(0, 10)) lines.push(`reparse: failed ${f.doc_id}: ${f.reason}`);
  return lines;
}
