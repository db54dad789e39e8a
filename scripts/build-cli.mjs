// `npm run build:cli`: compiles src/ to build/ (one JavaScript file per TypeScript file, same layout, so paths
// relative to a module such as ../../package.json or ../../dist/ui still hold), copies the other files src/ needs
// at run time (SQL migrations, .mjs worker entries), and records the fingerprint of the sources it compiled from
// (bin/compiled.js runs build/ only while src/ still matches it). esbuild only strips types: `npm run typecheck`
// is the type check.
import fs from 'node:fs';
import path from 'node:path';
import { transform } from 'esbuild';
import { BUILD_DIR, BUILD_INFO, SRC_DIR, freshCompiledEntry, sourceFingerprint } from '../bin/compiled.js';

// `npm link`, `npm install` and `npx` run `prepare` again: a build that already matches src/ is kept (about a
// second instead of a rebuild); MEMEX_BUILD_FORCE=1 rebuilds anyway.
if (process.env.MEMEX_BUILD_FORCE !== '1' && freshCompiledEntry()) {
  console.log('build:cli: build/ matches src/, nothing to compile');
  process.exit(0);
}

// Fingerprint first: a source edited while this runs no longer matches, so the build is not trusted for it.
const fingerprint = sourceFingerprint();
const started = Date.now();
// Everything but the database template goes (build:db-template owns it; its key names the migrations it
// holds, so a stale one is rebuilt, not trusted): `npm run build:cli` alone leaves first starts fast.
for (const e of fs.existsSync(BUILD_DIR) ? fs.readdirSync(BUILD_DIR) : []) {
  if (e !== 'pglite-template') fs.rmSync(path.join(BUILD_DIR, e), { recursive: true, force: true });
}

/** Relative module specifiers ending in .ts (imports, and new URL('./thread.ts', import.meta.url)) point to .js. */
const rewriteSpecifiers = (code) => code.replace(/(['"])(\.{1,2}\/[^'"\n]*?)\.ts\1/g, '$1$2.js$1');

let compiled = 0;
let copied = 0;
const walk = async (dir) => {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const src = path.join(dir, e.name);
    const rel = path.relative(SRC_DIR, src);
    if (e.isDirectory()) {
      await walk(src);
      continue;
    }
    fs.mkdirSync(path.join(BUILD_DIR, path.dirname(rel)), { recursive: true });
    if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) {
      const out = await transform(fs.readFileSync(src, 'utf8'), {
        loader: 'ts',
        format: 'esm',
        target: 'node20',
        sourcefile: src,
        sourcemap: 'inline',
      });
      fs.writeFileSync(path.join(BUILD_DIR, rel.replace(/\.ts$/, '.js')), rewriteSpecifiers(out.code));
      compiled++;
    } else {
      fs.copyFileSync(src, path.join(BUILD_DIR, rel));
      copied++;
    }
  }
};
await walk(SRC_DIR);
fs.writeFileSync(BUILD_INFO, `${JSON.stringify({ fingerprint, built_at: new Date().toISOString() })}\n`);
console.log(`build:cli: ${compiled} modules compiled, ${copied} files copied to build/ in ${Date.now() - started} ms`);
