#!/usr/bin/env node
// `npm test`: the whole suite on the embedded PGlite, then again on a PostgreSQL server.
// The server run needs TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres)
// with pgvector. Without a reachable server the second run is skipped with a visible reason,
// except under CI=true, where a missing server is a failure.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

const url = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const extra = process.argv.slice(2);

const counts = { passed: 0, failed: 0, skipped: 0 };
// Per backend, the files with skipped tests and why, printed again at the very end.
const skips = [];

/**
 * Test files with skipped tests in a vitest JSON report, each with its reason: the title of every outermost
 * skipped block, which by this suite's convention says why (e.g. "… (PostgreSQL; skipped on PGlite: …)",
 * "… — skipped: /usr/sbin/dovecot is missing (run scripts/install-dovecot.sh)").
 */
function skippedFiles(report) {
  const out = [];
  for (const file of report.testResults ?? []) {
    const tests = file.assertionResults ?? [];
    const skipped = tests.filter((t) => t.status === 'skipped' || t.status === 'pending' || t.status === 'todo');
    if (skipped.length === 0) continue;
    // The outermost block all of whose tests are skipped: a skipped describe is named once, not per test.
    const reasons = new Set();
    for (const t of skipped) {
      const chain = [...t.ancestorTitles, t.title];
      let depth = chain.length;
      for (let d = 1; d <= t.ancestorTitles.length; d++) {
        const prefix = chain.slice(0, d);
        const inBlock = tests.filter((u) => prefix.every((title, i) => u.ancestorTitles[i] === title));
        if (inBlock.every((u) => skipped.includes(u))) {
          depth = d;
          break;
        }
      }
      reasons.add(chain[depth - 1]);
    }
    const name = path.relative(process.cwd(), file.name);
    const what = skipped.length === tests.length ? 'skipped' : `${skipped.length} of ${tests.length} tests skipped`;
    out.push(`${name}: ${what}: ${[...reasons].join('; ')}`);
  }
  return out;
}

function run(backend) {
  console.log(`\n=== memex test suite on ${backend} ===\n`);
  const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'memex-vitest-')), 'report.json');
  const r = spawnSync(
    'npx',
    ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...extra],
    { stdio: 'inherit', env: { ...process.env, MEMEX_TEST_BACKEND: backend, TEST_DATABASE_URL: url } },
  );
  try {
    const j = JSON.parse(fs.readFileSync(report, 'utf8'));
    counts.passed += j.numPassedTests;
    counts.failed += j.numFailedTests;
    counts.skipped += j.numPendingTests + (j.numTodoTests ?? 0);
    for (const line of skippedFiles(j)) skips.push(`[${backend}] ${line}`);
    // A run that executed no test at all is not a pass.
    if (j.numTotalTests === 0) return 1;
  } catch {
    counts.failed += 1;
  }
  return r.status ?? 1;
}

async function postgresReason() {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    const r = await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
    if (r.rowCount === 0) return 'the server has no pgvector extension (run scripts/install-pgvector.sh)';
    return null;
  } catch (err) {
    return `no PostgreSQL server reachable at ${url.replace(/:[^:@/]*@/, ':***@')} (${err.message})`;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const results = {};
results.pglite = run('pglite');
const reason = await postgresReason();
if (reason) {
  if (process.env.CI === 'true') {
    console.error(`\nPostgreSQL run required under CI but ${reason}`);
    results.postgres = 1;
  } else {
    console.warn(`\n=== PostgreSQL run SKIPPED: ${reason} ===`);
  }
} else {
  results.postgres = run('postgres');
}
if (reason) skips.push(`[postgres] every file: skipped: ${reason}`);
if (skips.length) console.log(`\nskipped test files (${skips.length}):\n${skips.map((l) => `  ${l}`).join('\n')}`);
const failed = Object.entries(results).filter(([, code]) => code !== 0);
console.log(`\nsuite results: ${Object.entries(results).map(([b, c]) => `${b}=${c === 0 ? 'passed' : 'FAILED'}`).join(', ')}`);
console.log(`tests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
process.exit(failed.length ? 1 : 0);
