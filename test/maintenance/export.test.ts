/**
 * GET /v1/export on the active backend: a header with counts, then every active document (not old
 * versions), thread and person as one JSON object per line; and `memex export` writing it to a file.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runExportCommand } from '../../src/cli/export.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway();
  const ingest = async (body: Record<string, unknown>) => {
    const res = await gw.request('POST', '/v1/ingest', body);
    expect(res.statusCode).toBe(202);
  };
  await ingest({ source_type: 'note', source_id: 'n1', title: 'Draft', content: { data: 'first words' } });
  await ingest({ source_type: 'note', source_id: 'n1', title: 'Draft', content: { data: 'second words' } });
  await ingest({
    source_type: 'email',
    source_id: 'e1',
    title: 'Hello',
    content: { data: 'Dear Ann, the quokka arrived.' },
    people: [{ identifier: 'ann@example.org', role: 'recipient', display_name: 'Ann Example' }],
    thread: { external_id: 't1', title: 'Quokka' },
  });
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

const parse = (body: string) => body.trim().split('\n').map((l) => JSON.parse(l));

describe('export', () => {
  it('streams a header, the active documents with their people, threads and people', async () => {
    const res = await gw.request('GET', '/v1/export');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/x-ndjson');
    const [header, ...records] = parse(res.body);
    expect(header).toMatchObject({ type: 'memex-export', format_version: 1, counts: { documents: 2, threads: 1, people: 1 } });
    const docs = records.filter((r) => r.type === 'document');
    expect(docs.map((d) => d.text).sort()).toEqual(['Dear Ann, the quokka arrived.', 'second words']);
    const mail = docs.find((d) => d.source_type === 'email');
    expect(mail.people[0]).toMatchObject({ identifier: 'ann@example.org' });
    expect(mail.linked_people).toHaveLength(1);
    expect(records.filter((r) => r.type === 'thread').map((t) => t.title)).toEqual(['Quokka']);
    const [ann] = records.filter((r) => r.type === 'person');
    expect(ann).toMatchObject({ display_name: 'Ann Example', identifiers: [{ kind: 'email', value: 'ann@example.org' }] });
    expect(records).toHaveLength(header.counts.documents + header.counts.threads + header.counts.people);
  });

  it('needs the token, and refuses another format', async () => {
    expect((await gw.request('GET', '/v1/export', undefined, { authorization: '' })).statusCode).toBe(401);
    expect((await gw.request('GET', '/v1/export?format=csv')).statusCode).toBe(422);
  });

  it('memex export writes the same lines to a file', async () => {
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = gw.app.server.address() as { port: number };
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-export-'));
    const out = path.join(dir, 'all.ndjson');
    try {
      const code = await runExportCommand(
        ['--format', 'ndjson', '--out', out, '--url', `http://127.0.0.1:${port}`, '--token', TEST_TOKEN],
        () => Promise.reject(new Error('the server answers; the database must not be opened')),
      );
      expect(code).toBe(0);
      const lines = parse(await fs.readFile(out, 'utf8'));
      expect(lines[0].type).toBe('memex-export');
      expect(lines.slice(1).map((l) => l.type).sort()).toEqual(['document', 'document', 'person', 'thread']);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
