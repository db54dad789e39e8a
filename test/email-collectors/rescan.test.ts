/**
 * Looking is cheap, and what the importer says is what was stored (issues 41 and 48, item 4), against a LIVE
 * gateway on the test backend: an unchanged Maildir is rescanned without reading a file or sending a request;
 * a flag rename (new/ -> cur/, :2,S) is no new message; an mbox that was appended to is read from its last
 * message on, a rewritten one whole; a gateway that answers too slowly (a proxy in front of the real one that
 * holds its answers past the client's timeout, the one fault here not caused for real) is waited for: every
 * message is counted stored, as it is, none "not reachable"; the manifest check waits for a slow answer.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { confirmManifest, discoverSources, importMail, type ImportOptions } from '../../src/agent/collectors/email/mail-import.ts';
import { MailManifest } from '../../src/agent/collectors/email/manifest.ts';
import { createGatewayClient, type GatewayClient } from '../../src/agent/gateway-client.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { testConfig } from '../agent/helpers.ts';
import { startLiveGateway, tmpDir, type LiveGateway } from './helpers.ts';
import { simpleMessage } from './fixtures.ts';

let live: LiveGateway;
beforeAll(async () => {
  live = await startLiveGateway();
});
afterAll(async () => {
  await live?.close();
});

/** The real client, with every request to the gateway counted. */
function counted(url: string, extra: Parameters<typeof createGatewayClient>[0] extends infer O ? Partial<O> : never = {}) {
  const real = createGatewayClient({ baseUrl: url, authToken: TEST_TOKEN, ...extra });
  const calls = { n: 0 };
  const wrap = <K extends keyof GatewayClient>(k: K) =>
    (async (...args: unknown[]) => {
      calls.n++;
      return (real[k] as (...a: unknown[]) => unknown)(...args);
    }) as GatewayClient[K];
  const client: GatewayClient = { ...real, submitDocument: wrap('submitDocument'), submitBatch: wrap('submitBatch'), uploadFile: wrap('uploadFile'), uploadFiles: wrap('uploadFiles') };
  return { client, calls };
}

const stored = async (domain: string) =>
  Number((await live.gw.db.query<{ n: string }>(`SELECT count(*) AS n FROM documents WHERE source_type = 'email_local' AND external_id LIKE $1 AND is_active_version`, [`%@${domain}`])).rows[0].n);

function maildir(n: number, domain: string): string {
  const md = path.join(tmpDir('memex-rescan-'), 'Maildir');
  for (const d of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(md, d), { recursive: true });
  for (let i = 0; i < n; i++) fs.writeFileSync(path.join(md, i % 3 === 0 ? 'new' : 'cur', `17000${i}.M${i}P1.host${i % 3 === 0 ? '' : ':2,S'}`), simpleMessage(i, { domain }));
  return md;
}

const mboxOf = (msgs: string[]) => msgs.map((m) => `From sender@example.org Tue Dec  5 10:00:00 2023\n${m.replace(/\r\n/g, '\n').replace(/\n$/, '')}\n\n`).join('');

async function run(root: string, manifest: MailManifest, gateway: GatewayClient, extra: Partial<ImportOptions> = {}) {
  const problems: string[] = [];
  const sum = await importMail(await discoverSources(root), { gateway, config: testConfig(), manifest, onProblem: (l, r) => problems.push(`${l}: ${r}`), ...extra });
  await manifest.save([root], undefined);
  return { sum, problems };
}

