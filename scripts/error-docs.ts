/**
 * Rewrites the table of error codes in docs/errors.md (the `<!-- error-codes -->` block) from src/util/error-codes.ts.
 * Run after adding or changing a code:
 *   node --import tsx scripts/error-docs.ts
 * test/error-codes.test.ts fails while the page differs from what this writes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderErrorCodesBlock } from '../src/util/error-codes.ts';

const file = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'errors.md');
const before = fs.readFileSync(file, 'utf8');
const after = renderErrorCodesBlock(before);
if (after !== before) {
  fs.writeFileSync(file, after);
  console.log('updated docs/errors.md');
}
