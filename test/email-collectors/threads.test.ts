/**
 * Email conversations (issue 17): a generated corpus with known threads is stored in order, shuffled, and
 * with parents missing; the catalog's grouping must equal the true threads (and notmuch's grouping of the
 * same Maildir), with thread ids derived from the root, titles without Re:/Fwd:, and current counts.
 * Stored email threaded the old way is fixed by rethreadEmail.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCorpus, writeMaildir, type GeneratedMessage } from '../../bench/email/corpus.ts';
import { hasNotmuch, notmuchThreads } from '../../bench/email/notmuch.ts';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { Catalog } from '../../src/catalog/catalog.ts';
import { emailRethreadPending, rethreadEmail } from '../../src/catalog/email-threads.ts';
import { prepareIngest } from '../../src/catalog/prepare.ts';
import { emailThreadId } from '../../src/mail/thread.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;
let catalog: Catalog;
let tmp: string;
beforeAll(async () => {
  t = await createTestDatabase();
  catalog = new Catalog(t.db);
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-threads-'));
});
afterAll(async () => {
  await t?.drop();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const redaction = { enabled: false, emails: false, phones: false, credit_cards: false, ssn: false, bank_accounts: false } as any;

async function store(messages: GeneratedMessage[], batchSizes: number[] = [25]) {
  const prepared = [];
  for (const m of messages) {
    const built = buildEmailDocument(await parseCollectedMessage(m.raw), { sourceType: 'email_local', prefix: 'email', redaction });
    prepared.push(prepareIngest(built.document as any));
  }
  let i = 0;
  let b = 0;
  while (i < prepared.length) {
    const size = batchSizes[b++ % batchSizes.length];
    const group = prepared.slice(i, i + size).map((request, index) => ({ index, request }));
    const out = await catalog.ingestBatch(group, `threads-test-${messages[i].id}-${size}`);
    expect(out.failure_count).toBe(0);
    i += size;
  }
}

/** Message ids per stored thread, each sorted, threads sorted by first id. */
async function grouping(domain: string): Promise<string[][]> {
  const r = await t.db.query<{ ids: string[] }>(
    `SELECT array_agg(metadata->>'message_id' ORDER BY metadata->>'message_id') AS ids FROM documents
      WHERE is_active_version AND metadata->>'message_id' LIKE $1 GROUP BY thread_id`,
    [`%@${domain}`],
  );
  return r.rows.map((x) => x.ids).sort((a, b) => (a[0] < b[0] ? -1 : 1));
}

const sortGroups = (groups: string[][]) => groups.map((g) => [...g].sort()).sort((a, b) => (a[0] < b[0] ? -1 : 1));

function shuffle<T>(xs: T[], seed: number): T[] {
  const out = [...xs];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j], out[i]];
  }
  return out;
}

