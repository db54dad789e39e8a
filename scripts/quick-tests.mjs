// The quick test subset (`npm run test:quick`): test files that run in-process with no database, no
// browser, no Dovecot, no child process and no real embedding model. Chosen by a rule, not a list: a
// file is quick unless its text names one of the things below. A file that reaches a database some
// other way (through a src/ module) fails loudly under test/helpers/quick-guard.ts instead of passing.
import fs from 'node:fs';
import path from 'node:path';

export const NOT_QUICK = new RegExp(
  [
    String.raw`helpers/(db|gateway|browser|dovecot|memex-bin|raw-http|chatdb-builder)`,
    String.raw`src/db/`,
    String.raw`from 'pg'`,
    'pglite',
    'playwright',
    'createTestDatabase',
    'openDatabase',
    'startTestGateway',
    'child_process',
    String.raw`\bspawn`,
    'execFile',
    // The real USE-lite embedding model: minutes to load and run on a loaded 2-core machine.
    'providers/use-lite',
  ].join('|'),
);

function testFiles(dir) {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? testFiles(path.join(dir, e.name)) : e.name.endsWith('.test.ts') ? [path.join(dir, e.name)] : []));
}

/**
 * Whether a test file, or a module under test/ it imports (test/search/helpers.ts, fixtures, …, followed
 * transitively), names something that is not quick.
 */
function needsMore(file, testDir, seen = new Set()) {
  if (seen.has(file)) return false;
  seen.add(file);
  const text = fs.readFileSync(file, 'utf8');
  if (NOT_QUICK.test(text)) return true;
  for (const [, spec] of text.matchAll(/(?:from|import\(?)\s*'(\.[^']+)'/g)) {
    const target = path.resolve(path.dirname(file), spec);
    if (target.startsWith(testDir + path.sep) && fs.existsSync(target) && needsMore(target, testDir, seen)) return true;
  }
  return false;
}

/** Repository-relative paths of the quick test files, sorted. */
export function quickTestFiles(root = process.cwd()) {
  const testDir = path.join(root, 'test');
  return testFiles(testDir)
    .filter((f) => !needsMore(f, testDir))
    .map((f) => path.relative(root, f).split(path.sep).join('/'))
    .sort();
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(quickTestFiles().join('\n'));
