// `npm run build:ui`: the web UI through Vite (ui/vite.config.ts) into dist/ui. `npm link`, `npm install` and
// `npx` run `prepare` again; a dist/ui built from exactly the files now in ui/ and src/ (the UI bundles a few
// pure modules of the server's, such as src/mail/body-parts.ts) and the same package-lock.json is kept (the
// fingerprint rule of bin/compiled.js: paths, sizes, modification times). MEMEX_BUILD_FORCE=1 rebuilds.
import fs from 'node:fs';
import path from 'node:path';
import { ROOT, sourceFingerprint } from '../bin/compiled.js';

const OUT = path.join(ROOT, 'dist', 'ui');
// Beside dist/ui, not in it: the gateway serves what is in it.
const INFO = path.join(ROOT, 'dist', 'ui-build-info.json');
const lock = fs.statSync(path.join(ROOT, 'package-lock.json'));
const fingerprint = `${sourceFingerprint(path.join(ROOT, 'ui'))}:${sourceFingerprint(path.join(ROOT, 'src'))}:${lock.size}:${lock.mtimeMs}`;

let made = null;
try {
  made = JSON.parse(fs.readFileSync(INFO, 'utf8')).fingerprint;
} catch {
  // no build yet
}
if (process.env.MEMEX_BUILD_FORCE !== '1' && made === fingerprint && fs.existsSync(path.join(OUT, 'index.html'))) {
  console.log('build:ui: dist/ui matches ui/, nothing to build');
  process.exit(0);
}
const started = Date.now();
const { build } = await import('vite');
await build({ configFile: path.join(ROOT, 'ui', 'vite.config.ts') });
fs.writeFileSync(INFO, `${JSON.stringify({ fingerprint, built_at: new Date().toISOString() })}\n`);
console.log(`build:ui: dist/ui built in ${Date.now() - started} ms`);
