import { describe, expect, it } from 'vitest';
import { parseFileMeta, parseMetaTimestamp } from '../../src/files/meta.ts';

describe('parseFileMeta', () => {
  it('accepts the localfs collector meta and normalises it', () => {
    const r = parseFileMeta(
      JSON.stringify({ source: 'localfs', path: '/home/ada/Documents/receipt.pdf', filename: 'receipt.pdf', mtime: 1700000000, ctime: 1690000000.5, tags: ['tax', ' 2023 ', 'tax'] }),
    );
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.meta).toMatchObject({ source: 'localfs', path: '/home/ada/Documents/receipt.pdf', filename: 'receipt.pdf', tags: ['tax', '2023'], extra: {} });
    expect(r.meta.mtime?.toISOString()).toBe('2023-11-14T22:13:20.000Z');
    expect(r.meta.ctime?.getTime()).toBe(1690000000500);
  });

  it('accepts the email attachment meta of host-agent spec §2.6 and keeps unknown keys', () => {
    const r = parseFileMeta({
      source: 'email_local',
      path: 'email/abc@example.com/scan.png',
      filename: 'scan.png',
      mime_type: 'image/png',
      sha256: 'A'.repeat(64),
      size: 1234,
      message_id: 'abc@example.com',
      content_id: 'img1@example.com',
      intent: { primary_intent: 'receipt', confidence: 0.9 },
      relevance_score: 0.7,
      enrichment: { ocr_text: 'TOTAL 12.00', entities: { amounts: ['12.00'] }, caption: 'a receipt' },
      collector_version: '1.2',
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.meta.sha256).toBe('a'.repeat(64));
    expect(r.meta.messageId).toBe('abc@example.com');
    expect(r.meta.enrichment?.ocr_text).toBe('TOTAL 12.00');
    expect(r.meta.extra).toEqual({ collector_version: '1.2' });
    expect(r.meta.mtime).toBeUndefined();
  });

  it('mtime may be an ISO 8601 string (zone-less = UTC) or a numeric string', () => {
    expect(parseMetaTimestamp('2024-03-01T10:00:00+02:00')?.toISOString()).toBe('2024-03-01T08:00:00.000Z');
    expect(parseMetaTimestamp('2024-03-01T10:00:00')?.toISOString()).toBe('2024-03-01T10:00:00.000Z');
    expect(parseMetaTimestamp('2024-03-01')?.toISOString()).toBe('2024-03-01T00:00:00.000Z');
    expect(parseMetaTimestamp('1700000000')?.getTime()).toBe(1700000000000);
    expect(parseMetaTimestamp('2024-02-31T00:00:00')).toBeUndefined();
    expect(parseMetaTimestamp('yesterday')).toBeUndefined();
  });

  it('reports every problem as {loc, msg, type} under body.meta', () => {
    const r = parseFileMeta(JSON.stringify({ mtime: 'last tuesday', tags: ['ok', 5], size: -1, sha256: 'xyz', relevance_score: 2, intent: {} }));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const byLoc = Object.fromEntries(r.errors.map((e) => [e.loc.join('.'), e]));
    expect(byLoc['body.meta.path']).toEqual({ loc: ['body', 'meta', 'path'], msg: 'Field required', type: 'missing' });
    expect(byLoc['body.meta.tags.1'].type).toBe('string_type');
    expect(byLoc['body.meta.size'].type).toBe('greater_than_equal');
    expect(byLoc['body.meta.sha256'].msg).toBe('Input should be 64 hexadecimal characters');
    expect(byLoc['body.meta.relevance_score'].type).toBe('less_than_equal');
    expect(byLoc['body.meta.intent.primary_intent'].type).toBe('missing');
    expect(byLoc['body.meta.mtime']).toMatchObject({ type: 'datetime_parsing' });
  });

  it('a wrongly typed mtime is one readable error', () => {
    const r = parseFileMeta({ path: '/a', mtime: true });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toEqual([{ loc: ['body', 'meta', 'mtime'], msg: 'Input should be epoch seconds or an ISO 8601 date-time', type: 'datetime_type' }]);
  });

  it('invalid JSON, a non-object, a missing part and a path with NUL are rejected', () => {
    const bad = parseFileMeta('{"path": ');
    expect(bad.ok || bad.errors[0]).toMatchObject({ loc: ['body', 'meta'], type: 'json_invalid' });
    const arr = parseFileMeta('[1,2]');
    expect(arr.ok || arr.errors[0].type).toBe('object_type');
    const none = parseFileMeta(undefined);
    expect(none.ok || none.errors[0]).toEqual({ loc: ['body', 'meta'], msg: 'Field required', type: 'missing' });
    const nul = parseFileMeta({ path: '/a\0b' });
    expect(nul.ok || nul.errors[0].loc).toEqual(['body', 'meta', 'path']);
    const sep = parseFileMeta({ path: '/a', filename: '../etc/passwd' });
    expect(sep.ok || sep.errors[0].loc).toEqual(['body', 'meta', 'filename']);
    const huge = parseFileMeta(JSON.stringify({ path: '/a', pad: 'x'.repeat(3 * 1024 * 1024) }));
    expect(huge.ok || huge.errors[0].type).toBe('too_long');
  });
});