describe('rescans', () => {
  it('an unchanged Maildir: no file read, no request; a flag rename is no new message; a new file is the only one read', async () => {
    const domain = 'rescan-unchanged.example';
    const md = maildir(30, domain);
    const state = path.join(tmpDir('memex-rescan-state-'), 'state.json');
    const { client, calls } = counted(live.url);
    const first = await run(md, await MailManifest.load(state, live.url), client);
    expect(first.problems).toEqual([]);
    expect(first.sum).toMatchObject({ messages: 30, accepted: 30, sourcesRead: 30, retryLater: 0 });
    expect(await stored(domain)).toBe(30);

    calls.n = 0;
    const again = await run(md, await MailManifest.load(state, live.url), client);
    expect(again.sum).toMatchObject({ messages: 30, unchanged: 30, sourcesRead: 0 });
    expect(calls.n).toBe(0);

    // The mail client reads two messages: new/X -> cur/X:2,S, and a flag letter added in cur/.
    const news = fs.readdirSync(path.join(md, 'new'));
    fs.renameSync(path.join(md, 'new', news[0]), path.join(md, 'cur', `${news[0]}:2,S`));
    const curs = fs.readdirSync(path.join(md, 'cur')).filter((f) => f.endsWith(':2,S'));
    fs.renameSync(path.join(md, 'cur', curs[0]), path.join(md, 'cur', curs[0].replace(/:2,S$/, ':2,FS')));
    const renamed = await run(md, await MailManifest.load(state, live.url), client);
    expect(renamed.sum).toMatchObject({ messages: 30, unchanged: 30, sourcesRead: 0 });
    expect(calls.n).toBe(0);
    expect(await stored(domain)).toBe(30);

    fs.writeFileSync(path.join(md, 'new', '1800000000.M99P1.host'), simpleMessage(99, { domain }));
    const added = await run(md, await MailManifest.load(state, live.url), client);
    expect(added.sum).toMatchObject({ messages: 31, unchanged: 30, sourcesRead: 1, accepted: 31 });
    expect(await stored(domain)).toBe(31);
  });

  it('an mbox appended to is read from its last message on; a rewritten one is read whole', async () => {
    const domain = 'rescan-mbox.example';
    const dir = tmpDir('memex-rescan-mbox-');
    const file = path.join(dir, 'Lists.mbox');
    fs.writeFileSync(file, mboxOf(Array.from({ length: 20 }, (_, i) => simpleMessage(i, { domain }))));
    const state = path.join(dir, 'state.json');
    const { client } = counted(live.url);
    const first = await run(file, await MailManifest.load(state, live.url), client);
    expect(first.sum).toMatchObject({ messages: 20, accepted: 20, unchanged: 0 });

    fs.appendFileSync(file, mboxOf([20, 21, 22].map((i) => simpleMessage(i, { domain }))));
    const appended = await run(file, await MailManifest.load(state, live.url), client);
    // 19 known and not read; the old last message read again (it may have been half written), and the 3 new.
    expect(appended.problems).toEqual([]);
    expect(appended.sum).toMatchObject({ messages: 23, unchanged: 19, sourcesRead: 1, accepted: 23, duplicates: 20 });
    expect(await stored(domain)).toBe(23);

    // Rewritten (a message deleted, the rest moved up) and grown: read whole, nothing lost.
    fs.writeFileSync(file, mboxOf([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24].map((i) => simpleMessage(i, { domain }))));
    const rewritten = await run(file, await MailManifest.load(state, live.url), client);
    expect(rewritten.sum).toMatchObject({ messages: 24, unchanged: 0, accepted: 24 });
    expect(await stored(domain)).toBe(25);
  });
});

/**
 * A proxy in front of the live gateway that forwards every request and, for the first `slow` batch requests,
 * holds the real answer back for `holdMs` (past the client's timeout): the gateway stored the batch, the client
 * never heard.
 */
async function slowProxy(target: string, opts: { slowBatches?: number; slowStatusChecks?: number; holdMs: number }) {
  let batches = 0;
  let checks = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const answer = await fetch(target + req.url, { method: req.method, headers: req.headers as Record<string, string>, body: chunks.length ? Buffer.concat(chunks) : undefined });
      const body = Buffer.from(await answer.arrayBuffer());
      const isBatch = req.method === 'POST' && req.url?.endsWith('/v1/ingest:batch');
      const isCheck = req.method === 'GET' && req.url?.startsWith('/v1/ingest/');
      if ((isBatch && batches++ < (opts.slowBatches ?? 0)) || (isCheck && checks++ < (opts.slowStatusChecks ?? 0))) await new Promise((r) => setTimeout(r, opts.holdMs));
      if (res.destroyed) return;
      res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' });
      res.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, batches: () => batches, close: () => new Promise<void>((r) => server.close(() => r())) };
}

