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
