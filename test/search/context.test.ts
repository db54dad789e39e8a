import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isValidText } from '../../src/search/context.ts';
import { doc, startSearchGateway, type SearchGateway } from './helpers.ts';

describe('text validity filter', () => {
  it.each([
    ['hello', true],
    ['🎉', true],
    ['42', true],
    ['?!', true],
    ['', false],
    ['   ', false],
    ['\uFFFC', false],
    ['\u200B\u200D\uFEFF', false],
    ['\u0000\u0007\n\t', false],
    ['\u2028\u2029', false],
    ['\uFFFD\uFFFD', false],
  ])('%j -> %s', (text, ok) => {
    expect(isValidText(text)).toBe(ok);
  });
});

describe('GET /v1/context/general', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway();
    const thread = (name: string, i: number, text: string) =>
      g.ingest(
        doc(text, {
          source_type: 'chatapp',
          content_timestamp: `2024-06-0${i}T10:00:00Z`,
          thread: { external_id: name },
          people: [{ identifier: 'dan@example.com', identifier_type: 'email', role: 'sender', display_name: 'Dan' }],
        }),
      );
    await thread('big', 1, 'first message');
    await thread('big', 2, 'second message');
    await thread('big', 3, 'third message');
    await thread('small', 4, 'hello small thread');
    await thread('small', 5, '\uFFFC'); // attachment placeholder only: not a highlight
    const old = await g.ingest(doc('old text of a note', { source_id: 'edited', content_timestamp: '2024-01-01T00:00:00Z' }));
    await g.ingest(doc('new text of a note', { source_id: 'edited', content_timestamp: '2024-01-02T00:00:00Z' }));
    expect(old.doc_id).toBeDefined();
  });
  afterAll(async () => g.close());

  it('counts active documents and threads, ranks threads, filters highlights', async () => {
    const res = await g.get('/v1/context/general');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.total_threads).toBe(2);
    expect(body.total_messages).toBe(6); // the superseded note is not counted
    expect(body.last_message_ts).toBe('2024-06-05T10:00:00.000Z');
    expect(body.top_threads.map((t: any) => t.message_count)).toEqual([3, 2]);
    const texts = body.recent_highlights.map((h: any) => h.text);
    expect(texts).not.toContain('\uFFFC');
    expect(texts[0]).toBe('hello small thread');
    expect(body.recent_highlights).toHaveLength(5);
    expect(body.recent_highlights[0].sender).toBe('Dan');
    expect(body.recent_highlights[0].people[0].identifier).toBe('dan@example.com');
    expect(body.timeline.reduce((s: number, d: any) => s + d.count, 0)).toBe(5);
  });
});

describe('GET /v1/context/general: busiest threads and automated senders', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway();
    const mail = (thread: string, i: number, from: string, metadata: Record<string, unknown> = {}) =>
      g.ingest(
        doc(`${thread} message ${i}`, {
          source_type: 'email',
          content_timestamp: `2024-06-0${i + 1}T10:00:00Z`,
          thread: { external_id: thread },
          metadata,
          people: [
            { identifier: from, identifier_type: 'email', role: 'sender' },
            { identifier: 'me@example.com', identifier_type: 'email', role: 'recipient' },
          ],
        }),
      );
    // A newsletter (its raw headers carry List-Unsubscribe), parcel notices from a no-reply address, a friend.
    for (let i = 0; i < 4; i++) await mail('newsletter', i, 'editor@weekly.example', { headers: { 'List-Unsubscribe': '<https://weekly.example/u>' } });
    for (let i = 0; i < 3; i++) await mail('parcels', i, 'no-reply@parcels.example');
    for (let i = 0; i < 2; i++) await mail('friend', i, 'gwen@example.com');
  });
  afterAll(async () => g.close());

  it('leaves machine mail threads out of the busiest unless asked for, and marks them', async () => {
    const plain = (await g.get('/v1/context/general')).json();
    expect(plain.total_threads).toBe(3);
    expect(plain.top_threads.map((t: any) => [t.message_count, t.automated])).toEqual([[2, false]]);
    const all = (await g.get('/v1/context/general?include_automated=true')).json();
    expect(all.top_threads.map((t: any) => [t.message_count, t.automated])).toEqual([
      [4, true],
      [3, true],
      [2, false],
    ]);
  });
});
