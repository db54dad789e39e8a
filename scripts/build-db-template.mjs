// `npm run build:db-template` (part of `npm run build`, after build:cli): an empty embedded database with every
// migration applied, dumped to build/pglite-template/ (src/db/pglite-template.ts). A first `memex serve` on PGlite,
// and every in-memory test database, starts from it instead of running PGlite's initdb in WebAssembly.
const started = Date.now();
const { TEMPLATE_DIR, currentTemplateKey, templateKey, writeTemplate } = await import('../build/db/pglite-template.js');
const { openPglite } = await import('../build/db/pglite.js');
const { migrate } = await import('../build/db/migrate.js');
const fs = await import('node:fs');

// A template made from exactly these migrations and PGlite versions is kept (`npm link` and `npx` run `prepare`
// again); MEMEX_BUILD_FORCE=1 makes it anew.
const wanted = currentTemplateKey();
const made = templateKey();
if (process.env.MEMEX_BUILD_FORCE !== '1' && made && JSON.stringify(made) === JSON.stringify(wanted)) {
  console.log('build:db-template: the template matches the migrations, nothing to build');
  process.exit(0);
}

// Never build from an older template: remove it first, so the database below comes from initdb.
fs.rmSync(TEMPLATE_DIR, { recursive: true, force: true });
const key = currentTemplateKey();
const db = await openPglite();
try {
  await migrate(db);
  const data = new Uint8Array(await (await db.dumpDataDir()).arrayBuffer());
  writeTemplate(data, key);
  console.log(`build:db-template: ${Object.keys(key.migrations).length} migrations, ${(data.length / 2 ** 20).toFixed(1)} MB in ${Date.now() - started} ms`);
} finally {
  await db.close();
}
