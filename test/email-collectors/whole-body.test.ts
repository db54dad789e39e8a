/**
 * Issue 40 item 2: the stored text of a message is its whole decoded body, and its quotes, signatures,
 * patches, attributions, forwarded headers and list footers are parts with spans, never cut. Checked
 * on real-shaped list mail (bench/email/list-mail.ts: `git format-patch` of this repository's history
 * posted to a list with Mailman's footer, and replies that quote and interleave, top-post, reply from
 * Outlook, forward, are HTML-only or quoted-printable), parsed by the collector's own parser.
 */
import { describe, expect, it } from 'vitest';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { htmlBodyToText } from '../../src/mail/body-text.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { NO_REDACTIONS } from '../../src/privacy/policy.ts';
import { bodyParts, type BodyPart } from '../../src/mail/body-parts.ts';
import { generateListMail, type ListMessage, type Shape } from '../../bench/email/list-mail.ts';

const src = { sourceType: 'email_local' as const, prefix: 'email', redaction: NO_REDACTIONS };

/** The parts a message was composed of: each non-own segment's span, without blank lines at its edges. */
function expectedParts(m: ListMessage): BodyPart[] {
  const out: BodyPart[] = [];
  let at = 0;
  for (const s of m.segments) {
    if (s.kind) {
      const lead = s.text.length - s.text.replace(/^(\s*\n)+/, '').length;
      const body = s.text.replace(/(\n\s*)+$/, '');
      out.push({ kind: s.kind, start: at + lead, end: at + body.length });
    }
    at += s.text.length;
  }
  return out;
}

const corpus = generateListMail({ patches: 60, seed: 40 });
const built = await Promise.all(
  corpus.map(async (m) => ({ m, doc: buildEmailDocument(await parseCollectedMessage(m.raw), src).document })),
);

describe('the whole message, marked not cut (issue 40)', () => {
  it('the corpus has every shape, and patches carry a diffstat and diff --git hunks', () => {
    const shapes = new Set(corpus.map((m) => m.shape));
    expect([...shapes].sort()).toEqual((['patch', 'interleaved', 'top-posted', 'outlook', 'forward', 'html-only', 'qp-signature'] as Shape[]).sort());
    const patches = corpus.filter((m) => m.shape === 'patch');
    expect(patches.length).toBe(60);
    expect(patches.every((m) => /\n---\n .* \| +\d+/.test(m.body) && m.body.includes('\ndiff --git a/'))).toBe(true);
  });

  it('100 % of each decoded body is the stored text (plain part, or the HTML part\'s text)', () => {
    let decoded = 0;
    let kept = 0;
    for (const { m, doc } of built) {
      const want = (m.shape === 'html-only' ? htmlBodyToText(m.body) : m.body).trim();
      decoded += want.length;
      if (doc.content.data === want) kept += want.length;
      else expect.soft(doc.content.data, m.id).toBe(want);
    }
    expect(kept / decoded).toBe(1);
  });

  it('the parts\' spans cover the lines they were made of: patch, signature, footer, quote, attribution, forward', () => {
    for (const { m, doc } of built) {
      if (m.shape === 'html-only') continue;
      expect.soft(doc.metadata.body_parts, `${m.shape} ${m.id}`).toEqual(expectedParts(m));
    }
    const kinds = new Set(built.flatMap(({ doc }) => (doc.metadata.body_parts as BodyPart[]).map((p) => p.kind)));
    expect([...kinds].sort()).toEqual(['attribution', 'footer', 'forward', 'patch', 'quote', 'signature']);
  });

  it('an HTML-only reply\'s <blockquote> is a quote part, its attribution an attribution', () => {
    const html = built.filter(({ m }) => m.shape === 'html-only');
    expect(html.length).toBeGreaterThan(0);
    for (const { doc } of html) {
      const text = doc.content.data;
      const parts = doc.metadata.body_parts as BodyPart[];
      const quote = parts.find((p) => p.kind === 'quote');
      expect(quote).toBeDefined();
      expect(text.slice(quote!.start, quote!.end).split('\n').every((l) => l.startsWith('>'))).toBe(true);
      expect(parts.some((p) => p.kind === 'attribution' && /wrote:$/.test(text.slice(p.start, p.end)))).toBe(true);
    }
  });

  it('the snippet is the author\'s own words: a patch mail\'s commit message, a reply\'s answer', () => {
    const patch = built.find(({ m }) => m.shape === 'patch')!;
    expect(String(patch.doc.metadata.snippet)).not.toContain('diff --git');
    expect(String(patch.doc.metadata.snippet).slice(0, 40)).toBe(patch.m.segments[0].text.slice(0, 40));
    const reply = built.find(({ m }) => m.shape === 'interleaved')!;
    expect(String(reply.doc.metadata.snippet)).not.toMatch(/^On |^>/m);
  });

  it('the same message gives the same payload (parts included)', async () => {
    const m = corpus.find((x) => x.shape === 'interleaved')!;
    const again = buildEmailDocument(await parseCollectedMessage(m.raw), src).document;
    expect(JSON.stringify(again)).toBe(JSON.stringify(built.find((b) => b.m === m)!.doc));
  });
});

describe('body parts of hand-written shapes', () => {
  const kinds = (text: string) => bodyParts(text).map((p) => [p.kind, text.slice(p.start, p.end)]);

  it('a wrapped attribution, interleaved answers, a Google Groups footer after its `-- `', () => {
    const text =
      'On Tue, 14 Nov 2023 at 09:12, Jane Doe <jane@example.org>\nwrote:\n> first\n>\n> second\n\nAnswer one.\n\n> third\n\nAnswer two.\n\n' +
      '-- \nYou received this message because you are subscribed to the Google Groups "x" group.\nTo unsubscribe from this group, send email to x+unsubscribe@googlegroups.com.';
    expect(kinds(text)).toEqual([
      ['attribution', 'On Tue, 14 Nov 2023 at 09:12, Jane Doe <jane@example.org>\nwrote:'],
      ['quote', '> first\n>\n> second'],
      ['quote', '> third'],
      ['footer', text.slice(text.indexOf('-- \nYou'))],
    ]);
  });

  it('a bare diff pasted in a reply is a patch; a quoted diff is a quote; a diff context line `  > x` stays in the patch', () => {
    const diff = '--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n #define A 1\n->x\n+#define ROM0_BASE 0x1fc00000\n  > kept';
    const text = `Try this:\n\n${diff}\n\nThanks.\n\n> +quoted line\n> -other`;
    expect(kinds(text)).toEqual([
      ['patch', diff],
      ['quote', '> +quoted line\n> -other'],
    ]);
  });

  it('a `--` divider with a long text after it is not a signature; "Ana writes:" before a quote is an attribution', () => {
    const long = Array.from({ length: 20 }, (_, i) => `line ${i}`).join('\n');
    expect(kinds(`Notes\n--\n${long}`)).toEqual([]);
    expect(kinds('Ana <ana@example.org> writes:\n> hi\n\nhello')).toEqual([
      ['attribution', 'Ana <ana@example.org> writes:'],
      ['quote', '> hi'],
    ]);
  });
});
