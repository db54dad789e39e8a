/**
 * A new embedded database starts from the build's template (src/db/pglite-template.ts) instead of
 * PGlite's initdb, with the migrations the template holds already applied; a template made by
 * other PGlite versions or from a migration file that changed since is never used.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listMigrations, migrate } from '../../src/db/migrate.ts';
import { openPglite } from '../../src/db/pglite.ts';
import zlib from 'node:zlib';
import { currentTemplateKey, extractTemplate, templateUsable, untar, writeTemplate } from '../../src/db/pglite-template.ts';
import { backend } from '../helpers/db.ts';

const dirs: string[] = [];
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-template-'));
  dirs.push(d);
  return d;
};
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe.runIf(backend === 'pglite')('the PGlite template', () => {
  it('a new data directory is made from a usable template and needs no migration; an unusable one means initdb', async () => {
    const templateDir = path.join(tmp(), 'template');
    // A template as `npm run build` makes it, holding a marker row the new database must have.
    const maker = await openPglite(undefined, { templateDir: path.join(templateDir, 'none') });
    await migrate(maker);
    await maker.exec("CREATE TABLE template_marker (x text); INSERT INTO template_marker VALUES ('from the template')");
    writeTemplate(new Uint8Array(await (await maker.dumpDataDir!()).arrayBuffer()), currentTemplateKey(), templateDir);
    await maker.close();

    const hows: string[] = [];
    const dataDir = path.join(tmp(), 'pglite');
    const db = await openPglite(dataDir, { templateDir, onCreate: (how) => hows.push(how) });
    try {
      expect(hows).toEqual(['template']);
      expect((await db.query<{ x: string }>('SELECT x FROM template_marker')).rows).toEqual([{ x: 'from the template' }]);
      expect(await migrate(db)).toEqual([]);
      await db.exec("INSERT INTO template_marker VALUES ('written after')");
    } finally {
      await db.close();
    }
    // The files were written by Node (extractTemplate), beside nothing left over; the database reopens as itself.
    expect(fs.readdirSync(path.dirname(dataDir)).filter((f) => f.includes('.new-'))).toEqual([]);
    const again: string[] = [];
    const reopened = await openPglite(dataDir, { templateDir, onCreate: (how) => again.push(how) });
    try {
      expect(again).toEqual([]);
      expect((await reopened.query<{ x: string }>('SELECT x FROM template_marker ORDER BY x')).rows.map((r) => r.x)).toEqual(['from the template', 'written after']);
    } finally {
      await reopened.close();
    }

    // A migration file edited since the template was made: the template is not trusted.
    const key = currentTemplateKey();
    const first = String(listMigrations()[0].version);
    writeTemplate(fs.readFileSync(path.join(templateDir, 'data.tar.gz')), { ...key, migrations: { ...key.migrations, [first]: 'changed' } }, templateDir);
    const other: string[] = [];
    const fresh = await openPglite(path.join(tmp(), 'pglite'), { templateDir, onCreate: (how) => other.push(how) });
    try {
      expect(other).toEqual(['initdb']);
      expect((await fresh.query("SELECT to_regclass('template_marker') AS t")).rows).toEqual([{ t: null }]);
    } finally {
      await fresh.close();
    }
  }, 300_000); // two runs of PGlite's initdb: 20-30 s each on a loaded 2-core machine

  it('extractTemplate writes files and directories, and a damaged template leaves no database behind', () => {
    const header = (name: string, type: string, size: number, prefix = '') => {
      const h = Buffer.alloc(512);
      h.write(name, 0);
      h.write('0000640\0', 100);
      h.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
      h.write(type, 156);
      h.write('ustar\0', 257);
      h.write('00', 263);
      h.write(prefix, 345);
      return h;
    };
    const pad = (b: Buffer) => Buffer.concat([b, Buffer.alloc((512 - (b.length % 512)) % 512)]);
    const body = Buffer.from('17\n');
    const good = Buffer.concat([header('/base', '5', 0), header('PG_VERSION', '0', body.length, '/base/1'), pad(body), Buffer.alloc(1024)]);
    const root = tmp();
    untar(good, root);
    expect(fs.readFileSync(path.join(root, 'base', '1', 'PG_VERSION'), 'utf8')).toBe('17\n');

    // A template whose archive holds a link (or a path outside the directory) is refused whole.
    const key = currentTemplateKey();
    for (const bad of [
      Buffer.concat([header('/base', '5', 0), header('/base/link', '2', 0), Buffer.alloc(1024)]),
      Buffer.concat([header('../outside', '0', body.length), pad(body), Buffer.alloc(1024)]),
    ]) {
      const templateDir = path.join(tmp(), 'template');
      writeTemplate(zlib.gzipSync(bad), key, templateDir);
      const target = path.join(tmp(), 'pglite');
      expect(() => extractTemplate(target, templateDir)).toThrow();
      expect(fs.existsSync(target)).toBe(false);
      expect(fs.readdirSync(path.dirname(target))).toEqual([]);
    }
  });

  it('a template is usable only with the same PGlite and pgvector and unchanged migrations; later migrations are fine', () => {
    const key = currentTemplateKey();
    expect(templateUsable(key, key)).toBe(true);
    expect(templateUsable({ ...key, pglite: '0.0.1' }, key)).toBe(false);
    expect(templateUsable({ ...key, pgvector: '0.0.1' }, key)).toBe(false);
    const [first, ...rest] = Object.keys(key.migrations);
    const older = { ...key, migrations: Object.fromEntries([[first, key.migrations[first]]]) };
    expect(rest.length).toBeGreaterThan(0);
    expect(templateUsable(older, key)).toBe(true);
    expect(templateUsable({ ...key, migrations: { ...key.migrations, 999: 'x' } }, key)).toBe(false);
  });
});
