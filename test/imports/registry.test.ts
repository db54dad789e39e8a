/**
 * `memex import PATH` picks its importer by what the path holds, and says what it looked for when nothing fits.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { IMPORTERS, runImportCommand } from '../../src/imports/registry.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-import-detect-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

function capture() {
  let text = '';
  return { out: { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream, text: () => text };
}

describe('memex import PATH', () => {
  it('names every format it looked for when the file is none of them, and exits 2', async () => {
    const file = path.join(tmp, 'shopping.txt');
    fs.writeFileSync(file, 'eggs, milk, bread\n');
    const c = capture();
    expect(await runImportCommand([file], c.out)).toBe(2);
    expect(c.text()).toContain('is none of the formats');
    for (const i of IMPORTERS) expect(c.text()).toContain(i.label);
  });

  it('says a missing path cannot be read', async () => {
    const c = capture();
    expect(await runImportCommand([path.join(tmp, 'nope.vcf')], c.out)).toBe(2);
    expect(c.text()).toMatch(/cannot read .*nope\.vcf: ENOENT/);
  });

  it('recognises a vCard by its content, whatever its name', async () => {
    const file = path.join(tmp, 'contacts-export');
    fs.writeFileSync(file, 'BEGIN:VCARD\r\nVERSION:3.0\r\nFN:Ann Lee\r\nEND:VCARD\r\n');
    const vcard = IMPORTERS.find((i) => i.label.startsWith('vCard'))!;
    expect(await vcard.recognises(file, { kind: 'file', bytes: fs.readFileSync(file), entries: [] })).toBe(true);
    const txt = Buffer.from('eggs');
    expect(await vcard.recognises(path.join(tmp, 'x.txt'), { kind: 'file', bytes: txt, entries: [] })).toBe(false);
  });
});
