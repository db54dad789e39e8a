/**
 * `npm link`, `npm install` and `npx` run the `prepare` script (`npm run build`) again; with everything built it
 * rebuilt all of it (68-75 s on a loaded machine, issue 46). Each step now keeps what already matches its
 * sources. The test runs each step's script as npm does and checks that it reports so and rewrote nothing.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module without type declarations
import { BUILD_DIR, freshCompiledEntry, ROOT } from '../../bin/compiled.js';

function runScript(name: string): string {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'scripts', name)], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, MEMEX_BUILD_FORCE: '' } });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

const mtime = (p: string) => fs.statSync(p).mtimeMs;
// The suite runs on a checkout built by `npm ci`; one whose src/ was edited since has nothing to keep.
const built = freshCompiledEntry() !== null && fs.existsSync(path.join(ROOT, 'dist', 'ui-build-info.json'));

describe.skipIf(!built)('npm run build on a built checkout', () => {
  it('keeps build/, the database template and dist/ui as they are', () => {
    const entry = path.join(BUILD_DIR, 'cli', 'main.js');
    const template = path.join(BUILD_DIR, 'pglite-template', 'data.tar.gz');
    const page = path.join(ROOT, 'dist', 'ui', 'index.html');
    const before = [entry, template, page].map(mtime);
    expect(runScript('build-cli.mjs')).toMatch(/build\/ matches src\/, nothing to compile/);
    expect(runScript('build-db-template.mjs')).toMatch(/template matches the migrations, nothing to build/);
    expect(runScript('build-ui.mjs')).toMatch(/dist\/ui matches ui\/, nothing to build/);
    expect([entry, template, page].map(mtime)).toEqual(before);
  });
});
