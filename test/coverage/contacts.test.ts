/**
 * Coverage of `memex import FILE.vcf` against a live gateway: every card of the file counts in the source — added,
 * unchanged on a second import — and the counts add up.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importVcfCommand } from '../../src/people/vcard.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let url: string;
beforeAll(async () => {
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await gw?.close();
});

describe('coverage of memex import FILE.vcf', () => {
  it('counts every card: added, then unchanged, and the counts add up', async () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'memex-cov-vcf-')));
    const file = path.join(dir, 'phone.vcf');
    fs.writeFileSync(
      file,
      'BEGIN:VCARD\nVERSION:3.0\nFN:Zoe Quinn\nTEL:+1 415 555 0142\nEND:VCARD\n' +
        'BEGIN:VCARD\nVERSION:3.0\nFN:Yann Tiersen\nEMAIL:yann@example.org\nEND:VCARD\n' +
        'BEGIN:VCARD\nVERSION:3.0\nEND:VCARD\n',
    );
    const out = { isTTY: false, write: () => true } as unknown as NodeJS.WriteStream;
    const run = () => importVcfCommand([file, '--url', url, '--token', TEST_TOKEN, '--source', 'phone-export'], {}, out);
    const coverage = async () => {
      const sources = (await gw.request('GET', '/v1/coverage?source=contacts')).json().sources;
      expect(sources).toHaveLength(1);
      return sources[0];
    };
    await run();
    const first = await coverage();
    expect(first).toMatchObject({ collector: 'contacts', source_type: 'contact', source_account_id: 'phone-export', source_ref: file, stored: 2, stored_detail: { new: 2 }, pending: 0 });
    expect(first.in_source).toBe(first.stored + first.skipped + first.failed + first.pending);
    await run();
    expect(await coverage()).toMatchObject({ stored: 2, stored_detail: { new: 0, unchanged: 2 } });
  });
});
