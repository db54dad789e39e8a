/** A snapshot write killed half-way leaves no temporary file behind for good (issue 47 item 8b). */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, it } from 'vitest';
import { removeStaleSnapshotTemps } from '../../src/search/index-snapshot.ts';

it("removes a dead writer's <file>.<pid>.tmp, and leaves a live writer's and other files", () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-snap-tmp-'));
  try {
    // The pid of a process that has ended: a writer killed half-way.
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    const file = path.join(dir, 'search-index.snapshot');
    for (const name of [`search-index.snapshot.${dead}.tmp`, `search-vectors.snapshot.${dead}.tmp`, `search-index.snapshot.${process.pid}.tmp`, 'search-index.snapshot', 'search-index.snapshot.x.tmp']) {
      fs.writeFileSync(path.join(dir, name), 'half a snapshot');
    }
    expect(removeStaleSnapshotTemps(file)).toEqual([`search-index.snapshot.${dead}.tmp`]);
    expect(removeStaleSnapshotTemps(path.join(dir, 'search-vectors.snapshot'))).toEqual([`search-vectors.snapshot.${dead}.tmp`]);
    expect(fs.readdirSync(dir).sort()).toEqual(['search-index.snapshot', `search-index.snapshot.${process.pid}.tmp`, 'search-index.snapshot.x.tmp'].sort());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
