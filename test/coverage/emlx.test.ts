/**
 * Coverage of the local .emlx collector against a live gateway: an .emlx tree whose `.partial.emlx` files (the ones
 * scanners skip) count in the source and are stored; a copy is a duplicate, a truncated file is missing with its
 * reason; the recount after the run finds the same files, and a recount later finds what arrived since.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentServer } from '../../src/agent/server.ts';
import { auth, agentWith, mailConfig, splitGatewayClient, startLiveGateway, startUploadRecorder, tmpDir, type LiveGateway } from '../email-collectors/helpers.ts';
import { emlx, simpleMessage, standardTree, writeTree } from '../email-collectors/fixtures.ts';

describe('coverage of the .emlx collector', () => {
  let live: LiveGateway;
  let recorder: Awaited<ReturnType<typeof startUploadRecorder>>;
  let app: AgentServer;
  let root: string;
  const inbox = 'V10/ACCOUNT-1/INBOX.mbox/UUID-A/Data/Messages';

  beforeAll(async () => {
    live = await startLiveGateway();
    recorder = await startUploadRecorder();
    root = tmpDir('memex-cov-emlx-');
    writeTree(root, [
      ...standardTree(),
      ...[31, 32, 33].map((n) => ({ rel: `${inbox}/${n}.partial.emlx`, bytes: emlx(simpleMessage(7300 + n)) })),
    ]);
    const config = mailConfig(tmpDir('memex-cov-emlx-state-'), { sources: [{ id: 'apple-mail', type: 'local', source_path: root }] }, live.url);
    app = await agentWith(config, splitGatewayClient(live.url, recorder.url));
  });
  afterAll(async () => {
    await app?.close();
    await recorder?.close();
    await live?.close();
  });

  const run = async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: auth, payload: { mode: 'simulate', simulate_path: root, limit: 1000 } });
    expect(res.statusCode).toBe(200);
    return res.json();
  };
  const coverage = async () => {
    const sources = (await live.gw.request('GET', '/v1/coverage?source=email_local')).json().sources;
    expect(sources).toHaveLength(1);
    return sources[0];
  };

  it('counts .partial.emlx files in the source and stores them; a copy is a duplicate, a truncated file is missing', async () => {
    const json = await run();
    // 14 .emlx files: 10 whole, 4 partial (notes.txt is not mail).
    expect(json.coverage).toEqual({
      in_source: 14,
      stored: { new: 12, unchanged: 0, updated: 0 },
      skipped: { duplicate: 1 },
      failed: 1,
      pending: 0,
    });
    const cov = await coverage();
    expect(cov).toMatchObject({
      collector: 'email_local',
      source_account_id: 'apple-mail',
      source_ref: root,
      in_source: 14,
      stored: 12,
      skipped_by_reason: { duplicate: 1 },
      failed: 1,
      cursor: { files: 14, partial_emlx: 4 },
      missing: [{ ref: path.join(root, inbox, '6.emlx'), state: 'failed', reason_code: 'unreadable' }],
    });
    // The recount right after the run found the same tree, .partial.emlx counted.
    expect(cov.reconcile).toMatchObject({ in_source: 14, recorded_in_source: 14, drift: 0, changed: 0, in_sync: true, facts: { emlx: 10, partial_emlx: 4 } });
    const partialDocs = await live.gw.db.query(`SELECT 1 FROM documents WHERE external_id LIKE 'email:msg-733%@example.org'`);
    expect(partialDocs.rows).toHaveLength(3);
  });

  it('a second run counts what it stored before as unchanged', async () => {
    const json = await run();
    expect(json.coverage).toEqual({ in_source: 14, stored: { new: 0, unchanged: 12, updated: 0 }, skipped: { duplicate: 1 }, failed: 1, pending: 0 });
  });

  it('an on-demand recount reports files that arrived since the last run, without importing them', async () => {
    fs.writeFileSync(path.join(root, inbox, '40.partial.emlx'), emlx(simpleMessage(7340)));
    const res = await app.inject({ method: 'POST', url: '/v1/coverage:reconcile', headers: auth, payload: { collector: 'email_local' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().sources).toEqual([expect.objectContaining({ source_ref: root, reconcile: expect.objectContaining({ in_source: 15, drift: 1, changed: 1, in_sync: false }) })]);
    const cov = await coverage();
    expect(cov).toMatchObject({ in_source: 14, stored: 12, reconcile: { in_source: 15, recorded_in_source: 14, drift: 1, facts: { partial_emlx: 5 } } });
    expect((await live.gw.db.query(`SELECT 1 FROM documents WHERE external_id = 'email:msg-7340@example.org'`)).rows).toHaveLength(0);
  });
});
