/**
 * bin/compiled.js decides whether `memex` may run the compiled build/: only when src/ is exactly what was compiled.
 * The fingerprint must change with any edit, addition or removal, or stale JavaScript would run after an edit.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error plain JavaScript module without type declarations
import { sourceFingerprint } from '../../bin/compiled.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-fp-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('source fingerprint', () => {
  it('changes with an edit (even of the same size), a new file and a removed file; not otherwise', () => {
    fs.mkdirSync(path.join(dir, 'cli'));
    fs.writeFileSync(path.join(dir, 'cli', 'main.ts'), 'export const a = 1;\n');
    fs.writeFileSync(path.join(dir, 'server.ts'), 'export const b = 2;\n');
    const fp = (): string => sourceFingerprint(dir);
    const first = fp();
    expect(fp()).toBe(first);
    const t = new Date(Date.now() + 5000);
    fs.writeFileSync(path.join(dir, 'server.ts'), 'export const b = 3;\n');
    fs.utimesSync(path.join(dir, 'server.ts'), t, t);
    const edited = fp();
    expect(edited).not.toBe(first);
    fs.writeFileSync(path.join(dir, 'cli', 'new.ts'), '');
    const added = fp();
    expect(added).not.toBe(edited);
    fs.rmSync(path.join(dir, 'cli', 'new.ts'));
    expect(fp()).toBe(edited);
  });
});
