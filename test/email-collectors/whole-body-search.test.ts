/**
 * Issue 40 item 2, through the real gateway and search: list mail stored whole is found by the words of
 * every part — a diff line of a `git format-patch` mail, an identifier with an underscore, the answer after
 * an attribution line of an interleaved reply, quoted text — and a re-import of a message stored cut
 * becomes a new version of the same document with the whole text. Runs on both backends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { NO_REDACTIONS } from '../../src/privacy/policy.ts';
import { generateListMail, type ListMessage } from '../../bench/email/list-mail.ts';
import { backend } from '../helpers/db.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const src = { sourceType: 'email_local' as const, prefix: 'email', redaction: NO_REDACTIONS };

let g: TestGateway;
const docOf = new Map<string, string>();
const corpus = generateListMail({ patches: 20, seed: 41, domain: 'whole-search.example' });

beforeAll(async () => {
  g = await startTestGateway();
  for (const m of corpus) {
    const built = buildEmailDocument(await parseCollectedMessage(m.raw), src);
    const res = await g.request('POST', '/v1/ingest', built.document);
    expect(res.statusCode, res.body).toBe(202);
    docOf.set(m.id, res.json().doc_id);
  }
}, 600_000);
afterAll(async () => g?.close());

async function search(q: string): Promise<{ total: number; ids: string[] }> {
  const res = await g.request('GET', `/v1/search?${new URLSearchParams({ q, k: '50' })}`);
  expect(res.statusCode, res.body).toBe(200);
  const body = res.json();
  return { total: body.total, ids: body.hits.map((h: { document_id: string }) => h.document_id) };
}

/** The messages whose decoded body holds `s` (case-insensitive). */
const holding = (s: string) => corpus.filter((m) => m.body.toLowerCase().includes(s.toLowerCase()));

describe(`list mail stored whole is found by every part (${backend})`, () => {
  it('a word only in a patch\'s diff lines finds the patch mail', async () => {
    const patch = corpus.find((m) => m.shape === 'patch' && m.segments[1].text.includes('\n+'))!;
    const message = patch.segments[0].text.toLowerCase();
    // A long identifier of an added line that the commit message does not say.
    const word = patch.segments[1].text
      .split('\n')
      .filter((l) => l.startsWith('+') && !l.startsWith('+++'))
      .flatMap((l) => l.match(/[A-Za-z][A-Za-z0-9]{11,}/g) ?? [])
      .find((w) => !message.includes(w.toLowerCase()) && !/[A-Z]{2}/.test(w))!;
    expect(word).toBeTruthy();
    const r = await search(word);
    expect(r.ids).toContain(docOf.get(patch.id));
  });

  it('an identifier with an underscore (ROM0_BASE-like) in a diff line is found', async () => {
    // One the commit message does not name (the cleaner before issue 40 kept only the message).
    const identOf = (m: ListMessage) =>
      [...m.segments[1].text.matchAll(/^\+.*?\b([A-Z][A-Z0-9]+_[A-Z0-9_]+)\b/gm)].map((x) => x[1]).find((id) => id.toLowerCase().split('_').every((w) => w && !m.segments[0].text.toLowerCase().includes(w)));
    const patch = corpus.find((m) => m.shape === 'patch' && identOf(m))!;
    const ident = identOf(patch)!;
    const r = await search(ident);
    expect(r.ids).toContain(docOf.get(patch.id));
  });

  it('the answer after an interleaved reply\'s attribution and quote is found, and so is the quoted text', async () => {
    const reply = corpus.find((m) => m.shape === 'interleaved' && m.segments.filter((s) => s.kind === 'quote').length === 2)! as ListMessage;
    // The own text after the second quote: lost to the old cleaner (it cut at the attribution line).
    const last = reply.segments.filter((s) => s.kind === null && s.text.trim()).at(-1)!.text.trim();
    const phrase = `"${last.split(/\s+/).slice(0, 4).join(' ').replace(/[.,"]/g, '')}"`;
    expect((await search(phrase)).ids).toContain(docOf.get(reply.id));
    const quoted = reply.segments.find((s) => s.kind === 'quote')!.text.split('\n')[0].replace(/^> /, '');
    const quotedPhrase = `"${quoted.split(/\s+/).slice(0, 5).join(' ').replace(/[^\p{L}\p{N} ]/gu, ' ').trim()}"`;
    expect((await search(quotedPhrase)).ids).toContain(docOf.get(reply.id));
  });

  it('words of the list footer and of a signature are searchable', async () => {
    const r = await search('"Memex-devel mailing list"');
    expect(r.total).toBe(holding('Memex-devel mailing list').length);
  });

  it('a message stored cut before, imported again, is a new version of the same document with the whole text', async () => {
    const patch = corpus.find((m) => m.shape === 'patch' && m.id !== corpus[0].id)!;
    const built = buildEmailDocument(await parseCollectedMessage(patch.raw), src);
    // What the old cleaner stored for it: the commit message only, no parts.
    const cut = { ...built.document, content: { ...built.document.content, data: patch.segments[0].text.trim() }, metadata: { ...built.document.metadata } };
    delete (cut.metadata as Record<string, unknown>).body_parts;
    const source_id = `${built.document.source_id}-reimport`;
    const first = await g.request('POST', '/v1/ingest', { ...cut, source_id });
    expect(first.statusCode, first.body).toBe(202);
    const again = await g.request('POST', '/v1/ingest', { ...built.document, source_id });
    expect(again.statusCode, again.body).toBe(202);
    expect(again.json().doc_id).not.toBe(first.json().doc_id);
    expect(again.json().version_number).toBe(first.json().version_number + 1);
    const view = (await g.request('GET', `/v1/doc/${again.json().doc_id}/view`)).json();
    expect(view.document.text).toBe(patch.body.trim());
    expect(view.document.metadata.body_parts.map((p: { kind: string }) => p.kind)).toEqual(['patch', 'signature', 'footer']);
  });

  it('body_parts that are not parts are refused with a 422 naming the field, nothing stored', async () => {
    const built = buildEmailDocument(await parseCollectedMessage(corpus[0].raw), src);
    const bad = { ...built.document, source_id: 'bad-parts', metadata: { ...built.document.metadata, body_parts: [{ kind: 'banner', start: 0, end: 5 }] } };
    const res = await g.request('POST', '/v1/ingest', bad);
    expect(res.statusCode).toBe(422);
    expect(res.body).toContain('body_parts');
    const r = await g.db.query<{ n: number }>("SELECT count(*)::int AS n FROM documents WHERE external_id = 'bad-parts'");
    expect(r.rows[0].n).toBe(0);
  });
});
