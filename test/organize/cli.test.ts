/**
 * `memex tag …`, `memex saved …` and `memex search @NAME` against a running gateway over HTTP (issue 44):
 * readable output, --json, and clear errors (a bad name from the server, a usage mistake).
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSavedCommand, runTagCommand } from '../../src/cli/organize.ts';
import { runSearchCommand } from '../../src/cli/search.ts';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let url: string;
const ids: string[] = [];

function capture() {
  let text = '';
  return { stream: { isTTY: false, write: (s: string) => (text += s) }, text: () => text };
}

async function run(fn: typeof runTagCommand, args: string[]) {
  const out = capture();
  const err = capture();
  const code = await fn(args, { out: out.stream, err: err.stream, env: { MEMEX_URL: url, AUTH_TOKEN: TEST_TOKEN } });
  return { code, out: out.text(), err: err.text() };
}

beforeAll(async () => {
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
  for (const [title, data] of [
    ['Tax return 2025', 'The tax return for 2025 is filed.'],
    ['Tax office letter', 'A letter from the tax office about 2024.'],
    ['Picnic', 'Bring the blanket to the park.'],
  ]) {
    ids.push((await gw.request('POST', '/v1/ingest', noteBody({ title, content: { mime_type: 'text/plain', data } }))).json().doc_id);
  }
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

describe('memex tag / saved (issue 44)', () => {
  it('tags by query, lists tags, removes them', async () => {
    const add = await run(runTagCommand, ['add', 'Finance/Tax', 'tax']);
    expect(add.code, add.err).toBe(0);
    expect(add.out).toBe('tagged 2 documents finance/tax (2 matched; 0 had it already)\n');
    const list = await run(runTagCommand, ['list']);
    expect(list.out).toBe('finance/tax\t2 documents\n');
    const search = await run(runSearchCommand, ['tag:finance/*', '-tag:x', 'return']);
    expect(search.code, search.err).toBe(0);
    expect(search.out).toContain('Tax return 2025');
    expect(search.out).not.toContain('Tax office letter');
    const rm = await run(runTagCommand, ['remove', 'finance/tax', 'office']);
    expect(rm.out).toBe('took finance/tax off 1 document (1 matched)\n');
    const json = await run(runTagCommand, ['list', '--json']);
    expect(JSON.parse(json.out).tags).toEqual([{ name: 'finance/tax', documents: 1, conversations: 0, rules: 0 }]);
  });

  it('adds, lists and removes rules', async () => {
    const add = await run(runTagCommand, ['rule', 'add', 'outdoors', 'park', 'OR', 'garden']);
    expect(add.code, add.err).toBe(0);
    expect(add.out).toMatch(/^rule [0-9a-f-]{36}: outdoors <- park OR garden\ntagged 1 document now/);
    const id = /^rule ([0-9a-f-]{36})/.exec(add.out)![1];
    const list = await run(runTagCommand, ['rule', 'list']);
    expect(list.out).toBe(`${id}\toutdoors\tpark OR garden\t1 document\n`);
    const rm = await run(runTagCommand, ['rule', 'remove', id, '--remove-tags']);
    expect(rm.out).toBe(`removed rule ${id} and the 1 tag it gave\n`);
  });

  it('saves a search, lists it with its counts and runs it as memex search @NAME', async () => {
    const add = await run(runSavedCommand, ['add', 'taxes', 'tax', '--type', 'note']);
    expect(add.code, add.err).toBe(0);
    expect(add.out).toBe('saved @taxes: 2 documents match now (memex search @taxes)\n');
    expect((await run(runSavedCommand, ['list'])).out).toBe('@taxes\t2 documents, 2 new\ttax\n');
    const s = await run(runSearchCommand, ['@taxes']);
    expect(s.code, s.err).toBe(0);
    expect(s.out).toContain('Tax office letter');
    expect(s.out).toContain('2 of 2 matching documents');
    expect((await run(runSavedCommand, ['list'])).out).toBe('@taxes\t2 documents, 0 new\ttax\n');
    expect((await run(runSavedCommand, ['remove', '@taxes'])).out).toBe('removed @taxes\n');
    const gone = await run(runSearchCommand, ['@taxes']);
    expect(gone.code).toBe(1);
    expect(gone.err).toMatch(/no saved search named taxes/);
  });

  it('says what is wrong: a bad name from the server, a usage mistake', async () => {
    const bad = await run(runTagCommand, ['add', 'two:words', 'tax']);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/^memex tag: .*422: body\.tag: .*letter or digit/);
    const usage = await run(runTagCommand, ['add', 'only-a-name']);
    expect(usage.code).toBe(2);
    expect(usage.err).toMatch(/tag add needs NAME and QUERY/);
    expect((await run(runSavedCommand, ['frobnicate'])).code).toBe(2);
  });
});
