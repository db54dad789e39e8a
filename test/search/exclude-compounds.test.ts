/**
 * An excluded word takes out the file and host names it begins (issue 46): PostgreSQL keeps `pEpkey.asc` whole as
 * one lexeme, so `pepkey` finds the key attachment by its prefix while `-pepkey` used to leave it on the page.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { doc, q, startSearchGateway, type SearchGateway } from './helpers.ts';

let g: SearchGateway;
const D: Record<string, string> = {};
const ids = async (query: string) => ((await g.get(q({ q: query, k: 20 }))).json().hits as { document_id: string; context?: unknown }[]).filter((h) => !h.context).map((h) => h.document_id).sort();

beforeAll(async () => {
  g = await startSearchGateway();
  D.patch = (await g.ingest(doc('MIPS: Octeon: the board boots again after the irq fix'))).doc_id;
  D.key = (await g.ingest(doc('Octeon maintainer key: pEpkey.asc, public key block', { title: 'pEpkey.asc' }))).doc_id;
  D.setup = (await g.ingest(doc('octeon setup lives in setup.c/ for now'))).doc_id;
}, 120_000);

afterAll(async () => {
  await g?.close();
});

describe(`excluded words and whole file names (${backend})`, () => {
  it('a positive word finds the file name it begins; the same word excluded takes it out', async () => {
    expect(await ids('pepkey')).toEqual([D.key]);
    expect(await ids('octeon')).toEqual([D.patch, D.key, D.setup].sort());
    expect(await ids('octeon -pepkey')).toEqual([D.patch, D.setup].sort());
    expect(await ids('octeon -setup')).toEqual([D.patch, D.key].sort());
  });

  it('a word that only begins a longer word does not exclude it: -boo keeps "boots"', async () => {
    // Prefix expansion is for the last word typed; exclusion takes out compounds (a dot or a slash), not longer words.
    expect(await ids('octeon -key')).toEqual([D.patch, D.setup].sort());
    expect(await ids('octeon -boo')).toEqual([D.patch, D.key, D.setup].sort());
  });
});
