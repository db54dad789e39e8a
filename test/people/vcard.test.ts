import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importVcf, importVcfCommand, parseVcf } from '../../src/people/vcard.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

const FIXTURE = path.join(import.meta.dirname, 'fixtures', 'contacts.vcf');
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

describe('vCard import', () => {
  it('reads vCard 3.0 and 4.0 cards: names, labels, preferred values, folded lines, Apple labels', () => {
    const { cards, rejected } = parseVcf(fs.readFileSync(FIXTURE, 'utf8'));
    expect(rejected).toBe(0);
    expect(cards.map((c) => c.display_name)).toEqual(['Ann Lee', 'Jürgen Müller', 'City Plumbing', 'Ann Lee (duplicate card)']);
    const [ann, juergen, plumber] = cards;
    expect(ann).toMatchObject({ given_name: 'Ann', family_name: 'Lee', organization: 'Acme Corp', nicknames: ['Annie'] });
    expect(ann.notes).toBe('Met at the conference, 2019.\nLikes tea.');
    expect(ann.phones![0]).toMatchObject({ value: '(508) 410-9572', label: 'mobile', priority: 1 });
    expect(ann.emails!.map((e) => e.label)).toEqual(['work', 'home']);
    expect(ann.addresses![0]).toMatchObject({ label: 'home', street: '1 Main St', city: 'Springfield', country: 'United States' });
    expect(juergen.external_id).toBe('urn:uuid:4fbe8971-0bc3-424c-9c26-36c3e1eff6b1');
    expect(juergen.phones![0].value).toBe('+49-30-901820');
    expect(juergen.notes).toBe('A long note that is folded across two lines by the exporter.');
    expect(plumber.external_id).toMatch(/^vcf:[0-9a-f]{32}$/);
  });

  it('keeps a note whole where the exporter left its commas unescaped (3.0 and 4.0)', () => {
    const card = (version: string) =>
      `BEGIN:VCARD\r\nVERSION:${version}\r\nFN:Priya Shah\r\nNOTE:Met in Lisbon, at the fair, 2019. Likes tea\\, not coffee.\r\nEND:VCARD\r\n`;
    for (const version of ['3.0', '4.0']) {
      const { cards, problems } = parseVcf(card(version));
      expect(problems).toEqual([]);
      expect(cards[0].notes).toBe('Met in Lisbon, at the fair, 2019. Likes tea, not coffee.');
    }
  });

  it('imports into the contact pipeline with progress, merges by shared email and re-imports as unchanged', async () => {
    const progress: [number, number][] = [];
    const r = await importVcf(FIXTURE, { catalog: gw.catalog, batchSize: 3, onProgress: (d, t) => progress.push([d, t]) });
    expect(r).toMatchObject({ cards: 4, rejected: 0, accepted: 4, upserts: 4, conflicts: 0, skipped: 0 });
    expect(progress).toEqual([
      [0, 4],
      [3, 4],
      [4, 4],
    ]);
    // The duplicate card shares Ann's work email: one person, two sources.
    const hits = (await gw.request('GET', '/search/people?q=ann.lee%40acme.example')).json().results;
    expect(hits).toHaveLength(1);
    const person = (await gw.request('GET', `/v1/people/${hits[0].person_id}`)).json();
    expect(person.sources.map((s: any) => s.source)).toEqual(['vcard', 'vcard']);
    expect(person.phones.sort()).toEqual(['+15084109572', '+16175550101']);
    const phone = (await gw.request('GET', `/search/people?q=${encodeURIComponent('+49 30 901820')}`)).json().results;
    expect(phone.map((h: any) => h.display_name)).toEqual(['Jürgen Müller']);

    const again = await importVcf(FIXTURE, { catalog: gw.catalog });
    expect(again).toMatchObject({ accepted: 4, upserts: 0, skipped: 4 });
  });

  it('imports over HTTP through a running gateway (the CLI path)', async () => {
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    const url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcf-'));
    const file = path.join(dir, 'one.vcf');
    fs.writeFileSync(file, 'BEGIN:VCARD\nVERSION:3.0\nFN:Zoe Quinn\nTEL:+1 415 555 0142\nEND:VCARD\n');
    const chunks: string[] = [];
    const out = { isTTY: false, write: (s: string) => chunks.push(s) } as unknown as NodeJS.WriteStream;
    const code = await importVcfCommand([file, '--url', url, '--token', TEST_TOKEN, '--source', 'phone-export'], {}, out);
    expect(chunks.join('')).toContain('1 cards read');
    expect(code).toBe(0);
    const hits = (await gw.request('GET', '/search/people?q=zoe')).json().results;
    expect(hits[0].phones).toEqual(['+14155550142']);

    // The default set-up: no token anywhere but the server's DATA_DIR/auth-token file.
    fs.writeFileSync(path.join(dir, 'auth-token'), `${TEST_TOKEN}\n`);
    fs.writeFileSync(file, 'BEGIN:VCARD\nVERSION:3.0\nFN:Yann Tiersen\nEND:VCARD\n');
    expect(await importVcfCommand([file], { MEMEX_URL: url, DATA_DIR: dir }, out)).toBe(0);
    expect((await gw.request('GET', '/search/people?q=tiersen')).json().results).toHaveLength(1);

    const bad = await importVcfCommand([file, '--url', url, '--token', 'wrong'], {}, out);
    expect(bad).toBe(1);
    expect(chunks.join('')).toContain('403');
    expect(await importVcfCommand([], {}, out)).toBe(2);
    fs.rmSync(dir, { recursive: true });
  });

  it('reports a file that is not a vCard instead of importing garbage', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vcf-'));
    const file = path.join(dir, 'bad.vcf');
    fs.writeFileSync(file, 'this is not a vcard at all');
    await expect(importVcf(file, { catalog: gw.catalog })).rejects.toThrow(/not a readable vCard/);
    fs.rmSync(dir, { recursive: true });
  });
});
