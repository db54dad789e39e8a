/**
 * Issue 31 items 3 and 4 through GET /v1/search: group=thread answers one hit per conversation (its
 * best document, how many of its documents match, participants, first and last dates) while the
 * default stays one hit per document; an email attachment ranks below its message for the same
 * match and names the message it belongs to.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { doc, q, startSearchGateway, type SearchGateway } from './helpers.ts';

const person = (identifier: string, role: string, display_name: string) => ({ identifier, identifier_type: 'email', role, display_name });

describe('GET /v1/search: conversations and attachments', () => {
  let g: SearchGateway;
  const D: Record<string, string> = {};
  let orchardThread = '';

  beforeAll(async () => {
    g = await startSearchGateway();
    // A conversation of four messages, three of which talk about the orchard.
    const thread = [
      ['2025-03-01T09:00:00Z', 'Shall we plant the orchard this spring?', person('ann@example.org', 'sender', 'Ann')],
      ['2025-03-02T09:00:00Z', 'Yes, the orchard needs apple and pear trees.', person('bob@example.org', 'sender', 'Bob')],
      ['2025-03-03T09:00:00Z', 'I will order the trees for the orchard tomorrow.', person('ann@example.org', 'sender', 'Ann')],
      ['2025-03-05T09:00:00Z', 'Trees ordered, delivery on Friday.', person('cid@example.org', 'sender', 'Cid')],
    ] as const;
    for (const [i, [ts, text, sender]] of thread.entries()) {
      const r = await g.ingest(
        doc(text, {
          source_type: 'email',
          title: 'Spring planting',
          content_timestamp: ts,
          thread: { external_id: 'spring-planting', source_type: 'email' },
          people: [sender, person('family@example.org', 'recipient', 'Family')],
          metadata: { message_id: `<plant-${i}@example.org>`, ...(i > 0 ? { in_reply_to: `<plant-${i - 1}@example.org>`, references: ['<plant-0@example.org>'] } : {}) },
        }),
      );
      D[`t${i}`] = r.doc_id;
      orchardThread = r.thread_id;
    }
    // Two messages on their own, one mentioning the orchard.
    D.alone = (await g.ingest(doc('Orchard insurance renewal is due', { source_type: 'email', title: 'Insurance', content_timestamp: '2025-02-01T09:00:00Z' }))).doc_id;
    D.note = (await g.ingest(doc('Ideas for the orchard: a bench under the walnut', { content_timestamp: '2025-01-01T09:00:00Z' }))).doc_id;

    // A message and its attachment with the same words (the attachment uploaded with the message's Message-ID).
    const words = 'Kernel build settings: enable the watchdog driver and the ext4 journal';
    D.message = (
      await g.ingest(
        doc(words, {
          source_type: 'email',
          title: 'Build',
          content_timestamp: '2025-04-01T09:00:00Z',
          thread: { external_id: 'kernel-build', source_type: 'email' },
          people: [person('dev@example.org', 'sender', 'Dev')],
          metadata: { message_id: '<kernel-1@example.org>' },
        }),
      )
    ).doc_id;
    D.attachment = (
      await g.ingest(
        doc(words, {
          source_type: 'email',
          source_id: 'email-attachment:kernel-1@example.org:abc',
          title: 'config.txt',
          content_timestamp: '2025-04-01T09:00:00Z',
          metadata: { email: { message_id: '<kernel-1@example.org>' } },
        }),
      )
    ).doc_id;
  });
  afterAll(async () => g?.close());

  it('by default every matching document is a hit of its own', async () => {
    const body = (await g.get(q({ q: 'orchard' }))).json();
    expect(new Set(body.hits.map((h: any) => h.document_id))).toEqual(new Set([D.t0, D.t1, D.t2, D.alone, D.note]));
    expect(body.hits.every((h: any) => h.conversation === undefined)).toBe(true);
    expect(body.total).toBe(5);
    expect(body.group).toBeUndefined();
  });

  it('group=thread: the conversation once, with its best message, matching count, participants and dates', async () => {
    const body = (await g.get(q({ q: 'orchard', group: 'thread' }))).json();
    expect(body.group).toBe('thread');
    const ids = body.hits.map((h: any) => h.document_id);
    expect(ids).toHaveLength(3);
    expect(new Set(ids)).toEqual(new Set([ids.find((id: string) => [D.t0, D.t1, D.t2].includes(id)), D.alone, D.note]));
    const conv = body.hits.find((h: any) => h.thread_id === orchardThread);
    expect(conv.conversation).toEqual({
      thread_id: orchardThread,
      matching: 3,
      messages: 4,
      participants: [
        { identifier: 'ann@example.org', display_name: 'Ann', role: 'sender' },
        { identifier: 'bob@example.org', display_name: 'Bob', role: 'sender' },
        { identifier: 'cid@example.org', display_name: 'Cid', role: 'sender' },
        { identifier: 'family@example.org', display_name: 'Family', role: 'recipient' },
      ],
      participant_count: 4,
      first: '2025-03-01T09:00:00.000Z',
      last: '2025-03-05T09:00:00.000Z',
    });
    // Its best message is the one the ungrouped search ranks first among the thread's.
    const flat = (await g.get(q({ q: 'orchard' }))).json().hits.map((h: any) => h.document_id);
    expect(conv.document_id).toBe(flat.find((id: string) => [D.t0, D.t1, D.t2].includes(id)));
    expect(body.hits.find((h: any) => h.document_id === D.note).conversation).toBeUndefined();
    // Documents still count as documents; conversations as conversations.
    expect(body.total).toBe(5);
    expect(body.total_groups).toBe(3);
  });

  it('group=thread fills k with conversations, and counts matches beyond the page', async () => {
    const body = (await g.get(q({ q: 'orchard', group: 'thread', k: 1 }))).json();
    expect(body.hits).toHaveLength(1);
    const top = body.hits[0];
    if (top.thread_id === orchardThread) expect(top.conversation.matching).toBe(3);
    const narrowed = (await g.get(q({ q: 'orchard', group: 'thread', end_date: '2025-03-01' }))).json();
    expect(narrowed.hits.find((h: any) => h.thread_id === orchardThread).conversation).toMatchObject({ matching: 1, messages: 4 });
  });

  it('an attachment ranks below its message for the same words and names the message', async () => {
    const body = (await g.get(q({ q: 'watchdog journal' }))).json();
    expect(body.hits.map((h: any) => h.document_id)).toEqual([D.message, D.attachment]);
    const [message, attachment] = body.hits;
    expect(attachment.score).toBeLessThan(message.score);
    expect(attachment.attached_to).toEqual({ doc_id: D.message, title: 'Build', content_timestamp: '2025-04-01T09:00:00.000Z', thread_id: message.thread_id });
    expect(message.attached_to).toBeUndefined();
  });

  it('group=thread: an attachment joins its message\'s conversation', async () => {
    const body = (await g.get(q({ q: 'watchdog journal', group: 'thread' }))).json();
    expect(body.hits.map((h: any) => h.document_id)).toEqual([D.message]);
    expect(body.hits[0].conversation).toMatchObject({ matching: 1, messages: 1 });
    // And is no conversation of its own in the count either (issue 48).
    expect(body.total_groups).toBe(1);
    expect(body.total).toBe(2);
  });

  it('422 for a grouping that does not exist', async () => {
    expect((await g.get(q({ q: 'orchard', group: 'person' }))).statusCode).toBe(422);
  });
});