describe('email conversations', () => {
  it('in order: one thread per conversation, id from the root, title without Re:, counts current', async () => {
    const corpus = generateCorpus({ messages: 120, seed: 3, domain: 'inorder.example' });
    await store(corpus.messages);
    expect(await grouping('inorder.example')).toEqual(sortGroups(corpus.threads));

    const big = corpus.threads.reduce((a, b) => (b.length > a.length ? b : a));
    const root = corpus.messages.find((m) => m.id === big[0])!;
    const th = (await t.db.query('SELECT * FROM threads WHERE thread_id = $1', [emailThreadId(root.id)])).rows[0];
    expect(th).toBeDefined();
    expect(th.title).toBe(root.subject);
    expect(th.metadata.message_count).toBe(big.length);
    const dates = corpus.messages.filter((m) => big.includes(m.id)).map((m) => m.date);
    expect(new Date(th.first_message_at).getTime()).toBe(Math.floor(Math.min(...dates) / 1000) * 1000);
    expect(new Date(th.last_message_at).getTime()).toBe(Math.floor(Math.max(...dates) / 1000) * 1000);
    expect(th.participant_count).toBeGreaterThanOrEqual(2);
    expect(th.participants.length).toBe(th.participant_count);
  });

  it('shuffled, in batches of varying size: the same grouping and the same thread ids', async () => {
    const corpus = generateCorpus({ messages: 120, seed: 3, domain: 'shuffled.example' });
    await store(shuffle(corpus.messages, 11), [1, 7, 3, 30, 2]);
    expect(await grouping('shuffled.example')).toEqual(sortGroups(corpus.threads));
    const r = await t.db.query<{ mid: string; thread_id: string }>(
      `SELECT metadata->>'message_id' AS mid, thread_id FROM documents WHERE metadata->>'message_id' LIKE '%@shuffled.example'`,
    );
    const threadOf = new Map(r.rows.map((x) => [x.mid, x.thread_id]));
    for (const ids of corpus.threads) expect(threadOf.get(ids[ids.length - 1])).toBe(emailThreadId(ids[0]));
    // No thread is left behind empty after the merges.
    const empty = await t.db.query(
      `SELECT 1 FROM threads th WHERE th.source_type = 'email' AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.thread_id = th.thread_id)`,
    );
    expect(empty.rows).toHaveLength(0);
  });

  it.skipIf(!hasNotmuch())('missing parents: the same grouping as notmuch on the same Maildir', async () => {
    const corpus = generateCorpus({ messages: 150, seed: 13, domain: 'missing.example' });
    // Drop every sixth message, and the parent of some replies that name only their parent (In-Reply-To):
    // those replies cannot be placed and start a conversation of their own, as in notmuch.
    const roots = new Set(corpus.threads.map((ids) => ids[0]));
    const orphaned = corpus.messages.filter((m) => m.parent && !roots.has(m.parent) && !m.raw.includes('References:'));
    const dropped = new Set(orphaned.map((m) => m.parent!));
    const kept = corpus.messages.filter((m, i) => i % 6 !== 4 && !dropped.has(m.id));
    const maildir = writeMaildir(path.join(tmp, 'missing'), kept);
    const reference = notmuchThreads(maildir, path.join(tmp, 'nm-missing'));
    await store(shuffle(kept, 5), [9]);
    const ours = await grouping('missing.example');
    expect(ours).toEqual(reference);
    // Some conversations really are split (a reply under a missing parent that it alone names).
    const keptIds = new Set(kept.map((m) => m.id));
    expect(ours.length).toBeGreaterThan(corpus.threads.filter((ids) => ids.some((id) => keptIds.has(id))).length);
  });

  it('rethreadEmail fixes email stored with per-message threads', async () => {
    const corpus = generateCorpus({ messages: 80, seed: 9, domain: 'old.example' });
    await store(corpus.messages);
    // The state before this change: every message in a thread of its own, no message links.
    await t.db.exec(`
      DELETE FROM email_thread_messages;
      INSERT INTO threads (thread_id, external_id, source_type, first_message_at, last_message_at)
        SELECT doc_id, 'email-thread:' || doc_id, 'email', now(), now() FROM documents WHERE source_type = 'email_local';
      UPDATE documents SET thread_id = doc_id WHERE source_type = 'email_local';
      DELETE FROM threads t WHERE source_type = 'email' AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.thread_id = t.thread_id);
      INSERT INTO system_settings (key, value) VALUES ('email_rethread', '"pending"');`);
    expect(await emailRethreadPending(t.db)).toBe(true);
    const seen: number[] = [];
    const r = await rethreadEmail(t.db, { pageSize: 50, onProgress: (p) => seen.push(p.done) });
    expect(r.finished).toBe(true);
    expect(seen[seen.length - 1]).toBe(r.total);
    expect(await emailRethreadPending(t.db)).toBe(false);
    expect(await grouping('old.example')).toEqual(sortGroups(corpus.threads));
    expect(await grouping('inorder.example')).toHaveLength(generateCorpus({ messages: 120, seed: 3 }).threads.length);
    const left = await t.db.query(`SELECT 1 FROM threads WHERE external_id LIKE 'email-thread:%'`);
    expect(left.rows).toHaveLength(0);
  });
});