describe('a slow gateway', () => {
  it('is waited for: unanswered batches are sent again, and every message is counted stored, none not reachable', async () => {
    const domain = 'rescan-slow.example';
    const md = maildir(12, domain);
    // The first 4 batch requests are answered only after the client gave up: the first batch's 3 attempts (then
    // sent again by the importer after a wait) and the second batch's first (the client's own second attempt answers).
    const proxy = await slowProxy(live.url, { slowBatches: 4, holdMs: 1500 });
    const { client } = counted(proxy.url, { timeoutSeconds: 0.5, backoffMs: [10, 10] });
    const state = path.join(tmpDir('memex-rescan-slow-'), 'state.json');
    const { sum, problems } = await run(md, await MailManifest.load(state, proxy.url), client, { batchSize: 6, concurrency: 1, retryDelaysMs: [100, 300] });
    expect(problems).toEqual([]);
    expect(sum).toMatchObject({ messages: 12, accepted: 12, retryLater: 0, rejected: 0 });
    expect(sum.answeredOnRetry).toBe(6);
    expect(await stored(domain)).toBe(12);
    // Recorded in the manifest: the next run reads nothing.
    const again = await run(md, await MailManifest.load(state, proxy.url), client);
    expect(again.sum).toMatchObject({ unchanged: 12, sourcesRead: 0 });
    await proxy.close();
  }, 120_000);

  it('a gateway that never answers: what was not answered is counted not reachable, and not recorded', async () => {
    const domain = 'rescan-away.example';
    const md = maildir(4, domain);
    const proxy = await slowProxy(live.url, { slowBatches: 1000, holdMs: 1000 });
    const { client } = counted(proxy.url, { timeoutSeconds: 0.3, backoffMs: [10, 10] });
    const state = path.join(tmpDir('memex-rescan-away-'), 'state.json');
    const { sum } = await run(md, await MailManifest.load(state, proxy.url), client, { batchSize: 4, retryDelaysMs: [50] });
    expect(sum).toMatchObject({ messages: 4, accepted: 0, retryLater: 4 });
    const again = await run(md, await MailManifest.load(state, proxy.url), counted(live.url).client, { retryDelaysMs: [] });
    expect(again.sum).toMatchObject({ unchanged: 0, sourcesRead: 4, accepted: 4 });
    await proxy.close();
  }, 120_000);

  it('the manifest check waits for a slow answer instead of sending everything again; only a 404 drops the manifest', async () => {
    const domain = 'rescan-check.example';
    const md = maildir(5, domain);
    const state = path.join(tmpDir('memex-rescan-check-'), 'state.json');
    const proxy = await slowProxy(live.url, { slowStatusChecks: 1, holdMs: 1500 });
    await run(md, await MailManifest.load(state, proxy.url), counted(proxy.url).client);
    const manifest = await MailManifest.load(state, proxy.url);
    expect(await confirmManifest(manifest, { url: proxy.url, token: TEST_TOKEN }, [500, 10_000])).toBe('confirmed');
    // A server that does not hold the submission: gone.
    const data = JSON.parse(fs.readFileSync(state, 'utf8'));
    data.gateways[proxy.url].confirm = ['00000000-0000-4000-8000-000000000000'];
    fs.writeFileSync(state, JSON.stringify(data));
    expect(await confirmManifest(await MailManifest.load(state, proxy.url), { url: proxy.url, token: TEST_TOKEN }, [10_000])).toBe('gone');
    await proxy.close();
    // Nobody there: unanswered (the manifest stands).
    expect(await confirmManifest(await MailManifest.load(state, proxy.url), { url: proxy.url, token: TEST_TOKEN }, [300, 300])).toBe('unanswered');
  }, 120_000);
});
