/**
 * One empty attachment among others (issue 48 item 5: at 20,000 messages "400 upload is empty" failed the
 * whole upload batch and every run exited 1): the empty part is recorded in its message's attachments
 * (size_bytes 0, no file), the other attachments of the batch are stored, and every message is accepted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { discoverSources, importMail } from '../../src/agent/collectors/email/mail-import.ts';
import { createGatewayClient } from '../../src/agent/gateway-client.ts';
import { startTestGateway, TEST_TOKEN } from '../helpers/gateway.ts';
import { testConfig } from '../agent/helpers.ts';
import { tmpDir } from './helpers.ts';

const message = (n: number, empty: boolean) =>
  [
    `From: Sender ${n} <sender${n}@example.net>`, 'To: list@example.org', `Subject: Patch ${n}`,
    `Date: Thu, 23 Nov 2023 10:${String(n).padStart(2, '0')}:00 +0000`, `Message-ID: <empty-att-${n}@example.net>`, 'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b"', '', '--b', 'Content-Type: text/plain; charset=utf-8', '', `Patch ${n} attached.`,
    '--b', `Content-Type: text/plain; name="patch-${n}.diff"`, `Content-Disposition: attachment; filename="patch-${n}.diff"`, '', `+ octeon fix number ${n}`,
    ...(empty ? ['--b', 'Content-Type: application/octet-stream; name="empty.bin"', 'Content-Disposition: attachment; filename="empty.bin"', '', ''] : []),
    '--b--', '',
  ].join('\r\n');

describe('an empty attachment', () => {
  it('is recorded in its message and fails nothing: the attachments beside it are stored', async () => {
    const dir = tmpDir('memex-import-empty-att-');
    const mbox = [1, 2, 3].map((n) => `From MAILER-DAEMON Tue Dec  5 10:00:00 2023\n${message(n, n === 2).replace(/\r\n/g, '\n')}\n`).join('');
    fs.writeFileSync(path.join(dir, 'Patches.mbox'), mbox);
    const gw = await startTestGateway({ files: {} });
    try {
      await gw.app.listen({ port: 0, host: '127.0.0.1' });
      const gateway = createGatewayClient({ baseUrl: `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`, authToken: TEST_TOKEN });
      const problems: string[] = [];
      const sum = await importMail(await discoverSources(dir), { gateway, config: testConfig(), batchSize: 3, concurrency: 1, onProblem: (l, r) => problems.push(`${l}: ${r}`) });
      expect(problems).toEqual([]);
      expect(sum).toMatchObject({ messages: 3, accepted: 3, rejected: 0, retryLater: 0, attachmentsUploaded: 3 });
      const files = await gw.db.query<{ title: string }>(`SELECT title FROM documents WHERE title LIKE 'patch-%' ORDER BY title`);
      expect(files.rows.map((r) => r.title)).toEqual(['patch-1.diff', 'patch-2.diff', 'patch-3.diff']);
      const msg = await gw.db.query<{ attachments: { filename: string; size_bytes: number }[] }>(
        `SELECT metadata->'attachments' AS attachments FROM documents WHERE title = 'Patch 2' AND is_active_version`,
      );
      expect(msg.rows[0].attachments.map((a) => [a.filename, a.size_bytes])).toEqual([
        ['patch-2.diff', expect.any(Number)],
        ['empty.bin', 0],
      ]);
    } finally {
      await gw.close();
    }
  }, 120_000);
});
