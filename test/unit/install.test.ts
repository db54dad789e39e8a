/**
 * What `npm ci` does on a fresh machine, read from the committed package.json and package-lock.json: no
 * dependency compiles native code or downloads at install (issue 35: better-sqlite3 compiled for 15 minutes
 * when its prebuilt download was unreachable), npm prints no warning about the project's own configuration,
 * and every locked package accepts the oldest Node version package.json promises (no EBADENGINE).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// npm's own range semantics (semver is in the tree through many packages; it ships no types).
const semver = createRequire(import.meta.url)('semver') as {
  minVersion(range: string): { version: string } | null;
  satisfies(version: string, range: string): boolean;
};

const ROOT = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  allowScripts: Record<string, boolean>;
};
const lock = JSON.parse(fs.readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; hasInstallScript?: boolean; engines?: { node?: string } | string[] }>;
};
const locked = Object.entries(lock.packages)
  .filter(([p]) => p !== '')
  .map(([p, meta]) => ({ name: p.slice(p.lastIndexOf('node_modules/') + 'node_modules/'.length), ...meta }));

describe('npm ci on a fresh machine', () => {
  it('runs no install script but esbuild’s binary check: nothing is compiled or downloaded', () => {
    const running = locked.filter((p) => p.hasInstallScript && pkg.allowScripts[p.name] !== false).map((p) => p.name);
    // esbuild's postinstall only verifies the platform binary that npm already installed from the registry.
    expect(running).toEqual(['esbuild']);
    expect(locked.map((p) => p.name)).not.toContain('better-sqlite3');
  });

  it('every locked package accepts the oldest Node version package.json allows', () => {
    const oldest = semver.minVersion(pkg.engines.node)!.version;
    const refused = locked
      .filter((p) => p.engines && !Array.isArray(p.engines) && p.engines.node && !semver.satisfies(oldest, p.engines.node))
      .map((p) => `${p.name}@${p.version} wants node ${(p.engines as { node: string }).node}`);
    expect(refused).toEqual([]);
  });

  it('npm warns about nothing in the project configuration', () => {
    const r = spawnSync('npm', ['config', 'list'], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, npm_config_loglevel: 'warn' } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/npm warn/i);
  });
});
